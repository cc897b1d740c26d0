"""A rigid payload on a link (no ROS): its 10 inertial parameters, its regressor, the node's
``payload_*`` parameters, and a payload from a few static poses.

The joint torques of a rigid body are linear in its inertial parameters
``π = [m, m c_x, m c_y, m c_z, I_xx, I_xy, I_xz, I_yy, I_yz, I_zz]`` (first moment ``h = m c``
and rotational inertia ``I_o`` about the *link origin*, link axes; Atkeson, An & Hollerbach
1986, IJRR 5(3):101-119; Khalil & Dombre 2002, Ch. 12).  The columns of that linear map are
computed here with the core library itself, as finite columns of the dynamics of the model with
unit parameter sets lumped into the link: ``attach_payload`` is exactly additive in π (the
parallel-axis theorem is linear in the parameters about a fixed point), so no separate
regressor algorithm is needed.  :func:`payload_regressor` gives the inverse-dynamics form
``τ_payload = Y(q, v, a) π``.
"""

import math
from dataclasses import dataclass

import numpy as np

from ..core.api import gravity, inverse_dynamics, observer_terms
from ..core.data import Data
from ..core.model import attach_payload
from ..core.validation import close_names
from ..core.validation import check_state
from .samples import CalibrationError, Samples

__all__ = ['PAYLOAD_PARAMETERS', 'PayloadEstimate', 'apply_payload', 'estimate_payload',
           'inertia_matrix', 'payload_from_parameters', 'payload_parameters',
           'payload_regressor', 'PayloadColumns']

PAYLOAD_PARAMETERS = ('m', 'hx', 'hy', 'hz', 'Ixx', 'Ixy', 'Ixz', 'Iyy', 'Iyz', 'Izz')
INERTIA6 = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))   # ixx, ixy, ixz, iyy, iyz, izz


def inertia_matrix(inertia6, name='inertia'):
    """The symmetric 3x3 matrix of ``[ixx, ixy, ixz, iyy, iyz, izz]`` (URDF order)."""
    a = np.asarray(inertia6, dtype=float).reshape(-1)
    if a.shape != (6,):
        raise ValueError(f'{name} must have 6 values [ixx, ixy, ixz, iyy, iyz, izz], got '
                         f'{a.size}')
    I = np.zeros((3, 3))
    for x, (i, j) in zip(a, INERTIA6):
        I[i, j] = I[j, i] = x
    return I


def skew2(c):
    """``|c|² E − c cᵀ`` (the parallel-axis term per unit mass)."""
    c = np.asarray(c, dtype=float)
    return (c @ c) * np.eye(3) - np.outer(c, c)


def payload_parameters(mass, com=(0.0, 0.0, 0.0), inertia=None):
    """π (10,) of a payload: mass, CoM (link frame), inertia 3x3 about the CoM (link axes)."""
    com = np.asarray(com, dtype=float).reshape(3)
    Ic = np.zeros((3, 3)) if inertia is None else np.asarray(inertia, dtype=float).reshape(3, 3)
    Io = Ic + float(mass) * skew2(com)
    return np.concatenate([[float(mass)], float(mass) * com, [Io[i, j] for i, j in INERTIA6]])


def payload_from_parameters(pi):
    """(mass, com (3,), inertia about the CoM (3, 3)) of π; com is zero when the mass is."""
    pi = np.asarray(pi, dtype=float).reshape(10)
    m = float(pi[0])
    com = pi[1:4] / m if m != 0.0 else np.zeros(3)
    Io = inertia_matrix(pi[4:])
    return m, com, Io - m * skew2(com)


def check_physical(mass, inertia, what='payload'):
    """Reason why (mass, inertia about the CoM) is not a rigid body, or None."""
    if mass < 0:
        return f'{what} mass must be >= 0 (got {mass:g})'
    w = np.linalg.eigvalsh(0.5 * (inertia + inertia.T))
    tol = 1e-9 * max(1.0, float(np.max(np.abs(w))))
    if np.any(w < -tol):
        return (f'{what} inertia must be positive semi-definite (eigenvalues '
                f'{np.round(w, 9).tolist()})')
    a, b, c = np.sort(w)
    if a + b < c - tol:
        return (f'{what} inertia violates the triangle inequality (principal moments '
                f'{[float(a), float(b), float(c)]}): no rigid body has it')
    if mass == 0 and np.any(np.abs(w) > tol):
        return f'{what} inertia must be zero when the mass is zero'
    return None


def apply_payload(model, link, mass, com=(0.0, 0.0, 0.0), inertia6=(0.0,) * 6):
    """The model with a payload on ``link`` from node parameters, validated.

    ``mass`` [kg] >= 0, ``com`` 3 values [m] in the link frame, ``inertia6`` =
    ``[ixx, ixy, ixz, iyy, iyz, izz]`` [kg m²] about the CoM in link axes (URDF order; all zero:
    a point mass).  ``mass == 0`` returns ``model`` unchanged.  Raises ValueError naming the
    problem (unknown link, link fixed to the world, wrong sizes, non-finite values, negative
    mass, an inertia no rigid body has).
    """
    if not isinstance(link, str) or not link:
        raise ValueError('payload_link must be a link name')
    if link not in model.link_frames:
        raise ValueError(f'payload_link {link!r} is not a link of the model {model.name!r}'
                         f'{close_names(link, model.link_frames, "frames")}')
    if model.link_frames[link][0] < 0:
        raise ValueError(f'payload_link {link!r} is fixed to the world: a payload there has '
                         'no effect on the joints')
    try:
        mass = float(mass)
    except (TypeError, ValueError):
        raise ValueError(f'payload_mass must be a number, got {mass!r}') from None
    com = np.asarray(com, dtype=float).reshape(-1)
    if com.shape != (3,):
        raise ValueError(f'payload_com must have 3 values [x, y, z], got {com.size}')
    I = inertia_matrix(inertia6, 'payload_inertia')
    if not (math.isfinite(mass) and np.all(np.isfinite(com)) and np.all(np.isfinite(I))):
        raise ValueError('payload_mass, payload_com and payload_inertia must be finite')
    reason = check_physical(mass, I)
    if reason:
        raise ValueError(reason)
    if mass == 0.0:
        return model
    return attach_payload(model, link, mass, com, I)


# ---------------------------------------------------------------------------------------------
# The payload's columns, from the core library


class PayloadColumns:
    """Unit-parameter models of a payload on ``link``: ``model`` itself, ``π₀`` (1 kg at the
    link origin) and ``π₀ + e_j`` (j = 1..9); differences of their dynamics are the columns
    of the linear map π ↦ (effect of the payload), exactly (lumping is additive in π)."""

    def __init__(self, model, link):
        if link not in model.link_frames:
            raise ValueError(f'payload link {link!r} is not a link of the model {model.name!r}')
        if model.link_frames[link][0] < 0:
            raise ValueError(f'payload link {link!r} is fixed to the world')
        self.models = [model, attach_payload(model, link, 1.0)]
        for j in range(1, 10):
            pi = np.zeros(10)
            pi[0], pi[j] = 1.0, 1.0
            m, c, Ic = payload_from_parameters(pi)
            self.models.append(attach_payload(model, link, m, c, Ic))
        self.data = [Data(m) for m in self.models]

    def _columns(self, values):
        base, unit = values[0], values[1]
        out = np.empty(base.shape + (10,))
        out[..., 0] = unit - base
        for j in range(1, 10):
            out[..., j] = values[j + 1] - unit
        return out

    def observer_terms(self, q, v):
        """(Δp, Δβ_rigid) (nv, 10): the payload's change of ``p = M v`` and of ``Cᵀ v − g`` per
        unit of each parameter."""
        p, b = [], []
        for m, d in zip(self.models, self.data):
            pk, ctv, g = observer_terms(m, q, v, data=d)
            p.append(pk.copy())
            b.append(ctv - g)
        return self._columns(p), self._columns(b)

    def inverse_dynamics(self, q, v, a):
        return self._columns([inverse_dynamics(m, q, v, a, data=d).copy()
                              for m, d in zip(self.models, self.data)])

    def gravity(self, q):
        return self._columns([gravity(m, q, data=d).copy() for m, d in zip(self.models, self.data)])


def payload_regressor(model, link, q, v, a):
    """``Y`` (nv, 10) with ``τ_payload = Y(q, v, a) π`` (π in :data:`PAYLOAD_PARAMETERS` order):
    the joint torques a payload on ``link`` adds to the inverse dynamics (Atkeson et al. 1986)."""
    q, v = check_state(model, q, v)
    return PayloadColumns(model, link).inverse_dynamics(q, v, np.asarray(a, dtype=float))


# ---------------------------------------------------------------------------------------------
# A payload from a few static poses (tool change)


@dataclass
class PayloadEstimate:
    """Result of :func:`estimate_payload`."""
    link: str
    mass: float
    com: np.ndarray
    mass_se: float
    com_se: np.ndarray
    residual_rms: float
    poses: int

    def inertia6(self):
        return [0.0] * 6


def estimate_payload(model, samples, link, max_speed=0.05):
    """Mass and CoM (link frame) of a payload on ``link`` from static or slow poses.

    At rest ``g_true(q) = τ``, and the payload's share of gravity is linear in ``(m, m c)``:
    ``τ − g(q) = G(q) [m, m c]`` (the gravity columns of the inertial-parameter regressor), solved
    by least squares over the poses.  ``samples``: a :class:`Samples`, or a sequence of
    ``(q, tau)`` pairs (``v`` taken as zero).  Samples faster than ``max_speed`` [rad/s] on any
    joint are ignored (their dynamics is not gravity only).  Needs poses in which the link has
    at least two different orientations with respect to gravity (otherwise the CoM along the
    vertical is not observable): raises :class:`CalibrationError` saying so.  Static friction
    is not modelled (it biases the estimate by at most the joints' stiction torques).
    """
    if not isinstance(samples, Samples):
        pairs = list(samples)
        if not pairs:
            raise CalibrationError('no poses given')
        q = np.array([np.asarray(p[0], dtype=float) for p in pairs])
        tau = np.array([np.asarray(p[1], dtype=float) for p in pairs])
        samples = Samples(np.arange(len(pairs), dtype=float), q, np.zeros_like(tau), tau)
    nv = int(model.nv)
    if samples.q.shape[1] != int(model.nq) or samples.tau.shape[1] != nv:
        raise CalibrationError(f'poses have {samples.q.shape[1]} positions and '
                               f'{samples.tau.shape[1]} efforts; the model needs {model.nq} '
                               f'and {nv}')
    slow = np.max(np.abs(samples.v), axis=1) <= max_speed if len(samples) else np.zeros(0, bool)
    if not np.any(slow):
        raise CalibrationError(f'no sample is static (all move faster than {max_speed:g} rad/s)')
    pc = PayloadColumns(model, link)
    rows, rhs = [], []
    for q, tau in zip(samples.q[slow], samples.tau[slow]):
        rows.append(pc.gravity(q)[:, :4])
        rhs.append(tau - gravity(model, q))
    A, b = np.concatenate(rows), np.concatenate(rhs)
    scale = np.linalg.norm(A, axis=0)
    if np.any(scale == 0):
        raise CalibrationError(f'gravity does not act on link {link!r} through the joints')
    An = A / scale
    x, _, rank, sv = np.linalg.lstsq(An, b, rcond=None)
    if rank < 4 or sv[-1] < 1e-6 * sv[0]:
        raise CalibrationError(
            f'the poses do not determine the payload on {link!r} (rank {rank} of 4): use at '
            'least two poses in which the link is oriented differently with respect to gravity '
            '(e.g. rotate the wrist by 90 degrees)')
    x = x / scale
    e = b - A @ x
    dof = max(1, b.size - 4)
    cov = np.linalg.pinv(An.T @ An) * float(e @ e) / dof / np.outer(scale, scale)
    m = float(x[0])
    if m <= 0:
        raise CalibrationError(f'the estimated payload mass is {m:.3g} kg: no payload on {link!r}')
    c = x[1:4] / m
    Jc = np.hstack([-x[1:4, None] / m ** 2, np.eye(3) / m])
    return PayloadEstimate(link, m, c, float(np.sqrt(cov[0, 0])),
                           np.sqrt(np.maximum(np.diag(Jc @ cov @ Jc.T), 0.0)),
                           float(np.sqrt(np.mean(e ** 2))), int(slow.sum()))
