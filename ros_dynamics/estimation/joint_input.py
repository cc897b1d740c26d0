"""Joint measurements in, one complete and checked state out (no ROS).

What every consumer of joint-state messages needs, in one place: the map from a message's
name list to the model's joints (:class:`JointNameMap`), the bounds an accepted input must
respect (:class:`InputBounds`), the stamp policy (:func:`judge_stamp`), and the assembly of one
state from several sources that each publish some of the joints (:class:`JointStateAssembler`).

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

from .rules import (GATHER_BOUNDS, GATHER_OK, GATHER_STALE, LAYOUT_OK, LAYOUT_POSITIONS,
                    LAYOUT_VELOCITIES, NO_STAMP, NS, STAMP_CLOCK_RESET, STAMP_FUTURE,
                    STAMP_NANOSEC, STAMP_OK, STAMP_SOURCE_RESET, STAMP_UNSTAMPED, STAMP_ZERO,
                    all_within, gather_checked, hold, layout_verdict, stamp_verdict)

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


class _Source:
    __slots__ = ('key', 'names', 'count', 'last_ns', 'messages', 'epoch')

    def __init__(self, key, names, count):
        self.key, self.names, self.count = key, list(names), count
        self.last_ns = None
        self.messages = 0
        self.epoch = 0          # the receiving clock's epoch at the last accepted message


class JointStateAssembler:
    """Builds each cycle's joint state from any mix of joint-state messages (module text).

    :meth:`add` takes one message's arrays and returns a verdict; after 'cycle' the joint
    vectors ``q``, ``v``, ``e`` (and ``has_effort``) hold the complete state (read them after
    each call: they may be other arrays then).  Every verdict
    other than 'cycle' leaves the previous state and the held values of the other sources as
    they were (a rejected message changes nothing).
    """

    def __init__(self, joint_names, bounds, mimic=None, hint='', max_age=0.5, max_lead=1.0,
                 reset_jump=1.0, allow_missing_velocity=False, max_sources=16):
        self.joint_names = list(joint_names)
        n = len(self.joint_names)
        self.bounds, self.mimic, self.hint = bounds, mimic, hint
        self.max_age = float(max_age)          # s (in the reasons); the rules take ns
        self.max_age_ns = int(round(self.max_age * NS))
        self.max_lead_ns = int(round(max_lead * NS))
        self.reset_jump_ns = int(round(reset_jump * NS))
        self.allow_missing_velocity = bool(allow_missing_velocity)
        self.max_sources = max_sources
        self.q, self.v, self.e = np.zeros(n), np.zeros(n), np.zeros(n)
        self._q, self._v, self._e = np.zeros(n), np.zeros(n), np.zeros(n)
        self.has_effort = False
        # held values per joint (from partial sources) and where / when they came from
        self.held = np.zeros((3, n))
        self.hq, self.hv, self.he = self.held
        self.h_ns = np.zeros(n, dtype=np.int64)
        self.h_known = np.zeros(n, dtype=bool)
        self.h_effort = np.zeros(n, dtype=bool)
        self.h_source = [None] * n
        self._sources = {}          # key (model joints carried) -> _Source
        self._layouts = {}          # name tuple -> (JointNameMap, _Source)
        self._last = None           # the layout of the previous message (fast path)
        self.driving = 0            # joints carried by the driving source
        self.stamp_ns = 0
        self.epoch = 0              # count of receiving-clock jumps back (clock_reset)
        self.reason = None          # (kind, text) of the last verdict other than 'cycle'
        self._pending_reset = None  # a source reset no cycle has reported yet: (kind, text)

    # -- sources ------------------------------------------------------------------------
    def _source(self, names):
        """(layout map, source) of a message's name list.  A source is keyed by the model
        joints it carries: unknown extra names or another order are the same source."""
        layout = self._known(names)
        if layout is None:
            names = names if type(names) is tuple else tuple(names)
            nmap = JointNameMap(names, self.joint_names, self.mimic, self.hint)
            complete = nmap.error is None
            key = 'all' if complete else tuple(np.flatnonzero(nmap.present))
            src = self._sources.get(key)
            if src is None:
                if len(self._sources) >= self.max_sources:   # forget the oldest partial one
                    old = next((k for k, s in self._sources.items() if s.count < self.driving),
                               next(iter(self._sources)))
                    del self._sources[old]
                src = _Source(key, nmap.names, len(nmap.present) if complete
                              else int(nmap.present.sum()))
                self._sources[key] = src
                self.driving = max(self.driving, src.count)
            if len(self._layouts) >= 4 * self.max_sources:
                self._layouts.clear()
            layout = self._layouts[names] = (nmap, src)
            self._last = layout
        return layout

    def _known(self, names):
        """The (layout map, source) of a name list seen before (the previous message's first),
        now the last one; None for a new name list."""
        last = self._last
        if last is not None and (last[0].names is names or last[0].names == names):
            return last
        layout = self._layouts.get(names if type(names) is tuple else tuple(names))
        if layout is not None:
            self._last = layout
        return layout

    def clock_reset(self):
        """The receiving clock jumped back (simulated time reset): each source's next stamp
        that goes back is a reset, accepted (messages of the old episode still queued are
        accepted as before, whatever the order in which the clock and they arrive)."""
        self.epoch += 1

    def forget_stamps(self):
        """Forget every source's last stamp (a reset requested by the user)."""
        for src in self._sources.values():
            src.last_ns = None

    @property
    def sources(self):
        """[(joint names, messages, last stamp ns)] of every source seen (for summaries)."""
        return [(s.names, s.messages, s.last_ns) for s in self._sources.values()]

    # -- the compiled cycle's part (fused_cycle.py) ---------------------------------------
    def fused_source(self, names):
        """(gather map, last stamp, whether the receiving clock jumped back since) when a
        message with ``names`` may be judged by the compiled cycle: a layout seen before, of
        the driving source (all joints, or the most of them: the others then come from the
        held values), without repeated names or a mimic expansion, from a source with an
        accepted stamp, no source reset to report; else None."""
        layout = self._known(names)
        if layout is None:
            return None
        nmap, src = layout
        if (nmap.expand is not None or not src.last_ns or src.count < self.driving
                or (nmap.error is not None and not nmap.error.startswith('missing'))
                or self._pending_reset is not None):
            return None
        return nmap.gather, src.last_ns, src.epoch != self.epoch

    def fused_accepted(self, stamp_ns):
        """The compiled cycle accepted a message of the :meth:`fused_source` layout stamped
        ``stamp_ns`` (what :meth:`add` records for an accepted message; the joint vectors
        went straight to the cycle, the held values of a partial source were written)."""
        nmap, src = self._last
        src.last_ns = stamp_ns
        src.messages += 1
        self.stamp_ns = stamp_ns
        if nmap.index is None:                  # a partial source: where its values came from
            h_source = self.h_source
            for k in nmap.slots[0]:
                h_source[k] = src

    def rejected_stamp(self, sec, nanosec, now_ns):
        """The compiled cycle rejected the stamp of a message of the :meth:`fused_source`
        layout: ``reason`` and the returned (kind, text) say why, as :meth:`add` would."""
        src = self._last[1]
        _, _, kind, text = judge_stamp(sec, nanosec, src.last_ns, now_ns, self.max_lead_ns,
                                       self.reset_jump_ns, src.epoch != self.epoch)
        self.reason = (kind, text)
        return kind, text

    def fused_incomplete(self, stamp_ns):
        """The compiled cycle accepted a message of the :meth:`fused_source` layout stamped
        ``stamp_ns`` and held its values, but a held joint is missing or too old: recorded as
        :meth:`add` records it; returns ``reason`` ('incomplete', text)."""
        self.fused_accepted(stamp_ns)
        self._incomplete(self._last[0], stamp_ns)
        return self.reason

    def rejected_bounds(self, q, v, e):
        """The compiled cycle rejected a message of the :meth:`fused_source` layout whose
        gathered joint values (q, v, e: e None without efforts) are not finite or beyond a
        bound: ``reason`` and the returned (kind, text) say why, as :meth:`add` would."""
        self.reason = self.bounds.violation(q, v, e)
        return self.reason

    def rejected_layout(self, n, n_position, n_velocity, n_effort):
        """The compiled cycle rejected a message of ``n`` names whose arrays do not fit them:
        ``reason`` and the returned (kind, text) say why, as :meth:`add` would."""
        self.reason = layout_error(n, n_position, n_velocity, n_effort,
                                   self.allow_missing_velocity)
        return self.reason

    def _reject(self, kind, text):
        self.reason = (kind, text)
        return 'reject'

    # -- one message --------------------------------------------------------------------
    def add(self, names, position, velocity, effort, sec, nanosec, now_ns):
        """One joint-state message (float64 arrays; ``velocity``/``effort`` may be empty).

        Returns 'cycle' (the state is complete: ``q``, ``v``, ``e``, ``stamp_ns``), 'reset'
        (as 'cycle', and the source restarted: the observer must restart), 'held' (a partial
        source's values were stored), 'incomplete' (the driving source's message was valid but
        a joint is missing or too old: ``reason``) or 'reject' (``reason``: (kind, text))."""
        nmap, src = self._source(names)
        bad = layout_error(len(names), len(position), len(velocity), len(effort),
                           self.allow_missing_velocity)
        if bad is not None:
            return self._reject(*bad)
        if nmap.error is not None and not nmap.error.startswith('missing'):
            return self._reject('duplicate', nmap.error)
        verdict, stamp_ns, kind, text = judge_stamp(sec, nanosec, src.last_ns, now_ns,
                                                    self.max_lead_ns, self.reset_jump_ns,
                                                    src.epoch != self.epoch)
        if verdict == 'reject':
            return self._reject(kind, text)
        if verdict == 'reset':
            self.reason = (kind, text)
        q, v, e = self._q, self._v, self._e       # scratch: swapped in when accepted
        has_e, b = len(effort) > 0, self.bounds
        t = stamp_ns if stamp_ns else now_ns      # unstamped sources: the receiving clock
        if nmap.expand is None:   # the message's joints and the held ones, checked: one call
            code, all_e = gather_checked(nmap.gather, position, velocity, effort, self.held,
                                         self.h_ns, self.h_known, self.h_effort, t,
                                         self.max_age_ns, q, v, e, b.position, b.velocity,
                                         b.effort)
        else:                     # the independent joints of mimic_reduced coordinates
            nmap.positions(position, q)
            if len(velocity):
                nmap.rates(velocity, v)
            else:
                v[:] = 0.0
            if has_e:
                nmap.efforts(effort, e)
            bad = b.violation(q, v, e if has_e else None)
            code, all_e = (GATHER_OK if bad is None else GATHER_BOUNDS), has_e
        if code == GATHER_BOUNDS:
            return self._reject(*b.violation(q, v, e if has_e else None))
        partial = nmap.error is not None
        if partial:        # every partial message's values are held (for the driving source)
            if verdict == 'reset':      # reported with the next cycle if this one makes none
                self._pending_reset = self.reason
            hold(nmap.gather, position, velocity, effort, self.held, self.h_ns, self.h_known,
                 self.h_effort, t)
            for k in nmap.slots[0]:
                self.h_source[k] = src
        src.last_ns = stamp_ns
        if verdict == 'reset' or not src.messages:
            src.epoch = self.epoch    # a clock jump is consumed by a step back only
        src.messages += 1
        if partial and src.count < self.driving:   # not the driving source: only held
            missing = [j for j, ok in zip(self.joint_names, nmap.present) if not ok]
            self.reason = ('held', None if src.messages > 1 else (
                f'new source with {src.count} of {len(self.joint_names)} joints (missing '
                f'required joint(s) {missing}): its values are held for the cycles of the '
                f'source with {self.driving} joints'))
            return 'held'
        if code == GATHER_STALE:
            return self._incomplete(nmap, t)
        self.q, self._q, self.v, self._v, self.e, self._e = q, self.q, v, self.v, e, self.e
        self.has_effort = all_e
        self.stamp_ns = stamp_ns
        return self._made(verdict)

    def _incomplete(self, nmap, t):
        """'incomplete': the driving source's joints are fine, a held one is missing or too
        old (``reason`` names them and their last source)."""
        age_ok = self.h_known & (np.abs(self.h_ns - t) <= self.max_age_ns)
        lacking = np.flatnonzero(~nmap.present & ~age_ok)
        last = {self.joint_names[k]: (None if self.h_source[k] is None else
                                      list(self.h_source[k].names)) for k in lacking}
        detail = '; '.join(
            f'{j}: ' + ('never received' if s is None else
                        f'last from the source {s} more than joint_hold_max_age '
                        f'({self.max_age:g} s) from this stamp')
            for j, s in last.items())
        self.reason = ('incomplete', f'missing required joint(s) {list(last)}{self.hint} '
                                     f'({detail})')
        return 'incomplete'

    def _made(self, verdict):
        """The verdict of a message that makes a cycle: 'reset' when its source reset, or when
        a reset of a partial source's message that made no cycle (held, incomplete) is still
        to be reported (``reason`` then says which); else 'cycle'."""
        if verdict == 'reset':
            self._pending_reset = None
            return 'reset'
        if self._pending_reset is not None:
            self.reason, self._pending_reset = self._pending_reset, None
            return 'reset'
        return 'cycle'
