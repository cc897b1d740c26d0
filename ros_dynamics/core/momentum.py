"""O(N) products for the generalized-momentum observer, without forming any n x n matrix.

With h^C_j = sum_{l >= j} I_l v_l the composite spatial momentum of the subtree of body j:
    p = M v:        p_s = Phi_s . h^C_j            (M_ij = Phi_i^T I^C_{ceil(ij)} Phi_j, eq. (17))
    C^T v:          (C^T v)_s = Phid_s . h^C_j
The second follows from eq. (18): sum_i C_ij v_i = Phid_j . sum_i I^C_{ceil(ij)} Phi_i v_i
+ Phi_j . sum_{l >= j} B_l^T v_l, where the first sum is h^C_j and B(v,I)^T v = 0 for an
admissible B (eq. (11): B^T v = Idot v - B v = (v x* I v - I (v x v)) - v x* I v = 0).
For the Christoffel-consistent C this is the familiar C^T v = dT/dq.  g comes from the same sweep.
"""

from numba import njit

from .jit import JIT
from .kinematics import forward_kinematics, set6, velocities
from .spatial import add_row, dot6, gravity_force, inertia_times, row6


@njit(inline='always', **JIT)
def momentum_terms(m, q, qd, p_out, ctv_out, g_out, w):
    """p = M(q) qd, C(q, qd)^T qd and g(q), each (nv,)."""
    N, nv = m.N, m.nv
    Phi, Phid, I, vel, hC = w.Phi, w.Phid, w.I, w.vel, w.W[0]
    forward_kinematics(m, q, w)
    velocities(m, Phi, qd, vel, Phid)
    for i in range(N):
        set6(hC, i, inertia_times(I, i, row6(vel, i)))   # I_i v_i
    s = nv - 1
    for b in range(N - 1, -1, -1):
        fg = gravity_force(I, b, m.gravity)
        h = row6(hC, b)
        while s >= 0 and m.dof_body[s] == b:
            p_out[s] = dot6(Phi, s, h) + m.armature[s] * qd[s]    # + rotor: diag(I_a) qd
            ctv_out[s] = dot6(Phid, s, h)
            g_out[s] = dot6(Phi, s, fg)
            s -= 1
        parent = m.parent[b]
        if parent >= 0:
            add_row(hC, b, parent)
            add_row(I, b, parent)
