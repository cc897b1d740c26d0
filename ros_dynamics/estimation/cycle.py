"""One joint-state message in, one cycle's results (or why there are none) out, without ROS.

:class:`JointStateCycle` gives every message to the one compiled step
(:func:`~ros_dynamics.estimation.cycle_kernel.cycle_step`) and turns its answer into an
:class:`Outcome`: a cycle (what follows the compiled step made once, by
:meth:`CycleState.finish <ros_dynamics.estimation.cycle_state.CycleState.finish>`), a held
message, or a refusal with its reason.  Python does before the step only what needs the
names: a new name list is mapped to the model's joints and its source registered
(:meth:`JointStateAssembler.layout
<ros_dynamics.estimation.joint_input.JointStateAssembler.layout>`; a joint named twice is
refused there; the independent joints of ``mimic_reduced`` coordinates are expanded).

It also owns the torque the observer is given (``effort_source``: the joint states' efforts,
or the latest commanded torque if recent enough) and a floating base's pose and twist.
:func:`node_cycle`, :func:`step_sample` and :func:`replay` run the node's cycle outside the
node (calibration, identification, benchmarks, tests).
"""
from __future__ import annotations

import time

import numpy as np

from ..core.configuration import base_nq, base_nv, neutral
from .cycle_state import CycleState
from .joint_input import InputBounds, JointStateAssembler
from .cycle_kernel import (ANSWERS, BRIDGED, HELD, INCOMPLETE, LATEST_NS, M_EFF, M_N_EFF,
                           M_N_POS, M_N_VEL, M_NAMES, M_NANOSEC, M_POS, M_SEC, M_VEL, MADE,
                           MESSAGE_FIELDS, NO_EFFORT, NONFINITE, OK, REJECTED_BOUNDS,
                           REJECTED_LAYOUT, REJECTED_STAMP, RESET, RESTARTED, SAME,
                           STATE_NO_TORQUE, TORQUE, TORQUE_GIVEN, TORQUE_MESSAGE, TORQUE_NONE,
                           TORQUE_SOURCE, compile_cycle, cycle_step)
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
    """The sources and the cycle of one model behind one :meth:`step` (module text).

    ``q``, ``v``, ``tau``: the model's state and torque vectors the cycles run on (the joint
    entries are gathered into them); ``outputs``: (dyn, grav, ext, offsets), where the compiled
    step writes its results (serialized messages) in the model's own coordinates, or None (it
    writes into buffers of its own; the outcome is then not ``written``).
    ``effort_source``: 'joint_state' or 'commanded_torque' (then ``commanded_timeout`` [s], 0:
    none).  The compiled step's kernels are compiled (or loaded from the disk cache) here."""

    def __init__(self, assembler, cycle, q, v, tau, outputs=None, effort_source='joint_state',
                 commanded_timeout=0.0, odom_max_age=0.0):
        self.assembler, self.cycle = assembler, cycle
        self.odom_max_age_ns = int(round(float(odom_max_age) * NS))
        self.q, self.v, self.tau = q, v, tau
        self.floating = bool(cycle.model.floating_base)
        self.base_q, self.base_v = base_nq(cycle.model), base_nv(cycle.model)
        self.effort_source, self.commanded_timeout = effort_source, float(commanded_timeout)
        self.outcome = Outcome()
        self.counts = [0] * len(ANSWERS)       # per answer of cycle_step (a list: cheap +1)
        self._layout = None                    # the previous message's layout
        # it writes the outputs when they are the model's own coordinates in the buffers given;
        # else into buffers of its own, and the published coordinates are made after it
        self._written = outputs is not None and cycle.coords.identity
        if not self._written:
            outputs = output_buffers(int(cycle.model.nv))
        obs, b = cycle.observer, assembler.bounds
        # the rows per joint (cycle_kernel.VBOUND, EBOUND, TORQUE) and the limits (MAX_LEAD ...
        # TORQUE_SOURCE) the compiled step reads; :meth:`_torque_given` writes a message's
        # torque into them
        self._per_joint = np.ascontiguousarray([b.velocity, b.effort, np.zeros(len(b.velocity))])
        self._limits = np.array(
            [assembler.max_lead_ns, assembler.max_age_ns, assembler.reset_jump_ns, b.position,
             obs.friction_velocity_eps if obs else 1.0, float(assembler.allow_missing_velocity),
             float(TORQUE_MESSAGE)])
        # the compiled step's arguments that are the model's (the message's follow them)
        self._model_args = self._fixed_arguments(outputs)
        # the observer's torque: the messages' efforts, always, or the commanded torque
        self._own_torque = effort_source == 'joint_state' or obs is None
        compile_cycle()

    def _fixed_arguments(self, outputs):
        asm, cycle = self.assembler, self.cycle
        obs = cycle.observer
        observer = ((obs.state, obs.last_q, cycle.detector.thresholds) if obs else
                    (np.zeros((0, 0)), np.zeros(0), np.zeros((3, 0))))
        return (cycle.model.packed, cycle.data.work, (self.q, self.v, self.tau),
                self._per_joint, (asm.held, asm.h_ns, asm.h_known, asm.h_effort), observer,
                outputs, cycle.kept, self._limits)

    @property
    def fast_cycles(self):
        """The cycles made."""
        return int(sum(self.counts[k] for k in MADE))

    def summary(self):
        """How the cycles ran (for /diagnostics)."""
        others = [f'{ANSWERS[k]} {n}' for k, n in enumerate(self.counts) if n and k not in MADE]
        return f'{self.fast_cycles} in one compiled call' + (
            f'; no cycle: {", ".join(others)}' if others else '')

    # -- one message ------------------------------------------------------------------------
    def step(self, names, position, velocity, effort, sec, nanosec, now_ns, base=None,
             command=None, christoffel=False):
        """One joint-state message as arrays (float64; ``velocity``/``effort`` may be empty)
        and its stamp (sec, nanosec): :meth:`step_message` of them (:func:`message_words`)."""
        words, fields = message_words(position, velocity, effort, sec, nanosec, len(names))
        return self.step_message(names, words, fields, now_ns, base, command, christoffel)

    def step_message(self, names, words, fields, now_ns, base=None, command=None,
                     christoffel=False):
        """One joint-state message: its ``names`` (a tuple; the same object for every message
        of one layout is recognized without a comparison) and its float64 ``words`` and
        ``fields`` as the compiled step takes them (cycle_kernel.MESSAGE_FIELDS), received at
        ``now_ns`` (the node clock); ``base``: (q7, v6[, stamp_ns]) of the latest odometry of
        a floating base or None (refused when its stamp is more than ``odom_max_age`` older
        than the joint state's: nothing from an old base state); ``command``: (joint torques,
        monotonic receipt ns) of the latest commanded torque or None; ``christoffel``: compute
        Gamma in this cycle.  Returns :attr:`outcome`."""
        if self.floating:
            if base is None:
                return self._refuse('no_odom', 'joint_states ignored: floating base and no '
                                    'valid odom yet')
            if len(base) > 2 and self._stale(base[2], int(fields[M_SEC]) * NS +
                                             int(fields[M_NANOSEC])):
                return self.outcome
            self.q[:self.base_q], self.v[:self.base_v] = base[0], base[1]
        layout = self._layout
        if layout is None or (layout.names is not names and layout.names != names):
            layout = self._layout = self.assembler.layout(names)
        if layout.duplicate is not None or layout.expand is not None:   # (names' verdicts)
            words, fields = self._expanded(layout, words, fields)
            if words is None:
                return self.outcome
        asm, cycle, src = self.assembler, self.cycle, layout.src
        why = _NO_EFFORT
        if not self._own_torque:      # the commanded torque (or none) this message
            why = self._torque_given(command)
        status = cycle_step(*self._model_args, layout.gather, words, fields, src.record,
                            asm.epoch, now_ns, src.count >= asm.driving)
        if status == OK and cycle.usual is not None and not christoffel and not layout.partial:
            # the usual cycle: free motion, what follows the step is what it was (CycleState)
            self.counts[OK] += 1
            out = self.outcome
            out.notes, out.refusal, out.result = _NO_NOTES, None, cycle.usual
            out.verdict, out.t_ns, out.tau, out.written = 'cycle', int(
                cycle.kept[0][LATEST_NS]), self.tau, self._written
            return out
        return self._answer(status, layout, fields, now_ns, christoffel, why)

    def _answer(self, status, layout, fields, now_ns, christoffel, why):
        """:attr:`outcome` of the compiled step's answer ``status`` (but the usual cycle)."""
        sec, nanosec = int(fields[M_SEC]), int(fields[M_NANOSEC])
        reset = status >= RESET
        if reset:                      # a source or clock reset: the observer restarts
            status -= RESET
            self._reset(layout, sec, nanosec, now_ns)
        else:
            self.outcome.notes = _NO_NOTES
        self.counts[status] += 1
        if status in MADE:
            self._accepted(layout)
            return self._made(status, int(self.cycle.kept[0][LATEST_NS]), christoffel, why)
        return self._no_cycle(status, layout, sec, nanosec, now_ns, reset,
                              tuple(int(fields[k]) for k in (M_N_POS, M_N_VEL, M_N_EFF)), why)

    def _expanded(self, layout, words, fields):
        """(words, fields) of a message of a layout whose names have a verdict of their own: a
        joint named twice (refused: (None, None), :attr:`outcome` says why) or the
        independent joints of ``mimic_reduced`` coordinates (expanded to the model's joints)."""
        f = [int(x) for x in fields]
        n_names = f[M_NAMES]
        arrays = [words[f[k]:f[k] + f[k + 1]] for k in (M_POS, M_VEL, M_EFF)]
        bad = self.assembler.layout_reason(n_names, *(len(a) for a in arrays))
        if bad is None and layout.duplicate is not None:
            bad = ('duplicate', layout.duplicate)
        if bad is not None:
            self._refuse(bad[0], 'joint_states rejected: ' + bad[1])
            return None, None
        position, velocity, effort = self.assembler.expanded(layout, *arrays)
        return message_words(position, velocity, effort, f[M_SEC], f[M_NANOSEC], len(position))

    def _no_cycle(self, status, layout, sec, nanosec, now_ns, reset, lengths, why):
        """:attr:`outcome` of a message the compiled step made no cycle of (``status``): its
        reason, and what an accepted one leaves (the observer restarts after a state the
        dynamics refuse or a non-finite result)."""
        asm, stamp_ns = self.assembler, sec * NS + nanosec
        if status == REJECTED_STAMP:
            kind, text = asm.stamp_reason(layout, sec, nanosec, now_ns)
            return self._refuse(kind, 'joint_states rejected: ' + text)
        if status == REJECTED_LAYOUT:
            kind, text = asm.layout_reason(len(layout.names), *lengths)
            return self._refuse(kind, 'joint_states rejected: ' + text)
        if status == REJECTED_BOUNDS:
            kind, text = asm.bounds_reason(self.q[self.base_q:], self.v[self.base_v:],
                                           self.tau[self.base_v:] if lengths[2] else None)
            return self._refuse(kind, 'joint_states rejected: ' + text)
        self._accepted(layout)
        if status == HELD:
            out = self._refuse(None, None, keep_notes=True)
            out.verdict, out.refusal = 'held', None
            text = asm.held_reason(layout)
            if text is not None:
                out.note('held', f'joint_states: {text}', 'info')
            return out
        if status == INCOMPLETE:
            kind, text = asm.incomplete_reason(layout, stamp_ns or now_ns)
            return self._refuse(kind, 'joint_states incomplete: ' + text, keep_notes=True)
        if status == STATE_NO_TORQUE:
            self.outcome.note(*why)
        if status == NONFINITE:
            error = self.cycle.refused_nonfinite()
        else:                                      # STATE, STATE_NO_TORQUE
            error = self.cycle.refused_state(self.q, self.v).error
        return self._refuse('output', f'{error}: nothing published, observer re-initialized',
                            'error', keep_notes=True)

    def _accepted(self, layout):
        """The compiled step accepted a message of ``layout`` (and recorded it in its
        source): for a partial source, where its held values came from."""
        if layout.partial:
            h_source, src = self.assembler.h_source, layout.src
            for k in layout.nmap.slots[0]:
                h_source[k] = src

    def _refuse(self, kind, text, level='warning', keep_notes=False):
        """:attr:`outcome` 'refused' for (kind, text, level); ``keep_notes``: with the notes
        made for this message so far."""
        out = self.outcome
        notes = out.notes if keep_notes else _NO_NOTES
        out.clear()
        out.notes = notes
        out.verdict = 'refused'
        out.refusal = (kind, text, level)
        return out

    def _reset(self, layout, sec, nanosec, now_ns):
        """A message accepted as a source or clock reset: the observer restarts (at it, or at
        the next cycle that updates it), noted with the reason."""
        kind, text = self.assembler.stamp_reason(layout, sec, nanosec, now_ns, accepted=True)
        self.cycle.stepped_reset(text)
        out = self.outcome
        out.clear()
        out.note(kind, f'{text}; observer re-initialized', 'info')

    def _stale(self, odom_ns, stamp_ns):
        """Whether the odometry stamped ``odom_ns`` is too old for the joint state stamped
        ``stamp_ns`` (then :attr:`outcome` says so); unstamped messages are not judged."""
        age = stamp_ns - odom_ns
        if self.odom_max_age_ns <= 0 or odom_ns <= 0 or stamp_ns <= 0 or \
                age <= self.odom_max_age_ns:
            return False
        self._refuse('stale_odom', f'joint_states ignored: the latest odom is {age / NS:.3g} s '
                     f'older than the joint state (odom_max_age {self.odom_max_age_ns / NS:g} '
                     's): nothing is computed from an old base state')
        return True

    def _made(self, status, t_ns, christoffel, why=_NO_EFFORT):
        """:attr:`outcome` of a cycle the compiled step made (``status``: its answer; ``why``:
        the note of a cycle without an observer update)."""
        cycle, out = self.cycle, self.outcome
        observed = status != NO_EFFORT and status != SAME and cycle.observer is not None
        out.refusal = None
        res = out.result = cycle.finish(self.q, self.v, t_ns, observed, status == BRIDGED,
                                        status == OK, christoffel, status == RESTARTED)
        if res.error is not None:
            out.verdict, out.t_ns, out.tau, out.written = 'refused', 0, None, False
            out.refusal = ('output', f'{res.error}: nothing published, observer '
                           're-initialized', 'error')
            return out
        out.verdict, out.t_ns, out.written = 'cycle', t_ns, self._written
        out.tau = self.tau if observed or status == SAME else None
        if status == NO_EFFORT:
            out.note(*why)
        elif status == BRIDGED:
            self._bridged(res)
        return out

    def _bridged(self, res):
        """The note of a cycle made across a gap."""
        self.outcome.note(
            'gap', f'a gap of {res.dt:.3g} s between joint states (more than the gap limit '
            f'{self.cycle.gap_limit:.3g} s): the observer bridged it (residual kept)', 'info')

    def _torque_given(self, command):
        """The observer's torque of this message given to the compiled step (``limits``'
        TORQUE_SOURCE, ``per_joint``'s row TORQUE): the latest commanded torque ``command`` or
        none (:meth:`_torque_source`); returns the note of a cycle without it."""
        torque, source, why = self._torque_source(command)
        self._limits[TORQUE_SOURCE] = source
        if source == TORQUE_GIVEN:
            self._per_joint[TORQUE] = torque
        return why

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


# -- the node's cycle outside the node -------------------------------------------------------
def message_words(position, velocity, effort, sec, nanosec, n_names):
    """(words, fields) of a message as the compiled step takes it (cycle_kernel's
    MESSAGE_FIELDS): its position, velocity and effort arrays one after the other (float64)
    and its stamp, number of names and where each array is."""
    arrays = [np.asarray(a, dtype=float).reshape(-1) for a in (position, velocity, effort)]
    n = [len(a) for a in arrays]
    fields = np.zeros(MESSAGE_FIELDS, dtype=np.int64)
    fields[M_SEC], fields[M_NANOSEC], fields[M_NAMES] = sec, nanosec, n_names
    fields[M_POS], fields[M_N_POS] = 0, n[0]
    fields[M_VEL], fields[M_N_VEL] = n[0], n[1]
    fields[M_EFF], fields[M_N_EFF] = n[0] + n[1], n[2]
    return np.concatenate(arrays), fields


def output_buffers(nv):
    """(dyn, grav, ext, offsets): buffers for the compiled call's outputs, laid out as
    :data:`~ros_dynamics.estimation.cycle_kernel.OUTPUT_FIELDS` says (M, C, dM/dt, g one after
    the other; the gravity torque; the residual), for a cycle whose outputs are not messages."""
    m2 = nv * nv
    return (np.zeros(3 * m2 + nv), np.zeros(nv), np.zeros(nv),
            np.array([0, m2, 2 * m2, 3 * m2, 0, 0, 0], dtype=np.int64))


def node_cycle(model, observer=None, coordinates='joint', bounds=None, **inputs):
    """The cycle object the node runs for ``model``: a :class:`JointStateCycle` over a
    :class:`~ros_dynamics.estimation.joint_input.JointStateAssembler` (``bounds``: its
    :class:`~ros_dynamics.estimation.joint_input.InputBounds`, default the node's; ``inputs``:
    its input settings) and a :class:`~ros_dynamics.estimation.cycle_state.CycleState` with the
    observer settings ``observer`` (None: no observer), writing into buffers of its own
    (:func:`output_buffers`)."""
    cycle = CycleState(model, coordinates, observer)
    asm = JointStateAssembler(model.joint_names, bounds or InputBounds(model),
                              cycle.coords.joint_map, **inputs)
    nv = int(model.nv)
    return JointStateCycle(asm, cycle, neutral(model), np.zeros(nv), np.zeros(nv),
                           output_buffers(nv))


def step_sample(js, q, v, tau, t_ns, christoffel=False):
    """One sample of the model's state (q, v) and torque ``tau`` at ``t_ns`` through the cycle
    the node runs (``js``, e.g. of :func:`node_cycle`), as the node gets it: one joint-state
    message with every joint (stamped ``t_ns``) and a floating base's pose and twist as its
    odometry.  Returns the outcome of :meth:`JointStateCycle.step` (one object, reused)."""
    bq, bv = js.base_q, js.base_v
    sec, nanosec = divmod(int(t_ns), NS)
    base = (q[:bq], v[:bv]) if bq else None
    return js.step(js.assembler.names, np.ascontiguousarray(q[bq:], dtype=float),
                   np.ascontiguousarray(v[bv:], dtype=float),
                   np.ascontiguousarray(tau[bv:], dtype=float), sec, nanosec, 0, base,
                   christoffel=christoffel)


def replay(js, samples, christoffel=False):
    """Recorded samples through the cycle the node runs (``js``, e.g. of :func:`node_cycle`):
    one joint-state message per sample (:func:`step_sample`, stamped ``samples.t0_ns + t``).
    Yields (index, outcome) per sample: the outcome of :meth:`JointStateCycle.step` (one
    object, reused: read it before the next)."""
    t0 = int(getattr(samples, 't0_ns', 0))
    for k in range(len(samples)):
        yield k, step_sample(js, samples.q[k], samples.v[k], samples.tau[k],
                             t0 + int(round(float(samples.t[k]) * NS)), christoffel)
