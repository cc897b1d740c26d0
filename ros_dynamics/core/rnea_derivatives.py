"""Analytical derivatives of the RNEA (Carpentier & Mansard 2018, "Analytical derivatives of rigid
body dynamics algorithms", RSS): dtau/dq and dtau/dv of the RNEA by a forward pass for the
velocities, accelerations and their derivatives and a backward pass, in O(Nd) plus the O(nv^2)
of the dense outputs.

Like the paper, everything is in world (Plücker) coordinates, where differentiating needs no
transform: a body quantity moves with its body, so for a displacement of DoF k (q (+) e_k, the
tangent space; the free joint's six axes are fixed in the base, as Pinocchio's integrate) every
motion subspace, inertia and force of the subtree of k's body b_k is carried along by the world
twist Phi_k:

    dPhi_s/dq_k = Phi_k x Phi_s,   dI_i/dq_k = (Phi_k x*) I_i - I_i (Phi_k x)     (i, s below b_k)

(the paper's world-frame form of the derivative of a placement).  Velocities and accelerations are sums over the path,
and only the terms of the DoFs below b_k move; with lambda = p(b_k) (v_lambda = 0 and a_lambda =
a_0 = -gravity for the root), for every body i below b_k:

    dv_i/dq_k = Phi_k x v_i + u_k,                    u_k = v_lambda x Phi_k            (dV/dq)
    da_i/dq_k = Phi_k x a_i + D_k + u_k x v_i,        D_k = a_lambda x Phi_k + v_lambda x u_k
    dv_i/dv_k = Phi_k,   da_i/dv_k = Phi_k x v_i + e_k,   e_k = Phid_k + u_k           (dA/dv)

(the free joint: u_k = 0 and e_k = Phid_k = v_0 x Phi_k, the six terms v_0 x Phi_s qd_s of the
base summing to v_0 x v_0 = 0).  With f_i = I_i a_i + v_i x* I_i v_i (eq. of the RNEA) the terms
"Phi_k x" rebuild Phi_k x* f_i, and what is left is linear in u_k (resp. Phi_k):

    df_i/dq_k = Phi_k x* f_i + I_i D_k + B_i u_k,      df_i/dv_k = I_i e_k + B_i Phi_k,
    B_i x = v_i x* I_i x - I_i (v_i x x) + x x* I_i v_i = 2 B(v_i, I_i) x,

the Niemeyer-Slotine factorization of Echeandia & Wensing 2021 eq. (10) (spatial.body_factorization:
only its left three columns are nonzero).  tau_r = Phi_r . F_r with the composite force F_r of the
subtree of b_r, so for a row r and a column k on one path (else the entry is zero):

  * r below k or on k's body (b_k above b_r or b_k = b_r; the row k, column r < k of the code):
    d Phi_r carries over and cancels Phi_k x* F_r, so
        dtau_r/dq_k = Y_r . D_k + beta_r . u_k,    dtau_r/dv_k = Y_r . e_k + beta_r . Phi_k,
    with Y_r = I^C_r Phi_r and beta_r = (B^C_r)^T Phi_r (Algorithm 1's F2 and 2 F3 of
    Echeandia & Wensing, lines 10-11; on k's own body this is Phi_r . (I^C D_k + B^C u_k));
  * b_r strictly above b_k (r above k):  Phi_r is fixed and the subtree of b_k moves, so
        dtau_r/dq_k = Phi_r . G_k,   G_k = Phi_k x* F_k + I^C_k D_k + B^C_k u_k,
        dtau_r/dv_k = Phi_r . H_k,   H_k = I^C_k e_k + B^C_k Phi_k  (on k's own body too).

Two passes: forward (v_i, a_i, f_i, B_i per body and u_k, D_k, e_k per DoF, which depend on the
path above only), backward (the composites F, I^C, B^C; at each DoF k its Y_k, beta_k, G_k, H_k
and the entries of column k above it and of row k left of it: O(d) each, O(nv d) in all, plus
zeroing the dense outputs).  The rotor inertia (armature) adds armature_r a_r to tau_r,
constant in q and v: no derivative.  dtau/da = M, whose entries Phi_r . Y_k come out of the
same loop.
"""

from numba import njit

from .jit import JIT, helper, shared
from .kinematics import forward_kinematics, per_body_6x6, set6, velocities
from .rnea import joint_acceleration
from .spatial import (add6, add_row, body_factorization, dot6, factor_T_times, factor_times,
                      force_cross, inertia_times, motion_cross, row6)

# rows of the per-DoF scratch w.dcols (nv, 3, 6): u_k, D_k, e_k of the forward pass
U, D, E = 0, 1, 2


@njit(inline='always', **JIT)
def rnea_derivatives(m, q, qd, qdd, dtau_dq, dtau_dv, M, tau, w, with_M):
    """dtau/dq and dtau/dv (nv x nv, tangent space) of tau = RNEA(q, qd, qdd); tau itself into
    ``tau`` and, if ``with_M``, the mass matrix (armature included) into M."""
    forward_kinematics(m, q, w)
    velocities(m, w.Phi, qd, w.vel, w.Phid)
    rnea_derivatives_sweeps(m, qd, qdd, dtau_dq, dtau_dv, M, tau, w, with_M)


@shared
def rnea_derivatives_sweeps(m, qd, qdd, dtau_dq, dtau_dv, M, tau, w, with_M):
    """:func:`rnea_derivatives` after the kinematics at q (w.Phi, w.I: body inertias) and the
    velocities at qd (w.vel, w.Phid).  Leaves the composite inertias in w.I."""
    N, nv, dof_body, dof_parent = m.N, m.nv, m.dof_body, m.dof_parent
    Phi, Phid, I, vel, acc, F = w.Phi, w.Phid, w.I, w.vel, w.acc, w.force
    Bc, cols = per_body_6x6(w.W), w.dcols
    gravity = m.gravity
    a0 = (0.0, 0.0, 0.0, -gravity[0], -gravity[1], -gravity[2])     # a_0 = -gravity
    zero = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    # -- forward pass: a_i = a_p(i) + Phi_i qdd_i + Phid_i qd_i, f_i = I_i a_i + v_i x* I_i v_i,
    #    B_i = 2 B(v_i, I_i) (left three columns); per DoF k of body i (lambda = p(i)):
    #    u_k = v_lambda x Phi_k, D_k = a_lambda x Phi_k + v_lambda x u_k, e_k = Phid_k + u_k
    for i in range(N):
        parent = m.parent[i]
        a = a0 if parent < 0 else row6(acc, parent)
        vl = zero if parent < 0 else row6(vel, parent)
        s = m.v_idx[i]
        while s < nv and dof_body[s] == i:
            phi = row6(Phi, s)
            u = motion_cross(vl, phi)
            _set(cols, s, U, u)
            _set(cols, s, D, add6(motion_cross(a, phi), motion_cross(vl, u)))
            _set(cols, s, E, add6(row6(Phid, s), u))
            s += 1
        a = joint_acceleration(a, Phi, Phid, qd, qdd, dof_body, m.v_idx[i], i)
        set6(acc, i, a)
        v = row6(vel, i)
        set6(F, i, add6(inertia_times(I, i, a), force_cross(v, inertia_times(I, i, v))))
        body_factorization(v, I, i, Bc, i)
        for r in range(6):
            for c in range(3):
                Bc[i, r, c] *= 2.0
    for r in range(nv):
        for c in range(nv):
            dtau_dq[r, c] = 0.0
            dtau_dv[r, c] = 0.0
    if with_M:
        for r in range(nv):
            for c in range(nv):
                M[r, c] = 0.0
    # -- backward pass: composites F, I^C, B^C of each subtree (world frame: plain sums), then
    #    for each DoF k of the body, its column above it and its row to the left
    k = nv - 1
    for b in range(N - 1, -1, -1):
        Fb = row6(F, b)
        while k >= 0 and dof_body[k] == b:
            phi = row6(Phi, k)
            u, d, e = _get(cols, k, U), _get(cols, k, D), _get(cols, k, E)
            yk = inertia_times(I, b, phi)                               # Y_k = I^C Phi_k
            bk = factor_T_times(Bc, b, phi, 3)                          # beta_k = (B^C)^T Phi_k
            g1 = add6(inertia_times(I, b, d), factor_times(Bc, b, u, 3))   # I^C D_k + B^C u_k
            g2 = add6(g1, force_cross(phi, Fb))                         # G_k
            h = add6(inertia_times(I, b, e), factor_times(Bc, b, phi, 3))  # H_k
            tau[k] = dot6(Phi, k, Fb) + m.armature[k] * qdd[k]
            r = k
            while r >= 0:                        # k and its DoF ancestors r, nearest first
                dtau_dq[r, k] = dot6(Phi, r, g1 if dof_body[r] == b else g2)
                dtau_dv[r, k] = dot6(Phi, r, h)
                if r != k:                       # row k, column r above it
                    dtau_dq[k, r] = _dot(cols, r, D, yk) + _dot(cols, r, U, bk)
                    dtau_dv[k, r] = _dot(cols, r, E, yk) + dot6(Phi, r, bk)
                if with_M:
                    M[r, k] = M[k, r] = dot6(Phi, r, yk)
                r = dof_parent[r]
            if with_M:
                M[k, k] += m.armature[k]
            k -= 1
        lam = m.parent[b]
        if lam >= 0:
            add_row(I, b, lam)
            add_row(F, b, lam)
            for r in range(6):
                for c in range(3):
                    Bc[lam, r, c] += Bc[b, r, c]


@helper
def _dot(cols, s, j, x):
    """cols[s, j] . x for a 6-tuple x."""
    return (cols[s, j, 0] * x[0] + cols[s, j, 1] * x[1] + cols[s, j, 2] * x[2]
            + cols[s, j, 3] * x[3] + cols[s, j, 4] * x[4] + cols[s, j, 5] * x[5])


@helper
def _get(cols, s, j):
    """cols[s, j] as a 6-tuple."""
    return cols[s, j, 0], cols[s, j, 1], cols[s, j, 2], cols[s, j, 3], cols[s, j, 4], cols[s, j, 5]


@helper
def _set(cols, s, j, x):
    """cols[s, j] = x for a 6-tuple x."""
    cols[s, j, 0], cols[s, j, 1], cols[s, j, 2], cols[s, j, 3], cols[s, j, 4], cols[s, j, 5] = x
