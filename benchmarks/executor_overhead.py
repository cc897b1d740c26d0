#!/usr/bin/env python3
"""CPU cost of receiving one message in rclpy, per way of running the callback.

A receiver process subscribes to sensor_msgs/JointState (7 joints, reliable, depth 100) with a
callback that only counts; this process publishes at --rate Hz (default 1 kHz) for --duration s
(default 5 s). Reported per mode: messages received and the receiver's CPU per message from
/proc/<pid>/stat (utime + stime, all threads, over the publishing window), i.e. the executor's
and the middleware's cost of one message with nothing else to do. Modes:

  single       rclpy.executors.SingleThreadedExecutor, a default node (parameter services,
               type-description service, rosout: ~10 entities in the wait set)
  single_bare  the same with start_parameter_services=False and enable_rosout=False (only the
               subscription in the wait set): the cost of the entities the executor re-collects
               on every spin_once
  multi        MultiThreadedExecutor (2 threads), the subscription in a ReentrantCallbackGroup
  events       rclpy.experimental.EventsExecutor (the wait and dispatch loop in C++)
  take         a hand-written loop: one rclpy WaitSet holding only the subscription, wait ->
               take_message -> callback (what an executor does, minus the generic machinery)

    python benchmarks/executor_overhead.py [--duration 5] [--rate 1000] [--out-dir DIR]

Writes out/benchmarks/executor_overhead.md and .json.
"""

MEASURES = ()

import argparse
import json
import os
import random
import subprocess
import sys
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO_ROOT)

from ros_dynamics.ros import compat as ros_compat  # noqa: E402
from common import add_out_dir, log, output, report  # noqa: E402

DOMAIN_ID = int(os.environ.get('ROS_DYNAMICS_BENCH_DOMAIN_ID') or random.randint(1, 100))
os.environ.update(ros_compat.ros_environment(domain_id=DOMAIN_ID, localhost_only=True))

MODES = ('single', 'single_bare', 'multi', 'events', 'take')

RECEIVER = r'''
import sys, time
import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
mode, topic, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
rclpy.init()
bare = mode in ('single_bare', 'take')
node = rclpy.create_node('receiver', start_parameter_services=not bare, enable_rosout=not bare)
count = [0]
def cb(msg):
    count[0] += 1
qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
kwargs = {}
if mode == 'multi':
    from rclpy.callback_groups import ReentrantCallbackGroup
    kwargs['callback_group'] = ReentrantCallbackGroup()
sub = node.create_subscription(JointState, topic, cb, qos, **kwargs)
if mode in ('single', 'single_bare'):
    from rclpy.executors import SingleThreadedExecutor
    ex = SingleThreadedExecutor()
elif mode == 'multi':
    from rclpy.executors import MultiThreadedExecutor
    ex = MultiThreadedExecutor(num_threads=2)
elif mode == 'events':
    from rclpy.experimental import EventsExecutor
    ex = EventsExecutor()
else:
    ex = None
if ex is not None:
    ex.add_node(node)
    spin = lambda: ex.spin_once(timeout_sec=0.1)
else:
    from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
    ws = _rclpy.WaitSet(1, 0, 0, 0, 0, 0, node.context.handle)
    handle = sub.handle
    def spin():
        ws.clear_entities()
        ws.add_subscription(handle)
        ws.wait(100_000_000)
        if ws.get_ready_entities('subscription'):
            while True:
                taken = handle.take_message(JointState, False)
                if taken is None:
                    break
                cb(taken[0])
print('READY', flush=True)
end = time.monotonic() + timeout
last_n, last_t = 0, time.monotonic()
while time.monotonic() < end:
    spin()
    if count[0] != last_n:
        last_n, last_t = count[0], time.monotonic()
    elif count[0] and time.monotonic() - last_t > 1.0:
        break
print('COUNT', count[0], flush=True)
'''


def cpu_seconds(pid):
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def run(mode, duration, rate):
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    topic = f'/overhead_{mode}'
    env = ros_compat.ros_environment(domain_id=DOMAIN_ID, localhost_only=True)
    proc = subprocess.Popen([sys.executable, '-c', RECEIVER, mode, topic, str(duration + 60)],
                            env=env, stdout=subprocess.PIPE, text=True)
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node('sender', context=ctx)
    pub = node.create_publisher(JointState, topic,
                                QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
    try:
        assert proc.stdout.readline().strip() == 'READY'
        end = time.monotonic() + 30
        while pub.get_subscription_count() == 0 and time.monotonic() < end:
            time.sleep(0.01)
        time.sleep(0.5)
        msg = JointState()
        msg.name = [f'joint_{i}' for i in range(7)]
        msg.position = msg.velocity = msg.effort = [0.1] * 7
        n = int(duration * rate)
        cpu0 = cpu_seconds(proc.pid)
        t0 = time.monotonic()
        for k in range(n):
            delay = t0 + k / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            msg.header.stamp.nanosec = k
            pub.publish(msg)
        elapsed = time.monotonic() - t0
        time.sleep(0.3)
        cpu1 = cpu_seconds(proc.pid)
        out, _ = proc.communicate(timeout=duration + 90)
    finally:
        node.destroy_node()
        ctx.try_shutdown()
        if proc.poll() is None:
            proc.kill()
    received = int(out.split('COUNT')[1].split()[0])
    return {'mode': mode, 'sent': n, 'received': received, 'rate_hz': n / elapsed,
            'cpu_percent': 100 * (cpu1 - cpu0) / elapsed,
            'cpu_us_per_message': 1e6 * (cpu1 - cpu0) / n, 'loadavg_1min': os.getloadavg()[0]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--duration', type=float, default=5.0)
    ap.add_argument('--rate', type=float, default=1000.0)
    ap.add_argument('--modes', nargs='+', default=list(MODES), choices=MODES)
    add_out_dir(ap)
    args = ap.parse_args()
    log(f'ROS_DOMAIN_ID={DOMAIN_ID}, localhost only; load average {os.getloadavg()[0]:.2f} '
        f'on {os.cpu_count()} cores')
    results = []
    for mode in args.modes:
        r = run(mode, args.duration, args.rate)
        results.append(r)
        log(f'{mode:12s} received {r["received"]}/{r["sent"]} at {r["rate_hz"]:.0f} Hz; receiver '
            f'CPU {r["cpu_percent"]:5.1f} % of a core = {r["cpu_us_per_message"]:5.0f} us per '
            f'message (load {r["loadavg_1min"]:.1f})')
    lines = ['# CPU cost of receiving one message in rclpy, per way of running the callback', '',
             f'A receiver process (sensor_msgs/JointState, 7 joints, reliable, depth 100; a callback '
             f'that only counts) fed at {args.rate:g} Hz for {args.duration:g} s per mode; its CPU '
             'per message from /proc (utime + stime, all threads) over the publishing window.', '',
             '| mode | received | receiver CPU [% of a core] | CPU per message [us] | '
             '1-min load |', '|---|---|---:|---:|---:|']
    lines += [f'| {r["mode"]} | {r["received"]}/{r["sent"]} | {r["cpu_percent"]:.1f} | '
              f'{r["cpu_us_per_message"]:.0f} | {r["loadavg_1min"]:.1f} |' for r in results]
    path = report(output(args.out_dir, 'executor_overhead.md'), '\n'.join(lines) + '\n')
    with open(path[:-3] + '.json', 'w') as f:
        json.dump(results, f, indent=2)


if __name__ == '__main__':
    main()
