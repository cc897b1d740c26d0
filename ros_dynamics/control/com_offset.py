"""The offset between the robot's true centre of mass and its model's, from the measured stance
forces' centre of pressure (plain numpy, no ROS, no model of its own).

A whole-body controller tracks the CoM of its model; a load the model does not know, or links
heavier than it says, put the true CoM elsewhere, by a constant offset the controller cannot see
in its own state.  The feet see it: the centre of pressure of the ground reaction forces is,
for the linear inverted pendulum of height ``h`` (Kajita et al. 2001),

    p = c_xy − (h / g) c̈_xy,                                                          (1)

so ``c_xy ≈ p + (h / g) c̈_xy`` measures the true CoM's horizontal position while the feet
are loaded.  Following Stephens 2011 ("State estimation for force-controlled humanoid balance
using simple models in the presence of modeling error", ICRA: a CoM offset state estimated
from the measured CoP), :class:`CoMOffset` low-passes ``δ = p + (h/g) c̈_ref − c_model`` (a
first-order filter of time constant ``tau``) over the quasi-static samples: the measured
normal forces add up to at least ``min_load`` of the model's weight and the reference moves
slower than ``max_speed`` (the measured forces are the observer's K/(s+K) of the true ones, some
20 ms late at K = 50 1/s, and (1) leaves out the legs' own motion: while the CoM moves these
errors are mm, as large as the offset); the controller then tracks
``c_ref − δ`` with its model so that the true CoM tracks ``c_ref``.  The vertical offset is
not observable from the CoP and stays zero.
"""
import numpy as np

__all__ = ['CoMOffset', 'centre_of_pressure']


def centre_of_pressure(positions, forces):
    """(x, y) of the centre of pressure of point forces ``forces`` (k, 3, world) at
    ``positions`` (k, 3) on a horizontal floor, and their total normal force; (None, 0) when
    nothing pushes."""
    fz = np.clip(np.asarray(forces, dtype=float)[:, 2], 0.0, None)
    total = float(fz.sum())
    if total <= 0.0:
        return None, 0.0
    return fz @ np.asarray(positions, dtype=float)[:, :2] / total, total


class CoMOffset:
    """The filter of the module docstring: :meth:`update` once per measurement, :attr:`offset`
    (3,) the current estimate (z always 0), :meth:`reference` the shifted reference."""

    def __init__(self, tau=2.0, min_load=0.8, max_speed=0.005, gravity=9.81):
        if not tau > 0 or not 0 < min_load <= 1:
            raise ValueError('tau must be > 0 and min_load in (0, 1]')
        self.tau, self.min_load, self.gravity = float(tau), float(min_load), float(gravity)
        self.max_speed = float(max_speed)
        self.offset = np.zeros(3)
        self.updates = 0

    def update(self, dt, positions, forces, com_model, com_acceleration, weight,
               com_velocity=(0.0, 0.0, 0.0)):
        """One measurement ``dt`` s after the previous: feet ``positions`` and measured
        ``forces`` (k, 3, world), the model's CoM ``com_model`` (3,), the reference's
        acceleration and velocity (3,), the model's ``weight`` [N].  Returns the offset (3,)."""
        p, total = centre_of_pressure(positions, forces)
        if (p is None or total < self.min_load * weight or not dt > 0
                or np.linalg.norm(com_velocity) > self.max_speed):
            return self.offset
        h = com_model[2] - float(np.mean(np.asarray(positions)[:, 2]))
        delta = p + (h / self.gravity) * np.asarray(com_acceleration)[:2] - com_model[:2]
        a = 1.0 - np.exp(-dt / self.tau)
        self.offset[:2] += a * (delta - self.offset[:2])
        self.updates += 1
        return self.offset


    def reference(self, ref):
        """``ref`` (a :class:`~ros_dynamics.control.wbc.WBCReference`) with its CoM shifted by
        −offset: what the controller tracks with its model for the true CoM to track ``ref``."""
        from dataclasses import replace
        return replace(ref, com=np.asarray(ref.com, dtype=float) - self.offset)
