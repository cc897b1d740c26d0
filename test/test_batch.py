"""Batches: rd.dynamics_batch and rd.christoffel_batch equal the single calls row by row, agree
with Pinocchio, and give the same bits on one thread and on two (each thread computes a
contiguous block of rows with the same compiled code as the serial loop)."""

import numba
import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics import testing as models
from ros_dynamics.core.api import MIN_ENTRIES_PER_THREAD, batch_threads
from _oracle import PinocchioOracle, random_state, rel_err

import pinocchio  # noqa: F401 - a test dependency: missing fails
pytestmark = pytest.mark.core

# (id, URDF source, floating base)
ROBOTS = [
    ('arm7', lambda: rd.bundled_urdf('arm7'), False),
    ('quadruped_floating', lambda: rd.bundled_urdf('quadruped'), True),
    ('tree12', lambda: models.binary_tree(12, seed=3), False),
    ('chain6_floating', lambda: models.chain(6, seed=4), True),
]


@pytest.fixture(scope='module', params=ROBOTS, ids=[r[0] for r in ROBOTS])
def robot(request):
    name, source, floating = request.param
    return rd.load_urdf(source(), floating_base=floating), source, floating


def _states(model, K, seed):
    rng = np.random.default_rng(seed)
    states = [random_state(model, rng) for _ in range(K)]
    return np.array([s[0] for s in states]), np.array([s[1] for s in states])


def _threads_for(K, n, threads):
    numba.set_num_threads(threads)
    try:
        return batch_threads(K, n)
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)


def _batches(model, Q, V, threads):
    numba.set_num_threads(threads)
    try:
        return rd.dynamics_batch(model, Q, V), rd.christoffel_batch(model, Q)
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)


def test_batch_rows_equal_single_calls(robot):
    model, _, _ = robot
    Q, V = _states(model, 7, seed=1)
    for factorization in ('eq10', 'eq9'):
        batch = rd.dynamics_batch(model, Q, V, factorization=factorization)
        for k in range(len(Q)):
            d = rd.dynamics(model, Q[k], V[k], factorization=factorization)
            for name in d._fields:
                assert rel_err(getattr(batch, name)[k], getattr(d, name)) < 1e-13, (name, k)
    G = rd.christoffel_batch(model, Q)
    for k in range(len(Q)):
        assert rel_err(G[k], rd.christoffel(model, Q[k])) < 1e-13, k


def test_batch_matches_pinocchio(robot, tmp_path):
    model, source, _ = robot
    path = source()
    if path.lstrip().startswith('<'):        # a generated model: Pinocchio reads it from a file
        (tmp_path / 'model.urdf').write_text(path)
        path = str(tmp_path / 'model.urdf')
    oracle = PinocchioOracle(path, model)
    Q, V = _states(model, 2, seed=2)
    batch, G = rd.dynamics_batch(model, Q, V), rd.christoffel_batch(model, Q)
    for k in range(2):
        C = oracle.coriolis(Q[k], V[k])
        assert rel_err(batch.M[k], oracle.mass_matrix(Q[k])) < 1e-9
        assert rel_err(batch.C[k], C) < 1e-9
        assert rel_err(batch.Mdot[k], C + C.T) < 1e-9
        assert rel_err(batch.g[k], oracle.gravity(Q[k])) < 1e-9
        assert rel_err(G[k], oracle.christoffel(Q[k])) < 1e-9


def test_one_and_two_threads_give_the_same_bits(robot):
    model, _, _ = robot
    n = model.nv
    assert numba.config.NUMBA_NUM_THREADS >= 2, 'this test needs numba to run two threads'
    # enough states that both batches really split over two threads (odd K: unequal blocks)
    K = 2 * MIN_ENTRIES_PER_THREAD // min(n * (3 * n + 1), n ** 3) + 3
    assert _threads_for(K, n * (3 * n + 1), 2) == 2 and _threads_for(K, n ** 3, 2) == 2
    assert _threads_for(K, n * (3 * n + 1), 1) == 1
    Q, V = _states(model, K, seed=3)
    (d1, G1), (d2, G2) = _batches(model, Q, V, 1), _batches(model, Q, V, 2)
    for name in d1._fields:
        assert np.array_equal(getattr(d1, name), getattr(d2, name)), name
    assert np.array_equal(G1, G2)
    assert np.isfinite(d2.M).all() and np.abs(d2.M).max() > 0     # every row was written
    for k in (0, K // 2, K - 1):
        assert rel_err(d2.M[k], rd.mass_matrix(model, Q[k])) < 1e-12


def test_small_batches_stay_on_the_calling_thread():
    assert batch_threads(1, 1000) == 1
    assert batch_threads(0, 1000) == 1
    assert batch_threads(10 ** 6, 1000) == numba.get_num_threads()


def test_floating_base_batch_names_the_bad_row():
    model = rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)
    Q, V = _states(model, 5, seed=4)
    Q[3, 3:7] *= 2.0
    with pytest.raises(ValueError, match=r'Q\[3\].*unit quaternion'):
        rd.dynamics_batch(model, Q, V)
    with pytest.raises(ValueError, match=r'Q\[3\].*unit quaternion'):
        rd.christoffel_batch(model, Q)
