"""Contact thresholds from residuals recorded in contact-free motion (offline: the observer's
threshold calibration; the node only compares the residual against what this returns, with
:func:`ros_dynamics.estimation.rules.threshold_at`).

A threshold must cover what the model cannot explain in free motion, all of it: dry friction
at reversals, unmodelled effects, noise.  Left out, it comes back live as false contacts.  Two
forms, per joint:

* constant: ``threshold_i = max(floor, margin · max_t |r_i(t)|)``;
* state-dependent (Haddadin et al. 2017, dynamic thresholds): ``threshold_i = base_i +
  k_v,i |v_i| + k_τ,i |τ_i|``, ``margin`` times the smallest such envelope of ``|r_i|`` over the
  samples (a linear programme: the envelope's mean over the samples is minimised subject to
  lying above every ``|r_i(t)|``), ``base_i >= floor``.  It is chosen for a joint only where the
  data ask for it: its mean threshold is at least 20 % below the constant one, and it still
  covers the residual on data it was not fitted on (two interleaved halves of the recording in
  1 s blocks, each fitted on the other, both with the margin).  No acceleration enters.
"""

import numpy as np

__all__ = ['calibrate_thresholds', 'StateThresholds', 'fit_state_thresholds', 'envelope']


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


def _level(env, v, tau):
    return env[0] + env[1] * np.abs(v) + env[2] * np.abs(tau)


class StateThresholds:
    """Per-joint thresholds ``base + k_v |v| + k_τ |τ|`` (arrays (nj,)) and how they were
    chosen (``state``: the joints given a state-dependent one; ``notes``)."""

    def __init__(self, base, velocity, torque, state, notes):
        self.base, self.velocity, self.torque = base, velocity, torque
        self.state, self.notes = state, notes

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


def fit_state_thresholds(t, r, v, tau, margin=2.0, floor=0.2, state='auto', names=None):
    """Thresholds covering every sample of ``r`` (T, nj) (contact-free residual the node's
    cycle showed, held-out), at the states ``v``, ``tau`` (T, nj) (module text).  ``state``:
    'auto' (state-dependent where the data ask for it), True (every joint), False (constant).
    Returns :class:`StateThresholds`."""
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
    fold = (np.floor((t - t[0]) / 1.0).astype(int) % 2) == 0
    base, kv, kt = np.zeros(nj), np.zeros(nj), np.zeros(nj)
    chosen = np.zeros(nj, dtype=bool)
    notes = []
    for j in range(nj):
        const = margin * envelope(r[:, j], v[:, j], tau[:, j], state=False)
        const[0] = max(floor, const[0])
        pick = const
        if state is not False and fold.any() and (~fold).any():
            env = margin * envelope(r[:, j], v[:, j], tau[:, j])
            env[0] = max(floor, env[0])
            mean_c = float(np.mean(_level(const, v[:, j], tau[:, j])))
            mean_s = float(np.mean(_level(env, v[:, j], tau[:, j])))
            held = True
            for a in (fold, ~fold):     # fitted on one half, it covers the other
                e = margin * envelope(r[a, j], v[a, j], tau[a, j])
                e[0] = max(floor, e[0])
                held &= bool(np.all(np.abs(r[~a, j]) <= _level(e, v[~a, j], tau[~a, j])))
            if state is True or (held and mean_s < 0.8 * mean_c):
                pick, chosen[j] = env, True
                notes.append(f'joint {names[j]!r}: state-dependent threshold {env[0]:.3g} + '
                             f'{env[1]:.3g}|v| + {env[2]:.3g}|tau| N m (mean {mean_s:.3g} '
                             f'against {mean_c:.3g} N m constant; covers each half of the '
                             'data when fitted on the other)' if held else '')
        base[j], kv[j], kt[j] = pick
    return StateThresholds(base, kv, kt, chosen, [n for n in notes if n])
