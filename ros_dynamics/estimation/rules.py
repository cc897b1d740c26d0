"""The per-cycle rules, each stated once as a small compiled function, with its answers beside it.

The compiled step (:func:`~ros_dynamics.estimation.cycle_kernel.cycle_step`) calls them in one
compiled call; the standalone observer and detector (:mod:`~ros_dynamics.estimation.observer`)
and the service requests use them too, so a rule changed here changes every user.  A rule
that refuses a message (or notes something about it) returns one of the answers declared
beside it (:data:`~ros_dynamics.estimation.answers.ANSWERS`: its verdict, kind, log level and
reason text, the text filled from what the step writes about the message; docs/input_policy.md
states them), or :data:`PASS`.

* :func:`odometry_verdict`: a floating base's odometry, known and recent enough;
* :func:`layout_verdict`: the arrays of a message fit its names;
* :func:`stamp_verdict`: the stamp policy of one source (docs/input_policy.md);
* :func:`within`, :func:`bound_violation`: the input bounds of a joint's position, velocity
  and effort, and which value of a message is beyond them;
* :func:`gather_checked`: one value per model joint from a message or from the held values of
  other sources (fresh enough), each within its bounds;
* :func:`hold`: a partial source's values kept for the cycles of the driving source;
* :func:`torque_source`: the observer's torque when it is a commanded one (Python: it reads the
  monotonic clock of the command's receipt);
* :func:`observer_interval`, :func:`gap_limit`: what the observer does with the time since its
  last sample (an update, nothing, a restart, a bridge over a gap) and the gap limit;
* :func:`friction_into`: the joint-friction law ``F_v v + F_c tanh(v / eps)`` and the offset;
* :func:`threshold_at`, :func:`any_above`: the contact threshold, a base level plus terms
  growing with the joint's speed and torque (state-dependent thresholds: Haddadin et al. 2017,
  Sec. on dynamic thresholds), and whether a residual is above it;
* :func:`terms_finite`: nothing non-finite is published.

The answers of a made cycle (the first, OK: code 0) are declared with the rule that decides
between them.  ``FREE`` is the free-motion shortcut: an OK cycle while the cycle's data says
``usual`` (its follow-up left nothing the next free-motion sample changes: the contact
detector free, no contact frames, the model's own coordinates; ``cycle_state.CycleState``
sets it), so that nothing follows the compiled step and its outputs are current as written.
"""
from __future__ import annotations

import math
import time

import numpy as np
from numba import njit, types

from ..core.jit import entry
from ..core.kernels import VEC
from .answers import ANSWERS, CYCLE, HELD, NOTE, REFUSED

if len(ANSWERS):        # the compiled step reads the codes below as constants: they come first
    raise ImportError('rules.py must declare the first answers (import it before any other)')

#: nanoseconds per second (stamps are handled as int64 nanoseconds)
NS = 1_000_000_000
#: "no stamp accepted yet" for a source's last stamp (int64 nanoseconds)
NO_STAMP = -(2 ** 63)
#: a rule's "no answer": the message passes it
PASS = -1
#: a source's record (int64; the compiled cycle updates it, joint_input.Source reads it): its
#: last accepted stamp [ns] (NO_STAMP: none yet), its accepted messages, the receiving clock's
#: epoch at its first and at a reset; S_FIELDS: how many
S_LAST_NS, S_MESSAGES, S_EPOCH, S_FIELDS = range(4)
#: the smoothing velocity [rad/s or m/s] of the Coulomb friction term, tanh(v / FRICTION_EPS)
FRICTION_EPS = 1e-2

_FLAGS = dict(cache=True, nogil=True)
_JS_REJECTED, _JS_IGNORED = 'joint_states rejected', 'joint_states ignored'
_RESTART = 'observer re-initialized'

# -- a made cycle ----------------------------------------------------------------------------
#: the observer updated, its residual below every contact threshold
OK = ANSWERS.add('ok', CYCLE)
#: OK while the cycle's data is ``usual`` (module text): nothing follows the step
FREE = ANSWERS.add('free motion', CYCLE)
#: the observer updated, a residual above a threshold (:func:`any_above`)
ABOVE = ANSWERS.add('above a threshold', CYCLE)


# -- a floating base's odometry --------------------------------------------------------------
NO_ODOM = ANSWERS.add('no_odom', REFUSED, 'warning', 'floating base and no valid odom yet',
                      _JS_IGNORED)
STALE_ODOM = ANSWERS.add(
    'stale_odom', REFUSED, 'warning', 'the latest odom is {odom_age:.3g} s older than the joint '
    'state (odom_max_age {odom_max_age:g} s): nothing is computed from an old base state',
    _JS_IGNORED)


@njit(**_FLAGS)
def odometry_verdict(known, odom_ns, stamp_ns, max_age_ns):
    """Whether a floating base's odometry may go with a joint state stamped ``stamp_ns``:
    some odometry received (``known``), and stamped at most ``max_age_ns`` before the joint
    state (0: no limit; unstamped messages are not judged)."""
    if not known:
        return NO_ODOM
    if max_age_ns > 0 and odom_ns > 0 and stamp_ns > 0 and stamp_ns - odom_ns > max_age_ns:
        return STALE_ODOM
    return PASS


# -- the message layout --------------------------------------------------------------------
LAYOUT_POSITIONS = ANSWERS.add('positions', REFUSED, 'warning',
                               '{n_position} positions for {n} names', _JS_REJECTED)
LAYOUT_VELOCITIES = ANSWERS.add('velocities', REFUSED, 'warning',
                                '{n_velocity} velocities for {n} names', _JS_REJECTED)
LAYOUT_NO_VELOCITY = ANSWERS.add(
    'velocities', REFUSED, 'warning', '0 velocities for {n} names (set allow_missing_velocity '
    'to use zero velocity)', _JS_REJECTED)
LAYOUT_EFFORTS = ANSWERS.add('efforts', REFUSED, 'warning', '{n_effort} efforts for {n} names',
                             _JS_REJECTED)


@njit(**_FLAGS)
def layout_verdict(n, n_position, n_velocity, n_effort, allow_missing_velocity):
    """Whether a message's arrays fit its ``n`` names: as many positions; as many velocities
    (or none, if ``allow_missing_velocity``: zero velocity); as many efforts or none."""
    if n_position != n:
        return LAYOUT_POSITIONS
    if n_velocity == 0 and n != 0 and not allow_missing_velocity:
        return LAYOUT_NO_VELOCITY
    if n_velocity != n and n_velocity != 0:
        return LAYOUT_VELOCITIES
    if n_effort != n and n_effort != 0:
        return LAYOUT_EFFORTS
    return PASS


# -- the stamp policy ----------------------------------------------------------------------
STAMP_NANOSEC = ANSWERS.add('nanosec', REFUSED, 'warning',
                            'stamp nanosec {nanosec} is not normalized (< 1e9)', _JS_REJECTED)
STAMP_ZERO = ANSWERS.add('zero_stamp', REFUSED, 'warning',
                         'zero stamp (header not set) from a source that sends stamps',
                         _JS_REJECTED)
STAMP_FUTURE = ANSWERS.add(
    'future', REFUSED, 'warning', 'stamp {sec}.{nanosec:09d} is {lead:.6g} s ahead of the node '
    'clock (stamp_max_lead {max_lead:g} s)', _JS_REJECTED)
STAMP_BACKWARDS = ANSWERS.add(
    'backwards', REFUSED, 'warning', 'stamp {sec}.{nanosec:09d} is earlier than the last '
    'accepted one of this source ({last:.9f})', _JS_REJECTED)
#: accepted as a reset of the source: its clock jumped back by more than the reset jump; or
#: by any amount after the receiving clock jumped back (simulated time reset)
SOURCE_RESET = ANSWERS.add(
    'source_reset', NOTE, 'info', f'source reset: stamp jumped back {{back:.6g}} s (more than '
    f'stamp_reset_jump {{reset_jump:g}} s); {_RESTART}')
CLOCK_RESET = ANSWERS.add(
    'clock_reset', NOTE, 'info', 'the node clock jumped back (simulated time reset) and so did '
    f'the stamps, by {{back:.6g}} s; {_RESTART}')
#: passed, from a source that sends no stamps: timed by the receiving clock
UNSTAMPED = -2


@njit(**_FLAGS)
def stamp_verdict(sec, nanosec, last_ns, now_ns, max_lead_ns, reset_jump_ns, clock_jumped):
    """The verdict on one stamp of a source whose last accepted stamp is ``last_ns`` (NO_STAMP:
    none yet; 0: it sends no stamps), ``now_ns`` the receiving clock (0 if unknown), limits in
    nanoseconds; ``clock_jumped``: the receiving clock jumped back since that stamp.  PASS,
    UNSTAMPED, a rejection or a reset (accepted, noted)."""
    if nanosec >= NS:
        return STAMP_NANOSEC
    stamp_ns = sec * NS + nanosec
    if stamp_ns == 0:
        return UNSTAMPED if last_ns == NO_STAMP or last_ns == 0 else STAMP_ZERO
    if now_ns > 0 and stamp_ns - now_ns > max_lead_ns:
        return STAMP_FUTURE
    if last_ns != NO_STAMP and stamp_ns < last_ns:
        if clock_jumped:
            return CLOCK_RESET
        if last_ns - stamp_ns > reset_jump_ns:
            return SOURCE_RESET
        return STAMP_BACKWARDS
    return PASS


# -- the bounds of a joint's values ----------------------------------------------------------
BOUNDS_NONFINITE = ANSWERS.add(
    'nonfinite', REFUSED, 'warning', 'NaN or inf in position, velocity or effort of a required '
    'joint', _JS_REJECTED)
BOUNDS_POSITION = ANSWERS.add(
    'position', REFUSED, 'warning', 'position {value:.6g} of joint {joint!r} is beyond the '
    'position bound max_abs_position, {bound:.6g}', _JS_REJECTED)
BOUNDS_VELOCITY = ANSWERS.add(
    'velocity', REFUSED, 'warning', 'velocity {value:.6g} of joint {joint!r} is beyond the '
    'velocity limit (input_limit_factor x URDF limit), {bound:.6g}', _JS_REJECTED)
BOUNDS_EFFORT = ANSWERS.add(
    'effort', REFUSED, 'warning', 'effort {value:.6g} of joint {joint!r} is beyond the effort '
    'limit (input_limit_factor x URDF limit), {bound:.6g}', _JS_REJECTED)


@njit(**_FLAGS)
def within(position, velocity, effort, pbound, vbound, ebound):
    """The input bounds of one joint: finite, |position| <= pbound, |velocity| <= vbound,
    |effort| <= ebound (a NaN fails every compare)."""
    return abs(position) <= pbound and abs(velocity) <= vbound and abs(effort) <= ebound


@entry(types.Tuple((types.int64, types.int64, types.float64, types.float64)), VEC, VEC, VEC,
       types.int64[::1], types.float64, VEC, VEC, **_FLAGS)
def bound_violation(q, v, e, joints, pbound, vbound, ebound):
    """(answer, joint, value, bound) of the joint values q, v, e (e empty: no efforts) of the
    model joints ``joints`` (their rows of ``vbound``, ``ebound``): PASS if every
    value is :func:`within` its bounds; else the first offence, by kind: a non-finite value
    (BOUNDS_NONFINITE), then a position, a velocity, an effort beyond its bound (the joint's
    index in ``joints``, its value, the bound)."""
    has_e = e.shape[0] > 0
    for k in range(q.shape[0]):
        if not (math.isfinite(q[k]) and math.isfinite(v[k])
                and (not has_e or math.isfinite(e[k]))):
            return BOUNDS_NONFINITE, k, 0.0, 0.0
    for k in range(q.shape[0]):
        if not abs(q[k]) <= pbound:
            return BOUNDS_POSITION, k, q[k], pbound
    for k in range(q.shape[0]):
        if not abs(v[k]) <= vbound[joints[k]]:
            return BOUNDS_VELOCITY, k, v[k], vbound[joints[k]]
    for k in range(q.shape[0] if has_e else 0):
        if not abs(e[k]) <= ebound[joints[k]]:
            return BOUNDS_EFFORT, k, e[k], ebound[joints[k]]
    return PASS, 0, 0.0, 0.0


# -- one value per joint -------------------------------------------------------------------
#: the driving source's joints are fine, a held one is missing or too old: no cycle, the
#: message's values held
INCOMPLETE = ANSWERS.add('incomplete', REFUSED, 'warning',
                         'missing required joint(s) {lacking}{hint} ({lacking_detail})',
                         'joint_states incomplete')
#: not every joint has an effort (or no commanded torque): a cycle without the observer update
NO_EFFORT = ANSWERS.add('no_effort', CYCLE, 'info', 'observer not updated', 'joint_states '
                        'without effort')


@njit(**_FLAGS)
def gather_checked(gather, pos, vel, eff, held, h_ns, h_known, h_effort, h_stale, t_ns,
                   max_age_ns, q, v, e, pbound, vbound, ebound):
    """q, v, e (the model's joints) <- the message's values at ``gather[k]`` (v, e zero where
    the message has none), or for ``gather[k] < 0`` the held rows (q, v, effort) of another
    source, if known and stamped at most ``max_age_ns`` from ``t_ns`` (else ``h_stale[k]``).

    Returns (answer, every joint has an effort, joint, value, bound): PASS; or the first value
    of the message beyond its bounds (:func:`bound_violation`: the model joint, its value and
    the bound); or INCOMPLETE when a held value is missing or too old."""
    has_v, has_e = vel.shape[0] > 0, eff.shape[0] > 0
    all_e, stale, bad = has_e, False, False
    for k in range(gather.shape[0]):
        i = gather[k]
        h_stale[k] = False
        if i < 0:
            if not (h_known[k] and abs(h_ns[k] - t_ns) <= max_age_ns):
                stale = h_stale[k] = True
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
        joints = np.flatnonzero(gather >= 0)
        code, k, value, bound = bound_violation(q[joints], v[joints], e[joints] if has_e else
                                                e[:0], joints, pbound, vbound, ebound)
        return code, False, joints[k], value, bound
    return (INCOMPLETE if stale else PASS), all_e, -1, 0.0, 0.0


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


#: a message of a source that does not drive the cycles: its values held; the first noted
HELD_VALUES = ANSWERS.add('held', HELD)
HELD_FIRST = ANSWERS.add(
    'held', HELD, 'info', 'new source with {count} of {joints} joints (missing required '
    'joint(s) {missing}): its values are held for the cycles of the source with {driving} '
    'joints', 'joint_states')


# -- the observer's torque -----------------------------------------------------------------
#: the observer's torque: the message's efforts, a given (commanded) torque, or none (the
#: note of the NO_EFFORT cycles then says why)
TORQUE_MESSAGE, TORQUE_GIVEN, TORQUE_NONE = range(3)
NO_COMMAND = ANSWERS.add('no_cmd', NOTE, 'info', 'observer not updated',
                         'no ~/commanded_torque yet')
STALE_COMMAND = ANSWERS.add('stale_cmd', NOTE, 'warning', 'observer not updated',
                            '~/commanded_torque is stale')


def torque_source(command, timeout_s):
    """(source, note) of the observer's torque for one message when it is the commanded one
    (``effort_source``): the latest command ``command`` ((torque, monotonic receipt ns) or
    None): TORQUE_GIVEN, or TORQUE_NONE with NO_COMMAND (none yet) or STALE_COMMAND (received
    more than ``timeout_s`` ago; 0: never stale)."""
    if command is None:
        return TORQUE_NONE, NO_COMMAND
    if timeout_s > 0 and time.monotonic_ns() - command[1] > timeout_s * NS:
        return TORQUE_NONE, STALE_COMMAND
    return TORQUE_GIVEN, PASS


# -- the observer's timing -----------------------------------------------------------------
#: observer_interval's verdicts
INTERVAL_UPDATE, INTERVAL_SAME, INTERVAL_BACK, INTERVAL_GAP = range(4)
#: a cycle whose stamp is the observer's last sample's again: nothing new to integrate
SAME = ANSWERS.add('same time', CYCLE)
#: the observer (re)started at this sample, residual zero: due (first sample, a reset, a
#: request), or the time went back since its last sample
RESTARTED = ANSWERS.add('restarted', CYCLE)
#: the observer updated across a gap: bridged, the residual kept
BRIDGED = ANSWERS.add(
    'gap', CYCLE, 'info', 'a gap of {dt:.3g} s between joint states (more than the gap limit '
    '{gap_limit:.3g} s): the observer bridged it (residual kept)')


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


# -- the finite check ----------------------------------------------------------------------
NONFINITE = ANSWERS.add('output', REFUSED, 'error', 'non-finite M, C, dM/dt, g or observer '
                        f'residual computed: nothing published, {_RESTART}')
#: a state the dynamics refuse (e.g. a floating base's quaternion not a unit one; the core's
#: validation gives the reason)
STATE = ANSWERS.add('output', REFUSED, 'error', f'{{error}}: nothing published, {_RESTART}')


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
