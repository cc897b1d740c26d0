"""Contact thresholds from residuals recorded in contact-free motion (offline: the observer's
threshold calibration; the node only compares the residual against what this returns, with
:func:`ros_dynamics.estimation.rules.threshold_at`).

A threshold must cover what the model cannot explain in free motion, all of it: dry friction
at reversals, unmodelled effects, noise.  Left out, it comes back live as false contacts.  And
it must hold on motion the recording did not show: the part of the residual that comes from
model error grows with the state (a mass off by a few percent leaves a few percent of the
torque, a friction law off leaves a share of the speed), and other motion reaches speeds and
torques the recording did not.  Per joint (Haddadin et al. 2017, dynamic thresholds;
:func:`ros_dynamics.estimation.rules.threshold_at`):

    threshold_i(v, τ) = c_i + k_v,i max(0, |v_i| − v0_i) + k_τ,i max(0, |τ_i| − τ0_i),

* ``c_i`` covers the motion recorded: at least ``margin`` x the largest ``|r_i|`` (motion unlike
  the recording's), and the level ``|r_i|`` reaches once per ``target`` on motion like it --
  the return level of a Gumbel distribution fitted to its maxima over 0.25 s blocks (Coles
  2001, Ch. 3: the maxima of a low-pass residual of noise and smooth model error fall in the
  Gumbel domain; the false-alarm target, default one crossing per 10 h) -- and at least the
  joint's Coulomb friction: at a velocity reversal dry friction holds anything up to its
  Coulomb level, which the smooth law of the observer does not give, and motion that turns
  harder than the recording's shows it (on MuJoCo's sticking friction, a wrist calibrated on
  slow motion was crossed at the reversals of motion 2.5 times faster);
* ``v0_i``, ``τ0_i``: the speed and torque the recording reached; up to them the threshold is
  ``c_i``, the same as a constant one, so the recorded motion (and any motion within it) sees
  no threshold lower than the constant one -- on a real arm (Gaz et al. 2019's recording of a
  Panda) an earlier form that lowered the threshold at low speed for a growth term was crossed
  on the rest of the motion where the constant one held;
* beyond them the threshold grows as the residual's size grows with the state in the
  recording: its mean, a non-negative least-squares fit ``s_i = a_i + b_i |v_i| + d_i |τ_i|``
  of ``|r_i|`` over every sample (a regression of the bulk, not an envelope of a few peaks),
  scaled to the threshold: ``k_v = c b / s(v0, τ0)``, ``k_τ = c d / s(v0, τ0)``.  A growth is
  kept (``state='auto'``) only where the state predicts the residual's size: fitted on one half
  of the recording (its first or its second half) it predicts the other half's ``|r_i|``
  better than a constant.  And whatever the recording shows, a torque read through torque
  constants (from motor currents) is off by a share of itself (``torque_error``, one standard
  deviation, default 0.02; 0 for joint torque sensors): beyond the recorded torque the
  threshold grows by at least ``margin`` x that share (a slow recording, whose torques are
  mostly gravity's, cannot show how the residual grows with the torques of faster motion).
  At the joint's limits (the URDF's velocity and effort) the threshold is kept below half the
  effort limit (one beyond that detects nothing).

No acceleration enters.
"""

import numpy as np

__all__ = ['StateThresholds', 'calibrate_thresholds', 'envelope', 'fit_state_thresholds',
           'joint_limits', 'residual_scale', 'return_level']


def calibrate_thresholds(residuals, margin=1.5, floor=0.1):
    """Per-joint thresholds from residuals recorded in contact-free motion.

    ``threshold_i = max(floor, margin * max_t |r_i(t)|)``: run the task (or a representative
    motion) without contact, with the same observer settings, and pass the residual history
    (T, nv).  The margin covers what the recording did not see; raise it, or the floor, for a
    lower false-positive rate at the cost of a longer detection delay.
    """
    R = np.asarray(residuals, dtype=float)
    if R.ndim != 2 or R.shape[0] == 0:
        raise ValueError('residuals must be a (T, nv) array with T >= 1')
    if not np.all(np.isfinite(R)):
        raise ValueError('residuals must be finite')
    return np.maximum(float(floor), float(margin) * np.max(np.abs(R), axis=0))


def envelope(r, v, tau, state=True):
    """The smallest envelope ``(base, k_v, k_τ) >= 0`` of one joint's ``|r|`` over the samples:
    ``base + k_v |v| + k_τ |τ| >= |r|`` at every sample, the envelope's mean over the samples
    minimal (a linear programme, HiGHS).  ``state=False``: ``(max |r|, 0, 0)``."""
    a = np.abs(np.asarray(r, dtype=float))
    top = float(a.max()) if a.size else 0.0
    if not state or a.size < 10:
        return np.array([top, 0.0, 0.0])
    from scipy.optimize import linprog
    av, at = np.abs(v), np.abs(tau)
    # samples below the median |r| are covered by any base >= that median: only the others
    # constrain (and base >= the median)
    med = float(np.median(a))
    sel = a > med
    sv, st = max(float(av.max()), 1e-9), max(float(at.max()), 1e-9)     # scaled columns
    A = -np.column_stack([np.ones(int(sel.sum())), av[sel] / sv, at[sel] / st])
    c = np.array([1.0, av.mean() / sv, at.mean() / st])
    res = linprog(c, A_ub=A, b_ub=-a[sel], bounds=[(med, None), (0, None), (0, None)],
                  method='highs')
    if res.status != 0:
        return np.array([top, 0.0, 0.0])
    x = res.x
    return np.array([x[0], x[1] / sv, x[2] / st])


#: the false-alarm target [s]: on motion like the recording, the threshold is crossed less
#: than once in this long on average (the extreme-value return level of the level's fit)
TARGET = 36000.0
#: the blocks whose maxima the extreme-value fit takes [s]
BLOCK = 0.25
#: the threshold at the joint's limits stays below this share of its effort limit
LIMIT_SHARE = 0.5


def residual_scale(r, v, tau):
    """``(a, b, d)``: the mean of ``|r|`` as ``a + b |v| + d |τ|`` (non-negative least squares,
    ``a`` at least a fifth of the mean ``|r|``)."""
    from scipy.optimize import nnls
    a = np.abs(np.asarray(r, dtype=float))
    mean = max(float(a.mean()) if a.size else 0.0, 1e-12)
    a0 = 0.2 * mean
    X = np.column_stack([np.ones(a.size), np.abs(v), np.abs(tau)])
    norm = np.maximum(np.linalg.norm(X, axis=0), 1e-12)
    x = nnls(X / norm, a - a0)[0] / norm
    return np.array([a0 + x[0], x[1], x[2]])


def _scaled(scale, v, tau):
    return scale[0] + scale[1] * np.abs(v) + scale[2] * np.abs(tau)


def return_level(t, z, target=TARGET, block=BLOCK):
    """The level the series ``z`` at the times ``t`` exceeds once per ``target`` seconds on
    average: the return level of a Gumbel distribution fitted to its maxima over ``block`` s
    (scipy; Coles 2001, Sec. 3.3.3; a heavier-tailed shape fitted to a few tens of blocks is
    noise that would set the level, not data); its largest value when fewer than 20
    blocks."""
    k = np.floor((t - t[0]) / block).astype(int)
    top = np.full(k.max() + 1, -np.inf)
    np.maximum.at(top, k, z)
    top = top[np.isfinite(top)]
    if top.size < 20 or np.ptp(top) <= 0:
        return float(np.max(z))
    from scipy.stats import gumbel_r
    loc, sc = gumbel_r.fit(top)
    return max(float(np.max(z)), float(gumbel_r.ppf(1.0 - block / target, loc, sc)))


class StateThresholds:
    """Per-joint thresholds ``base + k_v max(0, |v| − v0) + k_τ max(0, |τ| − τ0)`` (arrays (nj,):
    ``base``, ``velocity``, ``torque``, ``velocity_from``, ``torque_from``) and how they were
    chosen: ``state`` the joints given a growth, ``extreme`` per joint the false-alarm level
    over ``margin`` x the recording's largest (above 1: the target set the level), ``notes``."""

    def __init__(self, base, velocity=None, torque=None, velocity_from=None, torque_from=None,
                 state=None, notes=(), margin=2.0, floor=0.2, extreme=None, how=None):
        nj = len(base)
        zero = np.zeros(nj)
        self.base = np.asarray(base, dtype=float)
        self.velocity, self.torque, self.velocity_from, self.torque_from = (
            zero.copy() if x is None else np.asarray(x, dtype=float)
            for x in (velocity, torque, velocity_from, torque_from))
        self.state = np.zeros(nj, dtype=bool) if state is None else state
        self.notes = list(notes)
        self.margin, self.floor = margin, floor
        self.extreme = np.ones(nj) if extreme is None else extreme
        self.how = how or (f'at least {margin:g} x the recording\'s largest residual, and '
                           f'crossed less than once per {TARGET / 3600:g} h on motion like it')

    def at(self, v, tau):
        """(T, nj) thresholds at the states (v, τ) (T, nj) (rules.threshold_at)."""
        return (self.base + self.velocity * np.maximum(0.0, np.abs(v) - self.velocity_from)
                + self.torque * np.maximum(0.0, np.abs(tau) - self.torque_from))

    def settings(self):
        """The keyword arguments of the node's cycle (:func:`.replay.observer_residuals`,
        :func:`.check.check_recording`)."""
        return dict(threshold=self.base, threshold_velocity=self.velocity,
                    threshold_torque=self.torque, threshold_velocity_from=self.velocity_from,
                    threshold_torque_from=self.torque_from)

    def parameters(self):
        """The node parameters (``contact_threshold``, and the growth terms when any joint has
        one)."""
        p = {'contact_threshold': [float(x) for x in self.base]}
        if np.any(self.velocity) or np.any(self.torque):
            for name, x in (('velocity', self.velocity), ('torque', self.torque),
                            ('velocity_from', self.velocity_from),
                            ('torque_from', self.torque_from)):
                p[f'contact_threshold_{name}'] = [float(y) for y in x]
        return p

    def describe(self, f):
        """The report's line (``f`` formats an array)."""
        grows = np.any(self.velocity) or np.any(self.torque)
        return (f'contact_threshold = {f(self.base)} N m'
                + (f' + {f(self.velocity)} max(0, |v| - {f(self.velocity_from)}) + '
                   f'{f(self.torque)} max(0, |tau| - {f(self.torque_from)})' if grows else '')
                + f' ({self.how})')


def _constant(t, r, margin, floor, target):
    """``c`` (module text) and its false-alarm level over ``margin`` x the largest."""
    top = float(np.max(np.abs(r))) if r.size else 0.0
    level = max(margin * top, return_level(t, np.abs(r), target) if target else 0.0)
    return max(floor, level), level / max(margin * top, 1e-300)


def _predicts(t, r, v, tau):
    """Whether the state predicts ``|r|``: the scale fitted on one half of the recording (its
    first or its second half) predicts the other half's ``|r|`` with a smaller mean square
    error than the first half's mean, both ways."""
    half = t <= t[0] + 0.5 * (t[-1] - t[0])
    for a in (half, ~half):
        if a.sum() < 50 or (~a).sum() < 50:
            return False
        scale = residual_scale(r[a], v[a], tau[a])
        e_state = np.mean((np.abs(r[~a]) - _scaled(scale, v[~a], tau[~a])) ** 2)
        e_const = np.mean((np.abs(r[~a]) - np.mean(np.abs(r[a]))) ** 2)
        if not e_state < e_const:
            return False
    return True


def _growth(c, r, v, tau, limit, fitted, least):
    """(k_v, k_τ, v0, τ0) beyond the recorded speed and torque (module text): the growth of the
    residual's size (``fitted``), at least ``least`` per N m of torque, within ``limit`` =
    (velocity limit, effort limit) or None."""
    v0, t0 = float(np.max(np.abs(v))), float(np.max(np.abs(tau)))
    k = np.zeros(2)
    if fitted:
        scale = residual_scale(r, v, tau)
        k = c * scale[1:] / max(float(_scaled(scale, v0, t0)), 1e-300)
    k[1] = max(k[1], least)
    if limit is not None:
        top = c + k[0] * max(0.0, limit[0] - v0) + k[1] * max(0.0, limit[1] - t0)
        if top > LIMIT_SHARE * limit[1] and top > c:
            k *= max(0.0, LIMIT_SHARE * limit[1] - c) / (top - c)
    return k[0], k[1], v0, t0


def joint_limits(model):
    """(velocity limits, effort limits) (nj,) of the URDF's joints, or None if one is
    missing."""
    lim = [model.joint_limits.get(n, {}) for n in model.joint_names]
    v = np.array([float(x.get('velocity', 0.0) or 0.0) for x in lim])
    e = np.array([float(x.get('effort', 0.0) or 0.0) for x in lim])
    return (v, e) if np.all(v > 0) and np.all(e > 0) else None


def fit_state_thresholds(t, r, v, tau, margin=2.0, floor=0.2, state='auto', names=None,
                         limits=None, target=TARGET, torque_error=0.02, coulomb=0.0):
    """Thresholds for the residual ``r`` (T, nj) the node's cycle showed in contact-free
    motion (held out from the fit), at the states ``v``, ``tau`` (T, nj) (module text).
    ``state``: 'auto' (a growth beyond the recorded state where the state predicts the
    residual's size, and by at least ``margin`` x ``torque_error`` of the torque), True (the
    fitted growth on every joint), False (constant).  ``limits``: (velocity limits, effort
    limits) (nj,) each, or None.  ``coulomb`` (nj,): the fitted Coulomb friction, a floor of
    each joint's threshold.  Returns :class:`StateThresholds`."""
    r, v, tau = (np.asarray(x, dtype=float) for x in (r, v, tau))
    t = np.asarray(t, dtype=float)
    if r.ndim != 2 or r.shape[0] == 0 or v.shape != r.shape or tau.shape != r.shape:
        raise ValueError('r, v and tau must be (T, nj) arrays of the same shape, T >= 1')
    if not np.all(np.isfinite(r)):
        raise ValueError('residuals must be finite')
    if not (margin > 0 and floor >= 0):
        raise ValueError('margin must be > 0 and floor >= 0')
    nj = r.shape[1]
    floors = np.maximum(floor, np.broadcast_to(np.asarray(coulomb, dtype=float), (nj,)))
    names = names or [str(j) for j in range(nj)]
    out = np.zeros((5, nj))
    extreme, chosen, notes = np.ones(nj), np.zeros(nj, dtype=bool), []
    for j in range(nj):
        out[0, j], extreme[j] = _constant(t, r[:, j], margin, floors[j], target)
        if state is False or r.shape[0] < 100:
            continue
        fitted = state is True or _predicts(t, r[:, j], v[:, j], tau[:, j])
        lim = None if limits is None else (limits[0][j], limits[1][j])
        out[1:, j] = _growth(out[0, j], r[:, j], v[:, j], tau[:, j], lim, fitted,
                             margin * torque_error)
        chosen[j] = bool(np.any(out[1:3, j]))
        if fitted and chosen[j]:
            notes.append(f'joint {names[j]!r}: threshold {out[0, j]:.3g} N m up to the speed and '
                         f'torque recorded ({out[3, j]:.3g}, {out[4, j]:.3g}), growing beyond by '
                         f'{out[1, j]:.3g} per rad/s and {out[2, j]:.3g} per N m (the residual\'s '
                         'size grows with them in the recording)')
    return StateThresholds(*out, state=chosen, notes=notes, margin=margin, floor=floor,
                           extreme=extreme)
