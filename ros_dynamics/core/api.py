"""Public functions (CONVENTIONS.md) and the :class:`Data` workspace: the validation boundary.

Every function takes a :class:`~ros_dynamics.model.Model` and 1-D float arrays of length
``model.nq`` (q) or ``model.nv`` (v, a, tau).  Wrong shapes, non-numeric or non-finite values
and (floating base) a quaternion that is not unit length raise ``ValueError`` naming the
problem before anything is computed.  This module is the only place that validates: the
algorithms and the internal callers (observer, simulator, node) trust what passes here.

Workspace (as Pinocchio's ``Data``)
-----------------------------------
``data = rd.Data(model)`` allocates, once, one buffer holding every output and all the
algorithms' scratch (layout: ``model.WORK_FIELDS``).  Every compute function accepts
``data=data``; it then writes into ``data`` and returns views of it (``data.M``, ``data.C``,
``data.Mdot``, ``data.g``, ``data.Gamma``, ``data.p``, ``data.ctv``, ``data.tau``, ``data.ddq``,
``data.J``): nothing is allocated per call, and the next call with the same data overwrites
them.  Without ``data=`` a function returns new arrays owned by the caller.  A Data can be used
with any model of the same dimensions, one thread at a time.

One pass per control cycle (what a node or a controller calls)::

    data = rd.Data(model)
    ...
    rd.compute_all_terms(model, q, v, data, christoffel=(k % 10 == 0))
    # data.M, data.C, data.Mdot, data.g, data.p = M v, data.ctv = C^T v, data.q, data.v,
    # and data.Gamma when asked, from ONE forward-kinematics pass, no allocation
    r = observer.update_from(data, tau, dt)       # uses data.p, data.ctv, data.g, data.v

``compute_all_terms_unchecked`` is the same without any validation, for inputs that already
passed the boundary (float64 C-contiguous arrays of the right length, finite, unit quaternion);
garbage in, garbage out.

Speed: a call costs one compiled-kernel dispatch with few arguments (the model's two packed
arrays, the inputs, data's one buffer).  Each entry kernel is compiled for exactly one signature
(float64 C-contiguous 1-D inputs; ``_sealed``), so numba's dispatcher itself is the type check:
anything else raises TypeError there, and only then does Python convert the inputs (``_vec``)
and call again.  Lengths, finiteness and the quaternion are checked inside the same compiled
call as the algorithm (``_valid``), which reports failure before computing anything; only then
does Python redo the checks one by one to raise the error that names the problem
(``_explain``).
"""

from collections import namedtuple

import numpy as np
from numba import get_num_threads, njit, prange, types

from . import christoffel as _christoffel
from . import contact_compliance as _cc
from . import coriolis as _coriolis
from . import crba as _crba
from . import forward_dynamics as _fd
from . import jacobian as _jac
from . import momentum as _momentum
from . import rnea as _rnea
from .configuration import QUATERNION_TOLERANCE, quaternion_norm, quaternion_ok
from .kinematics import per_body_6x6, placements, tree, workspace
from .model import WORK_FIELDS, WORK_INDEX, massless_bodies
from .spatial import _JIT

Dynamics = namedtuple('Dynamics', 'M C Mdot g')
Dynamics.__doc__ = 'Result of :func:`dynamics`: mass matrix, Coriolis matrix, dM/dt, gravity.'
_new_tuple = tuple.__new__     # Dynamics(M, C, Mdot, g) without the Python-level __new__

_FACTORIZATIONS = {'eq10': _coriolis.EQ10, 'christoffel': _coriolis.EQ10, 'eq9': _coriolis.EQ9}
_F64 = np.dtype(np.float64)
_ND = np.ndarray
_EQ10 = _coriolis.EQ10
_NO_GAMMA = np.zeros((0, 0, 0))

# Entry kernels are compiled with spatial._JIT, whose fastmath flags keep NaN/inf semantics, so
# the input checks they inline stay checks; called on their own (from Python) the checks are
# compiled with plain IEEE semantics.
_CHECK = dict(cache=True, nogil=True)

# Argument types of the entry kernels (kinematics.py convention): the model's read-only packed
# arrays, float64 C-contiguous vectors and workspace, a C-contiguous Gamma, integers, a flag.
_INTS = types.Array(types.int64, 1, 'C', readonly=True)
_REALS = types.Array(types.float64, 1, 'C', readonly=True)
_VEC = types.float64[::1]
_GAMMA = types.float64[:, :, ::1]


def _sealed(restype, *argtypes):
    """@njit for exactly this signature: compiled (or loaded from the disk cache) at import, and
    a call with other argument types raises TypeError instead of compiling a new version."""
    return njit(restype(*argtypes), **_JIT)


def _sealed_on_first_call(restype, *argtypes):
    """:func:`_sealed`, but compiled (or loaded from the cache) at the first call, for entry
    kernels that most processes never call: they then add nothing to the import."""
    def decorate(fn):
        kernel = None

        def call(*args):
            nonlocal kernel
            if kernel is None:
                kernel = _sealed(restype, *argtypes)(fn)
            return kernel(*args)
        return call
    return decorate


# -- the workspace ---------------------------------------------------------------------------------

class Data:
    """Workspace of one model: outputs and scratch in one buffer, allocated once.

    Output views (overwritten by the next call that computes them): ``M``, ``C``, ``Mdot``
    (nv, nv); ``g``, ``p`` (= M v), ``ctv`` (= C^T v), ``tau`` (inverse dynamics), ``ddq``
    (forward dynamics) (nv,); ``J`` (6, nv) (link Jacobian); ``q``, ``v``: the state
    :func:`compute_all_terms` last computed at; ``Gamma`` (nv, nv, nv) and ``dtau_dv`` (nv, nv)
    (:func:`inverse_dynamics_dv`), each allocated on first use; ``Lambda`` (the last
    :func:`contact_compliance`; its size follows the number of nodes).
    Kinematics (valid after any call at q): ``R`` (N, 3, 3), ``pos`` (N, 3): world rotation
    and origin of each body; ``Phi`` (nv, 6): world motion subspaces (angular first).
    """

    def __init__(self, model):
        self.dims = (model.nbodies, model.nv, model.nq)
        self.layout = model.work_offsets
        self.nv = model.nv
        self.work = np.zeros(model.work_offsets[-1])
        for name, shape in model.work_shapes.items():
            k = WORK_INDEX[name]
            a, b = model.work_offsets[k], model.work_offsets[k + 1]
            setattr(self, name, self.work[a:b].reshape(shape))
        self.dynamics = _new_tuple(Dynamics, (self.M, self.C, self.Mdot, self.g))
        self.observer_terms = (self.p, self.ctv, self.g)

    def __getattr__(self, name):
        # only reached while an attribute is missing: Gamma is allocated on first use, then
        # it is a plain attribute (no property call per access)
        if name == 'Gamma':
            self.Gamma = np.zeros((self.nv,) * 3)
            return self.Gamma
        if name == 'dtau_dv':
            self.dtau_dv = np.zeros((self.nv,) * 2)
            return self.dtau_dv
        raise AttributeError(name)

    def __repr__(self):
        N, nv, nq = self.dims
        return f'<ros_dynamics.Data: {N} bodies, nq={nq}, nv={nv}, {self.work.nbytes} bytes>'


def _work(model, data):
    """data's buffer (checked against the model's layout), or a new one.  (The callers inline
    the common case, data made for this very model, to save a Python call.)"""
    if data is None:
        return np.empty(model.work_offsets[-1])
    try:
        if data.layout is model.work_offsets or data.layout == model.work_offsets:
            return data.work
    except AttributeError:
        raise ValueError('data must be a ros_dynamics.Data') from None
    raise ValueError(f'data was made for a model with (bodies, nv, nq) = {data.dims}, '
                     f'this model has {(model.nbodies, model.nv, model.nq)}')


def _out(model, work, name):
    """The named output view of a fresh buffer (no-data path)."""
    k = WORK_INDEX[name]
    return work[model.work_offsets[k]:model.work_offsets[k + 1]].reshape(model.work_shapes[name])


assert [name for name, _ in WORK_FIELDS[:4]] == ['M', 'C', 'Mdot', 'g']   # dynamics() relies on it


# -- validation (the one boundary) -----------------------------------------------------------------

@njit(**_CHECK)
def _all_finite(a):
    for x in a.flat:
        if not np.isfinite(x):
            return False
    return True


@njit(inline='always', **_CHECK)
def _valid(m, q, v):
    """q (nq,) and v (nv,; None: not used) finite, the free joint's quaternion of unit length."""
    if q.shape[0] != m.nq or not _all_finite(q):
        return False
    if v is not None and (v.shape[0] != m.nv or not _all_finite(v)):
        return False
    return quaternion_ok(m.jtype, q)


@njit(inline='always', **_CHECK)
def _valid_vector(m, x):
    return x.shape[0] == m.nv and _all_finite(x)


def _convert(x, n, name):
    try:
        a = np.ascontiguousarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f'{name} must be a numeric array of length {n}') from None
    if a.shape != (n,):
        raise ValueError(f'{name} must have shape ({n},), got {a.shape}')
    return a


def _vec(x, n, name):
    """x as a writeable float64 C-contiguous (n,) array (finiteness is checked by the kernels).
    Such an array is passed through untouched (no copy, no conversion)."""
    if (type(x) is _ND and x.dtype is _F64 and x.shape == (n,) and x.flags.c_contiguous
            and x.flags.writeable):
        return x
    a = _convert(x, n, name)
    return a if a.flags.writeable else a.copy()


def check_vector(x, n, name):
    """x as a validated float64 (n,) array (shape, numeric, finite); else ValueError naming it."""
    a = _vec(x, n, name)
    if not _all_finite(a):
        raise ValueError(f'{name} contains NaN or inf')
    return a


def check_configuration(model, q):
    """q as a validated float64 (nq,) array: finite, unit base quaternion; else ValueError."""
    q = check_vector(q, model.nq, 'q')
    if model.floating_base:
        nrm = quaternion_norm(model, q)
        if abs(nrm * nrm - 1.0) > QUATERNION_TOLERANCE:
            raise ValueError(f'q[3:7] must be a unit quaternion (x, y, z, w), its norm is {nrm:.6g}')
    return q


def check_state(model, q, v, **vectors):
    """Validated (q, v, *vectors): q as :func:`check_configuration`, the others finite (nv,)."""
    out = [check_configuration(model, q), check_vector(v, model.nv, 'v')]
    out += [check_vector(x, model.nv, name) for name, x in vectors.items()]
    return out


def _explain(model, q, **vectors):
    """Raise the ValueError for the invalid input a fused kernel reported."""
    check_configuration(model, q)
    for name, x in vectors.items():
        check_vector(x, model.nv, name)
    raise ValueError('invalid input')   # not reached: one of the checks above fails


def _factorization(name):
    try:
        return _FACTORIZATIONS[name]
    except KeyError:
        raise ValueError(f'factorization must be one of {sorted(_FACTORIZATIONS)}, got {name!r}') from None


# -- entry kernels: input check + algorithm in one compiled call (kinematics.py convention) --------

@_sealed(types.boolean, _INTS, _REALS, _VEC, _VEC)
def _mass_matrix(ints, reals, q, work):
    m = tree(ints, reals)
    if not _valid(m, q, None):
        return False
    w = workspace(m, work)
    _crba.crba(m, q, w.M, w)
    return True


@_sealed(types.boolean, _INTS, _REALS, _VEC, _VEC)
def _gravity(ints, reals, q, work):
    m = tree(ints, reals)
    if not _valid(m, q, None):
        return False
    w = workspace(m, work)
    _rnea.generalized_gravity(m, q, w.g, w)
    return True


@_sealed(types.boolean, _INTS, _REALS, _VEC, _VEC, _VEC, _VEC)
def _inverse_dynamics(ints, reals, q, v, a, work):
    m = tree(ints, reals)
    if not (_valid(m, q, v) and _valid_vector(m, a)):
        return False
    w = workspace(m, work)
    _rnea.rnea(m, q, v, a, w.tau, w)
    return True


@_sealed(types.int64, _INTS, _REALS, _VEC, _VEC, _VEC, _VEC)
def _forward_dynamics(ints, reals, q, v, tau, work):
    """0: done, 1: invalid input, 2: M not positive definite."""
    m = tree(ints, reals)
    if not (_valid(m, q, v) and _valid_vector(m, tau)):
        return 1
    w = workspace(m, work)
    return 0 if _fd.forward_dynamics(m, q, v, tau, w.ddq, w) else 2


@_sealed(types.boolean, _INTS, _REALS, _VEC, _VEC, _VEC, types.int64)
def _dynamics(ints, reals, q, v, work, fact):
    m = tree(ints, reals)
    if not _valid(m, q, v):
        return False
    w = workspace(m, work)
    _coriolis.coriolis(m, q, v, w.M, w.C, w.Mdot, w.g, w, fact)
    return True


@_sealed(types.boolean, _INTS, _REALS, _VEC, _VEC, _GAMMA)
def _christoffel_symbols(ints, reals, q, work, Gamma):
    m = tree(ints, reals)
    if not _valid(m, q, None):
        return False
    _christoffel.christoffel(m, q, Gamma, workspace(m, work))
    return True


@_sealed(types.boolean, _INTS, _REALS, _VEC, _VEC, _VEC)
def _observer_terms(ints, reals, q, v, work):
    m = tree(ints, reals)
    if not _valid(m, q, v):
        return False
    w = workspace(m, work)
    _momentum.momentum_terms(m, q, v, w.p, w.ctv, w.g, w)
    return True


@_sealed(types.boolean, _INTS, _REALS, _VEC, _VEC, _VEC, _GAMMA, types.int64, types.boolean)
def _all_terms(ints, reals, q, v, work, Gamma, fact, check):
    """Algorithm 1 (M, C, Mdot, g), p = M v, C^T v, and (Gamma.size > 0) Algorithm 2 on the
    composite inertias Algorithm 1 leaves: one forward-kinematics pass for everything."""
    m = tree(ints, reals)
    if check and not _valid(m, q, v):
        return False
    w = workspace(m, work)
    nv = m.nv
    for i in range(m.nq):
        w.q[i] = q[i]
    for i in range(nv):
        w.v[i] = v[i]
    M, C = w.M, w.C
    _coriolis.coriolis(m, q, v, M, C, w.Mdot, w.g, w, fact)
    for i in range(nv):                                 # p = M v, C^T v
        pi, ci = 0.0, 0.0
        for j in range(nv):
            pi += M[i, j] * v[j]
            ci += C[j, i] * v[j]
        w.p[i], w.ctv[i] = pi, ci
    if Gamma.size > 0:
        _christoffel.christoffel_sweep(m, w.Phi, w.I, per_body_6x6(w.W), Gamma, False)
    return True


@_sealed(types.boolean, _INTS, _REALS, _VEC, _VEC)
def _kinematics(ints, reals, q, work):
    m = tree(ints, reals)
    if not _valid(m, q, None):
        return False
    w = workspace(m, work)
    placements(m, q, w.R, w.pos, w.Phi)
    return True


@_sealed(types.boolean, _INTS, _REALS, _VEC, _VEC, types.int64, _VEC)
def _link_jacobian(ints, reals, q, work, body, local):
    """J of the point ``local`` (body frame) of ``body``; also leaves the placements in work."""
    m = tree(ints, reals)
    if not _valid(m, q, None):
        return False
    w = workspace(m, work)
    placements(m, q, w.R, w.pos, w.Phi)
    R, p = w.R, w.pos
    x0 = p[body, 0] + R[body, 0, 0] * local[0] + R[body, 0, 1] * local[1] + R[body, 0, 2] * local[2]
    x1 = p[body, 1] + R[body, 1, 0] * local[0] + R[body, 1, 1] * local[1] + R[body, 1, 2] * local[2]
    x2 = p[body, 2] + R[body, 2, 0] * local[0] + R[body, 2, 1] * local[1] + R[body, 2, 2] * local[2]
    _jac.point_jacobian(m, w.Phi, body, (x0, x1, x2), w.J)
    return True


# -- the public functions -------------------------------------------------------------------------
# Each calls its sealed entry kernel with the arguments as given (the fast path: float64
# C-contiguous arrays); numba raises TypeError for anything else, then _vec converts (or raises
# the ValueError that names the problem) and the kernel is called again.

def _buffer(model, data):
    """data.work for data made for this model (the common case, inlined), else via _work."""
    return data.work if getattr(data, 'layout', None) is model.work_offsets else _work(model, data)


def _run_q(kernel, model, q, data):
    """Call an entry kernel(ints, reals, q, work) the public way; returns the buffer used."""
    work = _buffer(model, data)
    try:
        ok = kernel(model.ints, model.reals, q, work)
    except TypeError:
        q = _vec(q, model.nq, 'q')
        ok = kernel(model.ints, model.reals, q, work)
    if not ok:
        _explain(model, q)
    return work


def mass_matrix(model, q, data=None):
    """M(q), (nv, nv), by the CRBA."""
    work = _run_q(_mass_matrix, model, q, data)
    return data.M if data is not None else _out(model, work, 'M')


def gravity(model, q, data=None):
    """g(q), (nv,): the joint torques that hold the robot still against gravity."""
    work = _run_q(_gravity, model, q, data)
    return data.g if data is not None else _out(model, work, 'g')


def inverse_dynamics(model, q, v, a, data=None):
    """tau = M(q) a + C(q, v) v + g(q), by the RNEA."""
    work = _buffer(model, data)
    try:
        ok = _inverse_dynamics(model.ints, model.reals, q, v, a, work)
    except TypeError:
        q, v, a = _vec(q, model.nq, 'q'), _vec(v, model.nv, 'v'), _vec(a, model.nv, 'a')
        ok = _inverse_dynamics(model.ints, model.reals, q, v, a, work)
    if not ok:
        _explain(model, q, v=v, a=a)
    return data.tau if data is not None else _out(model, work, 'tau')


def _massless_hint(model):
    """Why M is singular, if some moving links carry no mass or inertia."""
    names = [model.body_names[i] for i in massless_bodies(model)]
    return f' (singular: links {names} move but carry no mass or inertia)' if names else ''


def forward_dynamics(model, q, v, tau, data=None):
    """Joint accelerations a with M a + C v + g = tau (CRBA + sparse LTDL, seed 003)."""
    work = _buffer(model, data)
    try:
        status = _forward_dynamics(model.ints, model.reals, q, v, tau, work)
    except TypeError:
        q, v, tau = _vec(q, model.nq, 'q'), _vec(v, model.nv, 'v'), _vec(tau, model.nv, 'tau')
        status = _forward_dynamics(model.ints, model.reals, q, v, tau, work)
    if status == 1:
        _explain(model, q, v=v, tau=tau)
    if status == 2:
        raise ValueError('the mass matrix is not positive definite at this configuration'
                         + _massless_hint(model))
    return data.ddq if data is not None else _out(model, work, 'ddq')


def dynamics(model, q, v, factorization='eq10', data=None):
    """M, C, dM/dt and g in one pass (seed 000, Algorithm 1).

    ``factorization='eq10'`` (default) gives the Christoffel-consistent C; ``'eq9'`` the
    admissible C of B = (v x*) I.  Returns a :class:`Dynamics` named tuple (M, C, Mdot, g)
    (with ``data``: ``data.dynamics``, whose arrays are data's views).
    """
    fact = _EQ10 if factorization == 'eq10' else _factorization(factorization)
    work = data.work if getattr(data, 'layout', None) is model.work_offsets else _work(model, data)
    try:
        ok = _dynamics(model.ints, model.reals, q, v, work, fact)
    except TypeError:
        q, v = _vec(q, model.nq, 'q'), _vec(v, model.nv, 'v')
        ok = _dynamics(model.ints, model.reals, q, v, work, fact)
    if not ok:
        _explain(model, q, v=v)
    if data is not None:
        return data.dynamics
    n = model.nv                     # M, C, Mdot, g lead the buffer (WORK_FIELDS): cut them at once
    M, C, Mdot = work[:3 * n * n].reshape((3, n, n))
    return _new_tuple(Dynamics, (M, C, Mdot, work[3 * n * n:3 * n * n + n]))


def coriolis_matrix(model, q, v, factorization='eq10', data=None):
    """C(q, v), (nv, nv): Christoffel-consistent by default (C v = RNEA(q, v, 0) - g)."""
    return dynamics(model, q, v, factorization, data=data).C


def mass_matrix_derivative(model, q, v, data=None):
    """dM/dt along v, (nv, nv) (= C + C^T)."""
    return dynamics(model, q, v, data=data).Mdot


def christoffel(model, q, data=None):
    """Christoffel symbols of the first kind, Gamma[i, j, k], (nv, nv, nv) (seed 000, Algorithm 2).

    C[i, j] = sum_k Gamma[i, j, k] v[k].  With a floating base Gamma[i, j, k] = dC[i, j]/dv[k].
    """
    work = data.work if getattr(data, 'layout', None) is model.work_offsets else _work(model, data)
    Gamma = np.empty((model.nv,) * 3) if data is None else data.Gamma
    try:
        ok = _christoffel_symbols(model.ints, model.reals, q, work, Gamma)
    except TypeError:
        q = _vec(q, model.nq, 'q')
        ok = _christoffel_symbols(model.ints, model.reals, q, work, Gamma)
    if not ok:
        _explain(model, q)
    return Gamma


def compute_all_terms(model, q, v, data, christoffel=False, factorization='eq10'):
    """Everything a control cycle needs, from one validation and one kinematics pass, into data.

    Fills ``data.M``, ``data.C``, ``data.Mdot``, ``data.g`` (Algorithm 1), ``data.p`` = M v and
    ``data.ctv`` = C^T v (the momentum observer's products), ``data.q``, ``data.v`` (copies of
    the state) and, if ``christoffel``, ``data.Gamma`` (Algorithm 2 on the composite inertias
    Algorithm 1 leaves, no second kinematics pass).  Allocates nothing; returns ``data``.
    """
    work = data.work if getattr(data, 'layout', None) is model.work_offsets else _work(model, data)
    fact = _EQ10 if factorization == 'eq10' else _factorization(factorization)
    Gamma = data.Gamma if christoffel else _NO_GAMMA
    try:
        ok = _all_terms(model.ints, model.reals, q, v, work, Gamma, fact, True)
    except TypeError:
        q, v = _vec(q, model.nq, 'q'), _vec(v, model.nv, 'v')
        ok = _all_terms(model.ints, model.reals, q, v, work, Gamma, fact, True)
    if not ok:
        _explain(model, q, v=v)
    return data


def compute_all_terms_unchecked(model, q, v, data, christoffel=False, factorization='eq10'):
    """:func:`compute_all_terms` without validation, for inputs that already passed it:
    q, v float64 C-contiguous of length nq, nv, finite, unit base quaternion; data a
    :class:`Data` of this model.  Bad values give wrong numbers, not an error."""
    _all_terms(model.ints, model.reals, q, v, data.work, data.Gamma if christoffel else _NO_GAMMA,
               _FACTORIZATIONS[factorization], False)
    return data


def observer_terms(model, q, v, data=None):
    """(p, C^T v, g) = (M(q) v, C(q, v)^T v, g(q)) in one O(N) pass, each (nv,)."""
    work = data.work if getattr(data, 'layout', None) is model.work_offsets else _work(model, data)
    try:
        ok = _observer_terms(model.ints, model.reals, q, v, work)
    except TypeError:
        q, v = _vec(q, model.nq, 'q'), _vec(v, model.nv, 'v')
        ok = _observer_terms(model.ints, model.reals, q, v, work)
    if not ok:
        _explain(model, q, v=v)
    if data is not None:
        return data.observer_terms
    return _out(model, work, 'p'), _out(model, work, 'ctv'), _out(model, work, 'g')


def momentum(model, q, v, data=None):
    """Generalized momentum p = M(q) v, (nv,), in O(N)."""
    return observer_terms(model, q, v, data)[0]


def coriolis_transpose_times_v(model, q, v, data=None):
    """C(q, v)^T v, (nv,), in O(N) (Christoffel-consistent C)."""
    return observer_terms(model, q, v, data)[1]


# -- frames and Jacobians -------------------------------------------------------------------------

def _link(model, link):
    try:
        return model.link_frames[link]
    except (KeyError, TypeError):
        raise ValueError(f'unknown link {link!r}') from None


def link_placement(model, q, link, data=None):
    """(R, p): rotation and origin of ``link`` in the world frame at q (new 3x3 and 3 arrays;
    with ``data`` the body placements data.R, data.pos are left for reuse)."""
    q = _vec(q, model.nq, 'q')
    body, Rl, pl = _link(model, link)
    if body < 0:
        check_configuration(model, q)
        return Rl.copy(), pl.copy()
    work = _run_q(_kinematics, model, q, data)
    R, p = (data.R, data.pos) if data is not None else (_out(model, work, 'R'), _out(model, work, 'pos'))
    return R[body] @ Rl, R[body] @ pl + p[body]


def link_jacobian(model, q, link, point=None, data=None):
    """(6, nv) Jacobian of ``link`` at ``point`` (link frame, default its origin).

    Rows: linear velocity of the point, then angular velocity, both in the world frame
    (v_point = J[:3] v, omega = J[3:] v).  With ``data``: written into and returned as data.J.
    """
    q = _vec(q, model.nq, 'q')
    body, Rl, pl = _link(model, link)
    local = np.zeros(3) if point is None else check_vector(point, 3, 'point')
    if body < 0:
        check_configuration(model, q)
        if data is None:
            return np.zeros((6, model.nv))
        data.J[:] = 0.0
        return data.J
    work = _buffer(model, data)
    if not _link_jacobian(model.ints, model.reals, q, work, body, Rl @ local + pl):
        _explain(model, q)
    return data.J if data is not None else _out(model, work, 'J')


# -- batches --------------------------------------------------------------------------------------

@njit(parallel=True, **_JIT)
def _dynamics_batch(ints, reals, Q, V, M, C, Mdot, g, fact, threads):
    # one workspace per thread, alive for the whole loop (the views in w do not own memory);
    # ints[-1] is the last workspace offset (model.py): the size of one buffer
    work = np.empty((threads, ints[-1]))
    for t in prange(threads):         # (namedtuples can't cross into a parfor: unpack inside)
        m = tree(ints, reals)
        w = workspace(m, work[t])
        for k in range(t, Q.shape[0], threads):
            _coriolis.coriolis(m, Q[k], V[k], M[k], C[k], Mdot[k], g[k], w, fact)


@njit(parallel=True, **_JIT)
def _christoffel_batch(ints, reals, Q, Gamma, threads):
    work = np.empty((threads, ints[-1]))
    for t in prange(threads):
        m = tree(ints, reals)
        w = workspace(m, work[t])
        for k in range(t, Q.shape[0], threads):
            _christoffel.christoffel(m, Q[k], Gamma[k], w)


def _batch(model, X, n, name, configuration=False):
    try:
        X = np.ascontiguousarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f'{name} must be a numeric (K, {n}) array') from None
    if X.ndim != 2 or X.shape[1] != n:
        raise ValueError(f'{name} must have shape (K, {n}), got {X.shape}')
    if not _all_finite(X):
        raise ValueError(f'{name} contains NaN or inf')
    if configuration and model.floating_base:
        for q in X:
            check_configuration(model, q)
    return X


def _out_array(out, name, shape):
    a = getattr(out, name)
    if not (isinstance(a, np.ndarray) and a.dtype == np.float64 and a.shape == shape
            and a.flags.c_contiguous and a.flags.writeable):
        raise ValueError(f'out.{name} must be a writeable C-contiguous float64 array of shape {shape}')
    return a


def dynamics_batch(model, Q, V, factorization='eq10', out=None):
    """:func:`dynamics` for K states at once, on all cores: Q (K, nq), V (K, nv) ->
    Dynamics with M, C, Mdot (K, nv, nv) and g (K, nv).

    ``out``: a :class:`Dynamics` of preallocated arrays to fill and return (reusing buffers
    across calls avoids the page faults of fresh multi-megabyte outputs).
    """
    Q, V = _batch(model, Q, model.nq, 'Q', True), _batch(model, V, model.nv, 'V')
    if Q.shape[0] != V.shape[0]:
        raise ValueError(f'Q and V must have the same number of rows ({Q.shape[0]} != {V.shape[0]})')
    fact = _factorization(factorization)
    K, n = Q.shape[0], model.nv
    if out is None:
        out = Dynamics(np.empty((K, n, n)), np.empty((K, n, n)), np.empty((K, n, n)), np.empty((K, n)))
    M, C, Mdot = (_out_array(out, name, (K, n, n)) for name in ('M', 'C', 'Mdot'))
    g = _out_array(out, 'g', (K, n))
    _dynamics_batch(model.ints, model.reals, Q, V, M, C, Mdot, g, fact, get_num_threads())
    return Dynamics(M, C, Mdot, g)


def christoffel_batch(model, Q):
    """:func:`christoffel` for K configurations at once: Q (K, nq) -> (K, nv, nv, nv)."""
    Q = _batch(model, Q, model.nq, 'Q', True)
    Gamma = np.empty((Q.shape[0],) + (model.nv,) * 3)
    _christoffel_batch(model.ints, model.reals, Q, Gamma, get_num_threads())
    return Gamma


# -- contact dynamics in minimal coordinates (seed 002) -------------------------------------------

@_sealed_on_first_call(types.int64, _INTS, _REALS, _VEC, _VEC, types.int64[::1],
                       types.float64[:, ::1], types.int64, types.float64[:, ::1])
def _contact_compliance(ints, reals, q, work, cbody, clocal, width, Lam):
    """0: done, 1: invalid input, 2: M not positive definite."""
    m = tree(ints, reals)
    if not _valid(m, q, None):
        return 1
    w = workspace(m, work)
    return 0 if _cc.contact_compliance(m, q, cbody, clocal, width, Lam, w) else 2


def contact_nodes(model, points):
    """(body indices, points in the body frames) of contact nodes ``[(link, (x, y, z)), ...]``."""
    try:
        points = list(points)
    except TypeError:
        raise ValueError('points must be a sequence of (link_name, (x, y, z))') from None
    body = np.empty(len(points), dtype=np.int64)
    local = np.zeros((len(points), 3))
    for i, item in enumerate(points):
        try:
            link, xyz = item
        except (TypeError, ValueError):
            raise ValueError(f'points[{i}] must be (link_name, (x, y, z)), got {item!r}') from None
        b, Rl, pl = _link(model, link)
        body[i] = b
        local[i] = Rl @ check_vector(xyz, 3, f'points[{i}] position') + pl
    return body, local


def contact_compliance(model, q, points, spatial=False, data=None):
    """Operational-space compliance matrix Lambda = J M^-1 J^T of contact nodes (seed 002, Eq. 51).

    ``points``: ``[(link_name, (x, y, z)), ...]``, each a point fixed in the link's frame.
    Returns (3m, 3m) for the world-frame linear velocities of the points; with ``spatial=True``
    (6m, 6m) for [linear velocity of the point; angular velocity] per node (the rows of
    :func:`link_jacobian`).  Computed by the O(N) + O(m^2) articulated-body recursion of the
    paper's appendix (Lemma 1): neither M^-1 nor J is formed.  With ``data``: the scratch is
    data's, the result is written into and returned as ``data.Lambda`` (reallocated only when
    the number of nodes or the width changes), and data.R, data.pos, data.Phi hold the
    placements at q.
    """
    body, local = contact_nodes(model, points)
    width = 6 if spatial else 3
    n = width * len(body)
    work = _buffer(model, data)
    if data is None:
        Lam = np.empty((n, n))
    else:
        Lam = getattr(data, 'Lambda', None)
        if Lam is None or Lam.shape != (n, n):
            Lam = data.Lambda = np.empty((n, n))
    try:
        status = _contact_compliance(model.ints, model.reals, q, work, body, local, width, Lam)
    except TypeError:
        q = _vec(q, model.nq, 'q')
        status = _contact_compliance(model.ints, model.reals, q, work, body, local, width, Lam)
    if status == 1:
        _explain(model, q)
    if status == 2:
        raise ValueError('the mass matrix is not positive definite at this configuration'
                         + _massless_hint(model))
    return Lam
