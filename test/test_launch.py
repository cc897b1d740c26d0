"""launch/dynamics.launch.py: its decisions live in ros_dynamics/ros/launch_logic.py (plain Python), tested
here directly: argument validation (contradictions refused with a message naming them), which
nodes with which parameters for sim / managed / autostart / rviz, and the fallback message when
rviz2 or robot_state_publisher are missing. The repository stands in for the package share
folder (same layout: urdf/, config/, launch/).

When launch and launch_ros are importable, the launch file itself is run through the real
launch API (arguments declared, OpaqueFunction executed in a LaunchContext) and the resulting
launch_ros actions are checked; otherwise that test is skipped (launch has no wheels on PyPI).

What this does not prove: that `ros2 launch` starts the processes, that rviz2 and
robot_state_publisher accept these arguments, or that the lifecycle transitions succeed (the
autostart is launch_ros' LifecycleNode(autostart=True)); those need a ROS installation.
"""
import ast
import os
import sys

import pytest

from ros_dynamics.ros import launch_logic

pytestmark = pytest.mark.core

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAUNCH_DIR = os.path.join(REPO_ROOT, 'launch')
LAUNCH = os.path.join(LAUNCH_DIR, 'dynamics.launch.py')
ARM7 = os.path.join(REPO_ROOT, 'urdf', 'arm7.urdf')


L = launch_logic



def plan(installed=('rviz2', 'robot_state_publisher'), **overrides):
    args = L.defaults(L.DYNAMICS_ARGS, REPO_ROOT)
    args.update(overrides)
    return L.dynamics_actions(args, REPO_ROOT, package_available=lambda p: p in installed)


def nodes(actions):
    return {a.name: a for a in actions if isinstance(a, L.NodeAction)}


def logs(actions):
    return [a.message for a in actions if isinstance(a, L.LogAction)]


def test_defaults_bundled_arm():
    args = L.defaults(L.DYNAMICS_ARGS, REPO_ROOT)
    assert args['urdf'] == ARM7 and os.path.isfile(args['params_file'])
    (node,) = plan()
    assert (node.package, node.executable, node.name, node.namespace) == (
        'ros_dynamics', 'dynamics_node', 'dynamics', '')
    assert not node.lifecycle
    params_file, overrides = node.parameters
    assert params_file == args['params_file']
    with open(ARM7) as f:
        assert overrides == {'robot_description': f.read(), 'floating_base': False}


def test_namespace_floating_base_and_sim():
    quad = os.path.join(REPO_ROOT, 'urdf', 'quadruped.urdf')
    (node,) = plan(urdf=quad, namespace='robot', floating_base='true')
    assert node.namespace == 'robot' and node.parameters[1]['floating_base'] is True
    n = nodes(plan(namespace='arm', sim='yes'))
    assert n['sim'].executable == 'sim' and n['sim'].namespace == 'arm' == n['dynamics'].namespace
    assert n['sim'].parameters == [{'robot_description': n['dynamics'].parameters[1][
        'robot_description'], 'floating_base': False}]
    # a floating base simulated too: the simulator stands it on its feet and publishes odom
    n = nodes(plan(urdf=quad, floating_base='true', sim='true'))
    assert n['sim'].parameters[0]['floating_base'] is True
    assert n['dynamics'].parameters[1]['floating_base'] is True


def test_contradictions_and_bad_values_are_refused():
    with pytest.raises(L.LaunchArgumentError, match='autostart:=true applies to managed:=true'):
        plan(autostart='true')
    with pytest.raises(L.LaunchArgumentError, match=r"sim:='maybe': expected true or false"):
        plan(sim='maybe')
    with pytest.raises(L.LaunchArgumentError, match='no such file'):
        plan(urdf='/nonexistent/robot.urdf')
    with pytest.raises(L.LaunchArgumentError, match='not a .xacro file'):
        plan(xacro_args='a:=1')
    with pytest.raises(L.LaunchArgumentError, match='expected name:=value'):
        L.xacro_mappings('a=1')


def test_managed_and_autostart():
    actions = plan(managed='true')
    node = nodes(actions)['dynamics']
    assert node.lifecycle and not node.autostart and node.executable == 'dynamics_lifecycle_node'
    assert any("ros2 lifecycle set /dynamics configure" in m for m in logs(actions))
    actions = plan(managed='true', autostart='true', namespace='arm')
    node = nodes(actions)['dynamics']
    assert node.lifecycle and node.autostart and node.namespace == 'arm' and not logs(actions)


def test_rviz_when_installed_and_when_not():
    n = nodes(plan(rviz='true'))
    assert set(n) == {'dynamics', 'robot_state_publisher', 'rviz2'}
    xml = n['dynamics'].parameters[1]['robot_description']
    assert n['robot_state_publisher'].parameters == [{'robot_description': xml}]
    d, config, f, fixed = n['rviz2'].arguments
    assert (d, f) == ('-d', '-f') and os.path.isfile(config)
    from urdf_parser_py.urdf import URDF           # independent root-link finder
    assert fixed == URDF.from_xml_string(xml).get_root() == 'base'
    quad = os.path.join(REPO_ROOT, 'urdf', 'quadruped.urdf')
    rviz = nodes(plan(rviz='true', urdf=quad, floating_base='true'))['rviz2']
    assert rviz.arguments[-1] == 'world'
    actions = plan(rviz='true', installed=('robot_state_publisher',))
    assert set(nodes(actions)) == {'dynamics'}
    (msg,) = logs(actions)
    assert 'rviz2 not installed' in msg and 'ros-$ROS_DISTRO-rviz2' in msg
    assert 'ros_dynamics.ros.viewer' in msg
    (msg,) = logs(plan(rviz='true', installed=()))
    assert 'robot_state_publisher and rviz2 not installed' in msg


def test_rviz_config_names_the_node_topics():
    """config/dynamics.rviz: RobotModel, MarkerArray on dynamics/markers, Wrench on
    dynamics/external_wrench (relative names: rviz2 runs in the launch namespace)."""
    import yaml
    with open(os.path.join(REPO_ROOT, 'config', 'dynamics.rviz')) as f:
        cfg = yaml.safe_load(f)
    displays = {d['Class']: d for d in cfg['Visualization Manager']['Displays']}
    assert displays['rviz_default_plugins/MarkerArray']['Topic']['Value'] == 'dynamics/markers'
    assert displays['rviz_default_plugins/Wrench']['Topic']['Value'] == 'dynamics/external_wrench'
    assert displays['rviz_default_plugins/RobotModel']['Description Topic']['Value'] == \
        'robot_description'


def test_xacro_expansion():
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, 'two.urdf.xacro')
        with open(path, 'w') as f:
            f.write(
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
        (node,) = plan(urdf=path, xacro_args='mass:=2.5')
    xml = node.parameters[1]['robot_description']
    assert 'xacro:' not in xml and '2.5' in xml
    assert L.root_link(xml) == 'base'


def test_launch_file_uses_the_logic():
    """Without launch installed: the file compiles, declares every argument of the table and
    maps the logic's actions (no decisions of its own)."""
    tree = ast.parse(open(LAUNCH).read())
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert 'generate_launch_description' in names
    calls = {n.func.attr for n in ast.walk(tree)
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
    assert {'dynamics_actions', 'to_launch', 'defaults'} <= calls


def _run_launch_file(path, overrides):
    """The launch file through the real launch API: declare arguments, execute the
    OpaqueFunction in a LaunchContext; returns the actions it produces."""
    from launch import LaunchContext
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    ns = {'__file__': path, '__name__': 'launch_file_under_test'}
    exec(compile(open(path).read(), path, 'exec'), ns)
    ld = ns['generate_launch_description']()
    context = LaunchContext()
    context.launch_configurations.update(overrides)
    declared = [e for e in ld.entities if isinstance(e, DeclareLaunchArgument)]
    for e in declared:
        e.execute(context)
    (opaque,) = [e for e in ld.entities if isinstance(e, OpaqueFunction)]
    return {e.name for e in declared}, opaque.execute(context)


def test_real_launch_api():
    pytest.importorskip('launch_ros', reason='launch / launch_ros not installed (no PyPI wheels)')
    from launch.actions import LogInfo
    from launch_ros.actions import LifecycleNode, Node
    declared, actions = _run_launch_file(LAUNCH, {'sim': 'true'})
    assert declared == {n for n, _, _ in L.DYNAMICS_ARGS}
    assert [type(a) for a in actions] == [Node, Node]
    assert [a.node_executable for a in actions] == ['dynamics_node', 'sim']
    _, actions = _run_launch_file(LAUNCH, {'managed': 'true', 'autostart': 'true'})
    (node,) = actions
    assert isinstance(node, LifecycleNode) and node.node_executable == 'dynamics_lifecycle_node'
    _, actions = _run_launch_file(LAUNCH, {'managed': 'true'})
    assert [type(a) for a in actions] == [LifecycleNode, LogInfo]
    with pytest.raises(L.LaunchArgumentError, match='autostart:=true applies'):
        _run_launch_file(LAUNCH, {'autostart': 'true'})
