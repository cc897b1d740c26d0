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
The decisions are in ros_dynamics/ros/launch_logic.py (plain Python, tested without launch).
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration

from ros_dynamics.ros import launch_logic


def _launch_setup(context, logic):
    args = {n: LaunchConfiguration(n).perform(context) for n, _, _ in logic.CLOSED_LOOP_ARGS}
    return logic.to_launch(logic.closed_loop_actions(args))


def generate_launch_description():
    logic, share = launch_logic, launch_logic.share_dir()
    default = logic.defaults(logic.CLOSED_LOOP_ARGS, share)
    return LaunchDescription([
        *[DeclareLaunchArgument(n, default_value=default[n], description=h)
          for n, _, h in logic.CLOSED_LOOP_ARGS],
        OpaqueFunction(function=_launch_setup, args=[logic]),
    ])
