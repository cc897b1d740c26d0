"""launch/closed_loop.launch.py against the stand-ins of test_launch.py (launch is not
installable here): three nodes, the simulator in external mode, one URDF for sim and dynamics
node, and the controller's parameters are names the controller declares."""
import os

import pytest

from test_launch import REPO_ROOT, launch_module  # noqa: F401  (fixture: the stand-ins)

pytestmark = pytest.mark.core

LAUNCH = os.path.join(REPO_ROOT, 'launch', 'closed_loop.launch.py')


@pytest.fixture
def closed_loop(launch_module):  # noqa: F811
    ns = {'__file__': LAUNCH, '__name__': 'closed_loop_launch'}
    exec(compile(open(LAUNCH).read(), LAUNCH, 'exec'), ns)
    return ns


def test_closed_loop_launch(closed_loop):
    from ros_dynamics.ros.tracking_controller import _PARAMS
    entities = closed_loop['generate_launch_description']()
    args = {e.args[0]: e.kwargs['default_value'] for e in entities if 'default_value' in e.kwargs}
    (opaque,) = [e for e in entities if 'function' in e.kwargs]
    args['law'] = 'computed_torque'
    nodes = {n.kwargs['name']: n.kwargs for n in opaque.kwargs['function'](args)}
    assert set(nodes) == {'sim', 'dynamics', 'tracking_controller'}
    with open(os.path.join(REPO_ROOT, 'urdf', 'arm7.urdf')) as f:
        xml = f.read()
    (sim,) = nodes['sim']['parameters']
    assert sim['control'] == 'external' and sim['robot_description'] == xml
    assert nodes['dynamics']['parameters'][1] == {'robot_description': xml}
    (ctl,) = nodes['tracking_controller']['parameters']
    assert ctl['law'] == 'computed_torque'
    assert set(ctl) <= {p[0] for p in _PARAMS}
