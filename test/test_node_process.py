"""dynamics_node and sim as processes: clean exit (status 0, no traceback) on SIGINT and SIGTERM,
while building the model and while running; the README's `ros2 run ... -p
robot_description:="$(cat urdf/arm7.urdf)"` form through rclpy's argument parsing; and the
standard-type fallback when the interface package ros_dynamics_msgs cannot be imported."""
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from test_node_support import ARM7, REPO_ROOT, NodeProcess, Probe, read

pytestmark = pytest.mark.ros

rd = pytest.importorskip('ros_dynamics')
TIMEOUT = 60.0


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
    return [sys.executable, '-m', 'ros_dynamics.ros.dynamics_node', '--ros-args',
            '-r', f'__ns:=/{ns}', *extra]


def sim_cmd(ns, *extra):
    return [sys.executable, '-m', 'ros_dynamics.ros.sim_node', '--ros-args',
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
        assert probe.send_and_wait(probe.joint_state(names, np.zeros(7), np.zeros(7), None,
                                                     1_000_000)) is not None
    finally:
        probe.destroy()
    rc = proc.stop(sig)
    assert_clean(proc, rc)
    assert f'{sig.name} received: shutting down' in proc.out
    # while the model is being built (the kernel warm-up): ends at once, quietly
    proc = Proc(node_cmd(f'early_{sig.name}_{executor}', '-p',
                         f'robot_description:={read(ARM7)}'), ros_env)
    proc.wait_for('building the model')
    assert_clean(proc, proc.stop(sig))


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


def _readme_command():
    """The README's `ros2 run ros_dynamics dynamics_node ... robot_description:="$(cat ...)"`."""
    with open(os.path.join(REPO_ROOT, 'README.md')) as f:
        text = f.read()
    cmds = re.findall(r'^ros2 run ros_dynamics dynamics_node .*robot_description:="\$\(cat '
                      r'urdf/arm7\.urdf\)"$', text, flags=re.M)
    assert cmds, 'README has no `ros2 run ... robot_description:="$(cat urdf/arm7.urdf)"` line'
    return cmds[0]


def test_readme_run_command(ros_env):
    """The README command as written, through bash and rclpy's argument parsing (the bundled
    URDF's comments must not read as YAML), with `ros2 run ros_dynamics dynamics_node`
    replaced by the module it runs (the ros2 CLI is not a dependency of the tests)."""
    cmd = _readme_command().replace('ros2 run ros_dynamics dynamics_node',
                                    f'exec {sys.executable} -m ros_dynamics.ros.dynamics_node', 1)
    cmd = cmd.replace('--ros-args', '--ros-args -r __ns:=/readme', 1)
    proc = Proc(cmd, ros_env, shell=True)
    proc.wait_for('model ready: 7 joints')
    assert_clean(proc, proc.stop(signal.SIGINT))


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
        s1, s2 = 5_000_000_000, 5_001_000_000
        assert probe.send_and_wait(probe.joint_state(names, q, v, e, s1), 'gravity_torque')
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
