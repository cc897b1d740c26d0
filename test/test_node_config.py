"""config/dynamics.yaml documents exactly the parameters dynamics_node declares, with the
node's defaults, and the node accepts it."""
import os

import pytest
import yaml

pytestmark = pytest.mark.ros

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(REPO_ROOT, 'config', 'dynamics.yaml')


def test_config_matches_declared_parameters():
    pytest.importorskip('rclpy')
    from ros_dynamics.ros import dynamics_node as node
    with open(CONFIG) as f:
        data = yaml.safe_load(f)
    params = data['/**']['ros__parameters']
    declared = {name: default for name, default, _, _ in node._PARAMS}
    assert set(params) == set(declared)
    for name, default in declared.items():
        assert params[name] == default, name
        assert type(params[name]) is type(default), name


def test_config_validates():
    pytest.importorskip('rclpy')
    from ros_dynamics.ros import dynamics_node as node
    with open(CONFIG) as f:
        params = yaml.safe_load(f)['/**']['ros__parameters']
    node._Config(dict(params))
    bad = dict(params, christoffel_decimation=0)
    with pytest.raises(ValueError):
        node._Config(bad)
