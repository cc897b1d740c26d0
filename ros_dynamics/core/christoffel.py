"""Echeandia & Wensing (2021), Algorithm 2: Christoffel symbols of the first kind in O(N d^2).

Gamma[i, j, k] = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i) = dC_ij/dqd_k.  For DoFs i <= j <= k
along one path (i an ancestor of j, j of k), with I^C_k the composite inertia of k's body,
    Btilde = B(Phi_k, I^C_k)                 (line 5, factorization of eq. (10))
    F1 = Btilde Phi_j,  F2 = Btilde^T Phi_j,  F3 = D Phi_j = -F2       (lines 6 and 9)
    Gamma_ijk = Gamma_ikj = Phi_i . F1      (eq. (37), line 12)
    Gamma_jik = Gamma_jki = Phi_i . F2      (eq. (38), line 13)
    Gamma_kij = Gamma_kji = Phi_i . F3      (eq. (40), line 14)
and zero for triples that are not mutually related.  Line 6 defines
D = (I^C_k Phi_k) xbar* - Btilde; for the factorization of eq. (10) this equals -Btilde^T (the
identity the authors' own implementation uses), so F3 = -F2 needs no further product, and
Gamma_kij = -Gamma_jik.  In world coordinates lines 15, 18, 19 need no transforms.

Floating base (Remarks 5-6): the free joint's velocities are body-frame quasi-velocities, its
axes move with the base, and Gamma[i, j, k] := dC_ij/dv_k is no longer symmetric in (j, k)
when both are free-joint DoFs.  Differentiating C (eq. (18)) gives for that block
    Gamma[x, y, z] = Phi_x . B(Phi_y, I^C_{body(x)}) Phi_z,
which the kernel writes after the sweep (the other entries keep the symmetric formula).
"""

from numba import njit

from .jit import JIT, shared
from .kinematics import flat, forward_kinematics, per_body_6x6
from .configuration import FREE
from .spatial import add_row, body_factorization, dot6, factor_T_times, factor_times, row6


@njit(inline='always', **JIT)
def christoffel(m, q, Gamma, w):
    """Fill Gamma (nv x nv x nv) at configuration q."""
    forward_kinematics(m, q, w)                            # lines 1-3: I^C_i = I_i
    christoffel_sweep(m, w.Phi, w.I, per_body_6x6(w.W), Gamma, True)


@shared
def christoffel_sweep(m, Phi, I, Bt, Gamma, accumulate):
    """Lines 4-23 from the world Phi and inertias I.  ``accumulate``: I holds the body
    inertias and line 22 sums them into composites as the sweep goes; otherwise I already
    holds the composite inertias I^C (as Algorithm 1 leaves them for the same q)."""
    nv, dof_body, dof_parent = m.nv, m.dof_body, m.dof_parent
    # Entries of triples that are not mutually related stay zero.  In a chain (every DoF's
    # parent is the one before it) all triples are related and the sweep writes every entry.
    chain = True
    for s in range(1, nv):
        chain = chain and dof_parent[s] == s - 1
    if not chain:
        G = flat(Gamma)
        for a in range(G.shape[0]):
            G[a] = 0.0
    k = nv - 1
    for b in range(m.N - 1, -1, -1):                       # line 4 (I^C_b is complete here)
        while k >= 0 and dof_body[k] == b:
            body_factorization(row6(Phi, k), I, b, Bt, 0)  # line 5: Btilde (Bt[0])
            j = k                                          # line 7
            while j >= 0:                                  # line 8
                phij = row6(Phi, j)
                F1 = factor_times(Bt, 0, phij, 3)          # line 9
                F2 = factor_T_times(Bt, 0, phij, 3)        # F3 = D Phi_j = -F2 (line 6)
                i = j                                      # line 10
                while i >= 0:                              # line 11
                    a = dot6(Phi, i, F1)                   # line 12
                    Gamma[i, j, k] = a
                    Gamma[i, k, j] = a
                    a = (Phi[i, 0] * F2[0] + Phi[i, 1] * F2[1]   # line 13 (F2 is zero in
                         + Phi[i, 2] * F2[2])                      # its linear part)
                    Gamma[j, i, k] = a
                    Gamma[j, k, i] = a
                    Gamma[k, i, j] = -a                    # line 14: Phi_i . F3 = -Phi_i . F2
                    Gamma[k, j, i] = -a
                    i = dof_parent[i]                      # line 16
                j = dof_parent[j]                          # line 20
            k -= 1
        if accumulate and m.parent[b] >= 0:
            add_row(I, b, m.parent[b])                     # line 22

    if m.N > 0 and m.jtype[0] == FREE:                     # free-joint block, see module doc
        for b in range(m.N):
            for y in range(6):
                body_factorization(row6(Phi, y), I, b, Bt, 0)
                for z in range(6):
                    w = factor_times(Bt, 0, row6(Phi, z), 3)
                    x = m.v_idx[b]
                    while x < nv and dof_body[x] == b:
                        Gamma[x, y, z] = dot6(Phi, x, w)
                        x += 1
