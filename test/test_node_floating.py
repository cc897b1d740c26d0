"""dynamics_node with a floating base (bundled quadruped): base state from nav_msgs/Odometry."""
import itertools
import math

import numpy as np
import pytest

from test_node_support import QUADRUPED, assert_matrix_msg, read, running_node

pytestmark = pytest.mark.ros

rd = pytest.importorskip('ros_dynamics')

GAIN = 25.0
_stamps = itertools.count(2_000_000_000_000, 1_000_000)


@pytest.fixture(scope='module')
def quad(rclpy_context, ros_env, tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp('quad'))
    params = {'robot_description': read(QUADRUPED), 'floating_base': True,
              'observer_gain': [GAIN], 'log_throttle_sec': 0.0}
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
    probe.spin_for(0.5)
    assert probe.counts()['gravity_torque'] == 0
    assert probe.counts()['mass_matrix'] == 0
    assert 'no valid odom yet' in proc.log()

    pos, quat, lin, ang = base_state(2)
    probe.odom_pub.publish(odom(pos, quat, lin, ang))
    probe.spin_for(0.2)
    g_msg = None
    for _ in range(20):  # odom and joint_states are separate topics: retry until paired
        s = next(_stamps)
        g_msg = probe.send_and_wait(probe.joint_state(names, qj, vj, ej, s), timeout=0.5)
        if g_msg is not None:
            break
    assert g_msg is not None, proc.log()
    before = {k: len(v) for k, v in probe.received.items()}
    qj2, vj2, ej2 = joints(model, 3)
    s2 = next(_stamps)
    g2 = probe.send_and_wait(probe.joint_state(names, qj2, vj2, ej2, s2))
    assert g2 is not None
    assert probe.spin_until(lambda: probe.find_stamped('external_torque', s2) is not None)
    assert probe.wait_counts({k: before[k] + 1 for k in ('mass_matrix', 'coriolis_matrix',
                                                         'mass_matrix_dot', 'christoffel')})
    q1 = np.r_[pos, quat, qj]
    v1 = np.r_[lin, ang, vj]
    q2 = np.r_[pos, quat, qj2]
    v2 = np.r_[lin, ang, vj2]
    d = rd.dynamics(model, q2, v2)
    assert_matrix_msg(probe.received['mass_matrix'][-1], d.M)
    assert_matrix_msg(probe.received['coriolis_matrix'][-1], d.C)
    assert_matrix_msg(probe.received['mass_matrix_dot'][-1], d.Mdot)
    assert_matrix_msg(probe.received['christoffel'][-1], rd.christoffel(model, q2))
    assert len(g2.name) == model.nv == 6 + len(names)
    assert list(g2.name[6:]) == names
    assert list(g2.name[:6]) == ['floating_base/force_x', 'floating_base/force_y',
                                 'floating_base/force_z', 'floating_base/torque_x',
                                 'floating_base/torque_y', 'floating_base/torque_z']
    np.testing.assert_allclose(np.asarray(g2.effort), d.g, rtol=0, atol=1e-12)
    # observer: the base is unactuated (zero generalized force on the 6 base coordinates)
    obs = rd.MomentumObserver(model, gain=GAIN)
    obs.reset(q1, v1)
    r = obs.update(q2, v2, np.r_[np.zeros(6), ej2], (s2 - s) * 1e-9)
    ext = probe.find_stamped('external_torque', s2)
    np.testing.assert_allclose(np.asarray(ext.effort), r, rtol=0, atol=1e-12)


def test_bad_odom_is_ignored(quad, model):
    proc, probe = quad
    names = list(model.joint_names)
    pos, quat, lin, ang = base_state(2)  # the odometry currently held by the node
    bad = [odom(pos, quat, [math.nan, 0, 0], ang), odom(pos, 2 * quat, lin, ang),
           odom([math.inf, 0, 0], quat, lin, ang)]
    for msg in bad:
        probe.odom_pub.publish(msg)
    probe.spin_for(0.3)
    qj, vj, ej = joints(model, 4)
    g_msg = probe.send_and_wait(probe.joint_state(names, qj, vj, ej, next(_stamps)))
    assert g_msg is not None
    expected = rd.gravity(model, np.r_[pos, quat, qj])
    np.testing.assert_allclose(np.asarray(g_msg.effort), expected, rtol=0, atol=1e-12)
    log = proc.log()
    assert 'non-finite pose or twist' in log and 'quaternion norm' in log
    assert proc.alive()
