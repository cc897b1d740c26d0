"""Inertial parameters of rigid bodies, their physical consistency and the regularised,
physically consistent least squares of the whole-model identification (no ROS).

Per body ``π = [m, h_x, h_y, h_z, I_xx, I_xy, I_xz, I_yy, I_yz, I_zz]`` (first moment ``h = m c``
and inertia ``I_o`` about the body origin, body axes; Atkeson, An & Hollerbach 1986).  A body is
physically consistent when its pseudo-inertia ``J(π) = [[½ tr(I_o) 1 − I_o, h], [hᵀ, m]]`` is
positive semi-definite (Wensing, Kim & Slotine 2017: equivalent to a positive mass and inertias
satisfying the triangle inequalities for some mass distribution), a linear matrix inequality in
π.  :func:`consistent_fit` solves the convex problem

    min ‖W (r_0 + P (θ − θ_0))‖² + λ ‖S⁻¹ (θ − θ_0)‖²,   λ = (tol σ_max)²,
    s.t. J(π_i) ⪰ δ_i 1 (δ_i = 1e-6 m_0 L²),  F_v, F_c, I_a >= 0,

(cvxpy with the Clarabel interior-point solver, the data term compressed to p rows through the
Gram matrix's eigen-decomposition).  The prior pulls exactly the directions the data do not
determine (singular values ``≲ tol σ_max``, :data:`BASE_TOLERANCE`; Gautier 1990, Khalil &
Dombre 2002, Sec. 12.4) toward the URDF, so what the motion does not excite stays as the URDF
says.
"""

from dataclasses import dataclass

import numpy as np

from .payload import INERTIA6, inertia_matrix, skew2
from .samples import CalibrationError

__all__ = ['BASE_TOLERANCE', 'ParameterVector', 'body_inertia', 'consistent_fit',
           'inertial_parameters', 'parameter_scales', 'parameter_vector', 'pseudo_inertia',
           'pseudo_inertia_parameters']

#: relative singular value below which a direction of the scaled regressor counts as not
#: identified (and is held at the URDF by the prior)
BASE_TOLERANCE = 1e-3


def inertial_parameters(model):
    """(N, 10) π of every body: ``[m, m c, I_o]`` with ``I_o`` about the body origin."""
    out = np.zeros((model.nbodies, 10))
    for i in range(model.nbodies):
        m, c = float(model.mass[i]), model.com[i]
        Io = model.inertia[i] + m * skew2(c)
        out[i] = np.concatenate([[m], m * c, [Io[a, b] for a, b in INERTIA6]])
    return out


def body_inertia(pi):
    """(mass, CoM, inertia about the CoM) of π (10,) (``mass > 0``)."""
    m = float(pi[0])
    c = pi[1:4] / m
    return m, c, inertia_matrix(pi[4:]) - m * skew2(c)


def pseudo_inertia(pi):
    """The pseudo-inertia ``J = [[Σ, h], [hᵀ, m]]``, ``Σ = ½ tr(I_o) 1 − I_o`` of π: a rigid body
    has ``J ⪰ 0`` (Wensing, Kim & Slotine 2017)."""
    m, h, Io = pi[0], pi[1:4], inertia_matrix(pi[4:])
    J = np.zeros((4, 4))
    J[:3, :3] = 0.5 * np.trace(Io) * np.eye(3) - Io
    J[:3, 3] = J[3, :3] = h
    J[3, 3] = m
    return J


def pseudo_inertia_parameters(J):
    """π of a pseudo-inertia ``J = [[Σ, h], [hᵀ, m]]`` with ``I_o = tr(Σ) 1 − Σ``."""
    S = J[:3, :3]
    Io = np.trace(S) * np.eye(3) - S
    return np.concatenate([[J[3, 3]], J[:3, 3], [Io[a, b] for a, b in INERTIA6]])


def pseudo_basis():
    """E (10, 4, 4) with ``J(π) = Σ_k π_k E_k`` (J is linear in π)."""
    return np.stack([pseudo_inertia(e) for e in np.eye(10)])


@dataclass
class ParameterVector:
    """The identification's parameters ``θ = [π_1 … π_N, F_v, F_c, I_a, b (, F_l)]`` (10 per
    body, then per joint: viscous and Coulomb friction, armature, torque offset and, when asked,
    a Coulomb friction growing with the joint's load torque): their ``names``, the
    URDF's inertial parameters ``pi0`` (N, 10), ``theta0`` (the URDF, the model's own armature),
    the column ``scale``, which entries are ``free`` (fitted) and which are ``nonnegative``
    (friction and armature)."""
    names: list
    pi0: np.ndarray
    theta0: np.ndarray
    scale: np.ndarray
    free: np.ndarray
    nonnegative: np.ndarray


def parameter_vector(model, friction=True, armature=True, offset=True, load_friction=False):
    """The :class:`ParameterVector` of ``model`` (``friction``, ``armature``, ``offset``: whether
    those entries are fitted; ``load_friction``: whether the vector has the ``F_l`` entries, of
    natural size 0.1 N m per N m)."""
    N, nj = model.nbodies, len(model.joint_names)
    nb = int(model.nv) - nj
    kinds = ('Fv', 'Fc', 'Ia', 'b') + (('Fl',) if load_friction else ())
    names = [f'{b}.{p}' for b in model.body_names
             for p in ('m', 'hx', 'hy', 'hz', 'Ixx', 'Ixy', 'Ixz', 'Iyy', 'Iyz', 'Izz')]
    names += [f'{k}[{j}]' for k in kinds for j in model.joint_names]
    pi0 = inertial_parameters(model)
    theta0 = np.concatenate([pi0.reshape(-1), np.zeros(len(kinds) * nj)])
    theta0[10 * N + 2 * nj:10 * N + 3 * nj] = model.armature[nb:]     # the model's own
    scale = np.concatenate([parameter_scales(model, pi0), np.ones(4 * nj),
                            np.full(nj if load_friction else 0, 0.1)])
    free = np.ones(len(names), dtype=bool)
    if not friction:
        free[10 * N:10 * N + 2 * nj] = False
        free[10 * N + 4 * nj:] = False
    if not armature:
        free[10 * N + 2 * nj:10 * N + 3 * nj] = False
    if not offset:
        free[10 * N + 3 * nj:10 * N + 4 * nj] = False
    nonnegative = np.zeros(len(names), dtype=bool)
    nonnegative[10 * N:10 * N + 3 * nj] = True
    nonnegative[10 * N + 4 * nj:] = True
    return ParameterVector(names, pi0, theta0, scale, free, nonnegative)


def consistent_fit(As, bs, theta0, scale, nbodies, nonnegative, free=None, tol=BASE_TOLERANCE):
    """``x`` minimising ``‖As x + bs‖² + λ² ‖x‖²`` (``θ = θ0 + scale x``, ``λ = tol σ_max``)
    subject to every body's pseudo-inertia ``J(π_i) ⪰ δ_i 1`` (``δ_i`` 1e-6 of its inertia
    scale) and ``θ[nonnegative] >= 0``; the data term compressed to p rows through the Gram
    matrix: ``‖Af x + bs‖² = ‖R x + r‖² + const``.  Physically consistent (Wensing, Kim &
    Slotine 2017) and regularised toward the URDF, a convex problem (cvxpy, Clarabel); the base
    parameters from the singular values of the scaled regressor's free columns (the
    eigenvalues of its Gram matrix, p x p: cheap for long recordings).  Returns (x, rank,
    singular values, determined (p,) bool, solver status)."""
    import cvxpy as cp
    npar = As.shape[1]
    free = np.ones(npar, dtype=bool) if free is None else free
    Af = As[:, free]
    G, g = Af.T @ Af, Af.T @ bs
    lam2, V = np.linalg.eigh(G)
    lam2, V = np.maximum(lam2[::-1], 0.0), V[:, ::-1]
    sv = np.sqrt(lam2)
    rank = int(np.sum(sv > tol * sv[0]))
    determined = np.zeros(npar, dtype=bool)
    null = V[:, rank:]
    determined[free] = np.linalg.norm(null, axis=1) < 0.1 if null.size else True
    nf = int(free.sum())
    pos = sv > 1e-12 * sv[0]
    R = sv[:, None] * V.T
    rb = np.zeros(nf)
    rb[pos] = (V.T @ g)[pos] / sv[pos]
    xv = cp.Variable(nf)
    full = np.zeros((npar, nf))
    full[np.flatnonzero(free), np.arange(nf)] = 1.0
    th = theta0 + cp.multiply(scale, full @ xv)
    E = pseudo_basis()
    cons = [sum(th[10 * i + j] * E[j] for j in range(10)) >> 1e-6 * scale[10 * i + 4] * np.eye(4)
            for i in range(nbodies)]
    if np.any(nonnegative):
        cons.append(th[np.flatnonzero(nonnegative)] >= 0)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(R @ xv + rb)
                                  + (tol * sv[0]) ** 2 * cp.sum_squares(xv)), cons)
    try:
        prob.solve(solver=cp.CLARABEL)
    except cp.error.SolverError as exc:
        raise CalibrationError(f'the physically consistent fit failed: {exc}') from None
    if xv.value is None:
        raise CalibrationError(f'the physically consistent fit failed ({prob.status})')
    x = np.zeros(npar)
    x[free] = xv.value
    return x, rank, sv, determined, prob.status


def parameter_scales(model, pi0):
    """The natural size of each parameter (module docstring): mass ``m_0``, first moment
    ``m_0 L``, inertia ``m_0 L²``; ``m_0`` at least 1 % of the robot's mass, ``L`` the body's
    distance to its child joints or its CoM, at least 5 cm."""
    N = model.nbodies
    total = max(float(model.mass.sum()), 1e-3)
    s = np.empty((N, 10))
    for i in range(N):
        kids = [model.X_p[k] for k in range(N) if model.parent[k] == i]
        L = max([0.05, float(np.linalg.norm(model.com[i]))] + [float(np.linalg.norm(x)) for x in kids])
        m0 = max(float(pi0[i, 0]), 0.01 * total)
        s[i] = [m0] + [m0 * L] * 3 + [m0 * L * L] * 6
    return s.reshape(-1)
