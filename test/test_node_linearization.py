"""~/get_linearization on a real dynamics_node process over loopback DDS (bundled quadruped,
floating base): A = d(v, a)/d(q, v) and B = d(v, a)/d(tau) in the stream's joint coordinates,
checked against Pinocchio's computeABADerivatives (its tangent-space convention is the
service's) at the requested state and at the latest accepted one."""
import itertools

import numpy as np
import pytest

import ros_dynamics as rd
from _oracle import PinocchioOracle
from test_node_floating import base_state, joints, odom
from test_node_support import QUADRUPED, read, running_node

pytestmark = pytest.mark.ros

_stamps = itertools.count(3_000_000_000_000, 1_000_000)
# Pinocchio vs the core's derivatives: 1.1e-13 relative at most on this robot (test_derivatives);
# the message carries float64 unchanged
TOL = 3e-13


@pytest.fixture(scope='module')
def quad(rclpy_context, ros_env, tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp('lin'))
    params = {'robot_description': read(QUADRUPED), 'floating_base': True,
              'log_throttle_sec': 0.0}
    with running_node(rclpy_context, ros_env, tmp, 'lin', params) as (proc, probe):
        assert probe.spin_until(lambda: probe.odom_pub.get_subscription_count() >= 1)
        yield proc, probe


@pytest.fixture(scope='module')
def model():
    return rd.load_urdf(QUADRUPED, floating_base=True)


def linearize(probe, names=None, q=None, v=None, base=None, effort=None):
    from ros_dynamics_msgs.srv import GetLinearization
    req = GetLinearization.Request()
    if names is not None:
        req.state = probe.joint_state(names, q, v)
        pos, quat, lin, ang = base
        p, o = req.base_pose.position, req.base_pose.orientation
        p.x, p.y, p.z = map(float, pos)
        o.x, o.y, o.z, o.w = map(float, quat)
        t = req.base_twist
        t.linear.x, t.linear.y, t.linear.z = map(float, lin)
        t.angular.x, t.angular.y, t.angular.z = map(float, ang)
    if effort is not None:
        req.effort = [float(x) for x in effort]
    return probe.call(GetLinearization, f'{probe.prefix}/get_linearization', req)


def check_against_pinocchio(resp, model, q, v, tau):
    assert resp.success, resp.message
    n = model.nv
    assert list(resp.names) == list(rd.BASE_DOF_NAMES) + list(model.joint_names)
    np.testing.assert_allclose(resp.position, q, rtol=0, atol=1e-15)
    np.testing.assert_allclose(resp.velocity, v, rtol=0, atol=1e-15)
    A = np.asarray(resp.a_matrix).reshape(2 * n, 2 * n)
    B = np.asarray(resp.b_matrix).reshape(2 * n, n)
    pin = PinocchioOracle(QUADRUPED, model)
    da_dq, da_dv, Minv = (np.array(x) for x in pin.pin.computeABADerivatives(
        pin.pm, pin.pd, pin.q(q), pin.v(v), pin.v(tau)))
    Minv = np.triu(Minv) + np.triu(Minv, 1).T
    ref_A = np.block([[np.zeros((n, n)), np.eye(n)], [pin.mat(da_dq), pin.mat(da_dv)]])
    ref_B = np.vstack([np.zeros((n, n)), pin.mat(Minv)])
    scale = max(1.0, np.abs(ref_A).max(), np.abs(ref_B).max())
    assert np.abs(A - ref_A).max() < TOL * scale
    assert np.abs(B - ref_B).max() < TOL * scale


def test_linearization_at_the_requested_state(quad, model):
    import pinocchio  # noqa: F401 - a test dependency: missing fails
    proc, probe = quad
    names = list(model.joint_names)
    qj, vj, ej = joints(model, 31)
    pos, quat, lin, ang = base_state(32)
    tau = np.r_[np.zeros(6), ej]                       # unactuated base: zero force there
    perm = np.random.default_rng(33).permutation(len(names))
    resp = linearize(probe, [names[i] for i in perm], qj[perm], vj[perm], (pos, quat, lin, ang), tau)
    check_against_pinocchio(resp, model, np.r_[pos, quat, qj], np.r_[lin, ang, vj], tau)


def test_linearization_at_the_latest_state_with_zero_effort(quad, model):
    import pinocchio  # noqa: F401 - a test dependency: missing fails
    proc, probe = quad
    names = list(model.joint_names)
    pos, quat, lin, ang = base_state(34)
    qj, vj, ej = joints(model, 35)
    probe.odom_pub.publish(odom(pos, quat, lin, ang))
    # odom and joint_states are separate topics: send until they are paired
    dyn = probe.send_until_answered(lambda: probe.joint_state(names, qj, vj, ej, next(_stamps)))
    assert dyn is not None, proc.log()
    resp = linearize(probe)                            # empty state, empty effort
    check_against_pinocchio(resp, model, np.r_[pos, quat, qj], np.r_[lin, ang, vj], np.zeros(model.nv))


def test_linearization_rejects_bad_requests_and_keeps_serving(quad, model):
    proc, probe = quad
    names = list(model.joint_names)
    qj, vj, _ = joints(model, 36)
    base = base_state(37)
    resp = linearize(probe, names, qj, vj, base, np.zeros(model.nv - 1))
    assert not resp.success and 'effort must have' in resp.message
    resp = linearize(probe, names[:-1], qj[:-1], vj[:-1], base)
    assert not resp.success and 'missing' in resp.message
    resp = linearize(probe, names, qj, vj, base, np.r_[np.zeros(model.nv - 1), np.nan])
    assert not resp.success
    resp = linearize(probe, names, qj, vj, base, np.zeros(model.nv))
    assert resp.success, resp.message
    assert proc.alive()
