"""``tracking_controller`` as a real process, fed by this test over loopback DDS with joint
states and hand-made Dynamics messages whose terms differ per stamp (and decoys): every
command must carry the stamp of a joint state and equal the Slotine–Li law evaluated here, with
that joint state and the terms of exactly that stamp -- never the newest or a mismatched set."""
import numpy as np
import pytest

from test_node_support import NodeProcess, TIMEOUT

pytestmark = pytest.mark.ros

JOINTS = ['j1', 'j2', 'j3']
KP, KD = np.array([40.0, 30.0, 20.0]), np.array([8.0, 6.0, 4.0])
Q0, AMP, FREQ = np.array([0.1, -0.2, 0.3]), np.array([0.3, 0.2, 0.1]), 0.7
S0 = 1_000_000_000_000      # 1000 s, in ns; stamps 1 ms apart


def expected_tau(t, q, v, terms):
    """Slotine & Li (1987): q̇_r = q̇_d − Λ q̃, τ = M q̈_r + C q̇_r + g − K_D (q̃̇ + Λ q̃), Λ = K_p/K_d,
    for the sine reference q_d = q0 + A (1 − cos ωt)."""
    w = 2 * np.pi * FREQ
    qd, vd, ad = Q0 + AMP * (1 - np.cos(w * t)), AMP * w * np.sin(w * t), AMP * w**2 * np.cos(w * t)
    lam = KP / KD
    e, ed = q - qd, v - vd
    return terms['M'] @ (ad - lam * ed) + terms['C'] @ (vd - lam * e) + terms['g'] - KD * (ed + lam * e)


class Feeder:
    def __init__(self, context, ns):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
        from ros_dynamics_msgs.msg import Dynamics
        self.JointState, self.Dynamics = JointState, Dynamics
        self.node = rclpy.create_node(f'feeder_{ns}', context=context)
        self.ex = SingleThreadedExecutor(context=context)
        self.ex.add_node(self.node)
        qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
        self.cmds = []
        self.node.create_subscription(JointState, f'/{ns}/sim/effort_command', self.cmds.append,
                                      qos)
        self.js_pub = self.node.create_publisher(JointState, f'/{ns}/joint_states', qos)
        self.dyn_pub = self.node.create_publisher(Dynamics, f'/{ns}/dynamics/dynamics', qos)
        self.rng = np.random.default_rng(7)
        self.states = {}

    def spin_until(self, pred, timeout=TIMEOUT):
        import time
        end = time.monotonic() + timeout
        while time.monotonic() < end and not pred():
            self.ex.spin_once(timeout_sec=0.01)
        return pred()

    @staticmethod
    def _stamp(msg, k):
        s = S0 + k * 1_000_000
        msg.header.stamp.sec, msg.header.stamp.nanosec = s // 10**9, s % 10**9

    def joint_state(self, k, q=None, v=None):
        if q is None:
            q, v = Q0 + self.rng.uniform(-0.1, 0.1, 3), self.rng.uniform(-1, 1, 3)
        self.states[k] = (q, v)
        m = self.JointState(name=JOINTS[::-1], position=q[::-1].tolist(),
                            velocity=v[::-1].tolist())
        self._stamp(m, k)
        self.js_pub.publish(m)

    def terms(self, k, q=None, v=None):
        """Random terms for stamp k (positive definite M); q, v default to joint state k's."""
        A = self.rng.normal(size=(3, 3))
        t = {'M': A @ A.T + 3 * np.eye(3), 'C': self.rng.normal(size=(3, 3)),
             'g': self.rng.normal(size=3) * 5}
        q = self.states[k][0] if q is None else q
        v = self.states[k][1] if v is None else v
        m = self.Dynamics(names=JOINTS, position=q.tolist(), velocity=v.tolist(),
                          mass_matrix=t['M'].ravel().tolist(),
                          coriolis_matrix=t['C'].ravel().tolist(),
                          mass_matrix_dot=(t['C'] + t['C'].T).ravel().tolist(),
                          gravity=t['g'].tolist())
        self._stamp(m, k)
        self.dyn_pub.publish(m)
        return t

    def destroy(self):
        self.ex.remove_node(self.node)
        self.ex.shutdown()
        self.node.destroy_node()


def test_commands_use_the_terms_of_exactly_the_joint_state_they_answer(rclpy_context, ros_env,
                                                                       tmp_path):
    import ros_dynamics_msgs.msg  # noqa: F401 - the controller subscribes to ~/dynamics
    ns = 'tcpair'
    proc = NodeProcess(ros_env, str(tmp_path), ns, {
        'law': 'slotine_li', 'kp': KP.tolist(), 'kd': KD.tolist(), 'q0': Q0.tolist(),
        'amplitude': AMP.tolist(), 'frequency': [FREQ], 'joints': JOINTS,
        'report_period': 0.0}, node_name='tracking_controller',
        module='ros_dynamics.ros.control.tracking_controller')
    f = Feeder(rclpy_context, ns)
    used = {}
    try:
        assert f.spin_until(lambda: f.js_pub.get_subscription_count() >= 1
                            and f.dyn_pub.get_subscription_count() >= 1
                            and f.node.count_publishers(f'/{ns}/sim/effort_command') >= 1,
                            30), proc.log()

        def served(n):
            assert f.spin_until(lambda: len(f.cmds) >= n), (len(f.cmds), proc.log())

        # 1. state then terms
        f.joint_state(1)
        used[1] = f.terms(1)
        served(1)
        # 2. a decoy with the same stamp but another position, then the right terms
        f.joint_state(2)
        f.terms(2, q=f.states[2][0] + 1e-3)
        used[2] = f.terms(2)
        served(2)
        # 3. terms of joint state 3 never come in time: 3 is skipped, 4 is answered
        f.joint_state(3)
        f.joint_state(4)
        used[4] = f.terms(4)
        served(3)
        f.terms(3)                               # too late: must not produce a command
        # 4. terms of a newer stamp first: joint state 5 still gets its own terms
        f.joint_state(5)
        q6, v6 = Q0 + 0.05, np.full(3, 0.2)
        used[6] = f.terms(6, q6, v6)
        used[5] = f.terms(5)
        served(4)
        f.joint_state(6, q6, v6)
        served(5)
        f.spin_until(lambda: len(f.cmds) > 5, 1.0)   # nothing more may come
    finally:
        f.destroy()
        rc = proc.stop()
        print(proc.log())
    assert rc == 0
    stamps = [(m.header.stamp.sec * 10**9 + m.header.stamp.nanosec - S0) // 10**6 for m in f.cmds]
    assert stamps == [1, 2, 4, 5, 6], stamps
    for k, m in zip(stamps, f.cmds):
        assert list(m.name) == JOINTS
        q, v = f.states[k]
        t = (k - 1) * 1e-3
        tau = np.array(m.effort)
        np.testing.assert_allclose(tau, expected_tau(t, q, v, used[k]), rtol=1e-12, atol=1e-12)
        for j, other in used.items():            # and with no other stamp's terms
            if j != k:
                assert not np.allclose(tau, expected_tau(t, q, v, other), atol=1e-6)
    log = proc.log()
    assert 'late 1' in log and 'mismatched 1' in log, log
    assert '1 joint states skipped so far' in log, log


def test_sigterm_ends_the_controller_cleanly(rclpy_context, ros_env, tmp_path):
    """SIGTERM (systemd, docker, kill): exit status 0, the statistics logged, no traceback
    (the process life cycle of ros_dynamics.ros.process.run)."""
    import signal
    import ros_dynamics_msgs.msg  # noqa: F401 - the controller subscribes to ~/dynamics
    ns = 'tcterm'
    proc = NodeProcess(ros_env, str(tmp_path), ns, {'joints': JOINTS, 'report_period': 0.0},
                       node_name='tracking_controller',
                       module='ros_dynamics.ros.control.tracking_controller')
    f = Feeder(rclpy_context, ns)
    try:
        assert f.spin_until(lambda: f.js_pub.get_subscription_count() >= 1, 30), proc.log()
        # built (its start-up line): a stop from here on is logged with the statistics
        assert f.spin_until(lambda: 'tracking_controller: law' in proc.log(), 30), proc.log()
        proc.proc.send_signal(signal.SIGTERM)
        rc = proc.proc.wait(15)
    finally:
        f.destroy()
        proc.stop()
    log = proc.log()
    assert rc == 0, log
    assert 'SIGTERM received' in log and 'served 0/0 joint states' in log, log
    assert 'Traceback' not in log, log
