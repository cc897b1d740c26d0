"""Composite-Rigid-Body Algorithm (Featherstone 2008): the mass matrix M(q).

M_ij = Phi_i^T I^C_j Phi_j (+ the armature on the diagonal) for i an ancestor of j (Echeandia & Wensing 2021, eq. (19); Featherstone 2008, "H_ij"),
computed with the backward sweep of composite inertias.  In world coordinates the sweep needs
no transforms: I^C_p(j) += I^C_j.  Only the nonzero entries are visited (O(Nd)); the rest of M
is zero (branch-induced sparsity).
"""

from numba import njit

from .jit import JIT
from .kinematics import forward_kinematics
from .spatial import add_row, dot6, inertia_times, row6


@njit(inline='always', **JIT)
def crba(m, q, M, w):
    """Fill M (nv x nv) for configuration q (scratch: the workspace views w)."""
    forward_kinematics(m, q, w)                      # I^C_i = I_i
    composite_mass_matrix(m, w.Phi, w.I, M)


@njit(inline='always', **JIT)
def composite_mass_matrix(m, Phi, I, M):
    """The backward sweep: fill M from the world Phi and body inertias I (summed in place)."""
    nv, dof_body, dof_parent = m.nv, m.dof_body, m.dof_parent
    for i in range(nv):
        for j in range(nv):
            M[i, j] = 0.0
    j = nv - 1
    for b in range(m.N - 1, -1, -1):
        while j >= 0 and dof_body[j] == b:
            F = inertia_times(I, b, row6(Phi, j))        # F = I^C_b Phi_j
            i = j
            while i >= 0:                                # j and its DoF ancestors i
                M[i, j] = dot6(Phi, i, F)
                M[j, i] = M[i, j]
                i = dof_parent[i]
            M[j, j] += m.armature[j]                     # reflected rotor inertia
            j -= 1
        if m.parent[b] >= 0:
            add_row(I, b, m.parent[b])                   # I^C_p(b) += I^C_b
