"""dtau/dv from Algorithm 1 (Echeandia & Wensing 2021, Remark 3; exact free-joint correction), the
analytical RNEA and forward-dynamics derivatives (Carpentier & Mansard 2018: dtau/dq, dtau/dv,
da/dq, da/dv, M^-1; single calls, data= workspaces, batches) and the coordinate changes of
Sec. 3.3 (centre-of-mass coordinates, Remark 6; mimic reduction, Theorem 1).

References independent of the code under test: central differences of RNEA, Pinocchio
(computeRNEADerivatives, centerOfMass, aba; test-only), finite differences of Mbar along a
motion, and physics the code does not build in (the CoM falls with g, gravity acts on it alone).
"""

import numpy as np
import pytest

import ros_dynamics as rd
from _oracle import REAL_ROBOTS, PinocchioOracle, erd_urdf, random_state, rel_err
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


# -- dtau/dq, dtau/dv, da/dq, da/dv, M^-1 (Carpentier & Mansard 2018) -------------------------------

#: a 50-DoF humanoid (44 joints, twelve of them mimic joints, independent coordinates here as in
#: inverse_dynamics and in Pinocchio's URDF parser) on a floating base
HUMANOID = ('talos_full_floating', lambda: erd_urdf('talos_data/robots/talos_full_v2.urdf'), True)
DERIV_ROBOTS = ROBOTS + [HUMANOID]
DERIV_IDS = [r[0] for r in DERIV_ROBOTS]


def _plus(model, q, e):
    """q (+) e: the manifold step (the free joint's displacement in the base frame)."""
    return rd.configuration.integrate(model, q, e)


def central_q(model, f, q, h=1e-3):
    """d f(q (+) e)/de at e = 0, fourth-order central differences (the curve t -> q (+) t e_j is
    smooth, so the five-point stencil's error is O(h^4))."""
    cols = []
    for e in np.eye(model.nv):
        f2, f1 = f(_plus(model, q, 2 * h * e)), f(_plus(model, q, h * e))
        m1, m2 = f(_plus(model, q, -h * e)), f(_plus(model, q, -2 * h * e))
        cols.append((-f2 + 8 * f1 - 8 * m1 + m2) / (12 * h))
    return np.array(cols).T


def central_v(model, f, v):
    """d f/dv by central differences with a unit step: exact (up to rounding) for the functions
    here, which are quadratic in v (tau = M a + C v + g; a = M^-1 (tau - C v - g))."""
    return np.array([(f(v + e) - f(v - e)) / 2.0 for e in np.eye(model.nv)]).T


def _pin_copy(results):
    """Pinocchio returns views of its Data: copied before the next call overwrites them."""
    return [np.array(x) for x in results]


# Tolerances, relative to the largest entry: about 3x the worst value measured over 5 seeds
# (4 states each against Pinocchio, 2 each against differences), (other robots, the humanoid).
# Pinocchio: inverse 2.6e-15 everywhere; forward 5.7e-13 / 3.8e-12 (the humanoid's M has
# cond ~ 1e7).  Differences: dtau/dq 7.3e-13 (five-point stencil, h = 1e-3); dtau/dv and da/dtau
# 2.6e-15 (exact quotients: rounding only); da/dv 3.6e-13 / 2.2e-11; da/dq 6.7e-10 / 7.0e-8, where
# the differences' rounding dominates (it grows as h shrinks: 2.6e-7 at h = 3e-4 on the
# humanoid), so Pinocchio is the tight reference there.
TOL_PIN_ID = 8e-15
TOL_PIN_FD = (1.5e-12, 1.2e-11)
TOL_FD_TAU_Q, TOL_FD_EXACT = 2.2e-12, 8e-15
TOL_FD_A_V, TOL_FD_A_Q = (1.1e-12, 7e-11), (2e-9, 2e-7)


def _tol(pair, entry):
    return pair[entry is HUMANOID]


def _compare_with_pinocchio(pin, model, q, v, a, tau, tol_fd):
    P = pin.pin
    dq, dv = rd.inverse_dynamics_derivatives(model, q, v, a)
    rq, rv, _ = _pin_copy(P.computeRNEADerivatives(pin.pm, pin.pd, pin.q(q), pin.v(v), pin.v(a)))
    assert rel_err(dq, pin.mat(rq)) < TOL_PIN_ID
    assert rel_err(dv, pin.mat(rv)) < TOL_PIN_ID
    fq, fv, Minv = rd.forward_dynamics_derivatives(model, q, v, tau)
    pq, pv, pMinv = _pin_copy(P.computeABADerivatives(pin.pm, pin.pd, pin.q(q), pin.v(v), pin.v(tau)))
    pMinv = np.triu(pMinv) + np.triu(pMinv, 1).T        # (Pinocchio may fill the upper part only)
    for ours, ref in ((fq, pq), (fv, pv), (Minv, pMinv)):
        assert rel_err(ours, pin.mat(ref)) < tol_fd
    return fq


@pytest.mark.parametrize('entry', DERIV_ROBOTS, ids=DERIV_IDS)
def test_dynamics_derivatives_match_pinocchio(entry):
    import pinocchio  # noqa: F401 - a test dependency: missing fails
    path, model = _load(entry)
    pin = PinocchioOracle(path, model)
    rng = np.random.default_rng(21)
    for _ in range(4):
        q, v, a = random_state(model, rng)
        _compare_with_pinocchio(pin, model, q, v, a, rng.uniform(-5, 5, model.nv), _tol(TOL_PIN_FD, entry))


FD_ROBOTS = [ROBOTS[0], FLOATING[0], ROBOTS[-1], HUMANOID]


@pytest.mark.parametrize('entry', FD_ROBOTS, ids=[r[0] for r in FD_ROBOTS])
def test_dynamics_derivatives_match_central_differences_on_the_manifold(entry):
    _, model = _load(entry)
    rng = np.random.default_rng(22)
    for _ in range(2):
        q, v, a = random_state(model, rng)
        tau = rng.uniform(-5, 5, model.nv)
        dq, dv = rd.inverse_dynamics_derivatives(model, q, v, a)
        assert rel_err(dq, central_q(model, lambda x: rd.inverse_dynamics(model, x, v, a), q)) < TOL_FD_TAU_Q
        assert rel_err(dv, central_v(model, lambda x: rd.inverse_dynamics(model, q, x, a), v)) < TOL_FD_EXACT
        fq, fv, Minv = rd.forward_dynamics_derivatives(model, q, v, tau)
        assert rel_err(fq, central_q(model, lambda x: rd.forward_dynamics(model, x, v, tau), q)) < _tol(TOL_FD_A_Q, entry)
        assert rel_err(fv, central_v(model, lambda x: rd.forward_dynamics(model, q, x, tau), v)) < _tol(TOL_FD_A_V, entry)
        # a is affine in tau: da/dtau by unit central differences too
        assert rel_err(Minv, central_v(model, lambda x: rd.forward_dynamics(model, q, v, x), tau)) < TOL_FD_EXACT


def test_dynamics_derivatives_with_armature_match_pinocchio():
    """Rotor inertia adds armature * a to tau: M and M^-1 change, dtau/dq and dtau/dv do not,
    and da/dq, da/dv follow M^-1 (Pinocchio's Model.armature; tolerances as without it)."""
    import pinocchio  # noqa: F401 - a test dependency: missing fails
    entry = FLOATING[-1]
    path, plain = _load(entry)
    armature = np.r_[np.zeros(6), np.linspace(0.1, 0.5, plain.nv - 6)]
    model = plain.copy(armature=armature)
    pin = PinocchioOracle(path, model)
    pin.pm.armature = pin.v(armature)
    pin.pd = pin.pm.createData()
    rng = np.random.default_rng(23)
    for _ in range(2):
        q, v, a = random_state(model, rng)
        tau = rng.uniform(-5, 5, model.nv)
        fq = _compare_with_pinocchio(pin, model, q, v, a, tau, TOL_PIN_FD[0])
        assert rel_err(fq, rd.forward_dynamics_derivatives(plain, q, v, tau)[0]) > 1e-2


@pytest.mark.parametrize('entry', [ROBOTS[0], FLOATING[0], HUMANOID], ids=lambda r: r[0])
def test_dynamics_derivatives_identities(entry):
    """Relations the two algorithms do not build in: dtau/dv equals Algorithm 1's (Echeandia &
    Wensing, another recursion), dtau/da = M (the CRBA), M^-1 M = 1, and the forward derivatives
    are -M^-1 times the inverse ones evaluated at a = forward_dynamics(q, v, tau)."""
    _, model = _load(entry)
    data = rd.Data(model)
    rng = np.random.default_rng(24)
    q, v, a = random_state(model, rng)
    tau = rng.uniform(-5, 5, model.nv)
    dq, dv = rd.inverse_dynamics_derivatives(model, q, v, a, data=data)
    assert rel_err(dv, rd.inverse_dynamics_dv(model, q, v)) < 1e-14
    M = rd.mass_matrix(model, q)
    assert rel_err(data.M, M) < 1e-15                      # dtau/da, left by the same pass
    fq, fv, Minv = rd.forward_dynamics_derivatives(model, q, v, tau)
    assert np.allclose(Minv @ M, np.eye(model.nv), rtol=0, atol=1e-12 * np.linalg.cond(M))
    acc = rd.forward_dynamics(model, q, v, tau)
    dq_a, dv_a = rd.inverse_dynamics_derivatives(model, q, v, acc)
    scale = np.linalg.cond(M) * 1e-15                     # what the solve may lose
    assert rel_err(fq, -np.linalg.solve(M, dq_a)) < scale
    assert rel_err(fv, -np.linalg.solve(M, dv_a)) < scale


def test_dynamics_derivatives_of_mimic_joints_are_those_of_independent_coordinates():
    """Mimic joints stay independent coordinates (as in inverse_dynamics): the derivatives are
    the unconstrained ones, here of a gripper with a prismatic mimic joint, against differences."""
    model = rd.load_urdf(GRIPPER)
    rng = np.random.default_rng(25)
    q, v, a = rng.uniform(-1, 1, model.nv), rng.uniform(-2, 2, model.nv), rng.uniform(-3, 3, model.nv)
    dq, dv = rd.inverse_dynamics_derivatives(model, q, v, a)
    assert rel_err(dq, central_q(model, lambda x: rd.inverse_dynamics(model, x, v, a), q)) < TOL_FD_TAU_Q
    assert rel_err(dv, central_v(model, lambda x: rd.inverse_dynamics(model, q, x, a), v)) < TOL_FD_EXACT
    tau = rd.inverse_dynamics(model, q, v, a)
    fq, _, _ = rd.forward_dynamics_derivatives(model, q, v, tau)
    assert rel_err(fq, central_q(model, lambda x: rd.forward_dynamics(model, x, v, tau), q)) < TOL_FD_A_Q[0]


@pytest.mark.parametrize('entry', [ROBOTS[0], FLOATING[0]], ids=lambda r: r[0])
def test_dynamics_derivatives_into_data_are_views_and_allocate_nothing(entry):
    import tracemalloc
    _, model = _load(entry)
    data = rd.Data(model)
    rng = np.random.default_rng(26)
    q, v, a = random_state(model, rng)
    tau = rng.uniform(-5, 5, model.nv)
    dq, dv = rd.inverse_dynamics_derivatives(model, q, v, a, data=data)
    assert dq is data.dtau_dq and dv is data.dtau_dv
    assert all(np.array_equal(x, y) for x, y in zip((dq, dv), rd.inverse_dynamics_derivatives(model, q, v, a)))
    out = rd.forward_dynamics_derivatives(model, q, v, tau, data=data)
    assert out[0] is data.da_dq and out[1] is data.da_dv and out[2] is data.Minv
    assert all(np.array_equal(x, y) for x, y in zip(out, rd.forward_dynamics_derivatives(model, q, v, tau)))
    assert np.array_equal(data.ddq, rd.forward_dynamics(model, q, v, tau))
    # no new arrays: numpy reports its allocations to tracemalloc; one (nv, nv) output would
    # show as nv^2 * 8 bytes (the calls' own Python objects take a few hundred bytes)
    tracemalloc.start()
    try:
        for _ in range(3):
            rd.inverse_dynamics_derivatives(model, q, v, a, data=data)
            rd.forward_dynamics_derivatives(model, q, v, tau, data=data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < model.nv ** 2 * 8


@pytest.mark.parametrize('entry', [ROBOTS[0], HUMANOID], ids=lambda r: r[0])
def test_dynamics_derivatives_batch_equals_the_loop(entry):
    """On every thread numba has (the humanoid's 9 states fill two blocks on two cores).  The
    batch kernel is compiled on its own (another vectorization of the same code): over 4 seeds
    the inverse derivatives differ by 8e-16 at most, the forward ones by 3.5e-14 (2.4e-13 on
    the humanoid: M^-1 amplifies the last bits), M^-1 not at all; tolerances 3x that."""
    _, model = _load(entry)
    rng = np.random.default_rng(27)
    states = [random_state(model, rng) for _ in range(9)]
    Q, V, A = (np.array([s[i] for s in states]) for i in range(3))
    TAU = rng.uniform(-5, 5, V.shape)
    dq, dv = rd.inverse_dynamics_derivatives_batch(model, Q, V, A)
    fq, fv, Minv = rd.forward_dynamics_derivatives_batch(model, Q, V, TAU)
    assert dq.shape == fq.shape == Minv.shape == (9, model.nv, model.nv)
    for k in range(9):
        ref = rd.inverse_dynamics_derivatives(model, Q[k], V[k], A[k])
        assert rel_err(dq[k], ref[0]) < 2.5e-15 and rel_err(dv[k], ref[1]) < 2.5e-15
        ref = rd.forward_dynamics_derivatives(model, Q[k], V[k], TAU[k])
        tol = 7.5e-13 if entry is HUMANOID else 1.1e-13
        assert rel_err(fq[k], ref[0]) < tol and rel_err(fv[k], ref[1]) < tol
        assert rel_err(Minv[k], ref[2]) < 2.5e-15
    empty = rd.inverse_dynamics_derivatives_batch(model, Q[:0], V[:0], A[:0])
    assert empty[0].shape == (0, model.nv, model.nv)


def test_dynamics_derivatives_reject_bad_input_and_change_nothing():
    model = rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)
    data = rd.Data(model)
    rng = np.random.default_rng(28)
    q, v, a = random_state(model, rng)
    rd.forward_dynamics_derivatives(model, q, v, a, data=data)
    before = data.derivatives.copy()
    n = model.nv
    bad_quaternion = q.copy()
    bad_quaternion[3:7] *= 2.0
    for args in ((q[:-1], v, a), (q, v[:-1], a), (q, v, np.full(n, np.nan)), (bad_quaternion, v, a),
                 (q, np.full(n, np.inf), a), (q, 'v', a)):
        with pytest.raises(ValueError):
            rd.inverse_dynamics_derivatives(model, *args, data=data)
        with pytest.raises(ValueError):
            rd.forward_dynamics_derivatives(model, *args, data=data)
    assert np.array_equal(data.derivatives, before)
    with pytest.raises(ValueError, match='inverse_dynamics_derivatives'):   # a Data of another model
        rd.inverse_dynamics_derivatives(model, q, v, a, data=rd.Data(rd.load_urdf(rd.bundled_urdf('arm7'))))
    Q, V = np.array([q, q]), np.array([v, v])
    with pytest.raises(ValueError, match='same number of rows'):
        rd.forward_dynamics_derivatives_batch(model, Q, V, V[:1])
    with pytest.raises(ValueError):
        rd.inverse_dynamics_derivatives_batch(model, Q[:, :-1], V, V)
    with pytest.raises(ValueError):
        rd.inverse_dynamics_derivatives_batch(model, np.array([q, bad_quaternion]), V, V)
    # a moving link without mass or inertia: M is singular, forward dynamics refuses
    massless = model.copy(mass=np.r_[model.mass[:-1], 0.0], inertia=np.r_[model.inertia[:-1], np.zeros((1, 3, 3))])
    with pytest.raises(ValueError, match='positive definite'):
        rd.forward_dynamics_derivatives(massless, q, v, a)
    with pytest.raises(ValueError, match=r'Q\[0\]'):            # the first row named
        rd.forward_dynamics_derivatives_batch(massless, Q, V, V)
