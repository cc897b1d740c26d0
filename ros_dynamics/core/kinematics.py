"""Forward kinematics in the world frame: the first pass every algorithm shares.

``placements`` computes, for the configuration q, each body's rotation R_i and origin p_i in
the world and each DoF's motion subspace Phi_s (seed 000 eq. (5)) in world Plücker
coordinates; ``world_inertias`` re-expresses the body inertias there; ``velocities``
computes v_i = v_p(i) + Phi_i qd_i and Phid_i = v_i x Phi_i (seed 000, Alg. 1 lines 3-4; the
joint axes are fixed in their body, so the apparent derivative Phi-ring is zero).
``workspace`` allocates the scratch of one kernel call at once (one allocation, then views).

Model arrays (see :class:`ros_dynamics.model.Model` and ``kernel_arrays``):
``topo[i] = (parent, jtype, q_idx, v_idx)``, ``geom[i]`` rows: 0-2 X_R, 3 X_p, 4 axis, 5 CoM,
6-8 inertia about the CoM, 9 [mass, 0, 0]; ``dofs[s] = (body, dof_parent)``.
"""

import numpy as np
from numba import njit

from .model import FREE, PRISMATIC, REVOLUTE
from .spatial import I_H, I_J, NI, _JIT, motion_cross, quaternion_to_matrix, row6

# rows of ``geom``
G_XR, G_XP, G_AXIS, G_COM, G_INERTIA, G_MASS = 0, 3, 4, 5, 6, 9
NGEOM = 10


def kernel_arrays(model):
    """Pack a Model into the three arrays the kernels take (few arguments = cheap calls)."""
    N = model.nbodies
    topo = np.stack([model.parent, model.jtype, model.q_idx, model.v_idx], axis=1).astype(np.int64)
    geom = np.zeros((N, NGEOM, 3))
    geom[:, G_XR:G_XR + 3] = model.X_R
    geom[:, G_XP] = model.X_p
    geom[:, G_AXIS] = model.axis
    geom[:, G_COM] = model.com
    geom[:, G_INERTIA:G_INERTIA + 3] = model.inertia
    geom[:, G_MASS, 0] = model.mass
    dofs = np.stack([model.dof_body, model.dof_parent], axis=1).astype(np.int64)
    return np.ascontiguousarray(topo), np.ascontiguousarray(geom), np.ascontiguousarray(dofs)


@njit(**_JIT)
def workspace(N, nv):
    """Per-call scratch in one allocation: R (N,3,3), p (N,3), Phi and Phid (nv,6), the world
    inertias I (N,NI), vel (N,6), and W (6,N,6), free for the algorithm's own per-body rows."""
    buf = np.empty(N * (9 + 3 + NI + 6 + 36) + nv * 12)
    o1 = 9 * N
    o2 = o1 + 3 * N
    o3 = o2 + 6 * nv
    o4 = o3 + 6 * nv
    o5 = o4 + NI * N
    o6 = o5 + 6 * N
    return (buf[:o1].reshape((N, 3, 3)), buf[o1:o2].reshape((N, 3)), buf[o2:o3].reshape((nv, 6)),
            buf[o3:o4].reshape((nv, 6)), buf[o4:o5].reshape((N, NI)), buf[o5:o6].reshape((N, 6)),
            buf[o6:].reshape((6, N, 6)))


@njit(**_JIT)
def set6(A, i, x):
    """A[i] = x for a 6-tuple x."""
    A[i, 0], A[i, 1], A[i, 2], A[i, 3], A[i, 4], A[i, 5] = x


@njit(**_JIT)
def placements(topo, geom, q, R, p, Phi):
    """World placement (R_i, p_i) of every body and world motion subspace Phi_s of every DoF."""
    for i in range(topo.shape[0]):
        parent, jtype, qi, s = topo[i, 0], topo[i, 1], topo[i, 2], topo[i, 3]
        if jtype == FREE:
            # Free joint, Pinocchio's layout: q = [position, quaternion xyzw], v = body twist
            # [v_lin; w] in the base frame.  Phi maps it to the world spatial velocity:
            # columns [0; R e_k] for the linear part, [R e_k; p x R e_k] for the angular part.
            quaternion_to_matrix(q[qi + 3], q[qi + 4], q[qi + 5], q[qi + 6], R, i)
            p0, p1, p2 = q[qi], q[qi + 1], q[qi + 2]
            p[i, 0], p[i, 1], p[i, 2] = p0, p1, p2
            for k in range(3):
                c0, c1, c2 = R[i, 0, k], R[i, 1, k], R[i, 2, k]
                set6(Phi, s + k, (0.0, 0.0, 0.0, c0, c1, c2))
                set6(Phi, s + 3 + k, (c0, c1, c2, p1 * c2 - p2 * c1, p2 * c0 - p0 * c2, p0 * c1 - p1 * c0))
            continue
        # joint frame J in the world: R_J = R_p X_R, p_J = p_p + R_p X_p
        if parent < 0:
            for r in range(3):
                for c in range(3):
                    R[i, r, c] = geom[i, G_XR + r, c]
                p[i, r] = geom[i, G_XP, r]
        else:
            for r in range(3):
                R[i, r, 0], R[i, r, 1], R[i, r, 2] = _row_times(R, parent, r, geom, i, G_XR)
                p[i, r] = (p[parent, r] + R[parent, r, 0] * geom[i, G_XP, 0]
                           + R[parent, r, 1] * geom[i, G_XP, 1] + R[parent, r, 2] * geom[i, G_XP, 2])
        x0, x1, x2 = geom[i, G_AXIS, 0], geom[i, G_AXIS, 1], geom[i, G_AXIS, 2]
        a0 = R[i, 0, 0] * x0 + R[i, 0, 1] * x1 + R[i, 0, 2] * x2      # joint axis in the world
        a1 = R[i, 1, 0] * x0 + R[i, 1, 1] * x1 + R[i, 1, 2] * x2
        a2 = R[i, 2, 0] * x0 + R[i, 2, 1] * x1 + R[i, 2, 2] * x2
        if jtype == REVOLUTE:
            # R_i = R_J Rot(x, q) with the exactly-unit local axis x (Rodrigues).  Rotating R_J
            # about the world axis a = R_J x instead would feed R_J's rounding error back
            # through |a| != 1, doubling the orthogonality error at every link of a chain.
            cq, sq = np.cos(q[qi]), np.sin(q[qi])
            t = 1.0 - cq
            k00, k01, k02 = cq + t * x0 * x0, t * x0 * x1 - sq * x2, t * x0 * x2 + sq * x1
            k10, k11, k12 = t * x0 * x1 + sq * x2, cq + t * x1 * x1, t * x1 * x2 - sq * x0
            k20, k21, k22 = t * x0 * x2 - sq * x1, t * x1 * x2 + sq * x0, cq + t * x2 * x2
            for r in range(3):
                y0, y1, y2 = R[i, r, 0], R[i, r, 1], R[i, r, 2]
                R[i, r, 0] = y0 * k00 + y1 * k10 + y2 * k20
                R[i, r, 1] = y0 * k01 + y1 * k11 + y2 * k21
                R[i, r, 2] = y0 * k02 + y1 * k12 + y2 * k22
            # Phi = [a; p x a]: rotation about the line through p_i along a
            p0, p1, p2 = p[i, 0], p[i, 1], p[i, 2]
            set6(Phi, s, (a0, a1, a2, p1 * a2 - p2 * a1, p2 * a0 - p0 * a2, p0 * a1 - p1 * a0))
        elif jtype == PRISMATIC:
            p[i, 0] += q[qi] * a0
            p[i, 1] += q[qi] * a1
            p[i, 2] += q[qi] * a2
            set6(Phi, s, (0.0, 0.0, 0.0, a0, a1, a2))


@njit(**_JIT)
def world_inertias(geom, R, p, I):
    """Body inertias in the world frame, rows (m, h, J): h = m c, J = R Ic R^T + m (|c|^2 1 - c c^T)."""
    for i in range(geom.shape[0]):
        mi = geom[i, G_MASS, 0]
        cb0, cb1, cb2 = geom[i, G_COM, 0], geom[i, G_COM, 1], geom[i, G_COM, 2]
        c0 = p[i, 0] + R[i, 0, 0] * cb0 + R[i, 0, 1] * cb1 + R[i, 0, 2] * cb2
        c1 = p[i, 1] + R[i, 1, 0] * cb0 + R[i, 1, 1] * cb1 + R[i, 1, 2] * cb2
        c2 = p[i, 2] + R[i, 2, 0] * cb0 + R[i, 2, 1] * cb1 + R[i, 2, 2] * cb2
        I[i, 0] = mi
        I[i, I_H], I[i, I_H + 1], I[i, I_H + 2] = mi * c0, mi * c1, mi * c2
        # T = R Ic (rows t), then the upper triangle of T R^T
        t00, t01, t02 = _row_times(R, i, 0, geom, i, G_INERTIA)
        t10, t11, t12 = _row_times(R, i, 1, geom, i, G_INERTIA)
        t20, t21, t22 = _row_times(R, i, 2, geom, i, G_INERTIA)
        R00, R01, R02 = R[i, 0, 0], R[i, 0, 1], R[i, 0, 2]
        R10, R11, R12 = R[i, 1, 0], R[i, 1, 1], R[i, 1, 2]
        R20, R21, R22 = R[i, 2, 0], R[i, 2, 1], R[i, 2, 2]
        cc = c0 * c0 + c1 * c1 + c2 * c2
        I[i, I_J + 0] = t00 * R00 + t01 * R01 + t02 * R02 + mi * (cc - c0 * c0)      # xx
        I[i, I_J + 1] = t00 * R10 + t01 * R11 + t02 * R12 - mi * c0 * c1             # xy
        I[i, I_J + 2] = t00 * R20 + t01 * R21 + t02 * R22 - mi * c0 * c2             # xz
        I[i, I_J + 3] = t10 * R10 + t11 * R11 + t12 * R12 + mi * (cc - c1 * c1)      # yy
        I[i, I_J + 4] = t10 * R20 + t11 * R21 + t12 * R22 - mi * c1 * c2             # yz
        I[i, I_J + 5] = t20 * R20 + t21 * R21 + t22 * R22 + mi * (cc - c2 * c2)      # zz


@njit(**_JIT)
def _row_times(R, i, r, geom, j, row):
    """Row r of the 3x3 product R[i] G, G = geom[j, row:row + 3]."""
    R0, R1, R2 = R[i, r, 0], R[i, r, 1], R[i, r, 2]
    return (R0 * geom[j, row, 0] + R1 * geom[j, row + 1, 0] + R2 * geom[j, row + 2, 0],
            R0 * geom[j, row, 1] + R1 * geom[j, row + 1, 1] + R2 * geom[j, row + 2, 1],
            R0 * geom[j, row, 2] + R1 * geom[j, row + 1, 2] + R2 * geom[j, row + 2, 2])


@njit(**_JIT)
def velocities(topo, dofs, Phi, qd, vel, Phid):
    """v_i = v_p(i) + Phi_i qd_i and Phid_s = v_i x Phi_s (seed 000, Alg. 1 lines 3-4)."""
    nv = Phi.shape[0]
    for i in range(topo.shape[0]):
        parent = topo[i, 0]
        v = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0) if parent < 0 else row6(vel, parent)
        s = topo[i, 3]
        while s < nv and dofs[s, 0] == i:
            x = qd[s]
            v = (v[0] + Phi[s, 0] * x, v[1] + Phi[s, 1] * x, v[2] + Phi[s, 2] * x,
                 v[3] + Phi[s, 3] * x, v[4] + Phi[s, 4] * x, v[5] + Phi[s, 5] * x)
            s += 1
        set6(vel, i, v)
        s = topo[i, 3]
        while s < nv and dofs[s, 0] == i:
            set6(Phid, s, motion_cross(v, row6(Phi, s)))
            s += 1
