"""A swing foot's reference (plain numpy, no ROS): from where it lifted off to where it should
land, ``p(s) = p0 + (p1 − p0) β(s) + h 64 s³ (1 − s)³ e_z``, ``s = (t − t0) / T`` in [0, 1].

``β(s) = 10 s³ − 15 s⁴ + 6 s⁵`` is the minimum-jerk profile (Flash & Hogan 1985, eq. (2)): the
foot leaves and arrives at rest, with no acceleration at either end; the height term peaks at
``h`` at mid-swing and also ends with zero velocity and acceleration, so a touch-down is soft
and the reference is continuous with a stance foot's.  The target ``p1`` may change during the
swing (a foothold planned again every cycle); the derivatives are those of the curve for the
current ``p1``.
"""
import numpy as np

__all__ = ['swing_reference']

_Z = np.array([0.0, 0.0, 1.0])


def swing_reference(p0, p1, height, s, duration):
    """(p, ṗ, p̈) at phase ``s`` (clipped to [0, 1]) of the swing from ``p0`` to ``p1`` (3,)
    with apex ``height`` above the straight line, lasting ``duration`` s (module docstring)."""
    s = min(1.0, max(0.0, float(s)))
    T = float(duration)
    d = np.asarray(p1, dtype=float) - p0
    beta = s**3 * (10.0 - 15.0 * s + 6.0 * s * s)
    beta_d = 30.0 * s * s * (1.0 - s)**2 / T
    beta_dd = 60.0 * s * (1.0 - s) * (1.0 - 2.0 * s) / T**2
    bump = 64.0 * height * s**3 * (1.0 - s)**3                  # h 64 s³ (1 − s)³
    bump_d = 192.0 * height * s * s * (1.0 - s)**2 * (1.0 - 2.0 * s) / T
    bump_dd = 192.0 * height * s * (1.0 - s) * (2.0 - 10.0 * s + 10.0 * s * s) / T**2
    return (p0 + beta * d + bump * _Z, beta_d * d + bump_d * _Z, beta_dd * d + bump_dd * _Z)
