#!/usr/bin/env python3
"""Python-level memory of dynamics_node over a long run: does anything grow per message?

Companion of benchmarks/soak.py (which sees only the process RSS). Here a DynamicsNode runs in
this process under rclpy's EventsExecutor (as dynamics_node runs it), fed over loopback DDS by a
publisher node in the same process (its own thread) at --rate Hz with the soak's free-motion
trajectory (observer on, ~/christoffel every 10th state), and a subscriber on ~/dynamics counts
the answers. With tracemalloc on (it slows every allocation, hence a modest rate) it takes a
snapshot after --warmup s and one at the end and lists the source lines whose live allocations
grew most in between, with the number of joint states processed in between: a per-message leak
shows up as growth proportional to that number. sys.getallocatedblocks() (the interpreter's
live object blocks) and gc object counts are sampled every --sample s.

Run:  python benchmarks/soak_pymem.py [--duration 300] [--rate 300] [--warmup 60]
Writes out/benchmarks/soak_pymem.json and .md (--out-dir DIR). Not part of the suite.
"""

MEASURES = ('ros_dynamics/core', 'ros_dynamics/estimation', 'ros_dynamics/ros/dynamics_node',
            'urdf/arm7.urdf')

import argparse
import gc
import json
import os
import sys
import threading
import time
import tracemalloc

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO_ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from node_latency import DOMAIN_ID, model_source  # noqa: E402  (sets the ROS environment)

import numpy as np  # noqa: E402

import ros_dynamics as rd  # noqa: E402
from common import RESULTS, output, report  # noqa: E402


def trajectory(model, rate):
    """One 2-s period of the soak's free-motion trajectory (positions, velocities, efforts)."""
    n = model.nv
    amp = np.linspace(0.3, 0.8, n)
    w = 2 * np.pi * 0.5
    steps = int(round(rate * 2.0))
    T = np.arange(steps)[:, None] / rate
    Q, V, A = amp * np.sin(w * T), amp * w * np.cos(w * T), -amp * w * w * np.sin(w * T)
    E = np.array([rd.inverse_dynamics(model, Q[k], V[k], A[k]) for k in range(steps)])
    return Q.tolist(), V.tolist(), E.tolist()


def type_counts():
    """{type name: number} of the objects the collector tracks (not the frozen ones)."""
    out = {}
    for obj in gc.get_objects():
        k = type(obj).__module__ + '.' + type(obj).__qualname__
        out[k] = out.get(k, 0) + 1
    return out


def rss_kb():
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    return -1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--duration', type=float, default=300.0)
    ap.add_argument('--rate', type=float, default=300.0)
    ap.add_argument('--warmup', type=float, default=60.0, help='first snapshot after this (s)')
    ap.add_argument('--sample', type=float, default=10.0)
    ap.add_argument('--frames', type=int, default=8, help='tracemalloc traceback depth')
    ap.add_argument('--tag', default='pymem')
    ap.add_argument('--out-dir', default=RESULTS, help='default: out/benchmarks/')
    args = ap.parse_args()

    import rclpy
    from rclpy.experimental import EventsExecutor
    from rclpy.parameter import Parameter
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from ros_dynamics_msgs.msg import Dynamics
    from sensor_msgs.msg import JointState

    from ros_dynamics.ros.dynamics_node.node import DynamicsNode

    xml = model_source('arm7')
    model = rd.load_urdf(xml)
    Q, V, E = trajectory(model, args.rate)
    tracemalloc.start(args.frames)
    rclpy.init()
    node = DynamicsNode(namespace='/pymem', parameter_overrides=[
        Parameter('robot_description', value=xml), Parameter('log_throttle_sec', value=5.0),
        Parameter('observer_enabled', value=True), Parameter('christoffel_decimation', value=10)])
    client = rclpy.create_node('pymem_client')
    qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
    pub = client.create_publisher(JointState, '/pymem/joint_states', qos)
    got = [0]
    client.create_subscription(Dynamics, '/pymem/dynamics/dynamics',
                               lambda m: got.__setitem__(0, got[0] + 1), qos)
    gc.collect()
    gc.freeze()   # as dynamics_node's main() does
    ex = EventsExecutor()
    ex.add_node(node)
    ex.add_node(client)
    while not pub.get_subscription_count():
        ex.spin_once(timeout_sec=0.05)
    stop = threading.Event()
    sent = [0]

    def publish():
        msg = JointState()
        msg.name = list(model.joint_names)
        period = 1.0 / args.rate
        t0 = time.monotonic()
        k = 0
        while not stop.is_set():
            delay = t0 + k * period - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            j = k % len(Q)
            msg.position, msg.velocity, msg.effort = Q[j], V[j], E[j]
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(time.time_ns(),
                                                                   1_000_000_000)
            pub.publish(msg)
            k += 1
            sent[0] = k

    def sample(t):
        return {'t': round(t, 1), 'sent': sent[0], 'accepted': node.stats['accepted'],
                'answered': got[0], 'allocated_blocks': sys.getallocatedblocks(),
                'gc_objects': len(gc.get_objects()),
                'traced_kb': tracemalloc.get_traced_memory()[0] // 1024, 'rss_kb': rss_kb()}

    feeder = threading.Thread(target=publish, daemon=True)
    t0 = time.monotonic()
    feeder.start()
    samples, snap1, at1 = [], None, None
    next_sample = 0.0
    while True:
        now = time.monotonic() - t0
        if now >= args.duration:
            break
        ex.spin_once(timeout_sec=0.05)
        if now >= next_sample:
            samples.append(sample(now))
            next_sample += args.sample
        if snap1 is None and now >= args.warmup:
            gc.collect()
            snap1 = tracemalloc.take_snapshot()
            types1 = type_counts()
            # the baseline of the counts is taken after the snapshot (which holds objects)
            at1 = sample(time.monotonic() - t0)
            samples.append(at1)
    stop.set()
    feeder.join()
    gc.collect()
    end = sample(time.monotonic() - t0)
    samples.append(end)
    types2 = type_counts()
    snap2 = tracemalloc.take_snapshot()
    type_growth = sorted(((n - types1.get(k, 0), k) for k, n in types2.items()), reverse=True)
    ignore = [tracemalloc.Filter(False, tracemalloc.__file__),
              tracemalloc.Filter(False, '<frozen importlib._bootstrap*>')]
    diff = snap2.filter_traces(ignore).compare_to(snap1.filter_traces(ignore), 'traceback')
    msgs = end['accepted'] - at1['accepted']
    top = []
    for st in diff[:15]:
        top.append({'size_diff_bytes': st.size_diff, 'count_diff': st.count_diff,
                    'size_bytes': st.size, 'count': st.count,
                    'traceback': [f'{f.filename}:{f.lineno}' for f in st.traceback][-6:]})
    growth = sum(st.size_diff for st in diff)
    ex.shutdown()
    node.destroy_node()
    client.destroy_node()
    rclpy.try_shutdown()
    res = {'domain_id': DOMAIN_ID, 'rate_hz': args.rate, 'duration_s': end['t'],
           'warmup_s': args.warmup, 'at_warmup': at1, 'at_end': end,
           'messages_between_snapshots': msgs,
           'traced_growth_bytes': growth,
           'traced_growth_bytes_per_1000_messages': 1000.0 * growth / max(msgs, 1),
           'allocated_blocks_growth': end['allocated_blocks'] - at1['allocated_blocks'],
           'gc_objects_growth': end['gc_objects'] - at1['gc_objects'],
           'gc_type_growth': [[k, d] for d, k in type_growth[:15] if d],
           'top_growth': top, 'samples': samples}
    lines = [
        f'# Python-level memory of dynamics_node, in-process, {args.rate:.0f} Hz for '
        f'{end["t"] / 60:.1f} min (tracemalloc on)', '',
        f'Snapshots after {at1["t"]:.0f} s and at the end, {msgs} joint states accepted in '
        f'between ({end["accepted"]} of {end["sent"]} sent in all, {end["answered"]} answers '
        'received).', '',
        '| quantity | after warm-up | end | growth |', '|---|---|---|---|']
    for key in ('traced_kb', 'allocated_blocks', 'gc_objects', 'rss_kb'):
        lines.append(f'| {key} | {at1[key]} | {end[key]} | {end[key] - at1[key]:+d} |')
    per = res['traced_growth_bytes_per_1000_messages']
    lines += ['', f'Traced growth {growth / 1024:+.1f} kB = {per:+.1f} bytes per 1000 joint '
              'states. Largest differences by traceback (innermost frame first):', '']
    for row in top[:10]:
        lines.append(f'- {row["size_diff_bytes"] / 1024:+.1f} kB ({row["count_diff"]:+d} blocks; '
                     f'{row["size_bytes"] / 1024:.1f} kB live): '
                     + ' <- '.join(reversed(row['traceback'][-3:])))
    lines += ['', 'Objects tracked by the collector, growth by type: ' + (', '.join(
        f'{k} {d:+d}' for k, d in res['gc_type_growth'][:8]) or 'none') + '.', '']
    path = report(output(args.out_dir, f'soak_{args.tag}.md'), '\n'.join(lines))
    with open(path[:-3] + '.json', 'w') as f:
        json.dump(res, f, indent=2)


if __name__ == '__main__':
    main()
