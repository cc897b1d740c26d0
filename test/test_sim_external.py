"""``sim`` with ``control: external`` as a real process: efforts applied by name and held,
safe fallback (gravity compensation + damping) before the first command and after the timeout,
bad commands rejected, commands resume.  The simulator publishes in ``joint_states.effort`` the
torque that acted during the period ending at the stamp, computed from the previous sample."""
import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics import simulation as S
from test_node_support import ARM7, NodeProcess, TIMEOUT

pytestmark = pytest.mark.ros

MODEL = rd.load_urdf(ARM7)
KD = S.make_scenario(MODEL, 'none')[0].controller.kd       # the default fallback damping


class Client:
    def __init__(self, context, ns):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
        self.JointState = JointState
        self.node = rclpy.create_node(f'client_{ns}', context=context)
        self.ex = SingleThreadedExecutor(context=context)
        self.ex.add_node(self.node)
        qos = QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE)
        self.js = []
        self.node.create_subscription(JointState, f'/{ns}/joint_states', self.js.append, qos)
        self.pub = self.node.create_publisher(JointState, f'/{ns}/sim/effort_command', qos)

    def spin_until(self, pred, timeout=TIMEOUT):
        import time
        end = time.monotonic() + timeout
        while time.monotonic() < end and not pred():
            self.ex.spin_once(timeout_sec=0.01)
        return pred()

    def send(self, names, effort):
        m = self.JointState(name=list(names), effort=[float(x) for x in effort])
        m.header.stamp = self.node.get_clock().now().to_msg()
        self.pub.publish(m)

    def destroy(self):
        self.ex.remove_node(self.node)
        self.ex.shutdown()
        self.node.destroy_node()


def arrays(msgs):
    return (np.array([m.position for m in msgs]), np.array([m.velocity for m in msgs]),
            np.array([m.effort for m in msgs]))


def fallback_ok(msgs):
    """effort[k+1] == g(q[k]) − K_d v[k] for consecutive samples."""
    q, v, e = arrays(msgs)
    exp = np.array([rd.gravity(MODEL, qk) for qk in q[:-1]]) - KD * v[:-1]
    return np.allclose(e[1:], exp, atol=1e-9)


def test_external_efforts_held_fallback_and_resume(rclpy_context, ros_env, tmp_path):
    ns = 'simext'
    proc = NodeProcess(ros_env, str(tmp_path), ns, {
        'control': 'external', 'scenario': 'none', 'command_timeout': 0.05,
        'real_time_factor': 0.5, 'wait_for_subscribers': 1,
        'publish_robot_description': False}, node_name='sim', module='ros_dynamics.ros.simulation.sim_node')
    c = Client(rclpy_context, ns)
    try:
        assert c.spin_until(lambda: len(c.js) > 100, 30), proc.log()
        # 1. no command yet: gravity compensation + damping holds the robot at its pose
        q, v, e = arrays(c.js[:100])
        assert np.abs(q - q[0]).max() < 1e-9 and fallback_ok(c.js[:100])
        # 2. a command with the names in another order, applied by name and held
        names = list(MODEL.joint_names)[::-1]
        tau = rd.gravity(MODEL, q[-1]) + np.array([0, 0, 0, 0, 0, 0, 0.3])
        n0 = len(c.js)
        c.send(names, tau[::-1])
        assert c.spin_until(lambda: any(np.allclose(m.effort, tau) for m in c.js[n0:]))
        k = n0 + next(i for i, m in enumerate(c.js[n0:]) if np.allclose(m.effort, tau))
        assert c.spin_until(lambda: len(c.js) > k + 150)
        held = [np.allclose(m.effort, tau) for m in c.js[k:k + 150]]
        # held for the timeout (50 samples at 1 kHz), then the fallback
        assert all(held[:45]) and not any(held[60:]), held
        assert fallback_ok(c.js[k + 60:k + 150])
        assert np.ptp(arrays(c.js[k:k + 50])[0][:, 6]) > 1e-5   # the extra 0.3 N m moved it
        # 3. a command missing a joint is rejected (fallback continues)
        n1 = len(c.js)
        c.send(names[1:], tau[::-1][1:])
        assert c.spin_until(lambda: 'effort command rejected' in proc.log())
        assert c.spin_until(lambda: len(c.js) > n1 + 100)
        assert fallback_ok(c.js[n1:n1 + 100])
        # 4. commands resume external control
        tau2 = rd.gravity(MODEL, arrays(c.js[-1:])[0][0])
        c.send(names, tau2[::-1])
        assert c.spin_until(lambda: any(np.allclose(m.effort, tau2) for m in c.js[n1:]))
        assert c.spin_until(lambda: 'effort commands resumed' in proc.log())
        log = proc.log()
        assert 'no effort command for > 0.05 s' in log, log
    finally:
        c.destroy()
        rc = proc.stop()
        print(proc.log())
    assert rc == 0
    assert 'steps on commands' in proc.log()
