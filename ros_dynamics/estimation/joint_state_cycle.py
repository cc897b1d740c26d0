"""One joint-state message in, one cycle's results (or why there are none) out, without ROS.

:class:`JointStateCycle` is the one place that decides how a message is processed: the
usual case (a known source, in any published coordinates, with either torque source; nothing
to reject or reset) in one compiled call
(:func:`~ros_dynamics.estimation.fused_cycle.fused_step`), everything else step by step in
Python (:class:`~ros_dynamics.estimation.joint_input.JointStateAssembler`, then
:class:`~ros_dynamics.estimation.cycle.Cycle`), which gives the verdicts their reasons.  Both
apply the same compiled rules (:mod:`~ros_dynamics.estimation.rules`), so the choice changes
the cost of a cycle, never its outcome (test_fused_cycle runs both on the same messages).

It also owns the torque the observer is given (``effort_source``: the joint states' efforts,
or the latest commanded torque if recent enough) and a floating base's pose and twist.
:func:`node_cycle` and :func:`replay` run the node's cycle outside the node (calibration,
identification, tests).
"""
from __future__ import annotations

import time

import numpy as np

from ..core.configuration import base_nq, base_nv, neutral
from .cycle import Cycle
from .joint_input import InputBounds, JointStateAssembler
from .fused_cycle import (BRIDGED, DECLINED, INCOMPLETE, MADE, NO_EFFORT, OK, REFUSED,
                          REJECTED_BOUNDS, REJECTED_LAYOUT, REJECTED_STAMP, RESTARTED, SAME,
                          STATE_NO_TORQUE, TORQUE, TORQUE_GIVEN, TORQUE_MESSAGE, TORQUE_NONE,
                          TORQUE_SOURCE, compile_fused, fused_step)
from .rules import NS


_NO_NOTES = ()
_NO_TORQUE = np.zeros(0)
_NO_EFFORT = ('no_effort', 'joint_states without effort: observer not updated', 'info')


class Outcome:
    """What :meth:`JointStateCycle.step` made of one message (one object, reused).

    ``verdict``: 'cycle' (``result`` holds the cycle, ``t_ns`` its time, ``tau`` the observer's
    torque or None, ``written``: the compiled call wrote the outputs already), 'held' (a partial
    source's values were kept; ``note`` says so once) or 'refused' (``refusal``: (kind, text,
    level)).  ``notes``: (kind, text, level) to log for an accepted message."""

    __slots__ = ('verdict', 'result', 't_ns', 'tau', 'written', 'refusal', 'notes')

    def clear(self):
        self.verdict, self.result, self.t_ns, self.tau = None, None, 0, None
        self.written, self.refusal, self.notes = False, None, _NO_NOTES

    def note(self, kind, text, level):
        """Add (kind, text, level) to :attr:`notes`."""
        if self.notes is _NO_NOTES:
            self.notes = []
        self.notes.append((kind, text, level))


class JointStateCycle:
    """The assembler and the cycle of one model behind one :meth:`step` (module text).

    ``q``, ``v``, ``tau``: the model's state and torque vectors the cycles run on (the joint
    entries are gathered into them); ``outputs``: (dyn, grav, ext, offsets), where the compiled
    call writes its results (serialized messages) in the model's own coordinates, or None (it
    writes into buffers of its own; the outcome is then not ``written``).
    ``effort_source``: 'joint_state' or 'commanded_torque' (then ``commanded_timeout`` [s], 0:
    none)."""

    def __init__(self, assembler, cycle, q, v, tau, outputs=None, effort_source='joint_state',
                 commanded_timeout=0.0, odom_max_age=0.0):
        self.assembler, self.cycle = assembler, cycle
        self.odom_max_age_ns = int(round(float(odom_max_age) * NS))
        self.q, self.v, self.tau = q, v, tau
        self.floating = bool(cycle.model.floating_base)
        self.base_q, self.base_v = base_nq(cycle.model), base_nv(cycle.model)
        self.effort_source, self.commanded_timeout = effort_source, float(commanded_timeout)
        self.outcome = Outcome()
        self.counts = [0] * (REJECTED_BOUNDS + 1)       # per answer of fused_step (a list: cheap +1)
        self.not_tried = 0          # messages the compiled call was not given
        self._compiled = False       # the compiled call serves (compile() done)
        # it writes the outputs when they are the model's own coordinates in the buffers given;
        # else into buffers of its own, and the published coordinates are made after it
        self._written = outputs is not None and cycle.coords.identity
        if not self._written:
            outputs = output_buffers(int(cycle.model.nv))
        obs = cycle.observer
        self._args = self._fixed_arguments(outputs) + (np.array(
            [assembler.max_lead_ns, assembler.max_age_ns, assembler.reset_jump_ns,
             assembler.bounds.position, obs.friction_velocity_eps if obs else 1.0,
             float(assembler.allow_missing_velocity), float(TORQUE_MESSAGE)]),)
        # the observer's torque: the messages' efforts, always, or the commanded torque
        self._own_torque = effort_source == 'joint_state' or obs is None

    def _fixed_arguments(self, outputs):
        asm, cycle = self.assembler, self.cycle
        obs = cycle.observer
        b = asm.bounds
        observer = ((obs.state, obs.last_q, cycle.detector.thresholds) if obs else
                    (np.zeros((0, 0)), np.zeros(0), np.zeros((3, 0))))
        return ((cycle.model.packed, cycle.data.work), (self.q, self.v, self.tau),
                np.ascontiguousarray([b.velocity, b.effort, np.zeros(len(b.velocity))]),
                (asm.held, asm.h_ns, asm.h_known, asm.h_effort), observer, outputs)

    def compile(self):
        """Compile (or load) the compiled call's kernels (any thread); it serves from the next
        message on."""
        compile_fused()
        self._compiled = True           # the compiled call serves from the next message on

    @property
    def fast_cycles(self):
        """The cycles the compiled call made."""
        return int(sum(self.counts[k] for k in MADE))

    def summary(self):
        """How the cycles ran (for /diagnostics)."""
        if not self._compiled:
            return 'Python pipeline (the compiled call is being compiled)'
        counts = self.counts
        why = [f'{k} {n}' for k, n in zip(DECLINED, counts[1:1 + len(DECLINED)]) if n]
        if self.not_tried:
            why.append(f'a new layout or source, or one that does not drive the cycles '
                       f'{self.not_tried}')
        return f'{self.fast_cycles} in one compiled call' + (
            f'; through the pipeline: {", ".join(why)}' if why else '')

    # -- one message ------------------------------------------------------------------------
    def step(self, names, position, velocity, effort, sec, nanosec, now_ns, base=None,
             command=None, christoffel=False):
        """One joint-state message (float64 arrays; ``velocity``/``effort`` may be empty),
        received at ``now_ns`` (the node clock); ``base``: (q7, v6[, stamp_ns]) of the latest
        odometry of a floating base or None (refused when its stamp is more than
        ``odom_max_age`` older than the joint state's: nothing from an old base state);
        ``command``: (joint torques, monotonic receipt ns) of the latest commanded torque or
        None; ``christoffel``: compute Gamma in this cycle.  Returns :attr:`outcome`."""
        out = self.outcome
        if self.floating:
            if base is not None:
                if len(base) > 2 and self._stale(base[2], sec * NS + nanosec):
                    return out
                self.q[:self.base_q], self.v[:self.base_v] = base[0], base[1]
        if self._compiled and (base is not None or not self.floating):
            # the usual message in one compiled call (module text); the pipeline otherwise
            asm, cycle = self.assembler, self.cycle
            src = asm.fused_source(names)
            if src is None:
                self.not_tried += 1
            else:
                gather, last_ns, clock_jumped = src
                obs_last_ns = cycle.fused_time
                (model, work), state, per_joint, held, observer, outputs, limits = self._args
                why = _NO_EFFORT
                if not self._own_torque:      # the commanded torque (or none) this message
                    torque, source, why = self._torque_source(command)
                    limits[TORQUE_SOURCE] = source
                    if source == TORQUE_GIVEN:
                        per_joint[TORQUE] = torque
                try:
                    status = fused_step(model, work, gather, (position, velocity, effort), state,
                                        per_joint, held, observer, outputs, limits, sec, nanosec,
                                        now_ns, last_ns, obs_last_ns, cycle.gap_limit,
                                        clock_jumped, len(names))
                except TypeError:   # other array types (e.g. read-only): the pipeline converts
                    status = None
                if status is not None:
                    self.counts[status] += 1
                    if status in MADE:
                        return self._made(status, sec * NS + nanosec, obs_last_ns, christoffel,
                                          why)
                    if status in REFUSED:
                        return self._refused_state(status, sec * NS + nanosec, why)
                    if status == INCOMPLETE:
                        out.clear()
                        kind, text = asm.fused_incomplete(sec * NS + nanosec)
                        out.verdict = 'refused'
                        out.refusal = (kind, 'joint_states incomplete: ' + text, 'warning')
                        return out
                    if status in (REJECTED_STAMP, REJECTED_LAYOUT, REJECTED_BOUNDS):
                        out.clear()
                        if status == REJECTED_STAMP:
                            kind, text = asm.rejected_stamp(sec, nanosec, now_ns)
                        elif status == REJECTED_LAYOUT:
                            kind, text = asm.rejected_layout(len(names), len(position),
                                                             len(velocity), len(effort))
                        else:
                            kind, text = asm.rejected_bounds(
                                self.q[self.base_q:], self.v[self.base_v:],
                                self.tau[self.base_v:] if len(effort) else None)
                        out.verdict = 'refused'
                        out.refusal = (kind, 'joint_states rejected: ' + text, 'warning')
                        return out
        return self._step_pipeline(names, position, velocity, effort, sec, nanosec, now_ns,
                                   base, command, christoffel)

    def _stale(self, odom_ns, stamp_ns):
        """Whether the odometry stamped ``odom_ns`` is too old for the joint state stamped
        ``stamp_ns`` (then :attr:`outcome` says so); unstamped messages are not judged."""
        age = stamp_ns - odom_ns
        if self.odom_max_age_ns <= 0 or odom_ns <= 0 or stamp_ns <= 0 or \
                age <= self.odom_max_age_ns:
            return False
        out = self.outcome
        out.clear()
        out.verdict = 'refused'
        out.refusal = ('stale_odom', f'joint_states ignored: the latest odom is {age / NS:.3g} s '
                       f'older than the joint state (odom_max_age {self.odom_max_age_ns / NS:g} '
                       's): nothing is computed from an old base state', 'warning')
        return True

    def _made(self, status, stamp_ns, obs_last_ns, christoffel, why=_NO_EFFORT):
        """:attr:`outcome` of a cycle the compiled call made (``status``: its answer; ``why``:
        the note of a cycle without an observer update)."""
        asm, cycle, out = self.assembler, self.cycle, self.outcome
        asm.fused_accepted(stamp_ns)
        observed = status != NO_EFFORT and status != SAME and cycle.observer is not None
        out.notes, out.refusal = _NO_NOTES, None
        res = out.result = cycle.fused_done(self.q, self.v, stamp_ns,
                                            (stamp_ns - obs_last_ns) / NS, observed,
                                            status == BRIDGED, status == OK, christoffel,
                                            status == RESTARTED)
        if res.error is not None:
            out.verdict, out.t_ns, out.tau, out.written = 'refused', 0, None, False
            out.refusal = ('output', f'{res.error}: nothing published, observer '
                           're-initialized', 'error')
            return out
        out.verdict, out.t_ns, out.written = 'cycle', stamp_ns, self._written
        out.tau = self.tau if observed or status == SAME else None
        if status == NO_EFFORT:
            out.note(*why)
        elif status == BRIDGED:
            self._bridged(res)
        return out

    def _refused_state(self, status, stamp_ns, why):
        """:attr:`outcome` of a message the compiled call accepted but whose state the dynamics
        refuse (``status`` STATE or STATE_NO_TORQUE: then ``why``, the note of a cycle without
        an observer update, is noted first): the reason is the core's, the observer restarts."""
        out = self.outcome
        out.clear()
        self.assembler.fused_accepted(stamp_ns)
        if status == STATE_NO_TORQUE:
            out.note(*why)
        out.result = res = self.cycle.refused_state(self.q, self.v)
        out.verdict = 'refused'
        out.refusal = ('output', f'{res.error}: nothing published, observer re-initialized',
                       'error')
        return out

    def _step_pipeline(self, names, position, velocity, effort, sec, nanosec, now_ns, base,
                       command, christoffel):
        out, asm, cycle = self.outcome, self.assembler, self.cycle
        out.clear()
        verdict = asm.add(names, position, velocity, effort, sec, nanosec, now_ns)
        if verdict == 'held':
            out.verdict = 'held'
            if asm.reason[1] is not None:
                out.note('held', f'joint_states: {asm.reason[1]}', 'info')
            return out
        if verdict not in ('cycle', 'reset'):
            kind, text = asm.reason
            out.verdict = 'refused'
            out.refusal = (kind, 'joint_states ' + (
                'incomplete: ' if verdict == 'incomplete' else 'rejected: ') + text, 'warning')
            return out
        if verdict == 'reset':
            cycle.reset(asm.reason[1])
            out.note(asm.reason[0], f'{asm.reason[1]}; observer re-initialized',
                     'info')
        if self.floating and base is None:
            out.verdict = 'refused'
            out.refusal = ('no_odom', 'joint_states ignored: floating base and no valid odom '
                           'yet', 'warning')
            return out
        self.q[self.base_q:] = asm.q
        self.v[self.base_v:] = asm.v
        tau = self._observer_torque(command, out)
        t_ns = asm.stamp_ns or now_ns        # unstamped sources: the node clock at receipt
        res = out.result = cycle.step(self.q, self.v, tau, t_ns, christoffel=christoffel)
        if res.error is not None:
            out.verdict = 'refused'
            out.refusal = ('output', f'{res.error}: nothing published, observer '
                           're-initialized', 'error')
            return out
        if res.observer == 'bridge':
            self._bridged(res)
        out.verdict, out.t_ns, out.tau = 'cycle', t_ns, tau
        return out

    def _bridged(self, res):
        """The note of a cycle made (either way) across a gap."""
        self.outcome.note(
            'gap', f'a gap of {res.dt:.3g} s between joint states (more than the gap limit '
            f'{self.cycle.gap_limit:.3g} s): the observer bridged it (residual kept)', 'info')

    def _torque_source(self, command):
        """(torque, source, note) of the observer's torque for a message, as ``effort_source``
        says: the message's efforts (TORQUE_MESSAGE; its note if it has none), the latest
        commanded torque ``command`` (TORQUE_GIVEN) or none (TORQUE_NONE: no command yet, or one
        older than ``commanded_timeout``; the note says which)."""
        if self.effort_source == 'joint_state' or self.cycle.observer is None:
            return _NO_TORQUE, TORQUE_MESSAGE, _NO_EFFORT
        if command is None:
            return _NO_TORQUE, TORQUE_NONE, ('no_cmd', 'no ~/commanded_torque yet: observer not '
                                             'updated', 'info')
        if self.commanded_timeout > 0 and (
                time.monotonic_ns() - command[1]) > self.commanded_timeout * NS:
            return _NO_TORQUE, TORQUE_NONE, ('stale_cmd', '~/commanded_torque is stale: '
                                             'observer not updated', 'warning')
        return command[0], TORQUE_GIVEN, None

    def _observer_torque(self, command, out):
        """The observer's applied torque (nv,) for a cycle of the pipeline
        (:meth:`_torque_source`), or None (the observer is not updated; why is noted in
        ``out``)."""
        if self.cycle.observer is None:
            return None
        torque, source, why = self._torque_source(command)
        if source == TORQUE_MESSAGE and not self.assembler.has_effort or source == TORQUE_NONE:
            out.note(*why)
            return None
        self.tau[self.base_v:] = self.assembler.e if source == TORQUE_MESSAGE else torque
        return self.tau


# -- the node's cycle outside the node -------------------------------------------------------
def output_buffers(nv):
    """(dyn, grav, ext, offsets): buffers for the compiled call's outputs, laid out as
    :data:`~ros_dynamics.estimation.fused_cycle.OUTPUT_FIELDS` says (M, C, dM/dt, g one after
    the other; the gravity torque; the residual), for a cycle whose outputs are not messages."""
    m2 = nv * nv
    return (np.zeros(3 * m2 + nv), np.zeros(nv), np.zeros(nv),
            np.array([0, m2, 2 * m2, 3 * m2, 0, 0], dtype=np.int64))


def node_cycle(model, observer=None, coordinates='joint', bounds=None, **inputs):
    """The cycle object the node runs for ``model``: a :class:`JointStateCycle` over a
    :class:`~ros_dynamics.estimation.joint_input.JointStateAssembler` (``bounds``: its
    :class:`~ros_dynamics.estimation.joint_input.InputBounds`, default the node's; ``inputs``:
    its input settings) and a :class:`~ros_dynamics.estimation.cycle.Cycle` with the observer
    settings ``observer`` (None: no observer), its compiled call ready, writing into buffers of
    its own (:func:`output_buffers`)."""
    cycle = Cycle(model, coordinates, observer)
    asm = JointStateAssembler(model.joint_names, bounds or InputBounds(model),
                              cycle.coords.joint_map, **inputs)
    nv = int(model.nv)
    js = JointStateCycle(asm, cycle, neutral(model), np.zeros(nv), np.zeros(nv),
                         output_buffers(nv))
    js.compile()
    return js


def replay(js, samples, christoffel=False):
    """Recorded samples through the cycle the node runs (``js``, e.g. of :func:`node_cycle`):
    one joint-state message per sample (every joint, stamped ``samples.t0_ns + t``; a floating
    base's pose and twist as its odometry).  Yields (index, outcome) per sample: the outcome of
    :meth:`JointStateCycle.step` (one object, reused: read it before the next)."""
    model = js.cycle.model
    names = tuple(model.joint_names)
    bq, bv = base_nq(model), base_nv(model)
    t0 = int(getattr(samples, 't0_ns', 0))
    for k in range(len(samples)):
        q, v, tau = samples.q[k], samples.v[k], samples.tau[k]
        sec, nanosec = divmod(t0 + int(round(float(samples.t[k]) * NS)), NS)
        base = (q[:bq], v[:bv]) if bq else None
        yield k, js.step(names, np.ascontiguousarray(q[bq:], dtype=float),
                         np.ascontiguousarray(v[bv:], dtype=float),
                         np.ascontiguousarray(tau[bv:], dtype=float), sec, nanosec, 0, base,
                         christoffel=christoffel)
