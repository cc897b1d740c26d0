"""Centroidal momentum: total mass, centre of mass and its velocity, the centroidal momentum
matrix A_G and dA_G/dt v (Orin, Goswami & Lee 2013; Wensing & Orin 2016).

In world Plücker coordinates at the world origin (angular first, kinematics.py) the spatial
momentum of the tree is h_O = sum_i I_i v_i.  With v_i = sum_{s in anc(i)} Phi_s v_s and the
composite inertias I^C_b = sum_{i in subtree(b)} I_i (the CRBA's, Featherstone 2008 Ch. 6)
the sum regroups by DoF:

    h_O = sum_s I^C_b(s) Phi_s v_s,    i.e. column s of A_O is I^C_b(s) Phi_s = [n_s; f_s],

the same F2 = I^C Phi_j Algorithm 1 of Echeandia & Wensing 2021 forms (line 10).  Orin,
Goswami & Lee 2013 express the momentum at the centre of mass G with world axes; with
the total mass m and first moment h = m c read off the composite inertia of the root(s), moving
the reference point to c changes only the moment, n_G = n_O - c x f, so in the public order
(linear rows first)

    A_G = [f_s; n_s - c x f_s],    c = h / m,    cdot = (sum_s f_s v_s) / m.

dA_G/dt v is dh_G/dt at dv/dt = 0 (Wensing & Orin 2016: for a floating base, the base force of the
RNEA at zero acceleration and gravity, moved to G; this sum also serves a fixed base).  Per body, d/dt (I_i v_i) = I_i a_i + v_i x* I_i v_i
(Featherstone 2008 Ch. 2, the equation of motion of a rigid body), with a_i the bias acceleration of frame_kinematics.py, so

    d h_O/dt = sum_i (I_i a_i + v_i x* I_i v_i) = [ndot_O; fdot],
    dA_G/dt v = [fdot; ndot_O - c x fdot]          (d/dt (c x f) = cdot x m cdot + c x fdot).

With a fixed base the sums run over the moving bodies: links rigidly attached to the fixed
root are part of the world (as Pinocchio counts them).
"""

from numba import njit

from .jit import JIT
from .spatial import force_cross, inertia_times, row6


@njit(inline='always', **JIT)
def composite_inertias(m, Ib, IC):
    """IC[b] = sum of Ib over the subtree of b (Featherstone 2008 Ch. 6; world coordinates,
    so plain sums)."""
    for i in range(m.N):
        for c in range(Ib.shape[1]):
            IC[i, c] = Ib[i, c]
    for i in range(m.N - 1, -1, -1):
        parent = m.parent[i]
        if parent >= 0:
            for c in range(IC.shape[1]):
                IC[parent, c] += IC[i, c]


@njit(inline='always', **JIT)
def centroidal_momentum(m, qd, Phi, vel, acc, Ib, IC, A_G, bias, centroid):
    """A_G (6 x nv), bias = dA_G/dt v (6) and centroid = [mass, c (3), cdot (3)] from the body
    inertias Ib and the composite inertias IC (rows (m, h, J), world), the motion subspaces Phi,
    the body velocities vel and bias accelerations acc (module docstring)."""
    mass, h0, h1, h2 = 0.0, 0.0, 0.0, 0.0
    for i in range(m.N):                            # the roots' composites: the whole tree
        if m.parent[i] < 0:
            mass += IC[i, 0]
            h0, h1, h2 = h0 + IC[i, 1], h1 + IC[i, 2], h2 + IC[i, 3]
    inv = 1.0 / mass if mass > 0.0 else 0.0
    c0, c1, c2 = h0 * inv, h1 * inv, h2 * inv
    p0, p1, p2 = 0.0, 0.0, 0.0                      # linear momentum f = m cdot
    for s in range(m.nv):
        n0, n1, n2, f0, f1, f2 = inertia_times(IC, m.dof_body[s], row6(Phi, s))
        A_G[0, s], A_G[1, s], A_G[2, s] = f0, f1, f2
        A_G[3, s] = n0 - (c1 * f2 - c2 * f1)         # n_G = n_O - c x f
        A_G[4, s] = n1 - (c2 * f0 - c0 * f2)
        A_G[5, s] = n2 - (c0 * f1 - c1 * f0)
        p0, p1, p2 = p0 + f0 * qd[s], p1 + f1 * qd[s], p2 + f2 * qd[s]
    dn0, dn1, dn2, df0, df1, df2 = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    for i in range(m.N):                            # dh_O/dt = sum I_i a_i + v_i x* I_i v_i
        v = row6(vel, i)
        x = inertia_times(Ib, i, row6(acc, i))
        y = force_cross(v, inertia_times(Ib, i, v))
        dn0, dn1, dn2 = dn0 + x[0] + y[0], dn1 + x[1] + y[1], dn2 + x[2] + y[2]
        df0, df1, df2 = df0 + x[3] + y[3], df1 + x[4] + y[4], df2 + x[5] + y[5]
    bias[0], bias[1], bias[2] = df0, df1, df2
    bias[3] = dn0 - (c1 * df2 - c2 * df1)
    bias[4] = dn1 - (c2 * df0 - c0 * df2)
    bias[5] = dn2 - (c0 * df1 - c1 * df0)
    centroid[0] = mass
    centroid[1], centroid[2], centroid[3] = c0, c1, c2
    centroid[4], centroid[5], centroid[6] = p0 * inv, p1 * inv, p2 * inv
