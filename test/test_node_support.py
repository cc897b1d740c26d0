"""Helpers for the node tests (no tests here): start ``dynamics_node`` as a real process and
talk to it over loopback DDS from an rclpy node in the test process.

The environment (ROS_DOMAIN_ID, ROS_AUTOMATIC_DISCOVERY_RANGE, LD_LIBRARY_PATH) is set by
conftest.py; ``ros_env`` is passed to the child process.
"""
import contextlib
import os
import signal
import subprocess
import sys
import time

import numpy as np

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
URDF_DIR = os.path.join(REPO_ROOT, 'urdf')
ARM7 = os.path.join(URDF_DIR, 'arm7.urdf')
QUADRUPED = os.path.join(URDF_DIR, 'quadruped.urdf')
TIMEOUT = 15.0


def read(path):
    with open(path) as f:
        return f.read()


def write_params(path, params, node_name='dynamics'):
    import yaml
    with open(path, 'w') as f:
        yaml.safe_dump({node_name: {'ros__parameters': params}}, f)
    return path


class NodeProcess:
    """``python -m <module>`` (default the dynamics node) in namespace ``/<ns>`` with a
    parameter file."""

    def __init__(self, env, tmpdir, ns, params, node_name='dynamics',
                 module='ros_dynamics.ros.dynamics_node'):
        self.ns = ns
        self.name = f'/{ns}/{node_name}'
        pfile = write_params(os.path.join(tmpdir, f'{ns}_params.yaml'), params,
                             f'/{ns}/{node_name}')
        self.log_path = os.path.join(tmpdir, f'{ns}_{node_name}.log')
        self._log = open(self.log_path, 'w')
        cmd = [sys.executable, '-m', module, '--ros-args',
               '-r', f'__ns:=/{ns}', '-r', f'__node:={node_name}', '--params-file', pfile]
        self.proc = subprocess.Popen(cmd, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                     cwd=tmpdir)

    def alive(self):
        return self.proc.poll() is None

    def log(self):
        if not self._log.closed:
            self._log.flush()
        with open(self.log_path) as f:
            return f.read()

    def stop(self):
        if self.alive():
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()
        return self.proc.returncode


class Probe:
    """A test-side rclpy node: publishers for the node's inputs, subscribers on its outputs."""

    OUTPUTS = ('mass_matrix', 'coriolis_matrix', 'mass_matrix_dot', 'christoffel',
               'gravity_torque', 'external_torque', 'contact', 'contact_link', 'contact_wrench')

    def __init__(self, context, ns, node_name='dynamics'):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
        from nav_msgs.msg import Odometry
        from geometry_msgs.msg import WrenchStamped
        from std_msgs.msg import Bool, Float64MultiArray, String

        self.rclpy = rclpy
        self.node = rclpy.create_node(f'probe_{ns}', context=context)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.prefix = f'/{ns}/{node_name}'
        self.ns = ns
        reliable = QoSProfile(depth=200, reliability=ReliabilityPolicy.RELIABLE)
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.received = {k: [] for k in self.OUTPUTS}
        types = {'christoffel': Float64MultiArray, 'gravity_torque': JointState,
                 'external_torque': JointState, 'contact': Bool, 'contact_link': String,
                 'contact_wrench': WrenchStamped}
        for name in self.OUTPUTS:
            qos = latched if name == 'christoffel' else reliable
            self.node.create_subscription(types.get(name, Float64MultiArray),
                                          f'{self.prefix}/{name}',
                                          lambda m, k=name: self.received[k].append(m), qos)
        self.js_pub = self.node.create_publisher(JointState, f'/{ns}/joint_states', reliable)
        self.odom_pub = self.node.create_publisher(Odometry, f'/{ns}/odom', reliable)
        self.cmd_pub = self.node.create_publisher(JointState, f'{self.prefix}/commanded_torque',
                                                  reliable)
        self.desc_pub = self.node.create_publisher(String, f'/{ns}/robot_description', latched)
        self._clients = {}

    def destroy(self):
        self.executor.remove_node(self.node)
        self.executor.shutdown()
        self.node.destroy_node()

    # -- waiting -------------------------------------------------------------------------------
    def spin_until(self, predicate, timeout=TIMEOUT, period=0.01):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if predicate():
                return True
            self.executor.spin_once(timeout_sec=period)
        return bool(predicate())

    def spin_for(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.01)

    def wait_connected(self, proc=None, timeout=TIMEOUT):
        """Wait until the node's subscriptions and output publishers are matched with ours."""
        def ready():
            if proc is not None and not proc.alive():
                raise AssertionError('node process died:\n' + proc.log())
            return (self.js_pub.get_subscription_count() >= 1
                    and self.node.count_publishers(f'{self.prefix}/gravity_torque') >= 1
                    and self.node.count_publishers(f'{self.prefix}/mass_matrix') >= 1)
        assert self.spin_until(ready, timeout), 'node did not come up'
        # publishers discovered; give the reverse matching (our subscriptions) a moment
        self.spin_for(0.3)

    def counts(self):
        return {k: len(v) for k, v in self.received.items()}

    # -- messages ------------------------------------------------------------------------------
    @staticmethod
    def joint_state(names, q=None, v=None, e=None, stamp_ns=0):
        from sensor_msgs.msg import JointState
        msg = JointState()
        msg.header.stamp.sec = int(stamp_ns // 1_000_000_000)
        msg.header.stamp.nanosec = int(stamp_ns % 1_000_000_000)
        msg.name = list(names)
        if q is not None:
            msg.position = [float(x) for x in q]
        if v is not None:
            msg.velocity = [float(x) for x in v]
        if e is not None:
            msg.effort = [float(x) for x in e]
        return msg

    def find_stamped(self, topic, stamp_ns):
        for m in self.received[topic]:
            s = m.header.stamp
            if s.sec * 1_000_000_000 + s.nanosec == stamp_ns:
                return m
        return None

    def send_and_wait(self, msg, topic='gravity_torque', timeout=TIMEOUT):
        """Publish a joint state and wait for the stamped output ``topic`` carrying its stamp."""
        s = msg.header.stamp
        stamp_ns = s.sec * 1_000_000_000 + s.nanosec
        self.js_pub.publish(msg)
        ok = self.spin_until(lambda: self.find_stamped(topic, stamp_ns) is not None, timeout)
        return self.find_stamped(topic, stamp_ns) if ok else None

    def wait_counts(self, expected, timeout=TIMEOUT):
        """Wait until every topic in ``expected`` has at least that many messages."""
        return self.spin_until(
            lambda: all(len(self.received[k]) >= n for k, n in expected.items()), timeout)

    # -- services and parameters ---------------------------------------------------------------
    def _client(self, srv_type, name):
        if name not in self._clients:
            self._clients[name] = self.node.create_client(srv_type, name)
        return self._clients[name]

    def call(self, srv_type, name, request, timeout=TIMEOUT):
        client = self._client(srv_type, name)
        assert self.spin_until(client.service_is_ready, timeout), f'service {name} not ready'
        future = client.call_async(request)
        assert self.spin_until(future.done, timeout), f'service {name} did not answer'
        return future.result()

    def trigger(self, name):
        from std_srvs.srv import Trigger
        return self.call(Trigger, f'{self.prefix}/{name}', Trigger.Request())

    def set_params(self, **params):
        """Set parameters in one call (atomically); returns the SetParametersResult."""
        from rcl_interfaces.srv import SetParametersAtomically
        from rclpy.parameter import Parameter
        req = SetParametersAtomically.Request()
        req.parameters = [Parameter(k, value=v).to_parameter_msg() for k, v in params.items()]
        return self.call(SetParametersAtomically,
                         f'{self.prefix}/set_parameters_atomically', req).result


def flat(msg):
    return np.asarray(msg.data, dtype=float)


def assert_matrix_msg(msg, expected, atol=1e-12):
    """A Float64MultiArray holds ``expected`` (2-D or 3-D) with the standard layout."""
    expected = np.asarray(expected)
    dims = msg.layout.dim
    assert [d.size for d in dims] == list(expected.shape)
    strides = [int(np.prod(expected.shape[i:])) for i in range(expected.ndim)]
    assert [d.stride for d in dims] == strides
    assert msg.layout.data_offset == 0
    data = flat(msg)
    assert data.size == expected.size
    np.testing.assert_allclose(data.reshape(expected.shape), expected, rtol=0, atol=atol)


@contextlib.contextmanager
def running_node(rclpy_context, ros_env, tmp, name, params):
    """A dynamics_node process plus a connected probe; on exit both are torn down and the node
    must have exited cleanly (its log is printed for the test report)."""
    proc = NodeProcess(ros_env, tmp, name, params)
    probe = Probe(rclpy_context, name)
    try:
        probe.wait_connected(proc)
        yield proc, probe
    finally:
        probe.destroy()
        rc = proc.stop()
        print(proc.log())
        assert rc == 0, f'node exited with {rc}'
