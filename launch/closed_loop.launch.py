"""Closed loop: simulator (external efforts) + dynamics node + tracking controller on one URDF.

    ros2 launch ros_dynamics closed_loop.launch.py                         # bundled arm7, Slotine-Li
    ros2 launch ros_dynamics closed_loop.launch.py law:=pd_gravity frequency:=0.5
    ros2 launch ros_dynamics closed_loop.launch.py urdf:=/path/robot.urdf.xacro lockstep_timeout:=0.0

* ``sim`` (``control: external``, ``scenario: none``): publishes ``joint_states``, applies
  ``/sim/effort_command``; with ``lockstep_timeout`` > 0 (default 1 s) it waits for the command
  answering each joint state before stepping, so the loop's results do not depend on the load
  of the machine (0: free running at ``real_time_factor``);
* ``dynamics`` (``dynamics_node``, parameters from ``params_file`` + the URDF): publishes
  ``/dynamics/dynamics`` per joint state;
* ``tracking_controller``: pairs them by stamp and publishes ``/sim/effort_command``.

The URDF (xacro expanded) is passed as ``robot_description`` to the simulator and the dynamics
node.  Gains default to ω² diag M(q0) and 2ω diag M(q0), ω = ``bandwidth``.
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

ARGS = (
    ('law', 'slotine_li', "pd_gravity | computed_torque | slotine_li"),
    ('trajectory', 'sine', 'sine | min_jerk'),
    ('amplitude', '0.4', 'trajectory amplitude [rad], all joints'),
    ('frequency', '1.0', 'trajectory frequency [Hz]'),
    ('bandwidth', '30.0', 'feedback bandwidth ω [rad/s] of the default gains'),
    ('real_time_factor', '1.0', 'simulated seconds per wall second (upper bound in lock-step)'),
    ('lockstep_timeout', '1.0', 'sim waits up to this long [s] for each command; 0: free running'),
    ('command_timeout', '0.1', 'sim falls back to gravity compensation + damping after [s]'),
    ('duration', '0.0', 'simulated seconds, then the simulator exits (0: forever)'),
)


def robot_description_from_file(path):
    """URDF XML of a .urdf or .xacro file: the function of the sibling dynamics.launch.py."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        'ros_dynamics_dynamics_launch', os.path.join(os.path.dirname(__file__),
                                                     'dynamics.launch.py'))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.robot_description_from_file(path)


def _launch_setup(context, *args, **kwargs):
    a = {n: LaunchConfiguration(n).perform(context) for n, _, _ in ARGS}
    xml = robot_description_from_file(LaunchConfiguration('urdf').perform(context))
    params_file = LaunchConfiguration('params_file').perform(context)
    sim = {'robot_description': xml, 'control': 'external', 'scenario': 'none',
           'real_time_factor': float(a['real_time_factor']),
           'lockstep_timeout': float(a['lockstep_timeout']),
           'command_timeout': float(a['command_timeout']), 'duration': float(a['duration']),
           'wait_for_subscribers': 2, 'publish_robot_description': False}
    ctl = {'law': a['law'], 'trajectory': a['trajectory'],
           'amplitude': [float(a['amplitude'])], 'frequency': [float(a['frequency'])],
           'bandwidth': float(a['bandwidth'])}
    return [
        Node(package='ros_dynamics', executable='dynamics_node', name='dynamics',
             output='screen', parameters=[params_file, {'robot_description': xml}]),
        Node(package='ros_dynamics', executable='tracking_controller',
             name='tracking_controller', output='screen', parameters=[ctl]),
        Node(package='ros_dynamics', executable='sim', name='sim', output='screen',
             parameters=[sim]),
    ]


def generate_launch_description():
    share = get_package_share_directory('ros_dynamics')
    return LaunchDescription([
        DeclareLaunchArgument('urdf', default_value=os.path.join(share, 'urdf', 'arm7.urdf'),
                              description='URDF or xacro file of the robot'),
        DeclareLaunchArgument('params_file',
                              default_value=os.path.join(share, 'config', 'dynamics.yaml'),
                              description='Parameter file of dynamics_node'),
        *[DeclareLaunchArgument(n, default_value=d, description=h) for n, d, h in ARGS],
        OpaqueFunction(function=_launch_setup),
    ])
