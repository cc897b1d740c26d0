"""The control cycle in one compiled call: ``cycle_step(model, data, message)``.

:func:`cycle_step` is the only statement of a cycle's sequence (:func:`step`); on the model's
constants (:class:`~ros_dynamics.estimation.cycle_data.CycleModel`) and the cycle's data
(:class:`~ros_dynamics.estimation.cycle_data.CycleData`), it applies the rules of
:mod:`~ros_dynamics.estimation.rules`, in this order, to every joint-state message:

* a floating base's odometry, known and recent enough (``odometry_verdict``);
* the message layout (``layout_verdict``: its arrays fit its names), then the stamp policy of
  its source (``stamp_verdict``): a stamp it rejects is refused; one accepted as a source or
  clock reset restarts the observer (noted); a source that sends no stamps is timed by the
  receiving clock;
* the joints gathered from the message and, for a source without every joint, from the held
  values of the others (``gather_checked``): finite and within the input bounds, held values
  fresh enough (else INCOMPLETE, the message's values held); a message of a source that does
  not drive the cycles only held;
* Algorithm 1 of Echeandia & Wensing (2021) and the momentum products (the core's ``terms``;
  a state it refuses: STATE);
* when every joint has an effort (or a commanded torque is given), the observer (De Luca et
  al., 2006): its (re)start at this sample when it is due (``observer.restart_at``: at the
  first sample with a torque, after a reset or a request), else the time since its last sample
  (``observer_interval``): an exact zero-order-hold step, or the bridge over a gap
  (``observer.residual_step``), with the joint friction (``friction_into``); whether the
  residual is above a contact threshold (``any_above``);
* a partial source's values held (``hold``); every result finite (``terms_finite``; else
  NONFINITE, the observer's state as it was);
* the results written into the output buffer at the model's slots (:data:`SLOTS`: M, C,
  dM/dt, g of ~/dynamics, the gravity torque, the residual; the messages' stamps too), and
  what a cycle keeps (:func:`keep`).

It returns the answer (rules.OK, FREE, ABOVE, ... or why there is no cycle) and, in the bits
from answers.NOTE_SHIFT on, a note (an accepted source or clock reset), and counts them in
``data.counts``.  What the residual means (the contact detector's hysteresis and isolation, the
forces at contact frames, the contact wrench) is judged after it
(:meth:`CycleState.finish <ros_dynamics.estimation.cycle_state.CycleState.finish>`), unless the
answer is FREE; :class:`~ros_dynamics.estimation.cycle.JointStateCycle` turns the answer into
the outcome by a lookup of the answer table.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit, types

from ..core.jit import ENTRY_KERNELS, depends_on_core, entry, ready
from ..core.kernels import PRODUCTS, terms
from ..core.kinematics import tree, workspace
from . import cycle_data as _cycle_data, observer as _observer, rules as _rules
from .answers import NOTE_SHIFT
from .cycle_data import (CYCLE_DATA, CYCLE_MODEL, HISTORY_PERIOD_NS, IDX, VEC, compile_data)
from .observer import residual_step, restart_at
from .rules import (ABOVE, BRIDGED, CLOCK_RESET, FREE, HELD_FIRST, HELD_VALUES, INCOMPLETE,
                    INTERVAL_BACK, INTERVAL_GAP, INTERVAL_SAME, NO_EFFORT, NONFINITE, NS, OK,
                    PASS, RESTARTED, S_EPOCH, S_LAST_NS, S_MESSAGES, SAME, SOURCE_RESET, STATE,
                    STALE_ODOM, TORQUE_GIVEN, TORQUE_NONE, UNSTAMPED, any_above, bound_violation,
                    friction_into,
                    gap_limit, gather_checked, hold, layout_verdict, observer_interval,
                    odometry_verdict, stamp_verdict, terms_finite)

depends_on_core(__file__, _observer.__file__, _rules.__file__, _cycle_data.__file__)

#: a message as the compiled step takes it: float64 ``words`` and int64 ``fields``: its stamp
#: (sec, nanosec), its number of names, where its position, velocity and effort arrays start
#: in ``words`` and their lengths, and the receiving clock's time [ns] (0: unknown)
#: (ros/dynamics_node/wire.py reads a serialized JointState this way; cycle.message_words packs
#: arrays this way)
M_SEC, M_NANOSEC, M_NAMES, M_POS, M_N_POS, M_VEL, M_N_VEL, M_EFF, M_N_EFF, M_NOW = range(10)
MESSAGE_FIELDS = 10
Message = namedtuple('Message', ['words', 'fields'])
MESSAGE = types.NamedTuple((VEC, IDX), Message)

#: the results the step writes into the output buffer, each at its offset
#: (``model.outputs.slots``): the state q (nq), v, M, C, dM/dt (nv x nv, row-major), g, the
#: gravity torque, the observer's residual (nv).  Only a made cycle writes them: a message
#: that makes none leaves the outputs as the last cycle wrote them
SLOTS = ('q', 'v', 'M', 'C', 'dM/dt', 'g', 'gravity torque', 'residual')
SLOT_Q, SLOT_V, SLOT_M, SLOT_C, SLOT_MDOT, SLOT_G, SLOT_GRAVITY, SLOT_RESIDUAL = range(
    len(SLOTS))
SQUARE_SLOTS = (SLOT_M, SLOT_C, SLOT_MDOT)          # nv x nv; SLOT_Q nq; the others nv


@entry(types.int64, CYCLE_MODEL, CYCLE_DATA, MESSAGE, cache=True)
def cycle_step(model, data, message):
    """One cycle of ``message`` (module text); returns its answer (and note) and counts it.
    Holds the GIL (no ``nogil``): a thread reading ``data`` (the services) reads it between two
    cycles, never during one."""
    return counted(data, step(model, data, message.words, message.fields))


@njit(cache=True)
def counted(data, code):
    """``code``, counted in ``data.counts`` (its answer and its note)."""
    data.counts[code & ((1 << NOTE_SHIFT) - 1)] += 1
    if code >> NOTE_SHIFT:
        data.counts[code >> NOTE_SHIFT] += 1
    return code


@njit(cache=True)
def step(model, data, words, fields):
    """The sequence of one cycle (module text): the rules that may refuse the message, then
    :func:`observe`."""
    sec, nanosec, now_ns = fields[M_SEC], fields[M_NANOSEC], fields[M_NOW]
    pos = words[fields[M_POS]:fields[M_POS] + fields[M_N_POS]]
    vel = words[fields[M_VEL]:fields[M_VEL] + fields[M_N_VEL]]
    eff = words[fields[M_EFF]:fields[M_EFF] + fields[M_N_EFF]]
    inputs, state, held, record = model.inputs, data.state, data.held, data.record
    q, v, tau = state.q, state.v, state.tau
    if model.floating:            # the base's pose and twist: the latest odometry
        code = odometry_verdict(data.base_known, data.base_ns, sec * NS + nanosec,
                                inputs.odom_max_age_ns)
        if code != PASS:
            data.why_dt = (sec * NS + nanosec - data.base_ns) / NS
            return code
        q[:7], v[:6] = state.base_q, state.base_v
    code = layout_verdict(fields[M_NAMES], pos.shape[0], vel.shape[0], eff.shape[0],
                          inputs.allow_missing_velocity)
    if code != PASS:
        return code
    data.why_last_ns = record[S_LAST_NS]
    stamp = stamp_verdict(sec, nanosec, record[S_LAST_NS], now_ns, inputs.max_lead_ns,
                          inputs.reset_jump_ns, record[S_EPOCH] != data.epoch)
    note = stamp if stamp == SOURCE_RESET or stamp == CLOCK_RESET else 0
    if stamp >= 0 and note == 0:
        return stamp                                       # rejected
    # the cycle's time: the stamp, or for a source that sends none the receiving clock
    stamp_ns = now_ns if stamp == UNSTAMPED else sec * NS + nanosec
    bq, bv = model.nq - model.nj, model.nv - model.nj
    code, all_e, data.why_joint, data.why_value, data.why_bound = gather_checked(
        data.gather, pos, vel, eff, held.values, held.stamps, held.known, held.effort,
        held.stale, stamp_ns, inputs.max_age_ns, q[bq:], v[bv:], tau[bv:], inputs.pbound,
        inputs.vbound, inputs.ebound)
    if code != PASS and code != INCOMPLETE:
        return code                                        # beyond a bound
    # accepted: recorded in its source
    record[S_LAST_NS] = sec * NS + nanosec
    if note or record[S_MESSAGES] == 0:
        record[S_EPOCH] = data.epoch
    record[S_MESSAGES] += 1
    note <<= NOTE_SHIFT
    if note:                      # the observer restarts: at this cycle, or at the next update
        data.obs_last_ns = -1
        data.usual = False
    if not data.drives or code == INCOMPLETE:              # accepted and held, but no cycle
        hold(data.gather, pos, vel, eff, held.values, held.stamps, held.known, held.effort,
             stamp_ns)
        if data.drives:
            return INCOMPLETE | note
        return (HELD_FIRST if record[S_MESSAGES] == 1 else HELD_VALUES) | note
    if data.torque_source == TORQUE_GIVEN:
        tau[bv:] = state.command
        all_e = True
    elif data.torque_source == TORQUE_NONE:
        all_e = False
    if data.partial:               # a partial source: its every accepted message is held
        hold(data.gather, pos, vel, eff, held.values, held.stamps, held.known, held.effort,
             stamp_ns)
    # Algorithm 1 and the observer's products (q checked again: a floating base's pose)
    if terms(model.core, data.work, q, v, PRODUCTS) != 0:
        return STATE | note
    return observe(model, data, sec, nanosec, stamp_ns, model.observer.on and all_e) | note


@njit(cache=True)
def observe(model, data, sec, nanosec, stamp_ns, torque):
    """The rest of a cycle whose terms are in ``data.work``, at ``stamp_ns``: the observer
    (when there is one and a ``torque``), the finite check, the outputs and what is kept."""
    om, obs, q, v, tau = model.observer, data.observer, data.state.q, data.state.v, data.state.tau
    w = workspace(tree(model.core), data.work)
    M, C, Mdot, g = w.M, w.C, w.Mdot, w.g
    interval, dt = INTERVAL_BACK, 0.0          # (a restart when due: obs_last_ns < 0)
    if torque and data.obs_last_ns >= 0:
        dt = (stamp_ns - data.obs_last_ns) / NS
        interval = observer_interval(dt, data.gap_limit)
    same = torque and interval == INTERVAL_SAME    # nothing new to integrate
    observed = torque and not same
    tf = friction_into(v, om.fv, om.fc, om.fo, om.eps, np.empty(v.shape[0])) if observed else v
    if observed and interval == INTERVAL_BACK:
        # the observer (re)starts here, once the terms are known finite
        if not terms_finite(M, C, Mdot, g, obs.r[:0]):
            return NONFINITE
        restart_at(obs.r, obs.p, obs.beta, obs.tau, w.p, w.ctv, g, tf, tau)
    elif observed:                             # INTERVAL_UPDATE or INTERVAL_GAP
        saved = np.empty((4, v.shape[0]))      # r and the last sample, restored on a decline
        saved[0], saved[1], saved[2], saved[3] = obs.r, obs.p, obs.beta, obs.tau
        residual_step(obs.r, om.gain, dt, obs.p, obs.beta, obs.tau, w.p, w.ctv, g, tf, tau,
                      False, interval == INTERVAL_GAP)
        if not terms_finite(M, C, Mdot, g, obs.r):
            obs.r[:], obs.p[:], obs.beta[:], obs.tau[:] = saved[0], saved[1], saved[2], saved[3]
            return NONFINITE
    elif not terms_finite(M, C, Mdot, g, obs.r[:0]):
        return NONFINITE
    if observed:
        obs.v[:] = v
        obs.q[:] = q
    updated = observed and interval != INTERVAL_BACK
    write_outputs(model, data.outputs, q, v, M, C, Mdot, g, obs.r, updated, sec, nanosec)
    keep(model, data, q, v, tau, sec, nanosec, stamp_ns, dt, torque, observed,
         interval == INTERVAL_BACK or interval == INTERVAL_GAP)
    if same:
        return SAME
    if not observed:
        if om.on:
            return NO_EFFORT
        return FREE if data.usual else OK
    if interval == INTERVAL_BACK:
        return RESTARTED
    if interval == INTERVAL_GAP:
        data.why_dt = dt
        return BRIDGED
    if any_above(obs.r, om.thresholds, v, tau):
        return ABOVE
    if not data.usual:
        return OK
    for i in range(v.shape[0]):           # (the peak /diagnostics reads; nothing follows FREE)
        obs.free_peak[i] = max(obs.free_peak[i], abs(obs.r[i]))
    return FREE


@njit(cache=True)
def write_outputs(model, out, q, v, M, C, Mdot, g, r, updated, sec, nanosec):
    """The results into the output buffer at their slots (SLOTS; the residual when the
    observer ``updated``), and the stamp (sec, nanosec) at each of ``model.outputs.stamps``."""
    slots, nv = model.outputs.slots, g.shape[0]
    oq, ov = slots[SLOT_Q], slots[SLOT_V]
    for i in range(q.shape[0]):
        out[oq + i] = q[i]
    oM, oC, oD = slots[SLOT_M], slots[SLOT_C], slots[SLOT_MDOT]
    og, oG, oR = slots[SLOT_G], slots[SLOT_GRAVITY], slots[SLOT_RESIDUAL]
    for i in range(nv):
        for j in range(nv):
            k = i * nv + j
            out[oM + k], out[oC + k], out[oD + k] = M[i, j], C[i, j], Mdot[i, j]
        out[ov + i] = v[i]
        out[og + i] = g[i]
        out[oG + i] = g[i]
        if updated:
            out[oR + i] = r[i]
    for o in model.outputs.stamps:
        stamp_words = out[o:o + 1].view(np.int32)
        stamp_words[0], stamp_words[1] = sec, nanosec


@njit(cache=True)
def keep(model, data, q, v, tau, sec, nanosec, stamp_ns, dt, torque, observed, irregular):
    """What a made cycle at (q, v, tau), stamped (sec, nanosec) (its time ``stamp_ns``),
    leaves in ``data`` (cycle_data.Kept and the scalars of the latest cycle and the observer's
    timing): the latest state; a recent sample when one is due and the observer had a
    ``torque``; the observer's last sample when it was ``observed`` (updated or restarted), and
    a regular period ``dt`` (not a restart nor a gap: not ``irregular``) for the gap limit
    (rules.gap_limit)."""
    kept, om = data.kept, model.observer
    kept.latest_q[:] = q
    kept.latest_v[:] = v
    data.n_latest += 1
    data.latest_sec, data.latest_nanosec, data.latest_ns = sec, nanosec, stamp_ns
    nxt = data.history_next
    if torque and (stamp_ns >= nxt or stamp_ns < nxt - 2 * HISTORY_PERIOD_NS):
        data.history_next = stamp_ns + HISTORY_PERIOD_NS
        k = data.history_count % kept.history_t.shape[0]
        kept.history_t[k] = stamp_ns / NS
        kept.history_q[k], kept.history_v[k], kept.history_tau[k] = q, v, tau
        data.history_count += 1
    if observed:
        data.obs_last_ns = stamp_ns
        data.last_dt = dt
        if not irregular:
            n = data.n_periods
            kept.periods[n % kept.periods.shape[0]] = dt
            data.n_periods = n + 1
            data.gap_limit = gap_limit(kept.periods, n + 1, data.gap_limit, om.gap_min,
                                       om.gap_max, om.gap_factor)


def entry_point(kernel):
    """The compiled entry point of a sealed entry kernel (``core.jit.entry``: one signature),
    called without numba's dispatch: the dispatcher types the cycle's structures in Python at
    every call (about 2 us for ``cycle_step``'s arguments against 0.24 us through its entry
    point, which only unboxes them).  Its argument types are not checked: call it with its
    signature's only (the node's per-message call, ros/dynamics_node/engine.py)."""
    ready(kernel)
    return kernel.overloads[ENTRY_KERNELS[kernel.py_func.__name__][1].args].entry_point


def compile_cycle():
    """Compile (or load from the disk cache) the kernels of the compiled cycle and the small
    functions that read and set its data."""
    compile_data()
    ready(terms), ready(residual_step), ready(any_above), ready(bound_violation)
    ready(cycle_step)
