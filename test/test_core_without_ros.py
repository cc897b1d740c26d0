"""The core (and estimation, simulation) import and compute without ROS: a child process in
which importing rclpy (or any ROS module) fails."""

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.core

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r'''
import importlib.abc, sys
BLOCKED = ('rclpy', 'rcl_interfaces', 'sensor_msgs', 'std_msgs', 'nav_msgs', 'geometry_msgs',
           'ament_index_python', 'launch', 'launch_ros', 'ros_dynamics_msgs')
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in BLOCKED:
            raise ImportError(f'{name} is blocked in this test')
sys.meta_path.insert(0, Block())
import numpy as np
import ros_dynamics as rd
from ros_dynamics import testing
from ros_dynamics.simulation import evaluation, plant, scenarios
m = rd.load_urdf(rd.bundled_urdf('arm7'))
data = rd.Data(m)
rd.compute_all_terms(m, np.zeros(m.nq), np.ones(m.nv), data, christoffel=True)
obs = rd.MomentumObserver(m)
obs.update_from(data, np.zeros(m.nv), 1e-3)
assert not any(k.split('.')[0] in BLOCKED for k in sys.modules), sorted(sys.modules)
print('ok', data.M.shape, data.Gamma.shape)
'''


def test_core_imports_and_computes_without_ros():
    env = dict(os.environ, PYTHONPATH=REPO_ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''))
    out = subprocess.run([sys.executable, '-c', CHILD], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == 'ok (7, 7) (7, 7, 7)'
