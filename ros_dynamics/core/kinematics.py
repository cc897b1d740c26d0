"""Forward kinematics in the world frame: the first pass every algorithm shares.

``placements`` computes, for the configuration q, each body's rotation R_i and origin p_i in
the world and each DoF's motion subspace Phi_s (Echeandia & Wensing 2021 eq. (5)) in world Plücker
coordinates; ``world_inertias`` re-expresses the body inertias there; ``velocities``
computes v_i = v_p(i) + Phi_i qd_i and Phid_i = v_i x Phi_i (Echeandia & Wensing 2021, Alg. 1 lines 3-4; the
joint axes are fixed in their body, so the apparent derivative Phi-ring is zero).

Kernel calling convention (every compiled algorithm follows it)
---------------------------------------------------------------
* An *entry* kernel (called from Python, ``kernels.py``) takes the model's packed read-only
  array, the workspace buffer of a :class:`ros_dynamics.Data` and the inputs, e.g.
  ``terms(model.packed, data.work, q, v, flags)``: few arguments, so the dispatch is cheap,
  and nothing is allocated.  It unpacks them once::

      m = tree(packed)             # named model views: m.parent[i], m.jtype[i], m.X_R[i], ...
      w = workspace(m, work)       # named workspace views: w.M, w.g, w.R, w.pos, w.Phi, w.I, ...

* *Inner* kernels (the algorithms, one per module) take ``m``, their inputs and outputs, and
  ``w`` for scratch, e.g. ``crba(m, q, M, w)``; the kinematics pieces take only the arrays they
  touch: ``placements(m, q, w.R, w.pos, w.Phi, w.cos_sin)``, ``world_inertias(m, w.R, w.pos,
  w.I)``, ``velocities(m, w.Phi, qd, w.vel, w.Phid)``.  After ``placements`` the world pose of
  body i is (w.R[i], w.pos[i]) and column s of the world motion subspace is w.Phi[s] (angular
  first).
* A kernel that needs more scratch than ``WORK_FIELDS`` offers adds a field there (model.py):
  ``Work`` and ``workspace`` below are generated from it, so Data and the kernels share it.
* Entry kernels live in kernels.py and are sealed to one signature, e.g.
  ``@entry(types.int64, MODEL, VEC, VEC)`` (model array, work, q): compiled at their
  first call (jit.py), and numba's dispatcher rejects other argument types (the public function
  then converts and retries).  They validate first (``valid_state(m, q, v)``: lengths,
  finiteness, unit quaternion) and return a status (0 done, 1 invalid input, 2 singular M)
  instead of computing on bad input.
* ``tree`` and ``workspace`` are always inlined (``jit.shared``), so building the named views
  costs nothing for the fields a kernel does not use.  The views are C-contiguous and borrowed
  (``_c_view``: no run-time checks, no reference counts), so the buffers they view must stay
  alive while they are used: in an entry kernel they are its arguments; a kernel that makes its
  own buffer holds it for the whole computation (see the batch kernels).
* Every function that takes ``m`` or ``w`` is inlined too: a namedtuple of arrays crosses a
  compiled call as some hundred scalar arguments (~0.2 us per call measured for ``w``), while
  inlined the unused fields vanish.  An entry kernel thus compiles into one function, with the
  flags of ``jit.JIT``.  Two ways: what several kernels share (the views, the kinematics pass
  ``world_kinematics``, Algorithm 2's sweep) is ``@shared`` (jit.py): compiled by numba once
  per process and inlined by LLVM (about 2 s of CPU time saved per kernel for the kinematics
  pass alone); what one kernel uses is inlined by numba (``@njit(inline='always', **JIT)``),
  which compiles faster for a single caller.  The small functions of scalars and (array, row)
  pairs they call (spatial.py, ``set6``, ...) are ``@helper`` (jit.py): compiled once per
  process each and inlined by LLVM where it finds it worth it.
"""

from collections import namedtuple

import numpy as np
from numba import njit
from numba.core import cgutils, types
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

from .configuration import FREE, PRISMATIC, REVOLUTE
from .model import N_HEADER, N_OFFSETS, WORK_FIELDS, n_ints
from .jit import JIT, helper, shared
from .spatial import I_H, I_J, NI, motion_cross, quaternion_to_matrix, row6

Tree = namedtuple('Tree', 'N nv nq parent jtype q_idx v_idx dof_body dof_parent X_R X_p axis com '
                          'inertia mass gravity work armature')
Work = namedtuple('Work', [name for name, _ in WORK_FIELDS])


def _view_codegen(retty):
    def codegen(context, builder, sig, args):
        base = make_array(sig.args[0])(context, builder, args[0])
        view = make_array(retty)(context, builder)
        dims = cgutils.unpack_tuple(builder, args[2])
        strides, stride = [], base.itemsize
        for d in reversed(dims):
            strides.insert(0, stride)
            stride = builder.mul(stride, d)
        data = builder.bitcast(builder.gep(base.data, [args[1]]),
                               context.get_data_type(retty.dtype).as_pointer())
        populate_array(view, data=data, shape=dims, strides=strides,
                       itemsize=base.itemsize, meminfo=cgutils.get_null_value(base.meminfo.type),
                       parent=cgutils.get_null_value(base.parent.type))
        return view._getvalue()
    return codegen


@intrinsic
def _c_view(typingctx, a, offset, shape):
    """The prod(shape) elements of the C-contiguous array a from flat index ``offset`` on, seen as
    a C-contiguous array of that shape, without run-time checks (the caller guarantees the
    range: the offsets come from the model's layout, checked against the buffer by data.work_buffer).

    The view does not own its memory (no reference count): ``a`` must outlive it, as the
    arguments of an entry kernel do.  Why not numba's own: ``reshape`` checks at run time (~30 ns
    a view), ``as_strided`` gives a layout-'A' array, whose run-time strides keep LLVM from
    vectorizing and folding the index arithmetic of every access, and reference-counted views
    cost two atomic operations each per call (~0.25 us for the ~30 views of tree + workspace)."""
    if not isinstance(a, types.Array) or a.layout != 'C':
        return None
    retty = a.copy(ndim=len(shape), layout='C')
    return retty(a, offset, types.UniTuple(types.intp, len(shape))), _view_codegen(retty)


@intrinsic
def _int64_view(typingctx, a, offset, shape):
    """:func:`_c_view` of a float64 array's memory as int64 (``model.packed`` holds ``ints``)."""
    if not isinstance(a, types.Array) or a.layout != 'C' or a.dtype != types.float64:
        return None
    retty = a.copy(dtype=types.int64, ndim=len(shape), layout='C')
    return retty(a, offset, types.UniTuple(types.intp, len(shape))), _view_codegen(retty)


@intrinsic
def keep_alive(typingctx, a):
    """A use of ``a`` that compiles to nothing.  numba releases an array a kernel allocated
    right after its last use, and the views :func:`_c_view` makes of it do not count as uses:
    call this after the last use of the views."""
    def codegen(context, builder, sig, args):
        return context.get_dummy_value()
    return types.none(a), codegen


@njit(inline='always', **JIT)
def per_body_6x6(W):
    """The (6, N, 6) scratch ``w.W`` seen as N 6x6 matrices (same memory)."""
    return _c_view(W, 0, (W.shape[1], 6, 6))


@njit(inline='always', **JIT)
def flat(A):
    """A C-contiguous array seen as 1-D (same memory)."""
    return _c_view(A, 0, (A.size,))


@shared
def tree(packed):
    """Named views of the model's packed array (see model.py): ``m.parent[i]`` etc."""
    head = _int64_view(packed, 0, (N_HEADER,))
    N, nv, nq = head[0], head[1], head[2]
    ints = _int64_view(packed, 0, (n_ints(N, nv),))
    o = N_HEADER
    parent, jtype = _c_view(ints, o, (N,)), _c_view(ints, o + N, (N,))
    q_idx, v_idx = _c_view(ints, o + 2 * N, (N,)), _c_view(ints, o + 3 * N, (N,))
    o += 4 * N
    dof_body, dof_parent = _c_view(ints, o, (nv,)), _c_view(ints, o + nv, (nv,))
    work = _c_view(ints, o + 2 * nv, (N_OFFSETS,))
    r = n_ints(N, nv)                                 # reals = packed[r:]
    gravity = _c_view(packed, r, (3,))
    X_R = _c_view(packed, r + 3, (N, 3, 3))
    o = r + 3 + 9 * N
    X_p = _c_view(packed, o, (N, 3))
    axis = _c_view(packed, o + 3 * N, (N, 3))
    com = _c_view(packed, o + 6 * N, (N, 3))
    inertia = _c_view(packed, o + 9 * N, (N, 3, 3))
    mass = _c_view(packed, o + 18 * N, (N,))
    armature = _c_view(packed, o + 19 * N, (nv,))
    return Tree(N, nv, nq, parent, jtype, q_idx, v_idx, dof_body, dof_parent, X_R, X_p, axis,
                com, inertia, mass, gravity, work, armature)


def _workspace_source():
    """Source of ``workspace``: one view per field of ``WORK_FIELDS``, in order (model.py)."""
    dims = {'N': 'm.N', 'nv': 'm.nv', 'nq': 'm.nq'}
    lines = ['def workspace(m, work):',
             '    """Named views of a Data buffer (layout ``WORK_FIELDS`` of model.py)."""',
             '    o = m.work',
             '    return Work(']
    for k, (name, shape) in enumerate(WORK_FIELDS):
        sizes = ', '.join(dims[d] if isinstance(d, str) else str(d) for d in shape)
        lines.append(f'        _c_view(work, o[{k}], ({sizes},)),   # {name}')
    lines.append('    )')
    return '\n'.join(lines) + '\n'


def _compile_workspace():
    # generated from WORK_FIELDS, so a new field needs no edit here; compiled with this file's
    # name and module, so numba finds its source file (cache locator) and, loading a cached
    # kernel, the module to rebuild it in, like any other function's
    namespace = {'Work': Work, '_c_view': _c_view, '__name__': __name__}
    exec(compile(_workspace_source(), __file__, 'exec'), namespace)
    return shared(namespace['workspace'])


workspace = _compile_workspace()


@njit(inline='always', **JIT)
def forward_kinematics(m, q, w):
    """placements + world_inertias: what every algorithm needs first."""
    world_kinematics(m, q, w.R, w.pos, w.Phi, w.I, w.cos_sin)


@shared
def world_kinematics(m, q, R, p, Phi, I, cos_sin):
    """:func:`forward_kinematics` into the arrays it fills (``@shared``: compiled once per
    process for every entry kernel, inlined by LLVM)."""
    placements(m, q, R, p, Phi, cos_sin)
    world_inertias(m, R, p, I)


@helper
def set6(A, i, x):
    """A[i] = x for a 6-tuple x."""
    A[i, 0], A[i, 1], A[i, 2], A[i, 3], A[i, 4], A[i, 5] = x


@njit(inline='always', **JIT)
def placements(m, q, R, p, Phi, cos_sin):
    """World placement (R_i, p_i) of every body and world motion subspace Phi_s of every DoF
    (``cos_sin``: scratch, (N, 2))."""
    X_R, X_p, axis = m.X_R, m.X_p, m.axis
    # the revolute joints' cos q, sin q first: out of the loop along the tree, whose every
    # body waits for its parent's rotation, the calls overlap (~5 ns a joint)
    for i in range(m.N):
        if m.jtype[i] == REVOLUTE:
            x = q[m.q_idx[i]]
            cos_sin[i, 0], cos_sin[i, 1] = np.cos(x), np.sin(x)
    for i in range(m.N):
        parent, jtype, qi, s = m.parent[i], m.jtype[i], m.q_idx[i], m.v_idx[i]
        if jtype == FREE:
            # Free joint, Pinocchio's layout: q = [position, quaternion xyzw], v = body twist
            # [v_lin; w] in the base frame.  Phi maps it to the world spatial velocity:
            # columns [0; R e_k] for the linear part, [R e_k; p x R e_k] for the angular part.
            quaternion_to_matrix(q[qi + 3], q[qi + 4], q[qi + 5], q[qi + 6], R, i)
            p0, p1, p2 = q[qi], q[qi + 1], q[qi + 2]
            p[i, 0], p[i, 1], p[i, 2] = p0, p1, p2
            for k in range(3):
                c0, c1, c2 = R[i, 0, k], R[i, 1, k], R[i, 2, k]
                set6(Phi, s + k, (0.0, 0.0, 0.0, c0, c1, c2))
                set6(Phi, s + 3 + k, (c0, c1, c2, p1 * c2 - p2 * c1, p2 * c0 - p0 * c2, p0 * c1 - p1 * c0))
            continue
        # joint frame J in the world: R_J = R_p X_R, p_J = p_p + R_p X_p
        if parent < 0:
            for r in range(3):
                for c in range(3):
                    R[i, r, c] = X_R[i, r, c]
                p[i, r] = X_p[i, r]
        else:
            for r in range(3):
                R[i, r, 0], R[i, r, 1], R[i, r, 2] = _row_times(R, parent, r, X_R, i)
                p[i, r] = (p[parent, r] + R[parent, r, 0] * X_p[i, 0]
                           + R[parent, r, 1] * X_p[i, 1] + R[parent, r, 2] * X_p[i, 2])
        x0, x1, x2 = axis[i, 0], axis[i, 1], axis[i, 2]
        a0 = R[i, 0, 0] * x0 + R[i, 0, 1] * x1 + R[i, 0, 2] * x2      # joint axis in the world
        a1 = R[i, 1, 0] * x0 + R[i, 1, 1] * x1 + R[i, 1, 2] * x2
        a2 = R[i, 2, 0] * x0 + R[i, 2, 1] * x1 + R[i, 2, 2] * x2
        if jtype == REVOLUTE:
            # R_i = R_J Rot(x, q) with the exactly-unit local axis x (Rodrigues).  Rotating R_J
            # about the world axis a = R_J x instead would feed R_J's rounding error back
            # through |a| != 1, doubling the orthogonality error at every link of a chain.
            cq, sq = cos_sin[i, 0], cos_sin[i, 1]
            t = 1.0 - cq
            k00, k01, k02 = cq + t * x0 * x0, t * x0 * x1 - sq * x2, t * x0 * x2 + sq * x1
            k10, k11, k12 = t * x0 * x1 + sq * x2, cq + t * x1 * x1, t * x1 * x2 - sq * x0
            k20, k21, k22 = t * x0 * x2 - sq * x1, t * x1 * x2 + sq * x0, cq + t * x2 * x2
            for r in range(3):
                y0, y1, y2 = R[i, r, 0], R[i, r, 1], R[i, r, 2]
                R[i, r, 0] = y0 * k00 + y1 * k10 + y2 * k20
                R[i, r, 1] = y0 * k01 + y1 * k11 + y2 * k21
                R[i, r, 2] = y0 * k02 + y1 * k12 + y2 * k22
            # Phi = [a; p x a]: rotation about the line through p_i along a
            p0, p1, p2 = p[i, 0], p[i, 1], p[i, 2]
            set6(Phi, s, (a0, a1, a2, p1 * a2 - p2 * a1, p2 * a0 - p0 * a2, p0 * a1 - p1 * a0))
        elif jtype == PRISMATIC:
            p[i, 0] += q[qi] * a0
            p[i, 1] += q[qi] * a1
            p[i, 2] += q[qi] * a2
            set6(Phi, s, (0.0, 0.0, 0.0, a0, a1, a2))


@njit(inline='always', **JIT)
def world_inertias(m, R, p, I):
    """Body inertias in the world frame, rows (m, h, J): h = m c, J = R Ic R^T + m (|c|^2 1 - c c^T)."""
    com, inertia = m.com, m.inertia
    for i in range(m.N):
        mi = m.mass[i]
        cb0, cb1, cb2 = com[i, 0], com[i, 1], com[i, 2]
        c0 = p[i, 0] + R[i, 0, 0] * cb0 + R[i, 0, 1] * cb1 + R[i, 0, 2] * cb2
        c1 = p[i, 1] + R[i, 1, 0] * cb0 + R[i, 1, 1] * cb1 + R[i, 1, 2] * cb2
        c2 = p[i, 2] + R[i, 2, 0] * cb0 + R[i, 2, 1] * cb1 + R[i, 2, 2] * cb2
        I[i, 0] = mi
        I[i, I_H], I[i, I_H + 1], I[i, I_H + 2] = mi * c0, mi * c1, mi * c2
        # T = R Ic (rows t), then the upper triangle of T R^T
        t00, t01, t02 = _row_times(R, i, 0, inertia, i)
        t10, t11, t12 = _row_times(R, i, 1, inertia, i)
        t20, t21, t22 = _row_times(R, i, 2, inertia, i)
        R00, R01, R02 = R[i, 0, 0], R[i, 0, 1], R[i, 0, 2]
        R10, R11, R12 = R[i, 1, 0], R[i, 1, 1], R[i, 1, 2]
        R20, R21, R22 = R[i, 2, 0], R[i, 2, 1], R[i, 2, 2]
        cc = c0 * c0 + c1 * c1 + c2 * c2
        I[i, I_J + 0] = t00 * R00 + t01 * R01 + t02 * R02 + mi * (cc - c0 * c0)      # xx
        I[i, I_J + 1] = t00 * R10 + t01 * R11 + t02 * R12 - mi * c0 * c1             # xy
        I[i, I_J + 2] = t00 * R20 + t01 * R21 + t02 * R22 - mi * c0 * c2             # xz
        I[i, I_J + 3] = t10 * R10 + t11 * R11 + t12 * R12 + mi * (cc - c1 * c1)      # yy
        I[i, I_J + 4] = t10 * R20 + t11 * R21 + t12 * R22 - mi * c1 * c2             # yz
        I[i, I_J + 5] = t20 * R20 + t21 * R21 + t22 * R22 + mi * (cc - c2 * c2)      # zz


@helper
def _row_times(R, i, r, G, j):
    """Row r of the 3x3 product R[i] G[j]."""
    R0, R1, R2 = R[i, r, 0], R[i, r, 1], R[i, r, 2]
    return (R0 * G[j, 0, 0] + R1 * G[j, 1, 0] + R2 * G[j, 2, 0],
            R0 * G[j, 0, 1] + R1 * G[j, 1, 1] + R2 * G[j, 2, 1],
            R0 * G[j, 0, 2] + R1 * G[j, 1, 2] + R2 * G[j, 2, 2])


@njit(inline='always', **JIT)
def propagate(m, S, x, out):
    """out_i = out_p(i) + sum_{s of body i} S_s x_s, every body in one pass along the tree
    (the root's parent contributes 0): velocities from the motion subspaces and the rates,
    bias accelerations from their derivatives."""
    nv, dof_body = m.nv, m.dof_body
    for i in range(m.N):
        parent = m.parent[i]
        a = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0) if parent < 0 else row6(out, parent)
        s = m.v_idx[i]
        while s < nv and dof_body[s] == i:
            y = x[s]
            a = (a[0] + S[s, 0] * y, a[1] + S[s, 1] * y, a[2] + S[s, 2] * y,
                 a[3] + S[s, 3] * y, a[4] + S[s, 4] * y, a[5] + S[s, 5] * y)
            s += 1
        set6(out, i, a)


@njit(inline='always', **JIT)
def velocities(m, Phi, qd, vel, Phid):
    """v_i = v_p(i) + Phi_i qd_i and Phid_s = v_i x Phi_s (Echeandia & Wensing 2021, Alg. 1 lines 3-4)."""
    propagate(m, Phi, qd, vel)                                        # line 3
    dof_body = m.dof_body
    for s in range(m.nv):                                             # line 4
        set6(Phid, s, motion_cross(row6(vel, dof_body[s]), row6(Phi, s)))
