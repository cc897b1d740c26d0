"""Where a swinging foot lands (plain numpy, no ROS): Raibert's neutral point with a velocity
feedback (Raibert 1986, "Legged robots that balance", ch. 2), in the form of Bledt et al. 2018
("MIT Cheetah 3", eqs. 7-9) for a trunk that moves at a commanded velocity and yaw rate:

    p_f = p_hip(t_td) + (T_st / 2) v_cmd + k √(h / g) (v − v_cmd) + (h / 2g) v × ω_cmd     (1)

* ``p_hip(t_td)``: the foot's nominal position (its place under the trunk when the robot
  started, in the heading frame) where the trunk will be at the planned touch-down, the trunk
  moved on from where it is at the commanded velocity and yaw rate;
* ``(T_st / 2) v_cmd``: the neutral point, which the trunk passes over at mid-stance;
* ``k √(h/g) (v − v_cmd)``: a foot placed ahead of the neutral point slows the trunk down
  (the capture point of the linear inverted pendulum of height ``h`` is √(h/g) v ahead of the
  CoM: Pratt et al. 2006), ``k`` = ``feedback``;
* ``(h / 2g) v × ω_cmd``: the centripetal term of a turn.

Only the horizontal components are planned; the result is limited to ``reach`` m around
``p_hip(t_td)`` (the leg's workspace).
"""
import math

import numpy as np

__all__ = ['Foothold', 'yaw_rotation']


def yaw_rotation(yaw):
    """The 2-D rotation by ``yaw`` [rad]."""
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s], [s, c]])


class Foothold:
    """Equation (1) for a trunk at height ``height`` [m] whose feet stand ``stance`` s."""

    def __init__(self, height, stance, reach, feedback=1.0, gravity=9.81):
        if not (height > 0 and stance > 0 and reach > 0 and feedback >= 0):
            raise ValueError('height, stance duration and reach must be > 0, feedback >= 0')
        self.h, self.stance, self.reach = float(height), float(stance), float(reach)
        self.k = float(feedback) * math.sqrt(self.h / gravity)
        self.centripetal = self.h / (2.0 * gravity)

    def __call__(self, nominal, com, yaw, v, v_cmd, yaw_rate, ahead):
        """The horizontal foothold (x, y) of a foot whose ``nominal`` position (2) is given
        relative to the CoM in the heading frame, the CoM at ``com`` (its x, y used), heading
        ``yaw``, measured and commanded velocities ``v``, ``v_cmd`` (world, their x, y used),
        commanded ``yaw_rate``, touch-down ``ahead`` s from now (floats throughout: two-element
        numpy arithmetic costs more than it computes)."""
        vx, vy, cx, cy = float(v[0]), float(v[1]), float(v_cmd[0]), float(v_cmd[1])
        psi = yaw + yaw_rate * ahead
        c, s = math.cos(psi), math.sin(psi)
        hx = float(com[0]) + cx * ahead + c * nominal[0] - s * nominal[1]
        hy = float(com[1]) + cy * ahead + s * nominal[0] + c * nominal[1]
        w = self.centripetal * yaw_rate
        ox = 0.5 * self.stance * cx + self.k * (vx - cx) + w * vy
        oy = 0.5 * self.stance * cy + self.k * (vy - cy) - w * vx
        shrink = min(1.0, self.reach / max(math.hypot(ox, oy), 1e-12))
        return hx + shrink * ox, hy + shrink * oy
