"""The validation boundary: what every public function checks, and the words it uses.

Every public function takes a :class:`~ros_dynamics.Model` and 1-D float arrays of length
``model.nq`` (q) or ``model.nv`` (v, a, tau).  Wrong shapes, non-numeric or non-finite values
and (floating base) a quaternion that is not unit length raise ``ValueError`` naming the
problem before anything is computed.  This module is the only place that validates: the
algorithms and the internal callers (observer, simulator, node) trust what passes here.

Speed: the entry kernels check lengths, finiteness and the quaternion inside the same compiled
call as the algorithm (``valid_state``, ``valid_vector``, inlined) and report failure before
computing anything; only then does Python redo the checks one by one to raise the error that
names the problem (``explain``).  ``as_vector`` passes a float64 C-contiguous array of the right
length through untouched and converts anything else once.
"""

import difflib

import numpy as np
from numba import njit

from .configuration import FREE_QUATERNION, QUATERNION_TOLERANCE, quaternion_norm, quaternion_ok

_F64 = np.dtype(np.float64)
_ND = np.ndarray

# Called from Python the checks are compiled with plain IEEE semantics; inlined into an entry
# kernel they take its flags (jit.JIT), whose fastmath keeps NaN/inf semantics.
_CHECK = dict(cache=True, nogil=True)


@njit(**_CHECK)
def all_finite(a):
    """No NaN or inf in a (any shape)."""
    for x in a.flat:
        if not np.isfinite(x):
            return False
    return True


@njit(inline='always', **_CHECK)
def valid_state(m, q, v):
    """q (nq,) and v (nv,; None: not used) finite, the free joint's quaternion of unit length."""
    if q.shape[0] != m.nq or not all_finite(q):
        return False
    if v is not None and (v.shape[0] != m.nv or not all_finite(v)):
        return False
    return quaternion_ok(m.jtype, q)


@njit(inline='always', **_CHECK)
def valid_vector(m, x):
    """x (nv,) finite."""
    return x.shape[0] == m.nv and all_finite(x)


def as_vector(x, n, name):
    """x as a writeable float64 C-contiguous (n,) array (finiteness is checked by the kernels).
    Such an array is passed through untouched (no copy, no conversion)."""
    if (type(x) is _ND and x.dtype is _F64 and x.shape == (n,) and x.flags.c_contiguous
            and x.flags.writeable):
        return x
    try:
        a = np.ascontiguousarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f'{name} must be a numeric array of length {n}') from None
    if a.shape != (n,):
        raise ValueError(f'{name} must have shape ({n},), got {a.shape}')
    return a if a.flags.writeable else a.copy()


def check_vector(x, n, name):
    """x as a validated float64 (n,) array (shape, numeric, finite); else ValueError naming it."""
    a = as_vector(x, n, name)
    if not all_finite(a):
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


def explain(model, names, inputs):
    """Raise the ValueError for the invalid input an entry kernel reported: ``inputs`` are q
    and then (nv,) vectors, ``names`` their names."""
    check_configuration(model, inputs[0])
    for name, x in zip(names[1:], inputs[1:]):
        check_vector(x, model.nv, name)
    raise ValueError('invalid input')   # not reached: one of the checks above fails


def check_batch(model, X, n, name, configuration=False):
    """X as a validated float64 C-contiguous (K, n) array (rows finite; ``configuration``: unit
    base quaternions)."""
    try:
        X = np.ascontiguousarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f'{name} must be a numeric (K, {n}) array') from None
    if X.ndim != 2 or X.shape[1] != n:
        raise ValueError(f'{name} must have shape (K, {n}), got {X.shape}')
    if not all_finite(X):
        raise ValueError(f'{name} contains NaN or inf')
    if configuration and model.floating_base:          # all rows at once; the first bad one named
        quat = X[:, FREE_QUATERNION]
        bad = np.flatnonzero(np.abs(np.einsum('ij,ij->i', quat, quat) - 1.0) > QUATERNION_TOLERANCE)
        if bad.size:
            try:
                check_configuration(model, X[bad[0]])
            except ValueError as exc:
                raise ValueError(f'{name}[{bad[0]}]: {exc}') from None
    return X


def close_names(name, choices, what):
    """' (closest: a, b; N {what} in all)': a hint for an unknown name."""
    choices = list(choices)
    close = difflib.get_close_matches(str(name), choices, n=3, cutoff=0.5)
    hint = f'closest: {", ".join(repr(c) for c in close)}; ' if close else ''
    return f' ({hint}{len(choices)} {what} in all)'
