#!/usr/bin/env python3
"""A quadruped trotting through the stream, over DDS, on a MuJoCo plant that is not the model:
``sim_mujoco`` (MuJoCo at 1 kHz, soft contacts, optional hidden trunk load, link errors, the
sensing of a legged robot, a push, a step in the ground) + the dynamics node (``task_frames``
and ``contact_frames`` = the feet) + ``wbc_controller`` (``gait: trot``, touch-downs from the
node's ``~/contact_forces``), four processes counting this script's listener, which plays the
velocity commands on ``cmd_vel`` and records the node's contact estimate.

    python scripts/closed_loop_trot.py --robot solo12                       # the command plan
    python scripts/closed_loop_trot.py --robot solo12 --sensing noisy --hidden-load 1 --real-time
    python scripts/closed_loop_trot.py --robot quadruped --plan forward --step-rise 0.02

Plans (each command held until the next; the figures are means over its last 2 s):
``commands``: trot in place, forward 0.3 m/s, sideways 0.2 m/s, turning 0.6 rad/s, stop (in
place), 4 s each (in place 3 s); ``forward``: in place 2 s, then forward 0.3 m/s for 5 s (over
a step in the ground ``--step-rise`` m high, negative: down, at ``--step-edge`` m, if given).

``--real-time``: the simulator runs at the wall clock's pace and never waits for a command
(``max_delay`` 0, no least delay): a command acts when it arrives, however late, as on a robot;
otherwise it does not step while the newest command answers a state more than ``--max-delay``
s old (the project's closed loops on a loaded machine).  ``--real-time-factor`` (with
``--real-time``): simulated seconds per wall second, e.g. 0.5 to give every process twice the
CPU per simulated second (what the stack needs, where the machine cannot give it in real time).

Every figure is MuJoCo's truth (its base pose and twist, its contacts, its feet): falls, the
base's mean velocity in its heading frame and yaw rate against each command, the node's contact
state against MuJoCo's; the controller's periods answered and staleness from its log.  Writes
``--out`` (plot) and its .json; the last line of the output is the summary.
"""
import argparse
import json
import os
import re
import struct
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for p in (ROOT, HERE, os.path.join(ROOT, 'benchmarks')):
    if p not in sys.path:
        sys.path.insert(0, p)

from closed_loop_mujoco import SENSING, robot_mass  # noqa: E402
from closed_loop_stack import controller_statistics, run_stack  # noqa: E402
from demo import _setup_environment, _write_params, stamp_key  # noqa: E402
from ros_dynamics.ros.launch_logic import TROT_NODE, trot_rates  # noqa: E402

#: (start [s from the controller's first answer], (vx, vy, wz)) ..., and the duration
PLANS = {
    'commands': (((0.0, (0.0, 0.0, 0.0)), (3.0, (0.3, 0.0, 0.0)), (7.0, (0.0, 0.2, 0.0)),
                  (11.0, (0.0, 0.0, 0.6)), (15.0, (0.0, 0.0, 0.0))), 18.0),
    'forward': (((0.0, (0.0, 0.0, 0.0)), (2.0, (0.3, 0.0, 0.0))), 7.0),
}


def _parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--robot', default='solo12', choices=('solo12', 'quadruped'))
    ap.add_argument('--plan', default='commands', choices=tuple(PLANS))
    ap.add_argument('--hidden-load', type=float, default=0.0,
                    help='kg on the trunk that the URDF does not know')
    ap.add_argument('--load-offset', type=float, nargs=3, default=(0.0, 0.0, 0.0),
                    help='where on the trunk (its frame) [m]')
    ap.add_argument('--link-error', type=float, default=0.0,
                    help='every link\'s mass, inertia and CoM off by 1 +- e [0.8, 1.2]')
    ap.add_argument('--sensing', default='clean', choices=tuple(SENSING),
                    help='noisy: odometry 200 Hz, 10 ms late, 0.03 m/s noise; joint noise')
    ap.add_argument('--touchdown', default='estimate', choices=('estimate', 'schedule'),
                    help='estimate: the controller takes touch-downs from the node\'s '
                    'in_contact (contact_forces_topic); schedule: from its gait alone')
    ap.add_argument('--push', type=float, default=0.0,
                    help='lateral push [share of the weight] (0: none), --push-time')
    ap.add_argument('--push-time', type=float, default=5.0, help='push start [s]')
    ap.add_argument('--push-duration', type=float, default=0.1, help='push length [s]')
    ap.add_argument('--step-rise', type=float, default=0.0,
                    help='a step in the ground [m] (0: none; negative: down)')
    ap.add_argument('--step-edge', type=float, default=0.45, help='the step\'s x [m]')
    ap.add_argument('--real-time', action='store_true',
                    help='the simulator at the wall clock\'s pace, never waiting for a command')
    ap.add_argument('--real-time-factor', type=float, default=1.0,
                    help='with --real-time: simulated seconds per wall second')
    ap.add_argument('--max-delay', type=float, default=0.005,
                    help='without --real-time: the plant waits while the newest command '
                    'answers a state older than this [s]')
    ap.add_argument('--control-rate', type=float, default=500.0, help='the controller\'s [Hz]')
    ap.add_argument('--seed', type=int, default=0, help='sensing noise and link errors')
    ap.add_argument('--out', default=None, help='plot (default out/closed_loop_trot_<robot>'
                    '_<plan>.png); its .json next to it')
    ap.add_argument('--json', default=None, help='also write the result here')
    ap.add_argument('--timeout', type=float, default=600.0, help='wall-clock limit [s]')
    a = ap.parse_args(argv)
    a.out = a.out or os.path.join(ROOT, 'out', f'closed_loop_trot_{a.robot}_{a.plan}.png')
    return a


def _files(args, xml, robot, tmp, weight, truth_path):
    """The three nodes' parameter files."""
    commands, duration = PLANS[args.plan]
    files = {n: os.path.join(tmp, f'{n}.yaml') for n in ('sim', 'dyn', 'ctl')}
    push = [args.push_time, args.push_duration, 0.0, args.push * weight, 0.0]
    _write_params(files['sim'], 'sim', dict(
        robot_description=xml, feet=robot['feet'], foot_radius=robot['foot_radius'],
        pose=[f'{j}={a}' for j, a in robot['pose'].items()], duration=duration + 0.5,
        real_time_factor=args.real_time_factor if args.real_time else 1.0,
        command_delay=0.0 if args.real_time else 0.002,
        max_delay=0.0 if args.real_time else args.max_delay, hidden_load=args.hidden_load,
        load_offset=list(args.load_offset), link_error=args.link_error, base_push=push,
        step_rise=args.step_rise, step_edge=args.step_edge, wait_for_subscribers=1,
        wait_timeout=120.0, truth_record=truth_path, seed=args.seed,
        # real time, the plant as trot.launch.py runs it: the robot's actuators saturate
        effort_limit=robot.get('actuator_torque', 0.0) if args.real_time else 0.0,
        **SENSING[args.sensing]))
    # real time: the node as trot.launch.py runs it (TROT_NODE, its streams at the controller's
    # rate); lock-step (the simulator waits for the controller): every joint state answered in
    # turn, fresh when behind off (with it on, seed 1 trotted 0.011-0.012 m/s off the command
    # against 0.001 m/s without: two runs against one, test_e2e_trot's case)
    node_rate, ctl_rate = trot_rates(args.control_rate)
    _write_params(files['dyn'], 'dynamics', dict(
        robot_description=xml, floating_base=True, task_frames=robot['feet'],
        contact_frames=list(robot['feet']), contact_force_threshold=0.1 * weight,
        **(dict(TROT_NODE, qos_depth=10, **node_rate) if args.real_time else
           dict(TROT_NODE, input_qos_depth=2000, qos_depth=2000, catch_up=False))))
    _write_params(files['ctl'], 'wbc_controller', dict(
        robot_description=xml, gait='trot', feet=robot['feet'], report_period=5.0, **ctl_rate,
        **(dict(contact_forces_topic='dynamics/contact_forces')
           if args.touchdown == 'estimate' else {})))
    return files


class Listener:
    """This script's node: plays the plan on cmd_vel (20 Hz, by the stamps of the controller's
    answers: its clock) and keeps the node's contact states.  It shares the cores with the
    loop, so it costs little: both subscriptions belong to a second node that is never spun
    (no callback per message, 1.5 kHz of them) and are drained 20 times a second by the timer
    that plays the plan, as serialized messages (the dynamics node's ``Inbox``); the contact
    states are read after the run (:meth:`contact_states`)."""

    def __init__(self, commands, feet):
        import rclpy
        from geometry_msgs.msg import PointStamped, Twist
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from ros_dynamics_msgs.msg import ContactForces
        rclpy.init(args=[])
        self.node = rclpy.create_node('closed_loop_trot')
        self.recorder = rclpy.create_node('closed_loop_trot_recorder')      # (never spun)
        self.commands, self.feet, self.Twist = commands, feet, Twist
        self.t0 = self.newest = None
        self.raw_contacts = []
        qos = QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE)
        self.subs = (self.recorder.create_subscription(
            PointStamped, '/wbc_controller/com_reference', self._on_ref, qos, raw=True),
                     self.recorder.create_subscription(
            ContactForces, '/dynamics/contact_forces', self.raw_contacts.append, qos,
            raw=True))
        from ros_dynamics.ros.dynamics_node.inbox import Inbox
        self.inboxes = [Inbox(sub) for sub in self.subs]
        self.pub = self.node.create_publisher(Twist, '/cmd_vel', 10)
        self.node.create_timer(0.05, self._play)

    def _drain(self):
        """Take what waits in the recorder's subscriptions (to their callbacks; at most their
        history depth each, all of it at 20 Hz)."""
        for inbox in self.inboxes:
            for raw in inbox.newer()[0]:
                inbox.subscription.callback(raw)

    def _on_ref(self, data):
        sec, nanosec = struct.unpack_from('<iI', data, 4)     # CDR: header.stamp first
        k = sec * 1_000_000_000 + nanosec
        self.t0 = k if self.t0 is None else self.t0
        self.newest = k

    def contact_states(self):
        """{stamp ns: in_contact per foot} of the node's contact estimates received."""
        from rclpy.serialization import deserialize_message
        from ros_dynamics_msgs.msg import ContactForces
        out = {}
        for data in self.raw_contacts:
            m = deserialize_message(data, ContactForces)
            idx = [list(m.frames).index(f) for f in self.feet]
            out[stamp_key(m)] = [bool(m.in_contact[i]) for i in idx]
        return out

    def command(self):
        """The plan's command now (the controller's time)."""
        t = 0.0 if self.t0 is None else (self.newest - self.t0) * 1e-9
        cmd = self.commands[0][1]
        for start, c in self.commands:
            if t >= start:
                cmd = c
        return cmd

    def _play(self):
        self._drain()
        vx, vy, wz = self.command()
        m = self.Twist()
        m.linear.x, m.linear.y, m.angular.z = float(vx), float(vy), float(wz)
        self.pub.publish(m)


def run(args, say):
    """The four processes until the simulator ends; (truth arrays, listener, logs)."""
    import numpy as np

    from ros_dynamics.simulation.legged_robots import ROBOTS, robot_urdf
    robot = ROBOTS[args.robot]
    _, xml = robot_urdf(args.robot)
    weight = 9.81 * robot_mass(xml)
    tmp = tempfile.mkdtemp(prefix='rd_trot_')
    truth_path = os.path.join(tmp, 'truth.npz')
    files = _files(args, xml, robot, tmp, weight, truth_path)
    log_dir = os.path.join(os.path.dirname(os.path.abspath(args.out)), 'closed_loop_logs')
    os.makedirs(log_dir, exist_ok=True)
    stem = os.path.splitext(os.path.basename(args.out))[0]
    logs = {n: os.path.join(log_dir, f'{stem}_{n}.log')
            for n in ('sim', 'dynamics_node', 'wbc_controller')}
    lis = Listener(PLANS[args.plan][0], robot['feet'])
    lis.cpu = {}
    t_start = run_stack(
        lis.node, lis.subs, logs, files, 'ros_dynamics.ros.simulation.mujoco_sim_node', args,
        log_dir, say, f'[trot] {args.robot} on MuJoCo: sim_mujoco + dynamics node + '
        f'wbc_controller started; {PLANS[args.plan][1]:g} s, '
        + (f'{args.real_time_factor:g} x real time, the plant never waits' if args.real_time else
           f'the plant waits beyond {args.max_delay * 1e3:g} ms'),
        lambda: say(f'[trot]   {len(lis.raw_contacts)} contact estimates so far, command '
                    f'{lis.command()}'), cpu=lis.cpu)
    text = {n: open(p).read() for n, p in logs.items()}
    if not os.path.exists(truth_path):
        raise RuntimeError(f'the simulator wrote no truth record; its log: {text["sim"][-3000:]}')
    lis.estimate = lis.contact_states()
    say(f'[trot] {len(lis.estimate)} contact estimates ({time.monotonic() - t_start:.0f} s '
        f'wall); logs in {log_dir}')
    return dict(np.load(truth_path)), lis, text, weight


def evaluate(truth, lis, text, args, weight):
    """The figures of the run (module docstring), on MuJoCo's truth from the controller's
    first answer on."""
    import numpy as np

    from ros_dynamics.simulation.legged_metrics import walk_metrics
    from ros_dynamics.simulation.legged_robots import ROBOTS
    from ros_dynamics.simulation.mujoco_legged import LeggedPlantOptions
    if lis.t0 is None:
        raise RuntimeError(f'the controller never answered; its log: '
                           f'{text["wbc_controller"][-3000:]}')
    # MuJoCo blew up (found the accelerations bad and reset its state): judged up to there,
    # a fall (what follows is no motion of the robot)
    unstable = float(truth['unstable_at']) if 'unstable_at' in truth else float('nan')
    end = truth['stamp_ns'][0] + (np.inf if np.isnan(unstable) else unstable * 1e9)
    rows = np.flatnonzero((truth['stamp_ns'] >= lis.t0) & (truth['stamp_ns'] < end))
    known = [k for k in rows if int(truth['stamp_ns'][k]) in lis.estimate]
    ground = LeggedPlantOptions(step_edge=args.step_edge, step_rise=args.step_rise).ground
    out = {k: truth[k][rows] for k in ('stamp_ns', 'base', 'twist', 'feet', 'touching')}
    out.update(ground_fn=ground, dt=1e-3)
    res = walk_metrics(out, PLANS[args.plan][0])
    res['plant_unstable_s'] = (None if np.isnan(unstable) else
                               unstable - (lis.t0 - truth['stamp_ns'][0]) * 1e-9)
    res['falls'] += res['plant_unstable_s'] is not None
    if known:
        est = {k: truth[k][known] for k in ('stamp_ns', 'base', 'twist', 'feet', 'touching')}
        est.update(estimate=np.array([lis.estimate[int(s)] for s in est['stamp_ns']]),
                   ground=ground(est['feet'][:, :, 0]), dt=1e-3, ground_fn=ground,
                   foot_radius=ROBOTS[args.robot]['foot_radius'])
        contact = walk_metrics(est, PLANS[args.plan][0])
        res.update({k: v for k, v in contact.items() if k not in ('falls', 'max_tilt_deg',
                                                                  'segments')},
                   estimate_samples=len(known))
    pace = re.findall(r'([\d.]+) simulated s in ([\d.]+) wall s', text['sim'])
    res.update(controller=controller_statistics(text['wbc_controller']),
               sim_pace=[float(x) for x in pace[-1]] if pace else None,
               plant_mass_kg=float(truth['mass']), weight_N=weight,
               cpu_s=lis.cpu,
               simulated_s=float(truth['stamp_ns'][-1] - truth['stamp_ns'][0]) * 1e-9,
               transport_delay_ms=_delays(truth), _t=(out['stamp_ns'] - lis.t0) * 1e-9,
               _out=out)
    return res


def _delays(truth):
    """The simulator's transport delays [ms] (p50, p99, max): a state's stamp to the step its
    command acts on."""
    import numpy as np
    d = np.asarray(truth.get('delays', []), dtype=float) * 1e3
    return [float(np.percentile(d, 50)), float(np.percentile(d, 99)), float(d.max())] \
        if d.size else None


def summary_line(r, args):
    worst_v = max(max(abs(s['error'][0]), abs(s['error'][1])) for s in r['segments'])
    worst_w = max(abs(s['error'][2]) for s in r['segments'])
    c = r['controller'] or {}
    return (f'{args.robot} trot on MuJoCo ({args.plan}'
            + (f', a {100 * args.step_rise:g} cm step' if args.step_rise else '')
            + f', hidden load {args.hidden_load:g} kg, '
            f'{args.sensing} sensing, touch-down from the {args.touchdown}'
            + ((', real time' if args.real_time_factor == 1 else
                f', {args.real_time_factor:g} x real time') if args.real_time else '')
            + f'): falls {r["falls"]}, velocity '
            f'error max {worst_v:.3f} m/s, yaw rate error max {worst_w:.3f} rad/s, periods '
            f'answered {100 * c.get("answered_fraction", 0.0):.2f} %, contact agreement '
            f'{100 * r.get("contact_agreement", float("nan")):.1f} %'
            + (f'; MuJoCo blew up {r["plant_unstable_s"]:.2f} s after the first answer (judged '
               'up to there, one fall)' if r.get('plant_unstable_s') is not None else ''))


def plot(r, args):
    import matplotlib
    import numpy as np
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    from ros_dynamics.simulation.legged_metrics import heading_velocity
    t, out = r['_t'], r['_out']
    vel = heading_velocity(out['base'], out['twist'])
    fig, axs = plt.subplots(3, 1, figsize=(11, 9), sharex=True)
    win = np.ones(100) / 100.0
    for j, (lab, col) in enumerate(zip(('v_x [m/s]', 'v_y [m/s]', 'yaw rate [rad/s]'),
                                       ('C0', 'C2', 'C3'))):
        axs[0].plot(t, np.convolve(vel[:, j], win, mode='same'), color=col, lw=0.9,
                    label=f'{lab}, MuJoCo (0.1 s mean)')
        for s in r['segments']:
            axs[0].hlines(s['command'][j], s['from_s'], s['to_s'], colors=col, linestyles='--')
    axs[0].set_ylabel('heading frame')
    axs[0].legend(fontsize=8, ncol=3)
    axs[0].set_title('MuJoCo\'s base velocity against the commands (dashed: the windows '
                     'judged)')
    axs[1].plot(t, out['base'][:, 2] - r['_out']['ground_fn'](out['base'][:, 0]), 'k', lw=0.8)
    axs[1].set_ylabel('trunk above the ground [m]')
    for f in range(out['touching'].shape[1]):
        axs[2].plot(t, out['touching'][:, f] * 0.8 + 1.2 * f, lw=0.6)
    axs[2].set_yticks([])
    axs[2].set_ylabel('MuJoCo contacts per foot')
    axs[2].set_xlabel('time since the controller\'s first answer [s]')
    for ax in axs:
        ax.grid(alpha=0.3)
        if args.push:
            ax.axvspan(args.push_time, args.push_time + args.push_duration, color='C3',
                       alpha=0.3)
    fig.suptitle(summary_line(r, args), fontsize=9)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    fig.savefig(args.out, dpi=90)
    plt.close(fig)


def main(argv=None):
    args = _parse(argv)
    say = lambda *a: print(*a, flush=True)  # noqa: E731
    say(f'[trot] ROS_DOMAIN_ID={os.environ.get("ROS_DOMAIN_ID")} (LOCALHOST); {args.robot}, '
        f'plan {args.plan}, hidden load {args.hidden_load:g} kg, {args.sensing} sensing, '
        f'touch-down from the {args.touchdown}')
    truth, lis, text, weight = run(args, say)
    r = evaluate(truth, lis, text, args, weight)
    plot(r, args)
    res = {k: v for k, v in r.items() if not k.startswith('_')}
    res.update(summary=summary_line(r, args), load_average_1min=os.getloadavg()[0],
               args=dict(vars(args), out=os.path.relpath(args.out, ROOT)))
    for path in filter(None, (os.path.splitext(args.out)[0] + '.json', args.json)):
        with open(path, 'w') as f:
            json.dump(res, f, indent=1, default=float)
    say(f'[trot] plot saved to {args.out}')
    say(res['summary'])
    return 0


if __name__ == '__main__':
    _setup_environment()
    sys.exit(main())
