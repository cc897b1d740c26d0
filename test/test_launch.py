"""launch/dynamics.launch.py: launch and launch_ros are not installable here, so the file is
compiled, and then executed against minimal stand-ins of the launch API that record what it
builds (arguments, node, parameters), with the repository as the package share directory."""
import ast
import os
import py_compile
import sys
import types

import pytest

pytestmark = pytest.mark.core

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAUNCH = os.path.join(REPO_ROOT, 'launch', 'dynamics.launch.py')


def test_launch_file_compiles(tmp_path):
    py_compile.compile(LAUNCH, cfile=str(tmp_path / 'dynamics.launch.pyc'), doraise=True)
    tree = ast.parse(open(LAUNCH).read())
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert 'generate_launch_description' in names


class _Recorder:
    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


class _LaunchConfiguration:
    def __init__(self, name):
        self.name = name

    def perform(self, context):
        return context[self.name]


@pytest.fixture
def launch_module(monkeypatch):
    """Import the launch file with stand-in launch/launch_ros/ament_index modules."""
    mods = {name: types.ModuleType(name) for name in
            ('launch', 'launch.actions', 'launch.substitutions', 'launch_ros',
             'launch_ros.actions', 'ament_index_python', 'ament_index_python.packages')}
    mods['launch'].LaunchDescription = lambda entities: list(entities)
    mods['launch.actions'].DeclareLaunchArgument = _Recorder
    mods['launch.actions'].OpaqueFunction = _Recorder
    mods['launch.substitutions'].LaunchConfiguration = _LaunchConfiguration
    mods['launch_ros.actions'].Node = _Recorder

    def share(pkg):
        assert pkg == 'ros_dynamics'
        return REPO_ROOT  # same layout as share/ros_dynamics: urdf/, config/, launch/
    mods['ament_index_python.packages'].get_package_share_directory = share
    for name, mod in mods.items():
        monkeypatch.setitem(sys.modules, name, mod)
    ns = {'__file__': LAUNCH, '__name__': 'dynamics_launch'}
    exec(compile(open(LAUNCH).read(), LAUNCH, 'exec'), ns)
    return ns


def _run(ns, **overrides):
    entities = ns['generate_launch_description']()
    args = {e.args[0]: e.kwargs['default_value'] for e in entities if 'default_value' in e.kwargs}
    assert set(args) == {'urdf', 'xacro_args', 'params_file', 'namespace', 'floating_base', 'sim'}
    (opaque,) = [e for e in entities if 'function' in e.kwargs]
    args.update(overrides)
    nodes = opaque.kwargs['function'](args)
    return (args, nodes[0].kwargs) + tuple(n.kwargs for n in nodes[1:])


def test_launch_defaults_bundled_arm(launch_module):
    args, node = _run(launch_module)
    assert args['urdf'] == os.path.join(REPO_ROOT, 'urdf', 'arm7.urdf')
    assert args['params_file'] == os.path.join(REPO_ROOT, 'config', 'dynamics.yaml')
    assert os.path.isfile(args['params_file'])
    assert node['package'] == 'ros_dynamics'
    assert node['executable'] == 'dynamics_node'
    assert node['name'] == 'dynamics'
    assert node['namespace'] == ''
    params_file, overrides = node['parameters']
    assert params_file == args['params_file']
    with open(args['urdf']) as f:
        assert overrides == {'robot_description': f.read(), 'floating_base': False}


def test_launch_namespace_floating_base_and_sim(launch_module):
    quad = os.path.join(REPO_ROOT, 'urdf', 'quadruped.urdf')
    _, node = _run(launch_module, urdf=quad, namespace='robot', floating_base='true')
    assert node['namespace'] == 'robot'
    assert node['parameters'][1]['floating_base'] is True
    args, node, sim = _run(launch_module, namespace='arm', sim='true')
    assert sim['executable'] == 'sim' and sim['namespace'] == 'arm' == node['namespace']
    assert sim['parameters'] == [{'robot_description': node['parameters'][1]['robot_description']}]


def test_launch_expands_xacro(launch_module, tmp_path):
    pytest.importorskip('xacro')
    xacro_file = tmp_path / 'two.urdf.xacro'
    xacro_file.write_text(
        '<?xml version="1.0"?>\n'
        '<robot name="two" xmlns:xacro="http://www.ros.org/wiki/xacro">\n'
        '  <xacro:arg name="mass" default="1.0"/>\n'
        '  <xacro:property name="m" value="$(arg mass)"/>\n'
        '  <xacro:macro name="box_link" params="name">\n'
        '    <link name="${name}"><inertial><mass value="${m}"/>'
        '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>\n'
        '  </xacro:macro>\n'
        '  <xacro:box_link name="base"/>\n'
        '  <xacro:box_link name="l1"/>\n'
        '  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>'
        '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>\n'
        '</robot>\n')
    _, node = _run(launch_module, urdf=str(xacro_file), xacro_args='mass:=2.5')
    xml = node['parameters'][1]['robot_description']
    assert 'xacro:' not in xml and '2.5' in xml
    rd = pytest.importorskip('ros_dynamics')
    model = rd.load_urdf(xml)
    assert model.joint_names == ['j1']
