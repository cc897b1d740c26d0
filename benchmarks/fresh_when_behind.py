#!/usr/bin/env python3
"""Fresh when behind: how far dynamics_node's ~/dynamics trail the joint states they answer
while another process calls its services, streamed at 1 kHz on the machine's cores.

Per run: the node (its defaults), a subscriber process on ~/dynamics (node_latency.SUBSCRIBER:
each message's stamp and when it arrived), a service caller process that calls
``~/get_dynamics`` at ``--calls`` Hz (every other request malformed: an unknown joint, a
position short, a NaN; the node refuses those with a reason), and this process publishing
sensor_msgs/JointState at ``--rate`` Hz for ``--duration`` s (stamp = the wall clock at
publishing; a smooth motion with the efforts that produce it, the bundled arm by default).
Measured: the lag of each ~/dynamics behind the joint state it answers (its arrival at the
subscriber minus the stamp: p50, p99, max), the share of joint states answered, the joint
states the node took into its cycle (its shutdown summary: every one when the observer took
every sample) and those it skipped for a newer one (fresh when behind: taken into the cycle,
not published), the service calls answered.  Variants: ``ours`` (the defaults: ``catch_up``
true, after 10 ms of waiting), ``ours-every`` (``catch_up: false``: every joint state
published, however late) and,
with ``--base``, ``ours@base`` (the node of another checkout, e.g. before the change).  The
variants run in an order that rotates from one run to the next.  So that the node falls behind
whatever else the machine runs, ``--busy`` processes (default: one per core) spin a busy loop
beside each run, at the node's priority: the cores are shared, as on a robot's computer that
also runs its planners.

    python benchmarks/fresh_when_behind.py [--duration 10] [--rate 1000] [--calls 150]
        [--runs 2] [--busy N] [--robot arm7|panda] [--variants ours ours-every] [--base ROOT]
        [--out-dir out/benchmarks]

Writes out/benchmarks/fresh_when_behind.md (and .json).
"""

MEASURES = ('ros_dynamics/ros/dynamics_node', 'ros_dynamics/estimation', 'ros_dynamics/core',
            'urdf/arm7.urdf')

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import node_latency as nl  # noqa: E402  (sets the ROS environment: localhost, its domain id)
from common import docstring_report, log, output, report  # noqa: E402
from vs_pinocchio import (client, commit_of, robot_urdf, start_process,  # noqa: E402
                          trajectory, warm_caches)

import numpy as np  # noqa: E402

from ros_dynamics.ros import compat as ros_compat  # noqa: E402

VARIANTS = {'ours': {}, 'ours-every': {'catch_up': False}}

CALLER = r"""
import json, math, sys, time
import rclpy
from ros_dynamics_msgs.srv import GetDynamics
service, names, rate, seconds, out = sys.argv[1], sys.argv[2].split(','), float(sys.argv[3]), \
    float(sys.argv[4]), sys.argv[5]
rclpy.init()
node = rclpy.create_node('bench_service_caller')
client = node.create_client(GetDynamics, service)
while not client.wait_for_service(timeout_sec=0.5):
    pass
print('READY', flush=True)
counts = {'valid': 0, 'valid_ok': 0, 'malformed': 0, 'malformed_refused': 0, 'unanswered': 0}
kinds = ('unknown', 'short', 'nan')
period, t0, k = 1.0 / rate, time.monotonic(), 0
while time.monotonic() - t0 < seconds:
    req = GetDynamics.Request()
    n = len(names)
    q = [0.1 * math.sin(0.01 * k + i) for i in range(n)]
    req.state.name, req.state.position = list(names), q
    valid = k % 2 == 0
    if not valid:
        kind = kinds[(k // 2) % 3]
        if kind == 'unknown':
            req.state.name = list(names[:-1]) + ['no_such_joint']
        elif kind == 'short':
            req.state.position = q[:-1]
        else:
            req.state.position = q[:-1] + [float('nan')]
    future = client.call_async(req)
    rclpy.spin_until_future_complete(node, future, timeout_sec=2.0)
    key = 'valid' if valid else 'malformed'
    counts[key] += 1
    if not future.done():
        counts['unanswered'] += 1
    elif valid and future.result().success:
        counts['valid_ok'] += 1
    elif not valid and not future.result().success:
        counts['malformed_refused'] += 1
    k += 1
    delay = t0 + k * period - time.monotonic()
    if delay > 0:
        time.sleep(delay)
counts['seconds'] = time.monotonic() - t0
with open(out, 'w') as f:
    json.dump(counts, f)
node.destroy_node()
rclpy.try_shutdown()
"""


def start_caller(ns, names, calls, seconds):
    """The service caller process (CALLER) and where it writes its counts."""
    env = ros_compat.ros_environment(domain_id=nl.DOMAIN_ID, localhost_only=True)
    env['PYTHONPATH'] = os.pathsep.join([nl.REPO_ROOT, env.get('PYTHONPATH', '')])
    out = os.path.join(tempfile.mkdtemp(prefix='rd_caller_'), 'calls.json')
    proc = subprocess.Popen([sys.executable, '-c', CALLER, f'/{ns}/dynamics/get_dynamics',
                             ','.join(names), str(calls), str(seconds), out], env=env,
                            stdout=subprocess.PIPE, text=True)
    return proc, out


def start_busy(n):
    """``n`` processes spinning a busy loop (stopped with :func:`stop_busy`)."""
    return [subprocess.Popen([sys.executable, '-c', 'while True: pass']) for _ in range(n)]


def stop_busy(procs):
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait(timeout=10)


def start_node(variant, ns, xml, duration, base):
    if variant == 'ours@base':
        return start_process(ns, ['-m', 'ros_dynamics.ros.dynamics_node.node'],
                             {'robot_description': xml}, base, duration + 120)
    return nl.start_node_and_subscriber(ns, {'robot_description': xml, **VARIANTS[variant]},
                                        duration + 120)


def run(variant, xml, traj, args, tag):
    """One run: the node, its subscriber, the service caller, the stream (module text)."""
    ns = f'fresh_{variant}_{tag}'.replace('-', '_').replace('@', '_')
    proc, sub, node_log, sub_out = start_node(variant, ns, xml, args.duration, args.base)
    ctx, node, pub, ex = client(ns, tag)
    names, Q, V, E, _ = traj
    caller, calls_out = start_caller(ns, names, args.calls, args.duration + 1.0)
    busy = []
    try:
        nl.wait_until_connected(pub, ex, proc, sub, node_log, 120)
        assert caller.stdout.readline().strip() == 'READY', 'the service caller did not start'
        busy = start_busy(args.busy)
        cpu0 = nl.cpu_seconds(proc.pid)
        sent, elapsed = nl.publish_paced(pub, names, Q, V, E, args.rate)
        cpu = nl.cpu_seconds(proc.pid) - cpu0
        load = os.getloadavg()[0]
        stop_busy(busy)
        caller.wait(timeout=120)
        sub.wait(timeout=args.duration + 150)
    finally:
        stop_busy([b for b in busy if b.poll() is None])
        nl.stop_trial(ex, node, ctx, proc, sub, node_log)
        if caller.poll() is None:
            caller.kill()
    return measured(variant, sent, elapsed, sub_out, calls_out, node_log.name, cpu, load)


def measured(variant, sent, elapsed, sub_out, calls_out, log_path, cpu, load):
    with open(sub_out) as f:
        received = dict((s, t) for s, t in json.load(f))
    lag = np.array([received[s] - s for s in sent if s in received], dtype=float)
    with open(calls_out) as f:
        calls = json.load(f)
    text = open(log_path).read()
    accepted = re.search(r'joint states accepted: (\d+)', text)
    skipped = re.search(r'skipped for a newer one \(fresh when behind\): (\d+)', text)
    return {'variant': variant, 'sent': len(sent), 'send_rate_hz': len(sent) / elapsed,
            'answered_fraction': len(lag) / len(sent),
            'lag_p50_ms': nl.percentile_ms(lag, 50), 'lag_p99_ms': nl.percentile_ms(lag, 99),
            'lag_max_ms': float(lag.max()) * 1e-6 if len(lag) else float('nan'),
            'accepted': int(accepted.group(1)) if accepted else None,
            'skipped': int(skipped.group(1)) if skipped else None,
            'calls': calls, 'calls_hz': (calls['valid'] + calls['malformed']) / calls['seconds'],
            'node_cpu_us_per_joint_state': 1e6 * cpu / len(sent), 'loadavg_1min': load}


def table(results):
    lines = ['| run | variant | answered | lag p50 [ms] | lag p99 [ms] | lag max [ms] | taken into '
             'the cycle / sent | skipped for a newer one | service calls [Hz] (valid ok, '
             'malformed refused, unanswered) | node CPU [us/js] | load |',
             '|---:|---|---:|---:|---:|---:|---|---:|---|---:|---:|']
    for r in results:
        c = r['calls']
        lines.append(f'| {r["run"]} | {r["variant"]} | {100 * r["answered_fraction"]:.1f} % | '
                     f'{r["lag_p50_ms"]:.1f} | {r["lag_p99_ms"]:.1f} | {r["lag_max_ms"]:.1f} | '
                     f'{r["accepted"]} / {r["sent"]} | '
                     f'{r["skipped"] if r["skipped"] is not None else "n/a"} | '
                     f'{r["calls_hz"]:.0f} ({c["valid_ok"]}/{c["valid"]}, '
                     f'{c["malformed_refused"]}/{c["malformed"]}, {c["unanswered"]}) | '
                     f'{r["node_cpu_us_per_joint_state"]:.0f} | {r["loadavg_1min"]:.1f} |')
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--duration', type=float, default=10.0)
    ap.add_argument('--rate', type=float, default=1000.0)
    ap.add_argument('--calls', type=float, default=150.0, help='service calls per second')
    ap.add_argument('--runs', type=int, default=2)
    ap.add_argument('--busy', type=int, default=os.cpu_count() or 1,
                    help='busy-loop processes beside each run (default: one per core)')
    ap.add_argument('--robot', default='arm7', choices=['arm7', 'panda'])
    ap.add_argument('--variants', nargs='+', default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument('--base', metavar='ROOT', help='also the node of this checkout (ours@base)')
    ap.add_argument('--out-dir', default=os.path.join(nl.REPO_ROOT, 'out', 'benchmarks'))
    args = ap.parse_args()
    variants = list(args.variants) + (['ours@base'] if args.base else [])
    with open(robot_urdf(args.robot)) as f:
        xml = f.read()
    traj = trajectory(xml, args.duration, args.rate)
    warm_caches([nl.REPO_ROOT] + ([args.base] if args.base else []))
    head = (f'{args.robot}, {args.rate:g} Hz for {args.duration:g} s per run, ~/get_dynamics '
            f'called at {args.calls:g} Hz (every other request malformed), {args.busy} '
            f'busy-loop processes beside it on {os.cpu_count()} cores'
            + (f'; ours@base: the node of {commit_of(args.base)}' if args.base else ''))
    results = []
    for k in range(args.runs):
        order = variants[k % len(variants):] + variants[:k % len(variants)]
        for v in order:
            log(f'run {k + 1}/{args.runs}: {v} ...')
            r = dict(run(v, xml, traj, args, f'{k}_{os.getpid()}'), run=k + 1)
            results.append(r)
            log(f'  answered {100 * r["answered_fraction"]:.1f} %, lag p99 '
                f'{r["lag_p99_ms"]:.1f} ms, taken {r["accepted"]} of {r["sent"]}, skipped '
                f'{r["skipped"]}, calls {r["calls_hz"]:.0f} Hz, load {r["loadavg_1min"]:.1f}')
    path = report(output(args.out_dir, 'fresh_when_behind.md'),
                  docstring_report(__doc__, body=f'{head}.\n\n' + '\n'.join(table(results))))
    with open(path[:-3] + '.json', 'w') as f:
        json.dump({'head': head, 'runs': results}, f, indent=2)


if __name__ == '__main__':
    main()
