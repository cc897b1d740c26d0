"""Composite-Rigid-Body Algorithm (Featherstone, seed 003): the mass matrix M(q).

M_ij = Phi_i^T I^C_j Phi_j for i an ancestor of j (seed 000 eq. (19); seed 003 "H_ij"),
computed with the backward sweep of composite inertias.  In world coordinates the sweep needs
no transforms: I^C_p(j) += I^C_j.  Only the nonzero entries are visited (O(Nd)); the rest of M
stays zero (branch-induced sparsity).
"""

import numpy as np
from numba import njit

from .kinematics import add_inertia, placements, world_inertias
from .spatial import _JIT, dot6, inertia_times


@njit(**_JIT)
def crba(topo, geom, dofs, q, M):
    """Fill M (nv x nv, zeroed by the caller) for configuration q."""
    N, nv = topo.shape[0], dofs.shape[0]
    R, p, Phi = np.empty((N, 3, 3)), np.empty((N, 3)), np.empty((nv, 6))
    m, h, J = np.empty(N), np.empty((N, 3)), np.empty((N, 3, 3))
    F = np.empty(6)
    placements(topo, geom, q, R, p, Phi)
    world_inertias(geom, R, p, m, h, J)          # I^C_i = I_i
    s = nv - 1
    for j in range(N - 1, -1, -1):
        while s >= 0 and dofs[s, 0] == j:
            inertia_times(m[j], h[j], J[j], Phi[s], F)   # F = I^C_j Phi_s
            t = s
            while t >= 0:                                  # s and its DoF ancestors
                M[t, s] = dot6(Phi[t], F)
                M[s, t] = M[t, s]
                t = dofs[t, 1]
            s -= 1
        if topo[j, 0] >= 0:
            add_inertia(m, h, J, j, topo[j, 0])          # I^C_p(j) += I^C_j
