"""Exciting trajectories for identification: optimised finite Fourier series (Swevers, Ganseman,
Tükel, De Schutter & Van Brussel 1997) (no ROS).

Each joint follows a periodic series with ``L`` harmonics of the fundamental ``ω_f = 2π/T``
(Swevers et al. 1997, eq. 18):

    q_j(t) = q_j0 + Σ_l  a_jl/(ω_f l) sin(ω_f l t) − b_jl/(ω_f l) cos(ω_f l t),

so positions, velocities and accelerations are linear in the coefficients ``(q_0, a, b)`` and
the limits (positions with a margin, velocities, accelerations) are linear inequalities at the
sample times.  Periodic, the trajectory can be repeated and averaged, and starts and ends at
rest-free but continuous states.  The coefficients minimise the condition number of the scaled
identification regressor (the joint torques' columns of every body's ten inertial parameters,
the friction and the armature at the sample times, from the core library as in
:mod:`.identification`) over its identifiable part (the directions above the base-parameter
tolerance at the start), with SLSQP under the linear limits (scipy).
"""

import numpy as np

from ..core.api import dynamics_batch
from .whole_model import BASE_TOLERANCE, inertial_parameters, parameter_scales, unit_models
from ..estimation.observer import friction_torque

__all__ = ['FourierTrajectory', 'optimise_excitation']


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


def optimise_excitation(model, duration=20.0, harmonics=4, samples=120, max_acceleration=3.0,
                        margin=0.1, seed=0, maxiter=30):
    """An exciting :class:`FourierTrajectory` of period ``duration`` within the joint limits
    (``model.joint_limits``: positions shrunk by ``margin`` rad, 95 % of the velocity limits,
    accelerations below ``max_acceleration`` rad/s², at ``samples`` times over the period).
    Returns (trajectory, condition number at the start,
    condition number at the end)."""
    import numba
    threads = numba.get_num_threads()
    numba.set_num_threads(1)       # many small batches: threads cost more than they give
    try:
        return _optimise(model, duration, harmonics, samples, max_acceleration, margin, seed,
                         maxiter)
    finally:
        numba.set_num_threads(threads)


def _optimise(model, duration, harmonics, samples, max_acceleration, margin, seed, maxiter):
    from scipy.optimize import minimize
    if model.floating_base:
        raise ValueError('excitation is for fixed-base arms')
    nj, L = len(model.joint_names), int(harmonics)
    lo, hi, vmax = np.empty(nj), np.empty(nj), np.empty(nj)
    for j, name in enumerate(model.joint_names):
        lim = model.joint_limits.get(name, {})
        lo[j] = lim.get('lower', -np.pi) + margin
        hi[j] = lim.get('upper', np.pi) - margin
        vmax[j] = 0.95 * (lim.get('velocity', 1.0) or 1.0)   # room between the samples
        if not hi[j] > lo[j]:
            raise ValueError(f'joint {name!r}: no room between its limits')
    t = np.linspace(0.0, duration, samples, endpoint=False)
    Bq, Bv, Ba = _basis(t, L, duration)
    nc = 1 + 2 * L
    # linear limits: for every joint and time, lo <= q <= hi, |v| <= vmax, |a| <= amax
    rows, rhs = [], []
    for j in range(nj):
        for B, up, down in ((Bq, hi[j], -lo[j]), (Bv, vmax[j], vmax[j]),
                            (Ba, max_acceleration, max_acceleration)):
            blk = np.zeros((t.size, nj * nc))
            blk[:, j * nc:(j + 1) * nc] = B
            rows += [blk, -blk]
            rhs += [np.full(t.size, up), np.full(t.size, down)]
    A, ub = np.vstack(rows), np.concatenate(rhs)
    units = [m for i in range(model.nbodies) for m in unit_models(model, i)]
    scale = np.concatenate([parameter_scales(model, inertial_parameters(model)), np.ones(3 * nj)])

    def trajectory(x):
        X = x.reshape(nj, nc)
        return FourierTrajectory(X[:, 0], X[:, 1:1 + L], X[:, 1 + L:], duration)

    def singular_values(x):
        q, v, acc = trajectory(x)(t)
        return np.linalg.svd((_regressor(model, q, v, acc, units) * scale).reshape(-1, scale.size),
                             compute_uv=False)

    rng = np.random.default_rng(seed)
    X0 = np.zeros((nj, nc))
    X0[:, 0] = 0.5 * (lo + hi)
    X0[:, 1:] = rng.uniform(-1.0, 1.0, (nj, 2 * L))
    x0 = X0.reshape(-1)
    k = 1.0                                    # shrink the harmonics until every limit holds
    while np.any(A @ np.where(np.arange(x0.size) % nc == 0, x0, k * x0) > ub) and k > 1e-6:
        k *= 0.8
    x0 = np.where(np.arange(x0.size) % nc == 0, x0, k * x0)
    sv0 = singular_values(x0)
    rank = int(np.sum(sv0 > BASE_TOLERANCE * sv0[0]))

    def cost(x):
        sv = singular_values(x)
        return float(np.log(sv[0] / max(sv[rank - 1], 1e-300)))

    res = minimize(cost, x0, method='SLSQP', options=dict(maxiter=maxiter, ftol=1e-4),
                   constraints=[dict(type='ineq', fun=lambda x: ub - A @ x,
                                     jac=lambda x: -A)])
    x = res.x if np.all(A @ res.x <= ub + 1e-9) and cost(res.x) <= cost(x0) else x0
    return trajectory(x), float(np.exp(cost(x0))), float(np.exp(cost(x)))
