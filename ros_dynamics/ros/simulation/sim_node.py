"""``sim`` executable: the simulator of :mod:`ros_dynamics.simulation` as a ROS 2 node.

It publishes ``joint_states`` (effort = the motor torque that acted during the period ending at
the stamp) and the truth of the external torque and contact at ``rate`` Hz, stamped in
simulated time (with ``floating_base``: a legged robot standing on a floor with rigid feet, its
base state on ``odom`` and an optional push on the base), with its own PD + gravity loop or commands from ``~/effort_command`` (held,
optionally in lock-step with the controller). Topics and parameters: docs/ros_interface.md,
"Simulator sim".
"""

import os
import sys
import threading
import time

from ros_dynamics.ros import compat as ros_compat

if __name__ == '__main__' or os.path.basename(sys.argv[0] if sys.argv else '') == 'sim':
    # Process entry point with the pip ROS wheels: re-execute once with LD_LIBRARY_PATH set.
    ros_compat.start_entry_point()

import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from builtin_interfaces.msg import Time  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Bool, String  # noqa: E402

from ros_dynamics.core.urdf import load_urdf  # noqa: E402
from ros_dynamics.estimation.joint_input import NameMaps  # noqa: E402
from ros_dynamics.ros import process  # noqa: E402
from ros_dynamics.ros.parameter_table import BIG, Param, ParameterTable  # noqa: E402
from ros_dynamics.simulation.external import HeldEffort  # noqa: E402
from ros_dynamics.simulation.plant import WrenchContact  # noqa: E402
from ros_dynamics.simulation.rigid_simulator import standing_quadruped  # noqa: E402
from ros_dynamics.simulation.scenarios import (SCENARIOS, bundled_urdf,  # noqa: E402
                                               deepest_links, make_scenario,
                                               perturb_urdf_inertia)


def _base_push_rule(checked):
    push = checked['base_push']
    if push is not None and not push[1] > 0:
        raise ValueError('base_push must be [t_start, duration > 0, fx, fy, fz]')


P = Param
#: the simulator's parameters (all read at start-up; docs/parameters.md, "sim")
PARAMETERS = ParameterTable('sim', (
    # --- the robot
    P('robot_description', '', 'URDF XML of the simulated robot; empty: urdf_path.',
      'start-up'),
    P('urdf_path', '', 'URDF file read when robot_description is empty; empty: the bundled '
      '7-joint arm (urdf/arm7.urdf).', 'start-up'),
    P('floating_base', False, 'A free joint at the URDF root: the robot stands on the floor '
      'z = 0 on rigid feet (the URDF\'s spheres), joints held by PD until commands come; odom '
      'is published (scenario is not used).', 'start-up'),
    P('publish_robot_description', True, 'Publish the URDF on robot_description (transient '
      'local).', 'start-up'),
    # --- time
    P('rate', 1000.0, 'Simulation and publication rate (Hz).', 'start-up', 0.0, 1e6, True),
    P('real_time_factor', 1.0, 'Simulated seconds per wall second (stamps stay simulated '
      'time).', 'start-up', 0.0, 1e3, True),
    P('duration', 0.0, 'Simulated seconds to run, then stop; 0: forever.', 'start-up',
      0.0, BIG),
    P('start_delay', 0.0, 'Wall seconds to wait before the first step.', 'start-up',
      0.0, 3600.0),
    P('wait_for_subscribers', 0, 'Wait (up to wait_timeout) until joint_states has this many '
      'subscribers.', 'start-up', 0, 10000),
    P('wait_timeout', 30.0, 'Longest wait for the subscribers, and for the first command in '
      'lock-step (wall s).', 'start-up', 0.0, BIG),
    # --- the scenario (fixed base)
    P('scenario', 'mixed', 'Scripted contacts: a wall, pushes, both, or none.', 'start-up',
      choices=SCENARIOS),
    P('wall_stiffness', 5000.0, 'Stiffness of the wall (N/m).', 'start-up', 0.0, 1e9),
    P('wall_damping', 50.0, 'Damping of the wall (N s/m).', 'start-up', 0.0, 1e9),
    P('push_force', 30.0, 'Force of the scripted pushes (N).', 'start-up', -1e6, 1e6),
    P('base_push', None, 'Floating base: [t_start, duration > 0, fx, fy, fz] (simulated s, N, '
      'world axes), a force on the root link\'s origin over that window; unset: none.',
      'start-up', -BIG, BIG, lengths=(5,), type='double[]'),
    # --- sensor noise and plant mismatch
    P('noise_position', 0.0, 'Standard deviation of the noise on the published positions '
      '(rad or m).', 'start-up', 0.0, 1e3),
    P('noise_velocity', 0.0, 'Standard deviation of the noise on the published velocities.',
      'start-up', 0.0, 1e3),
    P('noise_effort', 0.0, 'Standard deviation of the noise on the published efforts.',
      'start-up', 0.0, 1e6),
    P('seed', 0, 'Seed of the noise and of inertia_error.', 'start-up', 0, 2**31 - 1),
    P('friction_viscous', 0.0, 'Viscous joint friction of the plant (N m s/rad).', 'start-up',
      0.0, 1e6),
    P('friction_coulomb', 0.0, 'Coulomb joint friction of the plant (N m).', 'start-up',
      0.0, 1e6),
    P('payload_mass', 0.0, 'Payload of the plant (kg) that the URDF does not know; 0: none.',
      'start-up', 0.0, 1e4),
    P('payload_link', '', 'Link carrying the payload; empty: the deepest link.', 'start-up'),
    P('inertia_error', 0.0, 'Plant masses and inertias scaled by 1 + inertia_error u, u '
      'uniform in [-1, 1] per link (model error).', 'start-up', 0.0, 1.0),
    # --- external control
    P('control', 'builtin', 'builtin: the simulator\'s own PD + gravity loop; external: the '
      'efforts of ~/effort_command.', 'start-up', choices=('builtin', 'external')),
    P('command_timeout', 0.1, 'External control: without a command for this long (simulated '
      's) gravity compensation + joint damping hold the robot.', 'start-up', 0.0, BIG, True),
    P('fallback_damping', None, 'Joint damping of that fallback (N m s/rad), one value or one '
      'per joint; unset: the built-in controller\'s kd.', 'start-up', 0.0, 1e6,
      type='double[]'),
    P('lockstep_timeout', 0.0, 'External control: wait up to this long (wall s) for the '
      'command answering each published joint state before stepping; 0: free running.',
      'start-up', 0.0, 3600.0),
), rules=(_base_push_rule,), about='The simulator `sim` (docs/ros_interface.md, "Simulator '
    '`sim`"). Every parameter is read at start-up (read-only).')


class SimNode(Node):
    """The simulator as a node (module docstring); :meth:`loop` runs in its own thread."""

    def __init__(self):
        super().__init__('sim')
        cfg = PARAMETERS.declare(self)
        g = lambda n: getattr(cfg, n)  # noqa: E731

        xml = g('robot_description')
        if not xml:
            path = g('urdf_path') or bundled_urdf('arm7')
            with open(path) as f:
                xml = f.read()
        self.urdf = xml
        floating = bool(g('floating_base'))
        model = load_urdf(xml, floating_base=floating)
        plant_xml = xml
        if g('inertia_error') > 0:
            plant_xml = perturb_urdf_inertia(xml, g('inertia_error'), g('seed'))
        plant = load_urdf(plant_xml, floating_base=floating)
        payload = None
        if g('payload_mass') != 0.0:
            payload = (g('payload_link') or deepest_links(plant)[0], g('payload_mass'))
        rate = g('rate')
        self.dt = 1.0 / rate
        self.rtf = g('real_time_factor')
        if floating:
            self.sim, self.desc = self._standing(plant, plant_xml, g)
        else:
            self.sim, self.desc = make_scenario(
                plant, g('scenario'), dt=self.dt, noise_position=g('noise_position'),
                noise_velocity=g('noise_velocity'), noise_effort=g('noise_effort'),
                seed=g('seed'), friction_viscous=g('friction_viscous'),
                friction_coulomb=g('friction_coulomb'), wall_stiffness=g('wall_stiffness'),
                wall_damping=g('wall_damping'), push_force=g('push_force'),
                controller_model=model, payload=payload)
        self.names = list(model.joint_names)
        self.control = g('control')
        self.external = None
        self.lockstep = float(g('lockstep_timeout'))
        self._cmd_cv = threading.Condition()
        self._cmd_stamp = None
        self._sent = {}           # stamp ns -> monotonic publish time (external mode)
        self.latencies = []       # wall seconds, joint state -> its command
        self._last_stamp = None   # stamp of the latest published joint state
        self.states_published = 0
        self.in_time = 0          # commands that answered the latest joint state
        if self.control == 'external':
            damping = g('fallback_damping')
            if damping is None:
                damping = self.sim.controller.kd
            self.external = HeldEffort(model, g('command_timeout'), damping,
                                       self.sim.controller if floating else None)
            self.sim.controller = self.external
            self._maps = NameMaps(self.names)   # the command's layout -> the plant's joints
            self.create_subscription(JointState, '~/effort_command', self._on_command,
                                     QoSProfile(depth=100,
                                                reliability=ReliabilityPolicy.RELIABLE))
        self.nbq = int(model.nq) - len(self.names)
        self.nbv = int(model.nv) - len(self.names)
        self.duration = float(g('duration'))
        self.start_delay = float(g('start_delay'))
        self.wait_subs = int(g('wait_for_subscribers'))
        self.wait_timeout = float(g('wait_timeout'))

        # 2 s of samples: a reliable KEEP_LAST writer drops what a stalled reader has not
        # acknowledged once its history is full, and a loaded machine can stall for ~1 s.
        reliable = QoSProfile(depth=max(200, int(2.0 * rate)),
                              reliability=ReliabilityPolicy.RELIABLE)
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.pub_js = self.create_publisher(JointState, 'joint_states', reliable)
        self.pub_odom = self.create_publisher(Odometry, 'odom', reliable) if floating else None
        self.root = model.link_names[0]
        self.pub_truth = self.create_publisher(JointState, '~/external_torque_truth', reliable)
        self.pub_contact = self.create_publisher(Bool, '~/contact_truth', reliable)
        self.pub_link = self.create_publisher(String, '~/contact_link_truth', latched)
        if g('publish_robot_description'):
            self.pub_rd = self.create_publisher(String, 'robot_description', latched)
            self.pub_rd.publish(String(data=self.urdf))
        self._last_links = None
        self.done = threading.Event()
        self.get_logger().info(
            f'sim: {model.name!r} ({len(self.names)} joints), scenario '
            f'{self.desc["scenario"]!r}, contact link {self.desc["contact_link"]!r}, '
            f'{rate:g} Hz' + (', external efforts on ~/effort_command (' + (
                'the standing PD' if floating else 'gravity compensation + damping')
                + ' until the first one)' if self.external is not None else ''))

    def _standing(self, plant, xml, g):
        """The floating-base robot standing on rigid feet (the URDF's spheres) on the floor
        z = 0, joints held by PD until commands come; ``base_push`` = [t_start, duration, fx,
        fy, fz] adds a force (world axes, N) on the root link's origin over that window."""
        sim = standing_quadruped(plant, xml, dt=self.dt)
        push = list(g('base_push') or [])
        if push:
            sim.contacts.append(WrenchContact(plant.link_names[0], force=push[2:],
                                              t_start=push[0], t_end=push[0] + push[1]))
        return sim, dict(scenario='standing' + (f', push {push[2:]} N at t = {push[0]:g} s '
                                                f'for {push[1]:g} s' if push else ''),
                         contact_link='feet')

    def _on_command(self, msg):
        try:
            tau = self._maps.efforts(msg.name, msg.effort)
            self.external.command(tau, self.sim.t)
        except ValueError as exc:
            self.get_logger().warning(f'effort command rejected: {exc}',
                                   throttle_duration_sec=1.0)
            return
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        t_sent = self._sent.pop(stamp, None)
        if t_sent is not None:
            self.latencies.append(time.monotonic() - t_sent)
        if stamp == self._last_stamp:
            self.in_time += 1       # answers the latest joint state: acts in the next step
        with self._cmd_cv:
            self._cmd_stamp = stamp
            self._cmd_cv.notify_all()

    def _await_command(self, stamp_ns, timeout=None):
        """Lock-step: wait (wall, bounded) for the command answering ``stamp_ns``."""
        deadline = time.monotonic() + (self.lockstep if timeout is None else timeout)
        with self._cmd_cv:
            while self._cmd_stamp != stamp_ns and not self.done.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cmd_cv.wait(left)
        return True

    def _report_mode(self, last):
        ext = self.external
        if ext.mode != last and ext.mode == 'fallback':
            self.get_logger().warning(
                f'no effort command for > {ext.timeout:g} s (simulated): gravity '
                'compensation + joint damping until commands resume',
                throttle_duration_sec=1.0)
        elif ext.mode != last and ext.mode == 'external' and last == 'fallback':
            self.get_logger().info('effort commands resumed', throttle_duration_sec=1.0)
        return ext.mode

    def summary(self):
        self.get_logger().info(f'joint states published: {self.states_published}')
        if self.external is None:
            return
        ext = self.external
        lat = np.array(self.latencies) * 1e3
        msg = (f'external control: {ext.applied} steps on commands, {ext.fallback_steps} on '
               f'the fallback ({ext.transitions} timeouts); {lat.size} commands answered a '
               f'published joint state, {self.in_time} in time (before the next step)')
        if lat.size:
            msg += (f', loop latency p50 {np.percentile(lat, 50):.2f} ms, '
                    f'p99 {np.percentile(lat, 99):.2f} ms (wall)')
        self.get_logger().info(msg)

    def _publish(self, s, stamp_ns):
        stamp = Time(sec=int(stamp_ns // 1_000_000_000), nanosec=int(stamp_ns % 1_000_000_000))
        if self.pub_odom is not None:      # first: the dynamics node pairs the latest odom
            od = Odometry()
            od.header.stamp = stamp
            od.header.frame_id = 'world'
            od.child_frame_id = self.root
            pos, ori = od.pose.pose.position, od.pose.pose.orientation
            pos.x, pos.y, pos.z, ori.x, ori.y, ori.z, ori.w = (float(x) for x in s.q[:7])
            lin, ang = od.twist.twist.linear, od.twist.twist.angular   # base frame
            lin.x, lin.y, lin.z, ang.x, ang.y, ang.z = (float(x) for x in s.v[:6])
            self.pub_odom.publish(od)
        js = JointState()
        js.header.stamp = stamp
        js.name = self.names
        js.position = [float(x) for x in s.q[self.nbq:]]
        js.velocity = [float(x) for x in s.v[self.nbv:]]
        js.effort = [float(x) for x in s.tau[self.nbv:]]
        if stamp_ns != self._last_stamp:   # re-publications of a state not counted
            self._last_stamp = stamp_ns
            self.states_published += 1
        if self.external is not None:
            self._sent[stamp_ns] = time.monotonic()
            if len(self._sent) > 5000:
                for old in list(self._sent)[:1000]:
                    self._sent.pop(old, None)
        self.pub_js.publish(js)
        tr = JointState()
        tr.header.stamp = stamp
        tr.name = self.names
        tr.effort = [float(x) for x in s.tau_ext[self.nbv:]]
        self.pub_truth.publish(tr)
        self.pub_contact.publish(Bool(data=bool(s.contact)))
        links = ','.join(dict.fromkeys(s.contact_links))
        if links != self._last_links:
            self._last_links = links
            self.pub_link.publish(String(data=links))

    def loop(self):
        try:
            t_wait = time.monotonic()
            while (self.wait_subs > 0 and rclpy.ok()
                   and self.pub_js.get_subscription_count() < self.wait_subs
                   and time.monotonic() - t_wait < self.wait_timeout):
                time.sleep(0.01)
            if self.start_delay > 0:
                time.sleep(self.start_delay)
            t0_ns = self.get_clock().now().nanoseconds
            t0 = time.monotonic()
            behind_warned = False
            dt_ns = int(round(self.dt * 1e9))
            first = self.sim.initial_sample()
            self._publish(first, t0_ns)
            if self.external is not None and self.lockstep > 0:
                # Lock-step start: hold the clock at the initial state until a command
                # answers it (the controller and the dynamics node may still be starting),
                # re-publishing it every second in case it reached them before they were
                # ready; bounded by wait_timeout.
                t_first = time.monotonic()
                while (not self._await_command(t0_ns, 1.0) and not self.done.is_set()
                       and time.monotonic() - t_first < self.wait_timeout):
                    self._publish(first, t0_ns)
                t0 = time.monotonic()
            k = 0
            mode = 'waiting'
            while rclpy.ok() and not self.done.is_set():
                if self.external is not None and self.lockstep > 0:
                    self._await_command(t0_ns + k * dt_ns)
                s = self.sim.step()
                if self.external is not None:
                    mode = self._report_mode(mode)
                k += 1
                self._publish(s, t0_ns + k * dt_ns)
                if self.duration > 0 and s.t >= self.duration - 1e-12:
                    break
                lag = time.monotonic() - t0 - k * self.dt / self.rtf
                if lag < 0:
                    time.sleep(-lag)
                elif lag > 0.25:
                    if not behind_warned:
                        self.get_logger().warn(
                            f'simulation slower than real time at {1 / self.dt:g} Hz; '
                            'running as fast as possible (stamps stay simulated time)')
                        behind_warned = True
                    t0 += lag   # do not try to catch up a large backlog
        except Exception as exc:  # noqa: BLE001
            if rclpy.ok() and not self.done.is_set():   # else: shutting down
                self.get_logger().error(f'simulation stopped: {exc!r}')
        finally:
            self.done.set()


def main(args=None):
    """Entry point of ``sim``: spins until SIGINT/SIGTERM or the end of ``duration``; exit
    status 0, no traceback."""
    return process.run_with_loop(SimNode, args, join_timeout=2.0)


if __name__ == '__main__':
    sys.exit(main())
