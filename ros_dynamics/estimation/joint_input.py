"""Joint measurements in, one complete and checked state out (no ROS).

What every consumer of joint-state messages needs, in one place: the map from a message's
name list to the model's joints (:class:`JointNameMap`), the bounds an accepted input must
respect (:class:`InputBounds`), the reasons of the stamp policy (:func:`judge_stamp`), and the
sources that each publish some of the joints, with their held values
(:class:`JointStateAssembler`: the compiled cycle assembles one state from them).

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

from .rules import (LAYOUT_OK, LAYOUT_POSITIONS, LAYOUT_VELOCITIES, NO_STAMP, NS, S_EPOCH,
                    S_FIELDS, S_LAST_NS, S_MESSAGES, S_PREV_EPOCH, S_PREV_LAST_NS,
                    STAMP_CLOCK_RESET, STAMP_FUTURE, STAMP_NANOSEC, STAMP_OK, STAMP_SOURCE_RESET,
                    STAMP_UNSTAMPED, STAMP_ZERO, all_within, layout_verdict, stamp_verdict)

_NO_EFFORT = np.zeros(0)


class JointNameMap:
    """Index map from one message layout (its name list) to the model's joints.

    ``mimic`` (independent joint names, E, offset), for ``mimic_reduced`` coordinates, also
    accepts a layout with the independent joints only: the followers then come from the mimic
    relation q_joints = E q_ind + offset, v_joints = E v_ind, and efforts go to the independent
    joints with zero on the followers, so that A^T tau equals the given efforts.

    ``error`` is None when the layout carries every required joint exactly once; else it says
    which are missing or repeated.  ``present`` marks the model joints the layout carries.
    """

    __slots__ = ('names', 'index', 'error', 'unknown', 'expand', 'present', 'slots', 'gather')

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
        self.gather = np.full(len(joint_names), -1, dtype=np.intp)
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
        dups = [j for j in required if j in dup]
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
        """None if the joint vectors are finite and within bounds; else (kind, reason) for the
        first offending value (kinds: nonfinite, position, velocity, effort).  ``joints``: the
        model joint indices the vectors hold (default all, in model order)."""
        vb, eb = self.velocity, self.effort
        if joints is not None:
            vb, eb = vb[joints], eb[joints]
        q, v = np.ascontiguousarray(q, dtype=float), np.ascontiguousarray(v, dtype=float)
        e = None if e is None else np.ascontiguousarray(e, dtype=float)
        if all_within(q, v, _NO_EFFORT if e is None else e, self.position,
                      np.ascontiguousarray(vb), np.ascontiguousarray(eb)):
            return None
        for x in (q, v, e):
            if x is not None and not np.isfinite(x).all():
                return 'nonfinite', ('NaN or inf in position, velocity or effort of a required '
                                     'joint')
        for kind, x, bound, what in (
                ('position', q, self.position, 'the position bound max_abs_position'),
                ('velocity', v, vb, 'the velocity limit (input_limit_factor x URDF limit)'),
                ('effort', e, eb, 'the effort limit (input_limit_factor x URDF limit)')):
            if x is None:
                continue
            over = np.flatnonzero(~(np.abs(x) <= bound))
            if over.size:
                i = int(over[0])
                b = bound if np.ndim(bound) == 0 else bound[i]
                j = self.joint_names[i if joints is None else int(joints[i])]
                return kind, (f'{kind} {x[i]:.6g} of joint {j!r} is beyond '
                              f'{what}, {b:.6g}')
        return None


def layout_error(n, n_position, n_velocity, n_effort, allow_missing_velocity=False):
    """None if a message's arrays fit its ``n`` names
    (:func:`~ros_dynamics.estimation.rules.layout_verdict`), else (kind, reason)."""
    code = layout_verdict(n, n_position, n_velocity, n_effort, allow_missing_velocity)
    if code == LAYOUT_OK:
        return None
    if code == LAYOUT_POSITIONS:
        return 'positions', f'{n_position} positions for {n} names'
    if code == LAYOUT_VELOCITIES:
        hint = '' if n_velocity else ' (set allow_missing_velocity to use zero velocity)'
        return 'velocities', f'{n_velocity} velocities for {n} names{hint}'
    return 'efforts', f'{n_effort} efforts for {n} names'


def judge_stamp(sec, nanosec, last_ns, now_ns, max_lead_ns, reset_jump_ns, clock_jumped=False):
    """The stamp policy (:func:`~ros_dynamics.estimation.rules.stamp_verdict`) for one message of
    a source whose last accepted stamp is ``last_ns`` (None: none yet); ``now_ns`` the receiving
    clock (0 if unknown), the limits in nanoseconds.

    Returns (verdict, stamp_ns, kind, reason): verdict 'ok', 'reset' (the source's clock
    jumped back by more than the reset jump, or by any amount when the receiving clock jumped
    back since the source's last accepted stamp (``clock_jumped``: simulated time reset);
    accept and restart the observer) or 'reject' (kind and reason say why)."""
    last = NO_STAMP if last_ns is None else last_ns
    code = stamp_verdict(sec, nanosec, last, now_ns, max_lead_ns, reset_jump_ns, clock_jumped)
    if code == STAMP_OK or code == STAMP_UNSTAMPED:
        return 'ok', sec * NS + nanosec, None, None
    stamp_ns = 0 if code == STAMP_NANOSEC else sec * NS + nanosec
    if code == STAMP_CLOCK_RESET:
        return 'reset', stamp_ns, 'clock_reset', (
            f'the node clock jumped back (simulated time reset) and so did the stamps, by '
            f'{(last - stamp_ns) / NS:.6g} s')
    if code == STAMP_SOURCE_RESET:
        return 'reset', stamp_ns, 'source_reset', (
            f'source reset: stamp jumped back {(last - stamp_ns) / NS:.6g} s (more than '
            f'stamp_reset_jump {reset_jump_ns / NS:g} s)')
    if code == STAMP_NANOSEC:
        return 'reject', 0, 'nanosec', f'stamp nanosec {nanosec} is not normalized (< 1e9)'
    if code == STAMP_ZERO:
        return 'reject', 0, 'zero_stamp', ('zero stamp (header not set) from a source that '
                                           'sends stamps')
    if code == STAMP_FUTURE:
        return 'reject', stamp_ns, 'future', (
            f'stamp {sec}.{nanosec:09d} is {(stamp_ns - now_ns) / NS:.6g} s ahead of the node '
            f'clock (stamp_max_lead {max_lead_ns / NS:g} s)')
    return 'reject', stamp_ns, 'backwards', (
        f'stamp {sec}.{nanosec:09d} is earlier than the last accepted one of this source '
        f'({last / NS:.9f})')


class Source:
    """One source of joint states (the assembler keys it by the model joints it carries): the
    names of its first message, how many of the model's joints it carries (``count``), and
    its ``record`` (rules.S_LAST_NS ...: the compiled cycle records there what it accepted):
    its last accepted stamp (:attr:`last_ns`; NO_STAMP: none yet), its :attr:`messages`, the
    receiving clock's :attr:`epoch` at its last reset."""
    __slots__ = ('names', 'count', 'record')

    def __init__(self, names, count):
        self.names, self.count = list(names), count
        self.record = np.zeros(S_FIELDS, dtype=np.int64)
        self.record[S_LAST_NS] = self.record[S_PREV_LAST_NS] = NO_STAMP

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
    reason when a required joint is named more than once: refused)."""
    __slots__ = ('names', 'nmap', 'src', 'gather', 'expand', 'duplicate', 'partial')

    def __init__(self, nmap, src):
        self.names, self.nmap, self.src = nmap.names, nmap, src
        self.partial = nmap.error is not None
        self.duplicate = (nmap.error if self.partial and not nmap.error.startswith('missing')
                          else None)
        self.expand = nmap if nmap.expand is not None else None
        self.gather = (np.arange(len(nmap.present), dtype=np.intp) if self.expand is not None
                       else nmap.gather)


class JointStateAssembler:
    """The sources of joint states and their held values, for the compiled cycle (module text).

    Python does here what needs the names: :meth:`layout` maps a message's names to the model's
    joints and registers its source (keyed by the joints it carries: unknown extra names or
    another order are the same source); the compiled cycle judges the message against its
    source (its last stamp, whether it drives the cycles), gathers the joints, holds a partial
    source's values in the arrays ``held``, ``h_ns``, ``h_known``, ``h_effort`` (``h_source``:
    the source of each), and returns a code; the reasons of the codes that need one are made
    here.  A refused message changes nothing.
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
        # held values per joint (from partial sources) and where / when they came from
        self.held = np.zeros((3, n))
        self.h_ns = np.zeros(n, dtype=np.int64)
        self.h_known = np.zeros(n, dtype=bool)
        self.h_effort = np.zeros(n, dtype=bool)
        self.h_source = [None] * n
        self._sources = {}          # key (model joints carried) -> Source
        self._layouts = {}          # name tuple -> Layout
        self.driving = 0            # joints carried by the driving source
        self.epoch = 0              # count of receiving-clock jumps back (clock_reset)
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

    def clock_reset(self):
        """The receiving clock jumped back (simulated time reset): each source's next stamp
        that goes back is a reset, accepted (messages of the old episode still queued are
        accepted as before, whatever the order in which the clock and they arrive)."""
        self.epoch += 1

    def forget_stamps(self):
        """Forget every source's last stamp (a reset requested by the user)."""
        for src in self._sources.values():
            src.record[S_LAST_NS] = NO_STAMP

    @property
    def sources(self):
        """[(joint names, messages, last stamp ns or None)] of every source seen."""
        return [(s.names, s.messages, None if s.last_ns == NO_STAMP else s.last_ns)
                for s in self._sources.values()]

    # -- the reasons of what the compiled cycle made of a message ------------------------------
    def stamp_reason(self, layout, sec, nanosec, now_ns, accepted=False):
        """(kind, text) of the stamp policy's verdict on a message of ``layout`` that the
        compiled cycle rejected, or ``accepted`` as a reset (its source's record as it was
        before it)."""
        r = layout.src.record
        last, epoch = (r[S_PREV_LAST_NS], r[S_PREV_EPOCH]) if accepted else (r[S_LAST_NS],
                                                                              r[S_EPOCH])
        _, _, kind, text = judge_stamp(sec, nanosec, int(last), now_ns, self.max_lead_ns,
                                       self.reset_jump_ns, int(epoch) != self.epoch)
        return kind, text

    def held_reason(self, layout):
        """The note of the first message of a source that does not drive the cycles, or
        None."""
        src = layout.src
        if src.messages > 1:
            return None
        missing = [j for j, ok in zip(self.joint_names, layout.nmap.present) if not ok]
        return (f'new source with {src.count} of {len(self.joint_names)} joints (missing '
                f'required joint(s) {missing}): its values are held for the cycles of the '
                f'source with {self.driving} joints')

    def incomplete_reason(self, layout, t):
        """(kind, text): the driving source's joints are fine, a held one is missing or too old
        at ``t`` (the joints and their last source)."""
        age_ok = self.h_known & (np.abs(self.h_ns - t) <= self.max_age_ns)
        lacking = np.flatnonzero(~layout.nmap.present & ~age_ok)
        last = {self.joint_names[k]: (None if self.h_source[k] is None else
                                      list(self.h_source[k].names)) for k in lacking}
        detail = '; '.join(
            f'{j}: ' + ('never received' if s is None else
                        f'last from the source {s} more than joint_hold_max_age '
                        f'({self.max_age:g} s) from this stamp')
            for j, s in last.items())
        return 'incomplete', (f'missing required joint(s) {list(last)}{self.hint} '
                              f'({detail})')

    def bounds_reason(self, q, v, e):
        """(kind, text) of gathered joint values (q, v, e: e None without efforts) that the
        compiled cycle found not finite or beyond a bound."""
        return self.bounds.violation(q, v, e)

    def layout_reason(self, n, n_position, n_velocity, n_effort):
        """(kind, text) of arrays that do not fit a message's ``n`` names, or None."""
        return layout_error(n, n_position, n_velocity, n_effort, self.allow_missing_velocity)
