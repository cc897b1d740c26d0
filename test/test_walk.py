"""The walk of one usual joint state through the node, read from the running code: the Python
files of the package whose functions run while the node handles a joint state of the usual
kind (a source it knows, every joint within its bounds, the observer running, the arm in free
motion: a trajectory whose torques are its inverse dynamics), recorded with a profile hook on
the executor thread of a real dynamics node (in this process, over loopback DDS).
docs/architecture.md states the walk, bounded at six files (the compiled kernels, whose
Python bodies never run, not counted)."""
import collections
import os
import sys
import threading
import time

import numpy as np
import pytest

import ros_dynamics as rd

pytestmark = pytest.mark.ros

PKG = os.path.dirname(os.path.abspath(rd.__file__))
ARM7 = rd.bundled_urdf('arm7')


def _compiled_code():
    """Where the package's compiled kernels are (numba reports their calls to a profile hook
    as if they ran in Python; they are not counted)."""
    from numba.core.dispatcher import Dispatcher
    return {_where(obj.py_func.__code__) for name, mod in list(sys.modules.items())
            if name.startswith('ros_dynamics') for obj in vars(mod).values()
            if isinstance(obj, Dispatcher)}


def _where(code):
    """A function's place in the sources (numba traces a kernel with a code object of its own
    at the same place)."""
    return os.path.abspath(code.co_filename), code.co_firstlineno, code.co_name


def _walks(context, model, n_msgs):
    """[set of (layer, file)] per joint state the node handled, and the ~/dynamics received."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    from ros_dynamics_msgs.msg import Dynamics

    from ros_dynamics.ros.dynamics_node.node import DynamicsNode

    ns = f'walk_{os.getpid()}'
    with open(ARM7) as f:
        xml = f.read()
    node = DynamicsNode(context=context, namespace=ns,
                        parameter_overrides=[Parameter('robot_description', value=xml)])
    peer = rclpy.create_node(f'walk_peer_{os.getpid()}', context=context, namespace=ns)
    qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
    pub = peer.create_publisher(JointState, 'joint_states', qos)
    got = []
    peer.create_subscription(Dynamics, 'dynamics/dynamics', got.append, qos)
    walks, current = [], []
    compiled = _compiled_code()

    def profile(frame, event, arg):
        if event == 'call':
            if frame.f_code.co_name == '_on_joint_state':
                current.append(set())
            elif current and _where(frame.f_code) not in compiled:
                path = os.path.abspath(frame.f_code.co_filename)
                rel = os.path.relpath(path, PKG)
                if not rel.startswith('..'):          # every Python file of the package
                    current[-1].add(rel.replace(os.sep, '/'))
        elif event == 'return' and frame.f_code.co_name == '_on_joint_state' and current:
            walks.append(current.pop())

    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    executor.add_node(peer)
    stop = threading.Event()

    def spin():                    # the executor thread, profiled
        sys.setprofile(profile)
        while not stop.is_set():
            executor.spin_once(timeout_sec=0.02)
        sys.setprofile(None)

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not pub.get_subscription_count():
            time.sleep(0.02)
        w, amp = 2 * np.pi * 0.5, np.linspace(0.3, 0.8, model.nv)
        for k in range(n_msgs):        # in motion: the torques of the motion, free of contact
            t = k * 1e-3
            q, v = amp * np.sin(w * t), amp * w * np.cos(w * t)
            effort = rd.inverse_dynamics(model, q, v, -amp * w * w * np.sin(w * t))
            msg = JointState()
            msg.header.stamp.sec, msg.header.stamp.nanosec = 100, k * 1_000_000
            msg.name = list(model.joint_names)
            msg.position, msg.velocity, msg.effort = q, v, effort
            pub.publish(msg)
            deadline = time.monotonic() + 10        # answered before the next one goes
            while time.monotonic() < deadline and len(got) <= k:
                time.sleep(0.002)
    finally:
        stop.set()
        thread.join(timeout=10)
        executor.shutdown()
        node.destroy_node()
        peer.destroy_node()
    return walks, got


def test_a_usual_joint_state_walks_six_files(rclpy_context):
    model = rd.load_urdf(ARM7)
    walks, got = _walks(rclpy_context, model, 40)
    assert len(got) == 40 and len(walks) == 40, (len(got), len(walks))
    d = got[-1]                        # in motion: the last answer's state moved, and is its own
    assert np.abs(np.asarray(d.velocity)).max() > 0.1 and np.abs(
        np.asarray(d.position) - np.asarray(got[0].position)).max() > 0.01
    # the first ones (re)start the observer and load what follows the compiled step; once a
    # second Gamma is made for the latched ~/christoffel: the usual walk is the most common
    usual, count = collections.Counter(frozenset(w) for w in walks[5:]).most_common(1)[0]
    assert count >= 0.8 * len(walks[5:]), count
    files = sorted(usual)
    print('the walk of a usual joint state:', files)
    assert len(files) <= 6, files
    # what it is: the joint states waiting taken (none; no odometry waited with it: its stamp
    # is not read), read and run (one compiled call),
    # published and the health; not the Python after the compiled step, nor the output table's
    # builders (the compiled step wrote the outputs)
    assert set(files) == {'ros/dynamics_node/node.py', 'ros/dynamics_node/inbox.py',
                          'ros/dynamics_node/engine.py',
                          'estimation/cycle.py', 'ros/dynamics_node/outputs.py',
                          'ros/dynamics_node/diagnostics.py'}, files
