"""Public functions (CONVENTIONS.md): validate inputs, call the compiled kernels.

Every function takes a :class:`~ros_dynamics.model.Model` and 1-D float arrays of length
``model.nq`` (q) or ``model.nv`` (v, a, tau).  Wrong shapes, non-numeric or non-finite values
and (floating base) a quaternion that is not unit length raise ``ValueError`` before anything
is computed.  Results are new arrays owned by the caller.

Speed: a call costs one compiled-kernel dispatch.  Python converts and shape-checks the inputs
(``_shaped``); the finiteness and quaternion tests run inside the same compiled call as the
algorithm (``_valid``), which reports failure before computing anything.  Only then does
Python redo the checks one by one to raise the error that names the problem (``_explain``).
"""

from collections import namedtuple

import numpy as np
from numba import njit, prange

from . import christoffel as _christoffel
from . import contact_compliance as _cc
from . import coriolis as _coriolis
from . import crba as _crba
from . import forward_dynamics as _fd
from . import jacobian as _jac
from . import momentum as _momentum
from . import rnea as _rnea
from .kinematics import kernel_arrays
from .model import FREE

Dynamics = namedtuple('Dynamics', 'M C Mdot g')
Dynamics.__doc__ = 'Result of :func:`dynamics`: mass matrix, Coriolis matrix, dM/dt, gravity.'
_new_tuple = tuple.__new__     # Dynamics(M, C, Mdot, g) without the Python-level __new__

_FACTORIZATIONS = {'eq10': _coriolis.EQ10, 'christoffel': _coriolis.EQ10, 'eq9': _coriolis.EQ9}
QUATERNION_TOLERANCE = 1e-3

# The input checks are compiled without fastmath (which would fold isfinite to True); the
# algorithms they call keep their own fastmath flags.
_CHECK = dict(cache=True, nogil=True)


@njit(**_CHECK)
def _all_finite(a):
    for x in a.flat:
        if not np.isfinite(x):
            return False
    return True


@njit(**_CHECK)
def _valid(topo, q, v):
    """q and v (None: not used) finite, the free joint's quaternion of unit length."""
    if not _all_finite(q):
        return False
    if v is not None and not _all_finite(v):
        return False
    if topo[0, 1] == FREE:
        n2 = q[3] * q[3] + q[4] * q[4] + q[5] * q[5] + q[6] * q[6]
        if abs(n2 - 1.0) > QUATERNION_TOLERANCE:
            return False
    return True


def _arrays(model):
    try:
        return model._kernel_arrays
    except AttributeError:
        arrays = model._kernel_arrays = kernel_arrays(model)
        return arrays


def _shaped(x, n, name):
    """x as a float64 C-contiguous array of shape (n,) (finiteness is checked by the kernels)."""
    try:
        a = np.ascontiguousarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f'{name} must be a numeric array of length {n}') from None
    if a.shape != (n,):
        raise ValueError(f'{name} must have shape ({n},), got {a.shape}')
    return a


def _vector(x, n, name):
    a = _shaped(x, n, name)
    if not _all_finite(a):
        raise ValueError(f'{name} contains NaN or inf')
    return a


def _configuration(model, q):
    q = _vector(q, model.nq, 'q')
    if model.floating_base:
        n2 = q[3] * q[3] + q[4] * q[4] + q[5] * q[5] + q[6] * q[6]
        if abs(n2 - 1.0) > QUATERNION_TOLERANCE:
            raise ValueError(f'q[3:7] must be a unit quaternion (x, y, z, w), its norm is {np.sqrt(n2):.6g}')
    return q


def _explain(model, q, **vectors):
    """Raise the ValueError for the invalid input a fused kernel reported."""
    _configuration(model, q)
    for name, x in vectors.items():
        _vector(x, len(x), name)
    raise ValueError('invalid input')   # not reached: one of the checks above fails


def _factorization(name):
    try:
        return _FACTORIZATIONS[name]
    except KeyError:
        raise ValueError(f'factorization must be one of {sorted(_FACTORIZATIONS)}, got {name!r}') from None


# -- fused kernels: input check + algorithm in one compiled call -----------------------------------

@njit(**_CHECK)
def _mass_matrix(topo, geom, dofs, q, M):
    if not _valid(topo, q, None):
        return False
    _crba.crba(topo, geom, dofs, q, M)
    return True


@njit(**_CHECK)
def _gravity(topo, geom, dofs, gravity, q, g):
    if not _valid(topo, q, None):
        return False
    _rnea.generalized_gravity(topo, geom, dofs, gravity, q, g)
    return True


@njit(**_CHECK)
def _inverse_dynamics(topo, geom, dofs, gravity, q, v, a, tau):
    if not (_valid(topo, q, v) and _all_finite(a)):
        return False
    _rnea.rnea(topo, geom, dofs, gravity, q, v, a, tau)
    return True


@njit(**_CHECK)
def _forward_dynamics(topo, geom, dofs, gravity, q, v, tau, a):
    """0: done, 1: invalid input, 2: M not positive definite."""
    if not (_valid(topo, q, v) and _all_finite(tau)):
        return 1
    return 0 if _fd.forward_dynamics(topo, geom, dofs, gravity, q, v, tau, a) else 2


@njit(**_CHECK)
def _dynamics(topo, geom, dofs, gravity, q, v, M, C, Mdot, g, fact):
    if not _valid(topo, q, v):
        return False
    _coriolis.coriolis(topo, geom, dofs, gravity, q, v, M, C, Mdot, g, fact)
    return True


@njit(**_CHECK)
def _christoffel_symbols(topo, geom, dofs, q, Gamma):
    if not _valid(topo, q, None):
        return False
    _christoffel.christoffel(topo, geom, dofs, q, Gamma)
    return True


@njit(**_CHECK)
def _observer_terms(topo, geom, dofs, gravity, q, v, p, ctv, g):
    if not _valid(topo, q, v):
        return False
    _momentum.momentum_terms(topo, geom, dofs, gravity, q, v, p, ctv, g)
    return True


# -- mass matrix, gravity, inverse and forward dynamics -------------------------------------------

def mass_matrix(model, q):
    """M(q), (nv, nv), by the CRBA."""
    q = _shaped(q, model.nq, 'q')
    topo, geom, dofs = _arrays(model)
    M = np.empty((model.nv, model.nv))
    if not _mass_matrix(topo, geom, dofs, q, M):
        _explain(model, q)
    return M


def gravity(model, q):
    """g(q), (nv,): the joint torques that hold the robot still against gravity."""
    q = _shaped(q, model.nq, 'q')
    topo, geom, dofs = _arrays(model)
    g = np.empty(model.nv)
    if not _gravity(topo, geom, dofs, model.gravity, q, g):
        _explain(model, q)
    return g


def inverse_dynamics(model, q, v, a):
    """tau = M(q) a + C(q, v) v + g(q), by the RNEA."""
    n = model.nv
    q, v, a = _shaped(q, model.nq, 'q'), _shaped(v, n, 'v'), _shaped(a, n, 'a')
    topo, geom, dofs = _arrays(model)
    tau = np.empty(n)
    if not _inverse_dynamics(topo, geom, dofs, model.gravity, q, v, a, tau):
        _explain(model, q, v=v, a=a)
    return tau


def forward_dynamics(model, q, v, tau):
    """Joint accelerations a with M a + C v + g = tau (CRBA + sparse LTDL, seed 003)."""
    n = model.nv
    q, v, tau = _shaped(q, model.nq, 'q'), _shaped(v, n, 'v'), _shaped(tau, n, 'tau')
    topo, geom, dofs = _arrays(model)
    a = np.empty(n)
    status = _forward_dynamics(topo, geom, dofs, model.gravity, q, v, tau, a)
    if status == 1:
        _explain(model, q, v=v, tau=tau)
    if status == 2:
        raise ValueError('the mass matrix is not positive definite at this configuration')
    return a


# -- Coriolis (Algorithm 1) and Christoffel symbols (Algorithm 2) ---------------------------------

def dynamics(model, q, v, factorization='eq10'):
    """M, C, dM/dt and g in one pass (seed 000, Algorithm 1).

    ``factorization='eq10'`` (default) gives the Christoffel-consistent C; ``'eq9'`` the
    admissible C of B = (v x*) I.  Returns a :class:`Dynamics` named tuple (M, C, Mdot, g).
    """
    n = model.nv
    q, v = _shaped(q, model.nq, 'q'), _shaped(v, n, 'v')
    fact = _factorization(factorization)
    topo, geom, dofs = _arrays(model)
    M, C, Mdot, g = np.empty((n, n)), np.empty((n, n)), np.empty((n, n)), np.empty(n)
    if not _dynamics(topo, geom, dofs, model.gravity, q, v, M, C, Mdot, g, fact):
        _explain(model, q, v=v)
    return _new_tuple(Dynamics, (M, C, Mdot, g))


def coriolis_matrix(model, q, v, factorization='eq10'):
    """C(q, v), (nv, nv): Christoffel-consistent by default (C v = RNEA(q, v, 0) - g)."""
    return dynamics(model, q, v, factorization).C


def mass_matrix_derivative(model, q, v):
    """dM/dt along v, (nv, nv) (= C + C^T)."""
    return dynamics(model, q, v).Mdot


def christoffel(model, q):
    """Christoffel symbols of the first kind, Gamma[i, j, k], (nv, nv, nv) (seed 000, Algorithm 2).

    C[i, j] = sum_k Gamma[i, j, k] v[k].  With a floating base Gamma[i, j, k] = dC[i, j]/dv[k].
    """
    q = _shaped(q, model.nq, 'q')
    topo, geom, dofs = _arrays(model)
    n = model.nv
    Gamma = np.zeros((n, n, n))
    if not _christoffel_symbols(topo, geom, dofs, q, Gamma):
        _explain(model, q)
    return Gamma


# -- O(N) products for the momentum observer ------------------------------------------------------

def observer_terms(model, q, v):
    """(p, C^T v, g) = (M(q) v, C(q, v)^T v, g(q)) in one O(N) pass, each (nv,)."""
    n = model.nv
    q, v = _shaped(q, model.nq, 'q'), _shaped(v, n, 'v')
    topo, geom, dofs = _arrays(model)
    p, ctv, g = np.empty(n), np.empty(n), np.empty(n)
    if not _observer_terms(topo, geom, dofs, model.gravity, q, v, p, ctv, g):
        _explain(model, q, v=v)
    return p, ctv, g


def momentum(model, q, v):
    """Generalized momentum p = M(q) v, (nv,), in O(N)."""
    return observer_terms(model, q, v)[0]


def coriolis_transpose_times_v(model, q, v):
    """C(q, v)^T v, (nv,), in O(N) (Christoffel-consistent C)."""
    return observer_terms(model, q, v)[1]


# -- frames and Jacobians -------------------------------------------------------------------------

def _link(model, link):
    if link not in model.link_frames:
        raise ValueError(f'unknown link {link!r}')
    return model.link_frames[link]


def _placements(model, q):
    topo, geom, dofs = _arrays(model)
    N = model.nbodies
    R, p, Phi = np.empty((N, 3, 3)), np.empty((N, 3)), np.empty((model.nv, 6))
    _jac.body_placements(topo, geom, dofs, q, R, p, Phi)
    return R, p, Phi


def link_placement(model, q, link):
    """(R, p): rotation and origin of ``link`` in the world frame at q."""
    q = _configuration(model, q)
    body, Rl, pl = _link(model, link)
    if body < 0:
        return Rl.copy(), pl.copy()
    R, p, _ = _placements(model, q)
    return R[body] @ Rl, R[body] @ pl + p[body]


def link_jacobian(model, q, link, point=None):
    """(6, nv) Jacobian of ``link`` at ``point`` (link frame, default its origin).

    Rows: linear velocity of the point, then angular velocity, both in the world frame
    (v_point = J[:3] v, omega = J[3:] v).
    """
    q = _configuration(model, q)
    body, Rl, pl = _link(model, link)
    J = np.zeros((6, model.nv))
    if body < 0:
        return J
    local = np.zeros(3) if point is None else _vector(point, 3, 'point')
    topo, _, dofs = _arrays(model)
    R, p, Phi = _placements(model, q)
    world_point = R[body] @ (Rl @ local + pl) + p[body]
    _jac.point_jacobian(topo, dofs, Phi, body, world_point, J)
    return J


# -- batches --------------------------------------------------------------------------------------

@njit(parallel=True, cache=True)
def _dynamics_batch(topo, geom, dofs, gravity, Q, V, M, C, Mdot, g, fact):
    for k in prange(Q.shape[0]):
        _coriolis.coriolis(topo, geom, dofs, gravity, Q[k], V[k], M[k], C[k], Mdot[k], g[k], fact)


@njit(parallel=True, cache=True)
def _christoffel_batch(topo, geom, dofs, Q, Gamma):
    for k in prange(Q.shape[0]):
        _christoffel.christoffel(topo, geom, dofs, Q[k], Gamma[k])


def _batch(X, n, name):
    try:
        X = np.ascontiguousarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f'{name} must be a numeric (K, {n}) array') from None
    if X.ndim != 2 or X.shape[1] != n:
        raise ValueError(f'{name} must have shape (K, {n}), got {X.shape}')
    if not _all_finite(X):
        raise ValueError(f'{name} contains NaN or inf')
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
    Q, V = _batch(Q, model.nq, 'Q'), _batch(V, model.nv, 'V')
    if Q.shape[0] != V.shape[0]:
        raise ValueError(f'Q and V must have the same number of rows ({Q.shape[0]} != {V.shape[0]})')
    if model.floating_base:
        for q in Q:
            _configuration(model, q)
    fact = _factorization(factorization)
    topo, geom, dofs = _arrays(model)
    K, n = Q.shape[0], model.nv
    if out is None:
        out = Dynamics(np.empty((K, n, n)), np.empty((K, n, n)), np.empty((K, n, n)), np.empty((K, n)))
    M, C, Mdot = (_out_array(out, name, (K, n, n)) for name in ('M', 'C', 'Mdot'))
    g = _out_array(out, 'g', (K, n))
    _dynamics_batch(topo, geom, dofs, model.gravity, Q, V, M, C, Mdot, g, fact)
    return Dynamics(M, C, Mdot, g)


def christoffel_batch(model, Q):
    """:func:`christoffel` for K configurations at once: Q (K, nq) -> (K, nv, nv, nv)."""
    Q = _batch(Q, model.nq, 'Q')
    if model.floating_base:
        for q in Q:
            _configuration(model, q)
    topo, geom, dofs = _arrays(model)
    Gamma = np.zeros((Q.shape[0],) + (model.nv,) * 3)
    _christoffel_batch(topo, geom, dofs, Q, Gamma)
    return Gamma


# -- contact dynamics in minimal coordinates (seed 002) -------------------------------------------

@njit(**_CHECK)
def _contact_compliance(topo, geom, dofs, q, cbody, clocal, width, Lam):
    """0: done, 1: invalid input, 2: M not positive definite."""
    if not _valid(topo, q, None):
        return 1
    return 0 if _cc.contact_compliance(topo, geom, dofs, q, cbody, clocal, width, Lam) else 2


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
        local[i] = Rl @ _vector(xyz, 3, f'points[{i}] position') + pl
    return body, local


def contact_compliance(model, q, points, spatial=False):
    """Operational-space compliance matrix Lambda = J M^-1 J^T of contact nodes (seed 002, Eq. 51).

    ``points``: ``[(link_name, (x, y, z)), ...]``, each a point fixed in the link's frame.
    Returns (3m, 3m) for the world-frame linear velocities of the points; with ``spatial=True``
    (6m, 6m) for [linear velocity of the point; angular velocity] per node (the rows of
    :func:`link_jacobian`).  Computed by the O(N) + O(m^2) articulated-body recursion of the
    paper's appendix (Lemma 1): neither M^-1 nor J is formed.
    """
    q = _shaped(q, model.nq, 'q')
    body, local = contact_nodes(model, points)
    width = 6 if spatial else 3
    topo, geom, dofs = _arrays(model)
    Lam = np.empty((width * len(body), width * len(body)))
    status = _contact_compliance(topo, geom, dofs, q, body, local, width, Lam)
    if status == 1:
        _explain(model, q)
    if status == 2:
        raise ValueError('the mass matrix is not positive definite at this configuration')
    return Lam
