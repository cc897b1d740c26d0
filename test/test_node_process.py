"""dynamics_node and sim as processes: clean exit (status 0, no traceback) on SIGINT and SIGTERM,
while building the model and while running; the README's `ros2 run ... -p
robot_description:="$(cat urdf/arm7.urdf)"` form through rclpy's argument parsing; and the
standard-type fallback when the interface package ros_dynamics_msgs cannot be imported."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import ros_dynamics as rd

from test_node_support import ARM7, REPO_ROOT, TIMEOUT, NodeProcess, Probe, read

pytestmark = pytest.mark.ros



class Proc:
    """A child process whose combined output is read line by line (no fixed sleeps)."""

    def __init__(self, cmd, env, cwd=REPO_ROOT, shell=False):
        self.p = subprocess.Popen(cmd, env=env, cwd=cwd, shell=shell, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.out = ''

    def wait_for(self, text, timeout=TIMEOUT):
        end = time.monotonic() + timeout
        while text not in self.out and time.monotonic() < end:
            line = self.p.stdout.readline()
            if not line:
                break
            self.out += line
        assert text in self.out, self.out

    def stop(self, sig):
        os.kill(self.p.pid, sig)
        try:
            rest, _ = self.p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rest, _ = self.p.communicate()
        self.out += rest
        return self.p.returncode


def node_cmd(ns, *extra):
    return [sys.executable, '-m', 'ros_dynamics.ros.dynamics_node.node', '--ros-args',
            '-r', f'__ns:=/{ns}', *extra]


def sim_cmd(ns, *extra):
    return [sys.executable, '-m', 'ros_dynamics.ros.simulation.sim_node', '--ros-args',
            '-r', f'__ns:=/{ns}', *extra]


def assert_clean(proc, rc):
    assert rc == 0, proc.out
    for bad in ('Traceback', 'Exception', 'context is invalid', 'KeyboardInterrupt', '[ERROR]'):
        assert bad not in proc.out, proc.out


@pytest.mark.parametrize('sig, executor', [(signal.SIGINT, 'single'), (signal.SIGTERM, 'single'),
                                           (signal.SIGINT, 'events')],
                         ids=['SIGINT', 'SIGTERM', 'SIGINT-events'])
def test_dynamics_node_exits_cleanly(ros_env, rclpy_context, sig, executor):
    # while running: spinning, it has answered a joint state
    ns = f'stop_{sig.name}_{executor}'
    proc = Proc(node_cmd(ns, '-p', f'robot_description:={read(ARM7)}', '-p',
                         f'executor:={executor}'), ros_env)
    probe = Probe(rclpy_context, ns)
    try:
        probe.wait_connected()
        names = rd.load_urdf(ARM7).joint_names
        stamps = iter(range(1_000_000, 10**9, 1_000_000))
        answered = probe.send_until_answered(lambda: probe.joint_state(
            names, np.zeros(7), np.zeros(7), None, next(stamps))) is not None
    finally:
        probe.destroy()
    rc = proc.stop(sig)      # stopped whatever happened above: no process outlives the test
    assert answered, proc.out
    assert_clean(proc, rc)
    assert f'{sig.name} received: shutting down' in proc.out
    # while the model is being built (the kernel warm-up): ends at once, quietly
    proc = Proc(node_cmd(f'early_{sig.name}_{executor}', '-p',
                         f'robot_description:={read(ARM7)}'), ros_env)
    proc.wait_for('building the model')
    assert_clean(proc, proc.stop(sig))


def test_first_start_with_a_cold_kernel_cache(ros_env, rclpy_context, tmp_path):
    """An empty numba cache (a first start without the set-up's warm-up): the node answers
    joint states before it compiles the Christoffel/Jacobian kernel, which it compiles after
    the first ~/dynamics; ~/christoffel then streams the core library's Γ."""
    from test_node_support import assert_dynamics_msg, christoffel_array
    env = dict(ros_env, NUMBA_CACHE_DIR=str(tmp_path / 'numba_cache'))
    proc = Proc(node_cmd('cold', '-p', f'robot_description:={read(ARM7)}'), env)
    probe = Probe(rclpy_context, 'cold')
    model = rd.load_urdf(ARM7)
    q, v = np.linspace(-0.5, 0.5, 7), np.linspace(0.2, -0.2, 7)
    sent = []
    try:
        probe.wait_connected(timeout=600)

        def send_until(topic):
            end = time.monotonic() + 600
            while not probe.received[topic] and time.monotonic() < end:
                sent.append(1_000_000_000 + 20_000_000 * len(sent))
                probe.js_pub.publish(probe.joint_state(model.joint_names, q, v, None, sent[-1]))
                probe.spin_for(0.02)
            return bool(probe.received[topic])
        assert send_until('dynamics'), proc.out
        first = probe.received['dynamics'][0]
        assert_dynamics_msg(first, model, q, v)
        assert not probe.received['christoffel']        # Γ was not computed for it
        assert send_until('christoffel'), proc.out
        gamma = probe.received['christoffel'][0]
        np.testing.assert_allclose(christoffel_array(gamma), rd.christoffel(model, q),
                                   rtol=0, atol=1e-12)
    finally:
        probe.destroy()
    assert_clean(proc, proc.stop(signal.SIGINT))
    assert proc.out.index('first joint state accepted') < proc.out.index(
        'compiling the Christoffel/Jacobian kernel in the background')


@pytest.mark.parametrize('delay', [0.3, 0.6, 0.9, 1.2])
def test_signal_during_the_imports(ros_env, delay):
    """Ctrl-C while the executable is still importing NumPy, numba and rclpy, or building the
    node (loading its kernels): the handlers are installed before those imports, so it ends
    with status 0, no traceback.  (Before, the first ~0.5 s, the package's own import, ended
    with KeyboardInterrupt; a stop raised as an exception while a kernel was loading was
    printed as "Exception ignored on calling ctypes callback function".)"""
    proc = Proc(node_cmd('imports'), ros_env)
    time.sleep(delay)             # the input of this test: how far the start has gone
    assert_clean(proc, proc.stop(signal.SIGINT))


@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGTERM], ids=['SIGINT', 'SIGTERM'])
def test_sim_exits_cleanly(ros_env, rclpy_context, sig):
    """The simulator publishes from a worker thread at 1 kHz; a signal ends it with status 0."""
    from sensor_msgs.msg import JointState
    ns = f'sim_{sig.name}'
    proc = Proc(sim_cmd(ns, '-p', 'scenario:=none'), ros_env)
    probe = Probe(rclpy_context, ns, msgs=False)
    got = []
    probe.node.create_subscription(JointState, f'/{ns}/joint_states', got.append, 10)
    try:
        assert probe.spin_until(lambda: len(got) >= 20, TIMEOUT), proc.out
    finally:
        probe.destroy()
    assert_clean(proc, proc.stop(sig))


def test_readme_params_file_commands(ros_env, tmp_path):
    """The README's way to start the node on your URDF, as written: scripts/urdf_params.py
    writes a parameter file, the node starts from it (with the ros2 CLI's `ros2 run` replaced by
    the module it runs)."""
    with open(os.path.join(REPO_ROOT, 'README.md')) as f:
        text = f.read()
    assert 'python scripts/urdf_params.py robot.urdf -o out/robot_params.yaml' in text
    out = tmp_path / 'arm7_params.yaml'
    subprocess.run([sys.executable, os.path.join(REPO_ROOT, 'scripts', 'urdf_params.py'),
                    ARM7, '-o', str(out)], check=True, env=ros_env)
    cmd = (f'exec {sys.executable} -m ros_dynamics.ros.dynamics_node.node --ros-args -r '
           f'__ns:=/readme --params-file {REPO_ROOT}/config/dynamics.yaml --params-file {out}')
    proc = Proc(cmd, ros_env, shell=True)
    proc.wait_for('model ready: 7 joints')
    assert_clean(proc, proc.stop(signal.SIGINT))


def test_urdf_on_the_command_line_gets_a_hint(ros_env):
    """-p robot_description:=<XML with a comment>: rcl reads -p values as YAML and fails; the
    node exits with status 2 and the way out, no traceback. A file path as the description is
    refused with the hint, and the node says what it waits for."""
    xml = '<robot name="r"><!-- base: bolted --><link name="a"/></robot>'
    res = subprocess.run([sys.executable, '-m', 'ros_dynamics.ros.dynamics_node.node', '--ros-args',
                          '-p', f'robot_description:={xml}'], env=ros_env, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 2 and 'Traceback' not in res.stderr, res.stderr
    assert '--params-file' in res.stderr and "launch file's urdf:=" in res.stderr
    proc = Proc(f'exec {sys.executable} -m ros_dynamics.ros.dynamics_node.node --ros-args -r '
                f'__ns:=/pathdesc -p robot_description:=urdf/arm7.urdf', ros_env, shell=True)
    proc.wait_for('waiting for a valid description')
    assert "not URDF XML but starts with 'urdf/arm7.urdf'" in proc.out
    rc = proc.stop(signal.SIGINT)
    assert rc == 0 and 'Traceback' not in proc.out, proc.out


def test_without_interface_package(rclpy_context, ros_env, tmp_path):
    """ros_dynamics_msgs not importable: the node says once how to build it and still publishes
    its standard-type outputs, with the core's values."""
    shadow = tmp_path / 'shadow' / 'ros_dynamics_msgs'
    shadow.mkdir(parents=True)
    (shadow / '__init__.py').write_text("raise ImportError('hidden by the test')\n")
    env = dict(ros_env)
    env['PYTHONPATH'] = os.pathsep.join([str(tmp_path / 'shadow'), env['PYTHONPATH']])
    params = {'robot_description': read(ARM7), 'observer_gain': [30.0]}
    node = NodeProcess(env, str(tmp_path), 'nomsgs', params)
    probe = Probe(rclpy_context, 'nomsgs', msgs=False)
    try:
        probe.wait_connected(node)
        model = rd.load_urdf(ARM7)
        rng = np.random.default_rng(3)
        q, v, e = (rng.uniform(-1, 1, 7) for _ in range(3))
        names = model.joint_names
        stamps = iter(range(5_000_000_000, 6_000_000_000, 1_000_000))
        assert probe.send_until_answered(      # the first answer after the start
            lambda: probe.joint_state(names, q, v, e, next(stamps)), 'gravity_torque')
        s2 = next(stamps)
        g_msg = probe.send_and_wait(probe.joint_state(names, q, v, e, s2), 'gravity_torque')
        np.testing.assert_allclose(np.asarray(g_msg.effort), rd.gravity(model, q), rtol=0,
                                   atol=1e-12)
        assert probe.spin_until(lambda: probe.find_stamped('external_torque', s2) is not None)
    finally:
        probe.destroy()
        rc = node.stop()
    log = node.log()
    assert rc == 0 and 'Traceback' not in log, log
    assert log.count('ros_dynamics_msgs is not installed') == 1, log
    assert 'scripts/build_interfaces.sh' in log and 'colcon build' in log


def test_without_visualization_and_diagnostic_messages(rclpy_context, ros_env, tmp_path):
    """A minimal ROS installation without visualization_msgs and diagnostic_msgs (seen with a
    colcon build on a bare rclpy): the node says which outputs are off and runs."""
    env = dict(ros_env)
    for pkg in ('visualization_msgs', 'diagnostic_msgs'):
        shadow = tmp_path / 'shadow' / pkg
        shadow.mkdir(parents=True)
        (shadow / '__init__.py').write_text("raise ImportError('hidden by the test')\n")
    env['PYTHONPATH'] = os.pathsep.join([str(tmp_path / 'shadow'), env['PYTHONPATH']])
    node = NodeProcess(env, str(tmp_path), 'novis', {'robot_description': read(ARM7)})
    probe = Probe(rclpy_context, 'novis')
    try:
        probe.wait_connected(node)
        q = np.zeros(7)
        stamps = iter(range(3_000_000_000, 4_000_000_000, 1_000_000))
        dyn = probe.send_until_answered(lambda: probe.joint_state(
            rd.load_urdf(ARM7).joint_names, q, q, q, next(stamps)))
    finally:
        probe.destroy()
        rc = node.stop()
    log = node.log()
    assert dyn is not None and rc == 0 and 'Traceback' not in log, log
    assert 'visualization_msgs is not installed' in log and 'diagnostic_msgs is not installed' in log
