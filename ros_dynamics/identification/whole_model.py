"""Identification of the whole model from one recording of free motion (no ROS).

What is identified, per body ``i`` of the model (links merged by fixed joints form one body)
and per joint ``j``:

* the ten inertial parameters ``π_i = [m, h_x, h_y, h_z, I_xx, I_xy, I_xz, I_yy, I_yz, I_zz]``
  (first moment ``h = m c`` and inertia ``I_o`` about the body origin, body axes);
* joint friction ``τ_f,j = F_v,j v_j + F_c,j tanh(v_j / ε)`` (the observer's law,
  :func:`ros_dynamics.estimation.observer.friction_torque`, whose basis gives the columns);
* the reflected rotor inertia ``I_a,j`` (armature: ``M + diag(I_a)``);
* a constant offset ``b_j`` of the measured joint torque (``τ_meas = τ + b``).

All of them enter the joint torques linearly (Atkeson, An & Hollerbach 1986; Khalil & Dombre
2002, Ch. 12), so the momentum residual of the observer with the parameters θ is
``r(θ) = r_0 + P (θ − θ_0)`` exactly as in :mod:`.calibration`: ``r_0`` the residual of the
node's pipeline with the URDF's model, the columns of ``P`` the same filter run on the change of
``p = M v`` and ``β = Cᵀv − g − τ_f`` per unit parameter.  The columns of the inertial
parameters come from the core library (the payload regressor generalised to every body): the
dynamics of models whose only inertia is a unit parameter set on one body, on all samples at
once (:func:`ros_dynamics.core.api.dynamics_batch`).

Base parameters.  Not every combination of the 10 N inertial parameters affects the joint
torques (a link's rotation about its own joint axis leaves some products unobservable; mass
near the base is invisible to gravity...).  With the columns scaled by each parameter's
natural size (``m_0``, ``m_0 L``, ``m_0 L²`` with the body's mass ``m_0`` and length ``L``,
1 N m s/rad, ...), the singular values of the scaled regressor below ``tol · σ_max``
(``tol`` = :data:`BASE_TOLERANCE` = 1e-3) span the directions the recording does not determine;
the others are the identifiable (base) combinations (Gautier 1990 computes them by QR; the SVD
gives the same space, Khalil & Dombre 2002, Sec. 12.4).  Their number, the condition number of
the base part and the parameters with no component in the unidentified space are reported.

Physical consistency and regularisation.  A body is physically consistent when its
pseudo-inertia ``J(π) = [[½ tr(I_o) 1 − I_o, h], [hᵀ, m]]`` is positive semi-definite (Wensing,
Kim & Slotine 2017: equivalent to a positive mass and inertias satisfying the triangle
inequalities for some mass distribution), a linear matrix inequality in π.  The fit solves the
convex problem

    min ‖W (r_0 + P (θ − θ_0))‖² + λ ‖S⁻¹ (θ − θ_0)‖²,   λ = (tol σ_max)²,
    s.t. J(π_i) ⪰ δ_i 1 (δ_i = 1e-6 m_0 L²),  F_v, F_c, I_a >= 0,

(cvxpy with the Clarabel interior-point solver, the data term compressed to p rows through the
Gram matrix's eigen-decomposition).  The prior pulls exactly the directions the data do not
determine (singular values ``≲ tol σ_max``) toward the URDF, so what the motion does not
excite stays as the URDF says.  A link may end up lighter than its URDF.
"""

from dataclasses import dataclass, field

import numpy as np

from ..core.api import dynamics_batch
from .calibration import VELOCITY_EPS   # the observer's Coulomb smoothing, one constant
from ..estimation.observer import filtered_columns, friction_torque
from .payload import INERTIA6, inertia_matrix, skew2
from .samples import CalibrationError

__all__ = ['BASE_TOLERANCE', 'Identification', 'identify', 'identify_recording',
           'payload_against_reference', 'inertial_parameters',
           'body_inertia', 'pseudo_inertia', 'pseudo_inertia_parameters', 'regressor_columns',
           'consistent_fit', 'ParameterVector', 'parameter_vector']

#: relative singular value below which a direction of the scaled regressor counts as not
#: identified (and is held at the URDF by the prior)
BASE_TOLERANCE = 1e-3


# ---------------------------------------------------------------------------------------------
# Inertial parameters and the pseudo-inertia (Wensing, Kim & Slotine 2017)


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


def _pseudo_basis():
    """E (10, 4, 4) with ``J(π) = Σ_k π_k E_k`` (J is linear in π)."""
    return np.stack([pseudo_inertia(e) for e in np.eye(10)])


@dataclass
class ParameterVector:
    """The identification's parameters ``θ = [π_1 … π_N, F_v, F_c, I_a, b]`` (10 per body, then
    per joint: viscous and Coulomb friction, armature, torque offset): their ``names``, the
    URDF's inertial parameters ``pi0`` (N, 10), ``theta0`` (the URDF, the model's own armature),
    the column ``scale``, which entries are ``free`` (fitted) and which are ``nonnegative``
    (friction and armature)."""
    names: list
    pi0: np.ndarray
    theta0: np.ndarray
    scale: np.ndarray
    free: np.ndarray
    nonnegative: np.ndarray


def parameter_vector(model, friction=True, armature=True, offset=True):
    """The :class:`ParameterVector` of ``model`` (``friction``, ``armature``, ``offset``: whether
    those entries are fitted)."""
    N, nj = model.nbodies, len(model.joint_names)
    nb = int(model.nv) - nj
    names = [f'{b}.{p}' for b in model.body_names
             for p in ('m', 'hx', 'hy', 'hz', 'Ixx', 'Ixy', 'Ixz', 'Iyy', 'Iyz', 'Izz')]
    names += [f'{k}[{j}]' for k in ('Fv', 'Fc', 'Ia', 'b') for j in model.joint_names]
    pi0 = inertial_parameters(model)
    theta0 = np.concatenate([pi0.reshape(-1), np.zeros(4 * nj)])
    theta0[10 * N + 2 * nj:10 * N + 3 * nj] = model.armature[nb:]     # the model's own
    scale = np.concatenate([parameter_scales(model, pi0), np.ones(4 * nj)])
    free = np.ones(len(names), dtype=bool)
    if not friction:
        free[10 * N:10 * N + 2 * nj] = False
    if not armature:
        free[10 * N + 2 * nj:10 * N + 3 * nj] = False
    if not offset:
        free[10 * N + 3 * nj:] = False
    nonnegative = np.zeros(len(names), dtype=bool)
    nonnegative[10 * N:10 * N + 3 * nj] = True
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
    E = _pseudo_basis()
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


# ---------------------------------------------------------------------------------------------
# The regressor's columns from the core library


def unit_models(model, body):
    """Models whose only inertia is on ``body``: 1 kg at its origin (π₀), and π₀ + e_j."""
    N = model.nbodies
    zero = dict(mass=np.zeros(N), com=np.zeros((N, 3)), inertia=np.zeros((N, 3, 3)))
    models = []
    for j in range(10):
        pi = np.zeros(10)
        pi[0] = 1.0
        if j > 0:
            pi[j] += 1.0
        m, c = pi[0], pi[1:4] / pi[0]
        Ic = inertia_matrix(pi[4:]) - m * skew2(c)
        mass, com, inertia = (zero[k].copy() for k in ('mass', 'com', 'inertia'))
        mass[body], com[body], inertia[body] = m, c, Ic
        models.append(model.copy(mass=mass, com=com, inertia=inertia,
                                 armature=np.zeros(int(model.nv))))
    return models


def regressor_columns(model, q, v, body):
    """Per-sample changes of ``p = M v`` and of ``Cᵀv − g`` per unit inertial parameter of
    ``body``: two arrays (T, nv, 10), columns in
    :data:`ros_dynamics.identification.payload.PAYLOAD_PARAMETERS` order.  Exact: the dynamics is
    linear in π, and each column is the dynamics of a model whose only inertia is on ``body``
    (1 kg at its origin, then that plus a unit of one parameter)."""
    T, nv = q.shape[0], int(model.nv)
    P = np.empty((T, nv, 10))
    B = np.empty((T, nv, 10))
    for j, mdl in enumerate(unit_models(model, body)):
        d = dynamics_batch(mdl, q, v)
        P[:, :, j] = np.einsum('kij,kj->ki', d.M, v)
        B[:, :, j] = np.einsum('kji,kj->ki', d.C, v) - d.g
    P[:, :, 1:] -= P[:, :, :1]
    B[:, :, 1:] -= B[:, :, :1]
    return P, B


def _joint_columns(model, v, velocity_eps):
    """(P, B) (T, nv, 4 nj) of F_v, F_c (``β`` gains ``−τ_f``: basis of ``friction_torque``),
    armature (``p`` gains ``I_a v``) and torque offset (``τ`` loses ``b``: ``β`` gains ``−b``)."""
    T, nv = v.shape
    nj = len(model.joint_names)
    nb = nv - nj
    P = np.zeros((T, nv, 4 * nj))
    B = np.zeros((T, nv, 4 * nj))
    vj = v[:, nb:]
    for j in range(nj):
        B[:, nb + j, j] = -friction_torque(vj[:, j], 1.0, 0.0, velocity_eps)
        B[:, nb + j, nj + j] = -friction_torque(vj[:, j], 0.0, 1.0, velocity_eps)
        P[:, nb + j, 2 * nj + j] = vj[:, j]
        B[:, nb + j, 3 * nj + j] = -1.0
    return P, B


def _filter(t, P, B, restart, gain, keep, bridge=None):
    """The observer's filter on the columns (observer.filtered_columns); returns the rows
    ``keep`` (indices)."""
    out = np.empty((keep.size,) + P.shape[1:])
    pos = np.full(P.shape[0], -1)
    pos[keep] = np.arange(keep.size)
    for k, cur in enumerate(filtered_columns(t, zip(P, B), restart, gain, bridge)):
        if pos[k] >= 0:
            out[pos[k]] = cur
    return out


# ---------------------------------------------------------------------------------------------
# The fit


@dataclass
class Identification:
    """Result of :func:`identify` (SI units)."""
    joint_names: list
    body_names: list
    parameters: np.ndarray              # (N, 10) identified π per body
    urdf_parameters: np.ndarray         # (N, 10) the URDF's
    friction_viscous: np.ndarray
    friction_coulomb: np.ndarray
    armature: np.ndarray
    torque_offset: np.ndarray
    rank: int = 0                       # number of identified directions (base parameters)
    n_parameters: int = 0
    condition: float = float('nan')     # condition number of the identified (base) part
    identifiable: list = field(default_factory=list)   # names of individually determined ones
    velocity_eps: float = VELOCITY_EPS
    gain: np.ndarray = None
    fit_rows: np.ndarray = None         # sample indices the fit used
    test_rows: np.ndarray = None        # held-out sample indices
    before: dict = field(default_factory=dict)   # held-out residual statistics, URDF model
    after: dict = field(default_factory=dict)    # held-out, identified model
    residual_before_test: np.ndarray = None       # (n, nj) held-out residual, URDF model
    residual_after_test: np.ndarray = None        # (n, nj) held-out residual, identified
    thresholds: np.ndarray = None
    threshold_velocity: np.ndarray = None   # state-dependent terms (rules.threshold_at)
    threshold_torque: np.ndarray = None
    check: object = None                    # the held-out replay (check.Check)
    held_out: str = ''                      # what was held out (the report says it)
    notes: list = field(default_factory=list)

    def node_parameters(self):
        """The ``dynamics`` node's parameters of this identification (the inertials go into the
        URDF: :func:`ros_dynamics.identification.urdf_inertials.replace_inertials`)."""
        return {'observer_gain': [float(x) for x in np.atleast_1d(self.gain)],
                'observer_friction_viscous': [float(x) for x in self.friction_viscous],
                'observer_friction_coulomb': [float(x) for x in self.friction_coulomb],
                'observer_torque_offset': [float(x) for x in self.torque_offset],
                'joint_armature': [float(x) for x in self.armature],
                'contact_threshold': [float(x) for x in self.thresholds],
                **_state_terms(self.threshold_velocity, self.threshold_torque)}

    def model(self, model):
        """``model`` with the identified inertials and armature (what the node builds from the
        identified URDF and ``joint_armature``; friction is an observer setting)."""
        mass, com, inertia = model.mass.copy(), model.com.copy(), model.inertia.copy()
        for i, pi in enumerate(self.parameters):
            mass[i], com[i], inertia[i] = body_inertia(pi)
        armature = model.armature.copy()
        armature[int(model.nv) - len(self.joint_names):] = self.armature
        return model.copy(mass=mass, com=com, inertia=inertia, armature=armature)

    def summary(self):
        f = lambda a: '[' + ', '.join(f'{x:.4g}' for x in a) + ']'  # noqa: E731
        out = [f'base parameters: {self.rank} of {self.n_parameters} combinations identified '
               f'(tolerance {BASE_TOLERANCE:g} of the largest singular value), condition number '
               f'{self.condition:.3g}']
        out.append(f'individually identified: {len(self.identifiable)} '
                   f'({", ".join(self.identifiable[:12])}{" ..." if len(self.identifiable) > 12 else ""})')
        for i, name in enumerate(self.body_names):
            m0, m1 = self.urdf_parameters[i, 0], self.parameters[i, 0]
            c1 = self.parameters[i, 1:4] / m1
            out.append(f'  {name}: mass {m0:.4g} -> {m1:.4g} kg, CoM {f(c1)} m')
        out.append(f'friction viscous [N m s/rad]: {f(self.friction_viscous)}')
        out.append(f'friction Coulomb [N m]:       {f(self.friction_coulomb)}')
        out.append(f'armature [kg m²]:             {f(self.armature)}')
        out.append(f'torque offset [N m]:          {f(self.torque_offset)}')
        if self.held_out:
            out.append(f'held out: {self.held_out}')
        for k in ('before', 'after'):
            s = getattr(self, k)
            if s:
                out.append(f'held-out residual {k:6s}: rms {f(s["rms"])}, max |r| '
                           f'{f(s["max"])} N m' + (' (replayed through the node\'s cycle)'
                                                   if k == 'after' and self.check else ''))
        if self.thresholds is not None:
            out.append(f'contact_threshold {f(self.thresholds)} N m'
                       + (f' + {f(self.threshold_velocity)} |v| + {f(self.threshold_torque)} '
                          '|tau|' if _state_terms(self.threshold_velocity,
                                                  self.threshold_torque) else ''))
        out += self.check.summary() if self.check is not None else []
        return out + self.notes


def _state_terms(velocity, torque):
    """The state-dependent threshold parameters, when any is non-zero."""
    if velocity is None or not (np.any(velocity) or np.any(torque)):
        return {}
    return {'contact_threshold_velocity': [float(x) for x in velocity],
            'contact_threshold_torque': [float(x) for x in torque]}


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


def identify(model, samples, residual, restart, gain=50.0, holdout=0.3, max_rows=5000,
             friction=True, armature=True, offset=True, velocity_eps=VELOCITY_EPS,
             rows_mask=None, bridge=None):
    """Fit every body's inertial parameters, joint friction, armature and torque offsets.

    ``residual`` (T, nv), ``restart`` (T,) and ``bridge`` (T,) or None: the node pipeline's
    residual with the URDF's model on ``samples``, where it restarted and where it bridged a
    gap (:func:`.calibration.observer_residuals`).
    The first ``1 − holdout`` of the recording is fitted, the rest held out for the report.
    ``rows_mask`` (T,) bool: samples allowed in the fit (e.g. contact stretches excluded).
    Returns an :class:`Identification`; raises :class:`CalibrationError` when the recording
    cannot give it.
    """
    nv, N = int(model.nv), model.nbodies
    nj = len(model.joint_names)
    nb = nv - nj
    T = len(samples)
    gain = np.broadcast_to(np.asarray(gain, dtype=float), (nv,)).copy()
    if not 0.0 <= holdout < 1.0:
        raise ValueError('holdout must be in [0, 1)')
    valid = np.all(np.isfinite(residual), axis=1) & ~restart
    if rows_mask is not None:
        valid &= rows_mask
    stride = max(1, -(-T // max_rows))
    keep = np.arange(0, T, stride)
    t_split = samples.t[0] + (1.0 - holdout) * (samples.t[-1] - samples.t[0])
    fit_rows = keep[valid[keep] & (samples.t[keep] <= t_split)]
    test_rows = keep[valid[keep] & (samples.t[keep] > t_split)]
    if fit_rows.size < 50:
        raise CalibrationError(f'{fit_rows.size} usable samples to fit: too few')
    # columns: 10 N inertial, then Fv, Fc, armature, offset per joint
    rho = np.empty((keep.size, nv, 10 * N + 4 * nj))
    for i in range(N):
        P, B = regressor_columns(model, samples.q, samples.v, i)
        rho[:, :, 10 * i:10 * i + 10] = _filter(samples.t, P, B, restart, gain, keep, bridge)
    P, B = _joint_columns(model, samples.v, velocity_eps)
    rho[:, :, 10 * N:] = _filter(samples.t, P, B, restart, gain, keep, bridge)
    del P, B
    par = parameter_vector(model, friction, armature, offset)
    names, pi0, theta0, scale, free = par.names, par.pi0, par.theta0, par.scale, par.free
    npar = len(names)
    pos = {k: n for n, k in enumerate(keep)}
    fi = np.array([pos[k] for k in fit_rows])
    A = rho[fi][:, nb:, :].reshape(-1, npar)
    b = residual[fit_rows][:, nb:].reshape(-1)
    # rows weighted by 1 / (the joint's nominal residual rms), so every joint counts
    w = 1.0 / np.maximum(np.sqrt(np.mean(residual[fit_rows][:, nb:] ** 2, axis=0)), 1e-6)
    W = np.tile(w, fit_rows.size)
    As = (A * W[:, None]) * scale
    bs = b * W

    def solve(sel):
        """The fit on the rows ``sel``: (x, rank, sv, determined, status)."""
        return consistent_fit(As[sel], bs[sel], theta0, scale, N, par.nonnegative, free)

    # Robustly (least trimmed squares over 0.25 s blocks, Rousseeuw 1984): blocks whose fitted
    # residual is far above the typical block's (mean square > 25x the median on a joint:
    # rms 5x, e.g. a contact)
    # are left out and the fit repeated, at most twice.
    use = np.ones(fit_rows.size, dtype=bool)
    for _ in range(3):
        x, rank, sv, determined, status = solve(np.repeat(use, nj))
        e = (As[:, free] @ x[free] + bs).reshape(fit_rows.size, nj)
        keep = typical_blocks(samples.t[fit_rows], e)
        if np.array_equal(keep, use) or keep.sum() < 0.5 * fit_rows.size:
            break
        use = keep
    dropped = fit_rows.size - int(use.sum())

    theta = theta0 + x * scale
    theta[par.nonnegative] = np.maximum(theta[par.nonnegative], 0.0)   # friction, armature
    dtheta = theta - theta0
    ident = Identification(
        list(model.joint_names), list(model.body_names), theta[:10 * N].reshape(N, 10), pi0,
        theta[10 * N:10 * N + nj], theta[10 * N + nj:10 * N + 2 * nj],
        theta[10 * N + 2 * nj:10 * N + 3 * nj], theta[10 * N + 3 * nj:], rank=rank,
        n_parameters=int(free.sum()), condition=float(sv[0] / sv[rank - 1]) if rank else float('inf'),
        identifiable=[n for n, d in zip(names, determined) if d and free[names.index(n)]],
        velocity_eps=velocity_eps, gain=gain, fit_rows=fit_rows, test_rows=test_rows)
    if status != 'optimal':
        ident.notes.append(f'note: the consistent fit ended {status}')
    if dropped:
        ident.notes.append(f'{dropped} of {fit_rows.size} fitted samples left out: 0.25 s blocks '
                           'whose residual stays far above the rest (contact or a large '
                           'unmodelled effect)')
    if test_rows.size:
        ti = np.array([pos[k] for k in test_rows])
        r_before = residual[test_rows][:, nb:]
        r_after = r_before + rho[ti][:, nb:, :] @ dtheta
        ident.before = _stats(r_before)
        ident.after = _stats(r_after)
        ident.residual_before_test = r_before
        ident.residual_after_test = r_after
    return ident


def identify_recording(model, samples, gain=50.0, holdout=0.3, margin=2.0, floor=0.2,
                       state_thresholds='auto', held_out=None, **options):
    """:func:`identify` on a recording: the node pipeline's residual with the URDF's model
    (:func:`.calibration.observer_residuals`), the fit on the first ``1 − holdout`` of the
    recording, then the held-out rest replayed through the node's cycle with the identified
    model, friction, armature and torque offsets: the thresholds cover every held-out sample
    (:func:`.thresholds.fit_state_thresholds`; state-dependent where the data ask for it,
    ``state_thresholds``), except stretches called contact with the evidence
    :func:`.check.contact_stretches` reports, and the held-out replay with them is the check
    (:func:`.check.check_recording`, in ``ident.check``).

    ``held_out``: a second recording (:class:`.samples.Samples`) of *other* motion of the same
    robot: then the whole of ``samples`` is fitted and the held-out figures, the thresholds and
    the check come from ``held_out`` (motion the fit has not seen, not the tail of the same
    excitation)."""
    from .calibration import increasing_in_time, observer_residuals
    nv = int(model.nv)
    for what, smp in (('samples', samples), ('held-out samples', held_out)):
        if smp is not None and (smp.q.shape[1] != int(model.nq) or smp.v.shape[1] != nv):
            raise CalibrationError(f'{what} have {smp.q.shape[1]} positions and '
                                   f'{smp.v.shape[1]} velocities; the model needs {model.nq} '
                                   f'and {nv}')
    if len(samples) < 200:
        raise CalibrationError(f'{len(samples)} samples: too few to identify a model (need '
                               '>= 200, better tens of seconds of exciting motion)')
    samples = increasing_in_time(samples)
    base = observer_residuals(model, samples, gain)
    ident = identify(model, samples, base['r'], base['restart'], gain=gain,
                     holdout=0.0 if held_out is not None else holdout, bridge=base['bridge'],
                     **options)
    ident.notes += samples.notes
    if held_out is not None:
        if len(held_out) < 50:
            raise CalibrationError(f'{len(held_out)} held-out samples: too few (need >= 50)')
        held = increasing_in_time(held_out)
        ident.held_out = (f'a second recording ({len(held)} samples, '
                          f'{held.t[-1] - held.t[0]:.1f} s: other motion)')
        ident.notes += held.notes
    else:
        if ident.test_rows is None or not ident.test_rows.size:
            raise CalibrationError('no held-out samples to derive the thresholds from '
                                   '(holdout 0 and no second recording)')
        held = samples.slice(samples.t[int(ident.test_rows[0])] - samples.t[0])
        ident.held_out = (f'the last {holdout:.0%} of the recording ({len(held)} samples: the '
                          'same motion as the fit)')
    _judge_held_out(model, ident, held, gain, margin, floor, state_thresholds)
    return ident


def _judge_held_out(model, ident, held, gain, margin, floor, state_thresholds):
    """The held-out samples replayed through the node's cycle with the URDF's and with the
    identified model: the residual statistics, the thresholds and the check."""
    from .calibration import observer_residuals
    from .check import check_recording, contact_stretches
    from .thresholds import fit_state_thresholds
    nb = int(model.nv) - len(model.joint_names)
    names = list(model.joint_names)
    idm = ident.model(model)
    settings = dict(gain=gain, friction_viscous=ident.friction_viscous,
                    friction_coulomb=ident.friction_coulomb, torque_offset=ident.torque_offset)
    after = observer_residuals(idm, held, **settings)['r']
    ok = np.all(np.isfinite(after), axis=1)
    t_h = held.t[ok]
    r_h, v_h = after[ok][:, nb:], held.v[ok][:, nb:]
    tau_h = held.tau[ok][:, nb:]
    contact, found = contact_stretches(t_h, r_h, v_h, tau_h, names)
    for st in found:
        ident.notes.append(f'held-out {st["start"]:.2f}-{st["stop"]:.2f} s from its start '
                           f'({st["duration"]:.2f} s): |r| up to '
                           f'{np.round(st["peak"], 3).tolist()} N m, '
                           + ('called contact, left out of the thresholds: ' if st['contact']
                              else 'stands out, kept in the thresholds: ') + st['why'])
    th = fit_state_thresholds(t_h[~contact], r_h[~contact], v_h[~contact], tau_h[~contact],
                              margin=margin, floor=floor, state=state_thresholds, names=names)
    ident.notes += th.notes
    ident.thresholds, ident.threshold_velocity, ident.threshold_torque = (
        th.base, th.velocity, th.torque)
    ident.after = _stats(r_h[~contact])
    rb = observer_residuals(model, held, gain)['r'][ok][:, nb:][~contact]
    ident.before = _stats(rb[np.all(np.isfinite(rb), axis=1)])
    ident.check = check_recording(
        idm, held, threshold=th.base, threshold_velocity=th.velocity,
        threshold_torque=th.torque,
        label=f'the held-out data, {ident.held_out} (the node\'s cycle, identified model and '
              'thresholds)', **settings)


def typical_blocks(t, e, block=0.25, ratio=25.0):
    """Mask of the rows of ``e`` (n, nj) in 0.25 s blocks whose mean square on every joint is
    at most ``ratio`` x that of the median block (a contact shows on some joints only)."""
    k = np.floor((t - t[0]) / block).astype(int)
    n = k.max() + 1
    cnt = np.maximum(np.bincount(k, minlength=n), 1)
    ms = np.stack([np.bincount(k, weights=e[:, j] ** 2, minlength=n) for j in range(e.shape[1])],
                  axis=1) / cnt[:, None]
    have = np.bincount(k, minlength=n) > 0
    score = np.max(ms / np.maximum(np.median(ms[have], axis=0), 1e-300), axis=1)
    ok = score <= ratio
    return ok[k]


def _stats(r):
    return {'rms': np.sqrt(np.mean(r ** 2, axis=0)), 'max': np.max(np.abs(r), axis=0)}


def payload_against_reference(model, samples, reference, link, gain=50.0, robot=None,
                              **options):
    """A payload on ``link`` as the difference between two recordings of the same robot: the
    robot's own model (every link, armature, torque offsets) identified on ``reference``
    (without the payload, :func:`identify_recording`), then the payload's ten parameters and
    the friction fitted on ``samples`` (with it) against that model
    (:func:`.calibration.calibrate`, with its standard errors), the torque offsets of the
    reference removed from the measured torques (``robot``: that identification when already
    made).  Returns (Identification of the robot, Calibration of the payload)."""
    from .calibration import calibrate
    from .samples import Samples
    if robot is None:
        robot = identify_recording(model, reference, gain=gain)
    nb = int(model.nv) - len(model.joint_names)
    tau = samples.tau.copy()
    tau[:, nb:] -= robot.torque_offset
    shifted = Samples(samples.t, samples.q, samples.v, tau, samples.names, samples.t0_ns,
                      samples.notes)
    cal = calibrate(robot.model(model), shifted, link, gain=gain, model_error=0.0, **options)
    return robot, cal
