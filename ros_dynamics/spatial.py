"""Spatial vector algebra for the compiled kernels (Featherstone, seed 004; seed 000 App. A).

Conventions inside the kernels: spatial vectors are 6-arrays, angular part first
(motion ``[w; u]``, force ``[n; f]``), all expressed in the world frame at the world origin
(Plücker coordinates).  Keeping every body quantity in one common frame means the ancestor
loops of the algorithms need no coordinate transforms (seed 000, footnote 2).

A spatial inertia is kept as ``(m, h, J)``: mass, first moment ``h = m c`` and the 3x3
rotational inertia ``J`` about the world origin, i.e. the 6x6 matrix
``[[J, S(h)], [S(h)^T, m 1]]`` (seed 000, App. A).  Composite inertias are plain sums.

Every helper writes into an output array (no allocation) so that kernels allocate their
scratch once per call.
"""

import numpy as np
from numba import njit

_JIT = dict(cache=True, nogil=True, fastmath=False)


@njit(**_JIT)
def cross3(a, b, out):
    """out = a x b (out must not alias a or b)."""
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@njit(**_JIT)
def dot6(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


@njit(**_JIT)
def motion_cross(v, x, out):
    """out = v x x, the motion/motion cross product (v x) x = [w x xw; w x xu + u x xw]."""
    w0, w1, w2, u0, u1, u2 = v[0], v[1], v[2], v[3], v[4], v[5]
    a0, a1, a2, b0, b1, b2 = x[0], x[1], x[2], x[3], x[4], x[5]
    out[0] = w1 * a2 - w2 * a1
    out[1] = w2 * a0 - w0 * a2
    out[2] = w0 * a1 - w1 * a0
    out[3] = w1 * b2 - w2 * b1 + u1 * a2 - u2 * a1
    out[4] = w2 * b0 - w0 * b2 + u2 * a0 - u0 * a2
    out[5] = w0 * b1 - w1 * b0 + u0 * a1 - u1 * a0


@njit(**_JIT)
def force_cross_add(v, f, out, scale):
    """out += scale * (v x* f), the motion/force cross product [w x n + u x f; w x f]."""
    w0, w1, w2, u0, u1, u2 = v[0], v[1], v[2], v[3], v[4], v[5]
    n0, n1, n2, f0, f1, f2 = f[0], f[1], f[2], f[3], f[4], f[5]
    out[0] += scale * (w1 * n2 - w2 * n1 + u1 * f2 - u2 * f1)
    out[1] += scale * (w2 * n0 - w0 * n2 + u2 * f0 - u0 * f2)
    out[2] += scale * (w0 * n1 - w1 * n0 + u0 * f1 - u1 * f0)
    out[3] += scale * (w1 * f2 - w2 * f1)
    out[4] += scale * (w2 * f0 - w0 * f2)
    out[5] += scale * (w0 * f1 - w1 * f0)


@njit(**_JIT)
def inertia_times(m, h, J, x, out):
    """out = I x for I = (m, h, J): [J xw + h x xu; m xu - h x xw]."""
    a0, a1, a2, b0, b1, b2 = x[0], x[1], x[2], x[3], x[4], x[5]
    h0, h1, h2 = h[0], h[1], h[2]
    out[0] = J[0, 0] * a0 + J[0, 1] * a1 + J[0, 2] * a2 + h1 * b2 - h2 * b1
    out[1] = J[1, 0] * a0 + J[1, 1] * a1 + J[1, 2] * a2 + h2 * b0 - h0 * b2
    out[2] = J[2, 0] * a0 + J[2, 1] * a1 + J[2, 2] * a2 + h0 * b1 - h1 * b0
    out[3] = m * b0 - (h1 * a2 - h2 * a1)
    out[4] = m * b1 - (h2 * a0 - h0 * a2)
    out[5] = m * b2 - (h0 * a1 - h1 * a0)


@njit(**_JIT)
def body_factorization(v, m, h, J, B):
    """B = B(v, I) of seed 000 eq. (10), the Niemeyer-Slotine factorization of v x* I v:

        B = 1/2 [ (v x*) I + (I v) xbar* - I (v x) ].

    Written out in blocks with v = [w; u], I v = [n; f] (n = J w + h x u, f = m u + w x h) and
    S(a) S(b) = b a^T - (a.b) 1, the right column blocks cancel and

        B = [[ B11, 0 ], [ -S(f), 0 ]],
        B11 = 1/2 [ S(w) J - J S(w) - (u h^T + h u^T) + 2 (u.h) 1 - S(n) ],

    so B only acts on the angular part of a motion vector (the zero blocks exploited by the
    kernels: only columns 0..2 are ever read).  B is overwritten (6x6).
    """
    w0, w1, w2, u0, u1, u2 = v[0], v[1], v[2], v[3], v[4], v[5]
    h0, h1, h2 = h[0], h[1], h[2]
    n0 = J[0, 0] * w0 + J[0, 1] * w1 + J[0, 2] * w2 + h1 * u2 - h2 * u1
    n1 = J[1, 0] * w0 + J[1, 1] * w1 + J[1, 2] * w2 + h2 * u0 - h0 * u2
    n2 = J[2, 0] * w0 + J[2, 1] * w1 + J[2, 2] * w2 + h0 * u1 - h1 * u0
    f0 = m * u0 + w1 * h2 - w2 * h1
    f1 = m * u1 + w2 * h0 - w0 * h2
    f2 = m * u2 + w0 * h1 - w1 * h0
    uh = u0 * h0 + u1 * h1 + u2 * h2
    for c in range(3):
        # column c of S(w) J - J S(w): w x J[:, c] - J (w x e_c)
        j0, j1, j2 = J[0, c], J[1, c], J[2, c]
        if c == 0:
            e0, e1, e2 = 0.0, w2, -w1
        elif c == 1:
            e0, e1, e2 = -w2, 0.0, w0
        else:
            e0, e1, e2 = w1, -w0, 0.0
        B[0, c] = 0.5 * (w1 * j2 - w2 * j1 - (J[0, 0] * e0 + J[0, 1] * e1 + J[0, 2] * e2))
        B[1, c] = 0.5 * (w2 * j0 - w0 * j2 - (J[1, 0] * e0 + J[1, 1] * e1 + J[1, 2] * e2))
        B[2, c] = 0.5 * (w0 * j1 - w1 * j0 - (J[2, 0] * e0 + J[2, 1] * e1 + J[2, 2] * e2))
    B[0, 0] += -u0 * h0 + uh
    B[1, 1] += -u1 * h1 + uh
    B[2, 2] += -u2 * h2 + uh
    B[0, 1] += 0.5 * (-(u0 * h1 + h0 * u1) + n2)
    B[1, 0] += 0.5 * (-(u1 * h0 + h1 * u0) - n2)
    B[0, 2] += 0.5 * (-(u0 * h2 + h0 * u2) - n1)
    B[2, 0] += 0.5 * (-(u2 * h0 + h2 * u0) + n1)
    B[1, 2] += 0.5 * (-(u1 * h2 + h1 * u2) + n0)
    B[2, 1] += 0.5 * (-(u2 * h1 + h2 * u1) - n0)
    # lower-left block -S(f), right column blocks zero
    B[3, 0], B[3, 1], B[3, 2] = 0.0, f2, -f1
    B[4, 0], B[4, 1], B[4, 2] = -f2, 0.0, f0
    B[5, 0], B[5, 1], B[5, 2] = f1, -f0, 0.0
    for r in range(6):
        B[r, 3] = 0.0
        B[r, 4] = 0.0
        B[r, 5] = 0.0


@njit(**_JIT)
def body_factorization_eq9(v, m, h, J, B, tmp):
    """B = (v x*) I, seed 000 eq. (9): admissible but not Christoffel-consistent.

    Built column by column, B e_c = v x* (I e_c); ``tmp`` is a 12-array of scratch.
    """
    e = tmp[0:6]
    col = tmp[6:12]
    for c in range(6):
        e[:] = 0.0
        e[c] = 1.0
        inertia_times(m, h, J, e, col)
        for r in range(6):
            B[r, c] = 0.0
        force_cross_add(v, col, B[:, c], 1.0)


@njit(**_JIT)
def mat6_times(B, x, out, ncols):
    """out = B[:, :ncols] x[:ncols] (ncols = 3 for the factorization of eq. (10))."""
    for r in range(6):
        s = 0.0
        for c in range(ncols):
            s += B[r, c] * x[c]
        out[r] = s


@njit(**_JIT)
def mat6T_times(B, x, out, nrows):
    """out = B^T x restricted to the first ``nrows`` outputs (the rest set to zero)."""
    for c in range(6):
        if c < nrows:
            out[c] = (B[0, c] * x[0] + B[1, c] * x[1] + B[2, c] * x[2]
                      + B[3, c] * x[3] + B[4, c] * x[4] + B[5, c] * x[5])
        else:
            out[c] = 0.0


@njit(**_JIT)
def quaternion_to_matrix(x, y, z, w, R):
    """Rotation matrix of the quaternion (x, y, z, w), normalised first."""
    s = 1.0 / np.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x * s, y * s, z * s, w * s
    R[0, 0] = 1.0 - 2.0 * (y * y + z * z)
    R[0, 1] = 2.0 * (x * y - z * w)
    R[0, 2] = 2.0 * (x * z + y * w)
    R[1, 0] = 2.0 * (x * y + z * w)
    R[1, 1] = 1.0 - 2.0 * (x * x + z * z)
    R[1, 2] = 2.0 * (y * z - x * w)
    R[2, 0] = 2.0 * (x * z - y * w)
    R[2, 1] = 2.0 * (y * z + x * w)
    R[2, 2] = 1.0 - 2.0 * (x * x + y * y)
