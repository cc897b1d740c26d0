"""``calibrate record`` as a real process over loopback DDS: the joint states this test
publishes (after the recorder's subscription is matched) end up in the bag, stamps and values
intact, in both storage formats."""
import subprocess
import sys
import time

import numpy as np
import pytest

from ros_dynamics.identification import bags

pytestmark = pytest.mark.ros

N = 40
NAMES = ['a', 'b', 'c']


@pytest.mark.parametrize('storage', ['sqlite3', 'mcap'])
def test_record_writes_the_published_joint_states(rclpy_context, ros_env, tmp_path, storage):
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    topic = f'/rec_{storage}/joint_states'
    bag = str(tmp_path / 'bag')
    log = open(tmp_path / 'record.log', 'w')
    proc = subprocess.Popen([sys.executable, '-m', 'ros_dynamics.identification.calibrate', 'record', bag,
                             '--topic', topic, '--count', str(N), '--storage', storage],
                            env=ros_env, stdout=log, stderr=subprocess.STDOUT)
    node = rclpy.create_node(f'rec_pub_{storage}', context=rclpy_context)
    pub = node.create_publisher(JointState, topic,
                                QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
    try:
        end = time.monotonic() + 60
        while pub.get_subscription_count() < 1 and time.monotonic() < end:
            time.sleep(0.05)
        assert pub.get_subscription_count() >= 1, (tmp_path / 'record.log').read_text()
        for k in range(N):
            msg = JointState()
            msg.header.stamp.sec, msg.header.stamp.nanosec = 100, k * 1_000_000
            msg.name = NAMES
            msg.position = [0.1 * k, 0.2, 0.3]
            msg.velocity = [1.0, float(k), 0.0]
            msg.effort = [0.5, 0.0, -float(k)]
            pub.publish(msg)
        rc = proc.wait(30)              # ends by itself after N messages
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        node.destroy_node()
        log.close()
    out = (tmp_path / 'record.log').read_text()
    assert rc == 0, out
    assert f'wrote {N} joint states' in out and 'Traceback' not in out, out
    s = bags.read_joint_states(bag, topic)
    assert s.names == NAMES and len(s) == N
    np.testing.assert_allclose(s.t, np.arange(N) * 1e-3, atol=1e-12)
    np.testing.assert_allclose(s.q[:, 0], 0.1 * np.arange(N))
    np.testing.assert_allclose(s.tau[:, 2], -np.arange(N))
