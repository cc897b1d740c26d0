"""Forward kinematics in the world frame: the first pass every algorithm shares.

``placements`` computes, for the configuration q, each body's rotation R_i and origin p_i in
the world and each DoF's motion subspace Phi_s (seed 000 eq. (5)) in world Plücker
coordinates; ``world_inertias`` re-expresses the body inertias there; ``velocities``
computes v_i = v_p(i) + Phi_i qd_i and Phid_i = v_i x Phi_i (seed 000, Alg. 1 lines 3-4; the
joint axes are fixed in their body, so the apparent derivative Phi-ring is zero).

Model arrays (see :class:`ros_dynamics.model.Model` and ``kernel_arrays``):
``topo[i] = (parent, jtype, q_idx, v_idx)``, ``geom[i]`` rows: 0-2 X_R, 3 X_p, 4 axis, 5 CoM,
6-8 inertia about the CoM, 9 [mass, 0, 0]; ``dofs[s] = (body, dof_parent)``.
"""

import numpy as np
from numba import njit

from .model import FREE, PRISMATIC, REVOLUTE
from .spatial import _JIT, cross3, motion_cross, quaternion_to_matrix

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
def placements(topo, geom, q, R, p, Phi):
    """World placement (R_i, p_i) of every body and world motion subspace Phi_s of every DoF."""
    a = np.empty(3)
    for i in range(topo.shape[0]):
        parent, jtype, qi, s = topo[i, 0], topo[i, 1], topo[i, 2], topo[i, 3]
        Ri, pi = R[i], p[i]
        if jtype == FREE:
            # Free joint, Pinocchio's layout: q = [position, quaternion xyzw], v = body twist
            # [v_lin; w] in the base frame.  Phi maps it to the world spatial velocity:
            # columns [0; R e_k] for the linear part, [R e_k; p x R e_k] for the angular part.
            quaternion_to_matrix(q[qi + 3], q[qi + 4], q[qi + 5], q[qi + 6], Ri)
            pi[0], pi[1], pi[2] = q[qi], q[qi + 1], q[qi + 2]
            for k in range(3):
                col = Ri[:, k]
                Phi[s + k, 0:3] = 0.0
                Phi[s + k, 3:6] = col
                Phi[s + 3 + k, 0:3] = col
                cross3(pi, col, a)
                Phi[s + 3 + k, 3:6] = a
            continue
        XR, Xp, axis = geom[i, G_XR:G_XR + 3], geom[i, G_XP], geom[i, G_AXIS]
        # joint frame J in the world: R_J = R_p X_R, p_J = p_p + R_p X_p
        if parent < 0:
            Ri[:, :] = XR
            pi[:] = Xp
        else:
            Rp, pp = R[parent], p[parent]
            for r in range(3):
                for c in range(3):
                    Ri[r, c] = Rp[r, 0] * XR[0, c] + Rp[r, 1] * XR[1, c] + Rp[r, 2] * XR[2, c]
                pi[r] = pp[r] + Rp[r, 0] * Xp[0] + Rp[r, 1] * Xp[1] + Rp[r, 2] * Xp[2]
        for r in range(3):   # joint axis in the world
            a[r] = Ri[r, 0] * axis[0] + Ri[r, 1] * axis[1] + Ri[r, 2] * axis[2]
        if jtype == REVOLUTE:
            # R_i = R_J Rot(axis, q) = Rot(a, q) R_J: rotate each column of R_J about a (Rodrigues)
            cq, sq = np.cos(q[qi]), np.sin(q[qi])
            for c in range(3):
                x0, x1, x2 = Ri[0, c], Ri[1, c], Ri[2, c]
                ad = (1.0 - cq) * (a[0] * x0 + a[1] * x1 + a[2] * x2)
                Ri[0, c] = cq * x0 + sq * (a[1] * x2 - a[2] * x1) + ad * a[0]
                Ri[1, c] = cq * x1 + sq * (a[2] * x0 - a[0] * x2) + ad * a[1]
                Ri[2, c] = cq * x2 + sq * (a[0] * x1 - a[1] * x0) + ad * a[2]
            # Phi = [a; p x a]: rotation about the line through p_i along a
            Phi[s, 0:3] = a
            Phi[s, 3] = pi[1] * a[2] - pi[2] * a[1]
            Phi[s, 4] = pi[2] * a[0] - pi[0] * a[2]
            Phi[s, 5] = pi[0] * a[1] - pi[1] * a[0]
        elif jtype == PRISMATIC:
            for r in range(3):
                pi[r] += q[qi] * a[r]
            Phi[s, 0:3] = 0.0
            Phi[s, 3:6] = a


@njit(**_JIT)
def world_inertias(geom, R, p, m, h, J):
    """Body inertias in the world frame: m, h = m c, J = R Ic R^T + m (|c|^2 1 - c c^T)."""
    for i in range(geom.shape[0]):
        Ri = R[i]
        com, Ic = geom[i, G_COM], geom[i, G_INERTIA:G_INERTIA + 3]
        mi = geom[i, G_MASS, 0]
        c0 = p[i, 0] + Ri[0, 0] * com[0] + Ri[0, 1] * com[1] + Ri[0, 2] * com[2]
        c1 = p[i, 1] + Ri[1, 0] * com[0] + Ri[1, 1] * com[1] + Ri[1, 2] * com[2]
        c2 = p[i, 2] + Ri[2, 0] * com[0] + Ri[2, 1] * com[1] + Ri[2, 2] * com[2]
        m[i] = mi
        h[i, 0], h[i, 1], h[i, 2] = mi * c0, mi * c1, mi * c2
        cc = c0 * c0 + c1 * c1 + c2 * c2
        Ji = J[i]
        for r in range(3):
            # row r of R Ic
            t0 = Ri[r, 0] * Ic[0, 0] + Ri[r, 1] * Ic[1, 0] + Ri[r, 2] * Ic[2, 0]
            t1 = Ri[r, 0] * Ic[0, 1] + Ri[r, 1] * Ic[1, 1] + Ri[r, 2] * Ic[2, 1]
            t2 = Ri[r, 0] * Ic[0, 2] + Ri[r, 1] * Ic[1, 2] + Ri[r, 2] * Ic[2, 2]
            for c in range(r, 3):
                Ji[r, c] = t0 * Ri[c, 0] + t1 * Ri[c, 1] + t2 * Ri[c, 2]
        Ji[0, 0] += mi * (cc - c0 * c0)
        Ji[1, 1] += mi * (cc - c1 * c1)
        Ji[2, 2] += mi * (cc - c2 * c2)
        Ji[0, 1] -= mi * c0 * c1
        Ji[0, 2] -= mi * c0 * c2
        Ji[1, 2] -= mi * c1 * c2
        Ji[1, 0], Ji[2, 0], Ji[2, 1] = Ji[0, 1], Ji[0, 2], Ji[1, 2]


@njit(**_JIT)
def velocities(topo, dofs, Phi, qd, vel, Phid):
    """v_i = v_p(i) + Phi_i qd_i and Phid_s = v_i x Phi_s (seed 000, Alg. 1 lines 3-4)."""
    nv = Phi.shape[0]
    for i in range(topo.shape[0]):
        parent = topo[i, 0]
        if parent < 0:
            vel[i, :] = 0.0
        else:
            vel[i, :] = vel[parent]
        s = topo[i, 3]
        while s < nv and dofs[s, 0] == i:
            for r in range(6):
                vel[i, r] += Phi[s, r] * qd[s]
            s += 1
    for s in range(Phi.shape[0]):
        motion_cross(vel[dofs[s, 0]], Phi[s], Phid[s])


@njit(**_JIT)
def add_inertia(m, h, J, src, dst):
    """Composite inertia update I_dst += I_src (world frame: no transform needed)."""
    m[dst] += m[src]
    for r in range(3):
        h[dst, r] += h[src, r]
        for c in range(3):
            J[dst, r, c] += J[src, r, c]


@njit(**_JIT)
def first_dof_count(topo, i, nv):
    """Number of DoF of body i (the next body's first DoF minus this one's)."""
    if i + 1 < topo.shape[0]:
        return topo[i + 1, 3] - topo[i, 3]
    return nv - topo[i, 3]
