"""Seed 000, Algorithm 2: Christoffel symbols of the first kind in O(N d^2).

Gamma[i, j, k] = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i) = dC_ij/dqd_k.  For DoFs i <= j <= k
along one path (i an ancestor of j, j of k), with I^C_k the composite inertia of k's body,
    Btilde = B(Phi_k, I^C_k)                 (line 5, factorization of eq. (10))
    D      = (I^C_k Phi_k) xbar* - Btilde     (line 6)
    F1 = Btilde Phi_j,  F2 = Btilde^T Phi_j,  F3 = D Phi_j          (line 9)
    Gamma_ijk = Gamma_ikj = Phi_i . F1      (eq. (37), line 12)
    Gamma_jik = Gamma_jki = Phi_i . F2      (eq. (38), line 13)
    Gamma_kij = Gamma_kji = Phi_i . F3      (eq. (40), line 14)
and zero for triples that are not mutually related.  In world coordinates lines 15, 18, 19
need no transforms.  D Phi_j = Phi_j x* (I^C_k Phi_k) - Btilde Phi_j.

Floating base (Remarks 5-6): the free joint's velocities are body-frame quasi-velocities, its
axes move with the base, and Gamma[i, j, k] := dC_ij/dv_k is no longer symmetric in (j, k)
when both are free-joint DoFs.  Differentiating C (eq. (18)) gives for that block
    Gamma[x, y, z] = Phi_x . B(Phi_y, I^C_{body(x)}) Phi_z,
which the kernel writes after the sweep (the other entries keep the symmetric formula).
"""

from numba import njit

from .kinematics import placements, workspace, world_inertias
from .model import FREE
from .spatial import (_JIT, add_row, body_factorization, dot6, factor_T_times, factor_times,
                      force_cross, inertia_times, row6)


@njit(**_JIT)
def christoffel(topo, geom, dofs, q, Gamma):
    """Fill Gamma (nv x nv x nv, zeroed by the caller) at configuration q."""
    N, nv = topo.shape[0], dofs.shape[0]
    R, p, Phi, _, I, _, W = workspace(N, nv)
    Bt = W.reshape((N, 6, 6))                              # only Bt[0] is used
    placements(topo, geom, q, R, p, Phi)
    world_inertias(geom, R, p, I)                          # lines 1-3: I^C_i = I_i
    k = nv - 1
    for b in range(N - 1, -1, -1):                         # line 4 (I^C_b is complete here)
        while k >= 0 and dofs[k, 0] == b:
            phik = row6(Phi, k)
            body_factorization(phik, I, b, Bt, 0)          # line 5
            ICPhik = inertia_times(I, b, phik)
            j = k
            while j >= 0:                                  # line 8
                phij = row6(Phi, j)
                F1 = factor_times(Bt, 0, phij, 3)          # line 9
                F2 = factor_T_times(Bt, 0, phij, 3)
                D = force_cross(phij, ICPhik)              # D Phi_j (line 6)
                F3 = (D[0] - F1[0], D[1] - F1[1], D[2] - F1[2], D[3] - F1[3], D[4] - F1[4], D[5] - F1[5])
                i = j
                while i >= 0:                              # line 11
                    a = dot6(Phi, i, F1)                   # line 12
                    Gamma[i, j, k] = a
                    Gamma[i, k, j] = a
                    a = dot6(Phi, i, F2)                   # line 13
                    Gamma[j, i, k] = a
                    Gamma[j, k, i] = a
                    a = dot6(Phi, i, F3)                   # line 14
                    Gamma[k, i, j] = a
                    Gamma[k, j, i] = a
                    i = dofs[i, 1]                         # line 16
                j = dofs[j, 1]                             # line 20
            k -= 1
        if topo[b, 0] >= 0:
            add_row(I, b, topo[b, 0])                      # line 22

    if topo[0, 1] == FREE:                                 # free-joint block, see module doc
        for b in range(N):
            for y in range(6):
                body_factorization(row6(Phi, y), I, b, Bt, 0)
                for z in range(6):
                    w = factor_times(Bt, 0, row6(Phi, z), 3)
                    x = topo[b, 3]
                    while x < nv and dofs[x, 0] == b:
                        Gamma[x, y, z] = dot6(Phi, x, w)
                        x += 1
