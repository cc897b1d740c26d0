"""The calibration's fit of the momentum residual and its uncertainty (no ROS).

The residual of the observer with the parameters θ is ``r(θ) = r_0 + P θ``
(:mod:`.observer_regressor`); in free motion the right θ makes it small, so θ solves the
weighted least squares ``min ‖W (r_0 + P θ)‖²`` over the rows used (a sample and a joint:
:class:`ResidualFit`), rows weighted per joint by the inverse of the joint's residual rms (two
passes).  Some parameters may be held (``fixed``) at an ``offset`` (a point mass's inertia).

Its covariance has three parts here, each something the others miss (the calibration adds the
spread under other velocity estimates, :mod:`.determination`):

* the noise: the least-squares covariance inflated by the residual's integrated
  autocorrelation time (it is a low-pass output: its samples are correlated over ~1/K);
* what changes along the motion (a friction law or torque constants that are off): the
  delete-one-block jackknife over 10 stretches (Efron & Stein 1981; Künsch 1989);
* for a payload, torque constants off (:func:`.least_squares.torque_scale_covariance`).
"""

from dataclasses import dataclass

import numpy as np

from .least_squares import autocorrelation_time, weighted_least_squares

__all__ = ['JACKKNIFE_BLOCKS', 'ResidualFit', 'Solution']

#: stretches of the recording of the jackknife
JACKKNIFE_BLOCKS = 10


@dataclass
class Solution:
    """One solve: θ (p,), the normalized weighted regressor ``An`` of the free columns and
    their ``scale``, the weighted residual ``e``, the row weights ``w``, the rows ``sel``
    (n nv,) and which parameters were ``free``."""
    theta: np.ndarray
    An: np.ndarray
    scale: np.ndarray
    e: np.ndarray
    w: np.ndarray
    sel: np.ndarray
    free: np.ndarray


class ResidualFit:
    """``min ‖W (r_0 + P θ)‖²`` of the residual ``r0`` (n, nv) and its columns ``rho``
    (n, nv, p) named ``names``; ``usable`` (n, nv): the rows that may enter (a joint at rest
    carries a static friction the law does not give)."""

    def __init__(self, rho, r0, names, usable):
        self.rho, self.names = rho, list(names)
        self.n, self.nv, self.p = rho.shape
        self.A = rho.reshape(self.n * self.nv, self.p)
        self.b = np.nan_to_num(r0).reshape(-1)
        self.usable = usable.reshape(-1)
        self.fixed = np.zeros(self.p, dtype=bool)
        self.offset = np.zeros(self.p)

    def hold(self, mask, values=None):
        """Hold the parameters ``mask`` at ``values`` (default their current offsets)."""
        self.fixed = self.fixed | mask
        if values is not None:
            self.offset = np.where(mask, values, self.offset)

    def release(self, mask):
        self.fixed = self.fixed & ~mask

    def residual(self, theta):
        """(n, nv) the residual with θ."""
        return (self.b + self.A @ theta).reshape(self.n, self.nv)

    def solve(self, rows, fixed=None):
        """The fit on the samples ``rows`` (n,) (the usable joints of them)."""
        fixed = self.fixed if fixed is None else fixed
        sel = np.repeat(rows, self.nv) & self.usable
        A, b = self.A[sel], self.b[sel]
        joint = np.tile(np.arange(self.nv), self.n)[sel]
        # a column no selected row excites (a joint at rest there) is held at its offset
        fixed = fixed | ~np.any(A != 0, axis=0)
        free = ~fixed
        rhs = b + A[:, fixed] @ self.offset[fixed]
        w = np.ones(A.shape[0])
        for k in range(2):   # pass 2: rows weighted by 1 / (the joint's residual rms)
            if k:
                ms = np.bincount(joint, (e / w) ** 2, self.nv) / np.maximum(
                    np.bincount(joint, minlength=self.nv), 1)
                s = np.sqrt(ms)
                s = np.maximum(s, 1e-6 * max(1e-12, s.max()))
                w = 1.0 / s[joint]
            theta_f, An, scale, e, _ = weighted_least_squares(
                A[:, free], rhs, w, [nm for nm, f in zip(self.names, free) if f])
        theta = self.offset.copy()
        theta[free] = theta_f
        return Solution(theta, An, scale, e, w, sel, free)

    def noise_covariance(self, sol):
        """(the noise's covariance (p, p), the residual's autocorrelation time: the mean over
        the joints of each one's, over the rows it was used at)."""
        dof = max(1, sol.e.size - sol.An.shape[1])
        sigma2 = float(sol.e @ sol.e) / dof
        full = np.full(self.n * self.nv, np.nan)
        full[sol.sel] = sol.e
        taus = [autocorrelation_time(c[np.isfinite(c)][:, None])
                for c in full.reshape(self.n, self.nv).T if np.isfinite(c).sum() >= 8]
        tau_c = float(np.mean(taus)) if taus else 1.0
        return self._full(np.linalg.pinv(sol.An.T @ sol.An) * sigma2 * tau_c, sol), tau_c

    def jackknife_covariance(self, rows, sol):
        """The delete-one-block jackknife over :data:`JACKKNIFE_BLOCKS` stretches of ``rows``."""
        B = JACKKNIFE_BLOCKS
        blk = np.minimum((np.cumsum(rows) * B) // max(1, rows.sum()), B - 1)
        drop = np.array([self.solve(rows & (blk != b)).theta for b in range(B)])
        d = drop - drop.mean(axis=0)
        return (B - 1) / B * d.T @ d

    def _full(self, cov_free, sol):
        cov = np.zeros((self.p, self.p))
        cov[np.ix_(sol.free, sol.free)] = cov_free / np.outer(sol.scale, sol.scale)
        return cov

    def inflation(self, sol):
        """Per free parameter: its variance inflation factor, the diagonal of ``(AnᵀAn)⁻¹``
        with unit columns (1: orthogonal to the others; 100: 99.5 % of its column is explained
        by theirs), and the columns that explain it (index arrays, by share)."""
        G = sol.An.T @ sol.An
        Gi = np.linalg.pinv(G)
        vif = np.diag(Gi)
        partners = []
        for k in range(G.shape[0]):
            # the column k regressed on the others: coefficients −Gi[k, j]/Gi[k, k]
            share = np.abs(Gi[k] / Gi[k, k])
            share[k] = 0.0
            partners.append(np.argsort(-share)[:3])
        return vif, partners
