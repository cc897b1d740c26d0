#!/usr/bin/env python3
"""The quadruped's closed loop through ROS: simulator (floating base, rigid feet, external
efforts, a push) + dynamics node (``task_frames`` = the four feet) + ``wbc_controller``;
``scripts/closed_loop.sh --robot quadruped [options]`` runs it.

Three real ROS 2 processes over loopback DDS (LOCALHOST discovery, a random ROS_DOMAIN_ID, as
the arm's closed loop), 1 kHz, the simulator in lock-step by default (it waits, up to
``--lockstep`` wall seconds, for the command answering each joint state):

* ``sim`` (``floating_base: true``, ``control: external``) publishes ``odom`` and
  ``joint_states`` in simulated time, applies ``/sim/effort_command`` and pushes the trunk
  with ``--push`` N (lateral, world y) for ``--push-duration`` s at ``--push-time`` s;
* ``dynamics`` publishes ``/dynamics/dynamics`` and ``/dynamics/task_space``;
* ``wbc_controller`` runs the built-in schedule (stand, CoM trajectory, weight shift, lift and
  put down LF_foot, shift back, stand) from those two topics only.

Measured (a listener records ``/dynamics/task_space``, ``odom`` and the simulator's true
external joint torque): CoM rms = RMS over the run of |c − c_ref| (c from the stream, c_ref
rebuilt from the first task-space message as the controller builds it); max tilt = largest
angle between the trunk's z axis and the vertical; falls = episodes with the trunk below half
its start height or tilted more than 45 deg; QP solved = the controller's solved QPs / served
cycles; joint states answered = commands the simulator received answering the latest joint
state / joint states it published.  Foot forces in the plot: the ground reactions from the
simulator's true external joint torque, f = J_leg^-T tau_ext,leg per leg (J from the stream).
Writes out/closed_loop_quadruped.{png,json,md}; the last line of the output is the summary.

``--plant mujoco`` runs the loop on a MuJoCo plant that is not the model instead (``--robot
quadruped|solo12``, ``--hidden-load``, ``--link-error``, ``--sensing noisy``, ``--push``,
``--variants``; scripts/closed_loop_mujoco.py), every figure from MuJoCo's truth; it writes
out/closed_loop_quadruped_mujoco_<robot>*.{png,json,md} (and ``--result``).
"""

MEASURES = ('ros_dynamics/core', 'ros_dynamics/estimation', 'ros_dynamics/control',
            'ros_dynamics/ros/control', 'ros_dynamics/ros/dynamics_node',
            'ros_dynamics/ros/simulation', 'ros_dynamics/simulation', 'urdf/quadruped.urdf')

import argparse
import json
import os
import re
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for p in (ROOT, HERE, os.path.join(ROOT, 'benchmarks')):
    if p not in sys.path:
        sys.path.insert(0, p)

from closed_loop_stack import controller_statistics, run_stack  # noqa: E402
from demo import _setup_environment, _write_params, stamp_key  # noqa: E402

FEET = ['LF_foot', 'RF_foot', 'LH_foot', 'RH_foot']


def _parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--plant', default='rigid', choices=('rigid', 'mujoco'),
                    help='rigid: the project\'s simulator on the model, lock-step; mujoco: '
                    'MuJoCo (soft contacts), not the model, no lock-step')
    ap.add_argument('--robot', default='quadruped', choices=('quadruped', 'solo12'),
                    help='solo12 (example-robot-data): --plant mujoco only')
    ap.add_argument('--duration', type=float, default=None,
                    help='simulated seconds (default: the whole schedule, 6.8 s)')
    ap.add_argument('--push', type=float, default=None,
                    help='lateral push force [N] (0: none; default 30 N on the rigid plant, '
                    '20 %% of the weight on MuJoCo)')
    ap.add_argument('--hidden-load', type=float, default=0.0,
                    help='mujoco: kg on the trunk that the URDF does not know')
    ap.add_argument('--load-offset', type=float, nargs=3, default=(0.0, 0.0, 0.0),
                    help='mujoco: where on the trunk (its frame) [m]')
    ap.add_argument('--link-error', type=float, default=0.0,
                    help='mujoco: every link\'s mass, inertia and CoM off by 1 +- e [0.8, 1.2] '
                    '(PlantOptions.link_error)')
    ap.add_argument('--com-correction', default='off', choices=('on', 'off'),
                    help='mujoco: the controller\'s CoM offset from the feet\'s centre of '
                    'pressure (the dynamics node\'s contact_forces; control/com_offset.py)')
    ap.add_argument('--sensing', default='clean', choices=('clean', 'noisy'),
                    help='mujoco: noisy = joint velocity noise 0.05 rad/s, odometry 200 Hz, '
                    '10 ms late, 0.03 m/s noise on the linear twist')
    ap.add_argument('--real-time-factor', type=float, default=1.0,
                    help='mujoco: simulated seconds per wall second')
    ap.add_argument('--command-delay', type=float, default=0.002,
                    help='mujoco: least simulated delay from a joint state to its command '
                    'acting [s]')
    ap.add_argument('--max-delay', type=float, default=0.005,
                    help='mujoco: the plant does not step while the newest command answers a '
                    'state older than this [simulated s] (0: never waits; on a loaded machine '
                    'the delay then grows without bound)')
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--schedule', type=float, nargs=6, default=(0.5, 0.5, 0.8, 0.1, 0.5, 1.5),
                    help='mujoco: the controller\'s phase durations [s] (wbc_controller\'s '
                    'schedule parameter)')
    ap.add_argument('--push-time', type=float, default=5.8, help='push start [s]')
    ap.add_argument('--push-duration', type=float, default=0.1, help='push length [s]')
    ap.add_argument('--lockstep', type=float, default=1.0)
    ap.add_argument('--out', default=os.path.join(ROOT, 'out', 'closed_loop_quadruped.png'))
    ap.add_argument('--json', default=None, help='also write the result here')
    ap.add_argument('--result', default=None, help='also write the result file (.md) here')
    ap.add_argument('--variants', action='store_true',
                    help='mujoco: run closed_loop_mujoco.VARIANTS (nominal; hidden load and '
                    'noisy sensing; also link masses off) and write one table')
    ap.add_argument('--timeout', type=float, default=300.0, help='wall-clock limit [s]')
    return ap.parse_args(argv)


def run(args, xml, duration, tmp, log_dir, say):
    """Start the three processes, record until the simulator ends; returns the records."""
    import numpy as np
    import rclpy
    from geometry_msgs.msg import PointStamped
    from nav_msgs.msg import Odometry
    from rclpy.node import Node
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState

    from ros_dynamics.ros.control.wbc_stream import task_space_msg_type
    push = [args.push_time, args.push_duration, 0.0, args.push, 0.0] if args.push else []
    files = {n: os.path.join(tmp, f'{n}.yaml') for n in ('sim', 'dyn', 'ctl')}
    sim_params = dict(robot_description=xml, floating_base=True, control='external',
                      rate=1000.0, duration=duration, wait_for_subscribers=2,
                      wait_timeout=120.0, start_delay=0.5, command_timeout=0.1,
                      lockstep_timeout=args.lockstep, publish_robot_description=False)
    if push:
        sim_params['base_push'] = push
    _write_params(files['sim'], 'sim', sim_params)
    _write_params(files['dyn'], 'dynamics', dict(
        robot_description=xml, floating_base=True, task_frames=FEET, christoffel_stream=False,
        input_qos_depth=2000, qos_depth=2000))
    # the simulator steps in lock-step with the command answering each joint state: the
    # controller answers every one (1 kHz)
    _write_params(files['ctl'], 'wbc_controller', dict(robot_description=xml, report_period=0.0,
                                                       control_rate=1000.0))
    logs = {n: os.path.join(log_dir, f'quadruped_{n}.log')
            for n in ('sim', 'dynamics_node', 'wbc_controller')}
    rclpy.init(args=[])
    lis = Node('closed_loop_listener')
    qos = QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE)
    ts, odom, ext, ref, js = {}, {}, {}, {}, {}

    key = stamp_key

    def on_ts(m):
        n = len(m.names)
        ts[key(m)] = (np.array((m.com.x, m.com.y, m.com.z)),
                      np.asarray(m.jacobians).reshape(len(m.frames), 6, n)[:, :3, 6:].copy(),
                      list(m.frames), list(m.names[6:]),
                      np.array([(p.position.x, p.position.y, p.position.z) for p in m.poses]))

    def on_odom(m):
        p, o = m.pose.pose.position, m.pose.pose.orientation
        odom[key(m)] = (p.z, o.x, o.y, o.z, o.w, p.x, p.y)

    sub_ts = lis.create_subscription(task_space_msg_type(), '/dynamics/task_space', on_ts, qos)
    lis.create_subscription(Odometry, 'odom', on_odom, qos)
    sub_ref = lis.create_subscription(
        PointStamped, '/wbc_controller/com_reference',
        lambda m: ref.__setitem__(key(m), np.array((m.point.x, m.point.y, m.point.z))), qos)
    # a joint_states subscriber too: the simulator waits for two (this one and the dynamics
    # node) before its first state, so the record starts at the start
    lis.create_subscription(JointState, 'joint_states', lambda m: js.__setitem__(
        key(m), (list(m.name), np.array(m.position))), qos)
    lis.create_subscription(JointState, '/sim/external_torque_truth', lambda m: ext.__setitem__(
        key(m), (list(m.name), np.array(m.effort))), qos)
    t_start = run_stack(
        lis, (sub_ts, sub_ref), logs, files, 'ros_dynamics.ros.simulation.sim_node', args, log_dir, say,
        f'[closed_loop] quadruped: sim + dynamics node + wbc_controller started; {duration:g} '
        'simulated s in lock-step (a few wall minutes on a loaded machine)',
        lambda: say(f'[closed_loop]   {len(ts)} task-space messages so far'))
    text = {n: open(p).read() for n, p in logs.items()}
    say(f'[closed_loop] quadruped: {len(ts)} task-space messages, {len(odom)} odom '
        f'({time.monotonic() - t_start:.0f} s wall)')
    return ts, odom, ext, ref, js, text


def _true_com(odom, js, ks):
    """CoM of the simulator's state (odom + joint_states of the same stamp) by the core library:
    the truth the stream's CoM is compared with (None where a message is missing)."""
    import numpy as np

    import ros_dynamics as rd
    model = rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)
    frames = rd.task_frames(model, [])
    out = []
    for k in ks:
        if k not in odom or k not in js:
            out.append(None)
            continue
        z, qx, qy, qz, qw, x, y = odom[k]
        names, pos = js[k]
        q = np.concatenate([[x, y, z, qx, qy, qz, qw],
                            pos[[names.index(j) for j in model.joint_names]]])
        out.append(rd.task_space(model, q, np.zeros(model.nv), frames).com.copy())
    return out


def evaluate(ts, odom, ext, ref_rec, js, text, args, duration):
    import numpy as np

    from ros_dynamics.control.stand_step import StandStepSchedule
    if not ts or not ref_rec:
        raise RuntimeError(f'no task-space message or CoM reference recorded; logs: {text}')
    # t = 0: the first state the simulator published (its clock starts there; its stamp is
    # the controller's t = 0 too), read off the stamps of the controller's references
    t0 = min(ref_rec) if ref_rec else min(ts)
    ks = sorted(k for k in ts if k in ref_rec and k - t0 <= duration * 1e9 + 1)
    t = (np.array(ks) - t0) * 1e-9
    com = np.array([ts[k][0] for k in ks])
    ref = np.array([ref_rec[k] for k in ks])     # what the controller aimed at, per stamp
    # its schedule's phase times (they do not depend on the start state)
    sched = StandStepSchedule(FEET, np.zeros(3), np.zeros((4, 3)))
    err = np.linalg.norm(com - ref, axis=1)
    # the stream's CoM against the simulator's at the same stamp: a base pose the dynamics node
    # paired from an older odom (it takes the latest one it has) shows up here
    true = _true_com(odom, js, ks)
    gap = np.array([np.linalg.norm(c - s) for c, s in zip(com, true) if s is not None])
    err_true = np.array([np.linalg.norm(s - r) for s, r in zip(true, ref) if s is not None])
    ko = [k for k in ks if k in odom]
    z = np.array([odom[k][0] for k in ko])
    quat = np.array([odom[k][1:] for k in ko])
    tilt = np.degrees(np.arccos(np.clip(1 - 2 * (quat[:, 0]**2 + quat[:, 1]**2), -1, 1)))
    down = (z < 0.5 * z[0]) | (tilt > 45.0)
    falls = int(np.sum(down[1:] & ~down[:-1]) + (1 if down[0] else 0))
    # ground reactions f = J_leg^-T tau_ext,leg (J from the stream, tau_ext the sim's truth)
    forces = np.full((len(ks), 4, 3), np.nan)
    for i, k in enumerate(ks):
        if k not in ext:
            continue
        names, tau = ext[k]
        _, J, frames, joints, _ = ts[k]
        tj = tau[[names.index(j) for j in joints]]
        for f, foot in enumerate(FEET):
            cols = [c for c, j in enumerate(joints) if j.startswith(foot.split('_')[0] + '_')]
            Jl = J[frames.index(foot)][:, cols]
            forces[i, f] = np.linalg.solve(Jl.T, tj[cols])
    ctl = controller_statistics(text['wbc_controller']) or {}
    published = re.findall(r'joint states published: (\d+)', text['sim'])
    in_time = re.findall(r'(\d+) commands answered a published joint state, (\d+) in time',
                         text['sim'])
    lat = re.findall(r'loop latency p50 ([\d.]+) ms, p99 ([\d.]+) ms', text['sim'])
    answered = (int(in_time[-1][1]) / int(published[-1])
                if in_time and published and int(published[-1]) else 0.0)
    push_win = (t >= args.push_time) & (t < args.push_time + 1.0)
    swing = (t >= sched.t_swing + 0.1) & (t < sched.t_down - 0.15)     # in the air
    return {'com_rms_m': float(np.sqrt(np.mean(err ** 2))), 'com_max_m': float(err.max()),
            'com_rms_true_state_m': float(np.sqrt(np.mean(err_true ** 2))),
            'stream_com_vs_true_max_m': float(gap.max()),
            'stream_states_not_the_true_one': int(np.sum(gap > 1e-9)),
            'true_state_samples': int(gap.size),
            'com_max_after_push_m': float(err[push_win].max()) if push_win.any() else None,
            'com_max_outside_push_m': float(err[~push_win].max()),
            'com_back_within_1mm_after_push_s': _recovery(t, err, push_win, args),
            'max_tilt_deg': float(tilt.max()), 'falls': falls,
            'qp_solved_fraction': (ctl['qp_solved'] / ctl['qp_tried'] if ctl.get('qp_tried')
                                   else 0.0),
            'cycles_served': ctl.get('answered', 0),
            'pairs_received': ctl.get('pairs_received', 0),
            'qp_cpu_time_us_p50_p99': ctl.get('qp_cpu_us'),
            'sim_loop_latency_ms_p50_p99': [float(x) for x in lat[-1]] if lat else None,
            'joint_states_published': int(published[-1]) if published else 0,
            'joint_states_answered_fraction': answered, 'samples': len(ks),
            'lift_foot_max_normal_force_mid_swing_N': (float(np.nanmax(np.abs(
                forces[swing, 0, 2]))) if swing.any() else None),
            'stance_feet_min_normal_force_N': float(np.nanmin(forces[t > 0.01, 1:, 2])),
            '_t': t, '_com': com, '_ref': ref, '_forces': forces, '_tilt': tilt,
            '_sched': sched}


def _recovery(t, err, push_win, args):
    """Seconds from the end of the push until the CoM error stays below 1 mm (None: no push
    in the run, or it never does)."""
    import numpy as np
    end = args.push_time + args.push_duration
    after = (t >= end) & push_win
    if not after.any():
        return None
    above = np.nonzero(after & (err >= 1e-3))[0]
    if above.size == 0:
        return 0.0
    last = above[-1]
    return float(t[last] - end) if last + 1 < len(t) and t[last + 1] < args.push_time + 1.0 \
        else None


def plot(r, path, args):
    import matplotlib
    import numpy as np
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    t, com, ref, F, s = r['_t'], r['_com'], r['_ref'], r['_forces'], r['_sched']
    fig, axs = plt.subplots(3, 1, figsize=(11, 9), sharex=True)
    for ax in axs:
        for a, b, c in ((s.t_swing, s.t_down, 'C1'),
                        (args.push_time, args.push_time + args.push_duration, 'C3')):
            if b > a and (c == 'C1' or args.push):
                ax.axvspan(a, b, color=c, alpha=0.15)
    for j, (lab, col) in enumerate(zip('xyz', ('C0', 'C2', 'C4'))):
        axs[0].plot(t, (ref[:, j] - ref[0, j]) * 1e3, '--', color=col, lw=1.2,
                    label=f'{lab} reference')
        axs[0].plot(t, (com[:, j] - ref[0, j]) * 1e3, color=col, lw=0.8, label=f'{lab} actual')
    axs[0].set_ylabel('CoM - start [mm]')
    axs[0].legend(fontsize=8, ncol=3)
    axs[0].set_title(f'CoM tracks its reference: rms {r["com_rms_m"] * 1e3:.2f} mm '
                     f'(orange: LF_foot in swing, red: {args.push:g} N push)')
    lines = axs[1].plot(t, (com - ref) * 1e3, lw=0.8)
    axs[1].set_ylabel('CoM error [mm]')
    axs[1].legend(lines, ['x', 'y', 'z'], fontsize=8)
    for f, foot in enumerate(FEET):
        axs[2].plot(t, F[:, f, 2], lw=0.9, label=foot)
    axs[2].plot(t, np.nansum(F[:, :, 2], axis=1), 'k', lw=1.0, label='sum')
    axs[2].set_ylabel('vertical ground reaction [N]')
    axs[2].set_xlabel('time [s]')
    axs[2].legend(fontsize=8, ncol=5)
    axs[2].set_title('foot forces: LF_foot unloads to zero for the swing, the other three '
                     'carry the weight')
    for ax in axs:
        ax.grid(alpha=0.3)
    fig.suptitle('quadruped through ROS (sim + dynamics node + wbc_controller, only ~/dynamics '
                 f'and ~/task_space): falls {r["falls"]}, max tilt {r["max_tilt_deg"]:.2f} deg, '
                 f'QP solved {100 * r["qp_solved_fraction"]:.2f} %', fontsize=10)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def summary_line(r):
    return (f'quadruped closed loop: CoM rms {r["com_rms_m"]:.5f} m, max tilt '
            f'{r["max_tilt_deg"]:.2f} deg, falls {r["falls"]}, QP solved '
            f'{100 * r["qp_solved_fraction"]:.2f} %, joint states answered '
            f'{100 * r["joint_states_answered_fraction"]:.2f} %')


def main(argv=None):
    args = _parse(argv)
    import numpy as np
    if args.plant == 'mujoco':
        import closed_loop_mujoco
        return closed_loop_mujoco.main(args, ROOT)
    if args.robot != 'quadruped':
        raise SystemExit('--robot solo12 needs --plant mujoco')
    if args.push is None:
        args.push = 30.0

    import ros_dynamics as rd
    from common import report
    say = lambda *a: print(*a, flush=True)  # noqa: E731
    with open(rd.bundled_urdf('quadruped')) as f:
        xml = f.read()
    duration = args.duration or 6.8
    say(f'[closed_loop] ROS_DOMAIN_ID={os.environ.get("ROS_DOMAIN_ID")} (LOCALHOST); quadruped, '
        f'{duration:g} s, push {args.push:g} N at {args.push_time:g} s')
    out_dir = os.path.dirname(os.path.abspath(args.out))
    log_dir = os.path.join(out_dir, 'closed_loop_logs')
    os.makedirs(log_dir, exist_ok=True)
    ts, odom, ext, ref, js, text = run(args, xml, duration,
                                       tempfile.mkdtemp(prefix='rd_quadruped_'), log_dir, say)
    r = evaluate(ts, odom, ext, ref, js, text, args, duration)
    plot(r, args.out, args)
    line = summary_line(r)
    res = {k: v for k, v in r.items() if not k.startswith('_')}
    res.update(args=dict(vars(args), out=os.path.relpath(args.out, ROOT),
                         json=args.json and os.path.relpath(args.json, ROOT)), summary=line)
    base = os.path.splitext(os.path.abspath(args.out))[0]
    for path in filter(None, (base + '.json', args.json)):
        with open(path, 'w') as f:
            json.dump(res, f, indent=1, default=float)
    report(base + '.md', '# Quadruped closed loop through the stream (scripts/closed_loop.sh '
           f'--robot quadruped)\n\nWhat `scripts/closed_loop.sh --robot quadruped` runs.\n\n'
           f'{_readable(res, duration)}\n'
           + ''.join(f'- {k}: {v}\n' for k, v in res.items() if k != 'summary') + f'\n{line}\n')
    say(f'[closed_loop] plot saved to {args.out}; result {base}.json, {base}.md; logs in '
        f'{log_dir}')
    say(line)
    return 0 if np.isfinite(r['com_rms_m']) else 1


def _readable(res, duration):
    """The figures the documentation quotes, in its units and rounding (those a short run has
    no value for are left out)."""
    def fmt(key, scale, form):
        x = res.get(key)
        return '-' if x is None else format(scale * x, form)
    a = res['args']
    text = (f'Scenario {duration:.1f} s; push {a["push"]:.0f} N for {a["push_duration"]:.1f} s '
            f'at {a["push_time"]:.1f} s. CoM error: rms {fmt("com_rms_m", 1e3, ".2f")} mm, max '
            f'{fmt("com_max_m", 1e3, ".1f")} mm, outside the push under '
            f'{fmt("com_max_outside_push_m", 1e3, ".2f")} mm; back within 1 mm '
            f'{fmt("com_back_within_1mm_after_push_s", 1.0, ".2f")} s after the push.')
    qp, lat = res.get('qp_cpu_time_us_p50_p99'), res.get('sim_loop_latency_ms_p50_p99')
    if qp:
        text += f' QP CPU time {qp[0]:.0f} µs p50, {qp[1]:.0f} µs p99.'
    if lat:
        text += f' Loop latency {lat[0]:.1f} ms p50, {lat[1]:.1f} ms p99.'
    return (text + ' Lifted foot in mid-swing '
            f'{fmt("lift_foot_max_normal_force_mid_swing_N", 1.0, ".0f")} N; stance feet at least '
            f'{fmt("stance_feet_min_normal_force_N", 1.0, ".1f")} N; {res["samples"]} stamps.\n')


if __name__ == '__main__':
    _setup_environment()
    sys.exit(main())
