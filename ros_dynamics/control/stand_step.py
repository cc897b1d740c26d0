"""A built-in scenario for a quadruped's whole-body controller (plain numpy, no ROS): stand,
track a CoM trajectory, shift the weight over three feet, lift the fourth and put it down,
shift back and stand (a push, if any, is the simulator's).

:class:`StandStepSchedule` is built from the first state the controller sees (the CoM and the
four feet's positions) and maps time since then to a :class:`~ros_dynamics.control.wbc.WBCReference`.
CoM and swing references are rest-to-rest minimum-jerk segments (Flash & Hogan 1985,
:class:`~ros_dynamics.control.trajectories.MinJerkTrajectory`); the swing foot's height is
``h · 64 s³ (1 − s)³`` (peak ``h`` at mid-swing, zero velocity and acceleration at both ends).
The lifted foot is unloaded before lift-off and loaded after touch-down by ramping its normal
force bound between ``unload_from`` (N, about its share of the weight: below it the bound acts
over most of the ramp) and 0, so the QP moves the weight to the other feet over the ramp
instead of in one cycle.
"""

import numpy as np

from .trajectories import MinJerkTrajectory
from .wbc import WBCReference

__all__ = ['StandStepSchedule']


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
        p0 = self.feet0[self.lift]
        self.swing_xy = MinJerkTrajectory([self.t_swing, self.t_down],
                                          [p0, p0 - np.array([0.0, 0.0, press])])
        self.height = float(step_height)
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
            p, pd, pdd = self.swing_xy(t)
            T = self.t_down - self.t_swing
            s = (t - self.t_swing) / T
            # h 64 s^3 (1 - s)^3 and its time derivatives
            z = 64.0 * s**3 * (1 - s)**3
            zd = 64.0 * (3 * s**2 * (1 - s)**3 - 3 * s**3 * (1 - s)**2) / T
            zdd = 64.0 * (6 * s * (1 - s)**3 - 18 * s**2 * (1 - s)**2
                          + 6 * s**3 * (1 - s)) / T**2
            p, pd, pdd = p.copy(), pd.copy(), pdd.copy()
            p[2] += self.height * z
            pd[2] += self.height * zd
            pdd[2] += self.height * zdd
            swing[self.lift] = (p, pd, pdd)
        elif self.t_lift <= t < self.t_swing:          # unload: bound falls to 0
            fmax[self.lift] = self.f_ramp * (self.t_swing - t) / self.unload
        elif self.t_down <= t < self.t_loaded:         # load: bound rises again
            fmax[self.lift] = self.f_ramp * (t - self.t_down) / self.unload
        return WBCReference(c, cd, cdd, stance, swing, normal_force_max=fmax)
