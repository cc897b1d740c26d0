"""``wbc_controller``: a whole-body controller for a floating-base quadruped that closes the loop
through the dynamics node's stream alone (``ros2 run ros_dynamics wbc_controller``).  A thin
adapter over :class:`ros_dynamics.control.legged_controller.LeggedController` (the gait,
``stand_step`` or ``trot``, and the QP of :mod:`ros_dynamics.control.wbc`); no model of its own.

* subscribes ``dynamics_topic`` (default ``dynamics/dynamics``: M, C, g, q, v) and
  ``task_space_topic`` (default ``dynamics/task_space``: the feet's J, J̇ v, positions and the
  centroidal terms) and pairs them by stamp (:class:`ros_dynamics.control.StampPairer`); the
  subscriptions keep the messages serialized, read only their stamps, and the worker reads
  only the pairs it answers (:mod:`.wbc_wire`: a message it skips costs a stamp read);
* answers at ``control_rate`` Hz of the stream's time (:class:`ros_dynamics.control.cadence.
  ControlPeriods`): a worker thread takes the newest pair when it is free and, if that pair
  opens a period not yet answered, solves the QP and publishes the joint torques on
  ``command_topic`` (default ``sim/effort_command``; sensor_msgs/JointState ``name`` +
  ``effort``, ``header.stamp`` = the stamp it answers).  Pairs that came while it computed are
  skipped, never worked through: a command always answers the newest state it could;
* ``gait`` ``trot``: takes ``cmd_vel_topic`` (geometry_msgs/Twist: ``linear.x``, ``linear.y``
  in the trunk's heading frame, ``angular.z``; none for ``cmd_vel_timeout`` s: trot in place);
* with ``contact_forces_topic`` (the dynamics node's ``~/contact_forces`` of the feet): the
  trot's touch-downs and lost feet from its ``in_contact``
  (:mod:`ros_dynamics.control.touchdown`); the stand-step schedule's CoM offset from the feet's
  centre of pressure (:mod:`ros_dynamics.control.com_offset`);
* with ``delay_compensation`` Δ > 0 the state is carried forward by Δ before the gait and the
  QP see it (:mod:`ros_dynamics.control.prediction`): for a known delay from the measurement
  to the torques acting;
* publishes the CoM reference of each answer on ``~/com_reference`` (geometry_msgs/PointStamped,
  world frame, the answered stamp) for plots and evaluation;
* refuses at start-up, with the reason: an unknown ``gait``, not four ``feet``, a foot that is
  not a link of ``robot_description``; at the first pair, feet the stream does not carry or not
  laid out as a quadruped's (two in front, two behind) (logged, no command);
* logs every ``report_period`` s (and at exit) the periods owed / answered / skipped, the
  staleness of the answered states, the latency and the age of each answer
  (:mod:`~ros_dynamics.control.cadence`), the QP's solved count and CPU time, the touch-downs
  by kind.
"""

import os
import sys
import threading
import time

from ros_dynamics.ros import compat as ros_compat

if __name__ == '__main__' or os.path.basename(sys.argv[0] if sys.argv else '') == 'wbc_controller':
    ros_compat.start_entry_point()   # pip ROS wheels: re-execute once with LD_LIBRARY_PATH set

import numpy as np  # noqa: E402
from builtin_interfaces.msg import Time  # noqa: E402
from geometry_msgs.msg import PointStamped, Twist  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from rclpy.serialization import serialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from ros_dynamics.control import StampPairer  # noqa: E402
from ros_dynamics.control.cadence import ControlPeriods  # noqa: E402
from ros_dynamics.control.com_offset import CoMOffset  # noqa: E402
from ros_dynamics.control.legged_controller import GAITS, LeggedController  # noqa: E402
from ros_dynamics.control.wbc import effort_limits_from_urdf  # noqa: E402
from ros_dynamics.ros import process  # noqa: E402
from ros_dynamics.ros.control.dynamics_terms import dynamics_msg_type  # noqa: E402
from ros_dynamics.ros.control.wbc_stream import (contact_estimate, dynamics_arrays,  # noqa: E402
                                                 header_stamp, read_serialized,
                                                 stream_state, task_space_msg_type)
from ros_dynamics.ros.dynamics_node.wire import Template, stamped  # noqa: E402
from ros_dynamics.ros.parameter_table import Param, ParameterTable  # noqa: E402

#: a contact estimate older than this (stream time) is not used: the gait's schedule then
CONTACT_TIMEOUT_NS = 100_000_000


def _needs_description(checked):
    if not checked['robot_description']:
        raise ValueError('robot_description (URDF) is needed for the effort limits')


def _force_range_ordered(checked):
    low, high = checked['normal_force_range']
    if not low < high:
        raise ValueError(f'normal_force_range must be [low, high] with low < high, not '
                         f'{[low, high]}')


def _four_feet_in_the_urdf(checked):
    import xml.etree.ElementTree as ET
    feet = list(checked['feet'])
    if len(feet) != 4 or len(set(feet)) != 4:
        raise ValueError(f'feet: four different links are needed, not {feet}')
    try:
        links = {link.get('name') for link in ET.fromstring(checked['robot_description'])
                 .iter('link')}
    except ET.ParseError as exc:
        raise ValueError(f'robot_description is not XML: {exc}') from None
    missing = [f for f in feet if f not in links]
    if missing:
        raise ValueError(f'feet {missing} are not links of robot_description')
    if checked['gait'] == 'stand_step' and checked['lift_foot'] not in feet:
        raise ValueError(f'lift_foot {checked["lift_foot"]!r} is not one of the feet {feet}')


P = Param
#: the controller's parameters (all read-only; docs/parameters.md)
PARAMETERS = ParameterTable('wbc_controller', (
    P('robot_description', '', 'URDF (XML): the joints\' <limit effort> bound the torques; '
      'the feet must be its links.', 'start-up'),
    P('gait', 'stand_step', 'stand_step (stand, CoM trajectory, lift lift_foot and put it '
      'down) or trot (diagonal pairs, following cmd_vel).', 'start-up', choices=GAITS),
    P('feet', ['LF_foot', 'RF_foot', 'LH_foot', 'RH_foot'], 'The four point feet (links; task '
      'frames of ~/task_space).', 'start-up', item='string'),
    P('control_rate', 500.0, 'Answers per second of the stream\'s time [Hz] (the joint-state '
      'rate or a divisor of it).', 'start-up', 0.0, 1e5, True),
    P('cmd_vel_topic', 'cmd_vel', 'geometry_msgs/Twist velocity command (trot): linear.x, '
      'linear.y [m/s] in the heading frame, angular.z [rad/s].', 'start-up'),
    P('cmd_vel_timeout', 0.5, 'Seconds without a cmd_vel before trotting in place.',
      'start-up', 0.0, 1e4, True),
    P('step_height', 0.0, 'Swing height [m] (0: the gait\'s own: 5 cm for stand_step, a '
      'fifth of the standing height for trot).', 'start-up', 0.0, 1.0),
    P('delay_compensation', 0.0, 'Seconds from a joint state\'s measurement to its torques '
      'acting, if known: the state is carried forward by it before the QP (0: off).',
      'start-up', 0.0, 0.1),
    P('lift_foot', 'LF_foot', 'stand_step: the foot lifted.', 'start-up'),
    P('friction', 0.5, 'Friction coefficient of the linearized cones.', 'start-up',
      0.0, 100.0, True),
    P('com_amplitude', 0.02, 'stand_step: CoM trajectory amplitude [m].', 'start-up', 0.0,
      1.0),
    P('com_gains', [400.0, 40.0], 'CoM task (K_p [1/s^2], K_d [1/s]): accelerations, so any '
      'mass.', 'start-up', 0.0, 1e6, lengths=(2,)),
    P('orientation_gains', [400.0, 40.0], 'Trunk orientation task (K_p, K_d).', 'start-up',
      0.0, 1e6, lengths=(2,)),
    P('swing_gains', [900.0, 60.0], 'Swing foot task (K_p, K_d).', 'start-up', 0.0, 1e6,
      lengths=(2,)),
    P('normal_force_range', [0.0125, 2.5], 'Bounds of each stance foot\'s normal force, in '
      'units of the robot\'s weight m g (from the stream): scales with the robot.', 'start-up',
      0.0, 100.0, lengths=(2,)),
    P('schedule', [0.5, 0.5, 0.8, 0.1, 0.5, 1.5], 'stand_step: phase durations [s]: stand, '
      'each CoM segment, weight shift, unload (and load), swing, final stand.', 'start-up',
      0.0, 1e4, True, lengths=(6,)),
    P('dynamics_topic', 'dynamics/dynamics', 'ros_dynamics_msgs/Dynamics input.', 'start-up'),
    P('task_space_topic', 'dynamics/task_space', 'ros_dynamics_msgs/TaskSpace input.',
      'start-up'),
    P('command_topic', 'sim/effort_command', 'sensor_msgs/JointState effort output.',
      'start-up'),
    P('contact_forces_topic', '', 'ros_dynamics_msgs/ContactForces of the feet (the dynamics '
      'node\'s ~/contact_forces): trot: touch-downs and lost feet from in_contact; stand_step: '
      'the CoM offset from their centre of pressure ("": off).', 'start-up'),
    P('com_offset_time_constant', 2.0, 'stand_step: time constant of the CoM offset\'s '
      'low-pass [s].', 'start-up', 0.0, 1e4, True),
    P('max_pending', 100, 'Messages waiting for their partner, at most, per kind.', 'start-up',
      1, 1000000),
    P('report_period', 5.0, 'Seconds between statistics log lines (0: only at exit).',
      'start-up', 0.0, 1e6),
), rules=(_needs_description, _force_range_ordered, _four_feet_in_the_urdf),
    about='The whole-body controller (docs/ros_interface.md, "Whole-body controller '
    '`wbc_controller`"). Every parameter is read at start-up (read-only).')


class NewestPair:
    """The newest stamp pair the subscriptions completed, for the worker (a lock and a
    condition; an older pair is replaced, never queued)."""

    def __init__(self):
        self._cond = threading.Condition()
        self._pair = None

    def put(self, pair):
        with self._cond:
            self._pair = pair
            self._cond.notify()

    def take(self, timeout):
        """The newest pair not taken yet, waiting up to ``timeout`` s (None: none came)."""
        with self._cond:
            if self._pair is None:
                self._cond.wait(timeout)
            pair, self._pair = self._pair, None
            return pair

    def wake(self):
        with self._cond:
            self._cond.notify()


class WBCController(Node):
    """The node of the module docstring."""

    def __init__(self):
        super().__init__('wbc_controller')
        cfg = self.cfg = PARAMETERS.declare(self)
        self.feet = list(cfg.feet)
        self.controller = self._controller(cfg)
        self.pairer = StampPairer(int(cfg.max_pending))
        self.periods = ControlPeriods(cfg.control_rate)
        self.slot, self.done = NewestPair(), threading.Event()
        self.counts = dict(rejected=0, resent=0)
        self.qp_time = []
        self.joints, self.ref = None, PointStamped()
        self.ref.header.frame_id = 'world'
        self._last = None                        # (stamp, message) of the last command
        self._command = None                     # (template or None, JointState): _command_message
        self._cmd_vel = None                     # (monotonic s, (vx, vy, wz))
        self._contact_raw = None                 # the newest ContactForces, serialized
        self._contact = None                     # (stamp ns, {foot: bool}, forces (4, 3))
        self.types = (dynamics_msg_type(), task_space_msg_type())
        qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
        self.create_subscription(self.types[0], cfg.dynamics_topic, self._on_dynamics, qos,
                                 raw=True)
        self.create_subscription(self.types[1], cfg.task_space_topic, self._on_task_space, qos,
                                 raw=True)
        if cfg.contact_forces_topic:
            from ros_dynamics_msgs.msg import ContactForces
            self.contact_type = ContactForces
            self.create_subscription(ContactForces, cfg.contact_forces_topic,
                                     self._on_contact_forces, qos, raw=True)
        if cfg.gait == 'trot':
            self.create_subscription(Twist, cfg.cmd_vel_topic, self._on_cmd_vel, 10)
        self.pub = self.create_publisher(JointState, cfg.command_topic, qos)
        self.pub_ref = self.create_publisher(PointStamped, '~/com_reference', qos)
        if float(cfg.report_period) > 0:
            self.create_timer(float(cfg.report_period), self.report)
        self.get_logger().info(
            f'wbc_controller: gait {cfg.gait}, feet {self.feet}, {cfg.control_rate:g} Hz; '
            f'stream from {self.resolve_topic_name(cfg.dynamics_topic)} and '
            f'{self.resolve_topic_name(cfg.task_space_topic)}, torques to '
            f'{self.resolve_topic_name(cfg.command_topic)}'
            + (f', cmd_vel from {self.resolve_topic_name(cfg.cmd_vel_topic)}'
               if cfg.gait == 'trot' else '')
            + (f', contact estimate from {self.resolve_topic_name(cfg.contact_forces_topic)}'
               if cfg.contact_forces_topic else ''))

    def _controller(self, cfg):
        """The ROS-free controller of the parameters (effort limits read from the URDF at the
        first pair, when the joint order is known)."""
        schedule = dict(zip(('t_track', 'segment', 'shift', 'unload', 'swing', 'stand'),
                            cfg.schedule), lift=cfg.lift_foot, amplitude=cfg.com_amplitude)
        offset = (CoMOffset(cfg.com_offset_time_constant) if cfg.contact_forces_topic
                  and cfg.gait == 'stand_step' else None)
        return LeggedController(
            self.feet, None, cfg.gait, cfg.step_height, tuple(cfg.normal_force_range),
            dict(mu=cfg.friction, com_gains=tuple(cfg.com_gains),
                 orientation_gains=tuple(cfg.orientation_gains),
                 swing_gains=tuple(cfg.swing_gains)), schedule, offset)

    def _reject(self, what, exc):
        self.counts['rejected'] += 1
        self.get_logger().warning(f'{what} rejected: {exc}', throttle_duration_sec=2.0)

    # -- the executor thread: a serialized message's stamp, stored ------------------------------

    def _stamp(self, what, data):
        try:
            return header_stamp(data)
        except ValueError as exc:
            self._reject(what, exc)

    def _on_dynamics(self, data):
        t_rx = time.monotonic()
        stamp = self._stamp('Dynamics', data)
        if stamp is None:
            return
        last = self._last
        if last is not None and stamp == last[0]:
            # the state answered last, published again (a simulator that waits for its first
            # command repeats its first state: ours may have gone out before it subscribed)
            self.counts['resent'] += 1
            return self.pub.publish(last[1])
        self._serve(self.pairer.add_state(stamp, (data, t_rx)))

    def _on_task_space(self, data):
        stamp = self._stamp('TaskSpace', data)
        if stamp is not None:
            self._serve(self.pairer.add_terms(stamp, (data, time.monotonic())))

    def _serve(self, pair):
        if pair is not None:
            self.periods.receive(pair[0])
            self.slot.put(pair)

    def _on_contact_forces(self, data):
        self._contact_raw = data

    def _on_cmd_vel(self, msg):
        cmd = (msg.linear.x, msg.linear.y, msg.angular.z)
        if not all(np.isfinite(cmd)):
            return self._reject('cmd_vel', f'non-finite {cmd}')
        self._cmd_vel = (time.monotonic(), cmd)

    # -- the worker thread: the newest pair, one answer per period --------------------------------

    def loop(self):
        """The worker: answer the newest pair whenever it opens an unanswered period (an
        unexpected error is logged and the next pair answered: the worker does not die)."""
        while not self.done.is_set():
            pair = self.slot.take(0.1)
            if pair is None or not self.periods.due(pair[0]):
                continue
            try:
                self._answer(*pair)
            except Exception as exc:  # noqa: BLE001 - logged; the stream goes on
                self.counts['rejected'] += 1
                self.get_logger().error(f'answering stamp {pair[0]} failed: {exc!r}',
                                        throttle_duration_sec=2.0)

    def _inputs(self, stamp):
        """(command, contact {foot: bool} or None, forces (stamp, (4, 3)) or None) now: the
        newest cmd_vel unless too old, the newest contact estimate unless too far from
        ``stamp``."""
        cmd_vel = self._cmd_vel
        command = (0.0, 0.0, 0.0)
        if cmd_vel is not None and time.monotonic() - cmd_vel[0] <= self.cfg.cmd_vel_timeout:
            command = cmd_vel[1]
        raw, self._contact_raw = self._contact_raw, None
        if raw is not None:
            try:
                arrays = read_serialized('ContactForces', raw, self.contact_type)
                self._contact = (header_stamp(raw), *contact_estimate(arrays, self.feet))
            except ValueError as exc:
                self._reject('ContactForces', exc)
        estimate = self._contact
        if estimate is None or abs(stamp - estimate[0]) > CONTACT_TIMEOUT_NS:
            return command, None, None
        return command, estimate[1], (estimate[0], estimate[2])

    def _command_message(self):
        """The command's JointState (the joints' names, their efforts) as a serialized template
        written in place each period (wire.Template: no message object converted per answer),
        or the message itself where the middleware's serialization is not plain CDR."""
        msg = JointState(name=self.joints, effort=[0.0] * len(self.joints))
        try:
            self._command = (Template(msg, serialize_message), msg)
        except ValueError:
            self._command = (None, msg)

    def _answer(self, stamp, dyn, ts):
        try:
            state = stream_state(
                dynamics_arrays(read_serialized('Dynamics', dyn[0], self.types[0])),
                read_serialized('TaskSpace', ts[0], self.types[1]))
            if self.controller.effort_limit is None:
                self.controller.effort_limit = effort_limits_from_urdf(
                    self.cfg.robot_description, state.names[6:])
                self.joints = list(state.names[6:])
                self._command_message()
            started = self.controller.gait is not None
            tau, ref, sol = self.controller.command(stamp, state, *self._inputs(stamp),
                                                    ahead=self.cfg.delay_compensation)
        except ValueError as exc:
            return self._reject('stream pair', exc)
        if not started:
            self.get_logger().info(f'{self.cfg.gait} starts at stamp {stamp * 1e-9:.3f} s; CoM '
                                   f'{np.round(state.com, 4).tolist()}; torques bounded at '
                                   f'{np.round(self.controller.effort_limit, 2).tolist()} N m')
        self.qp_time.append(sol.cpu_time)
        del self.qp_time[:-100000]
        if not sol.solved:
            self.get_logger().warning('QP not solved: the last solved torques are repeated',
                                      throttle_duration_sec=1.0)
        if tau is None:
            return
        sec, nanosec = stamp // 1_000_000_000, stamp % 1_000_000_000
        template, msg = self._command
        if template is not None:
            template.arrays['effort'][:] = tau
        else:
            msg.effort = tau.tolist()
        cmd = stamped(template, msg, (sec, nanosec))
        self.pub.publish(cmd)
        self._last = (stamp, cmd)
        self.periods.answer(stamp, time.monotonic() - max(dyn[1], ts[1]),
                            self.get_clock().now().nanoseconds)
        self.ref.header.stamp = Time(sec=sec, nanosec=nanosec)
        self.ref.point.x, self.ref.point.y, self.ref.point.z = (float(x) for x in ref.com)
        self.pub_ref.publish(self.ref)

    def report(self):
        c, k, p = self.pairer.counts, self.controller.counts, self.periods.summary()
        tried = k['solved'] + k['unsolved']
        qp = np.asarray(self.qp_time) * 1e6

        def ms(x):
            return f'p50 {x[0]:.2f} ms, p99 {x[1]:.2f} ms, max {x[2]:.2f} ms' if x else '-'
        gait = self.controller.gait
        feet = getattr(gait, 'foot', None)
        touchdowns = ({kind: sum(feet[f].touchdowns[kind] for f in feet)
                       for kind in next(iter(feet.values())).touchdowns} if feet else None)
        self.get_logger().info(
            f'periods at {self.cfg.control_rate:g} Hz: owed {p["owed"]}, answered '
            f'{p["answered"]} ({100 * p["answered_fraction"]:.2f} %), skipped {p["skipped"]}, '
            f'gaps in the stream {p["gaps"]}; staleness {ms(p["staleness_ms"])}; latency '
            f'{ms(p["latency_ms"])}; age {ms(p["age_ms"])}; pairs {c["served"]}/{c["states"]}, '
            f'QP solved '
            f'{k["solved"]}/{tried}, rejected {self.counts["rejected"]}, resent '
            f'{self.counts["resent"]}'
            + (f'; QP CPU time p50 {np.percentile(qp, 50):.0f} us, p99 '
               f'{np.percentile(qp, 99):.0f} us' if qp.size else '')
            + (f'; touch-downs {touchdowns}, lost {sum(f.lost for f in feet.values())}'
               if touchdowns else '')
            + (f'; CoM offset ({self.controller.offset.offset[0]:.4f}, '
               f'{self.controller.offset.offset[1]:.4f}) m from '
               f'{self.controller.offset.updates} force samples'
               if self.controller.offset is not None else ''))


def main(args=None):
    """Entry point of ``wbc_controller``: spins until SIGINT/SIGTERM, logs the statistics."""
    def start(node):
        node.thread = threading.Thread(target=node.loop, daemon=True)
        node.thread.start()

    def stop(node):
        node.done.set()
        node.slot.wake()
        node.thread.join(timeout=5.0)
        node.report()

    return process.run(WBCController, args, executor='events', before_spin=start,
                       on_stop=stop)


if __name__ == '__main__':
    sys.exit(main())
