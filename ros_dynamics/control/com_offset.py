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
first-order filter of time constant ``tau``, over the samples whose measured normal forces add
up to at least ``min_load`` of the model's weight); the controller then tracks
``c_ref − δ`` with its model so that the true CoM tracks ``c_ref``.  The vertical offset is
not observable from the CoP and stays zero.
"""
import numpy as np

__all__ = ['CoMCorrection', 'CoMOffset', 'centre_of_pressure']


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
    (3,) the current estimate (z always 0)."""

    def __init__(self, tau=0.5, min_load=0.8, gravity=9.81):
        if not tau > 0 or not 0 < min_load <= 1:
            raise ValueError('tau must be > 0 and min_load in (0, 1]')
        self.tau, self.min_load, self.gravity = float(tau), float(min_load), float(gravity)
        self.offset = np.zeros(3)
        self.updates = 0

    def update(self, dt, positions, forces, com_model, com_acceleration, weight):
        """One measurement ``dt`` s after the previous: feet ``positions`` and measured
        ``forces`` (k, 3, world), the model's CoM ``com_model`` (3,) and reference acceleration
        ``com_acceleration`` (3,), the model's ``weight`` [N].  Returns the offset (3,)."""
        p, total = centre_of_pressure(positions, forces)
        if p is None or total < self.min_load * weight or not dt > 0:
            return self.offset
        h = com_model[2] - float(np.mean(np.asarray(positions)[:, 2]))
        delta = p + (h / self.gravity) * np.asarray(com_acceleration)[:2] - com_model[:2]
        a = 1.0 - np.exp(-dt / self.tau)
        self.offset[:2] += a * (delta - self.offset[:2])
        self.updates += 1
        return self.offset


class CoMCorrection:
    """The CoM reference a controller tracks with its model, corrected for a model that is not
    the robot: shifted by the :class:`CoMOffset` the measured stance forces give (the true CoM
    to the reference horizontally), and an integral term ``K_i ∫ (c_target − c)_xy dt`` added
    to the reference acceleration (the CoM task becomes a PID horizontally: no steady-state
    error of the model's CoM there; stable for K_i < K_p K_d, the characteristic polynomial
    s³ + K_d s² + K_p s + K_i).  Vertically the offset is not observable and the PD stays.  ``integral_gain`` 0: no integral;
    ``offset`` None: no offset."""

    def __init__(self, offset=None, integral_gain=0.0, integral_limit=0.05):
        self.offset, self.ki = offset, float(integral_gain)
        self.limit = float(integral_limit)
        self.integral = np.zeros(3)
        self._last = self._last_measured = None

    def update(self, stamp_ns, ref, com, measured=None, weight=None):
        """The corrected reference (a :class:`~ros_dynamics.control.wbc.WBCReference`) for the
        model's CoM ``com`` at ``stamp_ns``; ``measured``: a new measurement (its stamp [ns],
        the feet's positions (k, 3), their measured forces (k, 3), world) or None; ``weight``:
        the model's [N]."""
        from dataclasses import replace
        dt = 0.0 if self._last is None else (stamp_ns - self._last) * 1e-9
        self._last = stamp_ns
        target = np.asarray(ref.com, dtype=float)
        if self.offset is not None:
            if measured is not None:
                t, positions, forces = measured
                dt_m = 0.0 if self._last_measured is None else (t - self._last_measured) * 1e-9
                self._last_measured = t
                self.offset.update(dt_m, positions, forces, com, ref.com_acceleration, weight)
            target = target - self.offset.offset
        acc = np.asarray(ref.com_acceleration, dtype=float)
        if self.ki > 0:
            # integrated in [m s]; the bound keeps a long disturbance from winding it up
            # horizontal only: the vertical offset between the model's CoM and the robot's is not
            # observable (from the CoP), so the model's CoM exactly at the target height is no
            # nearer the truth than the PD's sag
            e = np.asarray(target - com, dtype=float)
            e[2] = 0.0
            self.integral = np.clip(self.integral + e * dt, -self.limit, self.limit)
            acc = acc + self.ki * self.integral
        return replace(ref, com=target, com_acceleration=acc)
