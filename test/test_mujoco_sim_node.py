"""``sim_mujoco`` as a real process over loopback DDS (the bundled quadruped, standing held by
its PD): the odometry is late by exactly ``odom_delay``, at ``odom_rate``, and is the plant's
own base pose at the stamp it carries (read back from the truth record the node writes); a
command acts no earlier than ``command_delay`` after the state it answers; malformed commands
(lengths, an unknown joint, a NaN) are refused, logged, and the node keeps running."""
import os

import numpy as np
import pytest

import ros_dynamics as rd
from test_node_support import TIMEOUT, NodeProcess

pytestmark = pytest.mark.ros


def _ns(stamp):
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def test_late_odometry_delayed_commands_bad_input_refused(rclpy_context, ros_env, tmp_path):
    import time

    import rclpy
    from nav_msgs.msg import Odometry
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    with open(rd.bundled_urdf('quadruped')) as f:
        xml = f.read()
    truth_path = str(tmp_path / 'truth.npz')
    node = NodeProcess(ros_env, str(tmp_path), 'ms', dict(
        robot_description=xml, real_time_factor=0.5, odom_rate=200.0, odom_delay=0.01,
        command_delay=0.002, hidden_load=0.5, wait_for_subscribers=1, truth_record=truth_path),
        node_name='sim', module='ros_dynamics.ros.simulation.mujoco_sim_node')
    cli = rclpy.create_node('ms_probe', context=rclpy_context)
    ex = SingleThreadedExecutor(context=rclpy_context)
    ex.add_node(cli)
    qos = QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE)
    js, odom = [], []
    cli.create_subscription(JointState, '/ms/joint_states', js.append, qos)
    cli.create_subscription(Odometry, '/ms/odom', odom.append, qos)
    pub = cli.create_publisher(JointState, '/ms/sim/effort_command', qos)

    def spin_until(pred, timeout=TIMEOUT):
        end = time.monotonic() + timeout
        while time.monotonic() < end and not pred():
            ex.spin_once(timeout_sec=0.01)
        return pred()

    def command(names, effort, stamp_ns):
        m = JointState(name=list(names), effort=[float(x) for x in effort])
        m.header.stamp.sec, m.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
        pub.publish(m)

    try:
        assert spin_until(lambda: len(js) >= 200 and pub.get_subscription_count(), 60.0), \
            node.log()
        names = list(js[-1].name)
        s = _ns(js[-1].header.stamp)
        command(names[:-1], np.zeros(len(names)), s)                  # lengths differ
        command(names[:-1] + ['no_such_joint'], np.zeros(len(names)), s)
        command(names, [np.nan] + [0.0] * (len(names) - 1), s)
        tau = 0.5 + 0.01 * np.arange(len(names))
        command(names, tau, s)
        assert spin_until(lambda: _ns(js[-1].header.stamp) > s + 50_000_000), node.log()
        assert node.alive()
        assert node.stop() == 0
        log = node.log()
        assert log.count('effort command rejected') >= 1 and 'rejected 3' in log, log
    finally:
        node.stop()
        ex.remove_node(cli)
        ex.shutdown()
        cli.destroy_node()
    truth = np.load(truth_path)
    stamps = truth['stamp_ns']
    # the command acts over the first step at or after s + 2 ms: the torque of the period ending
    # at s + 3 ms or later, never before (the delay's floor), and it is the command's
    acting = [k for k, t in zip(stamps, truth['tau']) if np.allclose(t, tau, atol=1e-12)]
    assert acting and min(acting) >= s + 3_000_000, (acting[:3], s)
    assert not any(np.allclose(t, tau) for k, t in zip(stamps, truth['tau']) if k <= s + 2_000_000)
    # the odometry: 200 Hz, 10 ms behind the joint state published with it, the plant's own
    # base pose at its stamp (no noise asked for)
    row = {int(k): i for i, k in enumerate(stamps)}
    od = [(_ns(m.header.stamp), m.pose.pose) for m in odom]
    gaps = np.diff([k for k, _ in od])
    assert np.all(gaps == 5_000_000), np.unique(gaps)
    js_at = {_ns(m.header.stamp) for m in js}
    assert sum(k + 10_000_000 in js_at for k, _ in od[2:]) >= len(od) - 3
    for k, p in od[2:]:
        base = truth['base'][row[k]]
        got = (p.position.x, p.position.y, p.position.z, p.orientation.x, p.orientation.y,
               p.orientation.z, p.orientation.w)
        np.testing.assert_allclose(got, base, atol=1e-12)
    model = rd.load_urdf(xml, floating_base=True)
    q0 = np.r_[0, 0, 0, 0, 0, 0, 1, np.zeros(model.nv - 6)]
    mass = rd.task_space(model, q0, np.zeros(model.nv), rd.task_frames(model, [])).mass
    assert abs(float(truth['mass']) - mass - 0.5) < 1e-9       # the hidden load is in the plant
    assert os.path.getsize(truth_path) > 10_000
