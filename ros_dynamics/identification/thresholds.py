"""Contact thresholds from residuals recorded in contact-free motion (offline: the observer's
threshold calibration; the node only compares the residual against what this returns, with
:func:`ros_dynamics.estimation.rules.threshold_at`).

A threshold must cover what the model cannot explain in free motion, all of it: dry friction
at reversals, unmodelled effects, noise.  Left out, it comes back live as false contacts.  And
it must hold on motion the recording did not show: the part of the residual that comes from
model error grows with the state (a mass off by a few percent leaves a few percent of the
torque, a friction law off leaves a share of the speed), and other motion reaches states the
recording did not.  Per joint, the threshold is a *scale* of the residual times a *level*
(Haddadin et al. 2017, dynamic thresholds):

    threshold_i(v, τ) = κ_i s_i(v, τ),   s_i = a_i + b_i |v_i| + c_i |τ_i|,

* the scale ``s_i``: constant (``b = c = 0``), or the mean of ``|r_i|`` as a function of the
  state, a non-negative least-squares fit of ``|r_i|`` on ``[1, |v_i|, |τ_i|]`` over every
  sample (a regression of the residual's size, not an envelope of its extremes, so that it
  extrapolates with the state the way the recording's bulk grows, not the way a few peaks
  fall; ``a_i`` at least a fifth of the mean ``|r_i|``);
* the level ``κ_i``: the standardized residual ``z = |r_i| / s_i`` must stay below it on motion
  like the recording for at least ``target`` seconds on average -- the return level of a
  Gumbel distribution fitted to the maxima of ``z`` over 0.25 s blocks (Coles 2001, Ch. 3; the
  false-alarm target, default one crossing per 10 h) -- and at least ``margin`` x its largest
  value in the recording (motion unlike it).

The state-dependent scale is chosen for a joint (``state='auto'``) only where the data need
it: fitted on one half of the recording (its first and its second half: different parts of the
motion, not interleaved blocks of the same), the constant threshold is crossed on the other
half and the state-dependent one fewer times; and at the joint's limits (the URDF's velocity
and effort) it stays below half the effort limit (a threshold beyond that detects nothing).
A lower mean threshold alone does not choose it: on a real arm (Gaz et al. 2019's recording
of a Panda) a state-dependent threshold chosen for its lower mean was crossed on the rest of
the motion where the constant one held.  No acceleration enters.
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
#: a state-dependent threshold at the joint's limits stays below this share of its effort limit
LIMIT_SHARE = 0.5


def residual_scale(r, v, tau, state=True):
    """``(a, b, c)``: the mean of ``|r|`` as ``a + b |v| + c |τ|`` (non-negative least squares,
    ``a`` at least a fifth of the mean ``|r|``; ``state=False``: the mean ``|r|``)."""
    a = np.abs(np.asarray(r, dtype=float))
    mean = max(float(a.mean()) if a.size else 0.0, 1e-12)
    if not state or a.size < 10:
        return np.array([mean, 0.0, 0.0])
    from scipy.optimize import nnls
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
    (scipy; Coles 2001, Sec. 3.3.3: the maxima of a low-pass residual of noise and smooth model
    error fall in the Gumbel domain, and a heavier-tailed shape fitted to a few tens of blocks
    is noise that would set the level, not data); its largest value when fewer than 20
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
    """Per-joint thresholds ``base + k_v |v| + k_τ |τ|`` (arrays (nj,)) and how they were
    chosen: ``state`` the joints given a state-dependent one, ``extreme`` per joint the
    return level over ``margin`` x the recording's largest (above 1: the false-alarm target
    set the level), ``notes``."""

    def __init__(self, base, velocity, torque, state, notes, margin=2.0, floor=0.2,
                 extreme=None, how=None):
        self.base, self.velocity, self.torque = base, velocity, torque
        self.state, self.notes = state, notes
        self.margin, self.floor = margin, floor
        self.extreme = np.ones(len(base)) if extreme is None else extreme
        self.how = how or (f'at least {margin:g} x the recording\'s largest residual relative '
                           f'to its scale, and crossed less than once per {TARGET / 3600:g} h '
                           'on motion like it')

    def at(self, v, tau):
        """(T, nj) thresholds at the states (v, τ) (T, nj)."""
        return self.base + self.velocity * np.abs(v) + self.torque * np.abs(tau)

    def parameters(self):
        """The node parameters (``contact_threshold``, and the state-dependent terms when any
        joint has one)."""
        p = {'contact_threshold': [float(x) for x in self.base]}
        if np.any(self.velocity) or np.any(self.torque):
            p['contact_threshold_velocity'] = [float(x) for x in self.velocity]
            p['contact_threshold_torque'] = [float(x) for x in self.torque]
        return p

    def describe(self, f):
        """The report's line (``f`` formats an array)."""
        grows = np.any(self.velocity) or np.any(self.torque)
        return (f'contact_threshold = {f(self.base)} N m'
                + (f' + {f(self.velocity)} |v| + {f(self.torque)} |tau|' if grows else '')
                + f' ({self.how})')


def _fit_joint(t, r, v, tau, margin, floor, state, target=None):
    """``(base, k_v, k_τ)`` of one joint (module text); ``target`` None: the margin only."""
    scale = residual_scale(r, v, tau, state)
    z = np.abs(r) / _scaled(scale, v, tau)
    top = float(np.max(z)) if z.size else 0.0
    level = margin * top
    if target is not None and z.size:
        level = max(level, return_level(t, z, target))
    out = level * scale
    out[0] = max(out[0], floor)
    return out, level / max(margin * top, 1e-300)


def _transfers(t, r, v, tau, margin, floor):
    """(samples above, mean threshold) of the constant and the state-dependent threshold,
    each fitted on one half of the recording and judged on the other (both ways)."""
    half = t <= t[0] + 0.5 * (t[-1] - t[0])
    above, mean = np.zeros(2, dtype=int), np.zeros(2)
    for a in (half, ~half):
        for i, state in enumerate((False, True)):
            th = _scaled(_fit_joint(t[a], r[a], v[a], tau[a], margin, floor, state)[0],
                         v[~a], tau[~a])
            above[i] += int(np.sum(np.abs(r[~a]) > th))
            mean[i] += float(np.mean(th))
    return above, mean


def joint_limits(model):
    """(velocity limits, effort limits) (nj,) of the URDF's joints, or None if one is
    missing."""
    lim = [model.joint_limits.get(n, {}) for n in model.joint_names]
    v = np.array([float(x.get('velocity', 0.0) or 0.0) for x in lim])
    e = np.array([float(x.get('effort', 0.0) or 0.0) for x in lim])
    return (v, e) if np.all(v > 0) and np.all(e > 0) else None


def fit_state_thresholds(t, r, v, tau, margin=2.0, floor=0.2, state='auto', names=None,
                         limits=None, target=TARGET):
    """Thresholds for the residual ``r`` (T, nj) the node's cycle showed in contact-free
    motion (held out from the fit), at the states ``v``, ``tau`` (T, nj) (module text).
    ``state``: 'auto' (state-dependent where it transfers better), True (every joint), False
    (constant).  ``limits``: (velocity limits, effort limits) (nj,) each, or None.  Returns
    :class:`StateThresholds`."""
    r, v, tau = (np.asarray(x, dtype=float) for x in (r, v, tau))
    t = np.asarray(t, dtype=float)
    if r.ndim != 2 or r.shape[0] == 0 or v.shape != r.shape or tau.shape != r.shape:
        raise ValueError('r, v and tau must be (T, nj) arrays of the same shape, T >= 1')
    if not np.all(np.isfinite(r)):
        raise ValueError('residuals must be finite')
    if not (margin > 0 and floor >= 0):
        raise ValueError('margin must be > 0 and floor >= 0')
    nj = r.shape[1]
    names = names or [str(j) for j in range(nj)]
    out, extreme = np.zeros((3, nj)), np.ones(nj)
    chosen = np.zeros(nj, dtype=bool)
    notes = []
    for j in range(nj):
        const, ext_c = _fit_joint(t, r[:, j], v[:, j], tau[:, j], margin, floor, False, target)
        pick, ext = const, ext_c
        if state is not False and r.shape[0] >= 100:
            grown, ext_s = _fit_joint(t, r[:, j], v[:, j], tau[:, j], margin, floor, True,
                                      target)
            above, mean = _transfers(t, r[:, j], v[:, j], tau[:, j], margin, floor)
            at_limit = (None if limits is None else
                        grown[0] + grown[1] * limits[0][j] + grown[2] * limits[1][j])
            safe = at_limit is None or not at_limit > LIMIT_SHARE * limits[1][j]
            better = above[1] < above[0]
            if (state is True or (better and safe)) and np.any(grown[1:]):
                pick, ext, chosen[j] = grown, ext_s, True
                notes.append(f'joint {names[j]!r}: threshold {grown[0]:.3g} + {grown[1]:.3g}|v| '
                             f'+ {grown[2]:.3g}|tau| N m (fitted on either half of the '
                             f'recording, {above[1]} samples of the other above it against '
                             f'{above[0]} for a constant one; mean {mean[1] / 2:.3g} against '
                             f'{mean[0] / 2:.3g} N m'
                             + (f'; {at_limit:.3g} N m at the joint\'s limits' if at_limit
                                is not None else '') + ')')
        out[:, j], extreme[j] = pick, ext
    return StateThresholds(out[0], out[1], out[2], chosen, notes, margin, floor, extreme)
