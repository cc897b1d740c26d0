"""Joint measurements in, one complete and checked state out (no ROS).

What every consumer of joint-state messages needs, in one place: the map from a message's
name list to the model's joints (:class:`JointNameMap`), the bounds an accepted input must
respect (:class:`InputBounds`, the rule ``rules.bound_violation``), and the sources that each
publish some of the joints (:class:`JointStateAssembler`: the compiled cycle assembles one state
from them and the held values of the others, ``CycleData.held``).

Assembly policy (docs/ros_interface.md, "Joint-state assembly"):

* a *source* is the set of model joints a message carries (an arm driver, a gripper driver);
  its stamps are judged against its own history only, so a source that trails another by a
  few milliseconds is never "out of order";
* the *driving* source is the one carrying the most of the model's joints (a source with all
  of them always drives); each of its messages makes one cycle, stamped with its stamp;
* joints it does not carry are taken from the latest message of the source that does, if that
  value is at most ``max_age`` seconds older (or newer) than the cycle's stamp; otherwise the
  state is incomplete and no cycle runs (the missing joints and their last source are
  reported);
* messages of other sources only update the held values: they never make a cycle and never
  restart the observer.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.jit import ready
from .answers import ANSWERS, REFUSED
from .rules import (NO_STAMP, NS, PASS, S_EPOCH, S_FIELDS, S_LAST_NS, S_MESSAGES,
                    bound_violation, layout_verdict)

_NO_EFFORT = np.zeros(0)

#: a required joint named more than once in a message (its names' verdict: Python maps names)
DUPLICATE = ANSWERS.add('duplicate', REFUSED, 'warning', 'required joint(s) named more than '
                        'once: {joints}', 'joint_states rejected')


class JointNameMap:
    """Index map from one message layout (its name list) to the model's joints.

    ``mimic`` (independent joint names, E, offset), for ``mimic_reduced`` coordinates, also
    accepts a layout with the independent joints only: the followers then come from the mimic
    relation q_joints = E q_ind + offset, v_joints = E v_ind, and efforts go to the independent
    joints with zero on the followers, so that A^T tau equals the given efforts.

    ``error`` is None when the layout carries every required joint exactly once; else it says
    which are missing or repeated.  ``present`` marks the model joints the layout carries.
    """

    __slots__ = ('names', 'index', 'error', 'unknown', 'expand', 'present', 'slots', 'gather',
                 'repeated')

    def __init__(self, names, joint_names, mimic=None, hint=''):
        self.names = tuple(names)
        joint_names = list(joint_names)
        self.index = None
        self.error = None
        self.expand = None
        pos, dup = {}, set()
        for i, nm in enumerate(self.names):
            if nm in pos:
                dup.add(nm)
            else:
                pos[nm] = i
        known = set(joint_names)
        self.unknown = [nm for nm in pos if nm not in known]
        self.present = np.array([j in pos for j in joint_names], dtype=bool)
        # for partial layouts: (model joint indices, message indices) of the joints it carries
        carried = [k for k, j in enumerate(joint_names) if j in pos and j not in dup]
        self.slots = (np.array(carried, dtype=np.intp),
                      np.array([pos[joint_names[k]] for k in carried], dtype=np.intp))
        # per model joint, its position in the message or -1 (the compiled cycle's map)
        self.gather = np.full(len(joint_names), -1, dtype=np.int64)
        self.gather[self.slots[0]] = self.slots[1]
        missing = [j for j in joint_names if j not in pos]
        required = joint_names
        if missing and mimic is not None:
            independent, E, offset = mimic
            missing = [j for j in independent if j not in pos]
            if missing:
                hint = ' (the independent joints; the mimic joints may be left out)'
            else:
                required = list(independent)
                self.expand = (E, offset, np.array([joint_names.index(j) for j in independent],
                                                   dtype=np.intp))
        dups = self.repeated = [j for j in required if j in dup]
        if missing:
            self.error = f'missing required joint(s) {missing}{hint}'
        elif dups:
            self.error = f'required joint(s) named more than once: {dups}'
        else:
            self.index = np.array([pos[j] for j in required], dtype=np.intp)

    def positions(self, x, out):
        """The model's joint positions from a message's ``x`` (float64) into ``out``."""
        if self.expand is None:
            np.take(x, self.index, out=out)
        else:
            E, offset, _ = self.expand
            np.dot(E, x[self.index], out=out)
            out += offset

    def rates(self, x, out):
        """The model's joint rates from a message's ``x`` into ``out``."""
        if self.expand is None:
            np.take(x, self.index, out=out)
        else:
            np.dot(self.expand[0], x[self.index], out=out)

    def efforts(self, x, out):
        """The model's joint efforts from ``x`` into ``out`` (followers 0 with independent
        joints only)."""
        if self.expand is None:
            np.take(x, self.index, out=out)
        else:
            out[:] = 0.0
            out[self.expand[2]] = x[self.index]


class NameMaps:
    """The :class:`JointNameMap` of each message layout (name list), built once and cached;
    a consumer sees a few layouts, so the cache is simply cleared past ``size`` of them."""

    def __init__(self, joint_names, mimic=None, hint='', size=16):
        self.joint_names, self.mimic, self.hint, self.size = list(joint_names), mimic, hint, size
        self._maps = {}

    def __call__(self, names):
        key = tuple(names)
        nmap = self._maps.get(key)
        if nmap is None:
            if len(self._maps) >= self.size:
                self._maps.clear()
            nmap = self._maps[key] = JointNameMap(key, self.joint_names, self.mimic, self.hint)
        return nmap

    def efforts(self, names, effort):
        """The joint torques (nj,) of efforts given by ``names`` (an effort command); ValueError
        with the reason when the two lists differ in length or the names do not map."""
        if len(effort) != len(names):
            raise ValueError(f'{len(effort)} efforts for {len(names)} names')
        nmap = self(names)
        if nmap.error:
            raise ValueError(nmap.error)
        tau = np.empty(len(self.joint_names))
        nmap.efforts(np.asarray(effort, dtype=float), tau)
        return tau


def joint_limits(model, key, default, factor=1.0):
    """Per joint ``factor`` x the URDF limit ``key`` ('velocity', 'effort'), ``default`` where
    the URDF gives none, zero or a non-finite value."""
    limits = model.joint_limits or {}
    out = np.empty(len(model.joint_names))
    for i, j in enumerate(model.joint_names):
        value = (limits.get(j) or {}).get(key)
        out[i] = value if value is not None and math.isfinite(value) and value > 0 else default
    return out * factor


class InputBounds:
    """Bounds of accepted joint inputs: |position| <= max_abs_position, |velocity| and |effort|
    <= input_limit_factor x the URDF limits (defaults where the URDF gives none)."""

    def __init__(self, model, input_limit_factor=2.0, default_velocity_limit=100.0,
                 default_effort_limit=1e4, max_abs_position=1e6):
        self.joint_names = list(model.joint_names)
        self.position = float(max_abs_position)
        self.velocity = joint_limits(model, 'velocity', default_velocity_limit, input_limit_factor)
        self.effort = joint_limits(model, 'effort', default_effort_limit, input_limit_factor)

    def violation(self, q, v, e=None, joints=None):
        """None if the joint vectors are finite and within bounds; else (kind, reason) of the
        first offence (``rules.bound_violation``; kinds: nonfinite, position, velocity,
        effort).  ``joints``: the model joint indices the vectors hold (default all, in model
        order)."""
        joints = np.arange(len(q), dtype=np.int64) if joints is None else np.asarray(
            joints, dtype=np.int64)
        code, k, value, bound = ready(bound_violation)(
            np.ascontiguousarray(q, dtype=float), np.ascontiguousarray(v, dtype=float),
            _NO_EFFORT if e is None else np.ascontiguousarray(e, dtype=float), joints,
            self.position, self.velocity, self.effort)
        if code == PASS:
            return None
        answer = ANSWERS[code]
        return answer.kind, answer.says(
            {'joint': self.joint_names[int(joints[k])], 'value': value, 'bound': bound})


def layout_error(n, n_position, n_velocity, n_effort, allow_missing_velocity=False):
    """None if a message's arrays fit its ``n`` names
    (:func:`~ros_dynamics.estimation.rules.layout_verdict`), else (kind, reason)."""
    code = layout_verdict(n, n_position, n_velocity, n_effort, allow_missing_velocity)
    if code == PASS:
        return None
    answer = ANSWERS[code]
    return answer.kind, answer.says({'n': n, 'n_position': n_position,
                                     'n_velocity': n_velocity, 'n_effort': n_effort})


class Source:
    """One source of joint states (the assembler keys it by the model joints it carries): the
    names of its first message, how many of the model's joints it carries (``count``), and
    its ``record`` (rules.S_LAST_NS ...: the compiled cycle records there what it accepted):
    its last accepted stamp (:attr:`last_ns`; NO_STAMP: none yet), its :attr:`messages`, the
    receiving clock's epoch at its last reset."""
    __slots__ = ('names', 'count', 'record')

    def __init__(self, names, count):
        self.names, self.count = list(names), count
        self.record = np.zeros(S_FIELDS, dtype=np.int64)
        self.record[S_LAST_NS] = NO_STAMP

    @property
    def last_ns(self):
        return int(self.record[S_LAST_NS])

    @property
    def messages(self):
        return int(self.record[S_MESSAGES])

    @property
    def epoch(self):
        return int(self.record[S_EPOCH])


class Layout:
    """One message layout (name list) as the compiled cycle takes it: its source, ``gather``
    (per model joint, its index in the message or -1: a held value), ``expand`` (mimic_reduced
    coordinates with the independent joints only: the :class:`JointNameMap` that expands them;
    the cycle is then given the expanded joints, ``gather`` 0..n-1) and ``duplicate`` (the
    required joints named more than once, or None: refused)."""
    __slots__ = ('names', 'nmap', 'src', 'gather', 'expand', 'duplicate', 'partial')

    def __init__(self, nmap, src):
        self.names, self.nmap, self.src = nmap.names, nmap, src
        self.partial = nmap.error is not None
        self.duplicate = (nmap.repeated if self.partial and not nmap.error.startswith('missing')
                          else None)
        self.expand = nmap if nmap.expand is not None else None
        self.gather = (np.arange(len(nmap.present), dtype=np.int64) if self.expand is not None
                       else nmap.gather)


class JointStateAssembler:
    """The sources of joint states, for the compiled cycle (module text).

    Python does here what needs the names: :meth:`layout` maps a message's names to the model's
    joints and registers its source (keyed by the joints it carries: unknown extra names or
    another order are the same source); the compiled cycle judges the message against its
    source (its last stamp, whether it drives the cycles), gathers the joints, holds a partial
    source's values (``CycleData.held``; :attr:`h_source`: the source of each, kept here) and
    returns an answer; the names its reasons need are here (:meth:`held_why`,
    :meth:`incomplete_why`).  A refused message changes nothing.
    """

    def __init__(self, joint_names, bounds, mimic=None, hint='', max_age=0.5, max_lead=1.0,
                 reset_jump=1.0, allow_missing_velocity=False, max_sources=16):
        self.joint_names = list(joint_names)
        self.names = tuple(self.joint_names)        # a message of every joint, in model order
        n = len(self.joint_names)
        self.bounds, self.mimic, self.hint = bounds, mimic, hint
        self.max_age = float(max_age)          # s (in the reasons); the rules take ns
        self.max_age_ns = int(round(self.max_age * NS))
        self.max_lead_ns = int(round(max_lead * NS))
        self.reset_jump_ns = int(round(reset_jump * NS))
        self.allow_missing_velocity = bool(allow_missing_velocity)
        self.max_sources = max_sources
        self.h_source = [None] * n     # the source of each held value
        self._sources = {}          # key (model joints carried) -> Source
        self._layouts = {}          # name tuple -> Layout
        self.driving = 0            # joints carried by the driving source
        # a mimic layout's joints, expanded (the arrays the compiled cycle is given)
        self._expanded = (np.zeros(n), np.zeros(n), np.zeros(n))

    # -- sources ------------------------------------------------------------------------
    def layout(self, names):
        """The :class:`Layout` of a message's name list, registered at its first message."""
        key = names if type(names) is tuple else tuple(names)
        layout = self._layouts.get(key)
        if layout is None:
            nmap = JointNameMap(key, self.joint_names, self.mimic, self.hint)
            complete = nmap.error is None
            skey = 'all' if complete else tuple(np.flatnonzero(nmap.present))
            src = self._sources.get(skey)
            if src is None:
                if len(self._sources) >= self.max_sources:   # forget the oldest partial one
                    old = next((k for k, s in self._sources.items() if s.count < self.driving),
                               next(iter(self._sources)))
                    del self._sources[old]
                src = Source(nmap.names, len(nmap.present) if complete
                             else int(nmap.present.sum()))
                self._sources[skey] = src
                self.driving = max(self.driving, src.count)
            if len(self._layouts) >= 4 * self.max_sources:
                self._layouts.clear()
            layout = self._layouts[key] = Layout(nmap, src)
        return layout

    def drives(self, layout):
        """Whether the source of ``layout`` drives the cycles (it carries the most joints)."""
        return layout.src.count >= self.driving

    def expanded(self, layout, position, velocity, effort):
        """The model's joints of a mimic layout's message (the followers from the mimic
        relation; efforts on the independent joints, zero on the followers): (position,
        velocity, effort) for the compiled cycle, velocity and effort empty when the message
        has none."""
        q, v, e = self._expanded
        nmap = layout.expand
        nmap.positions(np.asarray(position, dtype=float), q)
        if len(velocity):
            nmap.rates(np.asarray(velocity, dtype=float), v)
        if len(effort):
            nmap.efforts(np.asarray(effort, dtype=float), e)
        return q, v if len(velocity) else _NO_EFFORT, e if len(effort) else _NO_EFFORT

    def accepted(self, layout):
        """The compiled step accepted a message of ``layout``: for a partial source, where its
        held values came from."""
        if layout.partial:
            for k in layout.nmap.slots[0]:
                self.h_source[k] = layout.src

    def forget_stamps(self):
        """Forget every source's last stamp (a reset requested by the user)."""
        for src in self._sources.values():
            src.record[S_LAST_NS] = NO_STAMP

    @property
    def sources(self):
        """[(joint names, messages, last stamp ns or None)] of every source seen."""
        return [(s.names, s.messages, None if s.last_ns == NO_STAMP else s.last_ns)
                for s in self._sources.values()]

    # -- the names the reasons need ----------------------------------------------------------
    def held_why(self, layout):
        """The values of the note of a source's first message that does not drive the cycles
        (rules.HELD_FIRST)."""
        return {'count': layout.src.count, 'joints': len(self.joint_names),
                'missing': [j for j, ok in zip(self.joint_names, layout.nmap.present) if not ok],
                'driving': self.driving}

    def incomplete_why(self, stale):
        """The values of the reason of rules.INCOMPLETE: the joints missing or too old
        (``stale``: per model joint, as the compiled step found them) and their last source."""
        lacking = np.flatnonzero(stale)
        last = {self.joint_names[k]: (None if self.h_source[k] is None else
                                      list(self.h_source[k].names)) for k in lacking}
        detail = '; '.join(
            f'{j}: ' + ('never received' if s is None else
                        f'last from the source {s} more than joint_hold_max_age '
                        f'({self.max_age:g} s) from this stamp')
            for j, s in last.items())
        return {'lacking': list(last), 'hint': self.hint, 'lacking_detail': detail}
