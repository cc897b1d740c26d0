"""Configuration space: the one place that knows the layout of q and v.

Joint coordinates (docs/conventions.md): a revolute or prismatic joint has one entry in q and one in
v; the 6-DoF free joint of a floating base (always body 0) has q = [x y z qx qy qz qw] (position
in the world, unit quaternion x-y-z-w) and v = [v_lin, omega] in the base frame (Pinocchio's
free-flyer).  So q lives on R^nj (fixed base) or SE(3) x R^nj, and the operations that are
not plain vector arithmetic are here: the base block's sizes, the neutral configuration,
quaternion normalization, and integration q (+) v dt on the manifold.  Nobody else writes 6, 7
or ``nq - nj``.
"""

import numpy as np
from numba import njit

# Joint types (``Model.jtype``).
REVOLUTE = 0     # revolute and continuous: q = angle about ``axis``
PRISMATIC = 1    # q = displacement along ``axis``
FREE = 2         # 6-DoF free joint at the root (body 0)

JOINT_NQ = {REVOLUTE: 1, PRISMATIC: 1, FREE: 7}
JOINT_NV = {REVOLUTE: 1, PRISMATIC: 1, FREE: 6}
FREE_QUATERNION = slice(3, 7)      # q[3:7]: the base orientation (x, y, z, w)

QUATERNION_TOLERANCE = 1e-3        # |  |quat|^2 - 1 | accepted at the validation boundary


def base_nq(model):
    """Entries of q before the first named joint (7 for a floating base, else 0)."""
    return JOINT_NQ[FREE] if model.floating_base else 0


def base_nv(model):
    """Entries of v before the first named joint (6 for a floating base, else 0)."""
    return JOINT_NV[FREE] if model.floating_base else 0


def set_free_joint(q, v, position, orientation, linear=(0.0, 0.0, 0.0),
                   angular=(0.0, 0.0, 0.0)):
    """Write a floating base's pose (``position`` x y z, ``orientation`` quaternion x y z w)
    and twist (``linear``, ``angular``: base frame) into the free joint's entries of q, v."""
    q[:3], q[FREE_QUATERNION] = position, orientation
    v[:3], v[3:JOINT_NV[FREE]] = linear, angular


def neutral(model):
    """The neutral configuration: zeros, identity quaternion for a floating base."""
    q = np.zeros(model.nq)
    if model.floating_base:
        q[6] = 1.0
    return q


def quaternion_norm(model, q):
    """Norm of the base quaternion (1.0 for a fixed base)."""
    return float(np.linalg.norm(q[FREE_QUATERNION])) if model.floating_base else 1.0


@njit(cache=True, nogil=True)
def quaternion_ok(jtype, q):
    """Compiled check: the free joint's quaternion (if body 0 is free) has unit length."""
    if jtype.shape[0] == 0 or jtype[0] != FREE:
        return True
    n2 = q[3] * q[3] + q[4] * q[4] + q[5] * q[5] + q[6] * q[6]
    return abs(n2 - 1.0) <= QUATERNION_TOLERANCE


def is_normalized(model, q, tol=QUATERNION_TOLERANCE):
    """True if the base quaternion of q has unit length within ``tol`` (on |quat|^2)."""
    return abs(quaternion_norm(model, q) ** 2 - 1.0) <= tol


def normalize(model, q):
    """A copy of q with the base quaternion scaled to unit length."""
    q = np.array(q, dtype=float)
    if model.floating_base:
        n = np.linalg.norm(q[FREE_QUATERNION])
        if not n > 0.0:
            raise ValueError('the base quaternion is zero')
        q[FREE_QUATERNION] /= n
    return q


def quaternion_matrix(x, y, z, w):
    """Rotation matrix of the quaternion (x, y, z, w), normalized first."""
    n = np.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x / n, y / n, z / n, w / n
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _quaternion_multiply(a, b):
    x1, y1, z1, w1 = a
    x2, y2, z2, w2 = b
    return np.array([w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                     w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
                     w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2])


def integrate(model, q, v, dt=1.0):
    """q (+) v dt: joint coordinates by Euler, the free joint on SE(3) with the base twist
    held constant in the base frame for the rotation (quaternion exponential) and its linear
    part rotated by the orientation at the start: p += R(quat) v_lin dt (a first-order step
    of the translation, exact for the rotation).  Returns a new array; the quaternion stays
    unit."""
    q = np.array(q, dtype=float)
    v = np.asarray(v, dtype=float)
    bq, bv = base_nq(model), base_nv(model)
    q[bq:] += dt * v[bv:]
    if bq:
        R = quaternion_matrix(*q[FREE_QUATERNION])
        q[:3] += R @ (v[:3] * dt)
        w = v[3:6] * dt
        angle = float(np.linalg.norm(w))
        if angle > 1e-12:
            axis = w / angle
            dq = np.concatenate([axis * np.sin(angle / 2), [np.cos(angle / 2)]])
            q[FREE_QUATERNION] = _quaternion_multiply(q[FREE_QUATERNION], dq)   # body-frame twist
        q[FREE_QUATERNION] /= np.linalg.norm(q[FREE_QUATERNION])
    return q
