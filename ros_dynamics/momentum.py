"""O(N) products for the generalized-momentum observer, without forming any n x n matrix.

With h^C_j = sum_{l >= j} I_l v_l the composite spatial momentum of the subtree of body j:
    p = M v:        p_s = Phi_s . h^C_j            (M_ij = Phi_i^T I^C_{ceil(ij)} Phi_j, eq. (17))
    C^T v:          (C^T v)_s = Phid_s . h^C_j
The second follows from eq. (18): sum_i C_ij v_i = Phid_j . sum_i I^C_{ceil(ij)} Phi_i v_i
+ Phi_j . sum_{l >= j} B_l^T v_l, where the first sum is h^C_j and B(v,I)^T v = 0 for an
admissible B (eq. (11): B^T v = Idot v - B v = (v x* I v - I (v x v)) - v x* I v = 0).
For the Christoffel-consistent C this is the familiar C^T v = dT/dq.  g comes from the same sweep.
"""

import numpy as np
from numba import njit

from .kinematics import placements, velocities, world_inertias
from .rnea import gravity_force
from .spatial import _JIT, dot6, inertia_times


@njit(**_JIT)
def momentum_terms(topo, geom, dofs, gravity, q, qd, p_out, ctv_out, g_out):
    """p = M(q) qd, C(q, qd)^T qd and g(q), each (nv,)."""
    N, nv = topo.shape[0], dofs.shape[0]
    R, p, Phi, Phid = np.empty((N, 3, 3)), np.empty((N, 3)), np.empty((nv, 6)), np.empty((nv, 6))
    m, h, J = np.empty(N), np.empty((N, 3)), np.empty((N, 3, 3))
    vel, hC, fg = np.empty((N, 6)), np.empty((N, 6)), np.empty(6)
    placements(topo, geom, q, R, p, Phi)
    world_inertias(geom, R, p, m, h, J)
    velocities(topo, dofs, Phi, qd, vel, Phid)
    for i in range(N):
        inertia_times(m[i], h[i], J[i], vel[i], hC[i])      # I_i v_i
    s = nv - 1
    for b in range(N - 1, -1, -1):
        gravity_force(m[b], h[b], gravity, fg)
        while s >= 0 and dofs[s, 0] == b:
            p_out[s] = dot6(Phi[s], hC[b])
            ctv_out[s] = dot6(Phid[s], hC[b])
            g_out[s] = dot6(Phi[s], fg)
            s -= 1
        parent = topo[b, 0]
        if parent >= 0:
            hC[parent] += hC[b]
            m[parent] += m[b]
            h[parent] += h[b]
