"""A built-in scenario for a quadruped's whole-body controller (plain numpy, no ROS): stand,
track a CoM trajectory, shift the weight over three feet, lift the fourth and put it down,
shift back and stand (a push, if any, is the simulator's).

:class:`StandStepSchedule` is built from the first state the controller sees (the CoM and the
four feet's positions) and maps time since then to a :class:`~ros_dynamics.control.wbc.WBCReference`.
CoM references are rest-to-rest minimum-jerk segments (Flash & Hogan 1985,
:class:`~ros_dynamics.control.trajectories.MinJerkTrajectory`), the swing foot's those of
:mod:`ros_dynamics.control.swing` (peak ``h`` at mid-swing, zero velocity and acceleration at
both ends).
The lifted foot is unloaded before lift-off and loaded after touch-down by ramping its normal
force bound between ``unload_from`` (N, about its share of the weight: below it the bound acts
over most of the ramp) and 0, so the QP moves the weight to the other feet over the ramp
instead of in one cycle.

:class:`ExcitingStandSchedule` is a standing motion for identification (each foot lifted in
turn, the trunk swayed in six directions, the weight shifted towards each foot), the same
references for the same controller.
"""

import numpy as np

from .swing import swing_reference
from .trajectories import MinJerkTrajectory
from .wbc import WBCReference

__all__ = ['StandStepSchedule', 'ExcitingStandSchedule']


class StandStepSchedule:
    """Phases (seconds from the start): stand ``[0, t_track)``; CoM trajectory (min-jerk through
    ``±amplitude`` in x, y and ``−amplitude/2`` in z, back to the start) until ``t_shift``;
    weight shift to the centroid of the three stance feet until ``t_lift``; unload ``unload``
    s; swing ``swing`` s (height ``step_height``, the foot ends ``press`` m below where it
    started so that it reaches the floor); load ``unload`` s; shift back ``shift`` s; stand
    until ``duration``.

    ``feet``: the four feet (task frames); ``lift``: the one to lift; ``com0`` (3,) and
    ``feet0`` (4, 3): the first state's CoM and feet positions.
    """

    def __init__(self, feet, com0, feet0, lift=None, amplitude=0.02, t_track=0.5,
                 segment=0.5, shift=0.8, unload=0.1, swing=0.5, step_height=0.05,
                 press=0.003, stand=1.5, f_max=200.0, unload_from=20.0):
        self.feet = list(feet)
        self.lift = self.feet[0] if lift is None else lift
        if self.lift not in self.feet:
            raise ValueError(f'lift foot {self.lift!r} is not one of {self.feet}')
        c0 = np.asarray(com0, dtype=float)
        P = np.asarray(feet0, dtype=float)
        self.feet0 = {f: P[i].copy() for i, f in enumerate(self.feet)}
        a = float(amplitude)
        track = [c0 + d for d in ([a, 0, 0], [0, a, -a / 2], [-a, 0, 0], [0, -a, -a / 2],
                                  [0, 0, 0])]
        t = [t_track + segment * i for i in range(len(track) + 1)]
        self.t_shift = t[-1]
        others = [f for f in self.feet if f != self.lift]
        centroid = np.mean([self.feet0[f] for f in others], axis=0)
        shifted = np.array([centroid[0], centroid[1], c0[2]])
        self.t_lift = self.t_shift + shift
        self.t_swing = self.t_lift + unload
        self.t_down = self.t_swing + swing
        self.t_loaded = self.t_down + unload
        self.t_back = self.t_loaded + shift
        self.duration = self.t_back + stand
        self.unload, self.f_max, self.f_ramp = unload, f_max, min(unload_from, f_max)
        self.com = MinJerkTrajectory(
            [0.0] + t + [self.t_lift, self.t_loaded, self.t_back],
            [c0] + [c0] + track + [shifted, shifted, c0])
        self.press, self.height = float(press), float(step_height)
        self.t_track = t_track

    def phase(self, t):
        """Name of the phase at ``t`` (for logs and plots)."""
        for name, end in (('stand', self.t_track), ('com_trajectory', self.t_shift),
                          ('weight_shift', self.t_lift), ('unload', self.t_swing),
                          ('swing', self.t_down), ('load', self.t_loaded),
                          ('shift_back', self.t_back)):
            if t < end:
                return name
        return 'stand'

    def __call__(self, t):
        """The :class:`WBCReference` at ``t`` seconds from the start."""
        c, cd, cdd = self.com(t)
        stance = tuple(self.feet)
        swing, fmax = {}, {}
        if self.t_swing <= t < self.t_down:
            stance = tuple(f for f in self.feet if f != self.lift)
            swing[self.lift] = _swing(self.feet0[self.lift], self.press, self.height,
                                      self.t_swing, self.t_down, t)
        elif self.t_lift <= t < self.t_swing:          # unload: bound falls to 0
            fmax[self.lift] = self.f_ramp * (self.t_swing - t) / self.unload
        elif self.t_down <= t < self.t_loaded:         # load: bound rises again
            fmax[self.lift] = self.f_ramp * (t - self.t_down) / self.unload
        return WBCReference(c, cd, cdd, stance, swing, normal_force_max=fmax)


def _swing(p0, press, height, t0, t1, t):
    """(p, ṗ, p̈) of a foot swung from ``p0`` between ``t0`` and ``t1`` to ``press`` m below
    where it started (:func:`~ros_dynamics.control.swing.swing_reference`)."""
    return swing_reference(p0, p0 - np.array([0.0, 0.0, press]), height, (t - t0) / (t1 - t0),
                           t1 - t0)


def _axis_rotation(axis, angle):
    """Rotation by ``angle`` about the unit vector ``axis`` (Rodrigues' formula)."""
    a = np.asarray(axis, dtype=float)
    K = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * K @ K


class ExcitingStandSchedule:
    """A standing motion that excites the whole body's inertia for identification (the
    floating-base identification of :mod:`ros_dynamics.identification.floating_base`), played by
    the same controller as :class:`StandStepSchedule`.

    Phases (seconds from the start), every reference a rest-to-rest minimum-jerk segment:

    1. stand ``stand`` s;
    2. each foot of ``lifts`` (default: all, in the order of ``feet``) lifted in turn: weight
       shift to the centroid of the other three (``shift`` s), unload (``unload`` s), swing
       (``swing`` s, height ``step_height``, ending ``press`` m below where it started), load,
       shift back;
    3. trunk sway in six directions: the CoM to ``+sway[k]`` and ``−sway[k]`` m along world x,
       y and z, then the trunk rolled, pitched and yawed to ``±tilt[k]`` rad (each out and back
       ``repeats`` times, ``segment`` s per move);
    4. weight shifts: the CoM ``shift_ratio`` of the way towards each foot in turn and back
       (``2 segment`` s each way);
    5. stand ``stand`` s.

    The feet are lifted first, while they stand where they started (feet creep under a
    swaying trunk on a soft floor).

    ``feet``, ``com0``, ``feet0`` as :class:`StandStepSchedule`; ``unload_from`` its normal-force
    ramp.
    """

    def __init__(self, feet, com0, feet0, sway=(0.02, 0.01, 0.015), tilt=(0.08, 0.08, 0.12),
                 segment=0.5, shift_ratio=0.3, shift=0.6, unload=0.1, swing=0.5, step_height=0.05,
                 press=0.003, stand=0.5, f_max=200.0, unload_from=20.0, repeats=2, lifts=None):
        self.feet = list(feet)
        c0 = np.asarray(com0, dtype=float)
        P = np.asarray(feet0, dtype=float)
        self.feet0 = {f: P[i].copy() for i, f in enumerate(self.feet)}
        self.f_max, self.f_ramp, self.unload = f_max, min(unload_from, f_max), unload
        self.height, self.press = float(step_height), float(press)
        z3 = np.zeros(3)
        t = float(stand)
        times, coms, angles = [0.0, t], [c0, c0], [z3, z3]
        self.phases = [('stand', 0.0, t)]

        def move(c, a, dt):
            nonlocal t
            t += dt
            times.append(t)
            coms.append(c)
            angles.append(a)

        self.steps = []                     # (foot, t_lift, t_swing, t_down, t_loaded)
        lifts = self.feet if lifts is None else list(lifts)
        unknown = [f for f in lifts if f not in self.feet]
        if unknown:
            raise ValueError(f'lifts {unknown} are not among the feet {self.feet}')
        for f in lifts:                                      # each foot lifted in turn
            others = [g for g in self.feet if g != f]
            centroid = np.mean([self.feet0[g] for g in others], axis=0)
            shifted = np.array([centroid[0], centroid[1], c0[2]])
            start = t
            move(shifted, z3, shift)
            t_lift = t
            t_swing, t_down = t_lift + unload, t_lift + unload + swing
            t_loaded = t_down + unload
            move(shifted, z3, t_loaded - t_lift)
            move(c0, z3, shift)
            self.steps.append((f, t_lift, t_swing, t_down, t_loaded))
            self.phases.append((f'lift_{f}', start, t))
        start = t
        for k in range(3):                                   # CoM along x, y, z
            e = np.eye(3)[k] * np.broadcast_to(sway, (3,))[k]
            for _ in range(repeats):
                move(c0 + e, z3, segment)
                move(c0 - e, z3, 2 * segment)
            move(c0, z3, segment)
        for k in range(3):                                   # roll, pitch, yaw
            e = np.eye(3)[k] * np.broadcast_to(tilt, (3,))[k]
            for _ in range(repeats):
                move(c0, e, segment)
                move(c0, -e, 2 * segment)
            move(c0, z3, segment)
        self.phases.append(('sway', start, t))
        start = t
        for f in self.feet:                                  # weight shifts towards each foot
            toward = c0 + shift_ratio * np.array([*(self.feet0[f][:2] - c0[:2]), 0.0])
            move(toward, z3, 2 * segment)
            move(c0, z3, 2 * segment)
        self.phases.append(('weight_shift', start, t))
        move(c0, z3, stand)
        self.phases.append(('stand', t - stand, t))
        self.duration = t
        self.com = MinJerkTrajectory(times, coms)
        self.angle = MinJerkTrajectory(times, angles)

    def phase(self, t):
        """Name of the phase at ``t`` (for logs and plots)."""
        for name, t0, t1 in self.phases:
            if t0 <= t < t1:
                return name
        return 'stand'

    def __call__(self, t):
        """The :class:`WBCReference` at ``t`` seconds from the start."""
        c, cd, cdd = self.com(t)
        a, _, _ = self.angle(t)
        angle = float(np.linalg.norm(a))
        R = _axis_rotation(a / angle, angle) if angle > 0 else np.eye(3)
        stance, swing, fmax = tuple(self.feet), {}, {}
        for foot, t_lift, t_swing, t_down, t_loaded in self.steps:
            if t_swing <= t < t_down:
                stance = tuple(f for f in self.feet if f != foot)
                swing[foot] = _swing(self.feet0[foot], self.press, self.height, t_swing,
                                     t_down, t)
            elif t_lift <= t < t_swing:
                fmax[foot] = self.f_ramp * (t_swing - t) / self.unload
            elif t_down <= t < t_loaded:
                fmax[foot] = self.f_ramp * (t - t_down) / self.unload
        return WBCReference(c, cd, cdd, stance, swing, R_ref=R, normal_force_max=fmax)
