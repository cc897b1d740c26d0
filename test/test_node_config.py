"""The node's parameter table is the one source of config/dynamics.yaml, docs/parameters.md,
the validation and the ROS descriptors; a running node describes its ranges to
``ros2 param describe`` (over DDS, the same service the CLI calls)."""
import os

import pytest
import yaml

from ros_dynamics.ros import parameters as P
from test_node_support import ARM7, read, running_node

pytestmark = pytest.mark.ros

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_generated_files_are_up_to_date():
    for path, text in P.generated_files(REPO_ROOT).items():
        with open(path) as f:
            assert f.read() == text, f'{path} is stale: python -m ros_dynamics.ros.parameters --write'


def test_yaml_defaults_load_and_validate():
    with open(os.path.join(REPO_ROOT, 'config', 'dynamics.yaml')) as f:
        params = yaml.safe_load(f)['/**']['ros__parameters']
    assert set(params) == {p.name for p in P.PARAMETERS if p.in_parameter_file}
    for name, value in params.items():
        default = P.BY_NAME[name].default
        assert value == default and type(value) is type(default), name
    P.validate({**{p.name: p.default for p in P.PARAMETERS}, **params})


@pytest.mark.parametrize('name, value, text', [
    ('christoffel_decimation', 0, 'christoffel_decimation'),
    ('gravity', [0.0, 0.0], '3 elements'),
    ('gravity', [0.0, 0.0, 2e3], 'norm'),
    ('observer_gain', [0.0], '0 <'),
    ('observer_gain', [float('nan')], 'finite'),
    ('coordinates', 'cartesian', 'one of joint, mimic_reduced, center_of_mass'),
    ('contact_release_ratio', 1.5, '<= 1'),
    ('payload_mass', 1.0, 'payload_link'),
    ('stamp_max_lead', 0.0, '0 <'),
    ('task_frames', 'LF_foot', 'list of strings'),
    ('task_frames', ['LF_foot', ''], 'non-empty strings'),
])
def test_validation_refuses_with_the_rule(name, value, text):
    values = {p.name: p.default for p in P.PARAMETERS}
    values[name] = value
    with pytest.raises(ValueError, match=None) as err:
        P.validate(values)
    assert text in str(err.value), str(err.value)


def test_running_node_describes_ranges(rclpy_context, ros_env, tmp_path):
    """What `ros2 param describe` shows: the descriptor's ranges and rule text.  Also: an
    empty list of frames in the parameter file (which rcl passes with no value, having no
    element to type it by) is taken as the empty list, not refused."""
    from rcl_interfaces.srv import DescribeParameters
    params = {'robot_description': read(ARM7), 'task_frames': [], 'contact_frames': []}
    with running_node(rclpy_context, ros_env, str(tmp_path), 'cfg', params) as (proc, probe):
        client = probe.node.create_client(DescribeParameters, '/cfg/dynamics/describe_parameters')
        assert client.wait_for_service(timeout_sec=10)
        fut = client.call_async(DescribeParameters.Request(
            names=['contact_release_ratio', 'christoffel_decimation', 'gravity']))
        assert probe.spin_until(fut.done)
        ratio, dec, grav = fut.result().descriptors
        assert ratio.floating_point_range[0].from_value == 0.0
        assert ratio.floating_point_range[0].to_value == 1.0
        assert dec.integer_range[0].from_value == 1
        assert '3 elements' in grav.additional_constraints
        assert probe.spin_until(lambda: 'model ready:' in proc.log()), proc.log()
        assert 'must be a list' not in proc.log(), proc.log()
