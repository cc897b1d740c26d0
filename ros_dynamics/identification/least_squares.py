"""The weighted least squares of the calibration (:mod:`.calibration`) and its covariance: the
solve, the residual's integrated autocorrelation time (the noise's covariance of correlated
samples) and what torque constants that are off add to a payload's (no ROS)."""

import numpy as np

from .samples import CalibrationError

__all__ = ['autocorrelation_time', 'torque_scale_covariance', 'weighted_least_squares']


def autocorrelation_time(e, max_lag=2000):
    """Integrated autocorrelation time ``1 + 2 Σ ρ(ℓ)`` of the columns of ``e`` (T, n),
    summed until ρ first drops below 0.05 (mean over the columns; ρ by FFT)."""
    taus = []
    for x in e.T:
        x = x - x.mean()
        n = x.size
        f = np.fft.rfft(x, 2 * n)
        ac = np.fft.irfft(f * np.conj(f))[:min(max_lag, n // 4)]
        if not ac.size or ac[0] <= 0:
            continue
        rho = ac / ac[0]
        below = np.flatnonzero(rho < 0.05)
        end = below[0] if below.size else rho.size
        taus.append(1.0 + 2.0 * float(rho[1:end].sum()))
    return float(np.mean(taus)) if taus else 1.0


def weighted_least_squares(A, b, w, names):
    """Weighted LS ``min ‖diag(w)(A θ + b)‖²``; returns θ, the standard errors (inflated by the
    autocorrelation time) and the weighted residual."""
    Aw, bw = A * w[:, None], b * w
    scale = np.linalg.norm(Aw, axis=0)
    if np.any(scale == 0):
        dead = [n for n, s in zip(names, scale) if s == 0]
        raise CalibrationError(f'the recording does not excite {dead} (all their columns are '
                               'zero: those joints never move, or the payload link is not moved)')
    An = Aw / scale
    theta_n, _, rank, sv = np.linalg.lstsq(An, -bw, rcond=None)
    if rank < An.shape[1] or sv[-1] < 1e-10 * sv[0]:
        raise CalibrationError('the recording does not determine all parameters (rank '
                               f'{rank} of {An.shape[1]}): use a richer motion')
    theta = theta_n / scale
    e = bw + Aw @ theta
    return theta, An, scale, e, sv


def torque_scale_covariance(rho, sel, An, scale, w, free, i0, theta, rel):
    """The covariance a relative error ``rel`` (one standard deviation, independent per joint)
    of each joint's torque constant adds to the fitted parameters (first order).

    Torques read through torque constants (current-based) carry the payload's own torque
    ``Y_j π`` on joint j scaled by that joint's constant; what the robot's model (or the
    reference recording) explains does not depend on the payload, so an error ``δk_j`` of the
    constant leaves ``δk_j Y_j π`` in the residual of joint j: its column is the payload's share
    of the filtered residual on that joint, ``ρ_j π``.  The fit's linear map ``L`` (the
    weighted least squares of :func:`weighted_least_squares` on the rows ``sel`` (n nv,) of
    ``rho`` (n, nv, p)) turns it into ``δθ = L c_j δk_j``, hence ``Σ_j rel² (L c_j)(L c_j)ᵀ``
    (the delta method; Ljung 1999, Sec. 9.5: the bias of a misspecified, here mis-scaled,
    regressor as a parameter covariance).  On the MuJoCo plants with torque constants 1-3 %
    off, this is what the payload's CoM error comes from
    (benchmarks/results/payload_se_mujoco.md); the noise alone leaves 0.1-0.5 mm."""
    n, nv = rho.shape[0], rho.shape[1]
    torque = (rho[:, :, i0:i0 + 10] @ theta[i0:i0 + 10]).reshape(-1)     # (n nv,)
    joint = np.tile(np.arange(nv), n)
    C = np.zeros((n * nv, nv))
    C[np.arange(n * nv), joint] = torque
    C = C[sel]
    D = np.linalg.lstsq(An, C * w[:, None], rcond=None)[0] / scale[:, None]
    cov = np.zeros((rho.shape[2], rho.shape[2]))
    cov[np.ix_(free, free)] = rel ** 2 * D @ D.T
    return cov
