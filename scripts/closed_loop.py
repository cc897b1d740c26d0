#!/usr/bin/env python3
"""Closed loop through ROS: simulator (external efforts) + dynamics node + tracking controller,
run once per control law; reports the RMS tracking error per joint per law, the loop latency
and the fraction of cycles served, and saves a plot.

    python scripts/closed_loop.py                 # ~2 min; writes out/closed_loop.png and .md
    python scripts/closed_loop.py --laws slotine_li --duration 5 --frequency 0.5

Three real ROS 2 processes per law on the bundled ``arm7`` (fixed base, 7 joints, 1 kHz):

* ``sim`` (``control: external``, ``scenario: none``, no sensor noise) publishes
  ``joint_states`` in simulated time and applies ``/sim/effort_command``; by default in
  lock-step (it waits, up to ``--lockstep`` wall seconds, for the command answering each joint
  state, so the tracking numbers do not depend on the machine's load); ``--lockstep 0`` runs
  it free at ``--real-time-factor`` (commands act when they arrive: latency matters);
* ``dynamics_node`` publishes ``/dynamics/dynamics`` (M, C, dM/dt, g) per joint state;
* ``tracking_controller`` pairs them by stamp and commands the efforts of the chosen law.

All laws use the same feedback gains: K_p = ω² diag M(q0), K_d = 2 ω diag M(q0) with
ω = ``--bandwidth`` (Slotine–Li: K_D = K_d, Λ = K_p/K_d; computed torque: ω², 2ω).  The
reference is ``q0 + A (1 − cos 2π f t)`` on every joint from the arm's home pose.

Measured here: RMS of ``q − q_d`` per joint over ``--duration`` simulated seconds from the
first joint state (q_d rebuilt from its stamp and position, as the controller does), the loop
latency as the simulator measures it (joint state published -> the command with its stamp
received, wall clock), and the served fraction (commands answering a joint state / joint states
published, both counted by the simulator).  The
plot shows the tracking error of every law on a log scale (against time and as RMS per joint),
reference vs actual on the joint where PD + gravity errs most, and the Slotine–Li torque
components ``M q̈_r``, ``C q̇_r``, ``g`` there (recomputed from the recorded joint states with
the core library).

Isolation: LOCALHOST discovery and a random ROS_DOMAIN_ID (as scripts/demo.py).
"""

MEASURES = ('ros_dynamics/core', 'ros_dynamics/estimation', 'ros_dynamics/control',
            'ros_dynamics/ros/control', 'ros_dynamics/ros/dynamics_node',
            'ros_dynamics/ros/simulation/sim_node.py', 'ros_dynamics/simulation', 'urdf/arm7.urdf')

import argparse
import json
import os
import re
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for p in (ROOT, HERE):
    if p not in sys.path:
        sys.path.insert(0, p)

from demo import (_setup_environment, _stop, _write_params, spin_until_ended,  # noqa: E402
                  stamp_key, start_program)

LAWS = ('pd_gravity', 'computed_torque', 'slotine_li')


def _parse():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--robot', default='arm7', choices=('arm7', 'quadruped'),
                    help='quadruped: the whole-body controller (scripts/closed_loop_quadruped.py)')
    ap.add_argument('--laws', nargs='+', default=list(LAWS), choices=LAWS)
    ap.add_argument('--duration', type=float, default=3.0,
                    help='simulated seconds evaluated per law (default 3)')
    ap.add_argument('--amplitude', type=float, default=0.4, help='A [rad] (default 0.4)')
    ap.add_argument('--frequency', type=float, default=1.0, help='f [Hz] (default 1)')
    ap.add_argument('--trajectory', default='sine', choices=('sine', 'min_jerk'))
    ap.add_argument('--bandwidth', type=float, default=30.0, help='ω [rad/s] (default 30)')
    ap.add_argument('--real-time-factor', type=float, default=1.0,
                    help='simulated seconds per wall second (default 1; an upper bound in '
                         'lock-step)')
    ap.add_argument('--lockstep', type=float, default=1.0,
                    help='the sim waits up to this many wall seconds per step for the command '
                         'answering its last joint state (default 1: results independent of '
                         'the machine load); 0: free running at --real-time-factor, the '
                         'commands act when they arrive')
    ap.add_argument('--out', default=os.path.join(ROOT, 'out', 'closed_loop.png'))
    ap.add_argument('--json', default=None, help='also write the results as JSON here')
    ap.add_argument('--report', default=None,
                    help='the result file (markdown: date, load, machine, command, the RMS '
                         'errors and their ratios; default closed_loop.md next to --out)')
    ap.add_argument('--timeout', type=float, default=120.0, help='wall-clock limit per law [s]')
    ap.add_argument('--dynamics-module', default='ros_dynamics.ros.dynamics_node.node',
                    help=argparse.SUPPRESS)
    ap.add_argument('--quiet', action='store_true')
    return ap.parse_args()


def _percentiles(log, pattern):
    m = re.findall(pattern, log)
    return [float(x) for x in m[-1]] if m else None


def run_law(law, args, xml, tmp, log_dir, say):
    """One closed-loop run; returns the recorded joint states, commands and the logs."""
    import numpy as np
    import rclpy
    from rclpy.node import Node
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState

    files = {n: os.path.join(tmp, f'{law}_{n}.yaml') for n in ('sim', 'dyn', 'ctl')}
    _write_params(files['sim'], 'sim', dict(
        robot_description=xml, scenario='none', control='external', rate=1000.0,
        real_time_factor=args.real_time_factor, duration=args.duration + 1.0,
        wait_for_subscribers=3, wait_timeout=60.0, start_delay=0.5, command_timeout=0.1,
        lockstep_timeout=args.lockstep, publish_robot_description=False))
    _write_params(files['dyn'], 'dynamics', dict(
        robot_description=xml, christoffel_stream=False, input_qos_depth=2000, qos_depth=2000))
    _write_params(files['ctl'], 'tracking_controller', dict(
        law=law, trajectory=args.trajectory, amplitude=[args.amplitude],
        frequency=[args.frequency], bandwidth=args.bandwidth, damping_ratio=1.0,
        report_period=0.0))
    logs = {n: os.path.join(log_dir, f'{law}_{n}.log') for n in ('sim', 'dynamics_node',
                                                                 'tracking_controller')}
    procs = []

    def start(name, module, params):
        return start_program(procs, logs[name], ['-m', module], params)

    rclpy.init(args=[])
    lis = Node('closed_loop_listener')
    qos = QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE)
    js, cmd = {}, {}

    key = stamp_key

    lis.create_subscription(JointState, 'joint_states', lambda m: js.__setitem__(
        key(m), (time.monotonic(), np.array(m.position), np.array(m.velocity))), qos)
    lis.create_subscription(JointState, '/sim/effort_command', lambda m: cmd.__setitem__(
        key(m), (time.monotonic(), np.array(m.effort))), qos)
    t_start = time.monotonic()
    try:
        start('dynamics_node', args.dynamics_module, files['dyn'])
        start('tracking_controller', 'ros_dynamics.ros.control.tracking_controller', files['ctl'])
        sim = start('sim', 'ros_dynamics.ros.simulation.sim_node', files['sim'])
        from ros_dynamics.ros.process import make_executor
        executor = make_executor('events')      # keeps up with 2 topics at 1 kHz under load
        executor.add_node(lis)
        spin_until_ended(executor, sim, t_start + args.timeout)
    finally:
        _stop(procs)
        lis.destroy_node()
        rclpy.try_shutdown()
    text = {n: open(p).read() for n, p in logs.items()}
    say(f'[closed_loop] {law}: {len(js)} joint states, {len(cmd)} commands '
        f'({time.monotonic() - t_start:.0f} s wall)')
    return js, cmd, text


def evaluate(law, js, cmd, text, args, model):
    import numpy as np

    import ros_dynamics as rd
    from ros_dynamics.control import make_law, make_trajectory
    if not cmd:
        raise RuntimeError(f'{law}: no effort command received; logs: {text}')
    # t = 0 is the first joint state: in lock-step the simulator holds its clock there until a
    # command answers it, so it is where the controller's reference starts too (not the first
    # command this listener happened to receive: under load its subscription can match late)
    t0 = min(js)
    q0 = js[t0][1]
    traj = make_trajectory(args.trajectory, q0, args.amplitude, args.frequency)
    end = t0 + int(round(args.duration * 1e9))
    ks = sorted(k for k in js if t0 <= k <= end)
    t = (np.array(ks) - t0) * 1e-9
    Q = np.array([js[k][1] for k in ks])
    V = np.array([js[k][2] for k in ks])
    ref = [traj(x) for x in t]
    Qd = np.array([r[0] for r in ref])
    rms = np.sqrt(np.mean((Q - Qd) ** 2, axis=0))
    # served: commands the simulator received answering its joint states, over the joint
    # states it published (its own counts: the plant is the authority; this listener is a
    # fourth process on a shared machine and may itself miss messages, its view is reported
    # apart)
    seen = sum(1 for k in ks if k in cmd) / len(ks)
    published = re.findall(r'joint states published: (\d+)', text['sim'])
    lat_l = np.array([cmd[k][0] - js[k][0] for k in ks if k in cmd]) * 1e3
    sim_lat = _percentiles(text['sim'], r'loop latency p50 ([\d.]+) ms, p99 ([\d.]+) ms')
    ctl = re.findall(r'served (\d+)/(\d+) joint states \(([\d.]+) %\), late (\d+), '
                     r'mismatched (\d+)', text['tracking_controller'])
    ctl_lat = _percentiles(text['tracking_controller'],
                           r'latency joint state -> command p50 ([\d.]+) ms, p99 ([\d.]+) ms')
    applied = re.findall(r'(\d+) steps on commands, (\d+) on the fallback', text['sim'])
    in_time = re.findall(r'(\d+) commands answered a published joint state, (\d+) in time',
                         text['sim'])
    # Slotine-Li torque components at the recorded states (same gains as the controller)
    m = np.diag(rd.mass_matrix(model, q0))
    w = args.bandwidth
    sl = make_law('slotine_li', w * w * m, 2 * w * m)
    comp = {c: np.empty_like(Q) for c in ('M_qdd_r', 'C_qd_r', 'g')}
    for i, (q, v, r) in enumerate(zip(Q, V, ref)):
        d = rd.dynamics(model, q, v)
        sl(q, v, r[0], r[1], r[2], d.M, d.C, d.g)
        for c in comp:
            comp[c][i] = sl.components[c]
    return {'law': law, 'rms': rms.tolist(), 'rms_all': float(np.sqrt(np.mean(rms ** 2))),
            'max_abs_error': np.abs(Q - Qd).max(axis=0).tolist(), 'samples': len(ks),
            'served_fraction': (int(in_time[-1][0]) / int(published[-1])
                                if in_time and published and int(published[-1]) else 0.0),
            'listener_served_fraction': seen,
            'listener_latency_ms_p50_p99': (np.percentile(lat_l, [50, 99]).tolist()
                                            if lat_l.size else None),
            'sim_loop_latency_ms_p50_p99': sim_lat,
            'controller_latency_ms_p50_p99': ctl_lat,
            'controller_counts': ([int(x) if '.' not in x else float(x) for x in ctl[-1]]
                                  if ctl else None),
            'sim_steps_on_commands_fallback': [int(x) for x in applied[-1]] if applied else None,
            'sim_commands_answered_in_time': [int(x) for x in in_time[-1]] if in_time else None,
            '_t': t, '_Q': Q, '_Qd': Qd, '_comp': comp}


def plot(results, names, path, args):
    """One figure whose point is visible at a glance: the error of every law on a log scale."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    import numpy as np
    colors = {'pd_gravity': 'C3', 'computed_torque': 'C2', 'slotine_li': 'C0'}
    base = next((r for r in results if r['law'] == 'pd_gravity'), None)

    def label(r):
        txt = f'{r["law"]}: RMS {r["rms_all"] * 1e3:.3g} mrad'
        if base is not None and r is not base:
            txt += f' ({base["rms_all"] / r["rms_all"]:.0f}x smaller)'
        return txt

    fig, axs = plt.subplots(2, 2, figsize=(13, 8.5))
    (a_err, a_bar), (a_q, a_tau) = axs
    # 1. |q - q_d| (the largest over the joints) against time, log scale
    for r in results:
        e = np.abs(r['_Q'] - r['_Qd']).max(axis=1) * 1e3
        a_err.semilogy(r['_t'], np.maximum(e, 1e-4), color=colors.get(r['law']), lw=0.9,
                       label=label(r))
    a_err.set_xlabel('time [s]')
    a_err.set_ylabel('tracking error, max over joints |q - q_d| [mrad]')
    a_err.set_ylim(bottom=1e-2)
    a_err.set_title('tracking error (log scale)')
    a_err.grid(True, which='both', alpha=0.3)
    a_err.legend(fontsize=8, loc='lower right')
    # 2. RMS error per joint and law, log scale
    w = 0.8 / len(results)
    x = np.arange(len(names))
    for i, r in enumerate(results):
        a_bar.bar(x + (i - (len(results) - 1) / 2) * w, np.array(r['rms']) * 1e3, w,
                  color=colors.get(r['law']), label=r['law'])
    a_bar.set_yscale('log')
    a_bar.set_xticks(x, [n.replace('arm_', '') for n in names], fontsize=8)
    a_bar.set_ylabel('RMS tracking error [mrad]')
    a_bar.set_title('RMS error per joint (log scale)')
    a_bar.grid(True, axis='y', which='both', alpha=0.3)
    a_bar.legend(fontsize=8)
    # 3. reference vs actual on the joint where the PD law errs most
    ref = results[0]
    j = int(np.argmax(base['rms'])) if base is not None else 0
    a_q.plot(ref['_t'], ref['_Qd'][:, j], 'k--', lw=1.2, label='reference q_d')
    for r in results:
        a_q.plot(r['_t'], r['_Q'][:, j], color=colors.get(r['law']), lw=0.9, label=r['law'])
    a_q.set_xlabel('time [s]')
    a_q.set_ylabel(f'{names[j]} position [rad]')
    a_q.set_title(f'{names[j]}: reference and actual (the model-based laws lie on the reference)')
    a_q.legend(fontsize=8)
    # 4. what the model contributes: the Slotine-Li torque terms on the same joint
    sl = next((r for r in results if r['law'] == 'slotine_li'), None)
    if sl is not None:
        for c, col, lab in (('M_qdd_r', 'C0', r'$M\ddot q_r$ (inertia)'),
                            ('C_qd_r', 'C1', r'$C\dot q_r$ (Coriolis)'), ('g', 'C7', '$g$ (gravity)')):
            a_tau.plot(sl['_t'], sl['_comp'][c][:, j], color=col, lw=0.9, label=lab)
        a_tau.set_title(f'{names[j]}: model terms of the Slotine-Li law')
        a_tau.legend(fontsize=8)
    a_tau.set_xlabel('time [s]')
    a_tau.set_ylabel('torque [N m]')
    point = ''
    if base is not None and len(results) > 1:
        best = min(base['rms_all'] / r['rms_all'] for r in results if r is not base)
        point = (f'\nthe laws using dynamics_node\'s M, C, g track at least {best:.0f}x better '
                 'than PD + gravity with the same gains')
    fig.suptitle(f'arm7 through ROS (sim + dynamics_node + tracking_controller): every joint '
                 f'tracks q0 + {args.amplitude:g}(1 - cos 2\u03c0 {args.frequency:g} t) rad, '
                 f'\u03c9 = {args.bandwidth:g} rad/s' + point, fontsize=11)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_report(path, results, names, args):
    """The result file: when, where, how it was run, then the RMS errors per joint [mrad], each
    law's ratio to PD + gravity and the loop's counts (what the docs quote)."""
    import numpy as np
    lines = [f'# Closed loop through ROS: tracking error per law (arm7, {args.trajectory})', '',
             f'Lock-step {args.lockstep:g} s, ω = {args.bandwidth:g} rad/s, A = '
             f'{args.amplitude:g} rad, f = {args.frequency:g} Hz, {args.duration:g} s' + (
                 f'; peak velocity 2πf A = {2 * np.pi * args.frequency * args.amplitude:.1f} '
                 f'rad/s and acceleration (2πf)² A = '
                 f'{(2 * np.pi * args.frequency) ** 2 * args.amplitude:.1f} rad/s²'
                 if args.trajectory == 'sine' else '') + '.', '',
             'RMS of q - q_d per joint [mrad]; ratio = pd_gravity\'s RMS over all joints / '
             'the law\'s:', '',
             '| law | ' + ' | '.join(n for n in names) + ' | all | ratio |',
             '|---|' + '---:|' * (len(names) + 2)]
    base = next((r for r in results if r['law'] == 'pd_gravity'), None)
    for r in results:
        ratio = (f'{base["rms_all"] / r["rms_all"]:.0f}x smaller' if base is not None
                 and r is not base else '')
        lines.append(f'| {r["law"]} | ' + ' | '.join(f'{x * 1e3:.3f}' for x in r['rms'])
                     + f' | {r["rms_all"] * 1e3:.3f} | {ratio} |')
    lines += ['', '| law | served | loop latency p50 / p99 (sim, ms) | controller counts (served, '
              'states, %, late, mismatched) |', '|---|---:|---|---|']
    for r in results:
        lat = r['sim_loop_latency_ms_p50_p99']
        lat = f'{lat[0]:.1f} / {lat[1]:.1f}' if lat else 'n/a'
        lines.append(f'| {r["law"]} | {100 * r["served_fraction"]:.1f} % | {lat} | '
                     f'{r["controller_counts"]} |')
    from common import report
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    return report(path, '\n'.join(lines), measures=MEASURES)


def main():
    args = _parse()
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                    'benchmarks'))
    import common  # noqa: F401  (the tree's state at the start, for the result's header)
    import numpy as np

    import ros_dynamics as rd
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, flush=True))
    with open(rd.bundled_urdf('arm7')) as f:
        xml = f.read()
    model = rd.load_urdf(xml)
    names = list(model.joint_names)
    say(f'[closed_loop] ROS_DOMAIN_ID={os.environ.get("ROS_DOMAIN_ID")} (LOCALHOST); arm7, '
        f'{args.trajectory} A = {args.amplitude} rad, f = {args.frequency} Hz, ω = '
        f'{args.bandwidth} rad/s, real-time factor {args.real_time_factor}')
    tmp = tempfile.mkdtemp(prefix='ros_dynamics_closed_loop_')
    log_dir = os.path.join(os.path.dirname(os.path.abspath(args.out)), 'closed_loop_logs')
    os.makedirs(log_dir, exist_ok=True)
    results = []
    for law in args.laws:
        js, cmd, text = run_law(law, args, xml, tmp, log_dir, say)
        results.append(evaluate(law, js, cmd, text, args, model))
    say('[closed_loop] RMS tracking error per joint [mrad]:')
    say('  law              ' + ' '.join(f'{n[-7:]:>7}' for n in names) + '     all')
    for r in results:
        say(f'  {r["law"]:16} ' + ' '.join(f'{x * 1e3:7.3f}' for x in r['rms'])
            + f' {r["rms_all"] * 1e3:7.3f}')
    for r in results:
        say(f'  {r["law"]:16} served {100 * r["served_fraction"]:.1f} % (seen by the listener '
            f'{100 * r["listener_served_fraction"]:.1f} %), loop latency (sim) '
            f'p50/p99 {r["sim_loop_latency_ms_p50_p99"]} ms, controller '
            f'{r["controller_latency_ms_p50_p99"]} ms, counts (served, states, %, late, '
            f'mismatched) {r["controller_counts"]}, sim: commands answered / in time '
            f'{r["sim_commands_answered_in_time"]}')
    base = next((r for r in results if r['law'] == 'pd_gravity'), None)
    if base is not None:
        for r in results:
            if r is not base:
                say(f'  {r["law"]}: {base["rms_all"] / r["rms_all"]:.1f}x smaller RMS error '
                    'than pd_gravity')
    import pickle
    with open(os.path.join(log_dir, 'series.pickle'), 'wb') as f:   # for replotting
        pickle.dump({'results': results, 'names': names, 'args': vars(args)}, f)
    plot(results, names, args.out, args)
    say(f'[closed_loop] plot saved to {args.out}; logs in {log_dir}')
    if args.report is None:
        args.report = os.path.join(os.path.dirname(os.path.abspath(args.out)), 'closed_loop.md')
    write_report(args.report, results, names, args)
    say(f'[closed_loop] results written to {args.report}')
    if args.json:
        with open(args.json, 'w') as f:
            json.dump([{k: v for k, v in r.items() if not k.startswith('_')} for r in results],
                      f, indent=1, default=float)
    return 0 if all(np.isfinite(r['rms_all']) for r in results) else 1


if __name__ == '__main__':
    _setup_environment()
    if '--robot' in sys.argv[1:] and 'quadruped' in sys.argv[1:]:
        from closed_loop_quadruped import main as quadruped   # whole-body control, its options
        sys.exit(quadruped(sys.argv[1:]))
    sys.exit(main())
