"""What a recording determines, and what preprocessing changes (no ROS).

* :func:`not_determined`: the parameters asked for whose regressor column the other columns
  nearly explain (variance inflation factor above :data:`VIF_LIMIT`: more than 99.5 % of the
  column lies in the span of the others, Belsley, Kuh & Welsch 1980).  The motion then cannot
  tell them from those others, whatever the noise: the report says so in plain words, names
  the parameters they trade against and the joints involved, and proposes an exciting motion
  (``calibrate excite``, :mod:`.excitation`).
* :func:`differentiated`: the same recording with the velocities differentiated from the
  positions (central differences on the stamps) and low-passed without phase (a second-order
  Butterworth filter run forward and backward, scipy): a refit on it shows how much the
  answer depends on the velocity estimate, a spread the noise model does not contain.
"""

import re

import numpy as np

from .samples import Samples

__all__ = ['VELOCITY_FILTERS', 'VIF_LIMIT', 'differentiated', 'not_determined']

#: variance inflation factor above which a parameter counts as not determined by the motion
VIF_LIMIT = 200.0
#: the low-pass cut-offs [Hz] of the velocities the fit is repeated with (calibrate's default)
VELOCITY_FILTERS = (20.0, 5.0)


def differentiated(samples, cutoff):
    """``samples`` with ``v`` the positions' central differences low-passed at ``cutoff`` Hz
    (zero phase; not filtered when the cut-off is above 0.4 x the sample rate)."""
    from scipy.signal import butter, filtfilt
    t = samples.t
    v = np.gradient(samples.q, t, axis=0)
    rate = 1.0 / float(np.median(np.diff(t)))
    if cutoff < 0.4 * rate and len(t) > 12:
        b, a = butter(2, cutoff / (0.5 * rate))
        v = filtfilt(b, a, v, axis=0)
    return Samples(t, samples.q, v, samples.tau, samples.names, samples.t0_ns,
                   list(samples.notes))


def _joints(names):
    """The joints a list of parameter names involves (friction columns name their joint)."""
    out = []
    for n in names:
        m = re.match(r'F[vcl]\[(.*)\]$', n)
        if m and m.group(1) not in out:
            out.append(m.group(1))
    return out


def not_determined(names, free_names, vif, partners, asked, link=None):
    """The report's lines (empty when every parameter ``asked`` is determined): for each asked
    free parameter with a variance inflation factor above :data:`VIF_LIMIT`, what it trades
    against; and the motion that would separate them."""
    lines, joints = [], []
    for k, name in enumerate(free_names):
        if name not in asked or vif[k] <= VIF_LIMIT:
            continue
        with_ = [free_names[j] for j in partners[k]]
        joints += [j for j in _joints(with_) if j not in joints]
        share = 100.0 * (1.0 - 1.0 / vif[k])
        lines.append(f'the recording does not determine {_plain(name, link)}: {share:.1f} % '
                     f'of its effect on the torques is also the effect of '
                     f'{", ".join(_plain(w, link) for w in with_)} in this motion (they move '
                     f'together; variance inflation {vif[k]:.0f}), so its figure and ± are '
                     'only as good as those are known')
    if lines:
        what = (f'joints {", ".join(joints)} moving on their own, at several speeds'
                if joints else 'every joint over a good part of its range and speed')
        turn = f', and {link!r} turned through different orientations' if link else ''
        lines.append(f'a motion that would: {what}{turn}; calibrate excite --urdf URDF --out '
                     'excite.yaml writes one (an optimised Fourier series within the limits)')
    return lines


def _plain(name, link):
    """A parameter's name in words."""
    m = re.match(r'F([vcl])\[(.*)\]$', name)
    if m:
        kind = {'v': 'viscous', 'c': 'Coulomb', 'l': 'load-dependent'}[m.group(1)]
        return f'the {kind} friction of {m.group(2)}'
    return {'m': f'the payload mass on {link!r}', 'hx': 'the payload CoM along x',
            'hy': 'the payload CoM along y', 'hz': 'the payload CoM along z'}.get(
                name, f'the payload inertia {name}')
