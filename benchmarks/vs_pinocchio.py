#!/usr/bin/env python3
"""dynamics_node against the plain rclpy node a user would write with Pinocchio, side by side.

For each robot (Panda, and the full Talos v2 with a fixed base, both from example-robot-data)
and each repetition, three node variants are run one after the other in an order that rotates
from one repetition to the next (so each goes first as often as the others):

* ``ours``: dynamics_node with its defaults (robot_description the only parameter): the
  Dynamics message, the latched ~/christoffel every 10th cycle, the observer;
* ``ours-lean``: dynamics_node with the outputs of the Pinocchio node only
  (christoffel_stream false, observer_enabled false);
* ``pinocchio``: benchmarks/pinocchio_node.py (pin.crba, computeCoriolisMatrix,
  computeGeneralizedGravity, dM/dt = C + C^T, rclpy.spin).

Each run: the node process, a subscriber process on its ~/dynamics (node_latency.SUBSCRIBER),
this process publishing sensor_msgs/JointState at --rate Hz (1 kHz) for --duration s (a smooth
trajectory with the efforts that produce it, inverse dynamics, so that the observer sees free
motion and every input passes the bounds).  Measured: the node's CPU seconds (utime + stime of
all threads, /proc/<pid>/stat, over the publishing window plus 0.3 s of tail) per joint state
sent, per thread, and the fraction of joint states answered on ~/dynamics.  Before the runs, the
Pinocchio node's terms are checked against rd.dynamics at random states (1e-9): both publish the
same output.

    python benchmarks/vs_pinocchio.py [--robots panda talos] [--reps 5] [--duration 5]
        [--rate 1000] [--variants ours ours-lean pinocchio] [--out-dir out/benchmarks]
        [--base ROOT]   (also the node of another checkout: before/after in one run)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import node_latency as nl  # noqa: E402  (sets the ROS environment: localhost, its domain id)
from common import example_robot_data_urdf  # noqa: E402

import numpy as np  # noqa: E402
import yaml  # noqa: E402

import ros_dynamics as rd  # noqa: E402
from ros_dynamics.estimation.joint_input import InputBounds  # noqa: E402
from ros_dynamics.ros import compat as ros_compat  # noqa: E402

ROBOTS = {'panda': 'panda_description/urdf/panda.urdf',
          'talos': 'talos_data/robots/talos_full_v2.urdf'}
VARIANTS = {'ours': {}, 'ours-lean': {'christoffel_stream': False, 'observer_enabled': False}}


def check_same_output(xml, trials=5):
    """max |ours - Pinocchio| over M, C, dM/dt, g at random states (Pinocchio's order)."""
    import pinocchio as pin
    from pinocchio_node import pin_terms
    model = rd.load_urdf(xml)
    pm = pin.buildModelFromXML(xml)
    pd = pm.createData()
    perm = np.array([model.joint_v_index(nm) for nm in list(pm.names)[1:]])
    ix = np.ix_(perm, perm)
    rng = np.random.default_rng(1)
    err = 0.0
    for _ in range(trials):
        qp, vp = rng.uniform(-1, 1, pm.nq), rng.uniform(-1, 1, pm.nv)
        q, v = np.empty(model.nq), np.empty(model.nv)
        q[perm], v[perm] = qp, vp
        d = rd.dynamics(model, q, v)
        for a, b in zip(pin_terms(pm, pd, qp, vp), (d.M[ix], d.C[ix], d.Mdot[ix], d.g[perm])):
            err = max(err, float(np.abs(a - b).max()))
    return err


def trajectory(xml, duration, rate):
    """Joint names and the (Q, V, E) lists of a smooth motion within the input bounds."""
    model = rd.load_urdf(xml)
    names, n = list(model.joint_names), model.nv
    w = 2 * np.pi * 0.5
    bounds = InputBounds(model)
    # amplitude 0.3..0.8 (rad or m), velocity at most a quarter of the node's velocity bound
    amp = np.minimum(np.linspace(0.3, 0.8, n), 0.25 * bounds.velocity / w)
    steps = int(round(duration * rate))
    T = np.arange(steps)[:, None] / rate
    Q, V, A = amp * np.sin(w * T), amp * w * np.cos(w * T), -amp * w * w * np.sin(w * T)
    E = np.array([rd.inverse_dynamics(model, Q[k], V[k], A[k]) for k in range(steps)])
    bad = next((b for k in range(0, steps, 50) for b in [bounds.violation(Q[k], V[k], E[k])]
                if b is not None), None)
    if bad is not None:
        raise SystemExit(f'the benchmark trajectory is outside the input bounds: {bad[1]}')
    return names, Q.tolist(), V.tolist(), E.tolist()


def start_process(ns, argv, params, root, subscriber_timeout):
    """A node process (``argv``, importing ros_dynamics from ``root``) in /ns with ``params``
    and the ~/dynamics subscriber (as node_latency.start_node_and_subscriber starts ours)."""
    tmp = tempfile.mkdtemp(prefix='rd_vs_pin_')
    pfile = os.path.join(tmp, 'params.yaml')
    with open(pfile, 'w') as f:
        yaml.safe_dump({f'/{ns}/dynamics': {'ros__parameters': params}}, f)
    env = ros_compat.ros_environment(domain_id=nl.DOMAIN_ID, localhost_only=True)
    env['PYTHONPATH'] = os.pathsep.join([root, nl.REPO_ROOT, env.get('PYTHONPATH', '')])
    log = open(os.path.join(tmp, 'node.log'), 'w')
    proc = subprocess.Popen([sys.executable] + argv + ['--ros-args', '-r', f'__ns:=/{ns}',
                                                       '--params-file', pfile],
                            env=env, stdout=log, stderr=subprocess.STDOUT, cwd=root)
    sub_out = os.path.join(tmp, 'received.json')
    sub = subprocess.Popen([sys.executable, '-c', nl.SUBSCRIBER, f'/{ns}/dynamics/dynamics',
                            sub_out, str(subscriber_timeout)], env=env, stdout=subprocess.PIPE,
                           text=True)
    return proc, sub, log, sub_out


def run_trial(robot, variant, xml, traj, duration, rate, tag, base_root=None):
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState

    ns = f'vs_{robot}_{variant.replace("-", "_").replace("@", "_")}_{tag}'
    if variant == 'pinocchio':
        proc, sub, log, sub_out = start_process(
            ns, [os.path.join(HERE, 'pinocchio_node.py')], {'robot_description': xml},
            nl.REPO_ROOT, duration + 120)
    elif variant == 'ours@base':   # the node of another checkout (before a change)
        proc, sub, log, sub_out = start_process(
            ns, ['-m', 'ros_dynamics.ros.dynamics_node'], {'robot_description': xml},
            base_root, duration + 120)
    else:
        params = {'robot_description': xml, **VARIANTS[variant]}
        proc, sub, log, sub_out = nl.start_node_and_subscriber(ns, params, duration + 120)
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node(f'vs_client_{tag}', context=ctx)
    pub = node.create_publisher(JointState, f'/{ns}/joint_states',
                                QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(node)
    names, Q, V, E = traj
    try:
        nl.wait_until_connected(pub, ex, proc, sub, log, 120)   # then the node is idle
        cpu0, threads0 = nl.cpu_seconds(proc.pid), nl.thread_cpu(proc.pid)
        sent, elapsed = nl.publish_paced(pub, names, Q, V, E, rate)
        time.sleep(0.3)   # the tail of the queue
        cpu1, threads1 = nl.cpu_seconds(proc.pid), nl.thread_cpu(proc.pid)
        load = os.getloadavg()[0]
        sub.wait(timeout=duration + 150)
    finally:
        nl.stop_trial(ex, node, ctx, proc, sub, log)
    with open(sub_out) as f:
        received = {s for s, _ in json.load(f)}
    n = len(sent)
    answered = sum(s in received for s in sent)
    return {'robot': robot, 'variant': variant, 'sent': n, 'send_rate_hz': n / elapsed,
            'answered_fraction': answered / n,
            'cpu_us_per_joint_state': 1e6 * (cpu1 - cpu0) / n,
            'cpu_us_per_answered': 1e6 * (cpu1 - cpu0) / max(answered, 1),
            'cpu_us_by_thread': {k: round(1e6 * (threads1[k] - threads0.get(k, 0.0)) / n, 1)
                                 for k in sorted(threads1)
                                 if threads1[k] - threads0.get(k, 0.0) > 0},
            'loadavg_1min': load}


def summarize(results, robots, variants, full=0.999):
    """Markdown lines and a summary.  A repetition counts for the goal only if every variant
    answered (>= 99.9 % of the joint states): a node that fell behind dropped joint states it
    then never paid for.  The ratio per answered joint state is given for every repetition."""
    others = [v for v in variants if v != 'pinocchio']
    lines = ['| robot | rep | order | ' + ' | '.join(f'{v} us/js (answered)' for v in variants)
             + ' | ' + ' | '.join(f'{v}/pinocchio' for v in others)
             + ' | ' + ' | '.join(f'{v}/pinocchio per answered' for v in others)
             + ' | all answered | load |', '|' + '---|' * (6 + len(variants) + 2 * len(others))]
    summary = {}
    for robot in robots:
        reps = sorted({r['rep'] for r in results if r['robot'] == robot})
        ratios, per_ans = {v: [] for v in others}, {v: [] for v in others}
        us = {v: [] for v in variants}
        for rep in reps:
            row = {r['variant']: r for r in results if r['robot'] == robot and r['rep'] == rep}
            order = ' '.join(r['variant'] for r in sorted(row.values(), key=lambda r: r['slot']))
            ok = all(r['answered_fraction'] >= full for r in row.values())
            cells = [f'{row[v]["cpu_us_per_joint_state"]:.0f} '
                     f'({100 * row[v]["answered_fraction"]:.1f} %)' for v in variants]
            rc, ac = [], []
            for v in others:
                x = row[v]['cpu_us_per_joint_state'] / row['pinocchio']['cpu_us_per_joint_state']
                y = row[v]['cpu_us_per_answered'] / row['pinocchio']['cpu_us_per_answered']
                rc.append(f'{x:.2f}')
                ac.append(f'{y:.2f}')
                per_ans[v].append(y)
                if ok:
                    ratios[v].append(x)
            if ok:
                for v in variants:
                    us[v].append(row[v]['cpu_us_per_joint_state'])
            load = max(r['loadavg_1min'] for r in row.values())
            lines.append(f'| {robot} | {rep} | {order} | ' + ' | '.join(cells) + ' | '
                         + ' | '.join(rc) + ' | ' + ' | '.join(ac)
                         + f' | {"yes" if ok else "no"} | {load:.1f} |')

        def mr(x):
            return (f'**{statistics.median(x):.2f}** [{min(x):.2f}, {max(x):.2f}]' if x
                    else 'n/a')
        n_ok = len(next(iter(us.values())))
        cells = [f'{statistics.median(us[v]):.0f}' if us[v] else 'n/a' for v in variants]
        lines.append(f'| {robot} | median [range], the {n_ok} reps all answered / all reps | | '
                     + ' | '.join(cells) + ' | ' + ' | '.join(mr(ratios[v]) for v in others)
                     + ' | ' + ' | '.join(mr(per_ans[v]) for v in others) + ' | | |')
        summary[robot] = {
            'reps_all_answered': n_ok,
            'median_us': {v: statistics.median(x) if x else None for v, x in us.items()},
            'ratio_median': {v: statistics.median(x) if x else None for v, x in ratios.items()},
            'ratio_range': {v: [min(x), max(x)] if x else None for v, x in ratios.items()},
            'ratio_per_answered_median': {v: statistics.median(x) for v, x in per_ans.items()}}
    threads = ['', 'Median CPU per joint state by thread [us]:', '',
               '| robot | variant | by thread |', '|---|---|---|']
    for robot in robots:
        for v in variants:
            rs = [r for r in results if r['robot'] == robot and r['variant'] == v]
            keys = sorted({k for r in rs for k in r['cpu_us_by_thread']})
            med = {k: statistics.median(r['cpu_us_by_thread'].get(k, 0.0) for r in rs)
                   for k in keys}
            threads.append(f'| {robot} | {v} | ' + ', '.join(
                f'{k} {x:.0f}' for k, x in sorted(med.items(), key=lambda t: -t[1]) if x >= 0.5)
                + ' |')
    return lines + threads, summary


def _commit(root):
    """The commit of the checkout at ``root`` (what a result file names, not a local path)."""
    res = subprocess.run(['git', '-C', root, 'rev-parse', '--short', 'HEAD'],
                         capture_output=True, text=True)
    return res.stdout.strip() or 'an unknown commit (not a git checkout)'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--robots', nargs='+', default=list(ROBOTS), choices=list(ROBOTS))
    ap.add_argument('--variants', nargs='+', default=['ours', 'ours-lean', 'pinocchio'],
                    choices=['ours', 'ours-lean', 'pinocchio'])
    ap.add_argument('--reps', type=int, default=5)
    ap.add_argument('--duration', type=float, default=5.0)
    ap.add_argument('--rate', type=float, default=1000.0)
    ap.add_argument('--out-dir', default=os.path.join(nl.REPO_ROOT, 'out', 'benchmarks'))
    ap.add_argument('--name', default='vs_pinocchio')
    ap.add_argument('--base', metavar='ROOT',
                    help='also run the node of this checkout with its defaults (variant '
                         'ours@base: before/after a change in the same run)')
    args = ap.parse_args()
    variants = [v for v in ('ours', 'ours-lean', 'pinocchio') if v in args.variants]
    if args.base:
        variants.insert(1, 'ours@base')
    if 'pinocchio' not in variants:
        raise SystemExit('the pinocchio variant is the reference of the ratios')
    head = ((f'ours@base: the node at {_commit(args.base)}; ' if args.base else '')
            + f'ROS_DOMAIN_ID={nl.DOMAIN_ID}, localhost only; {args.rate:g} Hz for '
            f'{args.duration:g} s per run, {args.reps} repetitions; load average at start '
            f'{os.getloadavg()[0]:.2f} on {os.cpu_count()} cores')
    print(head, flush=True)
    xmls, trajs, checks = {}, {}, {}
    for robot in args.robots:
        with open(example_robot_data_urdf(ROBOTS[robot])) as f:
            xmls[robot] = f.read()
        checks[robot] = check_same_output(xmls[robot])
        if not checks[robot] <= 1e-9:
            raise SystemExit(f'{robot}: Pinocchio and ours differ by {checks[robot]:.3g}')
        trajs[robot] = trajectory(xmls[robot], args.duration, args.rate)
        print(f'{robot}: {len(trajs[robot][0])} joints; max |ours - pinocchio| over M, C, dM/dt, '
              f'g = {checks[robot]:.1e}', flush=True)
    results = []
    for rep in range(args.reps):
        for robot in args.robots:
            k = rep % len(variants)
            order = variants[k:] + variants[:k]
            for slot, v in enumerate(order):
                r = run_trial(robot, v, xmls[robot], trajs[robot], args.duration, args.rate,
                              f'{rep}_{os.getpid()}', args.base)
                r.update(rep=rep, slot=slot)
                results.append(r)
                print(f'[{robot} rep {rep} {v}] {r["cpu_us_per_joint_state"]:.0f} us CPU per '
                      f'joint state, answered {100 * r["answered_fraction"]:.2f} %, sent at '
                      f'{r["send_rate_hz"]:.0f} Hz, load {r["loadavg_1min"]:.1f}; by thread '
                      + ', '.join(f'{t} {x:.0f}' for t, x in r['cpu_us_by_thread'].items()),
                      flush=True)
    lines, summary = summarize(results, args.robots, variants)
    os.makedirs(args.out_dir, exist_ok=True)
    md = os.path.join(args.out_dir, f'{args.name}.md')
    with open(md, 'w') as f:
        f.write(f'# dynamics_node vs a plain rclpy + Pinocchio node\n\n{head}.\n'
                + ''.join(f'{r}: max |ours - pinocchio| = {e:.1e}. ' for r, e in checks.items())
                + '\n\nNode CPU (all threads) per joint state sent, us; answered = fraction of '
                  'joint states with a ~/dynamics message received by the subscriber process.\n\n'
                + '\n'.join(lines) + '\n')
    js = os.path.join(args.out_dir, f'{args.name}.json')
    with open(js, 'w') as f:
        json.dump({'runs': results, 'summary': summary, 'check': checks}, f, indent=2)
    print('\n'.join(lines))
    print(f'wrote {md} and {js}')


if __name__ == '__main__':
    main()
