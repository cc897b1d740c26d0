"""The cycle's Model and Data: what is constant for a model, and what a cycle reads and writes.

As Pinocchio's ``Model`` / ``Data`` and ``algo(model, data, q, v)``: the compiled step is
``cycle_step(model, data, message)``
(:func:`~ros_dynamics.estimation.cycle_kernel.cycle_step`).

* :class:`CycleModel` (constant per model and settings): the core's model, the input policy's
  limits and bounds (``inputs``), the observer's gains, friction, contact thresholds and gap
  settings (``observer``), and where the step writes its results (``outputs``: the output
  layout, an offset per slot of :data:`~ros_dynamics.estimation.cycle_kernel.SLOTS`);
* :class:`CycleData` (allocated once per model): the core's workspace; the state the cycles
  run on and the latest odometry and commanded torque (``state``); the held values of partial
  sources (``held``); the observer's last sample and residual (``observer``); what a cycle
  keeps (``kept``: the sample periods, the latest state for the services, the recent samples
  for ``~/estimate_payload``); the output buffer the step writes (``outputs``); the count of
  each answer (``counts``); and, as scalars of the compiled structure, the observer's timing,
  the latest stamp, the current layout and source, and what the step found wrong with the last
  message it refused (``why_*``: the reasons' values).

Each is one ``numba.experimental.structref`` passed as one argument (one pointer: numba's
dispatch unboxes nothing else), holding named tuples of arrays grouped by concern; Python keeps
the same named tuples (the same arrays), so both read every field by name: ``data.held.known``
in Python and in compiled code.  The scalars live in the compiled structure only: the step
writes them, and Python reads or sets them through the small compiled functions below
(:func:`timing`, :func:`latest_into`, :func:`restart_observer`, ...), each loaded from the disk
cache like every kernel.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import types
from numba.experimental import structref

from ..core.configuration import base_nq, base_nv
from ..core.jit import depends_on_core, entry, ready
from ..core.kernels import MODEL
from .answers import NOTE_SHIFT
from .rules import FRICTION_EPS, THRESHOLD_ROWS, TORQUE_MESSAGE

depends_on_core(__file__)

VEC = types.float64[::1]
ROWS = types.float64[:, ::1]
IDX = types.int64[::1]
FLAGS = types.boolean[::1]
i64, f64, b1 = types.int64, types.float64, types.boolean

PERIOD_WINDOW = 64               # the sample periods of the gap limit (rules.gap_limit)
HISTORY_LENGTH = 2000            # the recent samples kept for ~/estimate_payload: the last 20 s
HISTORY_PERIOD_NS = 10_000_000   # ... one per 10 ms


def _fields(name, table):
    """(named tuple class, its numba type) of ``table``: (field, numba type) pairs."""
    cls = namedtuple(name, [f for f, _ in table])
    kinds = tuple(t for _, t in table)
    if len(set(kinds)) == 1:            # (what numba's typeof makes of a uniform one)
        return cls, types.NamedUniTuple(kinds[0], len(kinds), cls)
    return cls, types.NamedTuple(kinds, cls)


# -- the model ---------------------------------------------------------------------------------
#: the input policy (docs/input_policy.md): stamp limits [ns], the odometry's age, whether a
#: message may carry no velocity, the joints' position bound and velocity and effort bounds
Inputs, INPUTS = _fields('Inputs', (
    ('max_lead_ns', i64), ('max_age_ns', i64), ('reset_jump_ns', i64), ('odom_max_age_ns', i64),
    ('allow_missing_velocity', b1), ('pbound', f64), ('vbound', VEC), ('ebound', VEC)))
#: the observer (De Luca et al. 2006; ``on``: there is one): its gain, joint friction and torque
#: offset per coordinate, the friction's smoothing velocity, the contact thresholds (rows of
#: rules.THRESHOLD_BASE ...) and the gap limit's bounds and factor
ObserverModel, OBSERVER_MODEL = _fields('ObserverModel', (
    ('on', b1), ('gain', VEC), ('fv', VEC), ('fc', VEC), ('fo', VEC), ('eps', f64),
    ('thresholds', THRESHOLD_ROWS), ('gap_min', f64), ('gap_max', f64), ('gap_factor', f64)))
#: where the step writes its results in ``CycleData.outputs``: the offset of each slot
#: (cycle_kernel.SLOTS) and the offsets of the stamps to write (int32 sec, uint32 nanosec: a
#: message's header.stamp; none for buffers that are no messages)
OutputLayout, OUTPUT_LAYOUT = _fields('OutputLayout', (('slots', IDX), ('stamps', IDX)))


@structref.register
class CycleModelType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((n, types.unliteral(t)) for n, t in fields)


class CycleModelStruct(structref.StructRefProxy):
    """The compiled structure of a :class:`CycleModel` (an argument, never read in Python)."""


structref.define_boxing(CycleModelType, CycleModelStruct)
CYCLE_MODEL = CycleModelType((
    ('core', MODEL), ('nq', i64), ('nv', i64), ('nj', i64), ('floating', b1),
    ('inputs', INPUTS), ('observer', OBSERVER_MODEL), ('outputs', OUTPUT_LAYOUT)))


@entry(CYCLE_MODEL, MODEL, i64, i64, i64, b1, INPUTS, OBSERVER_MODEL, OUTPUT_LAYOUT, cache=True)
def _model_struct(core, nq, nv, nj, floating, inputs, observer, outputs):
    m = structref.new(CYCLE_MODEL)
    m.core, m.nq, m.nv, m.nj, m.floating = core, nq, nv, nj, floating
    m.inputs, m.observer, m.outputs = inputs, observer, outputs
    return m


class CycleModel:
    """What is constant for one model and its settings (module text): ``inputs``,
    ``observer``, ``outputs`` (named tuples) and ``struct`` (the compiled structure)."""

    __slots__ = ('model', 'inputs', 'observer', 'outputs', 'struct')

    def __init__(self, model, inputs, observer, outputs):
        self.model, self.inputs, self.observer, self.outputs = model, inputs, observer, outputs
        nq, nv = int(model.nq), int(model.nv)
        self.struct = ready(_model_struct)(model.packed, nq, nv, nv - base_nv(model),
                                    bool(model.floating_base), inputs, observer, outputs)


def observer_model(model, settings, thresholds):
    """The :data:`ObserverModel` of ``settings`` (an ``ObserverSettings`` of
    estimation/cycle_state.py, or None: no observer) with the contact detector's
    ``thresholds`` (its rows, the same array: one threshold for both)."""
    nv = int(model.nv)
    if settings is None:
        z = np.zeros(nv)
        return ObserverModel(False, np.ones(nv), z, z, z, 1.0, np.zeros((3, nv)), 0.0, np.inf,
                             1.0)
    return ObserverModel(True, settings.gain.copy(), settings.friction_viscous.copy(),
                         settings.friction_coulomb.copy(), settings.torque_offset.copy(),
                         FRICTION_EPS, thresholds, float(settings.gap_min),
                         float(settings.gap_max), float(settings.gap_factor))


# -- the data ----------------------------------------------------------------------------------
#: the state the cycles run on (q, v, tau of the model: the joints gathered into their last
#: entries), a commanded torque per joint, and the latest odometry of a floating base (pose
#: q7, twist v6)
State, STATE = _fields('State', (
    ('q', VEC), ('v', VEC), ('tau', VEC), ('command', VEC), ('base_q', VEC), ('base_v', VEC)))
#: the held values of partial sources, per model joint: rows q, v, effort; their stamps [ns];
#: known; with an effort; and which were missing or too old at the last message (the
#: reason of INCOMPLETE)
Held, HELD = _fields('Held', (
    ('values', ROWS), ('stamps', IDX), ('known', FLAGS), ('effort', FLAGS), ('stale', FLAGS)))
#: the momentum observer's state (De Luca et al. 2006): the residual r, and at its last sample
#: p = M v, beta = C^T v - g - tau_f, the torque, v and q; ``free_peak``: the largest |r_i| of
#: the free-motion updates (rules.FREE) since /diagnostics last read it (and cleared it)
ObserverState, OBSERVER_STATE = _fields('ObserverState', (
    ('r', VEC), ('p', VEC), ('beta', VEC), ('tau', VEC), ('v', VEC), ('q', VEC),
    ('free_peak', VEC)))
#: what a cycle keeps: the recent regular sample periods [s] (the gap limit), the latest
#: state (the services'), the recent samples with the observer's torque (t [s], q, v, tau;
#: rows: samples, a ring) for ~/estimate_payload
Kept, KEPT = _fields('Kept', (
    ('periods', VEC), ('latest_q', VEC), ('latest_v', VEC), ('history_t', VEC),
    ('history_q', ROWS), ('history_v', ROWS), ('history_tau', ROWS)))


@structref.register
class CycleDataType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((n, types.unliteral(t)) for n, t in fields)


class CycleDataStruct(structref.StructRefProxy):
    """The compiled structure of a :class:`CycleData` (an argument, never read in Python)."""


structref.define_boxing(CycleDataType, CycleDataStruct)
CYCLE_DATA = CycleDataType((
    ('work', VEC), ('state', STATE), ('held', HELD), ('observer', OBSERVER_STATE),
    ('kept', KEPT), ('outputs', VEC), ('counts', IDX),
    # the current layout (set by use_layout): per model joint its index in the message or -1
    # (a held value), its source's record (rules.S_LAST_NS ...), whether that source drives the
    # cycles, whether it lacks joints (a partial source)
    ('gather', IDX), ('record', IDX), ('drives', b1), ('partial', b1),
    # the receiving clock's jumps back (clock_jumped); the odometry: received, its stamp [ns];
    # the observer's torque (rules.TORQUE_MESSAGE ...); the free-motion flag (rules.FREE)
    ('epoch', i64), ('base_known', b1), ('base_ns', i64), ('torque_source', i64),
    ('usual', b1),
    # the observer's timing: its last sample [ns] (-1: it (re)starts at the next update), the
    # gap limit [s], the latest period [s], the regular periods recorded
    ('obs_last_ns', i64), ('gap_limit', f64), ('last_dt', f64), ('n_periods', i64),
    # the latest cycle: how many, its stamp, its time [ns] (the stamp, or the receiving clock
    # for an unstamped source); the recent samples: when the next is due [ns], how many
    ('n_latest', i64), ('latest_sec', i64), ('latest_nanosec', i64), ('latest_ns', i64),
    ('history_next', i64), ('history_count', i64),
    # the values of the last reasons: the joint and value beyond its bound and the bound, the
    # source's last stamp before the message [ns], the gap or the odometry's age [s]
    ('why_joint', i64), ('why_value', f64), ('why_bound', f64), ('why_last_ns', i64),
    ('why_dt', f64)))


@entry(CYCLE_DATA, VEC, STATE, HELD, OBSERVER_STATE, KEPT, VEC, IDX, f64, cache=True)
def _data_struct(work, state, held, observer, kept, outputs, counts, gap_max):
    d = structref.new(CYCLE_DATA)
    d.work, d.state, d.held, d.observer, d.kept = work, state, held, observer, kept
    d.outputs, d.counts = outputs, counts
    d.gather, d.record = np.zeros(0, np.int64), np.zeros(0, np.int64)
    d.drives, d.partial, d.base_known, d.usual = False, False, False, False
    d.epoch, d.base_ns, d.n_periods, d.n_latest, d.history_next = 0, 0, 0, 0, 0
    d.history_count, d.latest_sec, d.latest_nanosec, d.latest_ns = 0, 0, 0, 0
    d.why_joint, d.why_last_ns = 0, 0
    d.torque_source = TORQUE_MESSAGE
    d.obs_last_ns = -1
    d.gap_limit = gap_max                 # until the sample period is known
    d.last_dt, d.why_value, d.why_bound, d.why_dt = 0.0, 0.0, 0.0, 0.0
    return d


class CycleData:
    """What the cycles of one model read and write (module text), allocated once: the named
    tuples ``state``, ``held``, ``observer``, ``kept``, the arrays ``work`` (the core's
    workspace, a ``Data``'s), ``outputs`` (the output buffer), ``counts`` (per answer), and
    ``struct`` (the compiled structure holding the same arrays and the scalars)."""

    __slots__ = ('work', 'state', 'held', 'observer', 'kept', 'outputs', 'counts', 'struct')

    def __init__(self, model, work, outputs, gap_max):
        nq, nv = int(model.nq), int(model.nv)
        nj, n = nv - base_nv(model), HISTORY_LENGTH
        q = np.zeros(nq)
        if model.floating_base:
            q[6] = 1.0
        self.work, self.outputs = work, outputs
        self.counts = np.zeros(1 << NOTE_SHIFT, dtype=np.int64)   # (every code fits)
        self.state = State(q, np.zeros(nv), np.zeros(nv), np.zeros(nj),
                           np.zeros(base_nq(model)), np.zeros(base_nv(model)))
        self.held = Held(np.zeros((3, nj)), np.zeros(nj, np.int64), *(
            np.zeros(nj, dtype=bool) for _ in range(3)))
        self.observer = ObserverState(*(np.zeros(nv) for _ in range(5)), np.zeros(nq),
                                      np.zeros(nv))
        self.kept = Kept(np.zeros(PERIOD_WINDOW), np.zeros(nq), np.zeros(nv), np.zeros(n),
                         np.zeros((n, nq)), np.zeros((n, nv)), np.zeros((n, nv)))
        self.struct = ready(_data_struct)(work, self.state, self.held, self.observer, self.kept,
                                   outputs, self.counts, float(gap_max))


# -- what Python reads and sets of the scalars ---------------------------------------------------
@entry(types.void, CYCLE_DATA, IDX, IDX, b1, b1, cache=True)
def use_layout(data, gather, record, drives, partial):
    """The messages from now on are of this layout (``gather``), from the source of
    ``record``, which ``drives`` the cycles or not, ``partial`` or not."""
    data.gather, data.record, data.drives, data.partial = gather, record, drives, partial


@entry(types.void, CYCLE_DATA, VEC, VEC, i64, cache=True)
def set_base(data, q7, v6, stamp_ns):
    """The latest odometry of a floating base: its pose, twist and stamp [ns]."""
    data.state.base_q[:] = q7
    data.state.base_v[:] = v6
    data.base_ns, data.base_known = stamp_ns, True


@entry(types.void, CYCLE_DATA, i64, cache=True)
def set_torque_source(data, source):
    """The observer's torque for the next messages (rules.TORQUE_MESSAGE, TORQUE_GIVEN: the
    row ``state.command``, TORQUE_NONE)."""
    data.torque_source = source


@entry(types.void, CYCLE_DATA, b1, cache=True)
def set_usual(data, usual):
    """The free-motion flag (rules.FREE)."""
    data.usual = usual


@entry(types.void, CYCLE_DATA, cache=True)
def restart_observer(data):
    """The observer restarts at the next cycle that updates it; the free-motion flag off."""
    data.obs_last_ns = -1
    data.usual = False


@entry(types.void, CYCLE_DATA, f64, cache=True)
def restart_timing(data, gap_max):
    """The sample periods forgotten, the gap limit ``gap_max`` until they are known again (new
    gap settings)."""
    data.n_periods = 0
    data.gap_limit = gap_max


@entry(types.void, CYCLE_DATA, cache=True)
def clock_jumped(data):
    """The receiving clock jumped back (simulated time reset): each source's next stamp that
    goes back is a reset, accepted (rules.CLOCK_RESET)."""
    data.epoch += 1


@entry(types.UniTuple(i64, 4), CYCLE_DATA, cache=True)
def latest_stamp(data):
    """(cycles made, sec, nanosec of the latest, recent samples recorded)."""
    return data.n_latest, data.latest_sec, data.latest_nanosec, data.history_count


@entry(types.UniTuple(i64, 3), CYCLE_DATA, VEC, VEC, cache=True)
def latest_into(data, q, v):
    """q, v <- the latest cycle's state; returns (cycles made, sec, nanosec).  One compiled
    call: it holds the GIL, as the compiled step does, so that a service thread reads one
    cycle's state, never half of two."""
    q[:] = data.kept.latest_q
    v[:] = data.kept.latest_v
    return data.n_latest, data.latest_sec, data.latest_nanosec


@entry(types.Tuple((i64, f64, f64, i64, i64, f64, f64)), CYCLE_DATA, cache=True)
def why(data):
    """The values of the last reasons: (joint, value, bound, the source's last stamp before
    the message [ns], the epoch, the gap or odometry age [s], the gap limit [s])."""
    return (data.why_joint, data.why_value, data.why_bound, data.why_last_ns, data.epoch,
            data.why_dt, data.gap_limit)


@entry(types.Tuple((f64, f64, i64)), CYCLE_DATA, cache=True)
def timing(data):
    """(the latest observer period [s], the gap limit [s], the latest cycle's time [ns])."""
    return data.last_dt, data.gap_limit, data.latest_ns


def compile_data():
    """The compiled functions above, loaded (or compiled once into the disk cache)."""
    for kernel in (_model_struct, _data_struct, use_layout, set_base, set_torque_source,
                   set_usual, restart_observer, restart_timing, clock_jumped, latest_stamp,
                   latest_into, why, timing):
        ready(kernel)
