"""dtau/dv from Algorithm 1 (Echeandia & Wensing 2021, Remark 3; exact free-joint correction) and the coordinate
changes of Sec. 3.3 (centre-of-mass coordinates, Remark 6; mimic reduction, Theorem 1).

References independent of the code under test: central differences of RNEA, Pinocchio
(computeRNEADerivatives, centerOfMass, aba; test-only), finite differences of Mbar along a
motion, and physics the code does not build in (the CoM falls with g, gravity acts on it alone).
"""

import numpy as np
import pytest

import ros_dynamics as rd
from _oracle import REAL_ROBOTS, PinocchioOracle, random_state, rel_err
from test_urdf import joint, link, robot

pytestmark = pytest.mark.core

TOL = 1e-9
ROBOTS = REAL_ROBOTS
FLOATING = [r for r in ROBOTS if r[2]]


def _load(entry):
    name, path_fn, floating = entry
    path = path_fn()
    return path, rd.load_urdf(path, floating_base=floating)


def rnea_dv_central(model, q, v, a):
    """Central differences of RNEA in v.  tau is quadratic in v, so the central quotient is exact
    for any step: a step of 1 leaves only rounding (no truncation error to trade off)."""
    n = model.nv
    cols = [(rd.inverse_dynamics(model, q, v + e, a) - rd.inverse_dynamics(model, q, v - e, a)) / 2.0
            for e in np.eye(n)]
    return np.array(cols).T


@pytest.mark.parametrize('entry', ROBOTS, ids=[r[0] for r in ROBOTS])
def test_dtau_dv_matches_central_differences_and_pinocchio(entry):
    import pinocchio  # noqa: F401 - a test dependency: missing fails
    path, model = _load(entry)
    pin = PinocchioOracle(path, model)
    rng = np.random.default_rng(13)
    for _ in range(3):
        q, v, a = random_state(model, rng)
        D = rd.inverse_dynamics_dv(model, q, v)
        assert D.shape == (model.nv, model.nv)
        assert rel_err(D, rnea_dv_central(model, q, v, a)) < TOL
        _, dtau_dv, _ = pin.pin.computeRNEADerivatives(pin.pm, pin.pd, pin.q(q), pin.v(v), pin.v(a))
        assert rel_err(D, pin.mat(dtau_dv)) < TOL
        twoC = 2.0 * rd.coriolis_matrix(model, q, v)
        if model.floating_base:
            # the correction is confined to the free joint's columns and is not small
            assert np.allclose(D[:, 6:], twoC[:, 6:], rtol=0, atol=1e-12 * max(1.0, np.abs(D).max()))
            assert rel_err(twoC, D) > 1e-3
        else:
            assert np.array_equal(D, twoC)                       # Remark 3


@pytest.mark.parametrize('entry', [ROBOTS[0]] + FLOATING[:1], ids=lambda r: r[0])
def test_dtau_dv_into_data_equals_the_allocating_call(entry):
    _, model = _load(entry)
    data = rd.Data(model)
    rng = np.random.default_rng(3)
    for _ in range(2):
        q, v, _ = random_state(model, rng)
        D = rd.inverse_dynamics_dv(model, q, v, data=data)
        assert D is data.dtau_dv                       # written into the workspace, returned
        assert np.array_equal(D, rd.inverse_dynamics_dv(model, q, v))


def test_dtau_dv_rejects_bad_input():
    model = rd.load_urdf(rd.bundled_urdf('arm7'))
    with pytest.raises(ValueError):
        rd.inverse_dynamics_dv(model, np.zeros(7), np.zeros(6))
    with pytest.raises(ValueError):
        rd.inverse_dynamics_dv(model, np.zeros(7), np.full(7, np.nan))


# -- centre-of-mass coordinates (Remark 6) --------------------------------------------------------

def _advance(model, q, v, h):
    """A smooth curve through q with velocity v (free joint: body-frame twist, p += h R v_lin,
    R <- R exp(h omega)); joints move linearly.  Its central differences at h = 0 give d/dt."""
    qn = np.array(q, dtype=float)
    x, y, z, w = q[3:7]
    R = rd.link_placement(model, q, model.root_link)[0]
    qn[0:3] = q[0:3] + h * R @ v[0:3]
    ang = h * np.asarray(v[3:6])
    th = np.linalg.norm(ang)
    ax = ang / th if th > 0 else np.zeros(3)
    dx, dy, dz, dw = *(np.sin(th / 2) * ax), np.cos(th / 2)            # q <- q * dq (body frame)
    qn[3:7] = [w * dx + x * dw + y * dz - z * dy, w * dy - x * dz + y * dw + z * dx,
               w * dz + x * dy - y * dx + z * dw, w * dw - x * dx - y * dy - z * dz]
    qn[7:] = q[7:] + h * v[6:]
    return qn


def _Mbar(cc, q):
    M = rd.mass_matrix(cc.model, q)
    A = cc.velocity_map(M, rd.link_placement(cc.model, q, cc.model.root_link)[0])
    return A.T @ M @ A


@pytest.fixture(scope='module', params=FLOATING, ids=[r[0] for r in FLOATING])
def com_robot(request):
    path, model = _load(request.param)
    return path, model, rd.CenterOfMassCoordinates(model)


def test_com_state_matches_pinocchio_and_round_trips(com_robot):
    import pinocchio  # noqa: F401 - a test dependency: missing fails
    path, model, cc = com_robot
    pin = PinocchioOracle(path, model)
    rng = np.random.default_rng(6)
    q, v, _ = random_state(model, rng)
    qbar, vbar = cc.state(q, v)
    pin.pin.centerOfMass(pin.pm, pin.pd, pin.q(q), pin.v(v))
    assert np.allclose(qbar[0:3], pin.pd.com[0], rtol=0, atol=1e-12)
    assert np.allclose(vbar[0:3], pin.pd.vcom[0], rtol=0, atol=1e-12)
    assert np.array_equal(qbar[3:], q[3:]) and np.array_equal(vbar[3:], v[3:])
    q2, v2 = cc.full_state(qbar, vbar)
    assert np.allclose(q2, q, rtol=0, atol=1e-12) and np.allclose(v2, v, rtol=0, atol=1e-12)
    assert list(cc.base_names[:3]) == ['center_of_mass/x', 'center_of_mass/y', 'center_of_mass/z']
    assert cc.joint_names == model.joint_names


def test_com_coordinates_decouple_and_are_christoffel_consistent(com_robot):
    import pinocchio  # noqa: F401 - a test dependency: missing fails
    path, model, cc = com_robot
    pin = PinocchioOracle(path, model)
    m, n = model.total_mass(), model.nv
    rng = np.random.default_rng(7)
    for _ in range(2):
        q, v, _ = random_state(model, rng)
        qbar, vbar = cc.state(q, v)
        d = cc.dynamics(q, v)
        scale = np.abs(d.M).max()
        eps = 1e-14 * scale
        # eq. (32): Mbar block-diagonal with m 1_3; Cbar's CoM rows and columns vanish
        assert np.allclose(d.M[0:3, 0:3], m * np.eye(3), rtol=0, atol=eps)
        assert np.abs(d.M[0:3, 3:]).max() < eps and np.abs(d.M[3:, 0:3]).max() < eps
        assert np.abs(d.C[0:3]).max() < 1e-13 * scale and np.abs(d.C[:, 0:3]).max() < 1e-13 * scale
        # gravity acts on the CoM alone: gbar = [-m g, 0]
        assert np.allclose(d.g[0:3], -m * np.asarray(model.gravity), rtol=0, atol=1e-12 * m)
        assert np.abs(d.g[3:]).max() < 1e-12 * m
        # Mbar_dot = Cbar + Cbar^T against central differences of Mbar along the motion
        h = 1e-5
        dM = (_Mbar(cc, _advance(model, q, v, h)) - _Mbar(cc, _advance(model, q, v, -h))) / (2 * h)
        assert rel_err(d.C + d.C.T, dM) < 1e-7
        # Cbar vbar is the transformed bias A^T (RNEA(q, v, Adot vbar) - g)
        M = rd.mass_matrix(model, q)
        A = cc.velocity_map(M, rd.link_placement(model, q, model.root_link)[0])
        dfull = rd.dynamics(model, q, v)
        Adot = cc.velocity_map_derivative(A, M, dfull.Mdot, v[3:6])
        bias = A.T @ (pin.rnea(q, v, Adot @ vbar) - pin.gravity(q))
        assert rel_err(d.C @ vbar, bias) < TOL
        # the transformed equations reproduce forward dynamics (ours and Pinocchio's ABA)
        tau = np.r_[np.zeros(6), rng.uniform(-5, 5, n - 6)]
        abar = np.linalg.solve(d.M, A.T @ tau - d.C @ vbar - d.g)
        a = A @ abar + Adot @ vbar
        assert rel_err(a, pin.aba(q, v, tau)) < TOL
        assert rel_err(a, rd.forward_dynamics(model, q, v, tau)) < TOL
        assert np.allclose(abar[0:3], model.gravity, rtol=0, atol=1e-10)   # the CoM falls freely


def test_com_christoffel(com_robot):
    _, model, cc = com_robot
    rng = np.random.default_rng(8)
    q, v, _ = random_state(model, rng)
    qbar, vbar = cc.state(q, v)
    G = cc.christoffel(q)
    d = cc.dynamics(q, v)                          # Algorithm 1 route; G comes from Algorithm 2
    assert rel_err(np.einsum('ijk,k->ij', G, vbar), d.C) < TOL
    scale = np.abs(G).max()
    for axis in range(3):                          # no symbol touches a CoM coordinate
        assert np.abs(np.take(G, [0, 1, 2], axis=axis)).max() < 1e-13 * scale
    # Mbar_dot from the symbols against central differences of Mbar
    h = 1e-5
    dM = (_Mbar(cc, _advance(model, q, v, h)) - _Mbar(cc, _advance(model, q, v, -h))) / (2 * h)
    Gv = np.einsum('ijk,k->ij', G, vbar)
    assert rel_err(Gv + Gv.T, dM) < 1e-7


def test_com_coordinates_need_a_floating_base():
    with pytest.raises(ValueError, match='floating'):
        rd.CenterOfMassCoordinates(rd.load_urdf(rd.bundled_urdf('arm7')))


# -- mimic reduction (Theorem 1) on a gripper -----------------------------------------------------

GRIPPER = robot(
    link('base'), link('palm', m=0.8, com='0 0 0.05'), link('left', m=0.1, com='0 0.01 0.04'),
    link('right', m=0.12, com='0 -0.01 0.04'), link('left_tip', m=0.05, com='0.01 0 0.02'),
    joint('wrist', 'base', 'palm', axis='0 0 1', xyz='0 0 0.1'),
    joint('tilt', 'palm', 'left', axis='1 0 0', xyz='0 0.03 0.08', rpy='0.1 0 0'),
    joint('right_tilt', 'palm', 'right', axis='1 0 0', xyz='0 -0.03 0.08', rpy='-0.1 0 0',
          extra='<mimic joint="tilt" multiplier="-1" offset="0"/>'),
    joint('left_slide', 'left', 'left_tip', jtype='prismatic', axis='0 0 1', xyz='0 0 0.06',
          extra='<mimic joint="tilt" multiplier="0.05" offset="0.01"/>'),
    name='gripper')


def test_mimic_reduced_gripper_outputs():
    model = rd.load_urdf(GRIPPER)
    mc = rd.MimicCoordinates(model)
    assert mc.joint_names == ['wrist', 'tilt'] and mc.base_names == ()
    rng = np.random.default_rng(9)
    qbar, vbar = rng.uniform(-1, 1, 2), rng.uniform(-2, 2, 2)
    q, v = mc.full_state(qbar, vbar)
    qb2, vb2 = mc.state(q, v)
    assert np.array_equal(qb2, qbar) and np.array_equal(vb2, vbar)
    d = mc.dynamics(q, v)
    full = rd.dynamics(model, q, v)
    assert rel_err(d.M, mc.A.T @ full.M @ mc.A) < 1e-15 and rel_err(d.g, mc.A.T @ full.g) < 1e-15
    assert rel_err(d.C, mc.A.T @ full.C @ mc.A) < 1e-15
    # Gammabar against eq. (4) on central differences of Mbar(qbar) in the reduced coordinates
    G = mc.christoffel(q)
    Mbar = lambda x: mc.A.T @ rd.mass_matrix(model, mc.q(x)) @ mc.A
    h, n = 1e-5, 2
    dM = [(Mbar(qbar + h * e) - Mbar(qbar - h * e)) / (2 * h) for e in np.eye(n)]
    Gfd = np.array([[[0.5 * (dM[k][i, j] + dM[j][i, k] - dM[i][j, k]) for k in range(n)]
                     for j in range(n)] for i in range(n)])
    assert rel_err(G, Gfd) < 1e-8
    assert rel_err(np.einsum('ijk,k->ij', G, vbar), d.C) < TOL          # Theorem 1
    assert rel_err(d.Mdot, dM[0] * vbar[0] + dM[1] * vbar[1]) < 1e-8     # Mbar_dot = dMbar/dt
    # dtau/dv reduces like C (affine map: Adot = 0, tau_bar quadratic in vbar)
    Dbar = mc.A.T @ rd.inverse_dynamics_dv(model, q, v) @ mc.A
    tau = lambda w: mc.A.T @ rd.inverse_dynamics(model, q, mc.A @ w, np.zeros(model.nv))
    Dfd = np.array([(tau(vbar + e) - tau(vbar - e)) / 2.0 for e in np.eye(n)]).T
    assert rel_err(Dbar, Dfd) < TOL and rel_err(Dbar, 2 * d.C) < TOL
