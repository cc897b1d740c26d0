"""Start ros_dynamics' dynamics_node for a URDF or xacro file (and optionally the simulator).

    ros2 launch ros_dynamics dynamics.launch.py                        # bundled 7-DoF arm
    ros2 launch ros_dynamics dynamics.launch.py urdf:=/path/robot.urdf.xacro xacro_args:="prefix:=left_ arm:=true"
    ros2 launch ros_dynamics dynamics.launch.py namespace:=arm sim:=true   # + simulator in /arm
    ros2 launch ros_dynamics dynamics.launch.py urdf:=/path/quadruped.urdf floating_base:=true
    ros2 launch ros_dynamics dynamics.launch.py params_file:=/path/my_dynamics.yaml

The file is read (xacro files through the xacro Python module, with `xacro_args` as
`name:=value` mappings) and passed as the `robot_description` parameter, on top of the
parameters in `params_file` (default: share/ros_dynamics/config/dynamics.yaml).
With `sim:=true` the simulator `sim` runs alongside in the same namespace, on the same
description, publishing `joint_states` (fixed-base robots).
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

TRUE = ('true', '1', 'yes', 'on')


def xacro_mappings(text):
    """'a:=1 b:=x' -> {'a': '1', 'b': 'x'} (the xacro command line's form)."""
    out = {}
    for item in text.split():
        key, sep, value = item.partition(':=')
        if not sep or not key:
            raise ValueError(f"xacro_args: expected name:=value, got {item!r}")
        out[key] = value
    return out


def robot_description_from_file(path, xacro_args=''):
    """URDF XML of a .urdf file, or of a .xacro file expanded with the xacro module."""
    if path.endswith('.xacro'):
        import xacro
        return xacro.process_file(path, mappings=xacro_mappings(xacro_args)).toxml()
    with open(path) as f:
        return f.read()


def _launch_setup(context, *args, **kwargs):
    def arg(name):
        return LaunchConfiguration(name).perform(context)

    xml = robot_description_from_file(arg('urdf'), arg('xacro_args'))
    namespace = arg('namespace')
    floating = arg('floating_base').lower() in TRUE
    nodes = [Node(
        package='ros_dynamics',
        executable='dynamics_node',
        name='dynamics',
        namespace=namespace,
        output='screen',
        parameters=[arg('params_file'), {'robot_description': xml, 'floating_base': floating}],
    )]
    if arg('sim').lower() in TRUE:
        nodes.append(Node(
            package='ros_dynamics',
            executable='sim',
            name='sim',
            namespace=namespace,
            output='screen',
            parameters=[{'robot_description': xml}],
        ))
    return nodes


def generate_launch_description():
    share = get_package_share_directory('ros_dynamics')
    return LaunchDescription([
        DeclareLaunchArgument('urdf', default_value=os.path.join(share, 'urdf', 'arm7.urdf'),
                              description='URDF or xacro file of the robot'),
        DeclareLaunchArgument('xacro_args', default_value='',
                              description="xacro arguments, 'name:=value name2:=value2'"),
        DeclareLaunchArgument('params_file',
                              default_value=os.path.join(share, 'config', 'dynamics.yaml'),
                              description='Parameter file of dynamics_node'),
        DeclareLaunchArgument('namespace', default_value='',
                              description='Namespace of the nodes (topics joint_states, odom, '
                                          '<ns>/dynamics/...)'),
        DeclareLaunchArgument('floating_base', default_value='false',
                              description='6-DoF free joint at the URDF root; base state from odom'),
        DeclareLaunchArgument('sim', default_value='false',
                              description='Also start the simulator (publishes joint_states)'),
        OpaqueFunction(function=_launch_setup),
    ])
