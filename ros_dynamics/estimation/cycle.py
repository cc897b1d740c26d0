"""One joint-state message in, one cycle's results (or why there are none) out, without ROS.

:class:`JointStateCycle` owns one model's cycle: its :class:`~.cycle_data.CycleModel` and
:class:`~.cycle_data.CycleData`, the sources of joint states
(:class:`~.joint_input.JointStateAssembler`) and what follows the compiled step
(:class:`~.cycle_state.CycleState`).  It gives every message to the one compiled step
(:func:`~ros_dynamics.estimation.cycle_kernel.cycle_step`) and turns its answer into an
:class:`Outcome` by a lookup of the answer table (:data:`~.answers.ANSWERS`): a cycle (what
follows the compiled step made once, unless the answer is FREE), a held message, or a refusal
with its reason.  Python does before the step only what needs the names: a new name list is
mapped to the model's joints and its source registered (:meth:`JointStateAssembler.layout
<ros_dynamics.estimation.joint_input.JointStateAssembler.layout>`; a joint named twice is
refused there; the independent joints of ``mimic_reduced`` coordinates are expanded).

It also owns the torque the observer is given (``effort_source``: the joint states' efforts,
or the latest commanded torque if recent enough, ``rules.torque_source``) and a floating base's
odometry (:meth:`odometry`).  :func:`node_cycle`, :func:`step_sample` and :func:`replay` run the
node's cycle outside the node (calibration, identification, benchmarks, tests).
"""
from __future__ import annotations

import numpy as np

from ..core.configuration import base_nq, base_nv
from .answers import ANSWERS, CYCLE, HELD, REFUSED, split
from .cycle_data import (CycleData, CycleModel, Inputs, OutputLayout, clock_jumped, latest_into,
                         latest_stamp,
                         observer_model, restart_timing, set_base, set_torque_source,
                         timing, use_layout, why)
from .cycle_kernel import (M_EFF, M_N_EFF, M_N_POS, M_N_VEL, M_NAMES, M_NANOSEC, M_NOW, M_POS,
                           M_SEC, M_VEL, MESSAGE_FIELDS, SLOT_Q, SLOTS, SQUARE_SLOTS, Message,
                           compile_cycle, cycle_step)
from .cycle_state import FOLLOW_UP, UPDATES, CycleResult, CycleState
from .joint_input import DUPLICATE, InputBounds, JointStateAssembler
from .rules import (BRIDGED, FREE, INCOMPLETE, NO_EFFORT, NONFINITE, NS, PASS, RESTARTED, SAME,
                    STATE, TORQUE_GIVEN, TORQUE_MESSAGE, layout_verdict, torque_source)

_NO_NOTES = ()
_TORQUED = UPDATES | {RESTARTED, SAME}      # the answers whose cycle had the observer's torque
#: the refusals of a message the step accepted first (its stamp recorded, a partial source's
#: values held)
_RECORDED = frozenset((INCOMPLETE, NONFINITE, STATE))


class Outcome:
    """What :meth:`JointStateCycle.step` made of one message (one object, reused).

    ``verdict``: 'cycle' (``result`` holds the cycle, ``tau`` the observer's torque or None,
    ``written``: the compiled call wrote the outputs already, ``t_ns``: its time), 'held' (a
    partial source's values were kept) or 'refused' (``refusal``: (kind, text, level)).
    ``answer``: the compiled step's answer; ``notes``: (kind, text, level) to log;
    ``fields``: the message's (cycle_kernel.MESSAGE_FIELDS: its stamp)."""

    __slots__ = ('verdict', 'answer', 'result', 'tau', 'written', 'refusal', 'notes', 'fields',
                 '_cycle')

    def __init__(self, cycle):
        self._cycle = cycle
        self.clear()

    def clear(self):
        self.verdict, self.answer, self.result, self.tau = None, None, None, None
        self.written, self.refusal, self.notes, self.fields = False, None, _NO_NOTES, None

    @property
    def t_ns(self):
        """The cycle's time [ns]: its stamp, or the receiving clock for an unstamped source."""
        return self._cycle.latest_ns() if self.verdict == CYCLE else 0

    def kept(self):
        """A copy that stays as it is (this object is reused by the next message): its fields
        and its result copied (the arrays the result refers to change with the next cycle)."""
        other = Outcome(self._cycle)
        other.verdict, other.answer, other.tau, other.written = (self.verdict, self.answer,
                                                                 self.tau, self.written)
        other.refusal, other.notes = self.refusal, self.notes
        other.fields = None if self.fields is None else self.fields.copy()
        if self.result is not None:
            other.result = CycleResult()
            other.result.copy_from(self.result)
        return other

    def note(self, kind, text, level):
        """Add (kind, text, level) to :attr:`notes`."""
        if self.notes is _NO_NOTES:
            self.notes = []
        self.notes.append((kind, text, level))


class JointStateCycle:
    """One model's cycle behind one :meth:`step` (module text).

    ``observer``: ``ObserverSettings`` or None; ``bounds``: the input bounds (default the
    node's); ``inputs``: the assembler's settings (``max_age``, ``max_lead``, ``reset_jump``,
    ``allow_missing_velocity``); ``outputs``: (buffer, :data:`~.cycle_data.OutputLayout`) where
    the compiled step writes its results (serialized messages in the model's own coordinates),
    or None (a buffer of its own; the outcome is then not ``written``); ``effort_source``:
    'joint_state' or 'commanded_torque' (then ``commanded_timeout`` [s], 0: none);
    ``odom_max_age`` [s]: a floating base's odometry at most this much older than a joint state
    (0: no limit).  The compiled step's kernels are compiled (or loaded from the disk cache)
    here."""

    def __init__(self, model, coordinates='joint', observer=None, bounds=None, outputs=None,
                 effort_source='joint_state', commanded_timeout=0.0, odom_max_age=0.0,
                 **inputs):
        compile_cycle()
        self.model = model
        self.floating = bool(model.floating_base)
        self.base_q, self.base_v = base_nq(model), base_nv(model)
        self.state = CycleState(model, coordinates, observer)
        written = outputs is not None and self.state.coords.identity
        buffer, self.output_layout = (outputs if written else
                                      output_buffer(int(model.nq), int(model.nv)))
        self.data = CycleData(model, self.state.data.work, buffer, _gap_max(observer))
        self._out = Outcome(self)           # the outcome of every answer but FREE
        self.outcome = self._out            # the last one returned
        self.configure_inputs(bounds or InputBounds(model), effort_source, commanded_timeout,
                              odom_max_age, **inputs)
        self._free = Outcome(self)        # the outcome of a FREE answer (rules.FREE)
        self._free.verdict, self._free.answer, self._free.result = CYCLE, FREE, self.state.free
        self._free.tau, self._free.written = self.data.state.tau, written
        self._written = written

    # -- settings ---------------------------------------------------------------------------
    def configure_inputs(self, bounds, effort_source='joint_state', commanded_timeout=0.0,
                         odom_max_age=0.0, **inputs):
        """New input settings (``bounds``, the observer's torque, the odometry's age limit, the
        assembler's ``inputs``): the sources and held values forgotten (cheap; the observer
        runs on)."""
        self.effort_source, self.commanded_timeout = effort_source, float(commanded_timeout)
        self.odom_max_age_ns = int(round(float(odom_max_age) * NS))
        self._torque_note = PASS
        set_torque_source(self.data.struct, TORQUE_MESSAGE)
        mimic = self.state.coords.joint_map
        hint = ('' if mimic is not None or not self.model.mimic else
                " (with coordinates 'mimic_reduced' the independent joints alone are accepted)")
        self.bounds = bounds
        self.assembler = JointStateAssembler(self.model.joint_names, bounds, mimic, hint,
                                             **inputs)
        self.data.held.known[:] = False
        self._layout = None                    # the current layout
        self._remodel()

    def configure_observer(self, observer):
        """New observer settings (ValueError if invalid): the observer restarts, the latest
        state and the recent samples are kept."""
        state = CycleState(self.model, self.state.coords.kind, observer, self.state.data)
        state.reset(self.data, 'new observer settings')
        restart_timing(self.data.struct, _gap_max(observer))
        self.state = state
        self._free.result = state.free
        self._remodel()

    def _remodel(self):
        """The :class:`~.cycle_data.CycleModel` of the current settings."""
        asm, b, st = self.assembler, self.bounds, self.state
        inputs = Inputs(asm.max_lead_ns, asm.max_age_ns, asm.reset_jump_ns,
                        self.odom_max_age_ns, asm.allow_missing_velocity, b.position,
                        b.velocity.copy(), b.effort.copy())
        thresholds = None if st.detector is None else st.detector.thresholds
        self.cycle_model = CycleModel(self.model, inputs,
                                      observer_model(self.model, st.settings, thresholds),
                                      self.output_layout)

    # -- what the cycle keeps, for others ------------------------------------------------------
    @property
    def counts(self):
        """Per answer code, how many messages had it (the array the compiled step counts in)."""
        return self.data.counts

    @property
    def fast_cycles(self):
        """The cycles made."""
        return int(sum(self.data.counts[a.code] for a in ANSWERS if a.verdict == CYCLE))

    def summary(self):
        """How the cycles ran (for /diagnostics)."""
        others = {}
        for a in ANSWERS:
            n = int(self.data.counts[a.code])
            if n and a.verdict != CYCLE:
                others[a.kind] = others.get(a.kind, 0) + n
        return f'{self.fast_cycles} in one compiled call' + (
            f'; no cycle: {", ".join(f"{k} {n}" for k, n in others.items())}' if others else '')

    def latest(self):
        """(q, v, (sec, nanosec)) of the latest cycle (copies), or None before the first."""
        q, v = np.empty(int(self.model.nq)), np.empty(int(self.model.nv))
        n, sec, nanosec = latest_into(self.data.struct, q, v)
        return (q, v, (int(sec), int(nanosec))) if n else None

    def history(self, window=0.0):
        """(t [s], q, v, tau) of the recent samples of the last ``window`` s (0: all), oldest
        first (copies): the cycles with the observer's torque, at most one per 10 ms."""
        kept = self.data.kept
        count = int(latest_stamp(self.data.struct)[3])
        n = min(count, len(kept.history_t))
        order = np.arange(count - n, count) % len(kept.history_t)
        t, Q, V, T = (a[order] for a in (kept.history_t, kept.history_q, kept.history_v,
                                         kept.history_tau))
        keep = t >= t[-1] - window if (window > 0 and n) else np.ones(n, dtype=bool)
        return t[keep], Q[keep], V[keep], T[keep]

    @property
    def gap_limit(self):
        """The gap limit [s] (the observer bridges a longer gap: rules.observer_interval)."""
        return float(timing(self.data.struct)[1])

    def latest_ns(self):
        """The latest cycle's time [ns]."""
        return int(timing(self.data.struct)[2])

    # -- inputs beside the joint states --------------------------------------------------------
    def odometry(self, q7, v6, stamp_ns=0):
        """The latest odometry of a floating base: its pose (x y z, quaternion x y z w), twist
        and stamp [ns] (0: not judged against odom_max_age)."""
        set_base(self.data.struct, np.ascontiguousarray(q7, dtype=float),
                 np.ascontiguousarray(v6, dtype=float), int(stamp_ns))

    def clock_reset(self):
        """The receiving clock jumped back (simulated time reset): each source's next stamp that
        goes back is a reset, accepted (messages of the old episode still queued are accepted
        as before, whatever the order in which the clock and they arrive)."""
        clock_jumped(self.data.struct)

    def reset(self, why):
        """Restart the observer at the next cycle with effort, for the reason ``why``."""
        self.state.reset(self.data, why)

    @property
    def commanded(self):
        """Whether the observer's torque is the commanded one (``effort_source``)."""
        return self.effort_source == 'commanded_torque' and self.state.settings is not None

    def torque(self, command):
        """The observer's torque for the next message when it is the commanded one
        (``rules.torque_source``): ``command`` ((joint torques, monotonic receipt ns) of the
        latest commanded torque, or None)."""
        source, self._torque_note = torque_source(command, self.commanded_timeout)
        if source == TORQUE_GIVEN:
            self.data.state.command[:] = command[0]
        set_torque_source(self.data.struct, source)

    # -- one message --------------------------------------------------------------------------
    def step(self, names, position, velocity, effort, sec, nanosec, now_ns, base=None,
             command=None, christoffel=False):
        """One joint-state message as arrays (float64; ``velocity``/``effort`` may be empty)
        and its stamp (sec, nanosec): :meth:`step_message` of them (:func:`message_words`)."""
        words, fields = message_words(position, velocity, effort, sec, nanosec, len(names))
        return self.step_message(names, words, fields, now_ns, base, command, christoffel)

    def step_message(self, names, words, fields, now_ns, base=None, command=None,
                     christoffel=False):
        """One joint-state message: its ``names`` (a tuple; the same object for every message
        of one layout is recognized without a comparison) and its float64 ``words`` and int64
        ``fields`` as the compiled step takes them (cycle_kernel.MESSAGE_FIELDS; at least that
        many), received at ``now_ns`` (the node clock); ``base``: (q7, v6[, stamp_ns]) of a
        floating base's latest odometry, or None (the last given); ``command``: (joint
        torques, monotonic receipt ns) of the latest commanded torque or None;
        ``christoffel``: compute Gamma in this cycle.  Returns :attr:`outcome`."""
        if base is not None:
            self.odometry(*base)
        fields[M_NOW] = now_ns
        layout = self.use(names)
        if layout.duplicate is not None or layout.expand is not None:   # (names' verdicts)
            words, fields = self._expanded(layout, words, fields, now_ns)
            if words is None:
                return self._out
        if self.commanded:
            self.torque(command)
        code = cycle_step(self.cycle_model.struct, self.data.struct, Message(words, fields))
        return self.answered(code, fields, christoffel)

    def use(self, names):
        """The :class:`~.joint_input.Layout` of a message's ``names``, made the current one
        (the compiled step's ``data.gather``, ``data.record``) if it is not already."""
        layout = self._layout
        if layout is None or (layout.names is not names and layout.names != names):
            layout = self._layout = self.assembler.layout(names)
            use_layout(self.data.struct, layout.gather, layout.src.record,
                       self.assembler.drives(layout), layout.partial)
        return layout

    def fusable(self):
        """Whether the messages of the current layout need no Python before the compiled
        step (none of the names' verdicts: a joint named twice, mimic joints to expand): the
        node then reads and steps them in one compiled call."""
        layout = self._layout
        return layout is not None and layout.expand is None and layout.duplicate is None

    def answered(self, code, fields, christoffel=False):
        """:attr:`outcome` of the compiled step's ``code`` for the message of ``fields`` (the
        current layout's; ``christoffel``: Gamma in this cycle); a FREE answer without Gamma
        is answered by what the last usual cycle left (rules.FREE): nothing follows it."""
        if code == FREE and not christoffel:
            self._free.fields = fields
            self.outcome = self._free
            return self._free
        answer, note = split(code)
        out = self.outcome = self._out
        out.clear()
        out.answer, out.fields = answer, fields
        row = ANSWERS[answer]
        if note:                      # a source or clock reset: the observer restarts
            note, why_ = ANSWERS[note], self._why(fields)
            self.state.stepped_reset(note.says(why_))
            out.note(note.kind, note.line(why_), note.level)
        if row.verdict != REFUSED or answer in _RECORDED:
            self.assembler.accepted(self._layout)
        if row.verdict == CYCLE:
            return self._made(answer, christoffel)
        return self._not_made(row, fields)

    def _not_made(self, row, fields):
        """:attr:`outcome` of a message the compiled step made no cycle of: held (noted at
        its source's first message) or refused, with its reason; an accepted one's state the
        dynamics refuse or a non-finite result restarts the observer."""
        out, why = self._out, self._why(fields)
        if row.verdict == HELD:
            out.verdict = HELD
            if row.text:
                why.update(self.assembler.held_why(self._layout))
                out.note(row.kind, row.line(why), row.level)
            return out
        if row.code == INCOMPLETE:
            why.update(self.assembler.incomplete_why(self.data.held.stale))
        elif row.code == NONFINITE:
            self.state.refused_nonfinite(self.data)
        elif row.code == STATE:
            why['error'] = self.state.refused_state(self.data)
        return self._refuse(row, why)

    def _refuse(self, row, why):
        out = self.outcome = self._out
        out.verdict, out.result, out.tau = 'refused', None, None
        out.refusal = (row.kind, row.line(why), row.level)
        return out

    def _made(self, answer, christoffel):
        """:attr:`outcome` of a cycle the compiled step made (``answer``)."""
        out = self._out
        res = out.result = self.state.finish(self.data, answer, christoffel)
        if res.error is not None:
            self.data.counts[FOLLOW_UP] += 1
            return self._refuse(ANSWERS[FOLLOW_UP], {'error': res.error})
        out.verdict, out.written = CYCLE, self._written
        out.tau = self.data.state.tau if answer in _TORQUED else None
        if answer == NO_EFFORT:
            note = ANSWERS[NO_EFFORT if self._torque_note == PASS else self._torque_note]
            out.note(note.kind, note.line({}), note.level)
        elif answer == BRIDGED:
            row = ANSWERS[BRIDGED]
            out.note(row.kind, row.line(self._why(None)), row.level)
        return out

    def _why(self, fields):
        """The values the reasons' texts name (answers.Answer.says), of the message of
        ``fields`` (None: none of the message's) and of what the compiled step wrote about
        it."""
        joint, value, bound, last_ns, _, dt, gap = why(self.data.struct)
        inputs = self.cycle_model.inputs
        values = {'joint': self.model.joint_names[joint] if 0 <= joint < len(
            self.model.joint_names) else joint, 'value': value, 'bound': bound, 'dt': dt,
            'gap_limit': gap, 'odom_age': dt, 'odom_max_age': inputs.odom_max_age_ns / NS,
            'last': last_ns / NS, 'max_lead': inputs.max_lead_ns / NS,
            'reset_jump': inputs.reset_jump_ns / NS}
        if fields is not None:
            sec, nanosec = int(fields[M_SEC]), int(fields[M_NANOSEC])
            stamp = sec * NS + nanosec
            values.update(sec=sec, nanosec=nanosec, n=int(fields[M_NAMES]),
                          n_position=int(fields[M_N_POS]), n_velocity=int(fields[M_N_VEL]),
                          n_effort=int(fields[M_N_EFF]), back=(last_ns - stamp) / NS,
                          lead=(stamp - int(fields[M_NOW])) / NS)
        return values

    def _expanded(self, layout, words, fields, now_ns):
        """(words, fields) of a message of a layout whose names have a verdict of their own: a
        joint named twice (refused: (None, None), :attr:`outcome` says why) or the
        independent joints of ``mimic_reduced`` coordinates (expanded to the model's joints)."""
        f = [int(x) for x in fields[:MESSAGE_FIELDS]]
        arrays = [words[f[k]:f[k] + f[k + 1]] for k in (M_POS, M_VEL, M_EFF)]
        code = layout_verdict(f[M_NAMES], *(len(a) for a in arrays),
                              self.assembler.allow_missing_velocity)
        why_ = self._why(fields)
        if code == PASS and layout.duplicate is not None:
            code, why_ = DUPLICATE, {'joints': layout.duplicate}
        if code != PASS:
            self.data.counts[code] += 1
            self._out.clear()
            self._refuse(ANSWERS[code], why_)
            return None, None
        position, velocity, effort = self.assembler.expanded(layout, *arrays)
        words, fields = message_words(position, velocity, effort, f[M_SEC], f[M_NANOSEC],
                                      len(position))
        fields[M_NOW] = now_ns
        return words, fields


def _gap_max(observer):
    """The gap limit until the sample period is known (none without an observer)."""
    return np.inf if observer is None else float(observer.gap_max)


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


def output_buffer(nq, nv):
    """(buffer, :data:`~.cycle_data.OutputLayout`) for a cycle whose outputs are no messages:
    the slots (cycle_kernel.SLOTS) one after the other, no stamps."""
    sizes = [nv * nv if k in SQUARE_SLOTS else nq if k == SLOT_Q else nv
             for k in range(len(SLOTS))]
    slots = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    return np.zeros(int(sum(sizes))), OutputLayout(slots, np.zeros(0, dtype=np.int64))


def node_cycle(model, observer=None, coordinates='joint', bounds=None, **inputs):
    """The cycle object the node runs for ``model``: a :class:`JointStateCycle` with the
    observer settings ``observer`` (None: no observer), ``bounds`` (default the node's) and
    ``inputs`` (the assembler's settings), writing into a buffer of its own."""
    return JointStateCycle(model, coordinates, observer, bounds, **inputs)


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
