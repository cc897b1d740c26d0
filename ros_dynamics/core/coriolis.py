"""Seed 000, Algorithm 1: M, C and dM/dt in O(Nd) (plus g from the same sweep).

With the body-level factorization B of eq. (10) (line 6) the result is the
Christoffel-consistent C (Prop. 2); with eq. (9) it is another admissible factorization
(Prop. 1).  Everything is expressed in world coordinates, so lines 17, 24 and 25 need no
transforms (footnote 2): the composite terms are plain sums I^C_p(j) += I^C_j, B^C_p(j) += B^C_j.

Per DoF j (body b) the backward sweep forms (lines 9-11)
    F1 = I^C_b Phid_j + B^C_b Phi_j,   F2 = I^C_b Phi_j,   F3 = (B^C_b)^T Phi_j
and for every DoF ancestor i of j (same-joint DoFs included) writes (lines 12-22)
    C_ij = Phi_i . F1,   C_ji = Phid_i . F2 + Phi_i . F3,   M_ij = M_ji = Phi_i . F2,
and dM/dt_ij = dM/dt_ji = C_ij + C_ji (Prop. 1, lines 14 and 22); g_j = Phi_j . I^C_b a_0
(a_0 = -gravity).  For eq. (10) B has zero right column blocks (see
``spatial.body_factorization``): only its left three columns are stored, summed and
multiplied, and F3 has a zero linear part.
"""

from numba import njit

from .kinematics import placements, velocities, workspace, world_inertias
from .spatial import (_JIT, add6, add_row, body_factorization, body_factorization_eq9, dot6,
                      factor_T_times, factor_times, gravity_force, inertia_times, row6)

EQ10 = 10   # Niemeyer-Slotine factorization, Christoffel-consistent C (default)
EQ9 = 9     # B = (v x*) I


@njit(**_JIT)
def coriolis(topo, geom, dofs, gravity, q, qd, M, C, Mdot, g, factorization):
    """Fill M, C, Mdot (nv x nv) and g (nv) at (q, qd)."""
    N, nv = topo.shape[0], dofs.shape[0]
    R, p, Phi, Phid, I, vel, W = workspace(N, nv)
    B = W.reshape((N, 6, 6))
    placements(topo, geom, q, R, p, Phi)
    world_inertias(geom, R, p, I)                         # line 5: I^C_i = I_i
    velocities(topo, dofs, Phi, qd, vel, Phid)            # lines 3-4
    nb = 3 if factorization == EQ10 else 6                # columns of B^C that can be nonzero
    for i in range(N):                                    # line 6: B^C_i = B(v_i, I_i)
        if factorization == EQ10:
            body_factorization(row6(vel, i), I, i, B, i)
        else:
            body_factorization_eq9(row6(vel, i), I, i, B, i)
    for i in range(nv):                                   # pairs that are not related stay 0
        for j in range(nv):
            M[i, j] = 0.0
            C[i, j] = 0.0
            Mdot[i, j] = 0.0

    s = nv - 1
    for b in range(N - 1, -1, -1):                        # line 8
        fg = gravity_force(I, b, gravity)
        while s >= 0 and dofs[s, 0] == b:
            phi = row6(Phi, s)
            F1 = add6(inertia_times(I, b, row6(Phid, s)), factor_times(B, b, phi, nb))   # line 9
            F2 = inertia_times(I, b, phi)                 # line 10
            F3 = factor_T_times(B, b, phi, nb)            # line 11
            C[s, s] = dot6(Phi, s, F1)                    # line 12
            M[s, s] = dot6(Phi, s, F2)                    # line 13
            Mdot[s, s] = 2.0 * C[s, s]                    # line 14
            g[s] = dot6(Phi, s, fg)
            t = dofs[s, 1]
            while t >= 0:                                 # lines 16-23 over DoF ancestors t
                cts = dot6(Phi, t, F1)                                  # line 19
                cst = dot6(Phid, t, F2) + dot6(Phi, t, F3)              # line 20
                mts = dot6(Phi, t, F2)                                  # line 21
                C[t, s], C[s, t] = cts, cst
                M[t, s], M[s, t] = mts, mts
                Mdot[t, s], Mdot[s, t] = cts + cst, cts + cst           # line 22
                t = dofs[t, 1]
            s -= 1
        parent = topo[b, 0]
        if parent >= 0:                                   # lines 24-25
            add_row(I, b, parent)
            for r in range(6):
                for c in range(nb):
                    B[parent, r, c] += B[b, r, c]
