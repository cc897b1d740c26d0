"""Model-based joint-space tracking control (plain numpy, no ROS): reference trajectories, the
control laws (PD + gravity, computed torque, Slotine–Li) and the stamp pairing of joint states
with the dynamics terms computed for them.  The ROS node :mod:`ros_dynamics.ros.control.tracking_controller`
is a thin adapter over this package."""

from .laws import (LAWS, ComputedTorque, PDGravity, SlotineLi, make_law,  # noqa: F401
                   slotine_li_lyapunov)
from .pairing import StampPairer  # noqa: F401
from .trajectories import (TRAJECTORIES, MinJerkTrajectory, SineTrajectory,  # noqa: F401
                           make_trajectory, min_jerk_cycle)

__all__ = ['LAWS', 'ComputedTorque', 'PDGravity', 'SlotineLi', 'make_law',
           'slotine_li_lyapunov', 'StampPairer', 'TRAJECTORIES', 'MinJerkTrajectory',
           'SineTrajectory', 'make_trajectory', 'min_jerk_cycle']
