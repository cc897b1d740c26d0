"""Helpers for the node tests (no tests here): start ``dynamics_node`` as a real process and
talk to it over loopback DDS from an rclpy node in the test process.

The environment (ROS_DOMAIN_ID, ROS_AUTOMATIC_DISCOVERY_RANGE, LD_LIBRARY_PATH) is set by
conftest.py; ``ros_env`` is passed to the child process.

Waiting: a test waits for the outcome it asserts, with a generous deadline (``TIMEOUT``), never
for a share of answers inside a window of wall time, so that the suite passes on a busy
machine.  What the node promises for a stream of joint states is in one place,
:func:`wait_answered`: every joint state it accepts goes through its cycle (its own count,
:func:`accepted_at_exit`), and the newest is answered; when it falls behind it may publish for
the newest joint state only ("fresh when behind", docs/input_policy.md).  ``ANSWER_EVERY``
switches that to "every joint state answered".
"""
import contextlib
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
URDF_DIR = os.path.join(REPO_ROOT, 'urdf')
ARM7 = os.path.join(URDF_DIR, 'arm7.urdf')
QUADRUPED = os.path.join(URDF_DIR, 'quadruped.urdf')
#: The deadline of every wait [s]: generous, a wait ends as soon as its outcome is there (a
#: node's first start on a loaded 2-core machine takes tens of seconds).
TIMEOUT = 120.0
#: What the tests expect of a stream of joint states: False, the newest answered (the node may
#: skip publishing for older ones when it falls behind, never their cycles); True, every one.
ANSWER_EVERY = False
#: History depth of the test's publishers and readers: a reliable KEEP_LAST writer drops what
#: its reader has not acknowledged beyond it, so it holds a test's longest burst.
DEPTH = 2000
_stamp = [time.time_ns() - 3600 * 1_000_000_000]   # an hour in the node clock's past


def next_stamp(step=1_000_000_000):
    """A fresh stamp (ns), ``step`` after the previous one: room for a stream of that length."""
    _stamp[0] += step
    return _stamp[0]


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
                 module='ros_dynamics.ros.dynamics_node.node'):
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

    OUTPUTS = ('dynamics', 'christoffel', 'external_torque', 'contact_estimate',
               'gravity_torque')

    def __init__(self, context, ns, node_name='dynamics', msgs=True):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
        from nav_msgs.msg import Odometry
        from std_msgs.msg import String

        self.rclpy = rclpy
        self.node = rclpy.create_node(f'probe_{ns}', context=context)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.prefix = f'/{ns}/{node_name}'
        self.ns = ns
        self.msgs = msgs
        reliable = QoSProfile(depth=DEPTH, reliability=ReliabilityPolicy.RELIABLE)
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.received = {k: [] for k in self.OUTPUTS}
        types = {'external_torque': JointState, 'gravity_torque': JointState}
        if msgs:
            from ros_dynamics_msgs.msg import Christoffel, ContactEstimate, Dynamics
            types.update(dynamics=Dynamics, christoffel=Christoffel,
                         contact_estimate=ContactEstimate)
        self.subs = {}
        for name, msg_type in types.items():
            qos = latched if name == 'christoffel' else reliable
            self.subs[name] = self.node.create_subscription(
                msg_type, f'{self.prefix}/{name}',
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
            outputs = (('dynamics', 'christoffel', 'external_torque', 'contact_estimate')
                       if self.msgs else ('external_torque',))
            # matched, not only discovered: our joint-state writer with the node's reader, and
            # each of our readers with the node's writer (a reader discovered but not yet
            # matched misses what is published meanwhile; seen under load)
            return (self.js_pub.get_subscription_count() >= 1
                    and all(self.subs[o].get_publisher_count() >= 1 for o in outputs))
        assert self.spin_until(ready, timeout), 'node did not come up'
        # the node's writers learn of our readers in the same discovery exchange, a little
        # later on a busy machine: a margin (a first answer that matters is sent until it
        # arrives: send_until_answered)
        self.spin_for(2.0)

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

    def send_and_wait(self, msg, topic='dynamics', timeout=TIMEOUT):
        """Publish a joint state and wait for the stamped output ``topic`` carrying its stamp."""
        s = msg.header.stamp
        stamp_ns = s.sec * 1_000_000_000 + s.nanosec
        self.js_pub.publish(msg)
        ok = self.spin_until(lambda: self.find_stamped(topic, stamp_ns) is not None, timeout)
        return self.find_stamped(topic, stamp_ns) if ok else None

    def send_until_answered(self, make, topic='dynamics', period=0.5, timeout=TIMEOUT):
        """Publish ``make()`` (a joint state with a fresh stamp) every ``period`` s until one is
        answered on ``topic`` (while odometry and joint states pair up, or a model swaps in);
        the answer, or None at the deadline."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            found = self.send_and_wait(make(), topic, timeout=period)
            if found is not None:
                return found
        return None

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

    def get(self, what, names=None, q=None, v=None, base_pose=None, base_twist=None):
        """Call ~/get_dynamics (what='dynamics') or ~/get_christoffel; returns the response."""
        from ros_dynamics_msgs.srv import GetChristoffel, GetDynamics
        srv = GetDynamics if what == 'dynamics' else GetChristoffel
        req = srv.Request()
        if names is not None:
            req.state = self.joint_state(names, q, v)
        if base_pose is not None:
            p = req.base_pose
            p.position.x, p.position.y, p.position.z = (float(x) for x in base_pose[:3])
            o = p.orientation
            o.x, o.y, o.z, o.w = (float(x) for x in base_pose[3:7])
        if base_twist is not None:
            t = req.base_twist
            t.linear.x, t.linear.y, t.linear.z = (float(x) for x in base_twist[:3])
            t.angular.x, t.angular.y, t.angular.z = (float(x) for x in base_twist[3:6])
        return self.call(srv, f'{self.prefix}/get_{what}', req)

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


def stamp_of(msg):
    s = msg.header.stamp
    return s.sec * 1_000_000_000 + s.nanosec


def wait_answered(probe, stamps, topic='dynamics', timeout=TIMEOUT):
    """Wait for what the node promises for joint states with ``stamps`` (published in order):
    the newest answered on ``topic`` (every one with ``ANSWER_EVERY``); {stamp: answer} of
    those received.  The deadline is generous; a test never counts answers in a window."""
    stamps = list(stamps)
    wanted = stamps if ANSWER_EVERY else stamps[-1:]
    ok = probe.spin_until(lambda: all(probe.find_stamped(topic, s) is not None
                                      for s in wanted), timeout)
    assert ok, f'joint state(s) {wanted[:3]}... not answered on {topic} in {timeout} s'
    got = {stamp_of(m): m for m in probe.received[topic]}
    return {s: got[s] for s in stamps if s in got}


def accepted_at_exit(proc):
    """Stop the node; its own counts from its shutdown summary: (joint states accepted,
    {refusal reason: count})."""
    proc.stop()
    log = proc.log()
    m = re.search(r'joint states accepted: (\d+), rejected: \d+ \(by reason: (.*?)\); ', log)
    assert m, 'no shutdown summary in the node log:\n' + log[-3000:]
    refused = {k.rsplit(' ', 1)[0]: int(k.rsplit(' ', 1)[1])
               for k in m.group(2).split(', ') if k != 'none'}
    return int(m.group(1)), refused


def set_model_params(proc, probe, **params):
    """Set parameters that rebuild the model and wait until the node has installed the new
    model (it is built off the executor thread; the old one answers meanwhile)."""
    n = proc.log().count('model ready')
    res = probe.set_params(**params)
    if res.successful:
        assert probe.spin_until(lambda: proc.log().count('model ready') > n, period=0.02), \
            'the new model was not installed'
    return res


def dynamics_arrays(msg):
    """(q, v, M, C, Mdot, g) of a ros_dynamics_msgs/Dynamics message as numpy arrays."""
    n = len(msg.names)
    as_np = lambda x: np.asarray(x, dtype=float)  # noqa: E731
    M, C, Mdot = (as_np(getattr(msg, f)) for f in ('mass_matrix', 'coriolis_matrix',
                                                    'mass_matrix_dot'))
    assert M.size == C.size == Mdot.size == n * n
    return (as_np(msg.position), as_np(msg.velocity), M.reshape(n, n), C.reshape(n, n),
            Mdot.reshape(n, n), as_np(msg.gravity))


def christoffel_array(msg):
    n = len(msg.names)
    G = np.asarray(msg.christoffel, dtype=float)
    assert G.size == n ** 3
    return G.reshape(n, n, n)


def assert_dynamics_msg(msg, model, q, v, atol=1e-12):
    """A Dynamics message holds the core library's M, C, Mdot, g at (q, v) and that state."""
    import ros_dynamics as rd
    d = rd.dynamics(model, q, v)
    mq, mv, M, C, Mdot, g = dynamics_arrays(msg)
    np.testing.assert_allclose(mq, q, rtol=0, atol=1e-15)
    np.testing.assert_allclose(mv, v, rtol=0, atol=1e-15)
    for name, got, exp in (('M', M, d.M), ('C', C, d.C), ('Mdot', Mdot, d.Mdot), ('g', g, d.g)):
        np.testing.assert_allclose(got, exp, rtol=0, atol=atol, err_msg=name)


@contextlib.contextmanager
def running_node(rclpy_context, ros_env, tmp, name, params, msgs=True):
    """A dynamics_node process plus a connected probe; on exit both are torn down and the node
    must have exited cleanly (its log is printed for the test report)."""
    proc = NodeProcess(ros_env, tmp, name, params)
    probe = Probe(rclpy_context, name, msgs=msgs)
    try:
        probe.wait_connected(proc)
        yield proc, probe
    finally:
        probe.destroy()
        rc = proc.stop()
        print(proc.log())
        assert rc == 0, f'node exited with {rc}'
        assert 'Traceback' not in proc.log()
