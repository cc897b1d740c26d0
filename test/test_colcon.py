"""`colcon build` of both packages (ros_dynamics and the interface package ros_dynamics_msgs
inside it) in a temporary workspace, with the command the README gives: install layout, and a
start of the installed dynamics_node with the installed config and bundled URDF that must find
the installed interfaces (then SIGINT: exit status 0).

Here the ROS 2 packages come from the PyPI wheels in the venv, so CMake is pointed at the venv
(CMAKE_PREFIX_PATH, AMENT_PREFIX_PATH, Python3_EXECUTABLE), as scripts/build_interfaces.sh does;
on a ROS 2 install `source /opt/ros/<distro>/setup.bash` provides the same."""
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.system

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IGNORE = shutil.ignore_patterns('.venv', '.git', '__pycache__', 'build', 'install', 'log',
                                '*.egg-info', '.pytest_cache', 'out', '*.nbi', '*.nbc')


def _colcon():
    exe = os.path.join(os.path.dirname(sys.executable), 'colcon')
    if os.path.exists(exe):
        return [exe]
    if shutil.which('colcon'):
        return ['colcon']
    return [sys.executable, '-m', 'colcon']      # colcon-core is in requirements-dev.txt


@pytest.fixture(scope='module')
def workspace(tmp_path_factory):
    ws = tmp_path_factory.mktemp('colcon_ws')
    shutil.copytree(REPO_ROOT, ws / 'src' / 'ros_dynamics', ignore=IGNORE)
    env = dict(os.environ)
    env.pop('COLCON_PREFIX_PATH', None)
    env['CMAKE_PREFIX_PATH'] = env['AMENT_PREFIX_PATH'] = sys.prefix
    # README: colcon build --paths src/ros_dynamics src/ros_dynamics/ros_dynamics_msgs
    res = subprocess.run(_colcon() + ['build', '--paths', 'src/ros_dynamics',
                                      'src/ros_dynamics/ros_dynamics_msgs',
                                      '--event-handlers', 'console_cohesion+',
                                      '--cmake-args', f'-DPython3_EXECUTABLE={sys.executable}',
                                      '-DBUILD_TESTING=OFF'],
                         cwd=ws, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    return ws


def test_install_layout(workspace):
    pkg = workspace / 'install' / 'ros_dynamics'
    for rel in ('share/ament_index/resource_index/packages/ros_dynamics',
                'share/ros_dynamics/package.xml',
                'share/ros_dynamics/launch/dynamics.launch.py',
                'share/ros_dynamics/config/dynamics.yaml',
                'share/ros_dynamics/urdf/arm7.urdf',
                'share/ros_dynamics/urdf/quadruped.urdf',
                'lib/ros_dynamics/dynamics_node'):
        assert (pkg / rel).is_file(), rel
    assert os.access(pkg / 'lib/ros_dynamics/dynamics_node', os.X_OK)
    site = list(pkg.glob('lib/python3*/site-packages/ros_dynamics/ros/dynamics_node/node.py'))
    assert site, 'ros_dynamics package not installed'
    msgs = workspace / 'install' / 'ros_dynamics_msgs'
    for rel in ('share/ros_dynamics_msgs/msg/Dynamics.msg', 'share/ros_dynamics_msgs/srv/GetDynamics.srv',
                'share/ament_index/resource_index/packages/ros_dynamics_msgs'):
        assert (msgs / rel).is_file(), rel
    assert list(msgs.glob('lib/python3*/site-packages/ros_dynamics_msgs/msg/_dynamics.py'))
    # the source tree is left alone by the build (nothing written into src/)
    assert not list((workspace / 'src' / 'ros_dynamics').glob('build'))


def test_installed_node_starts(workspace, ros_env):
    pkg = workspace / 'install' / 'ros_dynamics'
    msgs = workspace / 'install' / 'ros_dynamics_msgs'
    sites = [str(p) for p in (*pkg.glob('lib/python3*/site-packages'),
                              *msgs.glob('lib/python3*/site-packages'))]
    env = dict(ros_env)
    env['PYTHONPATH'] = os.pathsep.join(sites)  # the installed packages, not the source tree
    env['AMENT_PREFIX_PATH'] = os.pathsep.join([str(pkg), str(msgs), sys.prefix])
    env['LD_LIBRARY_PATH'] = os.pathsep.join([str(msgs / 'lib'), env.get('LD_LIBRARY_PATH', '')])
    share = pkg / 'share/ros_dynamics'
    with open(share / 'urdf/arm7.urdf') as f:
        urdf = f.read()
    # the README's command form: -p robot_description:="$(cat urdf/arm7.urdf)"
    cmd = [str(pkg / 'lib/ros_dynamics/dynamics_node'), '--ros-args', '-r', '__ns:=/colcon',
           '--params-file', str(share / 'config/dynamics.yaml'),
           '-p', f'robot_description:={urdf}']
    probe = subprocess.run([sys.executable, '-c', 'import ros_dynamics_msgs.msg as m; '
                            'print(m.__file__)'], env=env, capture_output=True, text=True)
    assert probe.stdout.startswith(str(msgs)), probe.stdout + probe.stderr
    proc = subprocess.Popen(cmd, env=env, cwd=str(workspace), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    out = ''
    try:
        # a fresh install has an empty numba cache: its first start compiles every kernel
        # (about a minute on an idle machine, several on a loaded CI one)
        end = time.monotonic() + 400
        while time.monotonic() < end and 'waiting for /colcon/joint_states' not in out:
            line = proc.stdout.readline()
            if not line:
                break
            out += line
        assert 'model ready: 7 joints' in out, out
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            rest, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            rest, _ = proc.communicate()
    assert proc.returncode == 0, out + rest
    assert 'not installed' not in out + rest and 'Traceback' not in out + rest, out + rest
