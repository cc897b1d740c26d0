"""Spatial vector algebra for the compiled kernels (Featherstone 2008; Echeandia & Wensing 2021, App. A).

Conventions inside the kernels: spatial vectors are 6-tuples, angular part first
(motion ``[w; u]``, force ``[n; f]``), all expressed in the world frame at the world origin
(Plücker coordinates).  Keeping every body quantity in one common frame means the ancestor
loops of the algorithms need no coordinate transforms (Echeandia & Wensing 2021, footnote 2).

A spatial inertia is one row of 10 numbers ``(m, h, J)`` (see ``I_M``, ``I_H``, ``I_J``): mass,
first moment ``h = m c`` and the symmetric 3x3 rotational inertia ``J`` about the world origin,
i.e. the 6x6 matrix ``[[J, S(h)], [S(h)^T, m 1]]`` (Echeandia & Wensing 2021, App. A).  Composite inertias are
plain row sums.

Speed notes (these helpers, ``@helper`` of jit.py, run in the innermost loops): vectors are
passed and returned as tuples of scalars, and arrays as ``(array, row)`` pairs, never as
slices.  After inlining, LLVM keeps everything in registers; a slice would be a new array
object with reference counting.
"""

import numpy as np

from .jit import JIT, helper


# columns of an inertia row: mass, first moment h = m c, J = [xx, xy, xz, yy, yz, zz]
I_M, I_H, I_J, NI = 0, 1, 4, 10


@helper
def row6(A, i):
    """Row i of an (n, 6) array as a 6-tuple."""
    return A[i, 0], A[i, 1], A[i, 2], A[i, 3], A[i, 4], A[i, 5]


@helper
def dot6(A, i, x):
    """A[i] . x for a 6-tuple x."""
    return (A[i, 0] * x[0] + A[i, 1] * x[1] + A[i, 2] * x[2]
            + A[i, 3] * x[3] + A[i, 4] * x[4] + A[i, 5] * x[5])


@helper
def add6(x, y):
    return x[0] + y[0], x[1] + y[1], x[2] + y[2], x[3] + y[3], x[4] + y[4], x[5] + y[5]


@helper
def add_row(A, src, dst):
    """A[dst] += A[src] (composite sums in the world frame need no transform)."""
    for c in range(A.shape[1]):
        A[dst, c] += A[src, c]


@helper
def motion_cross(v, x):
    """v x x, the motion/motion cross product (v x) x = [w x xw; w x xu + u x xw]."""
    w0, w1, w2, u0, u1, u2 = v
    a0, a1, a2, b0, b1, b2 = x
    return (w1 * a2 - w2 * a1,
            w2 * a0 - w0 * a2,
            w0 * a1 - w1 * a0,
            w1 * b2 - w2 * b1 + u1 * a2 - u2 * a1,
            w2 * b0 - w0 * b2 + u2 * a0 - u0 * a2,
            w0 * b1 - w1 * b0 + u0 * a1 - u1 * a0)


@helper
def force_cross(v, f):
    """v x* f, the motion/force cross product [w x n + u x f; w x f]."""
    w0, w1, w2, u0, u1, u2 = v
    n0, n1, n2, f0, f1, f2 = f
    return (w1 * n2 - w2 * n1 + u1 * f2 - u2 * f1,
            w2 * n0 - w0 * n2 + u2 * f0 - u0 * f2,
            w0 * n1 - w1 * n0 + u0 * f1 - u1 * f0,
            w1 * f2 - w2 * f1,
            w2 * f0 - w0 * f2,
            w0 * f1 - w1 * f0)


@helper
def inertia_times(I, b, x):
    """I_b x for the inertia in row b of I: [J xw + h x xu; m xu - h x xw]."""
    m, h0, h1, h2 = I[b, 0], I[b, 1], I[b, 2], I[b, 3]
    Jxx, Jxy, Jxz, Jyy, Jyz, Jzz = I[b, 4], I[b, 5], I[b, 6], I[b, 7], I[b, 8], I[b, 9]
    a0, a1, a2, b0, b1, b2 = x
    return (Jxx * a0 + Jxy * a1 + Jxz * a2 + h1 * b2 - h2 * b1,
            Jxy * a0 + Jyy * a1 + Jyz * a2 + h2 * b0 - h0 * b2,
            Jxz * a0 + Jyz * a1 + Jzz * a2 + h0 * b1 - h1 * b0,
            m * b0 - (h1 * a2 - h2 * a1),
            m * b1 - (h2 * a0 - h0 * a2),
            m * b2 - (h0 * a1 - h1 * a0))


@helper
def gravity_force(I, b, gravity):
    """I_b a_0 with a_0 = [0; -gravity]: [h x (-gravity); -m gravity] (only m, h needed)."""
    m, h0, h1, h2 = I[b, 0], I[b, 1], I[b, 2], I[b, 3]
    g0, g1, g2 = gravity[0], gravity[1], gravity[2]
    return (h2 * g1 - h1 * g2, h0 * g2 - h2 * g0, h1 * g0 - h0 * g1, -m * g0, -m * g1, -m * g2)


@helper
def body_factorization(v, I, b, B, k):
    """B[k] = B(v, I_b) of Echeandia & Wensing 2021 eq. (10), the Niemeyer-Slotine factorization of v x* I v:

        B = 1/2 [ (v x*) I + (I v) xbar* - I (v x) ].

    Written out in blocks with v = [w; u], I v = [n; f] (n = J w + h x u, f = m u + w x h) and
    S(a) S(b) = b a^T - (a.b) 1, the right column blocks cancel and

        B = [[ B11, 0 ], [ -S(f), 0 ]],
        B11 = 1/2 [ S(w) J - J S(w) - (u h^T + h u^T) + 2 (u.h) 1 - S(n) ],

    so B only acts on the angular part of a motion vector.  ``B`` is an (n, 6, 6) array of
    which only the left three columns are written and ever read for this factorization.
    """
    w0, w1, w2, u0, u1, u2 = v
    h0, h1, h2 = I[b, 1], I[b, 2], I[b, 3]
    Jxx, Jxy, Jxz, Jyy, Jyz, Jzz = I[b, 4], I[b, 5], I[b, 6], I[b, 7], I[b, 8], I[b, 9]
    n0, n1, n2, f0, f1, f2 = inertia_times(I, b, v)
    uh = u0 * h0 + u1 * h1 + u2 * h2
    # with E = S(w) J:  S(w) J - J S(w) = E + E^T  (J symmetric, S(w)^T = -S(w))
    e00, e01, e02 = w1 * Jxz - w2 * Jxy, w1 * Jyz - w2 * Jyy, w1 * Jzz - w2 * Jyz
    e10, e11, e12 = w2 * Jxx - w0 * Jxz, w2 * Jxy - w0 * Jyz, w2 * Jxz - w0 * Jzz
    e20, e21, e22 = w0 * Jxy - w1 * Jxx, w0 * Jyy - w1 * Jxy, w0 * Jyz - w1 * Jxz
    B[k, 0, 0] = e00 - u0 * h0 + uh
    B[k, 1, 1] = e11 - u1 * h1 + uh
    B[k, 2, 2] = e22 - u2 * h2 + uh
    s01, s02, s12 = 0.5 * (e01 + e10), 0.5 * (e02 + e20), 0.5 * (e12 + e21)
    d01, d02, d12 = 0.5 * (u0 * h1 + h0 * u1), 0.5 * (u0 * h2 + h0 * u2), 0.5 * (u1 * h2 + h1 * u2)
    B[k, 0, 1] = s01 - d01 + 0.5 * n2
    B[k, 1, 0] = s01 - d01 - 0.5 * n2
    B[k, 0, 2] = s02 - d02 - 0.5 * n1
    B[k, 2, 0] = s02 - d02 + 0.5 * n1
    B[k, 1, 2] = s12 - d12 + 0.5 * n0
    B[k, 2, 1] = s12 - d12 - 0.5 * n0
    # lower-left block -S(f)
    B[k, 3, 0], B[k, 3, 1], B[k, 3, 2] = 0.0, f2, -f1
    B[k, 4, 0], B[k, 4, 1], B[k, 4, 2] = -f2, 0.0, f0
    B[k, 5, 0], B[k, 5, 1], B[k, 5, 2] = f1, -f0, 0.0


@helper
def body_factorization_eq9(v, I, b, B, k):
    """B[k] = (v x*) I_b, Echeandia & Wensing 2021 eq. (9): admissible but not Christoffel-consistent.

    Built column by column, B e_c = v x* (I e_c); all six columns are nonzero.
    """
    for c in range(6):
        e = (1.0 if c == 0 else 0.0, 1.0 if c == 1 else 0.0, 1.0 if c == 2 else 0.0,
             1.0 if c == 3 else 0.0, 1.0 if c == 4 else 0.0, 1.0 if c == 5 else 0.0)
        col = force_cross(v, inertia_times(I, b, e))
        for r in range(6):
            B[k, r, c] = col[r]


@helper
def factor_times(B, k, x, ncols):
    """B[k] x using the first ``ncols`` columns (3 for the factorization of eq. (10), else 6)."""
    a0, a1, a2 = x[0], x[1], x[2]
    y0 = B[k, 0, 0] * a0 + B[k, 0, 1] * a1 + B[k, 0, 2] * a2
    y1 = B[k, 1, 0] * a0 + B[k, 1, 1] * a1 + B[k, 1, 2] * a2
    y2 = B[k, 2, 0] * a0 + B[k, 2, 1] * a1 + B[k, 2, 2] * a2
    y3 = B[k, 3, 0] * a0 + B[k, 3, 1] * a1 + B[k, 3, 2] * a2
    y4 = B[k, 4, 0] * a0 + B[k, 4, 1] * a1 + B[k, 4, 2] * a2
    y5 = B[k, 5, 0] * a0 + B[k, 5, 1] * a1 + B[k, 5, 2] * a2
    if ncols == 3:
        return y0, y1, y2, y3, y4, y5
    b0, b1, b2 = x[3], x[4], x[5]
    return (y0 + B[k, 0, 3] * b0 + B[k, 0, 4] * b1 + B[k, 0, 5] * b2,
            y1 + B[k, 1, 3] * b0 + B[k, 1, 4] * b1 + B[k, 1, 5] * b2,
            y2 + B[k, 2, 3] * b0 + B[k, 2, 4] * b1 + B[k, 2, 5] * b2,
            y3 + B[k, 3, 3] * b0 + B[k, 3, 4] * b1 + B[k, 3, 5] * b2,
            y4 + B[k, 4, 3] * b0 + B[k, 4, 4] * b1 + B[k, 4, 5] * b2,
            y5 + B[k, 5, 3] * b0 + B[k, 5, 4] * b1 + B[k, 5, 5] * b2)


@helper
def factor_T_times(B, k, x, ncols):
    """B[k]^T x; with ``ncols`` = 3 (eq. (10)) the linear part is zero.  (Written out: a
    closure for the column product cost ~0.6 s more compile time.)"""
    x0, x1, x2, x3, x4, x5 = x
    c0 = (B[k, 0, 0] * x0 + B[k, 1, 0] * x1 + B[k, 2, 0] * x2
          + B[k, 3, 0] * x3 + B[k, 4, 0] * x4 + B[k, 5, 0] * x5)
    c1 = (B[k, 0, 1] * x0 + B[k, 1, 1] * x1 + B[k, 2, 1] * x2
          + B[k, 3, 1] * x3 + B[k, 4, 1] * x4 + B[k, 5, 1] * x5)
    c2 = (B[k, 0, 2] * x0 + B[k, 1, 2] * x1 + B[k, 2, 2] * x2
          + B[k, 3, 2] * x3 + B[k, 4, 2] * x4 + B[k, 5, 2] * x5)
    if ncols == 3:
        return c0, c1, c2, 0.0, 0.0, 0.0
    c3 = (B[k, 0, 3] * x0 + B[k, 1, 3] * x1 + B[k, 2, 3] * x2
          + B[k, 3, 3] * x3 + B[k, 4, 3] * x4 + B[k, 5, 3] * x5)
    c4 = (B[k, 0, 4] * x0 + B[k, 1, 4] * x1 + B[k, 2, 4] * x2
          + B[k, 3, 4] * x3 + B[k, 4, 4] * x4 + B[k, 5, 4] * x5)
    c5 = (B[k, 0, 5] * x0 + B[k, 1, 5] * x1 + B[k, 2, 5] * x2
          + B[k, 3, 5] * x3 + B[k, 4, 5] * x4 + B[k, 5, 5] * x5)
    return c0, c1, c2, c3, c4, c5


@helper
def quaternion_to_matrix(x, y, z, w, R, i):
    """R[i] = rotation matrix of the quaternion (x, y, z, w), normalised first."""
    s = 1.0 / np.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x * s, y * s, z * s, w * s
    R[i, 0, 0] = 1.0 - 2.0 * (y * y + z * z)
    R[i, 0, 1] = 2.0 * (x * y - z * w)
    R[i, 0, 2] = 2.0 * (x * z + y * w)
    R[i, 1, 0] = 2.0 * (x * y + z * w)
    R[i, 1, 1] = 1.0 - 2.0 * (x * x + z * z)
    R[i, 1, 2] = 2.0 * (y * z - x * w)
    R[i, 2, 0] = 2.0 * (x * z - y * w)
    R[i, 2, 1] = 2.0 * (y * z + x * w)
    R[i, 2, 2] = 1.0 - 2.0 * (x * x + y * y)
