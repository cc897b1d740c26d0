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

The resident memory is also split by kind (RssAnon, RssFile, the brk heap, anonymous mappings)
and the mappings whose RSS grew are listed (from /proc/<pid>/smaps). Options for diagnosis:
--param NAME=VALUE sets a node parameter (e.g. qos_depth=10 input_qos_depth=10);
--stall-every S injects a stall of the node or the subscriber (SIGSTOP, SIGCONT after
--stall-lengths s) every S s, a reproducible stand-in for the stalls of a loaded machine.

Results go to out/benchmarks/soak_<tag>.json and .md (--out-dir DIR; tag: --tag, default the
duration).
Run:  .venv/bin/python benchmarks/soak.py [--duration 600] [--rate 1000] [--model arm7]

The ROS environment is set here (loopback only, a random ROS_DOMAIN_ID). Not part of the suite.
"""

MEASURES = ('ros_dynamics/core', 'ros_dynamics/estimation', 'ros_dynamics/ros/dynamics_node',
            'urdf/arm7.urdf')

import argparse
import json
import os
import signal
import sys
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO_ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from node_latency import (DOMAIN_ID, cpu_seconds, model_source, percentile_ms,  # noqa: E402
                          start_node_and_subscriber, stop_trial, wait_until_connected)

import numpy as np  # noqa: E402

import ros_dynamics as rd  # noqa: E402
from common import RESULTS, output, report  # noqa: E402


def rss_kb(pid):
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    return -1


def memory_kb(pid):
    """Resident memory of a process by kind (kB), from /proc/<pid>/status and smaps:
    rss, anon (RssAnon), file (RssFile), heap (the brk heap: glibc's main malloc arena),
    anon_map (anonymous mappings: thread malloc arenas, Python arenas, large arrays, DDS pools)."""
    out = {}
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            key = line.split(':')[0]
            if key in ('VmRSS', 'RssAnon', 'RssFile'):
                out[{'VmRSS': 'rss', 'RssAnon': 'anon', 'RssFile': 'file'}[key]] = int(
                    line.split()[1])
    maps = smaps(pid)
    out['heap'] = sum(m['rss'] for m in maps.values() if m['name'] == '[heap]')
    out['anon_map'] = sum(m['rss'] for m in maps.values() if m['name'] == '')
    return out


def smaps(pid):
    """{start address: {'name', 'size', 'rss'}} of every mapping (sizes in kB)."""
    maps, cur = {}, None
    with open(f'/proc/{pid}/smaps') as f:
        for line in f:
            head = line.split(None, 1)[0]
            if '-' in head and not head.endswith(':'):
                fields = line.split(None, 5)
                cur = {'name': fields[5].strip() if len(fields) > 5 else '', 'size': 0,
                       'rss': 0, 'perm': fields[1]}
                maps[head.split('-')[0]] = cur
            elif head == 'Size:':
                cur['size'] = int(line.split()[1])
            elif head == 'Rss:':
                cur['rss'] = int(line.split()[1])
    return maps


def smaps_growth(before, after, top=12):
    """The mappings whose RSS grew most between two smaps() snapshots."""
    rows = []
    for addr, m in after.items():
        old = before.get(addr, {'rss': 0})['rss']
        if m['rss'] != old:
            rows.append({'addr': addr, 'name': m['name'] or '[anon]', 'perm': m['perm'],
                         'size_kb': m['size'], 'rss_kb_before': old, 'rss_kb_after': m['rss']})
    gone = sum(m['rss'] for a, m in before.items() if a not in after)
    rows.sort(key=lambda r: r['rss_kb_before'] - r['rss_kb_after'])
    return {'top': rows[:top], 'total_kb': sum(r['rss_kb_after'] - r['rss_kb_before']
                                               for r in rows) - gone,
            'unmapped_rss_kb': gone}


def parse_params(items):
    """--param name=value (value parsed as YAML: 10, 0.5, true, [1, 2]) -> dict."""
    import yaml
    out = {}
    for item in items:
        name, sep, value = item.partition('=')
        if not sep or not name:
            raise SystemExit(f'--param {item!r}: expected name=value')
        out[name] = yaml.safe_load(value)
    return out


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


def slope_after(t, kb, start=60.0):
    """Least-squares slope in kB/min of the samples from ``start`` s on."""
    t, kb = np.asarray(t, dtype=float), np.asarray(kb, dtype=float)
    after = t >= start
    return float(np.polyfit(t[after] / 60.0, kb[after], 1)[0]) if after.sum() >= 3 \
        else float('nan')


def soak(args):
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState

    xml = model_source(args.model)
    ns = f'soak_{os.getpid()}'
    params = {'robot_description': xml, 'log_throttle_sec': 5.0, 'observer_enabled': True,
              'christoffel_decimation': 10, 'executor': args.executor, **args.params}
    proc, sub, log, sub_out = start_node_and_subscriber(ns, params, args.duration + 120)
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node('soak_client', context=ctx)
    pub = node.create_publisher(JointState, f'/{ns}/joint_states',
                                QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(node)
    rss = []        # (t since start of publishing [s], kB)
    mem = []        # (t, memory_kb()) at the same instants
    snaps = {}      # smaps() at the start, after 1 minute and at the end
    stalls = []     # (t, target, length s) of the injected stalls (SIGSTOP ... SIGCONT)
    stall_lengths = [float(x) for x in args.stall_lengths.split(',')] if args.stall_every else []
    stall_targets = args.stall_target.split(',')
    pids_of = {'node': [proc.pid], 'subscriber': [sub.pid], 'both': [proc.pid, sub.pid]}
    try:
        wait_until_connected(pub, ex, proc, sub, log, 120)

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
        publish_failed = 0   # joint states this process could not publish (counted as missed)
        next_stall, resume_at = (args.stall_every if args.stall_every else float('inf')), None
        snaps['start'] = smaps(proc.pid)
        for k in range(steps):
            now = time.monotonic() - t0
            if resume_at is not None and now >= resume_at:
                for pid in stall_pids:
                    os.kill(pid, signal.SIGCONT)
                resume_at = None
            elif resume_at is None and now >= next_stall:
                i = len(stalls)   # lengths in turn, each cycle of lengths for the next target
                length = stall_lengths[i % len(stall_lengths)]
                target = stall_targets[(i // len(stall_lengths)) % len(stall_targets)]
                stall_pids = pids_of[target]
                for pid in stall_pids:
                    os.kill(pid, signal.SIGSTOP)
                stalls.append((round(now, 2), target, length))
                resume_at = now + length
                next_stall += args.stall_every
            if now >= next_sample:
                rss.append((now, rss_kb(proc.pid)))
                mem.append((now, memory_kb(proc.pid)))
                if 'minute' not in snaps and now >= 60.0:
                    snaps['minute'] = smaps(proc.pid)
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
            try:
                pub.publish(msg)
            except RuntimeError:   # RCLError: Fast DDS refused the sample (reader stalled)
                publish_failed += 1
            sent[k] = stamp
        if resume_at is not None:
            for pid in stall_pids:
                os.kill(pid, signal.SIGCONT)
        elapsed = time.monotonic() - t0
        cpu1 = cpu_seconds(proc.pid)
        rss.append((elapsed, rss_kb(proc.pid)))
        mem.append((elapsed, memory_kb(proc.pid)))
        snaps['end'] = smaps(proc.pid)
        load = os.getloadavg()
        sub.wait(timeout=180)
    finally:
        for child in (proc, sub):   # never leave a stopped process behind (injected stalls)
            if child.poll() is None:
                child.send_signal(signal.SIGCONT)
        rc = stop_trial(ex, node, ctx, proc, sub, log, timeout=15.0)
    with open(sub_out) as f:
        received = dict((s, t) for s, t in json.load(f))
    sent_l = sent.tolist()
    lat = np.array([received[s] - s for s in sent_l if s in received], dtype=float)
    runs = miss_runs(sent_l, received)
    t = np.array([x[0] for x in rss])
    kb = np.array([x[1] for x in rss], dtype=float)
    slope = slope_after(t, kb)
    at_1min = float(kb[np.argmin(np.abs(t - 60.0))]) if len(t) else float('nan')
    node_log = open(log.name).read()
    kinds = ('anon', 'file', 'heap', 'anon_map')
    return {
        'model': args.model, 'executor': args.executor, 'params': args.params,
        'stalls': stalls, 'duration_s': elapsed,
        'rate_hz': args.rate, 'sent': steps, 'send_rate_hz': steps / elapsed,
        'answered': len(lat), 'answered_fraction': len(lat) / steps,
        'missed': steps - len(lat), 'publish_failed_in_benchmark': publish_failed,
        'miss_runs': len(runs),
        'longest_miss_run': max(runs) if runs else 0,
        'misses_in_runs_of_10_or_more': sum(r for r in runs if r >= 10),
        'p50_ms': percentile_ms(lat, 50), 'p99_ms': percentile_ms(lat, 99),
        'max_ms': float(lat.max()) * 1e-6 if len(lat) else float('nan'),
        'rss_kb_start': float(kb[0]), 'rss_kb_1min': at_1min, 'rss_kb_end': float(kb[-1]),
        'rss_kb_max': float(kb.max()), 'rss_slope_kb_per_min_after_1min': slope,
        'rss_samples': [[round(a, 1), int(b)] for a, b in rss],
        'memory_kinds_kb': {kind: [m[kind] for _, m in mem] for kind in kinds},
        'memory_kinds_slope_kb_per_min_after_1min': {kind: slope_after(
            t[:len(mem)], [m[kind] for _, m in mem]) for kind in kinds},
        'smaps_growth_start_to_1min': (smaps_growth(snaps['start'], snaps['minute'])
                                       if 'minute' in snaps else None),
        'smaps_growth_1min_to_end': (smaps_growth(snaps['minute'], snaps['end'])
                                     if 'minute' in snaps else None),
        'node_cpu_percent': 100.0 * (cpu1 - cpu0) / elapsed,
        'loadavg_1_5_15_at_end': list(load), 'cores': os.cpu_count(),
        'node_exit_status': rc, 'node_log_warnings': sum(
            1 for line in node_log.splitlines() if '[WARN]' in line or '[ERROR]' in line),
        'node_log_tail': node_log.splitlines()[-15:],
    }


def first_stall_cycle(res):
    """(t, RSS kB, slope kB/min from t on) at the end of the first cycle of injected stalls
    (every length on every target once, plus 5 s), or None if the run ended before."""
    stalls = res['stalls']
    n = len({s[2] for s in stalls}) * len({s[1] for s in stalls})
    if len(stalls) <= n:
        return None
    t_end = stalls[n - 1][0] + stalls[n - 1][2] + 5.0
    t = np.array([x[0] for x in res['rss_samples']])
    kb = np.array([x[1] for x in res['rss_samples']], dtype=float)
    i = int(np.searchsorted(t, t_end))
    return float(t[i]), float(kb[i]), slope_after(t, kb, start=t[i])


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
        f'| joint states the benchmark could not publish (in "missed") | '
        f'{res.get("publish_failed_in_benchmark", 0)} |',
        f'| latency p50 / p99 / max | {res["p50_ms"]:.2f} / {res["p99_ms"]:.2f} / '
        f'{res["max_ms"]:.1f} ms |',
        f'| RSS start / 1 min / end (max) | {res["rss_kb_start"] / 1024:.1f} / '
        f'{res["rss_kb_1min"] / 1024:.1f} / {res["rss_kb_end"] / 1024:.1f} '
        f'({res["rss_kb_max"] / 1024:.1f}) MB |',
        f'| RSS slope after the first minute | {res["rss_slope_kb_per_min_after_1min"]:.1f} '
        'kB/min |',
        f'| node CPU share | {res["node_cpu_percent"]:.1f} % of one core |',
        f'| node exit status / warnings logged | {res["node_exit_status"]} / '
        f'{res["node_log_warnings"]} |']
    if res.get('params'):
        lines.insert(3, 'Node parameters set: ' + ', '.join(
            f'`{k}: {v}`' for k, v in res['params'].items()) + '.')
        lines.insert(3, '')
    if res.get('stalls'):
        cyc = first_stall_cycle(res)
        if cyc is not None:
            lines.append(f'| RSS after the first cycle of stalls ({cyc[0]:.0f} s) / end, slope '
                         f'from there | {cyc[1] / 1024:.1f} / {res["rss_kb_end"] / 1024:.1f} MB, '
                         f'{cyc[2]:.1f} kB/min |')
        lens = sorted({s[2] for s in res['stalls']})
        targets = ' and '.join(dict.fromkeys(s[1] for s in res['stalls']))
        lines[3:3] = ['', f'{len(res["stalls"])} stalls injected into the {targets} '
                      f'(SIGSTOP/SIGCONT, {", ".join(f"{x:g}" for x in lens)} s in turn).']
    kinds = res.get('memory_kinds_kb')
    if kinds:
        sl = res['memory_kinds_slope_kb_per_min_after_1min']
        lines.append('| RSS by kind, start / end (slope after 1 min) | ' + '; '.join(
            f'{k} {v[0] / 1024:.1f} / {v[-1] / 1024:.1f} MB ({sl[k]:.1f} kB/min)'
            for k, v in kinds.items()) + ' |')
        g = res['smaps_growth_1min_to_end'] or {'top': []}
        lines.append('| mappings whose RSS grew after 1 min (top 4) | ' + '; '.join(
            f'{r["name"]} ({r["size_kb"]} kB mapped) '
            f'+{r["rss_kb_after"] - r["rss_kb_before"]} kB'
            for r in g['top'][:4] if r['rss_kb_after'] > r['rss_kb_before']) + ' |')
    lines.append('')
    return report(path, '\n'.join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--duration', type=float, default=600.0, help='seconds of publishing')
    ap.add_argument('--rate', type=float, default=1000.0)
    ap.add_argument('--model', default='arm7', help='arm7 or chainN')
    ap.add_argument('--executor', default='events', choices=('events', 'single'))
    ap.add_argument('--sample', type=float, default=5.0, help='RSS sampling period (s)')
    ap.add_argument('--tag', default=None, help='results file tag (default: <duration>s)')
    ap.add_argument('--out-dir', default=RESULTS, help='default: out/benchmarks/')
    ap.add_argument('--param', action='append', default=[], metavar='NAME=VALUE',
                    help='node parameter (value in YAML), e.g. --param qos_depth=10; repeatable')
    ap.add_argument('--stall-every', type=float, default=0.0, metavar='S',
                    help='inject a stall every S s (SIGSTOP, then SIGCONT): a reproducible '
                    'stand-in for the stalls of a loaded machine; 0: none (default)')
    ap.add_argument('--stall-lengths', default='0.25,0.5,1.0', metavar='L1,L2,...',
                    help='stall lengths in s, used in turn')
    ap.add_argument('--stall-target', default='node', metavar='T1,T2,...',
                    help="node, subscriber or both; a list: each cycle of lengths stalls the next")
    args = ap.parse_args()
    args.params = parse_params(args.param)
    print(f'ROS_DOMAIN_ID={DOMAIN_ID}, localhost only; {args.duration:.0f} s at {args.rate:.0f} '
          f'Hz; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores', flush=True)
    res = soak(args)
    tag = args.tag or f'{int(args.duration)}s'
    md_path = write_md(res, output(args.out_dir, f'soak_{tag}.md'))
    with open(md_path[:-3] + '.json', 'w') as f:
        json.dump(res, f, indent=2)


if __name__ == '__main__':
    main()
