"""Contact in a calibration recording: which stretches of the fitted residual are contact, which
only stand out, and what to tell the user (no ROS).

A contact biases the least-squares fit, so it is found in two steps (:func:`trimmed_rows`,
:func:`contact_spans`): first a trimmed fit, in which 0.25 s blocks whose residual is far above
the typical block's (mean square > 9x the median) are left out and the fit repeated until the
kept set is stable (least trimmed squares over time blocks, Rousseeuw 1984); then samples more
than 10x the robust noise level of the kept set, in stretches of >= 50 ms, are candidate spans.
A span is contact only beyond what friction can leave (:func:`split_spans`): a residual within
twice the fitted Coulomb level (a sticking or asymmetric dry friction against the smooth tanh)
or 10 % of the joint's torque rms on every joint is a friction-law or small model mismatch,
reported and kept for the thresholds.

A joint at rest is no evidence of contact: its static friction holds any torque up to its
breakaway level, which no law of the velocity gives (Armstrong-Hélouvry, Dupont & Canudas de
Wit 1994).  So where a joint is at rest (and for the filter's memory after), its residual
neither enters the fit nor the search for contact (:func:`moving_rows`): a robot that starts
from rest, holding its weight on friction, is not refused for it.
"""

import warnings

import numpy as np

from .samples import CalibrationError
from .spans import in_spans, runs

__all__ = ['CONTACT_SHARE', 'ContactInData', 'REST_SPEED', 'SETTLING', 'contact_message',
           'contact_spans', 'moving_rows', 'settling_note', 'settling_spans', 'split_spans',
           'trimmed_rows']

#: with contact='auto', the largest share of the recording the contact stretches may take for
#: the fit to go on without them
CONTACT_SHARE = 0.1
#: a stretch beginning within this of the first usable sample [s] and lasting at most
#: ``SETTLING[1]`` s is the start-up (a robot settling onto its trajectory, brakes, the
#: controller's first periods): left out, named, not counted against :data:`CONTACT_SHARE`
SETTLING = (0.25, 1.0)
#: a joint slower than this [rad/s or m/s] is at rest (its static friction is unknown)
REST_SPEED = 0.02

ADVICE = ('; calibrate on contact-free motion (cut the contact out with --start/--stop, or let '
          'the fit exclude it with --contact exclude)')


class ContactInData(CalibrationError):
    """The residual stays far above its noise over stretches friction and payload cannot
    explain: the recording contains contact (or a large unmodelled effect)."""


def moving_rows(t, v, gain):
    """(T, nj) whether each joint's residual reflects motion: the joint faster than
    :data:`REST_SPEED`, and not within 3/K after it was at rest (the filter's memory)."""
    moving = np.abs(v) >= REST_SPEED
    memory = 3.0 / float(np.min(gain))
    out = moving.copy()
    for j in range(v.shape[1]):
        last_rest = np.where(~moving[:, j], t, -np.inf)
        last_rest = np.maximum.accumulate(last_rest)
        out[:, j] &= t - last_rest > memory
    return out


def trimmed_rows(ts, valid, residual, solve, rounds=8):
    """The rows of the least trimmed squares over 0.25 s blocks (module text): ``residual()``
    the current fit's residual (n, nj), ``solve(rows)`` refits on ``rows``."""
    rows = valid.copy()
    block = np.floor((ts - ts[0]) / 0.25).astype(int)
    for _ in range(rounds):
        ef = residual()
        nblk = block.max() + 1
        cnt = np.bincount(block[valid], minlength=nblk)
        ms = np.stack([np.bincount(block[valid], weights=ef[valid, j] ** 2, minlength=nblk)
                       for j in range(ef.shape[1])], axis=1)
        have = cnt > 0
        ms = ms[have] / cnt[have, None]
        sig2 = np.maximum(np.median(ms, axis=0), 1e-12)
        score = np.full(nblk, np.inf)
        score[have] = np.mean(ms / sig2, axis=1)
        new_rows = valid & (score <= 9.0 * np.median(score[have]))[block]
        if np.array_equal(new_rows, rows) or new_rows.sum() < max(50, 0.3 * valid.sum()):
            break
        rows = new_rows
        solve(rows)
    return rows


def _peak(e):
    """The largest |e| per joint (columns), 0 where a joint has no value (NaN: at rest)."""
    return np.max(np.nan_to_num(np.abs(e)), axis=0) if len(e) else np.zeros(e.shape[1])


def _noise(e, rows):
    """Per joint the robust noise level of ``e`` over ``rows`` (1.4826 MAD, at least 1e-3; NaN
    for a joint with no value there, at rest throughout: never called contact)."""
    x = e[rows]
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', RuntimeWarning)       # a joint at rest throughout
        mad = np.nanmedian(np.abs(x - np.nanmedian(x, axis=0)), axis=0)
    return np.maximum(1.4826 * mad, 1e-3)


def contact_spans(t, e, rows, valid, ratio=10.0, min_duration=0.05):
    """Candidate contact spans [(start, end)]: where the fitted residual ``e`` (NaN where a
    joint does not count) exceeds ``ratio`` x its robust noise level (1.4826 MAD over the
    fitted ``rows``, per joint) in stretches of at least ``min_duration`` s."""
    scale = _noise(e, rows)
    out = np.zeros(len(t), dtype=bool)
    out[valid] = np.any(np.nan_to_num(np.abs(e[valid])) > ratio * scale, axis=1)
    return [(t[a], t[b - 1]) for a, b in runs(out) if t[b - 1] - t[a] >= min_duration]


def split_spans(t, e, spans, limit):
    """(contact spans, spans within what friction can leave: ``limit`` (nj,) per joint)."""
    big = [sp for sp in spans
           if np.any(_peak(e[in_spans(t, [sp])]) > limit)]
    return big, [sp for sp in spans if sp not in big]


def settling_spans(t, valid, spans):
    """The spans of ``spans`` that are the recording's start-up (:data:`SETTLING`): beginning
    within ``SETTLING[0]`` s of the first ``valid`` sample and at most ``SETTLING[1]`` s long."""
    first = t[valid][0] if valid.any() else t[0]
    return [(a, b) for a, b in spans if a - first <= SETTLING[0] and b - a <= SETTLING[1]]


def settling_note(t, start):
    """The report's line on the start-up stretches ``start`` left out."""
    return (f'left out as the start-up, not counted as contact (beginning within '
            f'{SETTLING[0]:g} s of the first sample, at most {SETTLING[1]:g} s long: the robot '
            'settling onto its motion): ' + ', '.join(
                f'{a - t[0]:.2f}-{b - t[0]:.2f} s ({1e3 * (b - a):.0f} ms)' for a, b in start))


def small_note(t, e, small, limit):
    """The report's line on spans that stand out within what friction can leave."""
    peak = _peak(e[in_spans(t, small)])
    where = ', '.join(f'{a - t[0]:.2f}-{b - t[0]:.2f} s' for a, b in small[:4])
    return (f'{len(small)} stretches ({where}{" ..." if len(small) > 4 else ""}) stand out of '
            f'the noise by up to {np.round(peak, 3).tolist()} N m, within what '
            f'the friction law\'s shape or a small model error explains '
            f'({np.round(limit, 3).tolist()} N m): left out of the fit, kept for the thresholds')


def contact_message(t, spans, e, rows, names):
    """What the contact spans show (each: when, how long, which joints, how far above the
    noise), without advice."""
    noise = _noise(e, rows)
    parts = []
    for a, b in spans[:6]:
        peak = _peak(e[in_spans(t, [(a, b)])])
        joints = [f'{n} {p:.3g} N m' for n, p, z in zip(names, peak, noise) if p > 10 * z]
        parts.append(f'{a - t[0]:.2f}-{b - t[0]:.2f} s ({1e3 * (b - a):.0f} ms; up to '
                     f'{", ".join(joints)})')
    more = f' and {len(spans) - 6} more' if len(spans) > 6 else ''
    worst = int(np.argmax(_peak(e[in_spans(t, spans)]) / noise))
    return (f'the recording looks like it contains contact: with friction and payload fitted '
            f'to the rest, the residual stays far above its noise during {"; ".join(parts)}'
            f'{more} (noise level of {names[worst]!r}: {noise[worst]:.3g} N m); friction and a '
            'payload cannot explain that')
