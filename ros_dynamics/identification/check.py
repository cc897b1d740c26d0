"""``calibrate check``: a recording replayed through the node's own cycle with the settings of a
parameter file, and what it shows about the thresholds (no ROS).

The replay is :func:`.replay.observer_residuals`: the node's cycle
(:func:`ros_dynamics.estimation.cycle.node_cycle`: the observer, the contact detector with its
hysteresis and isolation, the thresholds of :func:`ros_dynamics.estimation.rules.threshold_at`).
Reported, per joint: the largest ``|r_i| / threshold_i`` outside detections (how close free
motion came to a false contact: the margin), the smallest external torque the thresholds
detect (the median threshold over the recording, and the level detected at every sample of
it: the largest threshold plus the largest free-motion ``|r_i|``, which a contact's torque
must overcome where the model error opposes it); the detections (onsets, time in contact, the
isolated links) and the worst stretches.

And :func:`contact_stretches`: which stretches of a contact-free recording's residual may be
called contact, with the evidence (module :mod:`.thresholds` covers all the others).
"""

from dataclasses import dataclass, field

import numpy as np

from ..estimation.cycle_state import per_coordinate
from .replay import observer_residuals
from .spans import runs
from .thresholds import Thresholds, envelope

__all__ = ['Check', 'ContactForceCheck', 'check_recording', 'check_contact_forces',
           'contact_stretches']


@dataclass
class Check:
    """Result of :func:`check_recording` (N m, s)."""
    names: list
    t: np.ndarray
    r: np.ndarray                 # (T, nj) residual, NaN where the observer (re)started
    threshold: np.ndarray         # (T, nj) the thresholds at each sample's state
    contact: np.ndarray           # (T,) detected
    link: list                    # (T,) isolated link or None
    onsets: int = 0
    contact_time: float = 0.0
    ratio: np.ndarray = None      # (nj,) max |r| / threshold outside detections
    detectable: np.ndarray = None  # (nj,) median threshold
    detectable_sure: np.ndarray = None   # (nj,) max threshold + max free |r|
    stretches: list = field(default_factory=list)   # detections: dicts
    closest: list = field(default_factory=list)     # free motion's closest calls: dicts
    label: str = ''

    def summary(self):
        f = lambda a: '[' + ', '.join(f'{x:.3g}' for x in a) + ']'  # noqa: E731
        out = [f'check{" of " + self.label if self.label else ""}: {len(self.t)} samples '
               f'({self.t[-1] - self.t[0]:.1f} s) replayed through the node\'s cycle: '
               f'{self.onsets} contact onsets, {self.contact_time:.2f} s in contact']
        out.append(f'  free motion, max |r| / threshold per joint: {f(self.ratio)} (margin: '
                   'how far below 1)')
        out.append(f'  smallest detected external torque per joint [N m]: median threshold '
                   f'{f(self.detectable)}; at every sample above {f(self.detectable_sure)}')
        for c in self.closest:
            out.append(f'  closest free-motion call at {c["t"]:.2f} s: joint {c["joint"]!r} at '
                       f'{c["ratio"]:.2f} of its threshold ({c["r"]:.3g} of {c["threshold"]:.3g} '
                       'N m)')
        for s in self.stretches[:5]:
            out.append(f'  detection {s["start"]:.2f}-{s["stop"]:.2f} s ({s["duration"]:.3f} s) '
                       f'on {s["joints"]}, link {s["link"]!r}, peak |r| {f(s["peak"])} N m')
        if len(self.stretches) > 5:
            out.append(f'  ... and {len(self.stretches) - 5} more detections')
        return out


def check_recording(model, samples, gain=50.0, friction_viscous=0.0, friction_coulomb=0.0,
                    threshold=5.0, threshold_velocity=0.0, threshold_torque=0.0,
                    release_ratio=0.5, torque_offset=0.0, label='', **contact):
    """Replay ``samples`` through the node's cycle with these settings (the threshold's rows
    of :func:`ros_dynamics.estimation.rules.threshold_at`; ``contact``: its contact-force
    settings, e.g. ``contact_frames``: the detector then judges the part the contact frames
    leave unexplained, as the node's); a :class:`Check`."""
    rows = {'': threshold, '_velocity': threshold_velocity, '_torque': threshold_torque}
    res = observer_residuals(model, samples, gain, friction_viscous, friction_coulomb,
                             release_ratio=release_ratio, torque_offset=torque_offset,
                             **{f'threshold{k}': x for k, x in rows.items()}, **contact)
    nv = int(model.nv)
    nb = nv - len(model.joint_names)
    th = Thresholds(*(per_coordinate(f'contact_threshold{k}', x, model)[nb:]
                           for k, x in rows.items()))
    r = res['r'][:, nb:]
    thr = th.at(samples.v[:, nb:], samples.tau[:, nb:])
    contact = res['contact']
    ok = np.all(np.isfinite(r), axis=1)
    free = ok & ~contact
    dt = np.diff(samples.t)
    names = list(model.joint_names)
    ck = Check(names, samples.t, r, thr, contact, res['link'],
               onsets=int(np.sum(contact[1:] & ~contact[:-1]) + contact[0]),
               contact_time=float(np.sum(dt[contact[1:]])) if len(dt) else 0.0, label=label)
    a = np.abs(r[free]) if free.any() else np.zeros((1, len(names)))
    ck.ratio = np.max(a / thr[free], axis=0) if free.any() else np.zeros(len(names))
    ck.detectable = np.median(thr[ok], axis=0) if ok.any() else base
    ck.detectable_sure = np.max(thr[ok], axis=0) + np.max(a, axis=0) if ok.any() else base
    if free.any():      # the worst free-motion moments, at least 0.5 s apart
        idx = np.flatnonzero(free)
        q = np.abs(r[idx]) / thr[idx]
        peak = np.max(q, axis=1)
        for k in np.argsort(-peak):
            tk = samples.t[idx[k]]
            if len(ck.closest) == 3:
                break
            if all(abs(tk - samples.t[0] - c['t']) > 0.5 for c in ck.closest):
                j = int(np.argmax(q[k]))
                ck.closest.append({'t': float(tk - samples.t[0]), 'joint': names[j],
                                   'ratio': float(q[k, j]), 'r': float(r[idx[k], j]),
                                   'threshold': float(thr[idx[k], j])})
    for i, j in runs(contact):
        seg = r[i:j]
        above = np.any(np.abs(seg) > thr[i:j], axis=0)
        links = [x for x in res['link'][i:j] if x]
        ck.stretches.append({'start': float(samples.t[i] - samples.t[0]),
                             'stop': float(samples.t[j - 1] - samples.t[0]),
                             'duration': float(samples.t[j - 1] - samples.t[i]),
                             'joints': [n for n, x in zip(names, above) if x],
                             'link': max(set(links), key=links.count) if links else None,
                             'peak': np.nanmax(np.abs(seg), axis=0)})
    ck.stretches.sort(key=lambda s: -float(np.max(s['peak'])))
    return ck


def contact_stretches(t, r, v, tau, names, block=0.25, ratio=25.0, evidence=3.0,
                      min_duration=0.05):
    """Which stretches of a contact-free recording's residual ``r`` (T, nj) are contact, and
    what stands out but is covered.

    Candidates: 0.25 s blocks whose mean square is above ``ratio`` x the median block's on some
    joint.  A candidate stretch is called contact only with evidence: it lasts at least
    ``min_duration``, and on at least two joints at once (a force on a link acts on every joint
    that moves it; a friction effect on one) its ``|r|`` exceeds ``evidence`` x what the rest of
    the recording leaves at the same speed and torque (the state envelope of
    :func:`.thresholds.envelope` fitted without the candidates).  Returns (mask of the contact
    samples (T,), list of dicts: start, stop, duration, peak (nj,), joints, contact (bool),
    why)."""
    t = np.asarray(t, float)
    k = np.floor((t - t[0]) / block).astype(int)
    n = k.max() + 1
    cnt = np.bincount(k, minlength=n)
    ms = np.stack([np.bincount(k, weights=r[:, j] ** 2, minlength=n) for j in range(r.shape[1])],
                  axis=1) / np.maximum(cnt, 1)[:, None]
    have = cnt > 0
    score = np.max(ms / np.maximum(np.median(ms[have], axis=0), 1e-300), axis=1)
    cand = (score > ratio)[k]
    mask = np.zeros(len(t), dtype=bool)
    found = []
    if not cand.any():
        return mask, found
    rest = ~cand
    if rest.sum() < 20:
        rest = np.ones(len(t), dtype=bool)
    env = [envelope(r[rest, j], v[rest, j], tau[rest, j]) for j in range(r.shape[1])]
    level = np.column_stack([e[0] + e[1] * np.abs(v[:, j]) + e[2] * np.abs(tau[:, j])
                             for j, e in enumerate(env)])
    excess = np.abs(r) / np.maximum(level, 1e-9)
    for i, j in runs(cand):
        seg = excess[i:j]
        both = np.sum(seg > evidence, axis=1) >= 2
        dur = float(t[j - 1] - t[i])
        longest = max([float(t[b - 1] - t[a]) for a, b in runs(both)] or [0.0])
        is_contact = longest >= min_duration
        peak = np.max(np.abs(r[i:j]), axis=0)
        joints = [nm for nm, x in zip(names, np.max(seg, axis=0) > evidence) if x]
        why = (f'{longest:.3f} s with |r| above {evidence:g}x what the rest of the recording '
               f'leaves at the same speed and torque on >= 2 joints at once ({joints})'
               if is_contact else
               f'up to {np.max(seg):.2g}x what the rest leaves at the same state, on '
               f'{joints or "no joint beyond that"}: no evidence of contact (covered)')
        found.append({'start': float(t[i] - t[0]), 'stop': float(t[j - 1] - t[0]),
                      'duration': dur, 'peak': peak, 'joints': joints, 'contact': is_contact,
                      'why': why})
        if is_contact:
            mask[i:j] = True
    return mask, found


@dataclass
class ContactForceCheck:
    """Result of :func:`check_contact_forces` (N, N m, s): what ``~/contact_forces`` leaves on a
    recording's stance, through the node's cycle."""
    frames: list
    t: np.ndarray
    forces: np.ndarray            # (T, k, 3) the feet's estimated forces (world axes)
    in_contact: np.ndarray        # (T, k) the feet's estimated contact states
    unexplained: np.ndarray       # (T, nv) the part the feet leave (NaN where not updated)
    weight: float                 # the model's weight [N]
    stance: np.ndarray = None     # (T,) the samples judged: every foot in contact
    unexplained_rms: np.ndarray = None   # (nv,) over stance
    unexplained_max: np.ndarray = None   # (nv,) over stance
    weight_error: tuple = (np.nan, np.nan)     # Σ f_z − weight over stance: (median, rms) [N]
    contact_share: np.ndarray = None     # (k,) the share of samples each foot is in contact
    worst: list = field(default_factory=list)   # the largest base force left: dicts
    label: str = ''
    joints: list = field(default_factory=list)     # the model's joint names

    def summary(self):
        f = lambda a: '[' + ', '.join(f'{x:.3g}' for x in a) + ']'  # noqa: E731
        n = int(self.stance.sum())
        out = [f'contact forces{" of " + self.label if self.label else ""} at '
               f'{", ".join(self.frames)}: in contact '
               + ', '.join(f'{100 * s:.1f} %' for s in self.contact_share)
               + f'; judged on {n} samples with every foot in contact']
        if n == 0:
            return out + ['  no sample with every foot in contact: nothing to judge']
        nb = self.unexplained.shape[1] - len(self.joints)
        med, rms = self.weight_error
        out.append(f'  sum of the feet\'s vertical forces - weight ({self.weight:.1f} N): median '
                   f'{med:+.3g} N ({100 * med / self.weight:+.2f} %), rms {rms:.3g} N '
                   f'({100 * rms / self.weight:.2f} %)')
        out.append(f'  foot-force residual (unexplained part), rms: base force '
                   f'{f(self.unexplained_rms[:3])} N, base torque {f(self.unexplained_rms[3:nb])} '
                   f'N m, joints {f(self.unexplained_rms[nb:])} N m')
        out.append(f'  ... max: base force {f(self.unexplained_max[:3])} N, base torque '
                   f'{f(self.unexplained_max[3:nb])} N m, joints '
                   f'{f(self.unexplained_max[nb:])} N m')
        for w in self.worst:
            out.append(f'  largest base force left at {w["t"]:.2f} s: {w["force"]:.3g} N '
                       f'({100 * w["force"] / self.weight:.1f} % of the weight)')
        return out


def check_contact_forces(model, samples, contact_frames, gain=50.0, friction_viscous=0.0,
                         friction_coulomb=0.0, torque_offset=0.0, contact_force_threshold=10.0,
                         odom_twist_noise=0.03, contact_frame_model='point', label='',
                         rows=None):
    """Replay ``samples`` (a floating base: its odometry in ``q[:7]``, ``v[:6]``) through the
    node's cycle with the ``contact_frames`` (the settings of ``~/contact_forces``); judged on
    the samples where every foot is in contact (standing, no force sensor needed; not within
    5 / K of the observer's start or a restart, its rise): the sum of
    the feet's vertical forces against the model's weight (a model too heavy or too light, or
    feet the estimate misses, shows here), and the foot-force residual, the ``unexplained``
    part per coordinate (what the model and the feet cannot explain: model error, a push),
    with its largest base forces; ``rows``: the samples judged (default all; the replay runs
    over all, e.g. to judge a held-out part with the observer settled).  A
    :class:`ContactForceCheck`."""
    res = observer_residuals(model, samples, gain, friction_viscous, friction_coulomb,
                             torque_offset=torque_offset,
                             contact_frames=tuple(contact_frames),
                             contact_force_threshold=contact_force_threshold,
                             odom_twist_noise=odom_twist_noise,
                             contact_frame_model=contact_frame_model)
    U, F, C = res['unexplained'], res['forces'], res['in_contact']
    weight = float(-model.total_mass() * model.gravity[2])
    ok = np.all(np.isfinite(U), axis=1)
    # not judged: the observer's rise, 5 / K after its start and every restart (e^-5 left)
    start = samples.t[np.flatnonzero(res['restart'] | (np.arange(len(ok)) == 0))]
    settle = 5.0 / float(np.min(gain))
    ok &= ~np.any((samples.t[:, None] >= start) & (samples.t[:, None] < start + settle), axis=1)
    stance = ok & np.all(C, axis=1)
    if rows is not None:
        judged = np.zeros(len(ok), dtype=bool)
        judged[rows] = True
        ok, stance = ok & judged, stance & judged
    ck = ContactForceCheck(list(contact_frames), samples.t, F, C, U, weight, stance=stance,
                           label=label, joints=list(model.joint_names))
    ck.contact_share = C[ok].mean(axis=0) if ok.any() else np.zeros(len(contact_frames))
    if not stance.any():
        ck.unexplained_rms = ck.unexplained_max = np.full(U.shape[1], np.nan)
        return ck
    ck.unexplained_rms = np.sqrt(np.mean(U[stance] ** 2, axis=0))
    ck.unexplained_max = np.max(np.abs(U[stance]), axis=0)
    e = F[stance, :, 2].sum(axis=1) - weight
    ck.weight_error = (float(np.median(e)), float(np.sqrt(np.mean(e ** 2))))
    base = np.where(stance, np.linalg.norm(np.nan_to_num(U[:, :3]), axis=1), 0.0)
    for k in np.argsort(-base):          # the largest, at least 0.5 s apart
        if len(ck.worst) == 3 or base[k] <= 0:
            break
        tk = float(samples.t[k] - samples.t[0])
        if all(abs(tk - w['t']) > 0.5 for w in ck.worst):
            ck.worst.append({'t': tk, 'force': float(base[k])})
    return ck
