"""Fresh when behind (issue 43, docs/ros_interface.md "Fresh when behind"): joint states that
queued up while the node could not take them (longer than ``catch_up_after``) go, every one,
into the cycle (the observer takes every sample), and only the newest is published;
/diagnostics counts the others.

A real dynamics node in this process over loopback DDS (as test_walk.py runs it), its executor
spun by the test: a stream of joint states is published and delivered to the node's
subscription (acknowledged by it: reliable) before the node's executor runs, so that all of
them wait when it takes the first one: the node is behind by construction, whatever the
machine's load.  Asserted by count: one ~/dynamics and one ~/external_torque, for the newest
joint state; every joint state accepted (the shutdown summary) and the others counted as
skipped (/diagnostics); the published residual equal to the observer's equation fed every
sample (a sample skipped would be a gap the observer bridges, and the residual would differ);
when they waited less than ``catch_up_after`` (not behind: a hiccup), or with ``catch_up:
false``, every joint state is published instead.
"""
import os
import time

import numpy as np
import pytest

import ros_dynamics as rd
from test_node_floating import odom

pytestmark = pytest.mark.ros

ARM7 = rd.bundled_urdf('arm7')
N = 300
K = 40.0
MS = 10**6


def _stream(model, seed=int(os.environ.get('CATCH_UP_SEED', 1))):
    """N joint states at 1 kHz of a motion with a 6 N m push on joint 2 (the efforts the
    inverse dynamics minus the push: the plant's torques, and torque noise)."""
    rng = np.random.default_rng(seed)
    w, amp = 2 * np.pi, np.linspace(0.2, 0.5, model.nv)
    ext = np.zeros(model.nv)
    ext[1] = 6.0
    out = []
    for k in range(N):
        t = k * 1e-3
        q, v = amp * np.sin(w * t), amp * w * np.cos(w * t)
        tau = (rd.inverse_dynamics(model, q, v, -amp * w * w * np.sin(w * t)) - ext
               + rng.normal(0.0, 0.2, model.nv))
        out.append((100 * 10**9 + k * 10**6, q, v, tau))
    return out


def _observer(model, stream):
    """The residual after every sample: the observer's equation (De Luca et al. 2006), the
    standalone observer of the core fed each sample (its own implementation, not the node's
    compiled cycle)."""
    obs = rd.MomentumObserver(model, gain=K)
    last = None
    for t, q, v, tau in stream:
        r = obs.update(q, v, tau, (t - last) / 1e9 if last is not None else 1e-3)
        last = t
    return r


def _pair(rclpy_context, ns, xml, overrides):
    """A dynamics node in namespace ``ns`` (``robot_description`` ``xml``, then the parameter
    ``overrides``: name -> value) and a peer node there, each with its own executor, spun by the
    test."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter

    from ros_dynamics.ros.dynamics_node.node import DynamicsNode

    node = DynamicsNode(context=rclpy_context, namespace=ns, parameter_overrides=[
        Parameter(k, value=v) for k, v in {'robot_description': xml, **overrides}.items()])
    peer = rclpy.create_node(f'{ns}_peer', context=rclpy_context, namespace=ns)
    node_ex, peer_ex = (SingleThreadedExecutor(context=rclpy_context) for _ in range(2))
    node_ex.add_node(node)
    peer_ex.add_node(peer)
    return node, peer, node_ex, peer_ex


def _close(node, peer, node_ex, peer_ex):
    node_ex.shutdown()
    peer_ex.shutdown()
    node.destroy_node()
    peer.destroy_node()


def _stamped(msg, stamp_ns):
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 10**9)
    return msg


def _stamp(msg):
    return msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec


def _joint_state(names, stamp_ns, q, v, tau):
    from sensor_msgs.msg import JointState
    msg = _stamped(JointState(), stamp_ns)
    msg.name = list(names)
    msg.position, msg.velocity, msg.effort = q, v, tau
    return msg


def _node(rclpy_context, catch_up, after):
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    from ros_dynamics_msgs.msg import Dynamics
    from diagnostic_msgs.msg import DiagnosticArray

    ns = f'catch_up_{catch_up}_{int(after)}_{os.getpid()}'
    with open(ARM7) as f:
        xml = f.read()
    node, peer, node_ex, peer_ex = _pair(rclpy_context, ns, xml, {
        'catch_up': catch_up, 'catch_up_after': after, 'observer_gain': [K],
        'contact_threshold': [100.0], 'christoffel_stream': False})
    qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
    got = {'dynamics': [], 'external_torque': [], 'diag': []}
    pub = peer.create_publisher(JointState, 'joint_states', qos)
    peer.create_subscription(Dynamics, 'dynamics/dynamics', got['dynamics'].append, qos)
    peer.create_subscription(JointState, 'dynamics/external_torque',
                             got['external_torque'].append, qos)
    peer.create_subscription(DiagnosticArray, '/diagnostics', lambda m: got['diag'].append(m)
                             if any(ns in s.name or ns in s.hardware_id for s in m.status)
                             else None, 10)
    return node, peer, pub, got, node_ex, peer_ex


def _spin_until(executors, predicate, timeout=60.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end and not predicate():
        for ex in executors:
            ex.spin_once(timeout_sec=0.005)
    return predicate()


def _diag(got, key):
    for m in reversed(got['diag']):
        for s in m.status:
            for kv in s.values:
                if kv.key == key:
                    return int(kv.value)
    return None


def _publish_all(model, pub, stream, executors):
    """The stream published and acknowledged by the node's subscription (reliable: in its
    queue) while its executor does not run: everything waits behind the first joint state."""
    assert _spin_until(executors[1:], lambda: pub.get_subscription_count() >= 1)
    for t, q, v, tau in stream:
        pub.publish(_joint_state(model.joint_names, t, q, v, tau))
    assert pub.wait_for_all_acked(rd_timeout(30.0))


def rd_timeout(seconds):
    from rclpy.duration import Duration
    return Duration(seconds=seconds)


@pytest.mark.parametrize('catch_up, after, newest_only', [
    (True, 0.0, True), (True, 60.0, False), (False, 0.0, False)],
    ids=['behind', 'waited_less', 'every_one'])
def test_behind_every_sample_goes_in_and_the_newest_comes_out(rclpy_context, catch_up, after,
                                                              newest_only):
    """Behind (the joint states waited longer than ``catch_up_after`` = 0): the newest
    published.  ``catch_up_after`` 60 s (they waited less) or ``catch_up: false``: each."""
    model = rd.load_urdf(ARM7)
    stream = _stream(model)
    node, peer, pub, got, node_ex, peer_ex = _node(rclpy_context, catch_up, after)
    executors = (node_ex, peer_ex)
    try:
        # the node's matched events and the model first: its outputs learn of our readers
        assert _spin_until(executors, lambda: node.engine is not None and all(
            node.count_subscribers(f'/{node.get_namespace().strip("/")}/dynamics/{t}') >= 1
            for t in ('dynamics', 'external_torque')))
        for _ in range(50):
            node_ex.spin_once(timeout_sec=0.01)
        _publish_all(model, pub, stream, executors)
        newest = stream[-1][0]
        stamp = _stamp
        # every joint state into the cycle (counted by the node), the newest published
        assert _spin_until(executors, lambda: node.stats['accepted'] == N and any(
            stamp(m) == newest for m in got['external_torque']))
        assert _spin_until(executors, lambda: (_diag(got, 'accepted (total)') or 0) >= N)
        skipped = _diag(got, 'skipped for a newer one (total)')
        if newest_only:
            # the first callback took the first joint state and all the others waiting behind
            # it: one cycle published, the others skipped
            assert len(got['dynamics']) == len(got['external_torque']) == 1, (
                len(got['dynamics']), len(got['external_torque']))
            assert stamp(got['dynamics'][0]) == newest
            assert skipped == N - 1
        else:
            assert _spin_until(executors, lambda: len(got['dynamics']) == N)
            assert [stamp(m) for m in got['dynamics']] == [s[0] for s in stream]
            assert skipped == 0
        # the observer took every sample: its residual is the equation's over all of them,
        # the core's standalone observer (rounding only: worst 5.2e-14 N m over seeds 1-3,
        # tolerance 3x; a sample skipped would be a gap the observer bridges, ~0.1 N m off)
        r = np.asarray(next(m for m in got['external_torque'] if stamp(m) == newest).effort)
        np.testing.assert_allclose(r, _observer(model, stream), rtol=0, atol=1.6e-13)
        # and it found the push (6 N m; the torque noise through K/(s+K): worst 0.11 N m
        # over seeds 1-4 on the pushed joint, 0.051 N m on the others; tolerance 3x)
        assert abs(r[1] - 6.0) < 0.33 and np.abs(np.delete(r, 1)).max() < 0.16, r
    finally:
        _close(node, peer, node_ex, peer_ex)


@pytest.mark.parametrize('after', [0.0, 60.0], ids=['behind', 'waited_less'])
def test_odometry_waiting_with_them_is_taken_in_stamp_order(rclpy_context, after):
    """A floating base: the odometry (200 Hz, each 10 ms late, as a state estimator's) waits in
    its own queue beside the joint states.  Taken after every joint state of the callback,
    each joint state would be judged against an older base, or none (odom_max_age: refused).
    Asserted: every joint state accepted, and each published one computed at the base of the
    newest odometry stamped up to it (its gravity torque against the core's at that state;
    odometry stamped after the newest joint state, also waiting, is not used for it)."""
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import JointState
    from ros_dynamics_msgs.msg import Dynamics

    path = rd.bundled_urdf('quadruped')
    model = rd.load_urdf(path, floating_base=True)
    names = list(model.joint_names)
    ns = f'catch_up_odom_{int(after)}_{os.getpid()}'
    with open(path) as f:
        xml = f.read()
    node, peer, node_ex, peer_ex = _pair(rclpy_context, ns, xml, {
        'floating_base': True, 'catch_up_after': after, 'christoffel_stream': False})
    qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
    got = []
    js_pub = peer.create_publisher(JointState, 'joint_states', qos)
    odom_pub = peer.create_publisher(Odometry, 'odom', qos)
    peer.create_subscription(Dynamics, 'dynamics/dynamics', got.append, qos)
    executors = (node_ex, peer_ex)

    def base(t):            # the base's pose at stamp t [ns]: moving and turning
        s = (t - T0) * 1e-9
        half = 0.5 * (0.3 + 2.0 * s)
        return np.array([0.1 + s, -0.2 * s, 0.3]), np.array([np.sin(half), 0.0, 0.0,
                                                             np.cos(half)])

    T0, n = 100 * 10**9, 100
    qj = 0.2 * np.sin(np.arange(len(names)))
    js_stamps = [T0 + k * MS for k in range(n)]
    # odometry of the base at s, out at s + 10 ms, every 5 ms; the stream in sending order
    sends = [(s + 10 * MS, 'odom', s)
             for s in range(T0 - 10 * MS, T0 + n * MS + 15 * MS, 5 * MS)]
    sends += [(t, 'js', t) for t in js_stamps]
    sends.sort(key=lambda x: (x[0], x[1] == 'js'))
    try:
        assert _spin_until(executors, lambda: node.engine is not None and node.count_subscribers(
            f'/{ns}/dynamics/dynamics') >= 1)
        for _ in range(50):
            node_ex.spin_once(timeout_sec=0.01)
        assert _spin_until(executors[1:], lambda: js_pub.get_subscription_count() >= 1
                           and odom_pub.get_subscription_count() >= 1)
        zero = np.zeros(len(names))
        for _, kind, s in sends:
            if kind == 'odom':
                odom_pub.publish(_stamped(odom(*base(s), zero[:3], zero[:3]), s))
            else:
                js_pub.publish(_joint_state(names, s, qj, zero, zero))
        assert js_pub.wait_for_all_acked(rd_timeout(30.0))
        assert odom_pub.wait_for_all_acked(rd_timeout(30.0))
        stamp = _stamp
        assert _spin_until(executors, lambda: node.stats['accepted'] + sum(
            node.refused.values()) >= n), (node.stats, node.refused)
        assert node.stats['accepted'] == n, (node.stats, node.refused)
        assert _spin_until(executors, lambda: any(stamp(m) == js_stamps[-1] for m in got))
        published = [m for m in got if stamp(m) in js_stamps]
        assert len(published) == (1 if after == 0.0 else n)
        odom_stamps = np.array([s for _, kind, s in sends if kind == 'odom'])
        for m in published:
            s = odom_stamps[odom_stamps <= stamp(m)].max()      # the newest up to it
            pos, quat = base(s)
            np.testing.assert_allclose(np.asarray(m.gravity),
                                       rd.gravity(model, np.r_[pos, quat, qj]), atol=1e-9)
    finally:
        _close(node, peer, node_ex, peer_ex)
