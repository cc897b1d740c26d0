"""Differential tests against Pinocchio on real URDFs: M, C, g, RNEA, forward dynamics and Gamma
agree to 1e-9 relative, with joints mapped by name."""

import numpy as np
import pytest

import ros_dynamics as rd
from _oracle import REAL_ROBOTS as ROBOTS, PinocchioOracle, random_state, rel_err

import pinocchio  # noqa: F401 - a test dependency: missing fails
pytestmark = pytest.mark.core

TOL = 1e-9
WORST = {}   # robot -> worst relative disagreement, printed at the end (-s)


@pytest.fixture(scope='module', params=ROBOTS, ids=[r[0] for r in ROBOTS])
def robot(request):
    name, path_fn, floating = request.param
    path = path_fn()
    model = rd.load_urdf(path, floating_base=floating)
    return name, model, PinocchioOracle(path, model)


def _record(name, quantity, err):
    print(f'relative disagreement {name:20s} {quantity:18s} {err:.2e}')   # shown with -s
    assert err < TOL, f'{name}: {quantity} differs from Pinocchio by {err:.3g} (relative)'


def test_dynamics_terms_match_pinocchio(robot):
    name, model, oracle = robot
    rng = np.random.default_rng(7)
    for _ in range(5):
        q, v, a = random_state(model, rng)
        d = rd.dynamics(model, q, v)
        _record(name, 'M', rel_err(d.M, oracle.mass_matrix(q)))
        _record(name, 'C', rel_err(d.C, oracle.coriolis(q, v)))
        _record(name, 'g', rel_err(d.g, oracle.gravity(q)))
        _record(name, 'Mdot', rel_err(d.Mdot, oracle.coriolis(q, v) + oracle.coriolis(q, v).T))
        _record(name, 'rnea', rel_err(rd.inverse_dynamics(model, q, v, a), oracle.rnea(q, v, a)))
        tau = rng.uniform(-5, 5, model.nv)
        _record(name, 'forward_dynamics', rel_err(rd.forward_dynamics(model, q, v, tau), oracle.aba(q, v, tau)))
        _record(name, 'mass_matrix', rel_err(rd.mass_matrix(model, q), oracle.mass_matrix(q)))
        _record(name, 'gravity', rel_err(rd.gravity(model, q), oracle.gravity(q)))


def test_christoffel_matches_pinocchio_route(robot):
    name, model, oracle = robot
    rng = np.random.default_rng(11)
    for _ in range(2):
        q, _, _ = random_state(model, rng)
        _record(name, 'Gamma', rel_err(rd.christoffel(model, q), oracle.christoffel(q)))


@pytest.mark.parametrize('n', [40, 100])
def test_long_chains_stay_accurate(n):
    """Rounding must not compound along a deep chain (it once doubled per link: NaN at N = 70).

    Pinocchio is the reference; the last link's rotation must stay orthonormal."""
    from ros_dynamics import testing as models
    import pinocchio as pin
    xml = models.chain(n, seed=0)
    model = rd.load_urdf(xml)
    pm = pin.buildModelFromXML(xml)
    pd = pm.createData()
    q = np.random.default_rng(3).uniform(-np.pi, np.pi, model.nq)
    v = np.random.default_rng(4).uniform(-1, 1, model.nv)
    R, _ = rd.link_placement(model, q, model.link_names[-1])
    assert np.abs(R.T @ R - np.eye(3)).max() < 1e-13
    M = pin.crba(pm, pd, q)
    d = rd.dynamics(model, q, v)
    assert rel_err(d.M, np.triu(M) + np.triu(M, 1).T) < TOL
    assert rel_err(d.C, pin.computeCoriolisMatrix(pm, pd, q, v)) < TOL
    assert rel_err(d.g, pin.computeGeneralizedGravity(pm, pd, q)) < TOL
