"""A quadruped trotting through the stream, on cmd_vel: MuJoCo's plant + dynamics node +
wbc_controller (gait trot), the plant in real time, never waiting for a command.

    ros2 launch ros_dynamics trot.launch.py                          # Solo12 (example-robot-data)
    ros2 launch ros_dynamics trot.launch.py robot:=quadruped hidden_load:=1.0 sensing:=noisy
    ros2 topic pub -r 10 /cmd_vel geometry_msgs/msg/Twist "{linear: {x: 0.3}}"   # then: walk

* ``sim`` (``sim_mujoco``): MuJoCo at 1 kHz in real time; ``hidden_load`` kg on the trunk the
  URDF does not know; ``sensing:=noisy``: odometry 200 Hz, 10 ms late, 0.03 m/s noise;
* ``dynamics`` (``dynamics_node``, parameters from ``params_file``): ``~/dynamics``,
  ``~/task_space`` and ``~/contact_forces`` of the feet;
* ``wbc_controller`` (``gait: trot``): follows ``cmd_vel`` (linear.x, linear.y in the heading
  frame, angular.z; none for 0.5 s: trot in place), touch-downs from the node's contact estimate
  (``contact_estimate:=false``: from its schedule).

The decisions are in ros_dynamics/ros/launch_logic.py (plain Python, tested without launch).
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration

from ros_dynamics.ros import launch_logic


def _launch_setup(context, logic):
    args = {n: LaunchConfiguration(n).perform(context) for n, _, _ in logic.TROT_ARGS}
    return logic.to_launch(logic.trot_actions(args))


def generate_launch_description():
    logic, share = launch_logic, launch_logic.share_dir()
    default = logic.defaults(logic.TROT_ARGS, share)
    return LaunchDescription([
        *[DeclareLaunchArgument(n, default_value=default[n], description=h)
          for n, _, h in logic.TROT_ARGS],
        OpaqueFunction(function=_launch_setup, args=[logic]),
    ])
