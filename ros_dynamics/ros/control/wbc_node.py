"""``wbc_controller``: a whole-body controller for a floating-base quadruped that closes the loop
through the dynamics node's stream alone (``ros2 run ros_dynamics wbc_controller``).  A thin
adapter over :class:`ros_dynamics.control.wbc.TaskSpaceInverseDynamics` and the built-in
:class:`ros_dynamics.control.stand_step.StandStepSchedule`; no model of its own.

* subscribes ``dynamics_topic`` (default ``dynamics/dynamics``: M, C, g, q, v) and
  ``task_space_topic`` (default ``dynamics/task_space``: the feet's J, J̇ v, positions and the
  centroidal terms), pairs them by stamp (:class:`ros_dynamics.control.StampPairer`; a pair
  whose names disagree is dropped);
* solves one QP per pair and publishes its joint torques on ``command_topic`` (default
  ``sim/effort_command``; sensor_msgs/JointState ``name`` + ``effort``, ``header.stamp`` = the
  stamp it answers).  A cycle whose QP is not solved repeats the last solved torques;
* publishes the CoM reference of each cycle on ``~/com_reference`` (geometry_msgs/PointStamped,
  world frame, the pair's stamp) for plots and evaluation;
* with ``contact_forces_topic`` (the dynamics node's ``~/contact_forces`` of the feet) tracks
  with its model the reference shifted by the CoM offset their centre of pressure gives
  (:class:`ros_dynamics.control.com_offset.CoMOffset`): the true CoM towards the reference when
  the model is not the robot (a hidden load off-centre, links off);
* the schedule starts at the first served pair (its stamp is t = 0, its CoM and feet the
  start); torque bounds from the ``<limit effort>`` of ``robot_description``;
* logs every ``report_period`` s (and at exit) ``served S/N pairs, QP solved P/Q (x %)``
  (Q: the served pairs that were valid and reached the QP; the others are counted rejected).
"""

import os
import sys
import time

from ros_dynamics.ros import compat as ros_compat

if __name__ == '__main__' or os.path.basename(sys.argv[0] if sys.argv else '') == 'wbc_controller':
    ros_compat.start_entry_point()   # pip ROS wheels: re-execute once with LD_LIBRARY_PATH set

import numpy as np  # noqa: E402
from builtin_interfaces.msg import Time  # noqa: E402
from geometry_msgs.msg import PointStamped  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from ros_dynamics.control import StampPairer  # noqa: E402
from ros_dynamics.control.com_offset import CoMOffset  # noqa: E402
from ros_dynamics.control.stand_step import StandStepSchedule  # noqa: E402
from ros_dynamics.control.wbc import (TaskSpaceInverseDynamics,  # noqa: E402
                                      effort_limits_from_urdf)
from ros_dynamics.ros import process  # noqa: E402
from ros_dynamics.ros.parameter_table import Param, ParameterTable  # noqa: E402
from ros_dynamics.ros.control.dynamics_terms import dynamics_msg_type, stamp_ns  # noqa: E402
from ros_dynamics.ros.control.wbc_stream import (dynamics_arrays, stream_state,  # noqa: E402
                                         task_space_msg_type)

def _needs_description(checked):
    if not checked['robot_description']:
        raise ValueError('robot_description (URDF) is needed for the effort limits')


def _force_range_ordered(checked):
    low, high = checked['normal_force_range']
    if not low < high:
        raise ValueError(f'normal_force_range must be [low, high] with low < high, not '
                         f'{[low, high]}')


P = Param
#: the controller's parameters (all read-only; docs/parameters.md); a plain (name, default,
#: description) entry is a parameter with no rule but its type
PARAMETERS = ParameterTable('wbc_controller', (
    P('robot_description', '', 'URDF (XML): the joints\' <limit effort> bound the torques.',
      'start-up'),
    P('feet', ['LF_foot', 'RF_foot', 'LH_foot', 'RH_foot'], 'Point feet (task frames of '
      '~/task_space).', 'start-up', item='string'),
    P('lift_foot', 'LF_foot', 'The foot the schedule lifts.', 'start-up'),
    P('friction', 0.5, 'Friction coefficient of the linearized cones.', 'start-up',
      0.0, 100.0, True),
    P('com_amplitude', 0.02, 'CoM trajectory amplitude [m].', 'start-up', 0.0, 1.0),
    P('com_gains', [400.0, 40.0], 'CoM task (K_p [1/s^2], K_d [1/s]): accelerations, so any '
      'mass.', 'start-up', 0.0, 1e6, lengths=(2,)),
    P('orientation_gains', [400.0, 40.0], 'Trunk orientation task (K_p, K_d).', 'start-up',
      0.0, 1e6, lengths=(2,)),
    P('swing_gains', [900.0, 60.0], 'Swing foot task (K_p, K_d).', 'start-up', 0.0, 1e6,
      lengths=(2,)),
    P('normal_force_range', [0.0125, 2.5], 'Bounds of each stance foot\'s normal force, in '
      'units of the robot\'s weight m g (from the stream): scales with the robot.', 'start-up',
      0.0, 100.0, lengths=(2,)),
    P('step_height', 0.05, 'Swing height [m].', 'start-up', 0.0, 1.0),
    P('schedule', [0.5, 0.5, 0.8, 0.1, 0.5, 1.5], 'Phase durations [s]: stand, each CoM '
      'segment, weight shift, unload (and load), swing, final stand.', 'start-up', 0.0, 1e4,
      True, lengths=(6,)),
    P('dynamics_topic', 'dynamics/dynamics', 'ros_dynamics_msgs/Dynamics input.', 'start-up'),
    P('task_space_topic', 'dynamics/task_space', 'ros_dynamics_msgs/TaskSpace input.',
      'start-up'),
    P('command_topic', 'sim/effort_command', 'sensor_msgs/JointState effort output.',
      'start-up'),
    P('contact_forces_topic', '', 'ros_dynamics_msgs/ContactForces of the feet (the dynamics '
      'node\'s ~/contact_forces): the CoM offset from their centre of pressure ("": off).',
      'start-up'),
    P('com_offset_time_constant', 2.0, 'Time constant of the CoM offset\'s low-pass [s].',
      'start-up', 0.0, 1e4, True),
    P('max_pending', 100, 'Messages waiting for their partner, at most, per kind.', 'start-up',
      1, 1000000),
    P('report_period', 5.0, 'Seconds between statistics log lines (0: only at exit).',
      'start-up', 0.0, 1e6),
), rules=(_needs_description, _force_range_ordered), about='The whole-body controller (docs/ros_interface.md, '
    '"Whole-body controller `wbc_controller`"). Every parameter is read at start-up '
    '(read-only).')


class WBCController(Node):
    """The node of the module docstring."""

    def __init__(self):
        super().__init__('wbc_controller')
        cfg = PARAMETERS.declare(self)
        p = lambda n: getattr(cfg, n)  # noqa: E731
        self.urdf = p('robot_description')
        self.feet = list(p('feet'))
        self.lift = p('lift_foot')
        self.mu, self.amp, self.height = p('friction'), p('com_amplitude'), p('step_height')
        self.wbc = self.schedule = self.t0 = None
        self.pairer = StampPairer(int(p('max_pending')), consistent=self._consistent)
        self.counts = dict(solved=0, unsolved=0, rejected=0)
        self.latency, self.qp_time = [], []
        self.cmd = JointState()
        self._last_tau = None
        self.resent = 0
        qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
        self.create_subscription(dynamics_msg_type(), p('dynamics_topic'), self._on_dynamics,
                                 qos)
        self.create_subscription(task_space_msg_type(), p('task_space_topic'),
                                 self._on_task_space, qos)
        self.offset = (CoMOffset(p('com_offset_time_constant')) if p('contact_forces_topic')
                       else None)
        self._forces = None                     # the newest (stamp, forces) measured
        self._forces_stamp = None               # the stamp of the last one used
        if p('contact_forces_topic'):
            from ros_dynamics_msgs.msg import ContactForces
            self.create_subscription(ContactForces, p('contact_forces_topic'),
                                     self._on_contact_forces, qos)
        self.pub = self.create_publisher(JointState, p('command_topic'), qos)
        self.pub_ref = self.create_publisher(PointStamped, '~/com_reference', qos)
        self.ref = PointStamped()
        self.ref.header.frame_id = 'world'
        if float(p('report_period')) > 0:
            self.create_timer(float(p('report_period')), self.report)
        self.get_logger().info(
            f'wbc_controller: feet {self.feet}, lift {self.lift!r}; stream from '
            f'{self.resolve_topic_name(p("dynamics_topic"))} and '
            f'{self.resolve_topic_name(p("task_space_topic"))}, torques to '
            f'{self.resolve_topic_name(p("command_topic"))}')

    @staticmethod
    def _consistent(dyn, ts):
        return list(ts[0].names) == dyn[0][0]

    def _reject(self, what, exc):
        self.counts['rejected'] += 1
        self.get_logger().warning(f'{what} rejected: {exc}', throttle_duration_sec=2.0)

    def _on_dynamics(self, msg):
        t_rx = time.monotonic()
        try:
            arrays = dynamics_arrays(msg)
        except ValueError as exc:
            return self._reject('Dynamics', exc)
        stamp = stamp_ns(msg.header.stamp)
        if stamp == self.pairer.last_served and self._last_tau is not None:
            # the state answered last, published again (the simulator repeats its first state
            # until a command answers it: ours may have gone out before it subscribed)
            self.resent += 1
            return self.pub.publish(self.cmd)
        pair = self.pairer.add_state(stamp, (arrays, t_rx))
        if pair is not None:
            self._serve(*pair)

    def _on_contact_forces(self, msg):
        try:
            forces = {f: (w.force.x, w.force.y, w.force.z) for f, w in zip(msg.frames,
                                                                            msg.wrenches)}
            self._forces = (stamp_ns(msg.header.stamp),
                            np.array([forces[f] for f in self.feet], dtype=float))
        except KeyError as exc:
            self._reject('ContactForces', f'no force for the foot {exc}')

    def _on_task_space(self, msg):
        pair = self.pairer.add_terms(stamp_ns(msg.header.stamp), (msg, time.monotonic()))
        if pair is not None:
            self._serve(*pair)

    def _start(self, stamp, state):
        joints = state.names[6:]
        p = lambda n: self.get_parameter(n).value  # noqa: E731
        weight = np.linalg.norm(state.g[:3])          # the base force rows of g: m |g|
        f_min, f_max = (weight * x for x in p('normal_force_range'))
        self.wbc = TaskSpaceInverseDynamics(self.feet, effort_limits_from_urdf(self.urdf, joints),
                                            mu=self.mu, normal_force=(f_min, f_max),
                                            com_gains=tuple(p('com_gains')),
                                            orientation_gains=tuple(p('orientation_gains')),
                                            swing_gains=tuple(p('swing_gains')))
        idx = [state.frames.index(f) for f in self.feet]
        t_track, segment, shift, unload, swing, stand = p('schedule')
        self.schedule = StandStepSchedule(self.feet, state.com, state.positions[idx],
                                          lift=self.lift, amplitude=self.amp, t_track=t_track,
                                          segment=segment, shift=shift, unload=unload,
                                          swing=swing, stand=stand,
                                          step_height=self.height, f_max=f_max,
                                          unload_from=weight / len(self.feet))
        self.t0 = stamp
        self.cmd.name = list(joints)
        self.get_logger().info(f'schedule starts at stamp {stamp * 1e-9:.3f} s, '
                               f'{self.schedule.duration:.1f} s long; CoM '
                               f'{np.round(state.com, 4).tolist()}')

    def _corrected(self, ref, state):
        """``ref`` shifted by the CoM offset, updated first by the newest measured forces."""
        measured, self._forces = self._forces, None
        if measured is not None:
            t, forces = measured
            dt = 0.0 if self._forces_stamp is None else (t - self._forces_stamp) * 1e-9
            self._forces_stamp = t
            idx = [state.frames.index(f) for f in self.feet]
            self.offset.update(dt, state.positions[idx], forces, state.com,
                               ref.com_acceleration, np.linalg.norm(state.g[:3]),
                               ref.com_velocity)
        return self.offset.reference(ref)

    def _serve(self, stamp, dyn, ts):
        try:
            state = stream_state(dyn[0], ts[0])
            if self.wbc is None:
                self._start(stamp, state)
            ref = self.schedule((stamp - self.t0) * 1e-9)
            # the reference published is the schedule's (the true CoM's target); the model's
            # CoM tracks it shifted by the offset
            sol = self.wbc.solve(state, ref if self.offset is None else
                                 self._corrected(ref, state))
        except ValueError as exc:
            return self._reject('stream pair', exc)
        self.qp_time.append(sol.cpu_time)
        del self.qp_time[:-100000]
        if sol.solved and np.all(np.isfinite(sol.tau)):
            self.counts['solved'] += 1
            self._last_tau = sol.tau
        else:
            self.counts['unsolved'] += 1
            self.get_logger().warning('QP not solved: the last solved torques are repeated',
                                      throttle_duration_sec=1.0)
        if self._last_tau is None:
            return
        self.cmd.header.stamp = Time(sec=stamp // 1_000_000_000, nanosec=stamp % 1_000_000_000)
        self.cmd.effort = self._last_tau.tolist()
        self.pub.publish(self.cmd)
        self.ref.header.stamp = self.cmd.header.stamp
        self.ref.point.x, self.ref.point.y, self.ref.point.z = (float(x) for x in ref.com)
        self.pub_ref.publish(self.ref)
        self.latency.append(time.monotonic() - max(dyn[1], ts[1]))
        del self.latency[:-100000]

    def report(self):
        c, k = self.pairer.counts, self.counts
        served, tried = c['served'], k['solved'] + k['unsolved']
        pct = 100.0 * k['solved'] / tried if tried else 0.0
        lat = np.asarray(self.latency) * 1e3
        qp = np.asarray(self.qp_time) * 1e6
        self.get_logger().info(
            f'served {served}/{c["states"]} pairs, QP solved {k["solved"]}/{tried} '
            f'({pct:.3f} %), late {c["late"]}, mismatched {c["mismatched"]}, rejected '
            f'{k["rejected"]}, resent {self.resent}'
            + (f'; latency pair -> command p50 {np.percentile(lat, 50):.2f} ms, p99 '
               f'{np.percentile(lat, 99):.2f} ms' if lat.size else '')
            + (f'; QP CPU time p50 {np.percentile(qp, 50):.0f} us, p99 '
               f'{np.percentile(qp, 99):.0f} us' if qp.size else '')
            + (f'; CoM offset ({self.offset.offset[0]:.4f}, {self.offset.offset[1]:.4f}) m '
               f'from {self.offset.updates} force samples' if self.offset is not None else ''))


def main(args=None):
    """Entry point of ``wbc_controller``: spins until SIGINT/SIGTERM, logs the statistics."""
    return process.run(WBCController, args, on_stop=lambda node: node.report())


if __name__ == '__main__':
    sys.exit(main())
