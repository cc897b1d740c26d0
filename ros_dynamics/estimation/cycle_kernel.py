"""The control cycle in one compiled call: joint-state arrays in, the cycle's messages out.

:func:`cycle_step` is the only statement of a cycle's sequence; it applies the rules of
:mod:`~ros_dynamics.estimation.rules`, in this order, to every joint-state message:

* the message layout (``layout_verdict``: refused, REJECTED_LAYOUT, if its arrays do not fit
  its names), then the stamp policy of its source (``stamp_verdict``): a stamp it rejects is
  refused (REJECTED_STAMP); one accepted as a source or clock reset restarts the observer
  (RESET added to the answer); a source that sends no stamps is timed by the receiving clock;
* one value per name; the joints gathered from the message and, for a source without every
  joint, from the held values of the others (``gather_checked``): finite, within the input
  bounds (else REJECTED_BOUNDS), held values fresh enough (else INCOMPLETE, the message's
  values held); a message of a source that does not drive the cycles only held (HELD);
* Algorithm 1 of Echeandia & Wensing (2021) and the momentum products (the core's ``terms``;
  a state it refuses: STATE);
* when every joint has an effort (or a commanded torque is given: TORQUE_SOURCE), the
  observer (De Luca et al., 2006): its (re)start at this sample when it is due (at the first
  sample with a torque, after a reset or a request: residual zero), else the time since its
  last sample (``observer_interval``): an exact zero-order-hold step, or the bridge over a gap
  (``residual_step``), with the joint friction (``friction_into``); whether the residual is
  below every contact threshold (``any_above``);
* a partial source's values held (``hold``); every result finite (``terms_finite``; else
  NONFINITE, the observer's state as it was);
* what a cycle keeps (``kept``, :class:`CycleState <ros_dynamics.estimation.cycle_state.
  CycleState>` holds it): the time of the observer's last sample, the sample periods and the
  gap limit from their median (``gap_limit``), the latest state and its stamp (the services'),
  and the recent samples with the observer's torque at HISTORY_PERIOD_NS (~/estimate_payload);

and writes q, v, M, C, dM/dt, g, the gravity torque and the residual straight into the output
buffers the caller gave (the node's serialized messages, ros/dynamics_node/wire.py).  What the residual
means (the contact detector's hysteresis and isolation, the forces at contact frames, the
contact wrench) is judged after it, on the residual it leaves
(:meth:`CycleState.finish <ros_dynamics.estimation.cycle_state.CycleState.finish>`);
:class:`~ros_dynamics.estimation.cycle.JointStateCycle` turns its answers into
verdicts and reasons.
"""
from __future__ import annotations

import numpy as np
from numba import njit, types

from ..core.jit import depends_on_core, entry, ready
from ..core.kernels import MODEL, PRODUCTS, VEC, terms
from ..core.kinematics import tree, workspace
from . import observer as _observer, rules as _rules
from .observer import BETA, FC, FO, FV, GAIN, P, R, TAU, V, residual_step
from .rules import (GATHER_BOUNDS, GATHER_STALE, INTERVAL_BACK, INTERVAL_GAP, INTERVAL_SAME,
                    LAYOUT_OK, NS, S_EPOCH, S_LAST_NS, S_MESSAGES, S_PREV_EPOCH,
                    S_PREV_LAST_NS, STAMP_BACKWARDS, STAMP_CLOCK_RESET, STAMP_FUTURE,
                    STAMP_NANOSEC, STAMP_SOURCE_RESET, STAMP_UNSTAMPED, STAMP_ZERO,
                    THRESHOLD_ROWS, any_above, friction_into, gather_checked, gap_limit, hold,
                    layout_verdict, observer_interval, stamp_verdict, terms_finite)

depends_on_core(__file__, _observer.__file__, _rules.__file__)   # stale with their kernels

#: cycle_step's answers: a cycle made (OK: the observer updated, its residual below every
#: contact threshold; ABOVE: updated, a residual above one; BRIDGED: updated across a gap;
#: NO_EFFORT: without the observer update, not every joint has an effort; RESTARTED: the
#: observer (re)started at this sample, residual zero: due, after a source or clock reset, or
#: the time went back since its last sample; SAME: without the observer update, the time of its
#: last sample again); or a message accepted whose state the dynamics refuse (STATE, e.g. a
#: floating base's quaternion not a unit one; STATE_NO_TORQUE: and the observer would not have
#: been updated, no torque) or whose results are not finite (NONFINITE: the observer's state as
#: before; it restarts at the next cycle): no cycle; or a stamp the stamp policy rejects
#: (REJECTED_STAMP: not normalized, zero, ahead of the clock, back), or arrays that do not fit
#: the names (REJECTED_LAYOUT); or a message accepted (its values held) whose state lacks a
#: held joint, missing or too old (INCOMPLETE); or a value not finite or beyond its bound
#: (REJECTED_BOUNDS: the joints gathered into the state vectors); or a message of a source that
#: does not drive the cycles, its values held (HELD).  RESET is added to the answer of a message
#: accepted with a source or clock reset (stamp_verdict): the observer restarts at it (or at the
#: next cycle that updates it)
OK, NONFINITE, NO_EFFORT, BRIDGED, ABOVE, RESTARTED, SAME, STATE, STATE_NO_TORQUE, \
    REJECTED_STAMP, REJECTED_LAYOUT, INCOMPLETE, REJECTED_BOUNDS, HELD = range(14)
RESET = 16
MADE = (OK, NO_EFFORT, BRIDGED, ABOVE, RESTARTED, SAME)
REFUSED = (STATE, STATE_NO_TORQUE)
#: what each answer is called (the summary's counts)
ANSWERS = ('ok', 'non-finite', 'no effort', 'bridged', 'above a threshold', 'restarted',
           'same time', 'state refused', 'state refused', 'stamp rejected', 'layout rejected',
           'incomplete', 'beyond a bound', 'held')

#: a message as the compiled step takes it: float64 ``words`` and int64 ``fields``: its stamp
#: (sec, nanosec), its number of names, and where its position, velocity and effort arrays
#: start in ``words`` and their lengths (ros/dynamics_node/wire.py reads a serialized JointState this way;
#: :func:`~ros_dynamics.estimation.cycle.message_words` packs arrays this way)
M_SEC, M_NANOSEC, M_NAMES, M_POS, M_N_POS, M_VEL, M_N_VEL, M_EFF, M_N_EFF = range(9)
MESSAGE_FIELDS = 9

#: ``limits``: the constant limits of the input policy and the observer (float64; the times in
#: nanoseconds, exact below 2^53 ns; MISSING_VELOCITY: 1.0 if a message may carry no velocity;
#: TORQUE_SOURCE: the observer's torque, below, the one entry set per message)
MAX_LEAD, MAX_AGE, RESET_JUMP, PBOUND, EPS, MISSING_VELOCITY, TORQUE_SOURCE = range(7)
#: the rows of ``per_joint``: the velocity and effort bounds, a given torque
VBOUND, EBOUND, TORQUE = range(3)

#: ``limits[TORQUE_SOURCE]``: the observer's torque is the message's efforts, the row TORQUE of
#: ``per_joint``, or none
TORQUE_MESSAGE, TORQUE_GIVEN, TORQUE_NONE = range(3)

#: the output layout, stated once: where each result goes, (topic, field), in the order of
#: ``outputs``' offsets: M, C, dM/dt, g of ~/dynamics, the gravity torque, the residual; then
#: OUT_STAMPED: 1 if the first float64 word of each buffer is its message's header.stamp
#: (int32 sec, uint32 nanosec: the cycle stamps them), 0 if the buffers are no messages
OUTPUT_FIELDS = (('dynamics', 'mass_matrix'), ('dynamics', 'coriolis_matrix'),
                 ('dynamics', 'mass_matrix_dot'), ('dynamics', 'gravity'),
                 ('gravity_torque', 'effort'), ('external_torque', 'effort'))
OUT_M, OUT_C, OUT_MDOT, OUT_G, OUT_GRAVITY, OUT_RESIDUAL, OUT_STAMPED = range(7)

#: what a cycle keeps (``kept``): its int64 entries ``times`` (the observer's last sample [ns],
#: -1: it (re)starts at the next update; the sample periods recorded; the cycles kept, the
#: latest one's stamp and its time [ns] (the stamp, or the receiving clock for a source that
#: sends none); when the next recent sample is due [ns] and how many were recorded), the
#: float64 entries ``gap`` (the gap limit [s], its bounds and factor, the latest observer
#: period [s]); TIMES_FIELDS and GAP_FIELDS: how many
OBS_LAST, N_PERIODS, N_LATEST, LATEST_SEC, LATEST_NANOSEC, LATEST_NS, HISTORY_NEXT, \
    HISTORY_COUNT, TIMES_FIELDS = range(9)
GAP_LIMIT, GAP_MIN, GAP_MAX, GAP_FACTOR, LAST_DT, GAP_FIELDS = range(6)
HISTORY_PERIOD_NS = 10_000_000    # the recent samples for ~/estimate_payload: 100 Hz

IDX = types.int64[::1]
ROWS = types.float64[:, ::1]
FLAGS = types.boolean[::1]
TRIPLE = types.UniTuple(VEC, 3)           # q, v, tau of the model
HELD_VALUES = types.Tuple((ROWS, IDX, FLAGS, FLAGS))  # held rows, their stamps, known, effort
OBS = types.Tuple((ROWS, VEC, THRESHOLD_ROWS))        # observer rows, its last q, thresholds
OUTPUTS = types.Tuple((VEC, VEC, VEC, IDX))           # ~/dynamics, ~/gravity_torque,
#                                                       ~/external_torque, offsets in them
KEPT = types.Tuple((IDX, VEC, VEC, VEC, VEC, VEC, ROWS, ROWS, ROWS))   # times, gap, periods,
#                            latest q, v; recent samples' t, q, v, torque (rows: samples)


@entry(types.int64, MODEL, VEC, TRIPLE, ROWS, HELD_VALUES, OBS, OUTPUTS, KEPT, VEC, IDX,
       VEC, IDX, IDX, types.int64, types.int64, types.boolean, cache=True, nogil=True)
def cycle_step(model, work, state, per_joint, held_values, observer, outputs, kept, limits,
               gather, words, fields, source, epoch, now_ns, drives):
    """One cycle (module text): the model's (the constant arguments first), then the
    message's.  ``state``: the model's q, v, tau, whose joint entries (the last
    ``gather.shape[0]``) it writes; ``per_joint``: rows of the velocity and
    effort bounds per joint and of a given torque (VBOUND, EBOUND, TORQUE); ``observer``: its
    state rows (empty: no observer), its last q and the contact detector's thresholds
    (rows.THRESHOLD_BASE ...); ``outputs``: the buffers and where M, C, dM/dt, g, the gravity
    torque and the residual go in them (OUT_M ...; OUT_STAMPED: each buffer's first word is
    its message's stamp, written too); ``kept``: what a cycle keeps (module text; the
    observer's last sample at ``times[OBS_LAST]``, < 0: it (re)starts at this one: RESTARTED,
    as when the time went back since; the same time again: SAME, no update); ``limits``
    (MAX_LEAD ... TORQUE_SOURCE); ``gather[k]``: where model joint k is in the message, or -1
    (a joint of another source: its held value); the message: its float64 ``words`` and its
    ``fields`` (MESSAGE_FIELDS: the stamp, the number of names, where its position, velocity
    and effort arrays are in ``words``); its ``source``'s record (rules.S_LAST_NS ...: its
    last stamp, messages and the receiving clock's epoch at its last reset, which the step
    updates when it accepts the message, and the values before), the receiving clock's
    ``epoch`` (its jumps back) and time ``now_ns``, and whether its
    source drives the cycles (else its values are held: HELD).  The observer's
    torque (``limits[TORQUE_SOURCE]``): the message's efforts (TORQUE_MESSAGE), the row TORQUE
    (TORQUE_GIVEN: a commanded torque) or none (TORQUE_NONE: no observer update).  Returns
    OK, ABOVE, BRIDGED, NO_EFFORT, RESTARTED, SAME or why there is no cycle (module
    constants), plus RESET after a source or clock reset."""
    sec, nanosec, n_names = fields[M_SEC], fields[M_NANOSEC], fields[M_NAMES]
    pos = words[fields[M_POS]:fields[M_POS] + fields[M_N_POS]]
    vel = words[fields[M_VEL]:fields[M_VEL] + fields[M_N_VEL]]
    eff = words[fields[M_EFF]:fields[M_EFF] + fields[M_N_EFF]]
    q, v, tau = state
    held, h_ns, h_known, h_effort = held_values
    obs, obs_q, threshold = observer
    dyn, grav, ext, offsets = outputs
    times, gap = kept[0], kept[1]
    obs_last_ns = times[OBS_LAST]
    if layout_verdict(n_names, pos.shape[0], vel.shape[0], eff.shape[0],
                      limits[MISSING_VELOCITY] != 0.0) != LAYOUT_OK:
        return REJECTED_LAYOUT
    stamp = stamp_verdict(sec, nanosec, source[S_LAST_NS], now_ns, np.int64(limits[MAX_LEAD]),
                          np.int64(limits[RESET_JUMP]), source[S_EPOCH] != epoch)
    if stamp == STAMP_NANOSEC or stamp == STAMP_ZERO or stamp == STAMP_FUTURE or \
            stamp == STAMP_BACKWARDS:
        return REJECTED_STAMP
    reset = 0
    if stamp == STAMP_SOURCE_RESET or stamp == STAMP_CLOCK_RESET:
        reset = RESET              # accepted; the observer restarts (now, or when next updated)
        obs_last_ns = -1
    # the cycle's time: the stamp, or for a source that sends none the receiving clock
    stamp_ns = now_ns if stamp == STAMP_UNSTAMPED else sec * NS + nanosec
    nj = gather.shape[0]
    bq, bv = q.shape[0] - nj, v.shape[0] - nj
    code, all_e = gather_checked(gather, pos, vel, eff, held, h_ns, h_known, h_effort,
                                 stamp_ns, np.int64(limits[MAX_AGE]), q[bq:], v[bv:], tau[bv:],
                                 limits[PBOUND], per_joint[VBOUND], per_joint[EBOUND])
    if code == GATHER_BOUNDS:    # every joint written (the reason reads them)
        return REJECTED_BOUNDS
    # accepted: recorded in its source (the values before kept for the reasons)
    source[S_PREV_LAST_NS], source[S_PREV_EPOCH] = source[S_LAST_NS], source[S_EPOCH]
    source[S_LAST_NS] = sec * NS + nanosec
    if reset or source[S_MESSAGES] == 0:
        source[S_EPOCH] = epoch
    source[S_MESSAGES] += 1
    if reset:              # the observer restarts: at this cycle, or at the next update
        times[OBS_LAST] = -1
    if not drives or code == GATHER_STALE:    # accepted and held, but no cycle
        hold(gather, pos, vel, eff, held, h_ns, h_known, h_effort, stamp_ns)
        return (HELD if not drives else INCOMPLETE) + reset
    torque_source = limits[TORQUE_SOURCE]
    if torque_source == TORQUE_GIVEN:
        for k in range(nj):
            tau[bv + k] = per_joint[TORQUE, k]
        all_e = True
    elif torque_source == TORQUE_NONE:
        all_e = False
    observed = obs.shape[0] > 0 and all_e
    for k in range(nj):
        if gather[k] < 0:              # a partial source: its every accepted message is held
            hold(gather, pos, vel, eff, held, h_ns, h_known, h_effort, stamp_ns)
            break
    # Algorithm 1 and the observer's products (q checked again: a floating base's pose)
    if terms(model, work, q, v, PRODUCTS) != 0:
        return (STATE if observed or obs.shape[0] == 0 else STATE_NO_TORQUE) + reset
    w = workspace(tree(model), work)
    nv = v.shape[0]
    M, C, Mdot, g = w.M, w.C, w.Mdot, w.g
    interval, dt = INTERVAL_BACK, 0.0          # (a restart when due: obs_last_ns < 0)
    if observed and obs_last_ns >= 0:
        dt = (stamp_ns - obs_last_ns) / NS
        interval = observer_interval(dt, gap[GAP_LIMIT])
    same = observed and interval == INTERVAL_SAME    # nothing new to integrate
    observed = observed and not same
    r = obs[R] if observed else np.empty(0)
    bridged = restarted = False
    if observed and interval == INTERVAL_BACK:
        # the observer (re)starts here (De Luca et al. 2006, r(0) = 0): p, beta = C^T v - g -
        # tau_f(v) and tau of this sample, once the terms are known finite
        if not terms_finite(M, C, Mdot, g, np.empty(0)):
            return NONFINITE + reset
        restarted = True
        tf = friction_into(v, obs[FV], obs[FC], obs[FO], limits[EPS], np.empty(nv))
        for i in range(nv):
            r[i] = 0.0
            obs[P, i] = w.p[i]
            obs[BETA, i] = w.ctv[i] - g[i] - tf[i]
            obs[TAU, i] = tau[i]
        obs[V] = v
        obs_q[:] = q
    elif observed:                 # INTERVAL_UPDATE or INTERVAL_GAP
        bridged = interval == INTERVAL_GAP
        saved = obs[R:V + 1].copy()     # r and the last sample, restored on a decline
        tf = friction_into(v, obs[FV], obs[FC], obs[FO], limits[EPS], np.empty(nv))
        residual_step(r, obs[GAIN], dt, obs[P], obs[BETA], obs[TAU], w.p, w.ctv, g, tf, tau,
                      False, bridged)
        if not terms_finite(M, C, Mdot, g, r):
            obs[R:V + 1] = saved
            return NONFINITE + reset
        obs[V] = v
        obs_q[:] = q
        for i in range(nv):
            ext[offsets[OUT_RESIDUAL] + i] = r[i]
    elif not terms_finite(M, C, Mdot, g, r):
        return NONFINITE + reset
    oM, oC, oD, og = offsets[OUT_M], offsets[OUT_C], offsets[OUT_MDOT], offsets[OUT_G]
    oG = offsets[OUT_GRAVITY]
    for i in range(nv):
        for j in range(nv):
            k = i * nv + j
            dyn[oM + k], dyn[oC + k], dyn[oD + k] = M[i, j], C[i, j], Mdot[i, j]
        dyn[og + i] = g[i]
        grav[oG + i] = g[i]
    if offsets[OUT_STAMPED]:
        for buffer in (dyn, grav, ext):
            stamp_words = buffer[:1].view(np.int32)
            stamp_words[0], stamp_words[1] = sec, nanosec
    _keep(kept, q, v, tau, sec, nanosec, stamp_ns, dt, obs.shape[0] > 0 and all_e, observed,
          restarted or bridged)
    if same:
        return SAME
    if not observed:
        return (NO_EFFORT if obs.shape[0] > 0 else OK) + reset
    if restarted:
        return RESTARTED + reset
    if bridged:
        return BRIDGED
    return ABOVE if any_above(r, threshold, v, tau) else OK


@njit(cache=True, nogil=True)
def _keep(kept, q, v, tau, sec, nanosec, stamp_ns, dt, torque, observed, irregular):
    """What a made cycle at (q, v, tau), stamped (sec, nanosec) (its time ``stamp_ns``),
    leaves in ``kept`` (module text): the latest state; a recent sample when one is due and the
    observer had a ``torque``; the observer's last sample when it was ``observed`` (updated or
    restarted), and a regular period ``dt`` (not a restart nor a gap: not ``irregular``) for
    the gap limit."""
    times, gap, periods, latest_q, latest_v, t_h, q_h, v_h, tau_h = kept
    latest_q[:] = q
    latest_v[:] = v
    times[N_LATEST] += 1
    times[LATEST_SEC], times[LATEST_NANOSEC], times[LATEST_NS] = sec, nanosec, stamp_ns
    nxt = times[HISTORY_NEXT]
    if torque and (stamp_ns >= nxt or stamp_ns < nxt - 2 * HISTORY_PERIOD_NS):
        times[HISTORY_NEXT] = stamp_ns + HISTORY_PERIOD_NS
        k = times[HISTORY_COUNT] % t_h.shape[0]
        t_h[k] = stamp_ns / NS
        q_h[k], v_h[k], tau_h[k] = q, v, tau
        times[HISTORY_COUNT] += 1
    if observed:
        times[OBS_LAST] = stamp_ns
        gap[LAST_DT] = dt
        if not irregular:         # a period of the stream: the gap limit (rules.gap_limit)
            n = times[N_PERIODS]
            periods[n % periods.shape[0]] = dt
            times[N_PERIODS] = n + 1
            gap[GAP_LIMIT] = gap_limit(periods, n + 1, gap[GAP_LIMIT], gap[GAP_MIN],
                                       gap[GAP_MAX], gap[GAP_FACTOR])


def compile_cycle():
    """Compile (or load from the disk cache) the kernels of the compiled cycle."""
    ready(terms), ready(residual_step), ready(any_above)
    ready(cycle_step)
