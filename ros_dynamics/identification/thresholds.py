"""Contact thresholds from residuals recorded in contact-free motion (offline: the observer's
threshold calibration; the node only compares the residual against what this returns, with
:func:`ros_dynamics.estimation.rules.threshold_at`).

A threshold must cover what the model cannot explain in free motion, all of it: dry friction
at reversals, unmodelled effects, noise.  Left out, it comes back live as false contacts.  And
it must hold on motion the recording did not show.  Per joint, the threshold is the largest of

* ``margin`` x the largest ``|r_i|`` of the recording (motion unlike it);
* the level ``|r_i|`` reaches once per ``target`` on motion like the recording (the
  false-alarm target, default one crossing per 10 h): the return level of a Gumbel
  distribution fitted to its maxima over 0.25 s blocks (Coles 2001, Ch. 3: the maxima of a
  low-pass residual of noise and smooth model error fall in the Gumbel domain; a heavier-tailed
  shape fitted to a few tens of blocks is noise that would set the level, not data);
* the joint's fitted Coulomb friction: at a velocity reversal dry friction holds anything up
  to its Coulomb level, which the smooth law of the observer does not give, and motion that
  turns harder than the recording's shows it (benchmarks/results/thresholds_mujoco.md: after
  an identification on slow motion, motion 2.5 times faster crossed the wrists' thresholds at
  their reversals);
* ``floor``.

No state-dependent terms (``contact_threshold_velocity``, ``contact_threshold_torque``): a
growth learned from the recording's residual cannot see what generalizes, because the fit
that leaves the residual has absorbed every part of the model error that is linear in the
same state (a friction growing faster than linearly with speed, or inertia errors, leave a
residual that does not grow with |v| or |τ| over the recorded range); on MuJoCo plants the
growth changed nothing on faster motion, and on a real arm (a Panda's published exciting
trajectory, Gaz et al. 2019) the growth terms the previous release fitted, which lowered the
threshold at low speed, were crossed on the rest of the motion where a constant one held.
"""

import numpy as np

__all__ = ['Thresholds', 'calibrate_thresholds', 'envelope', 'fit_thresholds',
           'return_level']


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


def return_level(t, z, target=TARGET, block=BLOCK):
    """The level the series ``z`` at the times ``t`` exceeds once per ``target`` seconds on
    average: the return level of a Gumbel distribution fitted to its maxima over ``block`` s
    (scipy; Coles 2001, Sec. 3.3.3); its largest value when fewer than 20 blocks."""
    k = np.floor((t - t[0]) / block).astype(int)
    top = np.full(k.max() + 1, -np.inf)
    np.maximum.at(top, k, z)
    top = top[np.isfinite(top)]
    if top.size < 20 or np.ptp(top) <= 0:
        return float(np.max(z))
    from scipy.stats import gumbel_r
    loc, sc = gumbel_r.fit(top)
    return max(float(np.max(z)), float(gumbel_r.ppf(1.0 - block / target, loc, sc)))


class Thresholds:
    """Per-joint thresholds in the node's form ``base + k_v |v| + k_τ |τ|`` (arrays (nj,);
    :func:`fit_thresholds` writes the base only, a parameter file may carry the others) and
    how they were chosen: ``extreme`` per joint the false-alarm level over ``margin`` x the
    recording's largest (above 1: the target set the level), ``coulomb`` per joint whether the
    Coulomb friction set it, ``how`` the rule in words, ``notes``."""

    def __init__(self, base, velocity=None, torque=None, margin=2.0, floor=0.2, extreme=None,
                 coulomb=None, how=None, notes=()):
        nj = len(base)
        self.base = np.asarray(base, dtype=float)
        self.velocity, self.torque = (np.zeros(nj) if x is None else np.asarray(x, dtype=float)
                                      for x in (velocity, torque))
        self.margin, self.floor = margin, floor
        self.extreme = np.ones(nj) if extreme is None else extreme
        self.coulomb = np.zeros(nj, dtype=bool) if coulomb is None else coulomb
        self.how = how or (f'at least {margin:g} x the recording\'s largest residual, the '
                           f'level crossed once per {TARGET / 3600:g} h on motion like it, the '
                           f'joint\'s Coulomb friction and {floor:g} N m')
        self.notes = list(notes)

    def at(self, v, tau):
        """(T, nj) thresholds at the states (v, τ) (T, nj) (rules.threshold_at)."""
        return self.base + self.velocity * np.abs(v) + self.torque * np.abs(tau)

    def settings(self):
        """The keyword arguments of the node's cycle (:func:`.replay.observer_residuals`,
        :func:`.check.check_recording`)."""
        return dict(threshold=self.base, threshold_velocity=self.velocity,
                    threshold_torque=self.torque)

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


def fit_thresholds(t, r, margin=2.0, floor=0.2, coulomb=0.0, target=TARGET):
    """Thresholds for the residual ``r`` (T, nj) at the times ``t`` that the node's cycle
    showed in contact-free motion held out from the fit (module text); ``coulomb`` (nj,) the
    fitted Coulomb friction.  Returns :class:`Thresholds`."""
    r = np.asarray(r, dtype=float)
    t = np.asarray(t, dtype=float)
    if r.ndim != 2 or r.shape[0] == 0 or t.shape != r.shape[:1]:
        raise ValueError('r must be a (T, nj) array with T >= 1 and t (T,)')
    if not np.all(np.isfinite(r)):
        raise ValueError('residuals must be finite')
    if not (margin > 0 and floor >= 0):
        raise ValueError('margin must be > 0 and floor >= 0')
    nj = r.shape[1]
    fc = np.broadcast_to(np.asarray(coulomb, dtype=float), (nj,))
    top = np.max(np.abs(r), axis=0)
    level = np.array([max(margin * top[j], return_level(t, np.abs(r[:, j]), target))
                      for j in range(nj)])
    base = np.maximum(level, np.maximum(floor, fc))
    return Thresholds(base, margin=margin, floor=floor,
                           extreme=level / np.maximum(margin * top, 1e-300),
                           coulomb=(fc > level) & (fc > floor))
