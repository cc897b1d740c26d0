"""Plain-numpy geometry used when building models (not in the per-cycle kernels)."""

import numpy as np


def rpy_to_matrix(rpy):
    """URDF roll-pitch-yaw (fixed axes x, y, z): R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def skew(a):
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def lump_inertia(m1, c1, I1, m2, c2, I2):
    """Sum of two rigid-body inertias given in the same frame (mass, CoM, inertia about the CoM).

    Returns the combined (mass, CoM, inertia about the combined CoM): the parallel-axis
    theorem applied to each part, e.g. to merge a fixed-joint child into its parent.
    """
    m = m1 + m2
    if m == 0.0:
        return 0.0, np.zeros(3), np.asarray(I1, float) + np.asarray(I2, float)
    c = (m1 * np.asarray(c1, float) + m2 * np.asarray(c2, float)) / m
    d1, d2 = np.asarray(c1, float) - c, np.asarray(c2, float) - c
    shift = lambda mk, d: mk * (d @ d * np.eye(3) - np.outer(d, d))
    return m, c, np.asarray(I1, float) + shift(m1, d1) + np.asarray(I2, float) + shift(m2, d2)
