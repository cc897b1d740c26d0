"""`colcon build` of the package in a temporary workspace: install layout and a start of the
installed dynamics_node with the installed config (waits for robot_description, then SIGINT)."""
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
    pytest.importorskip('colcon_core')
    return [sys.executable, '-m', 'colcon']


@pytest.fixture(scope='module')
def workspace(tmp_path_factory):
    ws = tmp_path_factory.mktemp('colcon_ws')
    shutil.copytree(REPO_ROOT, ws / 'src' / 'ros_dynamics', ignore=IGNORE)
    env = dict(os.environ)
    env.pop('COLCON_PREFIX_PATH', None)
    res = subprocess.run(_colcon() + ['build', '--base-paths', 'src', '--event-handlers',
                                      'console_cohesion+'],
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
    site = list(pkg.glob('lib/python3*/site-packages/ros_dynamics/ros/dynamics_node.py'))
    assert site, 'ros_dynamics package not installed'
    # the source tree is left alone by the build (nothing written into src/)
    assert not list((workspace / 'src' / 'ros_dynamics').glob('build'))


def test_installed_node_starts(workspace, ros_env):
    pkg = workspace / 'install' / 'ros_dynamics'
    (site,) = pkg.glob('lib/python3*/site-packages')
    env = dict(ros_env)
    env['PYTHONPATH'] = str(site)  # the installed package, not the source tree
    env['AMENT_PREFIX_PATH'] = str(pkg)
    cmd = [str(pkg / 'lib/ros_dynamics/dynamics_node'), '--ros-args', '-r', '__ns:=/colcon',
           '--params-file', str(pkg / 'share/ros_dynamics/config/dynamics.yaml')]
    proc = subprocess.Popen(cmd, env=env, cwd=str(workspace), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    out = ''
    try:
        end = time.monotonic() + 60
        while time.monotonic() < end and 'waiting for the' not in out:
            line = proc.stdout.readline()
            if not line:
                break
            out += line
        assert 'waiting for the /colcon/robot_description topic' in out, out
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            rest, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            rest, _ = proc.communicate()
    assert proc.returncode == 0, out + rest
