"""``tracking_controller``: a joint-space tracking controller that closes the loop through the
dynamics node's stream (``ros2 run ros_dynamics tracking_controller``, default node name
``tracking_controller``).  A thin adapter over :mod:`ros_dynamics.control`.

* subscribes ``joint_states`` (sensor_msgs/JointState) and ``dynamics_topic`` (default
  ``dynamics/dynamics``, i.e. ``~/dynamics`` of a dynamics node named ``dynamics`` in the same
  namespace; ros_dynamics_msgs/Dynamics);
* pairs them by stamp (:class:`ros_dynamics.control.StampPairer`): the command answering the
  joint state stamped ``t`` is computed from that joint state and the terms stamped ``t``, and
  only when the terms' position and velocity equal the joint state's.  When the matching terms
  are late (a newer pair is complete first) the cycle is skipped: no command, the plant holds
  the last one (the simulator's ``~/effort_command`` contract) -- counted as ``late``;
* publishes ``command_topic`` (default ``sim/effort_command``; sensor_msgs/JointState,
  ``name`` + ``effort``, ``header.stamp`` = the stamp of the joint state it answers);
* logs every 5 s (and at exit) the served fraction, the counters and the latency joint state
  received -> command published (p50/p99).

The reference starts at the first served joint state (its stamp is t = 0 of the trajectory)
and at ``q0`` (empty: that joint state's position, so the robot starts on the reference).
Parameters: see ``PARAMETERS`` below (all read-only after start; docs/ros_interface.md).
"""

import os
import sys
import time

from ros_dynamics.ros import compat as ros_compat

_ENTRY = os.path.basename(sys.argv[0] if sys.argv else '')
if __name__ == '__main__' or _ENTRY == 'tracking_controller':
    # Process entry point with the pip ROS wheels: re-execute once with LD_LIBRARY_PATH set.
    ros_compat.start_entry_point()

import numpy as np  # noqa: E402
from builtin_interfaces.msg import Time  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from ros_dynamics.control import StampPairer, make_law, make_trajectory  # noqa: E402
from ros_dynamics.control.laws import LAWS  # noqa: E402
from ros_dynamics.control.trajectories import TRAJECTORIES  # noqa: E402
from ros_dynamics.ros import process  # noqa: E402
from ros_dynamics.ros.parameter_table import Param, ParameterTable  # noqa: E402
from ros_dynamics.estimation.joint_input import NameMaps  # noqa: E402
from ros_dynamics.ros.control.dynamics_terms import (dynamics_msg_type, stamp_ns,  # noqa: E402
                                             terms_from_msg)


P = Param
#: the controller's parameters (all read-only after start; docs/parameters.md)
PARAMETERS = ParameterTable('tracking_controller', (
    P('law', 'slotine_li', "Control law: 'pd_gravity' (baseline), 'computed_torque' or "
      "'slotine_li'.", 'start-up', choices=LAWS),
    P('kp', None, 'Position gains [N m/rad], one or one per joint. Unset/empty: '
      'bandwidth^2 * diag M(q at the first served state).', 'start-up', 0.0, 1e9,
      type='double[]'),
    P('kd', None, 'Velocity gains [N m s/rad], one or one per joint. Unset/empty: '
      '2 * damping_ratio * bandwidth * diag M(q at the first served state).', 'start-up',
      0.0, 1e9, type='double[]'),
    P('bandwidth', 30.0, 'Closed-loop bandwidth [rad/s] for the default gains.', 'start-up',
      0.0, 1e6, True),
    P('damping_ratio', 1.0, 'Damping ratio for the default gains.', 'start-up', 0.0, 1e3, True),
    P('trajectory', 'sine', "Reference: 'sine' (q0 + A (1 - cos 2 pi f t)) or 'min_jerk' "
      '(periodic q0 -> q0 + A -> q0, each leg 1/(2f) s; Flash & Hogan 1985).', 'start-up',
      choices=TRAJECTORIES),
    P('amplitude', [0.4], 'Trajectory amplitude A [rad], one or one per joint.', 'start-up',
      -1e3, 1e3),
    P('frequency', [1.0], 'Trajectory frequency f [Hz], one or one per joint (min_jerk: the '
      'smallest).', 'start-up', 0.0, 1e3, True),
    P('q0', None, 'Trajectory start [rad] per joint. Unset/empty: the position of the '
      'first served joint state.', 'start-up', -1e6, 1e6, type='double[]'),
    P('joints', None, 'Controlled joints in command order. Unset/empty: the names of '
      'the first Dynamics message.', 'start-up', type='string[]'),
    P('dynamics_topic', 'dynamics/dynamics', 'ros_dynamics_msgs/Dynamics input topic.',
      'start-up'),
    P('command_topic', 'sim/effort_command', 'sensor_msgs/JointState effort output topic.',
      'start-up'),
    P('max_pending', 100, 'Joint states (and early terms) waiting for their partner, at most.',
      'start-up', 1, 1000000),
    P('report_period', 5.0, 'Seconds between statistics log lines (0: only at exit).',
      'start-up', 0.0, 1e6),
), about='The joint-space tracking controller (docs/ros_interface.md, "Tracking controller '
    '`tracking_controller`"). Every parameter is read at start-up (read-only).')


class TrackingController(Node):
    """The controller node (module docstring)."""

    def __init__(self):
        super().__init__('tracking_controller')
        self.config = PARAMETERS.declare(self)
        self.law_name = self._p('law')
        Dynamics = dynamics_msg_type()
        self.joints = list(self._p('joints') or [])
        self.jmap = NameMaps(self.joints) if self.joints else None   # once the order is known
        self.pairer = StampPairer(int(self._p('max_pending')), consistent=self._consistent)
        self.law = self.traj = self.t0 = None
        self.rejected = {'joint_states': 0, 'dynamics': 0, 'command': 0}
        self.latency = []
        self._late_logged = 0
        self._early = []
        qos_in = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
        self.create_subscription(JointState, 'joint_states', self._on_joint_state, qos_in)
        self.create_subscription(Dynamics, self._p('dynamics_topic'), self._on_dynamics,
                                 qos_in)
        self.pub = self.create_publisher(
            JointState, self._p('command_topic'),
            QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
        self.cmd = JointState()
        period = float(self._p('report_period'))
        if period > 0:
            self.create_timer(period, self.report)
        self.get_logger().info(
            f'tracking_controller: law {self.law_name!r}, trajectory '
            f'{self._p("trajectory")!r}, dynamics from '
            f'{self.resolve_topic_name(self._p("dynamics_topic"))}, commands to '
            f'{self.resolve_topic_name(self._p("command_topic"))}')

    def _p(self, name):
        return getattr(self.config, name)

    # -- inputs ------------------------------------------------------------------------
    def _reject(self, what, exc):
        self.rejected[what] += 1
        self.get_logger().warning(f'{what} message rejected: {exc}',
                                  throttle_duration_sec=2.0)

    def _on_joint_state(self, msg, t_rx=None):
        t_rx = time.monotonic() if t_rx is None else t_rx
        if self.jmap is None:   # joint order not known before the first Dynamics message:
            self._early.append((msg, t_rx))       # keep the latest few until then
            del self._early[:-10]
            return
        try:
            q, v = self._joint_state(msg)
        except ValueError as exc:
            return self._reject('joint_states', exc)
        pair = self.pairer.add_state(stamp_ns(msg.header.stamp), (q, v, t_rx))
        if pair is not None:
            self._serve(*pair)

    def _on_dynamics(self, msg):
        try:
            if self.jmap is None:
                terms_from_msg(msg)          # valid before its names become the order
                self.joints = list(msg.names)
                self.jmap = NameMaps(self.joints)
                early, self._early = self._early, []
                for m, t_rx in early:
                    self._on_joint_state(m, t_rx)
            terms = terms_from_msg(msg, self._name_map(msg.names).index)
        except ValueError as exc:
            return self._reject('dynamics', exc)
        pair = self.pairer.add_terms(stamp_ns(msg.header.stamp), terms)
        if pair is not None:
            self._serve(*pair)

    def _name_map(self, names):
        """The shared name map of this layout onto the controlled joints (ValueError naming
        the missing or repeated joints)."""
        nmap = self.jmap(names)
        if nmap.error:
            raise ValueError(nmap.error)
        return nmap

    def _joint_state(self, msg):
        """``(q, v)`` of a JointState in the controlled joints' order."""
        nmap = self._name_map(msg.name)
        n = len(msg.name)
        if len(msg.position) != n or len(msg.velocity) != n:
            raise ValueError('position and velocity must have one entry per name')
        q, v = np.empty(len(self.joints)), np.empty(len(self.joints))
        nmap.positions(np.asarray(msg.position, dtype=float), q)
        nmap.rates(np.asarray(msg.velocity, dtype=float), v)
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
            raise ValueError('non-finite joint state')
        return q, v

    @staticmethod
    def _consistent(state, terms):
        # the terms must have been computed at exactly this joint state
        return np.array_equal(state[0], terms.q) and np.array_equal(state[1], terms.v)

    # -- one cycle ---------------------------------------------------------------------
    def _start(self, stamp, q, terms):
        m = np.diag(terms.M).copy()
        w, z = float(self._p('bandwidth')), float(self._p('damping_ratio'))
        kp = self._p('kp')
        kd = self._p('kd')
        kp = np.asarray(kp, dtype=float) if kp else w * w * m
        kd = np.asarray(kd, dtype=float) if kd else 2.0 * z * w * m
        q0 = self._p('q0')
        q0 = np.asarray(q0, dtype=float) if q0 else q.copy()
        if q0.shape != q.shape:
            raise ValueError(f'q0 has {q0.size} values for {q.size} joints')
        self.traj = make_trajectory(self._p('trajectory'), q0,
                                    np.asarray(self._p('amplitude'), dtype=float),
                                    np.asarray(self._p('frequency'), dtype=float))
        self.law = make_law(self.law_name, kp, kd, m_ref=m)
        self.t0 = stamp
        self.cmd.name = list(self.joints)
        self.get_logger().info(
            f'reference starts at stamp {stamp * 1e-9:.3f} s; kp {np.round(kp, 2).tolist()}, '
            f'kd {np.round(kd, 2).tolist()}')

    def _serve(self, stamp, state, terms):
        q, v, t_rx = state
        late = self.pairer.counts['late']
        if late > self._late_logged:
            self._late_logged = late
            self.get_logger().warning(
                f'{late} joint states skipped so far: their dynamics terms came after a '
                'newer pair (no command for them; the plant holds the last one)',
                throttle_duration_sec=2.0)
        if self.law is None:
            self._start(stamp, q, terms)
        qd, vd, ad = self.traj((stamp - self.t0) * 1e-9)
        tau = self.law(q, v, qd, vd, ad, terms.M, terms.C, terms.g)
        if not np.all(np.isfinite(tau)):
            self.rejected['command'] += 1
            self.get_logger().error('non-finite effort computed: not published',
                                    throttle_duration_sec=2.0)
            return
        self.cmd.header.stamp = Time(sec=stamp // 1_000_000_000, nanosec=stamp % 1_000_000_000)
        self.cmd.effort = tau.tolist()
        self.pub.publish(self.cmd)
        self.latency.append(time.monotonic() - t_rx)
        if len(self.latency) > 200000:
            del self.latency[:100000]

    def report(self):
        c = self.pairer.counts
        lat = np.asarray(self.latency) * 1e3
        msg = (f'served {c["served"]}/{c["states"]} joint states '
               f'({100 * self.pairer.served_fraction():.1f} %), late {c["late"]}, '
               f'mismatched {c["mismatched"]}, stale terms {c["stale_terms"]}, '
               f'rejected {self.rejected}')
        if lat.size:
            msg += (f'; latency joint state -> command p50 {np.percentile(lat, 50):.2f} ms, '
                    f'p99 {np.percentile(lat, 99):.2f} ms')
        self.get_logger().info(msg)


def main(args=None):
    """Entry point of ``tracking_controller``: spins until SIGINT/SIGTERM, logs the statistics
    and exits with status 0 (:func:`ros_dynamics.ros.process.run`)."""
    return process.run(TrackingController, args, on_stop=lambda node: node.report())


if __name__ == '__main__':
    sys.exit(main())
