"""dynamics_node internals that a process-level test cannot see, checked on a DynamicsNode built
in this process (real rclpy, no DDS peer needed): outputs are checked finite before publishing,
models are built on the builder thread (the executor keeps the old one meanwhile), Gamma
buffers exist only when needed, the contact-wrench kernels are warmed up at build, and a
refused stamp re-initializes the observer."""
import threading
import time

import numpy as np
import pytest

from test_node_support import ARM7, Probe, read

pytestmark = pytest.mark.ros

rd = pytest.importorskip('ros_dynamics')
testing = pytest.importorskip('ros_dynamics.testing')


@pytest.fixture
def make_node(rclpy_context):
    from rclpy.parameter import Parameter
    from ros_dynamics.ros.dynamics_node import DynamicsNode
    nodes = []

    def make(**params):
        params.setdefault('log_throttle_sec', 0.0)
        node = DynamicsNode(context=rclpy_context, namespace=f'/inproc{len(nodes)}',
                            parameter_overrides=[Parameter(k, value=v)
                                                 for k, v in params.items()])
        nodes.append(node)
        published = {'dyn': 0, 'ext': 0}
        for attr, key in (('_pub_dyn', 'dyn'), ('_pub_ext', 'ext')):
            pub = getattr(node, attr)
            orig = pub.publish

            def counting(msg, orig=orig, key=key):
                published[key] += 1
                orig(msg)
            pub.publish = counting
        node.published = published
        return node

    yield make
    for node in nodes:
        node.destroy_node()


def arm_state(model, seed, stamp_ns):
    rng = np.random.default_rng(seed)
    n = model.nv
    return Probe.joint_state(model.joint_names, rng.uniform(-1, 1, n), rng.uniform(-1, 1, n),
                             rng.uniform(-10, 10, n), stamp_ns)


def wait_built(node, timeout=30.0):
    end = time.monotonic() + timeout
    while node._built.empty() and time.monotonic() < end:
        time.sleep(0.02)
    assert not node._built.empty(), 'the builder thread produced nothing'


def test_nonfinite_outputs_are_not_published(make_node, monkeypatch):
    node = make_node(robot_description=read(ARM7))
    model = node.engine.model
    node._on_joint_state(arm_state(model, 1, 10**12))
    assert node.published['dyn'] == 1
    real = rd.compute_all_terms

    def poisoned(model, q, v, data, **kwargs):
        out = real(model, q, v, data, **kwargs)
        data.C[0, 1] = np.nan
        return out
    monkeypatch.setattr(rd, 'compute_all_terms', poisoned)
    node._on_joint_state(arm_state(model, 2, 10**12 + 10**6))
    assert node.published == {'dyn': 1, 'ext': 0}
    assert node.stats['rejected'] == 1
    assert node._observer.last_ns is None   # re-initialized
    monkeypatch.setattr(rd, 'compute_all_terms', real)
    node._on_joint_state(arm_state(model, 3, 10**12 + 2 * 10**6))
    assert node.published['dyn'] == 2


def test_model_built_on_the_builder_thread(make_node, monkeypatch):
    from ros_dynamics.ros import dynamics_node as dn
    from std_msgs.msg import String
    node = make_node()
    assert node.engine is None
    threads = []
    real = dn._Engine.__init__

    def spy(self, *args, **kwargs):
        threads.append(threading.current_thread().name)
        real(self, *args, **kwargs)
    monkeypatch.setattr(dn._Engine, '__init__', spy)
    node._on_description(String(data=read(ARM7)))
    assert node.engine is None            # not installed from the callback itself
    wait_built(node)
    node._install_built()                 # what the executor does (timer / next joint state)
    assert node.engine is not None and node.engine.nv == 7
    assert threads == ['model_builder']
    # a refused description leaves the installed engine in place
    eng = node.engine
    node._on_description(String(data=testing.chain(3)[:-20]))
    wait_built(node)
    node._install_built()
    assert node.engine is eng


def test_gamma_only_when_needed(make_node):
    node = make_node(robot_description=read(ARM7), christoffel_decimation=2)
    eng = node.engine
    assert eng.with_gamma and eng.gam_msg is None      # allocated at the first stream
    node._on_joint_state(arm_state(eng.model, 1, 10**12))
    assert eng.gam_msg is not None and len(eng.gam_msg.christoffel) == 7 ** 3
    big = make_node(robot_description=testing.chain(12, seed=1), christoffel_max_nv=10)
    eng = big.engine
    assert not eng.with_gamma
    for k in range(4):
        big._on_joint_state(arm_state(eng.model, k, 10**12 + k * 10**6))
    assert big.published['dyn'] == 4 and eng.gam_msg is None
    assert 'Gamma' not in vars(eng.data)   # the core's workspace never allocated it either


def test_contact_wrench_warmed_up_at_build(make_node, monkeypatch):
    calls = []
    real = rd.estimate_contact_wrench

    def spy(*args, **kwargs):
        calls.append(kwargs.get('force_only'))
        return real(*args, **kwargs)
    monkeypatch.setattr(rd, 'estimate_contact_wrench', spy)
    make_node(robot_description=read(ARM7))
    assert sorted(calls) == [False, True]


def test_refused_stamp_reinitializes_the_observer(make_node):
    """A joint state after refused (out-of-order) stamps starts the observer afresh instead of
    integrating the unknown time in between over one sample."""
    node = make_node(robot_description=read(ARM7))
    model = node.engine.model
    t = 10**12
    node._on_joint_state(arm_state(model, 1, t))
    node._on_joint_state(arm_state(model, 2, t + 10**6))
    assert node.published['ext'] == 1
    node._on_joint_state(arm_state(model, 3, t + 10**6 - 5 * 10**8))   # 0.5 s back: refused
    assert node.stats['rejected'] == 1
    node._on_joint_state(arm_state(model, 4, t + 2 * 10**6))  # accepted, observer restarts
    assert node.published == {'dyn': 3, 'ext': 1}
    node._on_joint_state(arm_state(model, 5, t + 3 * 10**6))
    assert node.published['ext'] == 2


def test_refused_publication_does_not_stop_the_node(make_node):
    """A sample the middleware refuses (rclpy raises RCLError; seen with Fast DDS while a
    reliable subscriber was stalled) is counted and logged; the node and its observer go on
    and the other outputs of that cycle are still published."""
    from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
    node = make_node(robot_description=read(ARM7))
    model = node.engine.model
    counting = node._pub_dyn.publish
    refused = []

    def refuse(msg):
        refused.append(msg.header.stamp.nanosec)
        raise _rclpy.RCLError('Failed to publish: cannot publish data')
    node._pub_dyn.publish = refuse
    t = 10**12
    node._on_joint_state(arm_state(model, 1, t))            # observer initialized
    node._on_joint_state(arm_state(model, 2, t + 10**6))    # observer updated
    assert len(refused) == 2 and node.stats['publish_failed'] == 2
    assert node.stats['accepted'] == 2 and node.published == {'dyn': 0, 'ext': 1}
    node._pub_dyn.publish = counting
    node._on_joint_state(arm_state(model, 3, t + 2 * 10**6))
    assert node.published == {'dyn': 1, 'ext': 2} and node.stats['publish_failed'] == 2
