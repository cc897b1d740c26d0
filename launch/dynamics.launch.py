"""Start ros_dynamics' dynamics_node for a URDF or xacro file.

    ros2 launch ros_dynamics dynamics.launch.py                        # bundled 7-DoF arm
    ros2 launch ros_dynamics dynamics.launch.py urdf:=/path/robot.urdf.xacro
    ros2 launch ros_dynamics dynamics.launch.py params_file:=/path/my_dynamics.yaml

The file is read (xacro files through the xacro Python module) and passed as the
`robot_description` parameter, on top of the parameters in `params_file`
(default: share/ros_dynamics/config/dynamics.yaml).
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def robot_description_from_file(path):
    """URDF XML of a .urdf file, or of a .xacro file expanded with the xacro module."""
    if path.endswith('.xacro'):
        import xacro
        return xacro.process_file(path).toxml()
    with open(path) as f:
        return f.read()


def _launch_setup(context, *args, **kwargs):
    urdf = LaunchConfiguration('urdf').perform(context)
    params_file = LaunchConfiguration('params_file').perform(context)
    return [Node(
        package='ros_dynamics',
        executable='dynamics_node',
        name='dynamics',
        output='screen',
        parameters=[params_file, {'robot_description': robot_description_from_file(urdf)}],
    )]


def generate_launch_description():
    share = get_package_share_directory('ros_dynamics')
    return LaunchDescription([
        DeclareLaunchArgument('urdf', default_value=os.path.join(share, 'urdf', 'arm7.urdf'),
                              description='URDF or xacro file of the robot'),
        DeclareLaunchArgument('params_file',
                              default_value=os.path.join(share, 'config', 'dynamics.yaml'),
                              description='Parameter file of dynamics_node'),
        OpaqueFunction(function=_launch_setup),
    ])
