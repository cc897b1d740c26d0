"""Task frames: pose, Jacobian and dJ/dt v of frames fixed in the bodies (Featherstone 2008,
Ch. 2 and 5).

A task frame is a pose (R_l, p_l) fixed in a body b (a link, or a link merged into b by a fixed
joint).  Everything is computed from the world-frame kinematics pass (kinematics.py): body
velocities v_i = [w_i; u_i] and the motion subspaces Phi_s, Phid_s = v_i x Phi_s in world
Plücker coordinates at the world origin, angular first.

Bias accelerations (the forward pass of the RNEA, Featherstone 2008 Ch. 5, at qdd = 0 and
without gravity, in world coordinates, where the derivative of a body-fixed motion subspace is
v_i x Phi_s):

    a_i = a_p(i) + sum_{s of i} Phid_s qd_s,        a_root's parent = 0 (no gravity),

the spatial acceleration [alpha_i; a^O_i] of body i when dv/dt = 0.  For a frame with world
origin x and rotation R = R_b R_l, with omega, u = w_b, u_b and alpha, a^O = a_b:

    J          = [Phi_s moved to x: l_s + a_s x x;  a_s]     (rows: linear, then angular)
    dJ/dt v    = [a^O + alpha x x + omega x (u + omega x x);  alpha]

The linear part is the classical (not the spatial) acceleration of the frame origin: the
spatial acceleration a^O + alpha x x plus omega x xdot (Featherstone 2008 Ch. 2: classical vs spatial acceleration), with
xdot = u + omega x x the origin's velocity.  These are Pinocchio's LOCAL_WORLD_ALIGNED
Jacobian and classical frame acceleration.
"""

from numba import njit

from .jacobian import point_jacobian
from .jit import JIT
from .kinematics import propagate


@njit(inline='always', **JIT)
def bias_accelerations(m, qd, Phid, acc):
    """acc[i] = a_i at dv/dt = 0 (module docstring), every body, in one pass along the tree."""
    propagate(m, Phid, qd, acc)


@njit(inline='always', **JIT)
def frame_kinematics(m, R, pos, Phi, vel, acc, body, local, rot, origin, J, Jdv):
    """Per task frame k (body[k] = -1: fixed to the world): rot[k], origin[k] = world pose,
    J[k] (6 x nv) and Jdv[k] = dJ/dt v (module docstring).  local[k] = the frame in its body:
    R_l row-major (9), then p_l (3)."""
    for k in range(body.shape[0]):
        b = body[k]
        if b < 0:                                    # part of the world: constant, at rest
            for r in range(3):
                for c in range(3):
                    rot[k, r, c] = local[k, 3 * r + c]
                origin[k, r] = local[k, 9 + r]
            for r in range(6):
                Jdv[k, r] = 0.0
                for c in range(m.nv):
                    J[k, r, c] = 0.0
            continue
        for r in range(3):                           # R = R_b R_l,  x = p_b + R_b p_l
            R0, R1, R2 = R[b, r, 0], R[b, r, 1], R[b, r, 2]
            for c in range(3):
                rot[k, r, c] = R0 * local[k, c] + R1 * local[k, 3 + c] + R2 * local[k, 6 + c]
            origin[k, r] = pos[b, r] + R0 * local[k, 9] + R1 * local[k, 10] + R2 * local[k, 11]
        x0, x1, x2 = origin[k, 0], origin[k, 1], origin[k, 2]
        point_jacobian(m, Phi, b, (x0, x1, x2), J[k])
        w0, w1, w2, u0, u1, u2 = vel[b, 0], vel[b, 1], vel[b, 2], vel[b, 3], vel[b, 4], vel[b, 5]
        al0, al1, al2, a0, a1, a2 = acc[b, 0], acc[b, 1], acc[b, 2], acc[b, 3], acc[b, 4], acc[b, 5]
        d0 = u0 + w1 * x2 - w2 * x1                  # xdot = u + omega x x
        d1 = u1 + w2 * x0 - w0 * x2
        d2 = u2 + w0 * x1 - w1 * x0
        Jdv[k, 0] = a0 + al1 * x2 - al2 * x1 + w1 * d2 - w2 * d1     # a^O + alpha x x + omega x xdot
        Jdv[k, 1] = a1 + al2 * x0 - al0 * x2 + w2 * d0 - w0 * d2
        Jdv[k, 2] = a2 + al0 * x1 - al1 * x0 + w0 * d1 - w1 * d0
        Jdv[k, 3], Jdv[k, 4], Jdv[k, 5] = al0, al1, al2
