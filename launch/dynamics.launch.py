"""Start ros_dynamics' dynamics_node for a URDF or xacro file (and optionally the simulator, RViz).

    ros2 launch ros_dynamics dynamics.launch.py                        # bundled 7-DoF arm
    ros2 launch ros_dynamics dynamics.launch.py urdf:=/path/robot.urdf.xacro xacro_args:="prefix:=left_ arm:=true"
    ros2 launch ros_dynamics dynamics.launch.py namespace:=arm sim:=true   # + simulator in /arm
    ros2 launch ros_dynamics dynamics.launch.py urdf:=/path/quadruped.urdf floating_base:=true
    ros2 launch ros_dynamics dynamics.launch.py params_file:=/path/my_dynamics.yaml
    ros2 launch ros_dynamics dynamics.launch.py sim:=true rviz:=true       # + robot_state_publisher, rviz2
    ros2 launch ros_dynamics dynamics.launch.py managed:=true autostart:=true   # lifecycle node

The file is read (xacro files through the xacro Python module, with `xacro_args` as
`name:=value` mappings) and passed as the `robot_description` parameter, on top of the
parameters in `params_file` (default: share/ros_dynamics/config/dynamics.yaml).

* `sim:=true`: the simulator `sim` runs alongside in the same namespace, on the same
  description, publishing `joint_states` (fixed-base robots: `floating_base:=true sim:=true` is
  refused).
* `managed:=true`: `dynamics_lifecycle_node` as a launch_ros LifecycleNode (unconfigured at
  start; `autostart:=true` configures and activates it).
* `rviz:=true`: robot_state_publisher (same description) and rviz2 with config/dynamics.rviz,
  Fixed Frame the URDF root link (`world` with a floating base); when either is not installed,
  a log line says so and what to install.

The decisions are in ros_dynamics/ros/launch_logic.py (plain Python, tested without launch).
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration

from ros_dynamics.ros import launch_logic


def _launch_setup(context, logic, share):
    args = {n: LaunchConfiguration(n).perform(context) for n, _, _ in logic.DYNAMICS_ARGS}
    return logic.to_launch(logic.dynamics_actions(args, share))   # LaunchArgumentError: refused


def generate_launch_description():
    logic, share = launch_logic, launch_logic.share_dir()
    default = logic.defaults(logic.DYNAMICS_ARGS, share)
    return LaunchDescription([
        *[DeclareLaunchArgument(n, default_value=default[n], description=h)
          for n, _, h in logic.DYNAMICS_ARGS],
        OpaqueFunction(function=_launch_setup, args=[logic, share]),
    ])
