"""The entry kernels: input check + algorithm in one compiled call (kinematics.py convention).

Each is sealed to one signature (``jit.entry``: float64 C-contiguous inputs, the model's
read-only packed array and a Data buffer) and compiled at its first call.  Argument order:
``(packed, work, q, <the (nv,) inputs>, <the rest>)``; the result is a status:

    OK (0): done,  INVALID (1): invalid input, nothing computed,  SINGULAR (2): M not positive
    definite (forward dynamics, contact compliance).

Two kernels serve a control cycle.  ``terms`` is what every cycle streams: Algorithm 1 (M, C,
Mdot, g) and the observer's products, from one kinematics pass (``dynamics``,
``compute_all_terms``).  ``geometry`` is what depends on q alone and is asked for less often:
Algorithm 2 (Gamma), link placements and point Jacobians (``christoffel``, ``link_placement``,
``link_jacobian``); right after ``terms`` it computes Gamma from the kinematics and composite
inertias ``terms`` left in the workspace (flag ``AFTER_TERMS``), so a cycle that also streams
Gamma still makes one kinematics pass.  ``task_space`` (task frames and centroidal momentum)
continues from ``terms`` the same way.  Kept apart because compiling is paid per kernel, at its
first call: a process that streams M, C, g compiles Algorithm 2 only when Gamma is first asked
for (each kernel's compile CPU time: docs/performance.md).
"""

import numpy as np
from numba import njit, prange, types

from .centroidal import centroidal_momentum, composite_inertias
from .christoffel import christoffel, christoffel_sweep
from .contact_compliance import contact_compliance as compliance
from .coriolis import EQ10, coriolis, coriolis_sweep
from .coriolis import EQ9 as EQ9_FACTORIZATION
from .crba import crba
from .forward_dynamics import forward_dynamics as ltdl_forward_dynamics
from .forward_dynamics_derivatives import forward_dynamics_derivatives
from .frame_kinematics import bias_accelerations, frame_kinematics
from .jacobian import point_jacobian
from .jit import JIT, entry
from .kinematics import (forward_kinematics, keep_alive, per_body_6x6, placements, tree,
                         velocities, workspace, world_inertias)
from .momentum import momentum_terms
from .rnea import generalized_gravity, rnea
from .rnea_derivatives import rnea_derivatives
from .validation import valid_state, valid_vector

OK, INVALID, SINGULAR = 0, 1, 2

# flags of ``terms``
PRODUCTS = 1        # and p = M v, C^T v and copies of q, v in the workspace
UNCHECKED = 2       # the inputs passed the boundary already: no check
EQ9 = 4             # the factorization B = (v x*) I of eq. (9) instead of eq. (10)

# flags of ``derivatives``
FORWARD = 1         # x is tau: forward dynamics and its derivatives, else x is a: the RNEA's

# flags of ``geometry`` (low bits), and the body of the Jacobian (bits from BODY_SHIFT on: body + 1)
CHRISTOFFEL = 1     # Gamma (Algorithm 2)
AFTER_TERMS = 2     # ``terms`` just ran at this q on this workspace: no check, no kinematics pass
BODY_SHIFT = 8      # flags >> BODY_SHIFT = 1 + the body whose point Jacobian to compute (0: none)


# Argument types: the model's read-only packed array, float64 C-contiguous vectors and
# workspace, a C-contiguous Gamma, integers, a flag.
MODEL = types.Array(types.float64, 1, 'C', readonly=True)
VEC = types.float64[::1]
MAT = types.float64[:, ::1]
GAMMA = types.float64[:, :, ::1]
BATCH = dict(JIT, parallel=True)


@entry(types.int64, MODEL, VEC, VEC, VEC, types.int64)
def terms(packed, work, q, v, flags):
    """Algorithm 1 from one forward-kinematics pass at q: M, C, Mdot, g at (q, v), eq. (10)
    or (flags & EQ9) eq. (9); & PRODUCTS: p = M v, C^T v and copies of q, v.  On return the
    workspace holds the kinematics at q (w.R, w.pos, w.Phi) and the composite inertias (w.I)
    that ``geometry`` can continue from.  (Few arguments: each one costs dispatch time on
    every call.)"""
    m = tree(packed)
    if flags & UNCHECKED == 0 and not (valid_state(m, q, None) and valid_vector(m, v)):
        return INVALID
    w = workspace(m, work)
    forward_kinematics(m, q, w)
    M, C = w.M, w.C
    coriolis_sweep(m, v, M, C, w.Mdot, w.g, w, EQ9_FACTORIZATION if flags & EQ9 else EQ10)
    if flags & PRODUCTS != 0:
        nv = m.nv
        for i in range(m.nq):
            w.q[i] = q[i]
        for i in range(nv):
            w.v[i] = v[i]
        for i in range(nv):                                     # p = M v, C^T v
            pi, ci = 0.0, 0.0
            for j in range(nv):
                pi += M[i, j] * v[j]
                ci += C[j, i] * v[j]
            w.p[i], w.ctv[i] = pi, ci
    return OK


@entry(types.int64, MODEL, VEC, VEC, GAMMA, types.int64, VEC)
def geometry(packed, work, q, Gamma, flags, local):
    """What depends on q alone, from one forward-kinematics pass at q (w.R, w.pos, w.Phi, w.I):
    if flags & CHRISTOFFEL, Algorithm 2 into Gamma; if flags >> BODY_SHIFT = body + 1 > 0,
    the Jacobian w.J of the point ``local`` (body frame) of ``body``.  With AFTER_TERMS
    (``terms`` just filled this workspace at q): no check and no kinematics pass, Algorithm 2
    on the composite inertias Algorithm 1 left (w.I).  An empty ``work``: the scratch is this
    call's own (``christoffel`` without a Data: one allocation in Python instead of two)."""
    m = tree(packed)
    fresh = flags & AFTER_TERMS == 0
    if fresh and not valid_state(m, q, None):
        return INVALID
    scratch = work if work.shape[0] != 0 else np.empty(m.work[-1])
    w = workspace(m, scratch)
    if fresh:
        forward_kinematics(m, q, w)
    if flags & CHRISTOFFEL != 0:
        christoffel_sweep(m, w.Phi, w.I, per_body_6x6(w.W), Gamma, fresh)
    body = (flags >> BODY_SHIFT) - 1
    if body >= 0:
        R, p = w.R, w.pos
        x0 = p[body, 0] + R[body, 0, 0] * local[0] + R[body, 0, 1] * local[1] + R[body, 0, 2] * local[2]
        x1 = p[body, 1] + R[body, 1, 0] * local[0] + R[body, 1, 1] * local[1] + R[body, 1, 2] * local[2]
        x2 = p[body, 2] + R[body, 2, 0] * local[0] + R[body, 2, 1] * local[1] + R[body, 2, 2] * local[2]
        point_jacobian(m, w.Phi, body, (x0, x1, x2), w.J)
    keep_alive(scratch)         # the views in w borrow its memory: released after this line
    return OK


@entry(types.int64, MODEL, VEC, VEC, VEC, types.int64, types.int64[::1], MAT, GAMMA, MAT,
       GAMMA, MAT)
def task_space(packed, work, q, v, flags, body, local, rot, origin, J, Jdv):
    """Task frames (frame_kinematics.py: pose rot, origin, Jacobian J, dJ/dt v Jdv of the frames
    ``local`` fixed in the bodies ``body``) and centroidal momentum (centroidal.py: w.A_G,
    w.A_G_dot_v, w.centroid) at (q, v).  With AFTER_TERMS (``terms`` just filled this workspace
    at this q and v): no check and no kinematics pass, the body velocities and composite
    inertias Algorithm 1 left are used.  On return w.I holds the composite inertias either way
    (``geometry`` with AFTER_TERMS can still follow)."""
    m = tree(packed)
    fresh = flags & AFTER_TERMS == 0
    if fresh and not (valid_state(m, q, None) and valid_vector(m, v)):
        return INVALID
    w = workspace(m, work)
    if fresh:
        placements(m, q, w.R, w.pos, w.Phi, w.cos_sin)
        velocities(m, w.Phi, v, w.vel, w.Phid)
    world_inertias(m, w.R, w.pos, w.Ib)               # the bodies' own inertias
    if fresh:
        composite_inertias(m, w.Ib, w.I)
    bias_accelerations(m, v, w.Phid, w.acc)
    frame_kinematics(m, w.R, w.pos, w.Phi, w.vel, w.acc, body, local, rot, origin, J, Jdv)
    centroidal_momentum(m, v, w.Phi, w.vel, w.acc, w.Ib, w.I, w.A_G, w.A_G_dot_v, w.centroid)
    return OK


@entry(types.int64, MODEL, VEC, VEC, VEC)
def observer_terms(packed, work, q, v):
    """p = M v, C^T v, g in one O(N) pass (momentum.py)."""
    m = tree(packed)
    if not valid_state(m, q, v):
        return INVALID
    w = workspace(m, work)
    momentum_terms(m, q, v, w.p, w.ctv, w.g, w)
    return OK


@entry(types.int64, MODEL, VEC, VEC)
def mass_matrix(packed, work, q):
    m = tree(packed)
    if not valid_state(m, q, None):
        return INVALID
    w = workspace(m, work)
    crba(m, q, w.M, w)
    return OK


@entry(types.int64, MODEL, VEC, VEC)
def gravity(packed, work, q):
    m = tree(packed)
    if not valid_state(m, q, None):
        return INVALID
    w = workspace(m, work)
    generalized_gravity(m, q, w.g, w)
    return OK


@entry(types.int64, MODEL, VEC, VEC, VEC, VEC)
def inverse_dynamics(packed, work, q, v, a):
    m = tree(packed)
    if not (valid_state(m, q, v) and valid_vector(m, a)):
        return INVALID
    w = workspace(m, work)
    rnea(m, q, v, a, w.tau, w)
    return OK


@entry(types.int64, MODEL, VEC, VEC, VEC, VEC)
def forward_dynamics(packed, work, q, v, tau):
    m = tree(packed)
    if not (valid_state(m, q, v) and valid_vector(m, tau)):
        return INVALID
    w = workspace(m, work)
    return OK if ltdl_forward_dynamics(m, q, v, tau, w.ddq, w) else SINGULAR


@entry(types.int64, MODEL, VEC, VEC, VEC, VEC, GAMMA, types.int64)
def derivatives(packed, work, q, v, x, out, flags):
    """The RNEA derivatives at (q, v, a = x) into out[0] = dtau/dq, out[1] = dtau/dv (and
    w.M, w.tau); with FORWARD, at (q, v, tau = x): out[2] = da/dq, out[3] = da/dv, out[4] =
    M^-1 (out[0], out[1]: the RNEA derivatives at a = w.ddq, the forward dynamics)."""
    m = tree(packed)
    if not (valid_state(m, q, v) and valid_vector(m, x)):
        return INVALID
    w = workspace(m, work)
    if flags & FORWARD == 0:
        rnea_derivatives(m, q, v, x, out[0], out[1], w.M, w.tau, w, True)
        return OK
    if forward_dynamics_derivatives(m, q, v, x, w.ddq, out[2], out[3], out[4], out[0], out[1], w):
        return OK
    return SINGULAR


@entry(types.int64, MODEL, VEC, VEC, types.int64[::1], MAT, types.int64, MAT)
def contact_compliance(packed, work, q, cbody, clocal, width, Lam):
    """Lambda = J M^-1 J^T of the contact nodes (contact_compliance.py)."""
    m = tree(packed)
    if not valid_state(m, q, None):
        return INVALID
    w = workspace(m, work)
    return OK if compliance(m, q, cbody, clocal, width, Lam, w) else SINGULAR


# -- batches (inputs validated in Python) ----------------------------------------------------------
#
# One compiled call for K states.  Each thread takes one contiguous block of rows (thread t:
# rows [K t / T, K (t + 1) / T)), so two threads share at most the cache line at the edge of
# their blocks of M, C, Mdot, g (strided rows k = t, t + T, ... write neighbouring rows of g
# from both threads, and interleave the pages each thread first touches).  Each thread has
# one workspace for its whole block, in its own cache lines.  The rows of a block are the
# loop of a plain compiled function (``dynamics_rows``, ``christoffel_rows``) called from the
# parallel loop: numba's parfor transformation sees only the call, and the per-state code is
# compiled as in a serial loop, once.  The caller sets numba's team to ``threads``
# (``api.batch_call``): with 1 the loop runs on the calling thread and no other thread is woken
# (a team of two with one block waits for the idle thread to start and finish).

LINE = 8    # float64 per 64-byte cache line


@njit(**JIT)
def _padded(n):
    """n float64 rounded up to whole cache lines, plus one line: rows of a (T, _padded(n))
    array never share a cache line whatever the array's alignment."""
    return (n + 2 * LINE - 1) // LINE * LINE


@njit(**JIT)
def dynamics_rows(packed, Q, V, M, C, Mdot, g, factorization, work, lo, hi):
    """Algorithm 1 for rows lo..hi-1 of a batch, with one workspace ``work``."""
    m = tree(packed)
    w = workspace(m, work)
    for k in range(lo, hi):
        coriolis(m, Q[k], V[k], M[k], C[k], Mdot[k], g[k], w, factorization)


@njit(**JIT)
def christoffel_rows(packed, Q, Gamma, work, lo, hi):
    """Algorithm 2 for rows lo..hi-1 of a batch, with one workspace ``work``."""
    m = tree(packed)
    w = workspace(m, work)
    for k in range(lo, hi):
        christoffel(m, Q[k], Gamma[k], w)


@entry(types.none, MODEL, MAT, MAT, GAMMA, GAMMA, GAMMA, MAT, types.int64, types.int64,
       **BATCH)
def dynamics_batch(packed, Q, V, M, C, Mdot, g, factorization, threads):
    """M, C, Mdot, g for every row of Q, V in ``threads`` blocks, one per thread of the team
    (the caller sets the team to ``threads``: ``api.batch_call``)."""
    K = Q.shape[0]
    work = np.empty((threads, _padded(tree(packed).work[-1])))
    for t in prange(threads):
        dynamics_rows(packed, Q, V, M, C, Mdot, g, factorization, work[t],
                      K * t // threads, K * (t + 1) // threads)


@entry(types.none, MODEL, MAT, types.float64[:, :, :, ::1], types.int64, **BATCH)
def christoffel_batch(packed, Q, Gamma, threads):
    """Gamma for every row of Q in ``threads`` blocks, one per thread of the team."""
    K = Q.shape[0]
    work = np.empty((threads, _padded(tree(packed).work[-1])))
    for t in prange(threads):
        christoffel_rows(packed, Q, Gamma, work[t], K * t // threads, K * (t + 1) // threads)


@njit(**JIT)
def derivatives_rows(packed, Q, V, X, A, B, Minv, flags, work, scratch, lo, hi):
    """``derivatives`` for rows lo..hi-1 of a batch into A[k], B[k] (and Minv[k] with FORWARD),
    with one workspace ``work`` and (2, nv, nv) ``scratch``; the first row whose mass matrix is
    singular, or -1."""
    m = tree(packed)
    w = workspace(m, work)
    for k in range(lo, hi):
        if flags & FORWARD == 0:
            rnea_derivatives(m, Q[k], V[k], X[k], A[k], B[k], w.M, w.tau, w, False)
        elif not forward_dynamics_derivatives(m, Q[k], V[k], X[k], w.ddq, A[k], B[k], Minv[k],
                                              scratch[0], scratch[1], w):
            return k
    return -1


@entry(types.int64, MODEL, MAT, MAT, MAT, GAMMA, GAMMA, GAMMA, types.int64, types.int64, **BATCH)
def derivatives_batch(packed, Q, V, X, A, B, Minv, flags, threads):
    """``derivatives`` for every row of Q, V, X in ``threads`` blocks, one per thread of the
    team: A, B = dtau/dq, dtau/dv, or with FORWARD da/dq, da/dv and Minv = M^-1.  Returns the
    first row whose mass matrix is singular (nothing else is guaranteed then), or -1."""
    K, nv = Q.shape[0], V.shape[1]
    work = np.empty((threads, _padded(tree(packed).work[-1])))
    scratch = np.empty((threads, 2, nv, nv))
    bad = np.empty(threads, dtype=np.int64)
    for t in prange(threads):
        bad[t] = derivatives_rows(packed, Q, V, X, A, B, Minv, flags, work[t], scratch[t],
                                  K * t // threads, K * (t + 1) // threads)
    first = -1
    for t in range(threads):
        if bad[t] >= 0 and (first < 0 or bad[t] < first):
            first = bad[t]
    return first
