"""dynamics_node's ``coordinates`` parameter: ~/dynamics, ~/christoffel and the services in the
independent coordinates of a gripper with mimic fingers (``mimic_reduced``) and in the
centre-of-mass coordinates of the floating quadruped (``center_of_mass``).

The published numbers are compared with the core library's coordinate changes (1e-12) and
checked against what those changes must give, computed here from the full-coordinate terms or
from physics: Mbar = A^T M A with A read off the URDF's <mimic> tags, Mbar_dot = Cbar + Cbar^T
(Theorem 1), Cbar = Gammabar . vbar; in CoM coordinates M block-diagonal with m 1_3, the
gravity force -m * gravity on the CoM and none on the other coordinates, the CoM
position and velocity of the published state (Pinocchio).
"""
import itertools
import os

import numpy as np
import pytest

import ros_dynamics as rd

from test_node_floating import base_state, joints, odom
from test_node_operational_space import matrices, request as os_request
from test_node_support import (QUADRUPED, christoffel_array, dynamics_arrays, read,
                               running_node, set_model_params)

pytestmark = pytest.mark.ros


GRIPPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures', 'urdf',
                       'gripper_mimic.urdf')
INDEPENDENT = ['wrist_roll', 'wrist_pitch', 'finger_left']
ATOL = 1e-12
_stamps = itertools.count(3_000_000_000_000, 1_000_000)


def assert_terms(msg, terms, qbar, vbar, atol=ATOL):
    mq, mv, M, C, Mdot, g = dynamics_arrays(msg)
    np.testing.assert_allclose(mq, qbar, rtol=0, atol=1e-14)
    np.testing.assert_allclose(mv, vbar, rtol=0, atol=1e-14)
    for name, got, exp in (('M', M, terms.M), ('C', C, terms.C), ('Mdot', Mdot, terms.Mdot),
                           ('g', g, terms.g)):
        np.testing.assert_allclose(got, exp, rtol=0, atol=atol, err_msg=name)


# ---------------------------------------------------------------- gripper, mimic_reduced
@pytest.fixture(scope='module')
def gripper_model():
    return rd.load_urdf(GRIPPER)


@pytest.fixture(scope='module')
def gripper(rclpy_context, ros_env, tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp('gripper'))
    params = {'robot_description': read(GRIPPER), 'coordinates': 'mimic_reduced',
              'christoffel_decimation': 1, 'log_throttle_sec': 0.0}
    with running_node(rclpy_context, ros_env, tmp, 'gripper', params) as (proc, probe):
        yield proc, probe


def mimic_matrix(model):
    """A = dq/dqbar from the <mimic> tags, written out here (finger_right = -finger_left,
    knuckle = 2 finger_right + 0.1), independent of rd.MimicCoordinates."""
    A = np.zeros((model.nv, 3))
    for i, name in enumerate(INDEPENDENT):
        A[model.joint_v_index(name), i] = 1.0
    A[model.joint_v_index('finger_right'), 2] = -1.0
    A[model.joint_v_index('knuckle'), 2] = -2.0
    return A


def gripper_state(model, seed):
    """Full (q, v) on the mimic constraint and the independent (qbar, vbar)."""
    rng = np.random.default_rng(seed)
    qbar = np.r_[rng.uniform(-1.5, 1.5, 2), rng.uniform(0.0, 0.04)]
    vbar = np.r_[rng.uniform(-2, 2, 2), rng.uniform(-0.1, 0.1)]
    A = mimic_matrix(model)
    offset = np.zeros(model.nq)
    offset[model.joint_q_index('knuckle')] = 0.1
    return A @ qbar + offset, A @ vbar, qbar, vbar


def test_mimic_reduced_topics_carry_the_independent_coordinates(gripper, gripper_model):
    proc, probe = gripper
    model = gripper_model
    A = mimic_matrix(model)
    mc = rd.MimicCoordinates(model)
    np.testing.assert_array_equal(mc.A, A)
    q, v, qbar, vbar = gripper_state(model, 1)
    stamp = next(_stamps)
    # joint order of the message shuffled: matched by name as always
    perm = [4, 2, 0, 3, 1]
    names = [model.joint_names[i] for i in perm]
    dyn = probe.send_and_wait(probe.joint_state(names, q[perm], v[perm], np.zeros(5), stamp))
    assert dyn is not None, proc.log()
    assert list(dyn.names) == INDEPENDENT
    assert probe.spin_until(lambda: probe.find_stamped('christoffel', stamp) is not None)
    # the core library's reduction of the full terms
    full = rd.dynamics(model, q, v)
    assert_terms(dyn, mc.reduce(full), qbar, vbar)
    # ... which is eqs. (23)-(25) with the A of the URDF, and Christoffel-consistent
    _, _, M, C, Mdot, g = dynamics_arrays(dyn)
    np.testing.assert_allclose(M, A.T @ full.M @ A, rtol=0, atol=ATOL)
    np.testing.assert_allclose(C, A.T @ full.C @ A, rtol=0, atol=ATOL)
    np.testing.assert_allclose(g, A.T @ full.g, rtol=0, atol=ATOL)
    np.testing.assert_allclose(Mdot, C + C.T, rtol=0, atol=ATOL)
    # the reduced equations of motion reproduce the full inverse dynamics on the constraint
    abar = np.array([0.4, -1.1, 0.05])
    np.testing.assert_allclose(M @ abar + C @ vbar + g,
                               A.T @ rd.inverse_dynamics(model, q, v, A @ abar), atol=1e-10)
    gam = probe.find_stamped('christoffel', stamp)
    assert list(gam.names) == INDEPENDENT
    np.testing.assert_allclose(np.asarray(gam.position), qbar, rtol=0, atol=1e-14)
    G = christoffel_array(gam)
    np.testing.assert_allclose(G, rd.transform_christoffel(rd.christoffel(model, q), A),
                               rtol=0, atol=ATOL)
    np.testing.assert_allclose(G @ vbar, C, rtol=0, atol=1e-12)   # Cbar = Gammabar . vbar
    # the observer stays in the model's joint coordinates (all five joints)
    ext = None
    s2 = next(_stamps)
    q2, v2, _, _ = gripper_state(model, 2)
    probe.send_and_wait(probe.joint_state(model.joint_names, q2, v2, np.zeros(5), s2))
    assert probe.spin_until(lambda: probe.find_stamped('external_torque', s2) is not None)
    ext = probe.find_stamped('external_torque', s2)
    assert list(ext.name) == list(model.joint_names)


def test_mimic_reduced_services(gripper, gripper_model):
    proc, probe = gripper
    model = gripper_model
    mc = rd.MimicCoordinates(model)
    q, v, qbar, vbar = gripper_state(model, 5)
    resp = probe.get('dynamics', model.joint_names, q, v)
    assert resp.success, resp.message
    assert list(resp.dynamics.names) == INDEPENDENT
    assert_terms(resp.dynamics, mc.reduce(rd.dynamics(model, q, v)), qbar, vbar)
    resp = probe.get('christoffel', model.joint_names, q)
    assert resp.success, resp.message
    assert list(resp.christoffel.names) == INDEPENDENT
    np.testing.assert_allclose(np.asarray(resp.christoffel.position), qbar, atol=1e-14)
    np.testing.assert_allclose(christoffel_array(resp.christoffel),
                               rd.transform_christoffel(rd.christoffel(model, q), mc.A),
                               rtol=0, atol=ATOL)
    # the latest accepted state (empty request) comes back reduced as well
    resp = probe.get('dynamics')
    assert resp.success and list(resp.dynamics.names) == INDEPENDENT


def test_mimic_reduced_accepts_the_independent_joints_alone(gripper, gripper_model):
    """A joint state with the independent joints only: the followers come from the mimic
    relation (A and offset written out from the URDF here), ~/dynamics is the core's reduction
    at that full state; leader efforts drive the observer as the full efforts [leaders, 0] do
    (A^T tau = the leader efforts), the residual compared over two identical observer runs."""
    proc, probe = gripper
    model = gripper_model
    mc = rd.MimicCoordinates(model)
    q, v, qbar, vbar = gripper_state(model, 31)
    perm = [2, 0, 1]                                  # any order, matched by name
    names = [INDEPENDENT[i] for i in perm]
    stamp = next(_stamps)
    dyn = probe.send_and_wait(probe.joint_state(names, qbar[perm], vbar[perm], None, stamp))
    assert dyn is not None, proc.log()
    assert list(dyn.names) == INDEPENDENT
    assert_terms(dyn, mc.reduce(rd.dynamics(model, q, v)), qbar, vbar)
    assert probe.spin_until(lambda: probe.find_stamped('christoffel', stamp) is not None)
    np.testing.assert_allclose(christoffel_array(probe.find_stamped('christoffel', stamp)),
                               rd.transform_christoffel(rd.christoffel(model, q), mc.A),
                               rtol=0, atol=ATOL)
    # the services take the independent joints alone as well
    resp = probe.get('dynamics', INDEPENDENT, qbar, vbar)
    assert resp.success, resp.message
    assert_terms(resp.dynamics, mc.reduce(rd.dynamics(model, q, v)), qbar, vbar)
    # observer: the same two states, leader efforts only, then all joints with 0 at followers
    q2, v2, qbar2, vbar2 = gripper_state(model, 32)
    ebar = np.array([0.7, -0.4, 2.5])
    e = np.zeros(model.nv)
    e[[model.joint_v_index(n) for n in INDEPENDENT]] = ebar
    residuals = []
    for full in (False, True):
        assert probe.trigger('reset_observer').success
        s1, s2 = next(_stamps), next(_stamps)
        for s, (qq, vv, qb, vb) in ((s1, (q, v, qbar, vbar)), (s2, (q2, v2, qbar2, vbar2))):
            msg = (probe.joint_state(model.joint_names, qq, vv, e, s) if full
                   else probe.joint_state(INDEPENDENT, qb, vb, ebar, s))
            assert probe.send_and_wait(msg) is not None, proc.log()
        assert probe.spin_until(lambda: probe.find_stamped('external_torque', s2) is not None)
        ext = probe.find_stamped('external_torque', s2)
        assert list(ext.name) == list(model.joint_names)
        residuals.append(np.asarray(ext.effort))
    assert np.abs(residuals[0]).max() > 1.0            # the efforts are not balanced: r != 0
    np.testing.assert_allclose(residuals[0], residuals[1], rtol=0, atol=1e-12)
    # an independent joint missing: refused with the independent joints named
    resp = probe.get('dynamics', INDEPENDENT[:2], qbar[:2])
    assert not resp.success and "missing required joint(s) ['finger_left']" in resp.message


def test_mimic_reduced_operational_space(gripper, gripper_model):
    """~/get_operational_space answers the constrained system's Lambdabar = J A (A^T M A)^-1
    A^T J^T (rd.MimicCoordinates.contact_compliance, checked against finite differences and
    Pinocchio in test_coordinates.py), not the free model's J M^-1 J^T; position = qbar."""
    proc, probe = gripper
    model = gripper_model
    mc = rd.MimicCoordinates(model)
    links, points = ['left_finger', 'right_tip'], [(0.0, 0.01, 0.05), (0.0, -0.005, 0.03)]
    nodes = list(zip(links, points))
    q, v, qbar, vbar = gripper_state(model, 41)
    expected = mc.contact_compliance(q, nodes)
    free = rd.contact_compliance(model, q, nodes)
    assert np.abs(free - expected).max() > 0.1 * np.abs(free).max()
    for names, x in ((model.joint_names, q), (INDEPENDENT, qbar)):
        resp = os_request(probe, links, points, names=names, q=x)
        lam, _ = matrices(resp)
        np.testing.assert_allclose(lam, expected, rtol=0, atol=1e-12 * np.abs(expected).max())
        np.testing.assert_allclose(np.asarray(resp.operational_space.position), qbar,
                                   rtol=0, atol=1e-14)
    # 6 node rows, 3 independent coordinates: Lambdabar has rank 3, no inertia
    assert np.linalg.matrix_rank(expected, tol=1e-9 * np.abs(expected).max()) == 3
    resp = os_request(probe, links, points, names=INDEPENDENT, q=qbar, inertia=True)
    assert not resp.success and 'singular' in resp.message
    # the latest accepted state (a leader-only joint state)
    stamp = next(_stamps)
    assert probe.send_and_wait(probe.joint_state(INDEPENDENT, qbar, vbar, None, stamp)) is not None
    lam, _ = matrices(os_request(probe, links, points, spatial=True))
    np.testing.assert_allclose(lam, mc.contact_compliance(q, nodes, spatial=True), rtol=0,
                               atol=1e-12 * np.abs(lam).max())


def test_coordinates_parameter_at_runtime(gripper, gripper_model):
    """'joint' publishes all five joints again; a fixed base refuses 'center_of_mass'; an
    unknown choice is refused with the list of choices. Back to mimic_reduced at the end."""
    proc, probe = gripper
    model = gripper_model
    res = probe.set_params(coordinates='center_of_mass')
    assert not res.successful and 'floating_base' in res.reason
    res = probe.set_params(coordinates='minimal')
    assert not res.successful and 'mimic_reduced' in res.reason
    assert set_model_params(proc, probe, coordinates='joint').successful   # a rebuild
    try:
        # the independent joints alone are refused in joint coordinates, with the reason
        q, v, qbar, vbar = gripper_state(model, 8)
        resp = probe.get('dynamics', INDEPENDENT, qbar, vbar)
        assert not resp.success
        assert "missing required joint(s) ['finger_right', 'knuckle']" in resp.message
        assert 'mimic_reduced' in resp.message
        bad = next(_stamps)
        probe.js_pub.publish(probe.joint_state(INDEPENDENT, qbar, vbar, None, bad))
        assert probe.spin_until(lambda: "missing required joint(s) ['finger_right', 'knuckle'] "
                                "(with coordinates 'mimic_reduced'" in proc.log()), proc.log()
        q, v, _, _ = gripper_state(model, 9)
        dyn = probe.send_and_wait(probe.joint_state(model.joint_names, q, v, None,
                                                    next(_stamps)))
        assert dyn is not None, proc.log()
        assert list(dyn.names) == list(model.joint_names)
        d = rd.dynamics(model, q, v)
        assert_terms(dyn, d, q, v)
        assert probe.find_stamped('dynamics', bad) is None
    finally:
        assert set_model_params(proc, probe, coordinates='mimic_reduced').successful
    dyn = probe.send_and_wait(probe.joint_state(model.joint_names, q, v, None, next(_stamps)))
    assert dyn is not None and list(dyn.names) == INDEPENDENT
    assert 'parameter coordinates' in proc.log()


# ---------------------------------------------------------------- quadruped, center_of_mass
@pytest.fixture(scope='module')
def quad_model():
    return rd.load_urdf(QUADRUPED, floating_base=True)


@pytest.fixture(scope='module')
def quad_com(rclpy_context, ros_env, tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp('quad_com'))
    params = {'robot_description': read(QUADRUPED), 'floating_base': True,
              'coordinates': 'center_of_mass', 'christoffel_decimation': 1,
              'log_throttle_sec': 0.0}
    with running_node(rclpy_context, ros_env, tmp, 'quad_com', params) as (proc, probe):
        assert probe.spin_until(lambda: probe.odom_pub.get_subscription_count() >= 1)
        yield proc, probe


COM_BASE = ['center_of_mass/x', 'center_of_mass/y', 'center_of_mass/z',
            'floating_base/angular_x', 'floating_base/angular_y', 'floating_base/angular_z']


def test_center_of_mass_topics(quad_com, quad_model):
    proc, probe = quad_com
    model = quad_model
    co = rd.CenterOfMassCoordinates(model)
    m = model.total_mass()
    names = list(model.joint_names)
    pos, quat, lin, ang = base_state(11)
    probe.odom_pub.publish(odom(pos, quat, lin, ang))
    probe.spin_for(0.2)
    qj, vj, _ = joints(model, 12)
    # odom and joint_states are separate topics: send until they are paired
    dyn = probe.send_until_answered(lambda: probe.joint_state(names, qj, vj, None, next(_stamps)))
    assert dyn is not None, proc.log()
    assert list(dyn.names) == COM_BASE + names
    assert dyn.header.frame_id == 'world'
    stamp = dyn.header.stamp.sec * 1_000_000_000 + dyn.header.stamp.nanosec
    assert probe.spin_until(lambda: probe.find_stamped('christoffel', stamp) is not None)
    q, v = np.r_[pos, quat, qj], np.r_[lin, ang, vj]
    qbar, vbar = co.state(q, v)
    assert_terms(dyn, co.dynamics(q, v), qbar, vbar)
    # the published state, independently: CoM position and velocity in the world from
    # Pinocchio (test-only oracle), the rest unchanged
    np.testing.assert_allclose(qbar[3:], q[3:], rtol=0, atol=0)           # orientation, joints
    np.testing.assert_allclose(vbar[3:], v[3:], rtol=0, atol=0)           # omega, joint rates
    from _oracle import PinocchioOracle
    pin = PinocchioOracle(QUADRUPED, model)
    pin.pin.centerOfMass(pin.pm, pin.pd, pin.q(q), pin.v(v))
    np.testing.assert_allclose(qbar[:3], pin.pd.com[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(vbar[:3], pin.pd.vcom[0], rtol=0, atol=1e-12)
    full = rd.dynamics(model, q, v)
    # ... and the structure of Remark 6
    _, _, M, C, Mdot, g = dynamics_arrays(dyn)
    np.testing.assert_allclose(M[:3, :3], m * np.eye(3), rtol=0, atol=1e-12)
    np.testing.assert_allclose(M[:3, 3:], 0.0, atol=1e-12)
    np.testing.assert_allclose(M, M.T, atol=1e-12)
    np.testing.assert_allclose(C[:3], 0.0, atol=1e-12)
    np.testing.assert_allclose(C[:, :3], 0.0, atol=1e-12)
    np.testing.assert_allclose(Mdot, C + C.T, atol=1e-12)
    # gravity acts on the CoM only: U = -m gravity . p_CoM does not change with the rest
    np.testing.assert_allclose(g[:3], [0.0, 0.0, 9.81 * m], rtol=0, atol=1e-11)
    np.testing.assert_allclose(g[3:], 0.0, atol=1e-11)
    # kinetic energy is invariant: 1/2 vbar^T Mbar vbar = 1/2 v^T M v
    np.testing.assert_allclose(vbar @ M @ vbar, v @ full.M @ v, rtol=1e-13)
    gam = probe.find_stamped('christoffel', stamp)
    assert list(gam.names) == COM_BASE + names
    np.testing.assert_allclose(np.asarray(gam.position), qbar, rtol=0, atol=1e-14)
    G = christoffel_array(gam)
    np.testing.assert_allclose(G, co.christoffel(q), rtol=0, atol=ATOL)
    np.testing.assert_allclose(G @ vbar, C, rtol=0, atol=1e-11)          # Cbar = Gammabar . vbar
    np.testing.assert_allclose(G[:3], 0.0, atol=1e-12)


def test_center_of_mass_services(quad_com, quad_model):
    proc, probe = quad_com
    model = quad_model
    co = rd.CenterOfMassCoordinates(model)
    names = list(model.joint_names)
    pos, quat, lin, ang = base_state(21)
    qj, vj, _ = joints(model, 22)
    q, v = np.r_[pos, quat, qj], np.r_[lin, ang, vj]
    qbar, vbar = co.state(q, v)
    resp = probe.get('dynamics', names, qj, vj, base_pose=np.r_[pos, quat],
                     base_twist=np.r_[lin, ang])
    assert resp.success, resp.message
    assert list(resp.dynamics.names) == COM_BASE + names
    assert_terms(resp.dynamics, co.dynamics(q, v), qbar, vbar)
    resp = probe.get('christoffel', names, qj, base_pose=np.r_[pos, quat])
    assert resp.success, resp.message
    np.testing.assert_allclose(np.asarray(resp.christoffel.position), qbar, atol=1e-14)
    np.testing.assert_allclose(christoffel_array(resp.christoffel), co.christoffel(q),
                               rtol=0, atol=ATOL)
