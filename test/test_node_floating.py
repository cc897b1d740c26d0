"""dynamics_node with a floating base (bundled quadruped): base state from nav_msgs/Odometry."""
import itertools
import math

import numpy as np
import pytest

import ros_dynamics as rd

from test_node_support import (QUADRUPED, assert_dynamics_msg, christoffel_array,
                               dynamics_arrays, read, running_node)

pytestmark = pytest.mark.ros


GAIN = 25.0
_stamps = itertools.count(2_000_000_000_000, 1_000_000)


@pytest.fixture(scope='module')
def quad(rclpy_context, ros_env, tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp('quad'))
    params = {'robot_description': read(QUADRUPED), 'floating_base': True,
              'observer_gain': [GAIN], 'log_throttle_sec': 0.0, 'christoffel_decimation': 1}
    with running_node(rclpy_context, ros_env, tmp, 'quad', params) as (proc, probe):
        assert probe.spin_until(lambda: probe.odom_pub.get_subscription_count() >= 1)
        yield proc, probe


@pytest.fixture(scope='module')
def model():
    return rd.load_urdf(QUADRUPED, floating_base=True)


def odom(pos, quat_xyzw, lin, ang):
    from nav_msgs.msg import Odometry
    msg = Odometry()
    msg.header.frame_id, msg.child_frame_id = 'world', 'trunk'
    p, o = msg.pose.pose.position, msg.pose.pose.orientation
    p.x, p.y, p.z = map(float, pos)
    o.x, o.y, o.z, o.w = map(float, quat_xyzw)
    t = msg.twist.twist
    t.linear.x, t.linear.y, t.linear.z = map(float, lin)
    t.angular.x, t.angular.y, t.angular.z = map(float, ang)
    return msg


def base_state(seed):
    rng = np.random.default_rng(seed)
    quat = rng.normal(size=4)
    quat /= np.linalg.norm(quat)
    return rng.uniform(-1, 1, 3), quat, rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)


def joints(model, seed):
    rng = np.random.default_rng(seed)
    nj = len(model.joint_names)
    return rng.uniform(-1, 1, nj), rng.uniform(-1, 1, nj), rng.uniform(-5, 5, nj)


def test_nothing_before_odom_then_matches_core(quad, model):
    proc, probe = quad
    names = list(model.joint_names)
    qj, vj, ej = joints(model, 1)
    s0 = next(_stamps)
    probe.js_pub.publish(probe.joint_state(names, qj, vj, ej, s0))
    assert probe.spin_until(lambda: 'no valid odom yet' in proc.log())
    assert probe.counts()['dynamics'] == 0
    resp = probe.get('dynamics')
    assert not resp.success and 'no joint state accepted yet' in resp.message

    pos, quat, lin, ang = base_state(2)
    probe.odom_pub.publish(odom(pos, quat, lin, ang))
    probe.spin_for(0.2)
    # odom and joint_states are separate topics: send until they are paired
    dyn = probe.send_until_answered(lambda: probe.joint_state(names, qj, vj, ej, next(_stamps)))
    assert dyn is not None, proc.log()
    s = dyn.header.stamp.sec * 1_000_000_000 + dyn.header.stamp.nanosec
    qj2, vj2, ej2 = joints(model, 3)
    s2 = next(_stamps)
    dyn2 = probe.send_and_wait(probe.joint_state(names, qj2, vj2, ej2, s2))
    assert dyn2 is not None
    assert probe.spin_until(lambda: probe.find_stamped('external_torque', s2) is not None)
    assert probe.spin_until(lambda: probe.find_stamped('christoffel', s2) is not None)
    q1 = np.r_[pos, quat, qj]
    v1 = np.r_[lin, ang, vj]
    q2 = np.r_[pos, quat, qj2]
    v2 = np.r_[lin, ang, vj2]
    assert_dynamics_msg(dyn2, model, q2, v2)
    assert dyn2.header.frame_id == 'world'
    np.testing.assert_allclose(christoffel_array(probe.find_stamped('christoffel', s2)),
                               rd.christoffel(model, q2), rtol=0, atol=1e-12)
    assert len(dyn2.names) == model.nv == 6 + len(names)
    assert list(dyn2.names[6:]) == names
    base_names = ['floating_base/linear_x', 'floating_base/linear_y', 'floating_base/linear_z',
                  'floating_base/angular_x', 'floating_base/angular_y', 'floating_base/angular_z']
    assert list(dyn2.names[:6]) == base_names
    # observer: the base is unactuated (zero generalized force on the 6 base coordinates)
    obs = rd.MomentumObserver(model, gain=GAIN)
    obs.reset(q1, v1)
    r = obs.update(q2, v2, np.r_[np.zeros(6), ej2], (s2 - s) * 1e-9)
    ext = probe.find_stamped('external_torque', s2)
    assert list(ext.name) == list(dyn2.names)
    np.testing.assert_allclose(np.asarray(ext.effort), r, rtol=0, atol=1e-12)


def test_services_at_requested_base_state(quad, model):
    """GetDynamics/GetChristoffel with a base pose and twist: the core's terms at that state."""
    proc, probe = quad
    names = list(model.joint_names)
    pos, quat, lin, ang = base_state(7)
    qj, vj, _ = joints(model, 8)
    perm = np.random.default_rng(2).permutation(len(names))
    q = np.r_[pos, quat, qj]
    v = np.r_[lin, ang, vj]
    resp = probe.get('dynamics', [names[i] for i in perm], qj[perm], vj[perm],
                     base_pose=np.r_[pos, quat], base_twist=np.r_[lin, ang])
    assert resp.success, resp.message
    assert_dynamics_msg(resp.dynamics, model, q, v)
    resp = probe.get('christoffel', names, qj, base_pose=np.r_[pos, quat])
    assert resp.success, resp.message
    gamma = christoffel_array(resp.christoffel)
    np.testing.assert_allclose(gamma, rd.christoffel(model, q), rtol=0, atol=1e-12)
    # quasi-velocities: C = Gamma . v still holds (Gamma := dC/dv)
    np.testing.assert_allclose(gamma @ v, dynamics_arrays(
        probe.get('dynamics', names, qj, vj, np.r_[pos, quat], np.r_[lin, ang]).dynamics)[3],
        atol=1e-10)
    # a non-unit quaternion and a NaN twist are refused with a reason
    resp = probe.get('dynamics', names, qj, vj, base_pose=np.r_[pos, 2 * quat])
    assert not resp.success and 'quaternion' in resp.message
    resp = probe.get('dynamics', names, qj, vj, base_pose=np.r_[pos, quat],
                     base_twist=[math.nan, 0, 0, 0, 0, 0])
    assert not resp.success and 'NaN' in resp.message


def test_bad_odom_is_ignored(quad, model):
    proc, probe = quad
    names = list(model.joint_names)
    pos, quat, lin, ang = base_state(2)  # the odometry currently held by the node
    bad = [odom(pos, quat, [math.nan, 0, 0], ang), odom(pos, 2 * quat, lin, ang),
           odom([math.inf, 0, 0], quat, lin, ang)]
    for msg in bad:
        probe.odom_pub.publish(msg)
    assert probe.spin_until(lambda: 'non-finite pose or twist' in proc.log()
                            and 'quaternion norm' in proc.log())
    qj, vj, ej = joints(model, 4)
    dyn = probe.send_and_wait(probe.joint_state(names, qj, vj, ej, next(_stamps)))
    assert dyn is not None
    assert_dynamics_msg(dyn, model, np.r_[pos, quat, qj], np.r_[lin, ang, vj])
    log = proc.log()
    assert 'non-finite pose or twist' in log and 'quaternion norm' in log
    assert proc.alive()
