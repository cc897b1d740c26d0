"""The usual control cycle in one compiled call: joint-state arrays in, the cycle's messages out.

The rules of a cycle are those of the Python pipeline, :meth:`JointStateAssembler.add
<ros_dynamics.estimation.joint_input.JointStateAssembler.add>` then :meth:`Cycle.step
<ros_dynamics.estimation.cycle.Cycle.step>`, the reference.  :class:`FusedCycle` runs the same
rules for the usual case in one compiled call, :func:`fused_step`:

* the message has a name layout seen before, of the source that drives the cycles: one with
  every joint, or, when no source has them all, the one with the most (the others then come
  from their held values, recent enough; a robot whose arm and gripper publish apart);
* its stamp is normalized, not zero, not ahead of the receiving clock by more than the lead
  limit, and not earlier than that source's last one;
* its arrays have one value per name, efforts included when the observer needs them, and the
  gathered values are finite and within the input bounds;
* Algorithm 1 of Echeandia & Wensing (2021) and the momentum products (the core's ``terms``);
* when every joint has an effort, the observer (De Luca et al., 2006) takes its exact
  zero-order-hold step over a period no longer than the gap limit, and the residual stays
  below every contact threshold (free motion); else the cycle runs without it;
* every result is finite;

and then writes q, v, M, C, dM/dt, g, the gravity torque and the residual straight into the
output buffers the caller gave (the node's serialized messages, ros/wire.py).  Anything else,
and any joint state after which the pipeline is in another state (an observer that restarts, a
contact, a new source, a source reset), it declines before it has changed anything but the
cycle's state vectors and workspace (which the pipeline writes again), and the caller runs the
reference pipeline, which gives the verdict and its named reason.  So each rule is stated once, in the reference; the compiled call can be faster, not
different (test_fused_cycle compares the two on the same messages).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, types

from ..core.jit import depends_on_core, entry, ready
from ..core.kernels import MODEL, PRODUCTS, VEC, terms
from ..core.kinematics import tree, workspace
from . import observer as _observer
from .observer import BETA, FC, FV, GAIN, P, R, TAU, V, any_above, residual_step

depends_on_core(__file__, _observer.__file__)     # its kernel calls theirs: stale with them

NS = 1_000_000_000

#: fused_step's answers: OK (the cycle is done; the observer updated, if there is one) or
#: NO_EFFORT (done without the observer update: not every joint has an effort); otherwise why
#: it declined (DECLINED[code - 1])
OK, STAMP, INPUT, STATE, OBSERVER, GAP, CONTACT, NONFINITE, NO_EFFORT = range(9)
DECLINED = ('stamp', 'input', 'state', 'observer', 'gap', 'contact', 'nonfinite')

IDX = types.int64[::1]
ROWS = types.float64[:, ::1]
FLAGS = types.boolean[::1]


@entry(types.int64, MODEL, VEC, IDX, VEC, VEC, VEC, VEC, VEC, VEC, VEC, VEC, ROWS, IDX,
       FLAGS, FLAGS, ROWS, VEC, VEC, VEC, VEC, VEC, IDX, types.int64, types.int64, types.int64,
       types.int64, types.int64, types.int64, types.int64, types.float64, types.float64,
       types.float64, types.float64, cache=True, nogil=True)
def fused_step(model, work, gather, pos, vel, eff, q, v, tau, vbound, ebound, held, h_ns,
               h_known, h_effort, obs, obs_q, threshold, dyn, grav, ext, offsets, n_names, sec,
               nanosec, now_ns, last_ns, obs_last_ns, max_lead_ns, pbound, max_age_ns,
               gap_limit_s, eps):
    """One cycle (module text).  ``gather[k]``: where model joint k is in the message, or -1
    (a joint of another source: its held value, ``held`` rows q, v, effort, stamped
    ``h_ns``, ``h_known``, ``h_effort``, if at most ``max_age_ns`` from this stamp);
    ``q``, ``v``, ``tau``: the model's vectors, whose joint entries (the last
    ``gather.shape[0]``) it writes; ``obs``: the observer's state rows and ``obs_q`` its last
    q, or empty (no observer), updated when every joint has an effort (else the cycle runs
    without it, as the pipeline's); ``threshold`` the detector's; ``dyn``, ``grav``, ``ext``:
    output buffers and ``offsets`` where M, C, dM/dt, g go in ``dyn``, g in ``grav`` and the
    residual in ``ext``; ``last_ns`` the source's last stamp; ``obs_last_ns`` the time of the
    observer's last sample (< 0: it restarts or is in contact, which the pipeline does),
    ``gap_limit_s`` its gap limit, ``eps`` its Coulomb smoothing velocity.  Returns OK,
    NO_EFFORT or why it declined."""
    # the stamp policy (judge_stamp) of a source with a stamp: accepted without a reset
    stamp_ns = sec * NS + nanosec
    if nanosec >= NS or stamp_ns == 0 or stamp_ns < last_ns or last_ns <= 0:
        return STAMP
    if now_ns > 0 and stamp_ns - now_ns > max_lead_ns:
        return STAMP
    # one value per name; the message's values finite and within bounds (InputBounds), the
    # other joints held recently enough (JointStateAssembler: a partial driving source)
    nj = gather.shape[0]
    if pos.shape[0] != n_names or vel.shape[0] != n_names or (
            eff.shape[0] != n_names and eff.shape[0] != 0):
        return INPUT
    has_e = eff.shape[0] > 0
    all_e, partial = has_e, False
    for k in range(nj):
        i = gather[k]
        if i < 0:
            partial = True
            if not (h_known[k] and abs(h_ns[k] - stamp_ns) <= max_age_ns):
                return INPUT
            all_e = all_e and h_effort[k]
        elif not (abs(pos[i]) <= pbound and abs(vel[i]) <= vbound[k]
                  and (not has_e or abs(eff[i]) <= ebound[k])):
            return INPUT
    observer = obs.shape[0] > 0 and all_e
    if observer and obs_last_ns < 0:
        return OBSERVER
    bq, bv = q.shape[0] - nj, v.shape[0] - nj
    for k in range(nj):
        i = gather[k]
        if i >= 0:
            q[bq + k], v[bv + k] = pos[i], vel[i]
            if all_e:
                tau[bv + k] = eff[i]
        else:
            q[bq + k], v[bv + k] = held[0, k], held[1, k]
            if all_e:
                tau[bv + k] = held[2, k]
    # Algorithm 1 and the observer's products (q checked again: a floating base's pose)
    if terms(model, work, q, v, PRODUCTS) != 0:
        return STATE
    m = tree(model)
    w = workspace(m, work)
    nv = m.nv
    M, C, Mdot, g = w.M, w.C, w.Mdot, w.g
    saved = np.empty((V + 1 - R) * nv)      # r and the last sample, restored on a decline
    _rows(obs, saved, True)
    if observer:
        dt = (stamp_ns - obs_last_ns) / NS    # Cycle._observer_step: an update, not a restart
        if not (0.0 < dt <= gap_limit_s):
            return GAP
        tf = np.empty(nv)                    # friction_torque (observer.py)
        for i in range(nv):
            vi = v[i]
            tf[i] = obs[FV, i] * vi + obs[FC, i] * math.tanh(vi / eps)
        residual_step(obs[R], obs[GAIN], dt, obs[P], obs[BETA], obs[TAU], w.p, w.ctv, g, tf,
                       tau, False)
        r = obs[R]
        if any_above(r, threshold):
            _rows(obs, saved, False)
            return CONTACT
    s = 0.0                                    # finite iff every term is (NaN, inf propagate)
    for i in range(nv):
        s += g[i] + (obs[R, i] if observer else 0.0)
        for j in range(nv):
            s += M[i, j] + C[i, j] + Mdot[i, j]
    if not math.isfinite(s):
        if observer:
            _rows(obs, saved, False)
        return NONFINITE
    if observer:
        for i in range(nv):
            obs[V, i] = v[i]
            ext[offsets[5] + i] = obs[R, i]
        for i in range(q.shape[0]):
            obs_q[i] = q[i]
    if partial:                    # every message of a partial source is held
        for k in range(nj):
            i = gather[k]
            if i >= 0:
                held[0, k], held[1, k] = pos[i], vel[i]
                if has_e:
                    held[2, k] = eff[i]
                h_ns[k], h_known[k], h_effort[k] = stamp_ns, True, has_e
    oM, oC, oD, og, oG = offsets[0], offsets[1], offsets[2], offsets[3], offsets[4]
    for i in range(nv):
        for j in range(nv):
            k = i * nv + j
            dyn[oM + k], dyn[oC + k], dyn[oD + k] = M[i, j], C[i, j], Mdot[i, j]
        dyn[og + i] = g[i]
        grav[oG + i] = g[i]
    return OK if observer or obs.shape[0] == 0 else NO_EFFORT


@njit(cache=True, nogil=True, inline='always')
def _rows(obs, saved, save):
    """Rows R..V of the observer's state into ``saved`` (save) or back (restore)."""
    n = obs.shape[1]
    for a in range(R, V + 1):
        for i in range(n):
            if save:
                saved[(a - R) * n + i] = obs[a, i]
            else:
                obs[a, i] = saved[(a - R) * n + i]


class FusedCycle:
    """The usual cycle of an assembler and a :class:`Cycle` in one compiled call (module text).

    ``q``, ``v``, ``tau``: the model's state and torque vectors the cycle runs on (the joint
    entries are gathered into them; a floating base's entries are the caller's); ``outputs``:
    (dyn, grav, ext, offsets) for :func:`fused_step`.  :meth:`step` returns True when the
    message made a cycle (its results in ``cycle.result``, the outputs written), False when it
    declined (nothing changed: run the reference pipeline).  ``counts`` per answer of
    :func:`fused_step` (indexed by its codes); ``not_tried``: messages it left to the pipeline
    without a call (a new layout or source, a source that does not drive the cycles)."""

    def __init__(self, assembler, cycle, q, v, tau, outputs):
        if not cycle.coords.identity:
            raise ValueError('the fused cycle publishes the model\'s own coordinates only')
        self.assembler, self.cycle = assembler, cycle
        self.q, self.v, self.tau = q, v, tau
        self.dyn, self.grav, self.ext, self.offsets = outputs
        model = cycle.model
        self._model = (model.packed, cycle.data.work)
        obs = cycle.observer
        self._obs = (obs.state, obs.last_q) if obs else (np.zeros((0, 0)), np.zeros(0))
        self._no_threshold = np.zeros(0)
        b = assembler.bounds
        self._bounds = (b.velocity, b.effort)
        self._pbound = float(b.position)
        self._eps = obs.friction_velocity_eps if obs else 1.0
        self.counts = np.zeros(NO_EFFORT + 1, dtype=np.int64)
        self.not_tried = 0
        self.stamp_ns = 0

    @staticmethod
    def compile():
        """Compile (or load from the disk cache) the kernels of :meth:`step`."""
        ready(terms), ready(residual_step), ready(any_above)
        ready(fused_step)

    @property
    def cycles(self):
        """The cycles it made (with and without the observer update)."""
        return int(self.counts[OK] + self.counts[NO_EFFORT])

    def step(self, names, position, velocity, effort, sec, nanosec, now_ns, christoffel=False):
        """One joint-state message (as for ``assembler.add``; float64 C-contiguous arrays);
        True if it made a cycle here (``christoffel``: with Gamma), stamped :attr:`stamp_ns`."""
        asm, cycle = self.assembler, self.cycle
        src = asm.fused_source(names)
        if src is None:
            self.not_tried += 1
            return False
        gather, last_ns = src
        obs_last_ns = cycle.fused_time
        packed, work = self._model
        state, last_q = self._obs
        threshold = self._no_threshold if cycle.detector is None else cycle.detector.threshold
        vb, eb = self._bounds
        try:
            status = fused_step(packed, work, gather, position, velocity, effort, self.q,
                                self.v, self.tau, vb, eb, asm.held, asm.h_ns, asm.h_known,
                                asm.h_effort, state, last_q, threshold, self.dyn, self.grav,
                                self.ext, self.offsets, len(names), sec, nanosec, now_ns,
                                last_ns, obs_last_ns, asm.max_lead_ns, self._pbound,
                                asm.max_age * NS, cycle.gap_limit, self._eps)
        except TypeError:        # other array types (e.g. read-only): the pipeline converts
            return False
        self.counts[status] += 1
        if status != OK and status != NO_EFFORT:
            return False
        self.stamp_ns = stamp_ns = sec * NS + nanosec
        asm.fused_accepted(stamp_ns)
        observed = status == OK and cycle.observer is not None
        cycle.fused_done(self.q, self.v, stamp_ns, (stamp_ns - obs_last_ns) / NS, observed,
                         christoffel)
        return True
