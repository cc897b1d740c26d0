"""Derivatives of forward dynamics from those of inverse dynamics (Carpentier & Mansard 2018):
differentiating tau = RNEA(q, v, FD(q, v, tau)) gives

    da/dq = -M^-1 dtau/dq,   da/dv = -M^-1 dtau/dv,   da/dtau = M^-1,

the RNEA derivatives (rnea_derivatives.py) evaluated at a = FD(q, v, tau).  M^-1 is never
formed to multiply: M = L^T D L is factorized once by the sparse LTDL algorithm
(forward_dynamics.py, Featherstone 2008) and each product M^-1 X is the LTDL solve applied to
the rows of X at once (every step a contiguous row update, O(nv d) row operations for nv
columns); M^-1 itself is that solve on the identity.  Total: one forward-dynamics pass, one
RNEA-derivatives pass, and three solves of O(nv^2 d).
"""

from numba import njit

from .crba import composite_mass_matrix
from .forward_dynamics import ltdl, ltdl_solve
from .jit import JIT, helper
from .kinematics import forward_kinematics, velocities, world_inertias
from .rnea import newton_euler
from .rnea_derivatives import rnea_derivatives_sweeps


@helper
def ltdl_solve_rows(H, parent, X):
    """X <- (L^T D L)^-1 X in place, H as left by ``ltdl``: ``ltdl_solve`` with every scalar
    update x_j -= L_ij x_i applied to whole rows of X (all columns at once)."""
    n, ncol = X.shape[0], X.shape[1]
    for i in range(n - 1, -1, -1):         # L^-T
        j = parent[i]
        while j >= 0:
            c = H[i, j]
            for col in range(ncol):
                X[j, col] -= c * X[i, col]
            j = parent[j]
    for i in range(n):                      # D^-1
        c = 1.0 / H[i, i]
        for col in range(ncol):
            X[i, col] *= c
    for i in range(n):                      # L^-1
        j = parent[i]
        while j >= 0:
            c = H[i, j]
            for col in range(ncol):
                X[i, col] -= c * X[j, col]
            j = parent[j]


@njit(inline='always', **JIT)
def forward_dynamics_derivatives(m, q, qd, tau, qdd, da_dq, da_dv, Minv, dtau_dq, dtau_dv, w):
    """qdd = FD(q, qd, tau) and its derivatives da/dq, da/dv (tangent space), da/dtau = Minv;
    dtau_dq, dtau_dv: the RNEA derivatives at qdd.  False if M is not positive definite."""
    nv = m.nv
    forward_kinematics(m, q, w)
    velocities(m, w.Phi, qd, w.vel, w.Phid)
    zero = w.tmp
    zero[:] = 0.0
    newton_euler(m, w.Phi, w.Phid, w.I, w.vel, qd, zero, w.W[0], w.W[1], qdd)  # qdd <- bias
    for s in range(nv):
        qdd[s] = tau[s] - qdd[s]
    H, parent = w.H, m.dof_parent
    composite_mass_matrix(m, w.Phi, w.I, H)              # sums w.I into composites
    if not ltdl(H, parent):
        return False
    ltdl_solve(H, parent, qdd)                           # qdd = FD(q, qd, tau)
    world_inertias(m, w.R, w.pos, w.I)                   # the bodies' own inertias again
    rnea_derivatives_sweeps(m, qd, qdd, dtau_dq, dtau_dv, w.M, w.tau, w, False)
    for r in range(nv):
        for c in range(nv):
            da_dq[r, c] = -dtau_dq[r, c]
            da_dv[r, c] = -dtau_dv[r, c]
            Minv[r, c] = 0.0
        Minv[r, r] = 1.0
    ltdl_solve_rows(H, parent, da_dq)                    # -M^-1 dtau/dq
    ltdl_solve_rows(H, parent, da_dv)                    # -M^-1 dtau/dv
    ltdl_solve_rows(H, parent, Minv)                     # M^-1
    return True
