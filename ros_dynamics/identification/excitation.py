"""Exciting trajectories for identification: optimised finite Fourier series (Swevers, Ganseman,
Tükel, De Schutter & Van Brussel 1997) (no ROS).

Each joint follows a periodic series with ``L`` harmonics of the fundamental ``ω_f = 2π/T``
(Swevers et al. 1997, eq. 18):

    q_j(t) = q_j0 + Σ_l  a_jl/(ω_f l) sin(ω_f l t) − b_jl/(ω_f l) cos(ω_f l t),

so positions, velocities and accelerations are linear in the coefficients ``(q_0, a, b)`` and
the limits (positions with a margin, velocities, accelerations) are linear inequalities at the
sample times.  Periodic, the trajectory can be repeated and averaged, and starts and ends at
rest-free but continuous states.  The coefficients minimise the condition number of the scaled
identification regressor ``Y`` (the joint torques' columns of every body's ten inertial
parameters, the friction and the armature at the sample times, from the core library as in
:mod:`.whole_model`) over its identifiable part (the directions above the base-parameter
tolerance at the start), with SLSQP under the linear limits (scipy), given the exact gradient.

The gradient.  The cost is ``log σ_1 − log σ_r`` (``σ_r`` the smallest identifiable singular
value).  A simple singular value ``σ = uᵀ Y v`` has ``dσ = uᵀ dY v`` (its singular vectors ``u``,
``v``), and ``Y`` is linear in the parameters, so ``Y v = τ(q, q̇, q̈; θ)`` is the inverse
dynamics of ONE model whose parameters are ``θ = S v`` (``S`` the columns' scales; any vector,
not a physical body: it is split as ``(θ + θ_s) − θ_s`` with ``θ_s`` a body at each origin,
heavy enough that both parts are bodies).  Hence, per sample ``k`` and joint ``j`` of the
coefficients,

    dσ/dx = Σ_k u_kᵀ [∂τ/∂q B_q + ∂τ/∂q̇ B_v + ∂τ/∂q̈ B_a]_k,

with ``B_q, B_v, B_a`` the series' linear maps (eq. 18 and its derivatives) and the partial
derivatives of the inverse dynamics of ``θ``'s inertial part from the core's analytical RNEA
derivatives (Carpentier & Mansard 2018), plus the friction's ``F_v + F_c (1 − tanh²(q̇/ε))/ε``
and the armature's ``I_a`` on the diagonals.  No finite difference: two singular values cost
four sweeps of the derivatives over the samples, where differencing the cost cost one regressor
per coefficient.
"""

import numpy as np

from ..core.api import dynamics_batch
from ..core.derivatives import inverse_dynamics_derivatives_batch
from .payload import skew2
from .inertial_parameters import BASE_TOLERANCE, inertial_parameters, parameter_scales
from .whole_model import unit_models
from ..estimation.observer import friction_torque
from ..estimation.rules import FRICTION_EPS

__all__ = ['ExcitationProblem', 'FourierTrajectory', 'InverseDynamicsDerivatives',
           'optimise_excitation']


class FourierTrajectory:
    """``q(t), v(t), a(t)`` of the series (module docstring): ``q0`` (nj,), ``a``, ``b`` (nj, L),
    period ``T`` [s]."""

    def __init__(self, q0, a, b, period):
        self.q0, self.a, self.b = (np.asarray(x, dtype=float) for x in (q0, a, b))
        self.period = float(period)
        self.w = 2.0 * np.pi / self.period

    def __call__(self, t):
        t = np.atleast_1d(np.asarray(t, dtype=float))
        lw = self.w * np.arange(1, self.a.shape[1] + 1)             # (L,)
        s, c = np.sin(np.outer(t, lw)), np.cos(np.outer(t, lw))     # (K, L)
        q = self.q0 + (s / lw) @ self.a.T - (c / lw) @ self.b.T
        v = c @ self.a.T + s @ self.b.T
        acc = -(s * lw) @ self.a.T + (c * lw) @ self.b.T
        return q, v, acc


def _basis(t, L, period):
    """Rows mapping (q0, a, b) of one joint to q, v, a at the times t: three (K, 1 + 2L)."""
    w = 2.0 * np.pi / period
    lw = w * np.arange(1, L + 1)
    s, c = np.sin(np.outer(t, lw)), np.cos(np.outer(t, lw))
    one, zero = np.ones((t.size, 1)), np.zeros((t.size, 1))
    return (np.hstack([one, s / lw, -c / lw]), np.hstack([zero, c, s]),
            np.hstack([zero, -s * lw, c * lw]))


def _regressor(model, q, v, acc, units):
    """Scaled inverse-dynamics regressor (K nj, 10 N + 3 nj): inertial parameters, F_v, F_c,
    armature."""
    cols = []
    for mdl in units:
        d = dynamics_batch(mdl, q, v)
        cols.append(np.einsum('kij,kj->ki', d.M, acc) + np.einsum('kij,kj->ki', d.C, v) + d.g)
    Y = np.stack(cols, axis=2)                                   # (K, nj, 10 N)
    out = []
    for i in range(model.nbodies):
        blk = Y[:, :, 10 * i:10 * i + 10].copy()
        blk[:, :, 1:] -= blk[:, :, :1]
        out.append(blk)
    nj = v.shape[1]
    joint = np.zeros((q.shape[0], nj, 3 * nj))
    for j in range(nj):
        joint[:, j, j] = friction_torque(v[:, j], 1.0, 0.0)
        joint[:, j, nj + j] = friction_torque(v[:, j], 0.0, 1.0)
        joint[:, j, 2 * nj + j] = acc[:, j]
    return np.concatenate(out + [joint], axis=2)


class InverseDynamicsDerivatives:
    """``∂τ/∂q, ∂τ/∂q̇, ∂τ/∂q̈`` of the inverse dynamics of ``model``'s kinematics with any
    inertial parameters ``π`` (N, 10) (not necessarily a physical body; no armature), from the
    core's analytical RNEA derivatives (Carpentier & Mansard 2018,
    :func:`ros_dynamics.core.derivatives.inverse_dynamics_derivatives_batch`) and its mass
    matrix (∂τ/∂q̈ = M)."""

    def __init__(self, model):
        if model.floating_base or model.mimic:
            raise ValueError('derivatives for fixed-base models without mimic joints')
        self.model = model

    def _body_model(self, pi):
        """The model with the bodies of ``pi`` (N, 10), each with positive mass."""
        m = pi[:, 0].copy()
        c = pi[:, 1:4] / m[:, None]
        Io = np.array([[[p[4], p[5], p[6]], [p[5], p[7], p[8]], [p[6], p[8], p[9]]] for p in pi])
        Ic = Io - m[:, None, None] * np.array([skew2(x) for x in c])
        return self.model.copy(mass=m, com=c, inertia=Ic,
                               armature=np.zeros(int(self.model.nv)))

    def vjp(self, pi, Q, V, A, U):
        """``(u_kᵀ ∂τ_k/∂q, u_kᵀ ∂τ_k/∂q̇, u_kᵀ ∂τ_k/∂q̈)`` for the K states ``Q, V, A`` and
        weights ``U`` (each (K, nv)): exact, linear in ``π``, which is split as
        ``(π + π_s) − π_s`` with ``π_s`` a body at each origin (mass ``s``, inertia ``α 1``)
        large enough that both parts are bodies the model accepts (positive mass and
        inertia)."""
        pi = np.asarray(pi, dtype=float).reshape(-1, 10)
        shift = np.zeros_like(pi)
        for i, p in enumerate(pi):
            m = 1.0 + abs(p[0]) + p[0]                       # >= 1
            Io = np.array([[p[4], p[5], p[6]], [p[5], p[7], p[8]], [p[6], p[8], p[9]]])
            alpha = 1.0 + np.abs(Io).sum() + p[1:4] @ p[1:4] / m
            shift[i, 0] = m - p[0]
            shift[i, [4, 7, 9]] = alpha
        Q, V, A, U = (np.ascontiguousarray(x, dtype=float) for x in (Q, V, A, U))
        out = np.zeros((3, U.shape[0], U.shape[1]))
        for sign, params in ((1.0, pi + shift), (-1.0, shift)):
            mdl = self._body_model(params)
            dq, dv = inverse_dynamics_derivatives_batch(mdl, Q, V, A)
            M = dynamics_batch(mdl, Q, np.zeros_like(V)).M
            out[0] += sign * np.einsum('ki,kij->kj', U, dq)
            out[1] += sign * np.einsum('ki,kij->kj', U, dv)
            out[2] += sign * np.einsum('ki,kij->kj', U, M)
        return out


def optimise_excitation(model, duration=20.0, harmonics=4, samples=120, max_acceleration=3.0,
                        margin=0.1, seed=0, maxiter=100):
    """An exciting :class:`FourierTrajectory` of period ``duration`` within the joint limits
    (``model.joint_limits``: positions shrunk by ``margin`` rad, 95 % of the velocity limits,
    accelerations below ``max_acceleration`` rad/s², at ``samples`` times over the period):
    SLSQP from :attr:`ExcitationProblem.x0` with the exact gradient.  Returns (trajectory,
    condition number at the start, condition number at the end)."""
    from scipy.optimize import minimize
    import numba
    threads = numba.get_num_threads()
    numba.set_num_threads(1)       # many small batches: threads cost more than they give
    try:
        p = ExcitationProblem(model, duration, harmonics, samples, max_acceleration, margin, seed)
        res = minimize(p.cost_and_gradient, p.x0, jac=True, method='SLSQP',
                       options=dict(maxiter=maxiter, ftol=1e-6),
                       constraints=[dict(type='ineq', fun=lambda x: p.ub - p.A @ x,
                                         jac=lambda x: -p.A)])
        c0 = p.cost(p.x0)
        x = res.x if np.all(p.A @ res.x <= p.ub + 1e-9) and p.cost(res.x) <= c0 else p.x0
        return p.trajectory(x), float(np.exp(c0)), float(np.exp(p.cost(x)))
    finally:
        numba.set_num_threads(threads)


class ExcitationProblem:
    """The optimisation of :func:`optimise_excitation`: coefficients ``x`` (nj (1 + 2L),),
    joint by joint ``[q_0, a_1..a_L, b_1..b_L]``; linear limits ``A x <= ub``; a feasible start
    ``x0`` (random harmonics shrunk until every limit holds); :meth:`cost` ``log(σ_1/σ_r)`` of
    the scaled regressor at the sample times ``t`` and :meth:`cost_and_gradient`."""

    def __init__(self, model, duration=20.0, harmonics=4, samples=120, max_acceleration=3.0,
                 margin=0.1, seed=0):
        if model.floating_base:
            raise ValueError('excitation is for fixed-base arms')
        self.model = model
        nj, L = len(model.joint_names), int(harmonics)
        lo, hi, vmax = np.empty(nj), np.empty(nj), np.empty(nj)
        for j, name in enumerate(model.joint_names):
            lim = model.joint_limits.get(name, {})
            lo[j] = lim.get('lower', -np.pi) + margin
            hi[j] = lim.get('upper', np.pi) - margin
            vmax[j] = 0.95 * (lim.get('velocity', 1.0) or 1.0)   # room between the samples
            if not hi[j] > lo[j]:
                raise ValueError(f'joint {name!r}: no room between its limits')
        self.duration, self.nj, self.L, self.nc = float(duration), nj, L, 1 + 2 * L
        self.t = t = np.linspace(0.0, duration, samples, endpoint=False)
        self.B = Bq, Bv, Ba = _basis(t, L, duration)
        nc = self.nc
        # linear limits: for every joint and time, lo <= q <= hi, |v| <= vmax, |a| <= amax
        rows, rhs = [], []
        for j in range(nj):
            for B, up, down in ((Bq, hi[j], -lo[j]), (Bv, vmax[j], vmax[j]),
                                (Ba, max_acceleration, max_acceleration)):
                blk = np.zeros((t.size, nj * nc))
                blk[:, j * nc:(j + 1) * nc] = B
                rows += [blk, -blk]
                rhs += [np.full(t.size, up), np.full(t.size, down)]
        self.A, self.ub = np.vstack(rows), np.concatenate(rhs)
        self.units = [m for i in range(model.nbodies) for m in unit_models(model, i)]
        self.scale = np.concatenate([parameter_scales(model, inertial_parameters(model)),
                                     np.ones(3 * nj)])
        rng = np.random.default_rng(seed)
        X0 = np.zeros((nj, nc))
        X0[:, 0] = 0.5 * (lo + hi)
        X0[:, 1:] = rng.uniform(-1.0, 1.0, (nj, 2 * L))
        x0 = X0.reshape(-1)
        harmonic = np.arange(x0.size) % nc != 0
        k = 1.0                                # shrink the harmonics until every limit holds
        while np.any(self.A @ np.where(harmonic, k * x0, x0) > self.ub) and k > 1e-6:
            k *= 0.8
        self.x0 = np.where(harmonic, k * x0, x0)
        sv0 = self.singular_values(self.x0)
        self.rank = int(np.sum(sv0 > BASE_TOLERANCE * sv0[0]))
        self.derivatives = InverseDynamicsDerivatives(model)

    def trajectory(self, x):
        X = np.asarray(x, dtype=float).reshape(self.nj, self.nc)
        return FourierTrajectory(X[:, 0], X[:, 1:1 + self.L], X[:, 1 + self.L:], self.duration)

    def regressor(self, x):
        """The scaled regressor (K nj, p) at the sample times and the states (q, v, a)."""
        q, v, acc = self.trajectory(x)(self.t)
        return self.regressor_at(q, v, acc), (q, v, acc)

    def regressor_at(self, q, v, acc):
        """The scaled regressor (K nj, p) at any states (K, nj) each."""
        return (_regressor(self.model, q, v, acc, self.units) * self.scale).reshape(
            -1, self.scale.size)

    def condition_at(self, q, v, acc):
        """``σ_1/σ_r`` of :meth:`regressor_at` (``r`` = :attr:`rank`, fixed at the start): the
        condition number of any motion's samples, comparable with :meth:`cost`'s."""
        sv = np.linalg.svd(self.regressor_at(q, v, acc), compute_uv=False)
        return float(sv[0] / max(sv[self.rank - 1], 1e-300))

    def singular_values(self, x):
        """Descending singular values of the scaled regressor (from its Gram matrix)."""
        Y = self.regressor(x)[0]
        return np.sqrt(np.maximum(np.linalg.eigvalsh(Y.T @ Y)[::-1], 0.0))

    def cost(self, x):
        """``log(σ_1 / σ_r)``: the log condition number of the identifiable part."""
        sv = self.singular_values(x)
        return float(np.log(sv[0] / max(sv[self.rank - 1], 1e-300)))

    def cost_and_gradient(self, x):
        """:meth:`cost` and its exact gradient (module docstring)."""
        Y, (q, v, acc) = self.regressor(x)
        # singular values and vectors from the Gram matrix (p x p; its smallest used eigenvalue
        # is >= 1e-6 of the largest, BASE_TOLERANCE squared, far above rounding)
        lam, W = np.linalg.eigh(Y.T @ Y)
        lam, W = lam[::-1], W[:, ::-1]
        sv = np.sqrt(np.maximum(lam, 0.0))
        Vt = W.T
        U = (Y @ W[:, [0, self.rank - 1]]) / np.maximum(sv[[0, self.rank - 1]], 1e-300)
        nj, N, r = self.nj, self.model.nbodies, self.rank
        Bq, Bv, Ba = self.B
        grad = np.zeros((nj, self.nc))
        for c, (i, weight) in enumerate(((0, 1.0 / sv[0]), (r - 1, -1.0 / max(sv[r - 1], 1e-300)))):
            theta = self.scale * Vt[i]           # Y_s v = τ(q, q̇, q̈; θ)
            u = U[:, c].reshape(self.t.size, nj)
            gq, gv, ga = self.derivatives.vjp(theta[:10 * N], q, v, acc, u)
            fv, fc, arm = (theta[10 * N + m * nj:10 * N + (m + 1) * nj] for m in range(3))
            gv = gv + u * (fv + fc * (1.0 - np.tanh(v / FRICTION_EPS) ** 2) / FRICTION_EPS)
            ga = ga + u * arm
            grad += weight * (gq.T @ Bq + gv.T @ Bv + ga.T @ Ba)
        return float(np.log(sv[0] / max(sv[r - 1], 1e-300))), grad.reshape(-1)
