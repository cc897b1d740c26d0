"""Composite-Rigid-Body Algorithm (Featherstone, seed 003): the mass matrix M(q).

M_ij = Phi_i^T I^C_j Phi_j for i an ancestor of j (seed 000 eq. (19); seed 003 "H_ij"),
computed with the backward sweep of composite inertias.  In world coordinates the sweep needs
no transforms: I^C_p(j) += I^C_j.  Only the nonzero entries are visited (O(Nd)); the rest of M
is zero (branch-induced sparsity).
"""

from numba import njit

from .kinematics import placements, workspace, world_inertias
from .spatial import _JIT, add_row, dot6, inertia_times, row6


@njit(**_JIT)
def crba(topo, geom, dofs, q, M):
    """Fill M (nv x nv) for configuration q."""
    N, nv = topo.shape[0], dofs.shape[0]
    R, p, Phi, _, I, _, _ = workspace(N, nv)
    placements(topo, geom, q, R, p, Phi)
    world_inertias(geom, R, p, I)                    # I^C_i = I_i
    composite_mass_matrix(topo, dofs, Phi, I, M)


@njit(**_JIT)
def composite_mass_matrix(topo, dofs, Phi, I, M):
    """The backward sweep: fill M from the world Phi and body inertias I (summed in place)."""
    nv = dofs.shape[0]
    for i in range(nv):
        for j in range(nv):
            M[i, j] = 0.0
    s = nv - 1
    for j in range(topo.shape[0] - 1, -1, -1):
        while s >= 0 and dofs[s, 0] == j:
            F = inertia_times(I, j, row6(Phi, s))        # F = I^C_j Phi_s
            t = s
            while t >= 0:                                # s and its DoF ancestors
                M[t, s] = dot6(Phi, t, F)
                M[s, t] = M[t, s]
                t = dofs[t, 1]
            s -= 1
        if topo[j, 0] >= 0:
            add_row(I, j, topo[j, 0])                    # I^C_p(j) += I^C_j
