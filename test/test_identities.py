"""Identities that hold for any rigid-body tree, on random chains and branched trees with
revolute, continuous and prismatic joints (and merged fixed links), fixed and floating base."""

import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics import testing as models
from _oracle import random_state, rel_err

pytestmark = pytest.mark.core

CASES = {
    'chain8_rev': lambda: models.chain(8, seed=1),
    'chain10_mixed': lambda: models.chain(10, seed=2, joint_types=('revolute', 'prismatic', 'continuous')),
    'chain7_fixed_links': lambda: models.chain(7, seed=3, fixed_every=2),
    'tree12_rev': lambda: models.binary_tree(12, seed=4),
    'tree15_mixed': lambda: models.binary_tree(15, seed=5, joint_types=('revolute', 'prismatic')),
}


@pytest.fixture(scope='module', params=sorted(CASES))
def model(request):
    return rd.load_urdf(CASES[request.param]())


@pytest.fixture(scope='module', params=['tree9_floating', 'chain5_floating'])
def floating_model(request):
    urdf = models.binary_tree(9, seed=6) if request.param.startswith('tree') else models.chain(5, seed=7)
    return rd.load_urdf(urdf, floating_base=True)


def _fd(f, x, eps=1e-6):
    """Central difference of f along each coordinate: list of df/dx_k."""
    out = []
    for k in range(len(x)):
        e = np.zeros_like(x)
        e[k] = eps
        out.append((f(x + e) - f(x - e)) / (2 * eps))
    return out


def test_coriolis_times_v_is_rnea_without_gravity(model):
    rng = np.random.default_rng(0)
    for _ in range(5):
        q, v, _ = random_state(model, rng)
        d = rd.dynamics(model, q, v)
        bias = rd.inverse_dynamics(model, q, v, np.zeros(model.nv))
        assert rel_err(d.C @ v, bias - d.g) < 1e-12


def test_mdot_is_finite_difference_of_m(model):
    """dM/dt from the central difference of M along v, and C + C^T of the same call equals it
    (the kernel writes Mdot itself, so only the finite difference is an independent check)."""
    rng = np.random.default_rng(1)
    q, v, _ = random_state(model, rng)
    d = rd.dynamics(model, q, v)
    eps = 1e-6
    fd = (rd.mass_matrix(model, q + eps * v) - rd.mass_matrix(model, q - eps * v)) / (2 * eps)
    assert rel_err(d.Mdot, fd) < 1e-7
    assert rel_err(d.C + d.C.T, fd) < 1e-7


def _related(model):
    """related[i, j]: DoF i is DoF j, an ancestor or a descendant of it (from the URDF topology)."""
    n = model.nv
    related = np.eye(n, dtype=bool)
    for j in range(n):
        i = model.dof_parent[j]
        while i >= 0:
            related[i, j] = related[j, i] = True
            i = model.dof_parent[i]
    return related


def test_mass_matrix_from_rnea_columns_positive_definite_with_branch_zeros(model):
    """M (CRBA) column by column from an independent algorithm, M e_k = RNEA(q, 0, e_k) - g;
    positive definite; exactly the entries of unrelated DoFs (different branches) vanish."""
    rng = np.random.default_rng(2)
    related = _related(model)
    for _ in range(3):
        q, _, _ = random_state(model, rng)
        M = rd.mass_matrix(model, q)
        g = rd.gravity(model, q)
        zero = np.zeros(model.nv)
        cols = np.array([rd.inverse_dynamics(model, q, zero, e) - g for e in np.eye(model.nv)]).T
        assert rel_err(M, cols) < 1e-12
        assert np.linalg.eigvalsh(M).min() > 0
        scale = np.abs(cols).max()
        assert np.abs(cols[~related]).max(initial=0.0) < 1e-12 * scale
        assert np.array_equal(M[~related], np.zeros((~related).sum()))


def test_christoffel_contracts_to_coriolis_and_is_symmetric(model):
    rng = np.random.default_rng(3)
    q, v, _ = random_state(model, rng)
    G = rd.christoffel(model, q)
    C = rd.coriolis_matrix(model, q, v)
    assert rel_err(np.einsum('ijk,k->ij', G, v), C) < 1e-12


def test_christoffel_from_finite_differences_of_m(model):
    rng = np.random.default_rng(4)
    q, _, _ = random_state(model, rng)
    dM = np.array(_fd(lambda x: rd.mass_matrix(model, x), q))     # dM[k] = dM/dq_k
    # Gamma_ijk = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i), Echeandia & Wensing 2021 eq. (4)
    n = model.nv
    expected = np.empty((n, n, n))
    for i in range(n):
        for j in range(n):
            for k in range(n):
                expected[i, j, k] = 0.5 * (dM[k][i, j] + dM[j][i, k] - dM[i][j, k])
    assert rel_err(rd.christoffel(model, q), expected) < 1e-7
    # Algorithm 2 writes Gamma_kij = -Gamma_jik for i <= j <= k on one path (line 6, D = -Btilde^T):
    # check that identity on the finite-difference symbols, not on the kernel's output
    scale = np.abs(expected).max()
    checked = 0
    for k in range(n):
        j = k
        while j >= 0:
            i = j
            while i >= 0:
                assert abs(expected[k, i, j] + expected[j, i, k]) < 1e-6 * scale
                checked += 1
                i = model.dof_parent[i]
            j = model.dof_parent[j]
    assert checked >= n


def test_observer_products(model):
    rng = np.random.default_rng(5)
    q, v, _ = random_state(model, rng)
    d = rd.dynamics(model, q, v)
    p, ctv, g = rd.observer_terms(model, q, v)
    assert rel_err(p, d.M @ v) < 1e-13
    assert rel_err(ctv, d.C.T @ v) < 1e-12
    assert rel_err(g, d.g) < 1e-14
    # C^T v = dT/dq for the Christoffel-consistent C (T = 1/2 v^T M v)
    dT = np.array([0.5 * v @ dMk @ v for dMk in _fd(lambda x: rd.mass_matrix(model, x), q)])
    assert rel_err(ctv, dT) < 1e-7


def test_forward_dynamics_inverts_inverse_dynamics(model):
    rng = np.random.default_rng(6)
    q, v, a = random_state(model, rng)
    tau = rd.inverse_dynamics(model, q, v, a)
    assert rel_err(rd.forward_dynamics(model, q, v, tau), a) < 1e-10
    d = rd.dynamics(model, q, v)
    assert rel_err(tau, d.M @ a + d.C @ v + d.g) < 1e-12


def test_eq9_factorization_is_admissible_but_not_christoffel(model):
    rng = np.random.default_rng(7)
    q, v, _ = random_state(model, rng)
    d10, d9 = rd.dynamics(model, q, v), rd.dynamics(model, q, v, factorization='eq9')
    assert rel_err(d9.C @ v, d10.C @ v) < 1e-12                   # valid
    assert rel_err(d9.C + d9.C.T, d10.Mdot) < 1e-12               # admissible (Mdot - 2C skew)
    assert np.abs(d9.C - d10.C).max() > 1e-6                      # but a different matrix


def test_batch_equals_single_calls(model):
    rng = np.random.default_rng(8)
    states = [random_state(model, rng) for _ in range(6)]
    Q, V = np.array([s[0] for s in states]), np.array([s[1] for s in states])
    batch, gammas = rd.dynamics_batch(model, Q, V), rd.christoffel_batch(model, Q)
    for k in range(len(Q)):      # (separately compiled kernels: fastmath may round differently)
        d = rd.dynamics(model, Q[k], V[k])
        for name in d._fields:
            assert rel_err(getattr(batch, name)[k], getattr(d, name)) < 1e-13, name
        assert rel_err(gammas[k], rd.christoffel(model, Q[k])) < 1e-13


def test_link_jacobian_matches_finite_differences(model):
    rng = np.random.default_rng(9)
    q, v, _ = random_state(model, rng)
    link = model.link_names[-1]
    point = np.array([0.1, -0.05, 0.2])
    J = rd.link_jacobian(model, q, link, point)
    pos = lambda x: (lambda R, p: R @ point + p)(*rd.link_placement(model, x, link))
    assert rel_err(J[:3], np.array(_fd(pos, q)).T) < 1e-7
    # angular rows: R(q + eps v) R(q)^T ~ I + eps S(omega)
    eps = 1e-7
    R0, _ = rd.link_placement(model, q, link)
    R1, _ = rd.link_placement(model, q + eps * v, link)
    W = (R1 @ R0.T - R0 @ R1.T) / (2 * eps)
    assert rel_err(J[3:] @ v, [W[2, 1], W[0, 2], W[1, 0]]) < 1e-6


# -- floating base: quasi-velocities, so only the identities that hold there ----------------------

def test_floating_base_identities(floating_model):
    model = floating_model
    rng = np.random.default_rng(10)
    q, v, a = random_state(model, rng)
    d = rd.dynamics(model, q, v)
    assert rel_err(d.C @ v, rd.inverse_dynamics(model, q, v, np.zeros(model.nv)) - d.g) < 1e-12
    # dM/dt along the motion q(t) = q (+) v t (quasi-velocities: integrate on the manifold)
    eps = 1e-6
    fd = (rd.mass_matrix(model, rd.configuration.integrate(model, q, v, eps))
          - rd.mass_matrix(model, rd.configuration.integrate(model, q, v, -eps))) / (2 * eps)
    assert rel_err(d.Mdot, fd) < 1e-7
    G = rd.christoffel(model, q)
    assert rel_err(np.einsum('ijk,k->ij', G, v), d.C) < 1e-12
    # Gamma[:, :, k] = dC/dv_k = C(q, e_k), and the free-joint block is not symmetric in (j, k)
    for k in (0, 3, 4, model.nv - 1):
        e = np.zeros(model.nv)
        e[k] = 1.0
        assert rel_err(G[:, :, k], rd.coriolis_matrix(model, q, e)) < 1e-12
    assert np.abs(G[:, :6, :6] - G[:, :6, :6].transpose(0, 2, 1)).max() > 1e-6
    tau = rd.inverse_dynamics(model, q, v, a)
    assert rel_err(rd.forward_dynamics(model, q, v, tau), a) < 1e-10
    p, ctv, _ = rd.observer_terms(model, q, v)
    assert rel_err(p, d.M @ v) < 1e-13 and rel_err(ctv, d.C.T @ v) < 1e-12


def test_floating_base_free_fall_has_no_joint_gravity(floating_model):
    """A free-floating robot in free fall: a = M^-1 (-g) is a pure downward base acceleration."""
    model = floating_model
    q, _, _ = random_state(model, np.random.default_rng(11))
    a = rd.forward_dynamics(model, q, np.zeros(model.nv), np.zeros(model.nv))
    R, _ = rd.link_placement(model, q, model.link_names[0])
    assert rel_err(R @ a[:3], model.gravity) < 1e-10                 # base linear accel = gravity
    assert np.abs(a[3:]).max() < 1e-9                                  # no rotation, joints still


def test_batch_into_preallocated_output(model):
    rng = np.random.default_rng(12)
    Q = np.array([random_state(model, rng)[0] for _ in range(3)])
    V = rng.uniform(-1, 1, (3, model.nv))
    n = model.nv
    out = rd.Dynamics(np.full((3, n, n), np.nan), np.full((3, n, n), np.nan), np.full((3, n, n), np.nan),
                      np.full((3, n), np.nan))
    res = rd.dynamics_batch(model, Q, V, out=out)
    assert res.M is out.M and np.array_equal(out.C, rd.dynamics_batch(model, Q, V).C)
    with pytest.raises(ValueError, match='out.g must be'):
        rd.dynamics_batch(model, Q, V, out=out._replace(g=np.zeros((2, n))))
