"""Recursive Newton-Euler Algorithm (Featherstone, seed 004; seed 000 eqs. (5), (7), (12), (13)).

Forward sweep: v_i = v_p(i) + Phi_i qd_i, a_i = a_p(i) + Phi_i qdd_i + Phid_i qd_i with the
base acceleration a_0 = -gravity (gravity as a fictitious upward acceleration);
f_i = I_i a_i + v_i x* I_i v_i.  Backward sweep: f_p(i) += f_i, tau_i = Phi_i^T f_i.
All in world coordinates.  ``generalized_gravity`` is the same with v = a = 0, where only the
composite mass and first moment are needed.
"""

import numpy as np
from numba import njit

from .kinematics import placements, velocities, world_inertias
from .spatial import _JIT, dot6, force_cross_add, inertia_times


@njit(**_JIT)
def rnea(topo, geom, dofs, gravity, q, qd, qdd, tau):
    """tau = M(q) qdd + C(q, qd) qd + g(q)."""
    N, nv = topo.shape[0], dofs.shape[0]
    R, p, Phi, Phid = np.empty((N, 3, 3)), np.empty((N, 3)), np.empty((nv, 6)), np.empty((nv, 6))
    m, h, J = np.empty(N), np.empty((N, 3)), np.empty((N, 3, 3))
    vel, acc, f = np.empty((N, 6)), np.empty((N, 6)), np.empty((N, 6))
    Iv = np.empty(6)
    placements(topo, geom, q, R, p, Phi)
    world_inertias(geom, R, p, m, h, J)
    velocities(topo, dofs, Phi, qd, vel, Phid)
    for i in range(N):                                  # a_i = a_p(i) (a_0 = -g)
        parent = topo[i, 0]
        if parent < 0:
            acc[i, 0:3] = 0.0
            acc[i, 3] = -gravity[0]
            acc[i, 4] = -gravity[1]
            acc[i, 5] = -gravity[2]
        else:
            acc[i, :] = acc[parent]
        s = topo[i, 3]
        while s < nv and dofs[s, 0] == i:               # + Phi_i qdd_i + Phid_i qd_i   (12)
            for r in range(6):
                acc[i, r] += Phi[s, r] * qdd[s] + Phid[s, r] * qd[s]
            s += 1
        inertia_times(m[i], h[i], J[i], acc[i], f[i])   # f_i = I_i a_i + v_i x* I_i v_i  (7)
        inertia_times(m[i], h[i], J[i], vel[i], Iv)
        force_cross_add(vel[i], Iv, f[i], 1.0)
    s = nv - 1
    for i in range(N - 1, -1, -1):                      # tau_i = Phi_i^T sum_{k >= i} f_k  (13)
        while s >= 0 and dofs[s, 0] == i:
            tau[s] = dot6(Phi[s], f[i])
            s -= 1
        if topo[i, 0] >= 0:
            f[topo[i, 0]] += f[i]


@njit(**_JIT)
def generalized_gravity(topo, geom, dofs, gravity, q, g):
    """g(q) = RNEA(q, 0, 0): g_i = Phi_i^T [h^C_i x (-gravity)...] = Phi_i^T I^C_i a_0."""
    N, nv = topo.shape[0], dofs.shape[0]
    R, p, Phi = np.empty((N, 3, 3)), np.empty((N, 3)), np.empty((nv, 6))
    m, h, J = np.empty(N), np.empty((N, 3)), np.empty((N, 3, 3))
    placements(topo, geom, q, R, p, Phi)
    world_inertias(geom, R, p, m, h, J)
    f = np.empty(6)
    s = nv - 1
    for i in range(N - 1, -1, -1):
        gravity_force(m[i], h[i], gravity, f)
        while s >= 0 and dofs[s, 0] == i:
            g[s] = dot6(Phi[s], f)
            s -= 1
        parent = topo[i, 0]
        if parent >= 0:
            m[parent] += m[i]
            h[parent] += h[i]


@njit(**_JIT)
def gravity_force(m, h, gravity, f):
    """f = I a_0 with a_0 = [0; -gravity]: [h x (-gravity); -m gravity] (only m, h needed)."""
    f[0] = -(h[1] * gravity[2] - h[2] * gravity[1])
    f[1] = -(h[2] * gravity[0] - h[0] * gravity[2])
    f[2] = -(h[0] * gravity[1] - h[1] * gravity[0])
    f[3] = -m * gravity[0]
    f[4] = -m * gravity[1]
    f[5] = -m * gravity[2]
