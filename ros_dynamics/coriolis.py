"""Seed 000, Algorithm 1: M, C and dM/dt in O(Nd) (plus g from the same sweep).

With the body-level factorization B of eq. (10) (line 6) the result is the
Christoffel-consistent C (Prop. 2); with eq. (9) it is another admissible factorization
(Prop. 1).  Everything is expressed in world coordinates, so lines 17, 24 and 25 need no
transforms (footnote 2): the composite terms are plain sums I^C_p(j) += I^C_j, B^C_p(j) += B^C_j.

Per DoF j (body b) the backward sweep forms (lines 9-11)
    F1 = I^C_b Phid_j + B^C_b Phi_j,   F2 = I^C_b Phi_j,   F3 = (B^C_b)^T Phi_j
and for every DoF ancestor i of j (same-joint DoFs included) writes (lines 12-22)
    C_ij = Phi_i . F1,   C_ji = Phid_i . F2 + Phi_i . F3,   M_ij = M_ji = Phi_i . F2.
dM/dt = C + C^T (Prop. 1) is formed at the end; g_j = Phi_j . I^C_b a_0 (a_0 = -gravity).
"""

import numpy as np
from numba import njit

from .kinematics import add_inertia, placements, velocities, world_inertias
from .rnea import gravity_force
from .spatial import (_JIT, body_factorization, body_factorization_eq9, dot6, inertia_times,
                      mat6_times, mat6T_times)

EQ10 = 10   # Niemeyer-Slotine factorization, Christoffel-consistent C (default)
EQ9 = 9     # B = (v x*) I


@njit(**_JIT)
def coriolis(topo, geom, dofs, gravity, q, qd, M, C, Mdot, g, factorization):
    """Fill M, C, Mdot (nv x nv, zeroed by the caller) and g (nv) at (q, qd)."""
    N, nv = topo.shape[0], dofs.shape[0]
    R, p, Phi, Phid = np.empty((N, 3, 3)), np.empty((N, 3)), np.empty((nv, 6)), np.empty((nv, 6))
    m, h, J = np.empty(N), np.empty((N, 3)), np.empty((N, 3, 3))
    vel, B = np.empty((N, 6)), np.empty((N, 6, 6))
    F1, F2, F3, tmp, fg = np.empty(6), np.empty(6), np.empty(6), np.empty(12), np.empty(6)
    placements(topo, geom, q, R, p, Phi)
    world_inertias(geom, R, p, m, h, J)                   # line 5: I^C_i = I_i
    velocities(topo, dofs, Phi, qd, vel, Phid)            # lines 3-4
    nb = 3 if factorization == EQ10 else 6                # B^C has zero right columns for eq. (10)
    for i in range(N):                                    # line 6: B^C_i = B(v_i, I_i)
        if factorization == EQ10:
            body_factorization(vel[i], m[i], h[i], J[i], B[i])
        else:
            body_factorization_eq9(vel[i], m[i], h[i], J[i], B[i], tmp)

    s = nv - 1
    for b in range(N - 1, -1, -1):                        # line 8
        gravity_force(m[b], h[b], gravity, fg)
        while s >= 0 and dofs[s, 0] == b:
            inertia_times(m[b], h[b], J[b], Phid[s], F1)  # line 9:  F1 = I^C Phid + B^C Phi
            mat6_times(B[b], Phi[s], F3, nb)
            for r in range(6):
                F1[r] += F3[r]
            inertia_times(m[b], h[b], J[b], Phi[s], F2)   # line 10: F2 = I^C Phi
            mat6T_times(B[b], Phi[s], F3, nb)             # line 11: F3 = B^C^T Phi
            C[s, s] = dot6(Phi[s], F1)                    # line 12
            M[s, s] = dot6(Phi[s], F2)                    # line 13
            g[s] = dot6(Phi[s], fg)
            t = dofs[s, 1]
            while t >= 0:                                 # lines 16-23 over DoF ancestors t
                C[t, s] = dot6(Phi[t], F1)                              # line 19
                C[s, t] = dot6(Phid[t], F2) + dot6(Phi[t], F3)          # line 20
                M[t, s] = dot6(Phi[t], F2)                              # line 21
                M[s, t] = M[t, s]
                t = dofs[t, 1]
            s -= 1
        parent = topo[b, 0]
        if parent >= 0:                                   # lines 24-25
            add_inertia(m, h, J, b, parent)
            for r in range(6):
                for c in range(nb):
                    B[parent, r, c] += B[b, r, c]
    for i in range(nv):                                   # lines 14, 22 via Prop. 1: Mdot = C + C^T
        for j in range(i, nv):
            Mdot[i, j] = C[i, j] + C[j, i]
            Mdot[j, i] = Mdot[i, j]
