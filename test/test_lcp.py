"""Lemke's method (ros_dynamics.simulation.lcp): solutions checked by the LCP conditions
themselves and against brute-force enumeration of complementary bases."""
import itertools

import numpy as np
import pytest

from ros_dynamics.simulation.lcp import LCPError, solve_lcp, solve_mixed_lcp
from ros_dynamics.simulation.rigid_contact import Contact, os_lcp

pytestmark = pytest.mark.core


def _check(M, q, z, tol=1e-9):
    w = M @ z + q
    scale = (1 + np.abs(q).max()) * (1 + np.abs(z).max())
    assert np.all(z >= -tol * scale) and np.all(w >= -tol * scale)
    assert abs(z @ w) < tol * scale


def _enumerate(M, q):
    """All solutions by trying every complementary basis (small n only)."""
    n = len(q)
    sols = []
    for mask in itertools.product([0, 1], repeat=n):
        idx = [i for i in range(n) if mask[i]]
        z = np.zeros(n)
        if idx:
            try:
                z[idx] = np.linalg.solve(M[np.ix_(idx, idx)], -q[idx])
            except np.linalg.LinAlgError:
                continue
        if np.all(z >= -1e-12) and np.all(M @ z + q >= -1e-12):
            sols.append(z)
    return sols


def test_positive_definite_unique_solution():
    rng = np.random.default_rng(0)
    for n in (1, 2, 5, 8):
        for _ in range(20):
            A = rng.normal(size=(n, n))
            M = A @ A.T + 0.1 * np.eye(n) + 0.5 * (A - A.T)        # P-matrix (positive definite)
            q = rng.normal(size=n)
            z, w, _ = solve_lcp(M, q)
            _check(M, q, z)
            ref = _enumerate(M, q)
            assert len(ref) == 1
            np.testing.assert_allclose(z, ref[0], atol=1e-9)


def test_friction_lcp_of_eq53_is_solved():
    """Copositive contact LCPs (Eq. 53) from Lam = G G^T, G random and often rank-deficient,
    with a separating motion (Anitescu-Potra's condition; without one, jammed contacts can be
    infeasible and Lemke rightly ends on a ray)."""
    rng = np.random.default_rng(1)
    for m in (1, 2, 4, 6):
        for trial in range(60):
            A = rng.normal(size=(3 * m, 2 + trial % 5))
            Lam = A @ A.T                                          # PSD, often singular
            # Anitescu-Potra's condition: some motion y0 separates every contact (n_i . (G y0)_i > 0)
            sep = (A @ rng.normal(size=A.shape[1])).reshape(m, 3)
            normals = sep / np.linalg.norm(sep, axis=1)[:, None] + 0.3 * rng.normal(size=(m, 3))
            normals *= np.sign(np.einsum('ij,ij->i', normals, sep))[:, None]
            cs = [Contact(None, np.zeros(3), None, np.zeros(3), n / np.linalg.norm(n), 0.0, mu=rng.uniform(0, 1))
                  for n in normals]
            # v_u = G_u v lies in the range of G_u, hence of Lam (what makes the LCP feasible)
            M, q, _ = os_lcp(Lam, A @ rng.normal(size=A.shape[1]), cs, nf=4)
            z, w, _ = solve_lcp(M, q)
            _check(M, q, z, tol=1e-8)


def test_degenerate_and_unsolvable():
    M = np.array([[1.0, 1.0], [1.0, 1.0]])
    z, w, _ = solve_lcp(M, np.array([-1.0, -1.0]))                 # degenerate ties
    _check(M, np.array([-1.0, -1.0]), z)
    with pytest.raises(LCPError):
        solve_lcp(np.array([[-1.0]]), np.array([-1.0]))             # w = -z - 1: infeasible
    z, w, pivots = solve_lcp(np.eye(3), np.ones(3))
    assert pivots == 0 and np.all(z == 0)


def test_mixed_lcp_by_elimination():
    rng = np.random.default_rng(2)
    for _ in range(20):
        B = rng.normal(size=(7, 7))
        K = B @ B.T + 0.1 * np.eye(7)                              # [[A, C], [C^T, M]]
        A, C, M = K[:2, :2], K[:2, 2:], K[2:, 2:]
        b, q = rng.normal(size=2), rng.normal(size=5)
        x, z, w, _ = solve_mixed_lcp(A, b, C, M, q)
        np.testing.assert_allclose(A @ x + C @ z + b, 0, atol=1e-10)
        np.testing.assert_allclose(w, C.T @ x + M @ z + q, atol=1e-10)
        assert np.all(z >= -1e-12) and np.all(w >= -1e-10) and abs(z @ w) < 1e-9
