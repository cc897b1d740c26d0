"""Forward dynamics by CRBA + sparse L^T D L factorization (Featherstone 2008).

qdd = M^-1 (tau - b) with b = RNEA(q, qd, 0) the bias force (Coriolis + gravity).  M is
factorized in place as L^T D L with the LTDL algorithm, whose inner loops visit only the DoF
ancestors (branch-induced sparsity, O(n d^2)), then solved with the matching back- and
forward-substitutions.
"""

from numba import njit

from .jit import JIT, helper
from .crba import composite_mass_matrix
from .kinematics import forward_kinematics, velocities
from .rnea import newton_euler


@helper
def ltdl(H, parent):
    """In-place L^T D L factorization of H; ``parent`` is the DoF tree lambda (-1 = none).

    On return D is on the diagonal and L_ki (i an ancestor of k) below it (Featherstone 2008, LTDL).
    Returns False if a pivot is not positive (H not positive definite).
    """
    n = H.shape[0]
    for k in range(n - 1, -1, -1):
        if not H[k, k] > 0.0:
            return False
        i = parent[k]
        while i >= 0:
            a = H[k, i] / H[k, k]
            j = i
            while j >= 0:
                H[i, j] -= H[k, j] * a
                j = parent[j]
            H[k, i] = a
            i = parent[i]
    return True


@helper
def ltdl_solve(H, parent, x):
    """Solve (L^T D L) y = x in place, H as left by ``ltdl``."""
    n = H.shape[0]
    for i in range(n - 1, -1, -1):         # L^-T
        j = parent[i]
        while j >= 0:
            x[j] -= H[i, j] * x[i]
            j = parent[j]
    for i in range(n):                      # D^-1
        x[i] /= H[i, i]
    for i in range(n):                      # L^-1
        j = parent[i]
        while j >= 0:
            x[i] -= H[i, j] * x[j]
            j = parent[j]


@njit(inline='always', **JIT)
def forward_dynamics(m, q, qd, tau, qdd, w):
    """qdd such that M qdd + C qd + g = tau.  Returns False if M is not positive definite."""
    nv = m.nv
    forward_kinematics(m, q, w)                          # kinematics shared by RNEA and CRBA
    velocities(m, w.Phi, qd, w.vel, w.Phid)
    zero = w.tmp
    zero[:] = 0.0
    newton_euler(m, w.Phi, w.Phid, w.I, w.vel, qd, zero, w.W[0], w.W[1], qdd)  # qdd <- bias b
    for s in range(nv):
        qdd[s] = tau[s] - qdd[s]
    H = w.H
    composite_mass_matrix(m, w.Phi, w.I, H)              # (sums I in place: after the RNEA)
    parent = m.dof_parent
    if not ltdl(H, parent):
        return False
    ltdl_solve(H, parent, qdd)
    return True
