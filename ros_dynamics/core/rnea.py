"""Recursive Newton-Euler Algorithm (Featherstone 2008; Echeandia & Wensing 2021, eqs. (5), (7), (12), (13)).

Forward sweep: v_i = v_p(i) + Phi_i qd_i, a_i = a_p(i) + Phi_i qdd_i + Phid_i qd_i with the
base acceleration a_0 = -gravity (gravity as a fictitious upward acceleration);
f_i = I_i a_i + v_i x* I_i v_i.  Backward sweep: f_p(i) += f_i, tau_i = Phi_i^T f_i.
All in world coordinates.  ``generalized_gravity`` is the same with v = a = 0, where only the
composite mass and first moment are needed.
"""

from numba import njit

from .jit import JIT
from .kinematics import forward_kinematics, set6, velocities
from .spatial import add6, add_row, dot6, force_cross, gravity_force, inertia_times, row6


@njit(inline='always', **JIT)
def rnea(m, q, qd, qdd, tau, w):
    """tau = M(q) qdd + C(q, qd) qd + g(q)."""
    forward_kinematics(m, q, w)
    velocities(m, w.Phi, qd, w.vel, w.Phid)
    newton_euler(m, w.Phi, w.Phid, w.I, w.vel, qd, qdd, w.W[0], w.W[1], tau)


@njit(inline='always', **JIT)
def newton_euler(m, Phi, Phid, I, vel, qd, qdd, acc, f, tau):
    """The two sweeps, given the kinematics; ``acc`` and ``f`` are (N, 6) scratch."""
    N, nv, gravity, dof_body = m.N, m.nv, m.gravity, m.dof_body
    for i in range(N):
        parent = m.parent[i]
        if parent < 0:                                  # a_0 = -gravity
            a = (0.0, 0.0, 0.0, -gravity[0], -gravity[1], -gravity[2])
        else:
            a = row6(acc, parent)
        a = joint_acceleration(a, Phi, Phid, qd, qdd, dof_body, m.v_idx[i], i)   # (12)
        set6(acc, i, a)
        v = row6(vel, i)                                # f_i = I_i a_i + v_i x* I_i v_i  (7)
        set6(f, i, add6(inertia_times(I, i, a), force_cross(v, inertia_times(I, i, v))))
    s = nv - 1
    for i in range(N - 1, -1, -1):                      # tau_i = Phi_i^T sum_{k >= i} f_k  (13)
        while s >= 0 and dof_body[s] == i:
            tau[s] = dot6(Phi, s, row6(f, i)) + m.armature[s] * qdd[s]   # + rotor inertia
            s -= 1
        if m.parent[i] >= 0:
            add_row(f, i, m.parent[i])


@njit(inline='always', **JIT)
def joint_acceleration(a, Phi, Phid, qd, qdd, dof_body, s, i):
    """a_i = a + Phi_i qdd_i + Phid_i qd_i (eq. (12)) for a = a_p(i), summed over the DoFs of
    body i (its first DoF: s)."""
    nv = dof_body.shape[0]
    while s < nv and dof_body[s] == i:
        x, y = qdd[s], qd[s]
        a = (a[0] + Phi[s, 0] * x + Phid[s, 0] * y, a[1] + Phi[s, 1] * x + Phid[s, 1] * y,
             a[2] + Phi[s, 2] * x + Phid[s, 2] * y, a[3] + Phi[s, 3] * x + Phid[s, 3] * y,
             a[4] + Phi[s, 4] * x + Phid[s, 4] * y, a[5] + Phi[s, 5] * x + Phid[s, 5] * y)
        s += 1
    return a


@njit(inline='always', **JIT)
def generalized_gravity(m, q, g, w):
    """g(q) = RNEA(q, 0, 0): g_i = Phi_i^T I^C_i a_0 (only the composite m and h are needed)."""
    forward_kinematics(m, q, w)
    Phi, I = w.Phi, w.I
    s = m.nv - 1
    for i in range(m.N - 1, -1, -1):
        fg = gravity_force(I, i, m.gravity)
        while s >= 0 and m.dof_body[s] == i:
            g[s] = dot6(Phi, s, fg)
            s -= 1
        parent = m.parent[i]
        if parent >= 0:
            for c in range(4):                          # m and h
                I[parent, c] += I[i, c]
