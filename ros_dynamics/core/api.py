"""The public functions: every call validates its inputs (validation.py) and runs one entry
kernel (kernels.py) into a :class:`~ros_dynamics.Data` buffer (data.py).

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

Speed: a call costs one compiled-kernel dispatch with few arguments (the model's packed
array, data's one buffer, the inputs).  Every public function calls its kernel through
:func:`_run` (one Python call) with the arguments as given (the fast path: float64
C-contiguous arrays); numba raises TypeError for anything else (or before the kernel's first
compilation), then the kernel is compiled if needed, the inputs are converted and the kernel
is called again.

Frames: ``model.link_names`` are the moving bodies; ``model.frame_names`` adds the frames of
links merged into them by fixed joints (e.g. a ``tool0`` or a camera frame).  Every function
that takes a link accepts any of ``model.frame_names``.
"""

import numpy as np
from numba import get_num_threads, set_num_threads

from . import coriolis, kernels
from .data import Data, Dynamics, new_dynamics, output, work_buffer
from .jit import ready
from .kernels import AFTER_TERMS, BODY_SHIFT, CHRISTOFFEL, EQ9, INVALID, PRODUCTS, UNCHECKED
from .model import massless_bodies
from .task_space import TaskFrames, TaskSpace
from .validation import (as_vector, check_batch, check_configuration, check_vector,
                         close_names, explain)

# factorization -> its flag of kernels.terms; the batch kernel takes coriolis.EQ9 / EQ10
_FACTORIZATIONS = {'eq10': 0, 'christoffel': 0, 'eq9': EQ9}
_NO_GAMMA = np.zeros((0, 0, 0))
_NO_POINT = np.zeros(3)
_NO_WORK = np.zeros(0)         # geometry: no Data, scratch of the call's own
_geometry = kernels.geometry

# how each public function is called (named in the error for a wrong ``data`` argument)
USAGE = {
    'mass_matrix': 'mass_matrix(model, q, data=None)',
    'gravity': 'gravity(model, q, data=None)',
    'inverse_dynamics': 'inverse_dynamics(model, q, v, a, data=None)',
    'forward_dynamics': 'forward_dynamics(model, q, v, tau, data=None)',
    'dynamics': "dynamics(model, q, v, factorization='eq10', data=None)",
    'christoffel': 'christoffel(model, q, data=None): Gamma depends on q alone and takes no '
                   'velocity (C = Gamma v)',
    'compute_all_terms': "compute_all_terms(model, q, v, data, christoffel=False, "
                         "factorization='eq10')",
    'observer_terms': 'observer_terms(model, q, v, data=None)',
    'link_placement': 'link_placement(model, q, link, data=None)',
    'link_jacobian': 'link_jacobian(model, q, link, point=None, data=None)',
    'contact_compliance': 'contact_compliance(model, q, points, spatial=False, data=None)',
    'task_space': 'task_space(model, q, v, frames, data=None)',
    'inverse_dynamics_derivatives': 'inverse_dynamics_derivatives(model, q, v, a, data=None)',
    'forward_dynamics_derivatives': 'forward_dynamics_derivatives(model, q, v, tau, data=None)',
}


def _data(model, data, caller):
    """data, if it is a Data of this model's dimensions; else the ValueError that names the
    call's signature."""
    try:
        work_buffer(model, data)
    except ValueError as exc:
        raise ValueError(f'{exc} (called as {USAGE[caller]})') from None
    return data


def _run(kernel, model, data, caller, names, q, *args):
    """Call ``kernel(packed, work, q, *args)`` into data's buffer (a new one for None) and
    return the buffer.  The first ``len(names)`` inputs are q and (nv,) vectors with these
    names: converted if the kernel refuses their types (the kernel is compiled at its first
    call); a ValueError naming the problem for bad input, a singular mass matrix or a wrong
    ``data`` (with the signature of ``caller``)."""
    if data is None:
        work = np.empty(model.work_offsets[-1])
    elif data.__class__ is Data and data.layout is model.work_offsets:
        work = data.work
    else:
        work = _data(model, data, caller).work
    if not kernel.overloads:
        # compiled (or loaded) here, not by the dispatcher: a thread calling a kernel that
        # another thread is compiling (jit.ready) would otherwise be refused by numba
        # ('compilation disabled') when that compile ends
        ready(kernel)
    try:
        status = kernel(model.packed, work, q, *args)
    except TypeError:
        ready(kernel)
        n = len(names)
        q = as_vector(q, model.nq, 'q')
        args = tuple(as_vector(x, model.nv, name) for name, x in zip(names[1:], args)) + args[n - 1:]
        status = kernel(model.packed, work, q, *args)
    if status:
        if status == INVALID:
            explain(model, names, (q,) + args)
        raise ValueError('the mass matrix is not positive definite at this configuration'
                         + _massless_hint(model))
    return work


run_kernel = _run      # for the public functions of other modules (derivatives.py)


def _massless_hint(model):
    """Why M is singular, if some moving links carry no mass or inertia."""
    names = [model.body_names[i] for i in massless_bodies(model)]
    return f' (singular: links {names} move but carry no mass or inertia)' if names else ''


def _factorization(name):
    try:
        return _FACTORIZATIONS[name]
    except (KeyError, TypeError):
        raise ValueError(f'factorization must be one of {sorted(_FACTORIZATIONS)}, got {name!r}') from None


def mass_matrix(model, q, data=None):
    """M(q), (nv, nv), by the CRBA."""
    work = _run(kernels.mass_matrix, model, data, 'mass_matrix', ('q',), q)
    return data.M if data is not None else output(model, work, 'M')


def gravity(model, q, data=None):
    """g(q), (nv,): the joint torques that hold the robot still against gravity."""
    work = _run(kernels.gravity, model, data, 'gravity', ('q',), q)
    return data.g if data is not None else output(model, work, 'g')


def inverse_dynamics(model, q, v, a, data=None):
    """tau = M(q) a + C(q, v) v + g(q), by the RNEA."""
    work = _run(kernels.inverse_dynamics, model, data, 'inverse_dynamics', ('q', 'v', 'a'),
                q, v, a)
    return data.tau if data is not None else output(model, work, 'tau')


def forward_dynamics(model, q, v, tau, data=None):
    """Joint accelerations a with M a + C v + g = tau (CRBA + sparse LTDL, Featherstone 2005)."""
    work = _run(kernels.forward_dynamics, model, data, 'forward_dynamics', ('q', 'v', 'tau'),
                q, v, tau)
    return data.ddq if data is not None else output(model, work, 'ddq')


def dynamics(model, q, v, factorization='eq10', data=None):
    """M, C, dM/dt and g in one pass (Echeandia & Wensing, Algorithm 1).

    ``factorization='eq10'`` (default) gives the Christoffel-consistent C; ``'eq9'`` the
    admissible C of B = (v x*) I.  Returns a :class:`Dynamics` named tuple (M, C, Mdot, g)
    (with ``data``: ``data.dynamics``, whose arrays are data's views).
    """
    fact = 0 if factorization == 'eq10' else _factorization(factorization)
    work = _run(kernels.terms, model, data, 'dynamics', ('q', 'v'), q, v, fact)
    if data is not None:
        return data.dynamics
    n = model.nv                     # M, C, Mdot, g lead the buffer (WORK_FIELDS): cut them at once
    M, C, Mdot = work[:3 * n * n].reshape((3, n, n))
    return new_dynamics(Dynamics, (M, C, Mdot, work[3 * n * n:3 * n * n + n]))


def coriolis_matrix(model, q, v, factorization='eq10', data=None):
    """C(q, v), (nv, nv): Christoffel-consistent by default (C v = RNEA(q, v, 0) - g)."""
    return dynamics(model, q, v, factorization, data=data).C


def mass_matrix_derivative(model, q, v, data=None):
    """dM/dt along v, (nv, nv) (= C + C^T)."""
    return dynamics(model, q, v, data=data).Mdot


def christoffel(model, q, data=None):
    """Christoffel symbols of the first kind, Gamma[i, j, k], (nv, nv, nv) (Echeandia &
    Wensing, Algorithm 2).

    C[i, j] = sum_k Gamma[i, j, k] v[k].  With a floating base Gamma[i, j, k] = dC[i, j]/dv[k].
    """
    # _run inlined: this call is cheap enough (~1 us on a small arm) that the generic path's
    # Python glue would be a third of it.  Without data the kernel allocates its own scratch
    # (given an empty work): one allocation here instead of two.
    if data is None:
        Gamma, work = np.empty(model.gamma_shape), _NO_WORK
    elif data.__class__ is Data and data.layout is model.work_offsets:
        Gamma, work = data.Gamma, data.work
    else:
        Gamma, work = _data(model, data, 'christoffel').Gamma, data.work
    if not _geometry.overloads:        # (as in _run: never compiled by the dispatcher)
        ready(_geometry)
    try:
        status = _geometry(model.packed, work, q, Gamma, CHRISTOFFEL, _NO_POINT)
    except TypeError:
        _run(kernels.geometry, model, data, 'christoffel', ('q',), q, Gamma, CHRISTOFFEL,
             _NO_POINT)
        return Gamma
    if status:
        explain(model, ('q',), (q,))
    return Gamma


def compute_all_terms(model, q, v, data, christoffel=False, factorization='eq10'):
    """Everything a control cycle needs, from one validation and one kinematics pass, into data.

    Fills ``data.M``, ``data.C``, ``data.Mdot``, ``data.g`` (Algorithm 1), ``data.p`` = M v and
    ``data.ctv`` = C^T v (the momentum observer's products), ``data.q``, ``data.v`` (copies of
    the state) and, if ``christoffel``, ``data.Gamma`` (Algorithm 2 on the composite inertias
    Algorithm 1 leaves, no second kinematics pass).  Allocates nothing; returns ``data``.
    """
    if data is None:
        raise ValueError(f'compute_all_terms writes into a workspace: call it as '
                         f'{USAGE["compute_all_terms"]} with data = rd.Data(model)')
    fact = 0 if factorization == 'eq10' else _factorization(factorization)
    _run(kernels.terms, model, data, 'compute_all_terms', ('q', 'v'), q, v, PRODUCTS | fact)
    if christoffel:        # Algorithm 2 from the kinematics and composite inertias just computed
        _after_terms(model, data.work, data.q, data.Gamma)
    return data


def compute_all_terms_unchecked(model, q, v, data, christoffel=False, factorization='eq10'):
    """:func:`compute_all_terms` without validation, for inputs that already passed it:
    q, v float64 C-contiguous of length nq, nv, finite, unit base quaternion; data a
    :class:`Data` of this model.  Bad values give wrong numbers, not an error."""
    ready(kernels.terms)(model.packed, data.work, q, v,
                         PRODUCTS | UNCHECKED | _FACTORIZATIONS[factorization])
    if christoffel:
        _after_terms(model, data.work, data.q, data.Gamma)
    return data


def christoffel_after_terms(model, data):
    """``data.Gamma`` (Algorithm 2) from the kinematics pass and composite inertias that
    :func:`compute_all_terms` (or the ``terms`` kernel) just left in ``data``, at its q: no
    validation and no second kinematics pass.  Returns ``data.Gamma``."""
    _after_terms(model, data.work, data.q, data.Gamma)
    return data.Gamma


def _after_terms(model, work, q, Gamma):
    """Gamma from the kinematics pass and composite inertias ``terms`` just left in work (q:
    any float64 vector; not read)."""
    if not _geometry.overloads:        # (as in _run: never compiled by the dispatcher)
        ready(_geometry)
    _geometry(model.packed, work, q, Gamma, CHRISTOFFEL | AFTER_TERMS, _NO_POINT)


def observer_terms(model, q, v, data=None):
    """(p, C^T v, g) = (M(q) v, C(q, v)^T v, g(q)) in one O(N) pass, each (nv,)."""
    work = _run(kernels.observer_terms, model, data, 'observer_terms', ('q', 'v'), q, v)
    if data is not None:
        return data.observer_terms
    return output(model, work, 'p'), output(model, work, 'ctv'), output(model, work, 'g')


def momentum(model, q, v, data=None):
    """Generalized momentum p = M(q) v, (nv,), in O(N)."""
    return observer_terms(model, q, v, data)[0]


def coriolis_transpose_times_v(model, q, v, data=None):
    """C(q, v)^T v, (nv,), in O(N) (Christoffel-consistent C)."""
    return observer_terms(model, q, v, data)[1]


# -- frames and Jacobians -------------------------------------------------------------------------

def link_frame(model, link):
    """(body index or -1 for the world, R, p of the link frame in the body frame) of one of
    ``model.frame_names``; else a ValueError listing the closest names."""
    try:
        return model.link_frames[link]
    except (KeyError, TypeError):
        raise ValueError(f'unknown link {link!r}'
                         + close_names(link, model.link_frames, 'frames (model.frame_names)')) from None


def link_placement(model, q, link, data=None):
    """(R, p): rotation and origin of ``link`` (any of ``model.frame_names``) in the world
    frame at q (new 3x3 and 3 arrays; with ``data`` the body placements data.R, data.pos are
    left for reuse)."""
    body, Rl, pl = link_frame(model, link)
    if body < 0:
        check_configuration(model, q)
        return Rl.copy(), pl.copy()
    work = _run(kernels.geometry, model, data, 'link_placement', ('q',), q, _NO_GAMMA, 0,
                _NO_POINT)
    R, p = (data.R, data.pos) if data is not None else (output(model, work, 'R'), output(model, work, 'pos'))
    return R[body] @ Rl, R[body] @ pl + p[body]


def link_jacobian(model, q, link, point=None, data=None):
    """(6, nv) Jacobian of ``link`` (any of ``model.frame_names``) at ``point`` (link frame,
    default its origin).

    Rows: linear velocity of the point, then angular velocity, both in the world frame
    (v_point = J[:3] v, omega = J[3:] v).  With ``data``: written into and returned as data.J.
    """
    body, Rl, pl = link_frame(model, link)
    local = np.zeros(3) if point is None else check_vector(point, 3, 'point')
    if body < 0:
        check_configuration(model, q)
        if data is None:
            return np.zeros((6, model.nv))
        data.J[:] = 0.0
        return data.J
    work = _run(kernels.geometry, model, data, 'link_jacobian', ('q',), q, _NO_GAMMA,
                (body + 1) << BODY_SHIFT, Rl @ local + pl)
    return data.J if data is not None else output(model, work, 'J')


# -- task space: task frames and centroidal momentum (task_space.py) ------------------------------

def task_frames(model, frames):
    """The named frames (any of ``model.frame_names``), resolved once: a :class:`TaskFrames`
    to pass to :func:`task_space`.  An unknown name raises ValueError listing the closest ones."""
    if isinstance(frames, TaskFrames):
        return frames
    if isinstance(frames, str):
        raise ValueError(f'frames must be a list of frame names, got the string {frames!r}')
    try:
        names = list(frames)
    except TypeError:
        raise ValueError(f'frames must be a list of frame names, got {frames!r}') from None
    for name in names:
        if not isinstance(name, str):
            raise ValueError(f'frame names must be strings, got {name!r}')
    return TaskFrames(names, [link_frame(model, name) for name in names], model.nbodies)


def task_space(model, q, v, frames, data=None):
    """Task frames and centroidal momentum at (q, v), from one kinematics pass: a
    :class:`TaskSpace` with each frame's world pose, Jacobian (rows: the origin's linear
    velocity, then angular velocity, world axes) and dJ/dt v (the origin's classical
    acceleration and the angular acceleration at dv/dt = 0), and the total mass, CoM, CoM
    velocity, A_G (linear momentum, then angular momentum about the CoM, world axes) and
    dA_G/dt v (Orin, Goswami & Lee 2013).

    ``frames``: names (resolved at every call) or a :func:`task_frames` result (resolved once).
    With ``data``: the result is kept in it (``data.task_space``, made again only for other
    frames) and overwritten by the next call; nothing is allocated per call.
    """
    if data is not None:
        _data(model, data, 'task_space')
    ts = _task_output(model, data, frames)
    _task_run(model, ts, data.work if data is not None else ts.work, q, v, 0)
    if data is not None:
        data.task_space = ts          # (after the check: bad input leaves data as it was)
    return ts


def task_space_after_terms(model, data, frames):
    """:func:`task_space` at the state :func:`compute_all_terms` just computed in ``data``
    (data.q, data.v), from its kinematics pass and composite inertias: no validation, no second
    pass.  Returns ``data.task_space``."""
    ts = data.task_space = _task_output(model, data, frames)
    _task_run(model, ts, data.work, data.q, data.v, AFTER_TERMS)
    return ts


def _task_output(model, data, frames):
    """The TaskSpace to fill: data's for these frames, or a new one (on data's buffer, or on
    its own without data)."""
    if not isinstance(frames, (str, TaskFrames)):
        try:
            frames = tuple(frames)             # names: compared, then resolved, once
        except TypeError:
            raise ValueError(f'frames must be a list of frame names, got {frames!r}') from None
    if data is not None:
        ts = data.task_space
        if ts is not None and (frames is ts.task_frames or ts.frames == frames):
            return ts
    frames = task_frames(model, frames)
    if frames.nbodies != model.nbodies or (len(frames) and frames.body.max() >= model.nbodies):
        raise ValueError('frames were resolved for another model (task_frames(model, names))')
    return TaskSpace(model, frames, np.empty(model.work_offsets[-1]) if data is None else data.work)


def _task_run(model, ts, work, q, v, flags):
    f = ts.task_frames
    args = (f.body, f.local, ts.rotations, ts.positions, ts.jacobians, ts.jacobian_dot_v)
    if not kernels.task_space.overloads:   # (as in _run: never compiled by the dispatcher)
        ready(kernels.task_space)
    try:
        status = kernels.task_space(model.packed, work, q, v, flags, *args)
    except TypeError:
        q, v = as_vector(q, model.nq, 'q'), as_vector(v, model.nv, 'v')
        status = kernels.task_space(model.packed, work, q, v, flags, *args)
    if status:
        explain(model, ('q', 'v'), (q, v))


# -- batches --------------------------------------------------------------------------------------

def _out_array(out, name, shape):
    a = getattr(out, name)
    if not (isinstance(a, np.ndarray) and a.dtype == np.float64 and a.shape == shape
            and a.flags.c_contiguous and a.flags.writeable):
        raise ValueError(f'out.{name} must be a writeable C-contiguous float64 array of shape {shape}')
    return a


# Threads for a batch: each thread gets at least this many output entries (Algorithm 1 takes
# 3-6 ns per entry of M, C, Mdot, g on 7- to 20-DoF robots, so >= 50-100 us of work), so that
# waking another thread (about 20 us measured on the loaded 2-core machine, more when another
# process holds the core) costs a small part of what it saves.
MIN_ENTRIES_PER_THREAD = 16384


def batch_threads(K, entries_per_state):
    """Threads for a batch of K states writing ``entries_per_state`` output entries each: as
    many as numba's thread count for this thread (``numba.set_num_threads``) allows while each
    gets at least ``MIN_ENTRIES_PER_THREAD`` entries; 1 runs the batch on the calling thread."""
    return max(1, min(get_num_threads(), K * entries_per_state // MIN_ENTRIES_PER_THREAD))


def batch_call(kernel, threads, *args):
    """``kernel(*args, threads)`` with numba's team for this thread set to ``threads`` (the
    parallel loop of a batch kernel starts the whole team, even threads without a block)."""
    team = get_num_threads()
    if threads == team:
        return ready(kernel)(*args, threads)
    set_num_threads(threads)
    try:
        return ready(kernel)(*args, threads)
    finally:
        set_num_threads(team)


def dynamics_batch(model, Q, V, factorization='eq10', out=None):
    """:func:`dynamics` for K states in one compiled call: Q (K, nq), V (K, nv) -> Dynamics
    with M, C, Mdot (K, nv, nv) and g (K, nv), each row equal to :func:`dynamics` of that
    state.

    Threads: numba's thread count for the calling thread (``numba.set_num_threads``; 1: the
    calling thread alone), fewer when the batch is too small to pay for starting them
    (:func:`batch_threads`); each thread computes one contiguous block of rows.
    ``out``: a :class:`Dynamics` of preallocated arrays to fill and return (reusing buffers
    across calls avoids the page faults of fresh multi-megabyte outputs).
    """
    Q, V = check_batch(model, Q, model.nq, 'Q', True), check_batch(model, V, model.nv, 'V')
    if Q.shape[0] != V.shape[0]:
        raise ValueError(f'Q and V must have the same number of rows ({Q.shape[0]} != {V.shape[0]})')
    fact = coriolis.EQ9 if _factorization(factorization) == EQ9 else coriolis.EQ10
    K, n = Q.shape[0], model.nv
    if out is None:
        out = Dynamics(np.empty((K, n, n)), np.empty((K, n, n)), np.empty((K, n, n)), np.empty((K, n)))
    M, C, Mdot = (_out_array(out, name, (K, n, n)) for name in ('M', 'C', 'Mdot'))
    g = _out_array(out, 'g', (K, n))
    batch_call(kernels.dynamics_batch, batch_threads(K, n * (3 * n + 1)),
               model.packed, Q, V, M, C, Mdot, g, fact)
    return Dynamics(M, C, Mdot, g)


def christoffel_batch(model, Q):
    """:func:`christoffel` for K configurations in one compiled call: Q (K, nq) ->
    (K, nv, nv, nv); threads as :func:`dynamics_batch`."""
    Q = check_batch(model, Q, model.nq, 'Q', True)
    n = model.nv
    Gamma = np.empty((Q.shape[0], n, n, n))
    batch_call(kernels.christoffel_batch, batch_threads(Q.shape[0], n ** 3), model.packed, Q, Gamma)
    return Gamma


# -- contact dynamics in minimal coordinates (Jain) ----------------------------------------------

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
        b, Rl, pl = link_frame(model, link)
        body[i] = b
        local[i] = Rl @ check_vector(xyz, 3, f'points[{i}] position') + pl
    return body, local


def contact_compliance(model, q, points, spatial=False, data=None):
    """Operational-space compliance matrix Lambda = J M^-1 J^T of contact nodes (Jain,
    "Contact Dynamics Formulation Using Minimal Coordinates", Eq. 51).

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
    if data is None:
        Lam = np.empty((n, n))
    else:
        Lam = _data(model, data, 'contact_compliance').Lambda
        if Lam is None or Lam.shape != (n, n):
            Lam = data.Lambda = np.empty((n, n))
    _run(kernels.contact_compliance, model, data, 'contact_compliance', ('q',), q, body, local,
         width, Lam)
    return Lam
