"""Lemke's complementary pivoting method for the linear complementarity problem (LCP).

Find z >= 0 with w = M z + q >= 0 and z^T w = 0 (Jain et al. 2012, Eq. 9).

Lemke (1965), as in Cottle, Pang & Stone, *The Linear Complementarity Problem*, Sec. 4.4:
augment with an artificial variable z0 and covering vector e = 1,

    w = q + M z + e z0,

start from the almost-complementary basis w (z0 entering at the most negative q_i), and pivot
each time on the complement of the variable that just left the basis, until z0 leaves (a
solution) or no pivot row exists (a secondary ray: Lemke's method gives up).  Ties in the ratio
test are broken lexicographically on the rows of B^-1 (the columns that were the identity),
which rules out cycling on degenerate problems, so the method terminates after finitely many
pivots (Cottle-Pang-Stone Thm. 4.4.4).  It terminates with a solution for copositive-plus M
and, as Anitescu & Potra (1997, the paper's ref. [3]) show, for the contact LCP with the
polyhedral friction cone (Eq. 53 without bilateral rows), whose matrix
[[D^T Lambda D, E_hat], [E_bar, 0]] is copositive (z^T M z = beta^T D^T Lambda D beta
+ sum_i mu_i sigma_i F_n(i) >= 0 for z >= 0) and whose LCP is always feasible.

Mixed LCPs (equality rows with free variables, Eq. 53's bilateral rows) are reduced to a
standard LCP by eliminating the free variables through the equality rows (a Schur complement,
the same elimination as the paper's RMC step Eqs. 37-41): :func:`solve_mixed_lcp`.

Why not a library: PyPI has no maintained mixed-LCP / Lemke solver (``lemkelcp`` 0.1 is an
unmaintained 2016 script; Siconos and PATH are not pip packages), and QP solvers (osqp,
proxsuite, quadprog) do not solve the non-symmetric friction LCP.
"""

import numpy as np
from numba import njit

SOLVED, RAY, MAX_PIVOTS = 0, 1, 2


@njit(cache=True, nogil=True)
def _lemke(M, q, z, max_pivots, tol):
    """Lemke's method on the tableau [I, -M, -e | q] of w - M z - e z0 = q; z (n,) is written.

    Returns (status, pivots).
    """
    n = q.shape[0]
    z[:] = 0.0
    if n == 0:
        return SOLVED, 0
    if q.min() >= 0.0:
        return SOLVED, 0
    # columns 0..n-1: w, n..2n-1: z, 2n: z0, 2n+1: right-hand side
    T = np.zeros((n, 2 * n + 2))
    for i in range(n):
        T[i, i] = 1.0
        for j in range(n):
            T[i, n + j] = -M[i, j]
        T[i, 2 * n] = -1.0
        T[i, 2 * n + 1] = q[i]
    basis = np.arange(n)                  # basic variable of each row (w_i initially)
    rhs = 2 * n + 1
    # first pivot: z0 enters at the row of the most negative q
    r = 0
    for i in range(1, n):
        if q[i] < q[r]:
            r = i
    entering = 2 * n
    pivots = 0
    while True:
        # pivot on (r, entering)
        piv = T[r, entering]
        for c in range(2 * n + 2):
            T[r, c] /= piv
        for i in range(n):
            if i != r:
                f = T[i, entering]
                if f != 0.0:
                    for c in range(2 * n + 2):
                        T[i, c] -= f * T[r, c]
        leaving = basis[r]
        basis[r] = entering
        pivots += 1
        if leaving == 2 * n:              # z0 left: complementary solution
            break
        if pivots >= max_pivots:
            return MAX_PIVOTS, pivots
        entering = leaving + n if leaving < n else leaving - n     # the complement enters
        # lexicographic minimum ratio test over rows with a positive pivot entry
        r = -1
        for i in range(n):
            a = T[i, entering]
            if a > tol:
                if r < 0:
                    r = i
                    continue
                ar = T[r, entering]
                d = T[i, rhs] / a - T[r, rhs] / ar
                if d < -tol * (1.0 + abs(T[r, rhs] / ar)):
                    r = i
                elif d <= tol * (1.0 + abs(T[r, rhs] / ar)):
                    for c in range(n):       # columns of B^-1
                        d = T[i, c] / a - T[r, c] / ar
                        if d < -1e-14:
                            r = i
                            break
                        if d > 1e-14:
                            break
        if r < 0:
            return RAY, pivots
    for i in range(n):
        b = basis[i]
        if n <= b < 2 * n:
            z[b - n] = max(T[i, rhs], 0.0)
    return SOLVED, pivots


class LCPError(RuntimeError):
    """Lemke's method stopped without a solution (secondary ray or pivot limit)."""


def solve_lcp(M, q, max_pivots=None, tol=1e-12, perturbation=1e-10):
    """z >= 0 with w = M z + q >= 0, z . w = 0, by Lemke's method.  Returns (z, w, pivots).

    Degeneracy: the contact LCP is highly degenerate (the sigma rows have q = 0), and in
    floating point the lexicographic rule's ties are not always recognised.  If the first run
    ends on a ray, Lemke's method is rerun on q + delta (1, 2, ..., n) / n (Charnes'
    perturbation, of which the lexicographic rule is the exact limit; the perturbed problem is
    nondegenerate for almost every delta), delta = ``perturbation`` * max(1, |q|_inf), and the
    solution of the nearby problem is returned: complementarity then holds to O(delta).
    Raises :class:`LCPError` if Lemke's method ends on a secondary ray or after ``max_pivots``
    (default 50 n + 50).
    """
    M = np.ascontiguousarray(M, dtype=float)
    q = np.ascontiguousarray(q, dtype=float)
    n = q.shape[0]
    if M.shape != (n, n):
        raise ValueError(f'M must be ({n}, {n}), got {M.shape}')
    z = np.empty(n)
    limit = 50 * n + 50 if max_pivots is None else int(max_pivots)
    status, pivots = _lemke(M, q, z, limit, tol)
    if status == RAY and perturbation:
        delta = perturbation * max(1.0, float(np.abs(q).max()))
        status, more = _lemke(M, q + delta * np.arange(1, n + 1) / n, z, limit, tol)
        pivots += more
    if status != SOLVED:
        raise LCPError('Lemke: ' + ('secondary ray (no solution found)' if status == RAY else
                                    f'no solution after {pivots} pivots'))
    return z, M @ z + q, pivots


def solve_mixed_lcp(A, b, C, M, q, **kwargs):
    """Mixed LCP: free x and z >= 0 with A x + C z + b = 0 and w = C^T x + M z + q >= 0 _|_ z.

    The coupling is symmetric, as in Eq. 53 (A = Q_b Lam Q_b^T, C = Q_b Lam Q_u^T D).  A must be invertible (full-rank bilateral
    constraints, the paper's assumption).  Eliminating x = -A^-1 (b + C z) gives the standard
    LCP (M - C^T A^-1 C) z + (q - C^T A^-1 b).  Returns (x, z, w, pivots).
    """
    A = np.atleast_2d(np.asarray(A, dtype=float))
    C = np.asarray(C, dtype=float).reshape(A.shape[0], -1)
    AinvC = np.linalg.solve(A, C)
    Ainvb = np.linalg.solve(A, np.asarray(b, dtype=float))
    z, w, pivots = solve_lcp(np.asarray(M) - C.T @ AinvC, np.asarray(q) - C.T @ Ainvb, **kwargs)
    x = -(Ainvb + AinvC @ z)
    return x, z, w, pivots
