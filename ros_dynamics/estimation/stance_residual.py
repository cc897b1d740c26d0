"""The momentum residual with the base twist from the stance legs, for the unexplained part.

A floating base's twist comes from a state estimator (``odom``): on a legged robot noisy
(white noise of a few cm/s on the linear twist), late (5-20 ms) and slower than the joint
states (Camurri et al. 2020, "Pronto: a multi-sensor state estimator for legged robots";
Hartley et al. 2020, contact-aided invariant EKF).  The momentum residual (observer.py) takes
it through ``p = M(q) v``: white twist noise σ enters the base rows of ``r`` as about
``K m σ`` (the observer's noise law), 12 N for 0.03 m/s at K = 50 1/s on an 8.3 kg robot,
which swamps a push on the trunk in the unexplained part ``τ_u = r − Σ J_iᵀ f_i``.

The legs measure the base twist better while feet stand: a stance foot is at rest, so its
velocity ``J_i(q) v = J_i,b v_b + J_i,j v_j = 0`` gives the base twist from the joint
velocities alone, on time and at the joint-state rate (the kinematic leg odometry of
Bloesch et al. 2013, "State estimation for legged robots: consistent fusion of leg kinematics
and IMU").  Fused with the odometry as a prior weighted by its noise,

    v̂_b = argmin  Σ_{i ∈ stance} ‖J_i,b v_b + J_i,j v_j‖² / σ_f²  +  ‖v_b − v_odom‖² / σ_o²,    (1)

(σ_f = :data:`FOOT_VELOCITY_NOISE`: a stance foot's velocity from soft ground, a rolling
sphere, joint-velocity noise through the leg; σ_o the odometry's twist noise), the legs decide
the directions that the stance feet determine (all six with three or four, five with a trot's
diagonal pair) and the odometry the others (a single stance foot, a flight phase).  While a
stance foot moves faster than :data:`STANCE_GATE` under ``v̂`` (a lift-off the contact state
has not seen yet), the fastest is dropped and (1) solved again.

:class:`StanceResidual` runs a second momentum observer, of the same gain and friction model,
on ``(q, [v̂_b, v_j], τ)``: the same K/(s+K) of the same external torque (no added lag), with
the odometry's noise largely removed from its base rows.  The contact-force estimator
(contact_forces.py) takes its unexplained part from it, with the stance set of its previous
update, and its contact state the rate of this residual and the frames' velocities under
``v̂`` (contact_state.py); when (1) uses another set of frames than at the update before,
``v̂_b`` steps and so does ``p = M v̂`` (:attr:`StanceResidual.stepped`: the rate of that sample
is no external torque).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .observer import MomentumObserver

__all__ = ['StanceResidual', 'FOOT_VELOCITY_NOISE', 'STANCE_GATE', 'stance_twist']

#: σ_f of (1) [m/s]: a stance foot's velocity (soft ground, rolling, joint-velocity noise;
#: 1 cm/s: MuJoCo's trotting Solo12 and quadruped and the standing quadruped's push are found
#: best between 5 mm/s and 2 cm/s: benchmarks/results/contact_state.md, contact_forces.md)
FOOT_VELOCITY_NOISE = 0.01
#: a stance foot faster than this under the fused twist [m/s] is taken as lifting off
STANCE_GATE = 0.1


def stance_twist(G, v, odom_weight, foot_weight):
    """The minimizer v̂_b of (1) for the stacked stance-foot velocity rows ``G`` (m × nv, world
    axes; empty: the odometry's twist), the state ``v`` (its base twist the odometry's) and
    the weights 1/σ_o² (6,) and 1/σ_f² (the normal equations; :func:`fused_twist` is the
    compiled form the estimator runs)."""
    Gb = G[:, :6]
    H = foot_weight * (Gb.T @ Gb)
    H[np.diag_indices(6)] += odom_weight
    g = odom_weight * v[:6] - foot_weight * (Gb.T @ (G[:, 6:] @ v[6:]))
    return np.linalg.solve(H, g)


@njit(cache=True, nogil=True)
def fused_twist(A, v, stance, d, odom_weight, foot_weight, gate, vh, H):
    """(1) for the frames ``stance`` (k,) bool, whose velocity rows are the columns of ``A``
    (nv × k d, ``d`` per frame), then again without the fastest stance frame while one is
    faster than ``gate`` under the result: ``vh`` (nv,) = ``v`` with the base twist v̂_b;
    ``stance`` keeps the frames used.  ``H`` (6 × 7): workspace (the normal equations and
    their right-hand side, solved by Cholesky)."""
    nv, k = A.shape[0], stance.shape[0]
    for i in range(nv):
        vh[i] = v[i]
    for _ in range(k + 1):
        for a in range(6):                      # H = Σ w_f G_b,cᵀ G_b,c + W_o, g = ...
            for b in range(a + 1):
                H[a, b] = 0.0
            H[a, a] = odom_weight[a]
            H[a, 6] = odom_weight[a] * v[a]
        for f in range(k):
            if not stance[f]:
                continue
            for c in range(f * d, f * d + d):
                s = 0.0                         # the column's joint part G_j,c v_j
                for i in range(6, nv):
                    s += A[i, c] * v[i]
                for a in range(6):
                    for b in range(a + 1):
                        H[a, b] += foot_weight * A[a, c] * A[b, c]
                    H[a, 6] -= foot_weight * A[a, c] * s
        for a in range(6):                      # H = L Lᵀ in the lower triangle
            for b in range(a + 1):
                s = H[a, b]
                for c in range(b):
                    s -= H[a, c] * H[b, c]
                H[a, b] = math.sqrt(s) if a == b else s / H[b, b]
        for a in range(6):                      # L z = g
            s = H[a, 6]
            for c in range(a):
                s -= H[a, c] * H[c, 6]
            H[a, 6] = s / H[a, a]
        for a in range(5, -1, -1):              # Lᵀ v̂_b = z
            s = H[a, 6]
            for c in range(a + 1, 6):
                s -= H[c, a] * vh[c]
            vh[a] = s / H[a, a]
        fastest, top = -1, gate * gate
        for f in range(k):                      # the stance frames' speed under vh
            if not stance[f]:
                continue
            sq = 0.0
            for c in range(f * d, f * d + min(d, 3)):
                s = 0.0
                for i in range(nv):
                    s += A[i, c] * vh[i]
                sq += s * s
            if sq > top:
                fastest, top = f, sq
        if fastest < 0:
            break
        stance[fastest] = False                 # the fastest above the gate, then (1) again


class StanceResidual:
    """The momentum residual with the base twist of (1) (module docstring).

    ``observer``: keyword arguments of the :class:`MomentumObserver` (gain, friction model:
    the cycle's); ``twist_noise``: σ_o [m/s, rad/s] of the odometry's twist (> 0)."""

    def __init__(self, model, twist_noise, observer=None):
        if not (np.isfinite(twist_noise) and twist_noise > 0):
            raise ValueError(f'odom_twist_noise must be > 0, got {twist_noise}')
        self.model = model
        self.twist_noise = float(twist_noise)
        self._observer_args = dict(observer or {})
        self._odom_weight = np.full(6, 1.0 / self.twist_noise ** 2)
        self._foot_weight = 1.0 / FOOT_VELOCITY_NOISE ** 2
        self.observer = MomentumObserver(model, **self._observer_args)
        self.twist = None                       # v̂_b of the last update
        self.stance = None                      # the frames (1) used at the last update
        self.stepped = False                    # (1) used other frames than the update before
        self._vh, self._H = np.zeros(model.nv), np.zeros((6, 7))
        # compiled (or loaded from numba's cache) here, not at a sample
        fused_twist(np.zeros((model.nv, 3)), self._vh, np.ones(1, dtype=np.bool_), 3,
                    self._odom_weight, self._foot_weight, STANCE_GATE, self._vh, self._H)

    @property
    def velocity(self):
        """The last update's velocity (nv,): the state's with the base twist v̂_b of (1) (the
        array itself)."""
        return self._vh

    def reset(self):
        """Start over (with the cycle's observer): the next update initializes."""
        self.observer = MomentumObserver(self.model, **self._observer_args)
        self.stance = None

    def update(self, q, v, tau, dt, A, stance, bridge=False):
        """The residual (nv,) at the sample (q, v, tau) a period ``dt`` after the last (the
        cycle's; ``bridge``: across a gap), for the frames' velocity columns ``A`` (nv × k d,
        ContactForceEstimator.jacobians) and their contact states ``stance`` (k,) bool."""
        stance = np.array(stance, dtype=np.bool_)
        d = A.shape[1] // len(stance)
        v = np.asarray(v, dtype=float)
        vh = self._vh
        fused_twist(np.ascontiguousarray(A), v, stance, d, self._odom_weight, self._foot_weight,
                    STANCE_GATE, vh, self._H)
        # another set of frames in (1): v̂_b steps, p = M v̂ with it, and the residual's rate
        # with it (no external torque: the contact state's fast force holds at such a sample)
        self.stepped = self.stance is not None and not np.array_equal(stance, self.stance)
        self.twist, self.stance = vh[:6].copy(), stance
        return self.observer.update(q, vh, tau, dt, bridge=bridge)
