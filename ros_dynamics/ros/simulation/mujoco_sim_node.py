"""``sim_mujoco`` executable (node name ``sim``): a legged robot that MuJoCo plays, a plant that is
not the controller's model (:mod:`ros_dynamics.simulation.mujoco_legged`: soft contacts, an
optional hidden load, link errors, rotor inertia, joint friction: PlantOptions' names), driven
over DDS.

* steps the physics every ``1/rate`` simulated seconds (1 kHz), paced at ``real_time_factor``
  against the wall clock; stamps are simulated time;
* publishes ``joint_states`` every step (effort = the torque applied over the period ending at
  the stamp; white noise ``noise_position``, ``noise_velocity``, ``noise_effort``) and ``odom``
  (nav_msgs/Odometry, pose world, twist base frame) from :class:`~ros_dynamics.simulation.
  mujoco_legged.Odometry`: ``odom_delay`` s late, at ``odom_rate`` Hz, noisy, biased, stamped
  with the time it describes;
* applies the latest ``~/effort_command`` (sensor_msgs/JointState, efforts by name) as it
  arrives: no lock-step; a command is not applied before ``command_delay`` simulated s after
  the stamp it answers (a floor on the transport delay, whatever the machine's speed); with
  ``max_delay`` > 0 it does not step while the newest command received answers a state more than
  ``max_delay`` s old (waiting at most ``command_wait`` wall s; the first state is re-published
  every second until a command answers it): the delay stays within [command_delay, max_delay]
  on a loaded machine, with several states in flight (not lock-step). Before
  the first command and when none has come for ``command_timeout`` s the joints are held by PD
  towards the standing pose, gains ``hold_gains`` per kg of the robot;
* pushes the root with ``base_push`` = [t_start, duration, fx, fy, fz] (simulated s, world N);
* at exit logs the transport delay (simulated time from a state's stamp to the step its command
  acts on) and writes the plant's truth (:class:`~ros_dynamics.simulation.mujoco_legged.
  TruthRecord`: CoM, base pose, feet, contact forces per step) to ``truth_record`` (.npz).
"""

import os
import sys
import threading
import time
from collections import deque

from ros_dynamics.ros import compat as ros_compat

if __name__ == '__main__' or os.path.basename(sys.argv[0] if sys.argv else '') == 'sim_mujoco':
    ros_compat.start_entry_point()   # pip ROS wheels: re-execute once with LD_LIBRARY_PATH set

import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from builtin_interfaces.msg import Time  # noqa: E402
from nav_msgs.msg import Odometry as OdometryMsg  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from rclpy.serialization import serialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from ros_dynamics.estimation.joint_input import NameMaps  # noqa: E402
from ros_dynamics.ros import process  # noqa: E402
from ros_dynamics.ros.dynamics_node.wire import Template  # noqa: E402
from ros_dynamics.ros.parameter_table import Param, ParameterTable  # noqa: E402
from ros_dynamics.simulation.mujoco_legged import (LeggedPlantOptions,  # noqa: E402
                                                   MujocoLegged, Odometry, TruthRecord)

_QUADRUPED_POSE = [f'{leg}_{j}={a}' for leg in ('LF', 'RF', 'LH', 'RH')
                   for j, a in (('HAA', 0.0), ('HFE', 0.7), ('KFE', -1.4))]

def _needs_description(checked):
    if not checked['robot_description']:
        raise ValueError('robot_description (URDF) is needed')


P = Param
#: the simulator's parameters (all read-only; docs/parameters.md); a plain (name, default,
#: description) entry is a parameter with no rule but its type
PARAMETERS = ParameterTable('sim_mujoco', (
    ('robot_description', '', 'URDF (XML) of the robot MuJoCo plays.'),
    P('feet', ['LF_foot', 'RF_foot', 'LH_foot', 'RH_foot'], 'Foot links (a sphere each).',
      'start-up', item='string'),
    P('foot_radius', 0.02, 'Radius of the foot spheres [m], centred on the foot frames.',
      'start-up', 0.0, 1.0, True),
    P('pose', _QUADRUPED_POSE, 'Standing pose, "joint=angle" [rad] (others 0).', 'start-up',
      item='string'),
    P('rate', 1000.0, 'Physics and joint_states rate [Hz].', 'start-up', 0.0, 1e5, True),
    P('real_time_factor', 1.0, 'Simulated seconds per wall second.', 'start-up', 0.0, 1e3,
      True),
    P('duration', 0.0, 'Simulated seconds to run (0: until stopped).', 'start-up', 0.0, 1e9),
    ('settle', 0.5, 'Simulated seconds held by PD before the first state is published.'),
    P('hold_gains', [10.0, 0.2], 'Joint PD (kp, kd) of the hold, per kg of robot mass.',
      'start-up', 0.0, 1e6, lengths=(2,)),
    ('command_timeout', 0.1, 'Simulated seconds without a command before the hold.'),
    ('command_delay', 0.0, 'Least simulated delay from a state to its command acting [s].'),
    ('max_delay', 0.0, 'With commands flowing, the plant does not step while the newest '
     'command answers a state older than this [simulated s] (0: never waits).'),
    ('command_wait', 1.0, 'Wall seconds the plant waits for such a command, at most.'),
    P('noise_position', 0.0, 'Joint position noise (std) [rad].', 'start-up', 0.0, 10.0),
    P('noise_velocity', 0.0, 'Joint velocity noise (std) [rad/s].', 'start-up', 0.0, 100.0),
    P('noise_effort', 0.0, 'Joint effort noise (std) [N m].', 'start-up', 0.0, 1e4),
    P('odom_rate', 1000.0, 'Odometry rate [Hz].', 'start-up', 0.0, 1e5, True),
    P('odom_delay', 0.0, 'Odometry delay [s] (stamped with the time it describes).',
      'start-up', 0.0, 10.0),
    ('odom_noise_linear', 0.0, 'Base linear twist noise (std) [m/s].'),
    ('odom_noise_angular', 0.0, 'Base angular twist noise (std) [rad/s].'),
    ('odom_bias_linear', [0.0, 0.0, 0.0], 'Base linear twist bias (base frame) [m/s].'),
    ('odom_noise_position', 0.0, 'Base position noise (std) [m].'),
    ('seed', 0, 'Seed of the noise and of link_error.'),
    P('hidden_load', 0.0, 'Mass on the root link the URDF does not know [kg].', 'start-up',
      0.0, 1e4),
    P('effort_limit', 0.0, 'The actuators\' torque [N m]: each joint\'s torque is clipped to '
      'it (0: none).', 'start-up', 0.0, 1e6),
    P('load_offset', [0.0, 0.0, 0.0], 'Where on the root link (its frame) [m].', 'start-up',
      -10.0, 10.0, lengths=(3,)),
    P('link_error', 0.0, 'Every link\'s mass and principal inertias x (1 +- e [0.8, 1.2]), its '
      'CoM moved by that share of max(|CoM offset|, 2 cm) (PlantOptions).', 'start-up', 0.0,
      0.8),
    P('rotor_inertia', 0.0, 'Rotor inertia on every joint [kg m^2].', 'start-up', 0.0, 100.0),
    P('joint_viscous', 0.0, 'Viscous friction on every joint [N m s/rad].', 'start-up', 0.0,
      1e4),
    P('joint_coulomb', 0.0, 'Dry (Coulomb) friction on every joint [N m].', 'start-up', 0.0,
      1e4),
    P('friction', 0.8, 'Foot-floor friction coefficient.', 'start-up', 0.0, 100.0, True),
    P('step_rise', 0.0, 'A step in the ground the controller is not told of [m] (0: flat; '
      '> 0: higher for x >= step_edge; < 0: the robot starts on the higher ground).',
      'start-up', -1.0, 1.0),
    P('step_edge', 0.3, 'Where the step is: world x [m].', 'start-up', -100.0, 100.0),
    P('base_push', [0.0, 0.0, 0.0, 0.0, 0.0], '[t_start, duration, fx, fy, fz] on the root.',
      'start-up', lengths=(5,)),
    ('wait_for_subscribers', 0, 'joint_states subscribers to wait for before starting.'),
    ('wait_timeout', 30.0, 'Wall seconds to wait for them, at most.'),
    ('truth_record', '', 'Path of the .npz the plant\'s truth is written to at exit.'),
), rules=(_needs_description,), about='The MuJoCo simulator of a legged robot '
    '(docs/ros_interface.md, "MuJoCo simulator `sim_mujoco`"; node name `sim`). Every '
    'parameter is read at start-up (read-only).')


class MujocoSim(Node):
    """The node of the module docstring; :meth:`loop` runs in its own thread."""

    def __init__(self):
        super().__init__('sim')
        cfg = PARAMETERS.declare(self)
        p = self.p = lambda n: getattr(cfg, n)  # noqa: E731
        pose = {}
        for item in p('pose'):
            joint, _, angle = item.partition('=')
            try:
                pose[joint.strip()] = float(angle)
            except ValueError:
                raise ValueError(f'pose entry {item!r} is not "joint=angle"') from None
        opts = LeggedPlantOptions(
            hidden_load=p('hidden_load'), load_offset=tuple(p('load_offset')),
            link_error=p('link_error'), rotor_inertia=p('rotor_inertia'),
            joint_viscous=p('joint_viscous'), joint_coulomb=p('joint_coulomb'), mu=p('friction'),
            foot_radius=p('foot_radius'), seed=p('seed'), step_rise=p('step_rise'),
            step_edge=p('step_edge'), effort_limit=p('effort_limit'))
        rate = float(p('rate'))
        push = list(p('base_push'))
        if len(push) != 5:
            raise ValueError('base_push must be [t_start, duration, fx, fy, fz]')
        self.push = push
        self.plant = MujocoLegged(p('robot_description'), list(p('feet')), pose=pose,
                                  dt=1.0 / rate, options=opts)
        self.odometry = Odometry(p('odom_rate'), p('odom_delay'), p('odom_noise_linear'),
                                 p('odom_noise_angular'), p('odom_bias_linear'),
                                 p('odom_noise_position'), seed=p('seed') + 1)
        self.rng = np.random.default_rng(p('seed'))
        self.names = self.plant.joints
        self._maps = NameMaps(self.names)
        self._lock = threading.Lock()
        self._commands = deque(maxlen=1000)     # (stamp ns, tau) as received
        self._newest = threading.Condition(self._lock)
        self._newest_stamp = -1                 # the newest stamp a command answered
        self.delays, self.hold_steps, self.rejected = [], 0, 0
        self.truth = TruthRecord()
        self._wall = [None, None]               # wall clock at the first and the last step
        self._odo = None
        self._t0_ns = 0
        self.done = threading.Event()
        qos = QoSProfile(depth=max(200, int(2.0 * rate)), reliability=ReliabilityPolicy.RELIABLE)
        self.pub_js = self.create_publisher(JointState, 'joint_states', qos)
        # joint_states written in place and published as bytes (1 kHz: rclpy's message
        # objects cost more than the step); a middleware without plain CDR gets the objects
        n = len(self.names)
        self._js = JointState(name=self.names, position=[0.0] * n, velocity=[0.0] * n,
                              effort=[0.0] * n)
        try:
            self._js_bytes = Template(self._js, serialize_message)
            self._js_arrays = self._js_bytes.arrays
        except ValueError:
            self._js_bytes = None
            self._js_arrays = {k: np.zeros(n) for k in ('position', 'velocity', 'effort')}
        self.pub_odom = self.create_publisher(OdometryMsg, 'odom', qos)
        self.create_subscription(JointState, '~/effort_command', self._on_command,
                                 QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
        self.get_logger().info(
            f'sim (MuJoCo): {len(self.names)} joints, feet {self.plant.feet}, mass '
            f'{self.plant.mass:.3f} kg (hidden load {opts.hidden_load:g} kg), {rate:g} Hz, '
            f'real-time factor {p("real_time_factor"):g}; odom {p("odom_rate"):g} Hz, '
            f'{1e3 * p("odom_delay"):g} ms late')

    def _on_command(self, msg):
        try:
            tau = self._maps.efforts(msg.name, msg.effort)
            if not np.all(np.isfinite(tau)):
                raise ValueError('non-finite effort')
        except ValueError as exc:
            self.rejected += 1
            self.get_logger().warning(f'effort command rejected: {exc}', throttle_duration_sec=1.0)
            return
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        with self._lock:
            self._commands.append((stamp, tau))
            self._newest_stamp = max(self._newest_stamp, stamp)
            self._newest.notify_all()

    def _await(self, stamp_ns, timeout):
        """Wait (wall, at most ``timeout`` s) for a command answering ``stamp_ns`` or later."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._newest_stamp < stamp_ns and not self.done.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._newest.wait(left)
        return True

    def _command(self, now_ns, state):
        """The torque of this step: the newest command that may act by now, else the hold."""
        floor = now_ns - int(round(self.p('command_delay') * 1e9))
        with self._lock:
            ready = [c for c in self._commands if c[0] <= floor]
            for c in ready:
                self._commands.remove(c)
        if ready:
            stamp, tau = max(ready, key=lambda c: c[0])
            if state['stamp'] is None or stamp > state['stamp']:
                state['stamp'], state['tau'] = stamp, tau
                self.delays.append((now_ns - stamp) * 1e-9)
        timeout = int(round(self.p('command_timeout') * 1e9))
        if state['stamp'] is not None and now_ns - state['stamp'] <= timeout:
            return state['tau']
        self.hold_steps += 1
        kp, kd = self.p('hold_gains')
        return self.plant.hold(kp * self.plant.mass, kd * self.plant.mass)

    def _publish(self, stamp_ns, q, v, tau, again=False):
        def stamp(ns):
            return Time(sec=int(ns // 1_000_000_000), nanosec=int(ns % 1_000_000_000))
        # the odometry's clock: simulated seconds since the first state (float seconds of the
        # epoch would lose the nanoseconds)
        odo = self._odo if again else self.odometry.sample((stamp_ns - self._t0_ns) * 1e-9, q, v)
        self._odo = odo
        if odo is not None:                   # first: the dynamics node pairs the latest odom
            t_odo, q7, v6 = odo
            m = OdometryMsg()
            m.header.stamp = stamp(self._t0_ns + int(round(t_odo * 1e9)))
            m.header.frame_id, m.child_frame_id = 'world', self.plant.root_name
            pos, ori = m.pose.pose.position, m.pose.pose.orientation
            pos.x, pos.y, pos.z, ori.x, ori.y, ori.z, ori.w = (float(x) for x in q7)
            lin, ang = m.twist.twist.linear, m.twist.twist.angular
            lin.x, lin.y, lin.z, ang.x, ang.y, ang.z = (float(x) for x in v6)
            self.pub_odom.publish(m)
        n, r, t, arrays = len(self.names), self.rng, self._js_bytes, self._js_arrays
        for field, x, noise in (('position', q[7:], 'noise_position'),
                                ('velocity', v[6:], 'noise_velocity'),
                                ('effort', tau, 'noise_effort')):
            np.add(x, self.p(noise) * r.standard_normal(n), out=arrays[field])
        if t is not None:
            t.set_stamp(int(stamp_ns // 1_000_000_000), int(stamp_ns % 1_000_000_000))
            return self.pub_js.publish(t.bytes())
        js = self._js
        js.header.stamp = stamp(stamp_ns)
        js.position, js.velocity, js.effort = (arrays[k].tolist() for k in
                                               ('position', 'velocity', 'effort'))
        self.pub_js.publish(js)

    def loop(self):
        p, plant = self.p, self.plant
        try:
            t_wait = time.monotonic()
            while (p('wait_for_subscribers') > 0 and rclpy.ok() and not self.done.is_set()
                   and self.pub_js.get_subscription_count() < p('wait_for_subscribers')
                   and time.monotonic() - t_wait < p('wait_timeout')):
                time.sleep(0.01)
            kp, kd = p('hold_gains')
            for _ in range(int(round(p('settle') / plant.dt))):
                plant.step(plant.hold(kp * plant.mass, kd * plant.mass))
            plant.t = 0.0
            t0_ns = self._t0_ns = self.get_clock().now().nanoseconds
            dt_ns, rtf = int(round(plant.dt * 1e9)), float(p('real_time_factor'))
            t0, k, state = time.monotonic(), 0, dict(stamp=None, tau=None)
            self._wall = [time.monotonic(), None]
            t_push, d_push = p('base_push')[:2]
            max_delay = int(round(p('max_delay') * 1e9))
            while rclpy.ok() and not self.done.is_set():
                now = t0_ns + k * dt_ns
                q, v = plant.state()
                self._publish(now, q, v, plant.tau)
                if max_delay > 0 and k == 0:     # the clock starts once a command answers
                    t_first = time.monotonic()
                    while (not self._await(now, 1.0) and not self.done.is_set()
                           and time.monotonic() - t_first < p('wait_timeout')):
                        self._publish(now, q, v, plant.tau, again=True)
                    t0 = time.monotonic()
                elif max_delay > 0:
                    self._await(now - max_delay, p('command_wait'))
                tau = self._command(now, state)
                push = self.push[2:] if t_push <= plant.t < t_push + d_push else (0.0, 0.0, 0.0)
                self.truth.add(now, plant, push, (q, v))
                plant.step(tau, push)
                k += 1
                self._wall[1] = time.monotonic()
                if p('duration') > 0 and plant.t >= p('duration') - 1e-12:
                    break
                lag = time.monotonic() - t0 - k * plant.dt / rtf
                if lag < 0:
                    time.sleep(-lag)
                elif lag > 0.25:
                    t0 += lag            # slower than the real-time factor: do not catch up
        except Exception as exc:  # noqa: BLE001
            if rclpy.ok() and not self.done.is_set():
                self.get_logger().error(f'simulation stopped: {exc!r}')
        finally:
            self.done.set()

    def summary(self):
        d = np.asarray(self.delays) * 1e3
        steps = len(self.truth.rows['stamp_ns'])
        start, end = self._wall
        pace = (f'; {steps * self.plant.dt:.2f} simulated s in {end - start:.2f} wall s'
                if start is not None and end is not None and end > start else '')
        self.get_logger().info(
            f'joint states published: {steps}; commands applied {d.size}, hold steps '
            f'{self.hold_steps}, rejected {self.rejected}'
            + (f'; transport delay p50 {np.percentile(d, 50):.2f} ms, p99 '
               f'{np.percentile(d, 99):.2f} ms (simulated)' if d.size else '') + pace
            + (f'; MuJoCo found the accelerations bad (the simulation unstable) at '
               f'{self.plant.unstable_at:.3f} s and reset its state: no motion after it'
               if self.plant.unstable_at is not None else ''))
        path = self.p('truth_record')
        if path:
            self.truth.save(path, foot_names=np.array(self.plant.feet), mass=self.plant.mass,
                            delays=np.asarray(self.delays), hold_steps=self.hold_steps,
                            unstable_at=np.nan if self.plant.unstable_at is None
                            else self.plant.unstable_at)
            self.get_logger().info(f'truth written to {path}')


def main(args=None):
    """Entry point of ``sim_mujoco``: spins until SIGINT/SIGTERM or the end of ``duration``."""
    return process.run_with_loop(MujocoSim, args, join_timeout=5.0)


if __name__ == '__main__':
    sys.exit(main())
