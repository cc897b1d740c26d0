"""Jacobian of a body-fixed point (world frame), for contact force estimation and contacts."""

from numba import njit

from .jit import JIT


@njit(inline='always', **JIT)
def point_jacobian(m, Phi, body, point, Jac):
    """Jac (6 x nv) of the body-fixed point at world position ``point``, from the world motion
    subspaces Phi of :func:`kinematics.placements`.

    Rows: linear velocity of the point, then angular velocity (world frame).  Column s is
    Phi_s = [a; l] moved from the world origin to the point: [l + a x point; a] (linear first).
    Columns of DoFs that do not move ``body`` are zero.
    """
    for r in range(6):
        for c in range(m.nv):
            Jac[r, c] = 0.0
    s = m.v_idx[body]
    while s < m.nv and m.dof_body[s] == body:          # the body's own DoFs ...
        s += 1
    s -= 1
    while s >= 0:                                         # ... and all DoF ancestors
        a0, a1, a2 = Phi[s, 0], Phi[s, 1], Phi[s, 2]
        Jac[0, s] = Phi[s, 3] + a1 * point[2] - a2 * point[1]
        Jac[1, s] = Phi[s, 4] + a2 * point[0] - a0 * point[2]
        Jac[2, s] = Phi[s, 5] + a0 * point[1] - a1 * point[0]
        Jac[3, s], Jac[4, s], Jac[5, s] = a0, a1, a2
        s = m.dof_parent[s]
