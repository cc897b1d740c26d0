"""Echeandia & Wensing (2021), Algorithm 1: M, C and dM/dt in O(Nd) (plus g from the same sweep).

With the body-level factorization B of eq. (10) (line 6) the result is the
Christoffel-consistent C (Prop. 2); with eq. (9) it is another admissible factorization
(Prop. 1).  Everything is expressed in world coordinates, so lines 17, 24 and 25 need no
transforms (footnote 2): the composite terms are plain sums I^C_p(j) += I^C_j, B^C_p(j) += B^C_j.

The paper numbers one DoF per body; here body b carries the DoFs j with dof_body[j] = b (six
for a free joint), and the DoF tree dof_parent plays the role of p(i).  Per DoF j the backward
sweep forms (lines 9-11)
    F1 = I^C_b Phid_j + B^C_b Phi_j,   F2 = I^C_b Phi_j,   F3 = (B^C_b)^T Phi_j
and for j itself and every DoF ancestor i of j (same-joint DoFs included) writes (lines 12-22)
    C_ij = Phi_i . F1,   C_ji = Phid_i . F2 + Phi_i . F3,   M_ij = M_ji = Phi_i . F2,
and dM/dt_ij = dM/dt_ji = Phid_i . F2 + Phi_i . (F1 + F3) = C_ij + C_ji (lines 14 and 22);
g_j = Phi_j . I^C_b a_0 (a_0 = -gravity).  For eq. (10) B has zero right column blocks (see
``spatial.body_factorization``): only its left three columns are stored, summed and
multiplied, and F3 has a zero linear part.
"""

from numba import njit

from .jit import JIT, shared
from .kinematics import forward_kinematics, per_body_6x6, velocities
from .spatial import (add6, add_row, body_factorization, body_factorization_eq9, dot6,
                      factor_T_times, factor_times, gravity_force, inertia_times, row6)

EQ10 = 10   # Niemeyer-Slotine factorization, Christoffel-consistent C (default)
EQ9 = 9     # B = (v x*) I


@njit(inline='always', **JIT)
def coriolis(m, q, qd, M, C, Mdot, g, w, factorization):
    """Fill M, C, Mdot (nv x nv) and g (nv) at (q, qd).  On return w.I holds the composite
    inertias I^C_b of every body (used by the Christoffel sweep of the same state)."""
    forward_kinematics(m, q, w)                           # line 5: I^C_i = I_i
    coriolis_sweep(m, qd, M, C, Mdot, g, w, factorization)


@njit(inline='always', **JIT)
def coriolis_sweep(m, qd, M, C, Mdot, g, w, factorization):
    """:func:`coriolis` after ``forward_kinematics`` at q (w.Phi, w.I): lines 3-25."""
    N, nv, dof_body, dof_parent = m.N, m.nv, m.dof_body, m.dof_parent
    Phi, Phid, I, vel = w.Phi, w.Phid, w.I, w.vel
    B = per_body_6x6(w.W)
    velocities(m, Phi, qd, vel, Phid)                     # lines 3-4
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

    j = nv - 1
    for b in range(N - 1, -1, -1):                        # line 8 (bodies, then their DoFs j)
        fg = gravity_force(I, b, m.gravity)
        while j >= 0 and dof_body[j] == b:
            phi = row6(Phi, j)
            F1 = add6(inertia_times(I, b, row6(Phid, j)), factor_times(B, b, phi, nb))   # line 9
            F2 = inertia_times(I, b, phi)                 # line 10
            F3 = factor_T_times(B, b, phi, nb)            # line 11
            C[j, j] = dot6(Phi, j, F1)                    # line 12
            M[j, j] = dot6(Phi, j, F2) + m.armature[j]    # line 13 (+ rotor inertia)
            Mdot[j, j] = 2.0 * C[j, j]                    # line 14
            g[j] = dot6(Phi, j, fg)
            i = dof_parent[j]
            while i >= 0:                                 # lines 16-23 over the ancestors i of j
                cij = dot6(Phi, i, F1)                                  # line 19
                cji = dot6(Phid, i, F2) + dot6(Phi, i, F3)              # line 20
                mij = dot6(Phi, i, F2)                                  # line 21
                C[i, j], C[j, i] = cij, cji
                M[i, j], M[j, i] = mij, mij
                Mdot[i, j], Mdot[j, i] = cij + cji, cij + cji           # line 22
                i = dof_parent[i]                                       # line 18
            j -= 1
        parent = m.parent[b]
        if parent >= 0:                                   # lines 24-25
            add_row(I, b, parent)
            for r in range(6):
                for c in range(nb):
                    B[parent, r, c] += B[b, r, c]
