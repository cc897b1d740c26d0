"""A trot for a quadruped's whole-body controller (plain numpy, no ROS): the feet in diagonal
pairs, the trunk following a commanded velocity (``cmd_vel``), each cycle's
:class:`~ros_dynamics.control.wbc.WBCReference` (stance set, swing feet, CoM, trunk
orientation, the unloading before lift-off).

Everything that depends on the robot comes from its first state and its size
(:meth:`TrotSettings.for_robot`): the CoM's height ``h`` above the feet gives the swing
duration √(h/g) (the time scale of the pendulum the trunk is on two feet; h = 0.20 m and
0.14 s for Solo12 standing as legged_robots.ROBOTS has it, 0.29 m and 0.17 s for the
Mini-Cheetah-sized quadruped: the swings of quadruped-reactive-walking's and of the MIT Cheetah
software's trots), the step height (h/5), the feet's reach around their nominal position (h/3)
and the CoM reference's lead (h/10); the nominal feet are where they stand at the start,
relative to the CoM in the heading frame; the pairs (front left with hind right, front right
with hind left) come from their positions.

The swing (:func:`~ros_dynamics.control.swing.swing_reference`) arrives where the foot last
landed, moving down at ``0.7 √(g h)`` (0.98 m/s for Solo12): a foot that arrives at rest
touches the ground lightly and is seen on it only once the gait loads it (on MuJoCo's Solo12,
25-35 ms after the plant's contact); moving, it is on the ground at the planned time and seen
there a few ms later (benchmarks/trot_mujoco.py).

The gait (a sequence of phases, each started by events rather than by the clock alone):
stand ``stand`` s on four feet, then repeat: a pair swings (``swing`` s planned;
:class:`~ros_dynamics.control.touchdown.FootState` says when each foot is down), the four feet
share the weight ``double`` s (the pair about to lift unloads: its normal force bound falls to
zero), the other pair swings.  A pair lifts off only once the other has landed, so a late
touch-down delays the gait instead of leaving the trunk on one foot.

The trunk: the CoM reference moves at the commanded velocity (linear.x, linear.y in the
heading frame, rate-limited to ``accel``), kept within ``lead`` of the measured CoM (a push does
not leave it far ahead), moved by the running integral of the CoM error (``integral_time``: a
plant that is not the model holds the model's CoM off the reference by a constant, which would
otherwise slow the trunk down); its height is ``h`` above the mean height where the feet last
landed; the yaw reference turns at the commanded rate, roll and pitch zero.  Swing feet aim at
:class:`~ros_dynamics.control.foothold.Foothold` (1), replanned every cycle, at the height
where they last landed.
"""
import math
from dataclasses import dataclass

import numpy as np

from .foothold import Foothold, yaw_rotation
from .swing import swing_reference
from .touchdown import FootState
from .wbc import WBCReference

__all__ = ['TrotSettings', 'TrotGait', 'diagonal_pairs']


@dataclass
class TrotSettings:
    """The trot's durations [s], heights [m], limits; :meth:`for_robot` from the robot's size."""
    height: float           # the CoM above the feet
    swing: float            # planned swing duration
    double: float           # four feet down between two swings
    step_height: float
    reach: float            # foothold limit around the nominal position
    landing_speed: float    # the swing's downward speed at its end [m/s]
    reach_time: float       # a touch-down not seen: longest probe
    accel: float            # commanded velocity's rate limit [m/s^2]; yaw rate's [rad/s^2]
    yaw_accel: float
    lead: float             # CoM reference at most this far from the measured CoM
    yaw_lead: float = 0.2   # yaw reference at most this far from the measured yaw [rad]
    integral_time: float = 1.0  # the CoM error's integral: time constant [s]
    stand: float = 0.5      # on four feet before the first swing
    arm: float = 0.5        # swing phase from which the estimate's contact ends it
    debounce: float = 0.01  # a stance foot reported off this long is lost
    settle: float = 0.03    # ... not in its first settle s of stance
    feedback: float = 1.0   # foothold velocity feedback, units of √(h/g)
    probe: float = 0.4      # a probing foot's normal force, units of a trot share (weight/2)

    @classmethod
    def for_robot(cls, height, step_height=None, gravity=9.81):
        """The settings of a robot whose CoM stands ``height`` m above its feet (module
        docstring); ``step_height`` None or 0: h/5."""
        if not height > 0:
            raise ValueError(f'the CoM must stand above the feet (height {height} m)')
        T = math.sqrt(height / gravity)
        hs = float(step_height) if step_height else 0.2 * height
        return cls(height=height, swing=T, double=0.1 * T, step_height=hs,
                   reach=height / 3.0, landing_speed=0.7 * math.sqrt(gravity * height),
                   reach_time=T,
                   accel=0.1 * gravity, yaw_accel=2.0,
                   lead=0.1 * height)


def diagonal_pairs(feet, offsets):
    """((front left, hind right), (front right, hind left)) of four ``feet`` from their
    ``offsets`` (4, 2) from the CoM in the heading frame (x forward, y left); ValueError when
    they are not two in front and two behind, one left and one right of each."""
    if len(feet) != 4:
        raise ValueError(f'a trot needs four feet, not {len(feet)}: {list(feet)}')
    d = np.asarray(offsets, dtype=float)
    order = np.argsort(d[:, 0])
    hind, front = sorted(order[:2], key=lambda i: d[i, 1]), sorted(order[2:],
                                                                    key=lambda i: d[i, 1])
    (hr, hl), (fr, fl) = hind, front
    if not (min(d[fl, 0], d[fr, 0]) > 0 > max(d[hl, 0], d[hr, 0])
            and d[fl, 1] > 0 > d[fr, 1] and d[hl, 1] > 0 > d[hr, 1]):
        raise ValueError(f'feet {list(feet)} at {np.round(d, 3).tolist()} (m from the CoM, '
                         'heading frame) are not two in front and two behind, one left and '
                         'one right of each')
    return (feet[fl], feet[hr]), (feet[fr], feet[hl])


def heading(quat):
    """The yaw [rad] of a base orientation (x, y, z, w): atan2(R[1, 0], R[0, 0])."""
    x, y, z, w = (float(c) for c in quat)
    return math.atan2(2.0 * (x * y + z * w), 1.0 - 2.0 * (y * y + z * z))


class TrotGait:
    """The trot of the module docstring for ``feet`` (task frames), started from the first
    state ``state`` (:class:`~ros_dynamics.control.wbc.StreamState`) at ``t`` s.  Call it once
    per cycle: ``gait(t, state, command, contact)`` -> WBCReference."""

    def __init__(self, feet, state, t=0.0, settings=None, step_height=None, gravity=9.81):
        self.feet = list(feet)
        idx = [list(state.frames).index(f) for f in self.feet]
        P, c = state.positions[idx], np.asarray(state.com, dtype=float)
        self.rows = idx
        yaw = heading(state.q[3:7])
        self.nominal = {f: tuple(yaw_rotation(-yaw) @ (P[i, :2] - c[:2]))
                        for i, f in enumerate(self.feet)}
        self.pairs = diagonal_pairs(self.feet, [self.nominal[f] for f in self.feet])
        height = float(c[2] - P[:, 2].mean())
        self.settings = s = settings or TrotSettings.for_robot(height, step_height, gravity)
        self.foothold = Foothold(s.height, s.swing + 2 * s.double, s.reach, s.feedback,
                                 gravity)
        self.foot = {f: FootState(P[i], t) for i, f in enumerate(self.feet)}
        self.share = float(np.linalg.norm(state.g[:3])) / 2.0    # a trot share: weight / 2
        self.phase, self.pair, self.t_phase, self.t_prev = 'stand', 1, t, t
        self.c_ref, self.yaw_ref = tuple(float(x) for x in c), yaw
        self.bias = (0.0, 0.0)              # the CoM error's integral (integral_time)
        self.command = [0.0, 0.0, 0.0]      # the rate-limited command (vx, vy, wz), heading
        self.t0 = t

    def planned_contact(self):
        """{foot: True when the gait plans it on the ground} (the schedule, not the events)."""
        up = self.pairs[self.pair] if self.phase == 'swing' else ()
        return {f: f not in up for f in self.feet}

    def __call__(self, t, state, command=(0.0, 0.0, 0.0), contact=None):
        """The reference at ``t`` s for ``state``; ``command`` (vx, vy [m/s] in the heading
        frame, wz [rad/s]); ``contact`` {foot: bool} of the estimate, or None."""
        dt = max(0.0, t - self.t_prev)
        self.t_prev = t
        P = state.positions[self.rows]
        self._advance(t, P, contact)
        yaw = heading(state.q[3:7])
        v_cmd, a_cmd, wz = self._body(dt, state, yaw, command)
        stance, swing, fmax, fmin = [], {}, {}, {}
        probe = self.settings.probe * self.share
        for f in self.feet:
            mode = self.foot[f].mode
            if mode == 'swing':
                swing[f] = self._swing(f, t, state, yaw, v_cmd, wz)
                continue
            stance.append(f)
            if mode != 'stance':                 # probe, lost: the probe's force only
                fmin[f] = fmax[f] = probe
        if self.phase == 'double':               # the pair about to lift unloads
            left = 1.0 - (t - self.t_phase) / max(self.settings.double, 1e-9)
            for f in self.pairs[1 - self.pair]:
                fmax[f] = min(fmax.get(f, self.share), max(0.0, left) * self.share)
        target = (self.c_ref[0] + self.bias[0], self.c_ref[1] + self.bias[1], self.c_ref[2])
        return WBCReference(np.array(target), np.array((*v_cmd, 0.0)),
                            np.array((*a_cmd, 0.0)), tuple(stance), swing,
                            R_ref=_yaw_matrix(self.yaw_ref), normal_force_max=fmax,
                            normal_force_min=fmin, angular_velocity=np.array((0.0, 0.0, wz)))

    def _advance(self, t, P, contact):
        """The feet's modes and the gait's phase at ``t``."""
        s = self.settings
        for i, f in enumerate(self.feet):
            foot = self.foot[f]
            c = None if contact is None else contact.get(f)
            foot.update(t, (t - foot.t_lift) / s.swing, P[i], c, s)
        if self.phase == 'stand' and t - self.t_phase >= s.stand:
            self._lift(t, P, 0)
        elif self.phase == 'swing' and t - self.t_phase >= s.swing and all(
                self.foot[f].mode == 'stance' for f in self.pairs[self.pair]):
            self.phase, self.t_phase = 'double', t
        elif self.phase == 'double' and t - self.t_phase >= s.double:
            self._lift(t, P, 1 - self.pair)

    def _lift(self, t, P, pair):
        self.phase, self.pair, self.t_phase = 'swing', pair, t
        for f in self.pairs[pair]:
            self.foot[f].lift(t, P[self.feet.index(f)])

    def _body(self, dt, state, yaw, command):
        """The CoM and yaw references moved on by ``dt`` s: (v_cmd (2,), a_cmd (2,), wz),
        world axes (floats: three-element numpy arithmetic costs more than it computes)."""
        s, cmd = self.settings, self.command
        limits = (s.accel * dt, s.accel * dt, s.yaw_accel * dt)
        change = [max(-lim, min(lim, float(x) - c)) for x, c, lim in zip(command, cmd, limits)]
        cmd[:] = [c + d for c, d in zip(cmd, change)]
        cos, sin = math.cos(yaw), math.sin(yaw)
        v_cmd = (cos * cmd[0] - sin * cmd[1], sin * cmd[0] + cos * cmd[1])
        a_cmd = ((cos * change[0] - sin * change[1]) / dt,
                 (sin * change[0] + cos * change[1]) / dt) if dt > 0 else (0.0, 0.0)
        wz = cmd[2]
        cx, cy = float(state.com[0]), float(state.com[1])
        lx, ly = self.c_ref[0] + v_cmd[0] * dt - cx, self.c_ref[1] + v_cmd[1] * dt - cy
        shrink = min(1.0, s.lead / max(math.hypot(lx, ly), 1e-12))
        ground = sum(self.foot[f].ground for f in self.feet) / len(self.feet)
        self.c_ref = (cx + shrink * lx, cy + shrink * ly, ground + s.height)
        # integral action: the QP's target moved by the CoM error's running integral, so
        # that the model's CoM is on the reference on average (a plant that is not the model
        # holds it off by a constant: a hidden load, links off)
        bx, by = self.bias
        bx += dt / s.integral_time * (self.c_ref[0] - cx)
        by += dt / s.integral_time * (self.c_ref[1] - cy)
        shrink = min(1.0, s.lead / max(math.hypot(bx, by), 1e-12))
        self.bias = (shrink * bx, shrink * by)
        err = math.remainder(self.yaw_ref + wz * dt - yaw, 2 * math.pi)
        self.yaw_ref = yaw + max(-s.yaw_lead, min(s.yaw_lead, err))
        return v_cmd, a_cmd, wz

    def _swing(self, f, t, state, yaw, v_cmd, wz):
        """(p, ṗ, p̈) of the swing foot ``f``: towards its foothold, replanned now."""
        s, foot = self.settings, self.foot[f]
        ahead = max(0.0, foot.t_lift + s.swing - t)
        foot.p_target = self.foothold(self.nominal[f], state.com, yaw, state.com_velocity,
                                      v_cmd, wz, ahead)
        target = np.array((*foot.p_target, foot.ground))
        return swing_reference(foot.p_lift, target, s.step_height, (t - foot.t_lift) / s.swing,
                               s.swing, s.landing_speed)


def _yaw_matrix(yaw):
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
