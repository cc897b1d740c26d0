"""The per-cycle rules, each stated once as a small compiled function with its constants here.

The compiled cycle (:mod:`ros_dynamics.estimation.cycle_kernel`) calls them in one compiled
call, and the Python that gives its answers their reasons
(:mod:`~ros_dynamics.estimation.joint_input`) calls the same functions again for the text;
the standalone observer and detector (:mod:`~ros_dynamics.estimation.observer`) use them too.
So a rule changed here changes every user.

* :func:`stamp_verdict`: the stamp policy of one source (docs/input_policy.md);
* :func:`layout_verdict`: the arrays of a message fit its names;
* :func:`within`: the input bounds of a joint's position, velocity and effort;
* :func:`gather_checked`: one value per model joint from a message or from the held values of
  other sources (fresh enough), each :func:`within` its bounds;
* :func:`hold`: a partial source's values kept for the cycles of the driving source;
* :func:`observer_interval`: what the observer does with the time since its last sample: an
  update, nothing (the same stamp), a restart (the time went back) or a bridge over a gap;
* :func:`friction_into`: the joint-friction law ``F_v v + F_c tanh(v / eps)`` and the torque
  offset;
* :func:`threshold_at`, :func:`any_above`: the contact threshold, a base level plus terms
  growing with the joint's speed and torque (state-dependent thresholds: Haddadin et al. 2017,
  Sec. on dynamic thresholds), and whether a residual is above it;
* :func:`terms_finite`: nothing non-finite is published.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, types

from ..core.jit import entry
from ..core.kernels import VEC

#: nanoseconds per second (stamps are handled as int64 nanoseconds)
NS = 1_000_000_000
#: "no stamp accepted yet" for a source's last stamp (int64 nanoseconds)
NO_STAMP = -(2 ** 63)
#: a source's record (int64; the compiled cycle updates it, joint_input.Source reads it): its
#: last accepted stamp [ns] (NO_STAMP: none yet), its accepted messages, the receiving clock's
#: epoch at its first and at a reset, the last stamp and epoch before its last message (the
#: reason of a reset is told from them); S_FIELDS: how many
S_LAST_NS, S_MESSAGES, S_EPOCH, S_PREV_LAST_NS, S_PREV_EPOCH, S_FIELDS = range(6)
#: the smoothing velocity [rad/s or m/s] of the Coulomb friction term, tanh(v / FRICTION_EPS)
FRICTION_EPS = 1e-2

_FLAGS = dict(cache=True, nogil=True)

# -- the stamp policy ----------------------------------------------------------------------
#: stamp_verdict's answers: accepted (STAMP_OK; STAMP_UNSTAMPED for a source that sends no
#: stamps), accepted as a reset of the source (STAMP_SOURCE_RESET: its clock jumped back by
#: more than the reset jump; STAMP_CLOCK_RESET: back by any amount after the receiving clock
#: jumped back), or rejected (the others)
(STAMP_OK, STAMP_UNSTAMPED, STAMP_SOURCE_RESET, STAMP_CLOCK_RESET, STAMP_NANOSEC, STAMP_ZERO,
 STAMP_FUTURE, STAMP_BACKWARDS) = range(8)


@njit(**_FLAGS)
def stamp_verdict(sec, nanosec, last_ns, now_ns, max_lead_ns, reset_jump_ns, clock_jumped):
    """The verdict on one stamp of a source whose last accepted stamp is ``last_ns`` (NO_STAMP:
    none yet; 0: it sends no stamps), ``now_ns`` the receiving clock (0 if unknown), limits in
    nanoseconds; ``clock_jumped``: the receiving clock jumped back since that stamp."""
    if nanosec >= NS:
        return STAMP_NANOSEC
    stamp_ns = sec * NS + nanosec
    if stamp_ns == 0:
        return STAMP_UNSTAMPED if last_ns == NO_STAMP or last_ns == 0 else STAMP_ZERO
    if now_ns > 0 and stamp_ns - now_ns > max_lead_ns:
        return STAMP_FUTURE
    if last_ns != NO_STAMP and stamp_ns < last_ns:
        if clock_jumped:
            return STAMP_CLOCK_RESET
        if last_ns - stamp_ns > reset_jump_ns:
            return STAMP_SOURCE_RESET
        return STAMP_BACKWARDS
    return STAMP_OK


# -- the message layout --------------------------------------------------------------------
#: layout_verdict's answers
LAYOUT_OK, LAYOUT_POSITIONS, LAYOUT_VELOCITIES, LAYOUT_EFFORTS = range(4)


@njit(**_FLAGS)
def layout_verdict(n, n_position, n_velocity, n_effort, allow_missing_velocity):
    """Whether a message's arrays fit its ``n`` names: as many positions; as many velocities
    (or none, if ``allow_missing_velocity``: zero velocity); as many efforts or none."""
    if n_position != n:
        return LAYOUT_POSITIONS
    if n_velocity != n and (n_velocity != 0 or not allow_missing_velocity):
        return LAYOUT_VELOCITIES
    if n_effort != n and n_effort != 0:
        return LAYOUT_EFFORTS
    return LAYOUT_OK


# -- one value per joint -------------------------------------------------------------------
#: gather_checked's answers
GATHER_OK, GATHER_BOUNDS, GATHER_STALE = range(3)


@njit(**_FLAGS)
def gather_checked(gather, pos, vel, eff, held, h_ns, h_known, h_effort, t_ns, max_age_ns,
                   q, v, e, pbound, vbound, ebound):
    """q, v, e (the model's joints) <- the message's values at ``gather[k]`` (v, e zero where
    the message has none), or for ``gather[k] < 0`` the held rows (q, v, effort) of another
    source, if known and stamped at most ``max_age_ns`` from ``t_ns``.

    Returns (code, every joint has an effort): GATHER_BOUNDS if a message value is not finite or
    beyond its bound (NaN fails every compare), else GATHER_STALE if a held value is missing or
    too old, else GATHER_OK."""
    has_v, has_e = vel.shape[0] > 0, eff.shape[0] > 0
    all_e, stale, bad = has_e, False, False
    for k in range(gather.shape[0]):      # every joint written (the reasons read them all)
        i = gather[k]
        if i < 0:
            if not (h_known[k] and abs(h_ns[k] - t_ns) <= max_age_ns):
                stale = True
            q[k], v[k], e[k] = held[0, k], held[1, k], held[2, k]
            all_e = all_e and h_effort[k]
            continue
        a = pos[i]
        b = vel[i] if has_v else 0.0
        c = eff[i] if has_e else 0.0
        q[k], v[k], e[k] = a, b, c
        if not within(a, b, c, pbound, vbound[k], ebound[k]):
            bad = True
    if bad:
        return GATHER_BOUNDS, False
    return (GATHER_STALE if stale else GATHER_OK), all_e


@njit(**_FLAGS)
def within(position, velocity, effort, pbound, vbound, ebound):
    """The input bounds of one joint: finite, |position| <= pbound, |velocity| <= vbound,
    |effort| <= ebound (a NaN fails every compare)."""
    return abs(position) <= pbound and abs(velocity) <= vbound and abs(effort) <= ebound


@njit(**_FLAGS)
def all_within(q, v, e, pbound, vbound, ebound):
    """:func:`within` for every joint of the vectors q, v, e (e empty: no efforts)."""
    has_e = e.shape[0] > 0
    for k in range(q.shape[0]):
        if not within(q[k], v[k], e[k] if has_e else 0.0, pbound, vbound[k], ebound[k]):
            return False
    return True


@njit(**_FLAGS)
def hold(gather, pos, vel, eff, held, h_ns, h_known, h_effort, t_ns):
    """Keep the values of the joints a (partial) message carries (``gather[k] >= 0``) as the
    held rows, stamped ``t_ns``, with whether they had an effort."""
    has_v, has_e = vel.shape[0] > 0, eff.shape[0] > 0
    for k in range(gather.shape[0]):
        i = gather[k]
        if i >= 0:
            held[0, k] = pos[i]
            held[1, k] = vel[i] if has_v else 0.0
            if has_e:
                held[2, k] = eff[i]
            h_ns[k], h_known[k], h_effort[k] = t_ns, True, has_e


# -- the observer's timing -----------------------------------------------------------------
#: observer_interval's answers
INTERVAL_UPDATE, INTERVAL_SAME, INTERVAL_BACK, INTERVAL_GAP = range(4)


@njit(**_FLAGS)
def observer_interval(dt, gap_limit):
    """What the observer does with a sample ``dt`` seconds after its last one: INTERVAL_UPDATE
    (one exact zero-order-hold step); INTERVAL_SAME (dt = 0, the same stamp again: nothing new
    to integrate); INTERVAL_BACK (the time went back: a source or clock reset, restart);
    INTERVAL_GAP (dt > ``gap_limit``: a gap too long to integrate the motion over as one held
    period; the observer bridges it, ``residual_step`` with ``bridge``)."""
    if dt == 0.0:
        return INTERVAL_SAME
    if dt < 0.0:
        return INTERVAL_BACK
    if dt > gap_limit:
        return INTERVAL_GAP
    return INTERVAL_UPDATE


@njit(**_FLAGS)
def gap_limit(periods, n, limit, gap_min, gap_max, factor):
    """The gap limit [s] once ``n`` sample periods are recorded, the last ones in the ring
    ``periods``: after the 8th, 16th, 32nd and every ring's length, ``factor`` times the
    median of the recorded ones, clamped to [``gap_min``, ``gap_max``]; else ``limit``."""
    w = periods.shape[0]
    if n == 8 or n == 16 or n == 32 or n % w == 0:
        return min(gap_max, max(gap_min, factor * np.median(periods[:min(n, w)])))
    return limit


# -- the models of the observer and of the detector ----------------------------------------
@njit(**_FLAGS)
def friction_into(v, viscous, coulomb, offset, eps, out):
    """out <- the joint friction ``F_v v + F_c tanh(v / eps) + b`` (``eps <= 0``: ``sign(v)``):
    the part of the reported joint torque that does not move the joint (friction opposes the
    motion; ``b`` is a constant offset of the torque measurement), so ``tau - out`` is what
    moves it."""
    for i in range(v.shape[0]):
        out[i] = viscous[i] * v[i] + coulomb[i] * coulomb_shape(v[i], eps) + offset[i]
    return out


@njit(**_FLAGS)
def coulomb_shape(v, eps):
    """The smoothed sign of the Coulomb term, tanh(v / eps) (sign(v) for eps <= 0): also the
    regressor column of a Coulomb coefficient in calibration."""
    if eps > 0.0:
        return math.tanh(v / eps)
    return 1.0 if v > 0.0 else (-1.0 if v < 0.0 else 0.0)


#: rows of a contact threshold (3, nv): the base level [N m], the growth with |v_i|
#: [N m s/rad] and with |tau_i| [N m / N m]
THRESHOLD_BASE, THRESHOLD_VELOCITY, THRESHOLD_TORQUE = range(3)
THRESHOLD_ROWS = types.float64[:, ::1]


@njit(**_FLAGS)
def threshold_at(threshold, i, v, tau):
    """The contact threshold of coordinate ``i`` at velocity ``v`` and measured torque ``tau``:

        threshold_i = base_i + k_v,i |v_i| + k_tau,i |tau_i|

    (rows of ``threshold``: THRESHOLD_BASE, THRESHOLD_VELOCITY, THRESHOLD_TORQUE).  What the
    model cannot explain in free motion grows with the speed (friction, its smoothing at
    reversals) and with the load (load-dependent friction, torque-constant errors); no
    acceleration enters, which the observer exists to avoid."""
    return (threshold[THRESHOLD_BASE, i] + threshold[THRESHOLD_VELOCITY, i] * abs(v[i])
            + threshold[THRESHOLD_TORQUE, i] * abs(tau[i]))


@njit(**_FLAGS)
def thresholds_into(threshold, v, tau, out):
    """out <- :func:`threshold_at` of every coordinate."""
    for i in range(out.shape[0]):
        out[i] = threshold_at(threshold, i, v, tau)
    return out


@entry(types.boolean, VEC, THRESHOLD_ROWS, VEC, VEC, **_FLAGS)
def any_above(r, threshold, v, tau):
    """any(|r_i| > threshold_at(i)): a contact is detected (a NaN is not above)."""
    for i in range(r.shape[0]):
        if abs(r[i]) > threshold_at(threshold, i, v, tau):
            return True
    return False


@njit(**_FLAGS)
def terms_finite(M, C, Mdot, g, r):
    """Whether every entry of M, C, dM/dt, g and r is finite (their sum is: a NaN or an inf
    propagates, inf - inf is NaN)."""
    s = 0.0
    for i in range(M.shape[0]):
        s += g[i]
        for j in range(M.shape[1]):
            s += M[i, j] + C[i, j] + Mdot[i, j]
    for i in range(r.shape[0]):
        s += r[i]
    return math.isfinite(s)
