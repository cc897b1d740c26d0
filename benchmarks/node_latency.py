#!/usr/bin/env python3
"""Latency, throughput and CPU cost of dynamics_node over loopback DDS.

For each model (bundled 7-DoF arm, 30-DoF serial chain) and each rclpy executor of the node
(`single`: SingleThreadedExecutor, `events`: rclpy's experimental EventsExecutor) this starts
dynamics_node as one process and a subscriber on ~/dynamics as another (a plain rclpy node with
the default SingleThreadedExecutor, as a user would write it), publishes sensor_msgs/JointState
at --rate Hz (default 1 kHz) for --duration s (default 10 s; stamp = wall-clock publish time,
efforts filled so the observer runs) from this process, and reports the fraction of joint
states answered on ~/dynamics (free motion: the efforts are the inverse dynamics of the joint
trajectory), the p50/p99/max latency from joint-state publish to ~/dynamics received in the
subscriber process, and the node's CPU use over the publishing window from /proc/<pid>/stat
(utime + stime, all threads; 100 % = one core).  The cycle in-process, by piece:
benchmarks/node_cycle.py (--breakdown); the node against a Pinocchio node and an empty relay:
benchmarks/vs_pinocchio.py.  The helpers here (the subscriber process, /proc CPU, paced
publishing) are shared by vs_pinocchio.py and soak.py.

The ROS environment is set here (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST, a random
ROS_DOMAIN_ID, the library path of the pip ROS wheels). Run:

    python benchmarks/node_latency.py [--duration 10] [--rate 1000] [--runs 2]
        [--models arm7 chain30] [--executors single events] [--christoffel-decimation 10]

Writes out/benchmarks/node_latency.md and .json (--out-dir).
"""

MEASURES = ('ros_dynamics/core', 'ros_dynamics/estimation', 'ros_dynamics/ros/dynamics_node',
            'urdf/arm7.urdf')

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO_ROOT)

from ros_dynamics.ros import compat as ros_compat  # noqa: E402

DOMAIN_ID = int(os.environ.get('ROS_DYNAMICS_BENCH_DOMAIN_ID') or random.randint(1, 100))
os.environ.update(ros_compat.ros_environment(domain_id=DOMAIN_ID, localhost_only=True))

import numpy as np  # noqa: E402
import yaml  # noqa: E402

import ros_dynamics as rd  # noqa: E402


def model_source(name):
    if name == 'arm7':
        with open(os.path.join(REPO_ROOT, 'urdf', 'arm7.urdf')) as f:
            return f.read()
    if name.startswith('chain'):
        n = int(name[len('chain'):])
        try:
            from ros_dynamics.testing import chain
            return chain(n)
        except ImportError:
            return _tiny_chain(n)
    raise SystemExit(f'unknown model {name!r} (arm7 or chainN)')


def _tiny_chain(n):
    """Fallback serial chain of n revolute joints (if ros_dynamics.testing is missing)."""
    parts = ['<?xml version="1.0"?>', f'<robot name="chain_{n}">']
    inertial = ('<inertial><origin xyz="0.05 0.01 0.1"/><mass value="1.0"/>'
                '<inertia ixx="0.02" ixy="0.001" ixz="0" iyy="0.03" iyz="0" izz="0.01"/>'
                '</inertial>')
    parts.append(f'<link name="base">{inertial}</link>')
    axes = ('1 0 0', '0 1 0', '0 0 1')
    for i in range(n):
        parent = 'base' if i == 0 else f'link_{i - 1}'
        parts.append(f'<link name="link_{i}">{inertial}</link>')
        parts.append(f'<joint name="joint_{i}" type="revolute"><parent link="{parent}"/>'
                     f'<child link="link_{i}"/><origin xyz="0.02 0.0 0.2" rpy="0.1 0 0"/>'
                     f'<axis xyz="{axes[i % 3]}"/>'
                     '<limit lower="-3" upper="3" effort="100" velocity="10"/></joint>')
    parts.append('</robot>')
    return '\n'.join(parts)


def percentile_ms(values, p):
    return float(np.percentile(values, p)) * 1e-6 if len(values) else float('nan')


# --------------------------------------------------------------------------------------------
# latency over DDS against a node process

SUBSCRIBER = r"""
import json, os, sys, time
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import QoSProfile, ReliabilityPolicy
from ros_dynamics_msgs.msg import Dynamics
topic, out, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
ts_topic = sys.argv[4] if len(sys.argv) > 4 else None   # also ~/task_space: stamps to out.ts
rclpy.init()
node = rclpy.create_node('bench_subscriber')
got, got_ts = [], []
def on_dynamics(msg):
    s = msg.header.stamp
    got.append((s.sec * 1_000_000_000 + s.nanosec, time.time_ns()))
qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
node.create_subscription(Dynamics, topic, on_dynamics, qos)
if ts_topic:
    from ros_dynamics_msgs.msg import TaskSpace
    def on_task_space(msg):
        s = msg.header.stamp
        got_ts.append(s.sec * 1_000_000_000 + s.nanosec)
    node.create_subscription(TaskSpace, ts_topic, on_task_space, qos)
ex = SingleThreadedExecutor()
ex.add_node(node)
while node.count_publishers(topic) == 0 or (ts_topic and node.count_publishers(ts_topic) == 0):
    ex.spin_once(timeout_sec=0.05)
print('READY', flush=True)
end = time.monotonic() + timeout
last = None
while time.monotonic() < end:
    ex.spin_once(timeout_sec=0.05)
    if got and (last is None or got[-1] is not last):
        last, t_last = got[-1], time.monotonic()
    if last is not None and time.monotonic() - t_last > 1.5:
        break
with open(out, 'w') as f:
    json.dump(got, f)
if ts_topic:
    with open(out + '.ts', 'w') as f:
        json.dump(got_ts, f)
node.destroy_node()
rclpy.try_shutdown()
"""


def cpu_seconds(pid):
    """utime + stime of a process (all threads) in seconds, from /proc/<pid>/stat."""
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def thread_cpu(pid):
    """{thread name: CPU seconds} of a process's threads (/proc/<pid>/task/*/stat), the main
    thread as 'main (Python)'; Fast DDS names its threads dds.udp.*, dds.shm.*, dds.ev.*, ..."""
    out = {}
    tick = os.sysconf('SC_CLK_TCK')
    for tid in os.listdir(f'/proc/{pid}/task'):
        try:
            with open(f'/proc/{pid}/task/{tid}/stat') as f:
                head, rest = f.read().rsplit(')', 1)
        except OSError:
            continue
        name = 'main (Python)' if int(tid) == pid else head.split('(', 1)[1]
        name = name.rstrip('0123456789.')  # dds.udp.7411 -> dds.udp
        fields = rest.split()
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return out


def start_node_and_subscriber(ns, params, subscriber_timeout, task_space=False):
    """dynamics_node in namespace /ns with ``params`` and the ~/dynamics subscriber process
    (SUBSCRIBER; ``task_space``: also on ~/task_space); returns (node process, subscriber
    process, node log file, received json)."""
    tmp = tempfile.mkdtemp(prefix='rd_bench_')
    pfile = os.path.join(tmp, 'params.yaml')
    with open(pfile, 'w') as f:
        yaml.safe_dump({f'/{ns}/dynamics': {'ros__parameters': params}}, f)
    env = ros_compat.ros_environment(domain_id=DOMAIN_ID, localhost_only=True)
    env['PYTHONPATH'] = os.pathsep.join([REPO_ROOT, env.get('PYTHONPATH', '')])
    log = open(os.path.join(tmp, 'node.log'), 'w')
    proc = subprocess.Popen([sys.executable, '-m', 'ros_dynamics.ros.dynamics_node.node', '--ros-args',
                             '-r', f'__ns:=/{ns}', '--params-file', pfile],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    sub_out = os.path.join(tmp, 'received.json')
    sub = subprocess.Popen([sys.executable, '-c', SUBSCRIBER, f'/{ns}/dynamics/dynamics', sub_out,
                            str(subscriber_timeout)]
                           + ([f'/{ns}/dynamics/task_space'] if task_space else []),
                           env=env, stdout=subprocess.PIPE, text=True)
    return proc, sub, log, sub_out


def wait_until_connected(pub, executor, proc, sub, log, timeout):
    """Spin until the node subscribes to ``pub`` (RuntimeError with its log if it dies) and the
    subscriber process reports READY, then let the reverse discovery settle for 1 s."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and not pub.get_subscription_count():
        executor.spin_once(timeout_sec=0.05)
        if proc.poll() is not None:
            raise RuntimeError('node died: ' + open(log.name).read())
    assert sub.stdout.readline().strip() == 'READY', 'subscriber did not start'
    time.sleep(1.0)


def stop_trial(executor, node, ctx, proc, sub, log, timeout=10.0):
    """End one trial: this process's client (executor, node, context), then the node process
    (SIGINT, killed after ``timeout`` s) and the subscriber process, and close the node's log.
    Returns the node's exit status, or 'killed'."""
    executor.shutdown()
    node.destroy_node()
    ctx.try_shutdown()
    proc.send_signal(signal.SIGINT)
    try:
        rc = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = 'killed'
    if sub.poll() is None:
        sub.kill()
    log.close()
    return rc


def publish_paced(pub, names, Q, V, E, rate, before=None):
    """Publish JointState k = 0.. at ``rate`` Hz on the wall clock (stamp = wall-clock publish
    time): returns (the stamps sent, the seconds it took).  ``before(k, sec, nanosec)``, if
    given, runs just before each (a floating base's odom with the same stamp)."""
    from sensor_msgs.msg import JointState
    msg = JointState()
    msg.name = names
    period, sent = 1.0 / rate, []
    t0 = time.monotonic()
    for k in range(len(Q)):
        delay = t0 + k * period - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        msg.position, msg.velocity, msg.effort = Q[k], V[k], E[k]
        stamp = time.time_ns()
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp, 1_000_000_000)
        if before is not None:
            before(k, msg.header.stamp.sec, msg.header.stamp.nanosec)
        pub.publish(msg)
        sent.append(stamp)
    return sent, time.monotonic() - t0


def run_latency(name, xml, extra_params, duration, rate, executor):
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState

    ns = f'bench_{name}_{executor}'
    params = {'robot_description': xml, 'log_throttle_sec': 5.0, 'observer_max_dt': 1.0,
              'executor': executor, **extra_params}
    proc, sub, log, sub_out = start_node_and_subscriber(ns, params, duration + 90)
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node('bench_client', context=ctx)
    qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
    pub = node.create_publisher(JointState, f'/{ns}/joint_states', qos)
    executor_ = SingleThreadedExecutor(context=ctx)
    executor_.add_node(node)
    try:
        wait_until_connected(pub, executor_, proc, sub, log, 90)

        model = rd.load_urdf(xml)
        names = list(model.joint_names)
        n = len(names)
        # a smooth trajectory with the efforts that produce it (inverse dynamics): free motion,
        # so the observer runs but no contact wrench is estimated
        amp = np.linspace(0.3, 0.8, n)
        w = 2 * np.pi * 0.5
        steps = int(round(duration * rate))
        T = np.arange(steps)[:, None] / rate
        Q, V, A = amp * np.sin(w * T), amp * w * np.cos(w * T), -amp * w * w * np.sin(w * T)
        E = np.array([rd.inverse_dynamics(model, Q[k], V[k], A[k]) for k in range(steps)])
        Q, V, E = Q.tolist(), V.tolist(), E.tolist()
        cpu0 = cpu_seconds(proc.pid)
        threads0 = thread_cpu(proc.pid)
        sent, elapsed = publish_paced(pub, names, Q, V, E, rate)
        cpu1 = cpu_seconds(proc.pid)
        time.sleep(0.3)  # the tail of the queue
        cpu_tail = cpu_seconds(proc.pid)
        threads1 = thread_cpu(proc.pid)
        sub.wait(timeout=duration + 120)
    finally:
        stop_trial(executor_, node, ctx, proc, sub, log)
    with open(sub_out) as f:
        received = dict((s, t) for s, t in json.load(f))
    lat = np.array([received[s] - s for s in sent if s in received], dtype=float)
    load = os.getloadavg()[0]
    return {'model': name, 'executor': executor, 'sent': len(sent),
            'send_rate_hz': len(sent) / elapsed, 'answered_fraction': len(lat) / len(sent),
            'p50_ms': percentile_ms(lat, 50), 'p99_ms': percentile_ms(lat, 99),
            'max_ms': float(lat.max()) * 1e-6 if len(lat) else float('nan'),
            'node_cpu_percent': 100.0 * (cpu1 - cpu0) / elapsed,
            'node_cpu_percent_incl_tail': 100.0 * (cpu_tail - cpu0) / elapsed,
            'node_cpu_us_per_cycle': 1e6 * (cpu_tail - cpu0) / len(sent),
            'node_cpu_us_per_cycle_by_thread': {
                k: round(1e6 * (threads1[k] - threads0.get(k, 0.0)) / len(sent), 1)
                for k in sorted(threads1) if threads1[k] - threads0.get(k, 0.0) > 0},
            'loadavg_1min': load}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--duration', type=float, default=10.0)
    ap.add_argument('--rate', type=float, default=1000.0)
    ap.add_argument('--models', nargs='+', default=['arm7', 'chain30'])
    ap.add_argument('--executors', nargs='+', default=['single', 'events'])
    ap.add_argument('--runs', type=int, default=2, help='rounds over the models and executors')
    ap.add_argument('--christoffel-decimation', type=int, default=10)
    ap.add_argument('--no-christoffel', action='store_true')
    ap.add_argument('--out-dir', default=os.path.join(REPO_ROOT, 'out', 'benchmarks'),
                    help='folder of node_latency.md and .json (default: out/benchmarks/)')
    args = ap.parse_args()
    from common import output, report
    extra = {'christoffel_stream': not args.no_christoffel,
             'christoffel_decimation': args.christoffel_decimation}
    stream = 'off' if args.no_christoffel else f'every {args.christoffel_decimation}th cycle'
    print(f'ROS_DOMAIN_ID={DOMAIN_ID}, localhost only; christoffel stream {stream}; '
          f'load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores', file=sys.stderr)
    results = []
    for run in range(1, args.runs + 1):
        for name in args.models:
            xml = model_source(name)
            for ex in args.executors:
                res = dict(run_latency(name, xml, extra, args.duration, args.rate, ex), run=run)
                results.append(res)
                print(f'[run {run}, {name}, {ex}] sent {res["sent"]} joint states at '
                      f'{res["send_rate_hz"]:.0f} Hz; answered {100 * res["answered_fraction"]:.2f}%;'
                      f' latency p50 {res["p50_ms"]:.3f} ms, p99 {res["p99_ms"]:.3f} ms; node CPU '
                      f'{res["node_cpu_us_per_cycle"]:.0f} us per joint state; load '
                      f'{res["loadavg_1min"]:.1f}', file=sys.stderr, flush=True)
    lines = [f'# dynamics_node at {args.rate:g} Hz over loopback DDS', '',
             'Free motion (efforts = inverse dynamics of a sinusoidal trajectory), observer on, '
             f'Γ streamed {stream}, default QoS. A separate Python subscriber process '
             '(SingleThreadedExecutor) on `~/dynamics`; latency = joint-state publish (wall clock) '
             'to `~/dynamics` received there; node CPU = utime + stime of the node process from '
             f'`/proc` over the {args.duration:g} s window (100 % = one core), per joint state: '
             'total = the Python thread + the other (DDS) threads. The 1-minute load average in '
             'the last column: the latency tails follow the contention.', '',
             '| run | model | executor | answered | p50 [ms] | p99 [ms] | max [ms] | node CPU '
             '[% core] | µs/cycle: total = main (Python) + DDS threads | load |',
             '|---|---|---|---:|---:|---:|---:|---:|---|---:|']
    for r in results:
        by = r['node_cpu_us_per_cycle_by_thread']
        main_us = by.get('main (Python)', 0.0)
        lines.append(f'| {r["run"]} | {r["model"]} | {r["executor"]} | '
                     f'{100 * r["answered_fraction"]:.2f} % | {r["p50_ms"]:.2f} | '
                     f'{r["p99_ms"]:.1f} | {r["max_ms"]:.1f} | {r["node_cpu_percent"]:.1f} | '
                     f'{r["node_cpu_us_per_cycle"]:.0f} = {main_us:.0f} + '
                     f'{r["node_cpu_us_per_cycle"] - main_us:.0f} | {r["loadavg_1min"]:.1f} |')
    path = report(output(args.out_dir, 'node_latency.md'), '\n'.join(lines) + '\n')
    with open(path[:-3] + '.json', 'w') as f:
        json.dump(results, f, indent=2)


if __name__ == '__main__':
    main()
