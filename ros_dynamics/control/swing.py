"""A swing foot's reference (plain numpy, no ROS): from where it lifted off to where it should
land, ``p(s) = p0 + (p1 − p0) β(s) + [h 64 s³ (1 − s)³ + v_l T s³ (1 − s)] e_z``,
``s = (t − t0) / T`` in [0, 1].

``β(s) = 10 s³ − 15 s⁴ + 6 s⁵`` is the minimum-jerk profile (Flash & Hogan 1985, eq. (2)): the
foot leaves at rest with no acceleration and arrives at ``p1`` with no horizontal velocity; the
height term peaks at ``h`` at mid-swing and ends with zero velocity and acceleration.  The
landing term (zero with its first two derivatives at lift-off, zero at ``s = 1``) makes the
foot arrive moving down at ``v_l`` (``landing_speed``): a foot that arrives at rest reaches the
ground with almost no speed (Solo12 in MuJoCo: a touch of 2-3 N, below a force estimate's
threshold, and a bounce), so that it is seen on the ground only once the gait loads it; one
that arrives moving is on the ground at the planned time, pressed against it.
The target ``p1`` may change during the swing (a foothold planned again every cycle); the
derivatives are those of the curve for the current ``p1``.
"""
import numpy as np

__all__ = ['swing_reference']

_Z = np.array([0.0, 0.0, 1.0])


def swing_reference(p0, p1, height, s, duration, landing_speed=0.0):
    """(p, ṗ, p̈) at phase ``s`` (clipped to [0, 1]) of the swing from ``p0`` to ``p1`` (3,)
    with apex ``height`` above the straight line, lasting ``duration`` s, arriving at
    ``landing_speed`` m/s downwards (module docstring)."""
    s = min(1.0, max(0.0, float(s)))
    T = float(duration)
    d = np.asarray(p1, dtype=float) - p0
    beta = s**3 * (10.0 - 15.0 * s + 6.0 * s * s)
    beta_d = 30.0 * s * s * (1.0 - s)**2 / T
    beta_dd = 60.0 * s * (1.0 - s) * (1.0 - 2.0 * s) / T**2
    bump = 64.0 * height * s**3 * (1.0 - s)**3                  # h 64 s³ (1 − s)³
    bump_d = 192.0 * height * s * s * (1.0 - s)**2 * (1.0 - 2.0 * s) / T
    bump_dd = 192.0 * height * s * (1.0 - s) * (2.0 - 10.0 * s + 10.0 * s * s) / T**2
    v = float(landing_speed)                                    # + v_l T s³ (1 − s)
    bump += v * T * s**3 * (1.0 - s)
    bump_d += v * s * s * (3.0 - 4.0 * s)
    bump_dd += v * s * (6.0 - 12.0 * s) / T
    return (p0 + beta * d + bump * _Z, beta_d * d + bump_d * _Z, beta_dd * d + bump_dd * _Z)
