#!/usr/bin/env python3
"""Soak: dynamics_node fed at 1 kHz for a long time (default 10 min) with the observer on.

One dynamics_node process (bundled 7-DoF arm, observer on, ~/christoffel every 10th state), one
subscriber process on ~/dynamics (a plain rclpy node, as a user would write it) and this process
publishing sensor_msgs/JointState at --rate Hz for --duration s: a smooth free-motion trajectory
whose efforts are its inverse dynamics (so the observer integrates every sample and no contact is
detected); stamp = wall-clock publish time. Reported:

* the node's resident memory (VmRSS from /proc/<pid>/status, sampled every --sample s): at the
  start of publishing, after 1 minute and at the end, and the least-squares slope in kB/min from
  minute 1 to the end (the first minute holds allocator and DDS warm-up);
* the node's CPU share over the publishing window (utime + stime of all threads; 100 % = one
  core) and the machine's load average;
* the fraction of joint states answered on ~/dynamics, the number of misses and how they cluster
  (runs of consecutive misses: a queue overflow drops a run, a slow cycle a single message);
  latency p50/p99/max from publish to receipt in the subscriber process.

Results go to benchmarks/results/soak_<tag>.json and .md (tag: --tag, default the duration).
Run:  .venv/bin/python benchmarks/soak.py [--duration 600] [--rate 1000] [--model arm7]

The ROS environment is set here (loopback only, a random ROS_DOMAIN_ID). Not part of the suite.
"""
import argparse
import json
import os
import subprocess
import sys
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO_ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from node_latency import (DOMAIN_ID, cpu_seconds, model_source, percentile_ms,  # noqa: E402
                          start_node_and_subscriber)

import numpy as np  # noqa: E402

import ros_dynamics as rd  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'results')


def rss_kb(pid):
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    return -1


def miss_runs(sent, received):
    """Lengths of the runs of consecutive unanswered joint states."""
    runs, cur = [], 0
    for s in sent:
        if s in received:
            if cur:
                runs.append(cur)
            cur = 0
        else:
            cur += 1
    if cur:
        runs.append(cur)
    return runs


def soak(args):
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState

    xml = model_source(args.model)
    ns = f'soak_{os.getpid()}'
    params = {'robot_description': xml, 'log_throttle_sec': 5.0, 'observer_enabled': True,
              'christoffel_decimation': 10, 'executor': args.executor}
    proc, sub, log, sub_out = start_node_and_subscriber(ns, params, args.duration + 120)
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node('soak_client', context=ctx)
    pub = node.create_publisher(JointState, f'/{ns}/joint_states',
                                QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(node)
    rss = []        # (t since start of publishing [s], kB)
    try:
        end = time.monotonic() + 120
        while time.monotonic() < end and not pub.get_subscription_count():
            ex.spin_once(timeout_sec=0.05)
            if proc.poll() is not None:
                raise RuntimeError('node died: ' + open(log.name).read())
        assert sub.stdout.readline().strip() == 'READY', 'subscriber did not start'
        time.sleep(1.0)

        model = rd.load_urdf(xml)
        names = list(model.joint_names)
        n = len(names)
        amp = np.linspace(0.3, 0.8, n)
        w = 2 * np.pi * 0.5              # one period = 2 s, replayed for the whole soak
        period_steps = int(round(args.rate * 2.0))
        T = np.arange(period_steps)[:, None] / args.rate
        Q, V, A = amp * np.sin(w * T), amp * w * np.cos(w * T), -amp * w * w * np.sin(w * T)
        E = np.array([rd.inverse_dynamics(model, Q[k], V[k], A[k]) for k in range(period_steps)])
        Q, V, E = Q.tolist(), V.tolist(), E.tolist()
        steps = int(round(args.duration * args.rate))
        sent = np.empty(steps, dtype=np.int64)
        msg = JointState()
        msg.name = names
        period = 1.0 / args.rate
        cpu0 = cpu_seconds(proc.pid)
        t0 = time.monotonic()
        next_sample = 0.0
        for k in range(steps):
            now = time.monotonic() - t0
            if now >= next_sample:
                rss.append((now, rss_kb(proc.pid)))
                next_sample += args.sample
                if proc.poll() is not None:
                    raise RuntimeError('node died: ' + open(log.name).read())
            delay = k * period - now
            if delay > 0:
                time.sleep(delay)
            j = k % period_steps
            msg.position, msg.velocity, msg.effort = Q[j], V[j], E[j]
            stamp = time.time_ns()
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp, 1_000_000_000)
            pub.publish(msg)
            sent[k] = stamp
        elapsed = time.monotonic() - t0
        cpu1 = cpu_seconds(proc.pid)
        rss.append((elapsed, rss_kb(proc.pid)))
        load = os.getloadavg()
        sub.wait(timeout=180)
    finally:
        ex.shutdown()
        node.destroy_node()
        ctx.try_shutdown()
        proc.send_signal(2)
        try:
            rc = proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = 'killed'
        if sub.poll() is None:
            sub.kill()
        log.close()
    with open(sub_out) as f:
        received = dict((s, t) for s, t in json.load(f))
    sent_l = sent.tolist()
    lat = np.array([received[s] - s for s in sent_l if s in received], dtype=float)
    runs = miss_runs(sent_l, received)
    t = np.array([x[0] for x in rss])
    kb = np.array([x[1] for x in rss], dtype=float)
    after = t >= 60.0
    slope = (float(np.polyfit(t[after] / 60.0, kb[after], 1)[0]) if after.sum() >= 3
             else float('nan'))
    at_1min = float(kb[np.argmin(np.abs(t - 60.0))]) if len(t) else float('nan')
    node_log = open(log.name).read()
    return {
        'model': args.model, 'executor': args.executor, 'duration_s': elapsed,
        'rate_hz': args.rate, 'sent': steps, 'send_rate_hz': steps / elapsed,
        'answered': len(lat), 'answered_fraction': len(lat) / steps,
        'missed': steps - len(lat), 'miss_runs': len(runs),
        'longest_miss_run': max(runs) if runs else 0,
        'misses_in_runs_of_10_or_more': sum(r for r in runs if r >= 10),
        'p50_ms': percentile_ms(lat, 50), 'p99_ms': percentile_ms(lat, 99),
        'max_ms': float(lat.max()) * 1e-6 if len(lat) else float('nan'),
        'rss_kb_start': float(kb[0]), 'rss_kb_1min': at_1min, 'rss_kb_end': float(kb[-1]),
        'rss_kb_max': float(kb.max()), 'rss_slope_kb_per_min_after_1min': slope,
        'rss_samples': [[round(a, 1), int(b)] for a, b in rss],
        'node_cpu_percent': 100.0 * (cpu1 - cpu0) / elapsed,
        'loadavg_1_5_15_at_end': list(load), 'cores': os.cpu_count(),
        'node_exit_status': rc, 'node_log_warnings': sum(
            1 for line in node_log.splitlines() if '[WARN]' in line or '[ERROR]' in line),
        'node_log_tail': node_log.splitlines()[-15:],
    }


def write_md(res, path):
    lines = [
        f'# Soak: dynamics_node at {res["rate_hz"]:.0f} Hz for {res["duration_s"] / 60:.1f} min',
        '', f'Model {res["model"]}, executor {res["executor"]}, observer on, ~/christoffel every '
        f'10th state; {res["cores"]} cores, load average at the end '
        f'{res["loadavg_1_5_15_at_end"][0]:.2f} / {res["loadavg_1_5_15_at_end"][1]:.2f} / '
        f'{res["loadavg_1_5_15_at_end"][2]:.2f} (1/5/15 min; other work shared the machine).',
        '', '| quantity | value |', '|---|---|',
        f'| joint states sent (actual rate) | {res["sent"]} ({res["send_rate_hz"]:.1f} Hz) |',
        f'| answered on ~/dynamics | {res["answered"]} ({100 * res["answered_fraction"]:.3f} %) |',
        f'| missed / runs of misses / longest run | {res["missed"]} / {res["miss_runs"]} / '
        f'{res["longest_miss_run"]} |',
        f'| latency p50 / p99 / max | {res["p50_ms"]:.2f} / {res["p99_ms"]:.2f} / '
        f'{res["max_ms"]:.1f} ms |',
        f'| RSS start / 1 min / end (max) | {res["rss_kb_start"] / 1024:.1f} / '
        f'{res["rss_kb_1min"] / 1024:.1f} / {res["rss_kb_end"] / 1024:.1f} '
        f'({res["rss_kb_max"] / 1024:.1f}) MB |',
        f'| RSS slope after the first minute | {res["rss_slope_kb_per_min_after_1min"]:.1f} '
        'kB/min |',
        f'| node CPU share | {res["node_cpu_percent"]:.1f} % of one core |',
        f'| node exit status / warnings logged | {res["node_exit_status"]} / '
        f'{res["node_log_warnings"]} |', '']
    with open(path, 'w') as f:
        f.write('\n'.join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--duration', type=float, default=600.0, help='seconds of publishing')
    ap.add_argument('--rate', type=float, default=1000.0)
    ap.add_argument('--model', default='arm7', help='arm7 or chainN')
    ap.add_argument('--executor', default='events', choices=('events', 'single'))
    ap.add_argument('--sample', type=float, default=5.0, help='RSS sampling period (s)')
    ap.add_argument('--tag', default=None, help='results file tag (default: <duration>s)')
    args = ap.parse_args()
    print(f'ROS_DOMAIN_ID={DOMAIN_ID}, localhost only; {args.duration:.0f} s at {args.rate:.0f} '
          f'Hz; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores', flush=True)
    res = soak(args)
    tag = args.tag or f'{int(args.duration)}s'
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, f'soak_{tag}.json'), 'w') as f:
        json.dump(res, f, indent=2)
    write_md(res, os.path.join(RESULTS, f'soak_{tag}.md'))
    print(open(os.path.join(RESULTS, f'soak_{tag}.md')).read())


if __name__ == '__main__':
    main()
