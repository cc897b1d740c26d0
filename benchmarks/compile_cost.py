"""Compile cost of the numba kernels and the CPU from a cold start to the first results.

    python benchmarks/compile_cost.py                 # cold cache, then a warm process
    python benchmarks/compile_cost.py --node-only --repeat 3     # the node's warm-up only
    python benchmarks/compile_cost.py --node --repeat 3          # the ROS node process

Writes out/benchmarks/compile_cost.md (compile_cost_node.md with --node; or --out FILE).

Each measurement is a fresh ``python`` process with ``NUMBA_CACHE_DIR`` on a new temporary
directory (cold: nothing cached; warm: the same directory again).  The child listens to numba's
``numba:compile`` events and charges the process CPU time (``time.process_time``) of each
compilation to its kernel (nested compilations of callees are charged to the callee and
subtracted from the caller: "self" time; "total" includes them).  The child's steps:

1. ``import ros_dynamics`` (CPU since interpreter start);
2. what the ROS node does for its first ~/dynamics on urdf/arm7.urdf: two joint states through
   the joint-input assembler and the per-cycle pipeline (``estimation.cycle_state.CycleState.step``:
   M, C, dM/dt, g, the observer's reset and first update, the contact detector);
3. the rest of the node's warm-up, in two steps: a cycle that also computes Gamma and
   ``rd.christoffel``; then ``link_jacobian`` and ``estimate_contact_wrench`` (the contact path);
4. every other public entry point once (all kernels compiled).

``--node`` measures the ROS node itself instead: ``dynamics_node`` on the bundled arm (its
``robot_description`` from a parameter file, loopback DDS), cold and then warm, and reports the
process CPU time (all threads, /proc) when it logs that the model and kernels are ready, when
the first ~/dynamics answering a joint state of this process is received (joint states sent
every 20 ms once the node is ready), and when the first ~/christoffel is received (with a cold
cache the Γ kernel is compiled after the node is ready), with the compile CPU of each kernel it
compiled (numba's events; DDS threads' CPU included).

``--repeat N`` runs the cold/warm pair N times and reports the minimum of each mark (CPU time
on a shared machine is noisy: other processes slow this one's caches and cores).
"""

MEASURES = ('ros_dynamics/core', 'ros_dynamics/estimation', 'ros_dynamics/ros/dynamics_node',
            'ros_dynamics/warmup.py')

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

CHILD = r'''
import json, sys, time
from numba.core import event
t_start = time.process_time()
stack, rows = [], []

class Listener(event.Listener):
    def on_start(self, ev):
        stack.append([time.process_time(), 0.0])
    def on_end(self, ev):
        t0, nested = stack.pop()
        dt = time.process_time() - t0
        if stack:
            stack[-1][1] += dt
        d = ev.data['dispatcher']
        rows.append(dict(name=f'{d.py_func.__module__}.{d.py_func.__qualname__}', total=dt,
                         self=dt - nested, depth=len(stack), step=step[0]))

step = ['import']
event.register('numba:compile', Listener())
sys.path.insert(0, sys.argv[1])
import numpy as np
marks = {}
import ros_dynamics as rd
from ros_dynamics.estimation.cycle_state import ObserverSettings
from ros_dynamics.estimation.cycle import node_cycle, step_sample
marks['import ros_dynamics'] = time.process_time()
step[0] = 'dynamics'
m = rd.load_urdf(rd.bundled_urdf('arm7'))
js = node_cycle(m, ObserverSettings(m))
q, v, tau = np.full(m.nq, 0.3), np.full(m.nv, 0.1), np.zeros(m.nv)
for k in range(2):
    out = step_sample(js, q, v, tau, 10**9 + k * 10**6)
    assert out.verdict == 'cycle', out.refusal
marks['first ~/dynamics (cycle: M, C, g, observer)'] = time.process_time()
step[0] = 'gamma'
out = step_sample(js, q, v, tau, 10**9 + 2 * 10**6, christoffel=True)
assert out.verdict == 'cycle', out.refusal
rd.christoffel(m, q)
marks['+ Gamma (cycle with Gamma, rd.christoffel)'] = time.process_time()
step[0] = 'contact'
rd.link_jacobian(m, q, m.link_names[-1])
rd.estimate_contact_wrench(m, q, np.ones(m.nv), m.link_names[-1])
marks['+ contact (link_jacobian, estimate_contact_wrench): node warm-up done'] = time.process_time()
if sys.argv[2] == 'node-only':
    print(json.dumps(dict(marks=marks, rows=rows)))
    sys.exit(0)
step[0] = 'rest'
rd.dynamics(m, q, v); rd.mass_matrix(m, q); rd.gravity(m, q)
rd.inverse_dynamics(m, q, v, v); rd.forward_dynamics(m, q, v, v)
rd.observer_terms(m, q, v); rd.link_placement(m, q, m.link_names[-1])
rd.contact_compliance(m, q, [(m.link_names[-1], (0.0, 0.0, 0.0))])
rd.dynamics_batch(m, np.tile(q, (2, 1)), np.tile(v, (2, 1))); rd.christoffel_batch(m, np.tile(q, (2, 1)))
marks['everything'] = time.process_time()
print(json.dumps(dict(marks=marks, rows=rows)))
'''

NODE_CHILD = r'''
import runpy, sys, time
from numba.core import event
stack = []

class Listener(event.Listener):
    def on_start(self, ev):
        stack.append(time.process_time())
    def on_end(self, ev):
        t0 = stack.pop()
        if not stack:
            d = ev.data['dispatcher']
            print(f'COMPILE {d.py_func.__module__}.{d.py_func.__qualname__} '
                  f'{time.process_time() - t0:.3f}', file=sys.stderr, flush=True)

event.register('numba:compile', Listener())
sys.argv = ['dynamics_node'] + sys.argv[1:]
runpy.run_module('ros_dynamics.ros.dynamics_node.node', run_name='__main__')
'''

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cache_dir, node_only=False, extra_env=None):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, **(extra_env or {}))
    p = subprocess.run([sys.executable, '-c', CHILD, REPO, 'node-only' if node_only else 'all'],
                       env=env, cwd=REPO, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr)
    return json.loads(p.stdout.strip().splitlines()[-1])


def run_node(cache_dir, timeout=600.0):
    """The dynamics_node process with NUMBA_CACHE_DIR=cache_dir: its process CPU when it logs
    'model ready', when the first ~/dynamics answering a joint state of this process arrives
    (joint states sent every 20 ms from then on), and when the first ~/christoffel arrives;
    {'marks': {...: process CPU}, 'rows': per kernel compile CPU}."""
    import signal
    import time
    import yaml
    sys.path.insert(0, REPO)
    import ros_dynamics as rd
    tmp = tempfile.mkdtemp(prefix='rd_compile_cost_')
    params = os.path.join(tmp, 'params.yaml')
    with open(rd.bundled_urdf('arm7')) as fh:
        urdf = fh.read()
    with open(params, 'w') as fh:
        yaml.safe_dump({'/compile_cost/dynamics': {'ros__parameters': {'robot_description': urdf}}}, fh)
    import node_latency as nl   # sets this process's ROS environment (loopback, a domain id)
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, PYTHONPATH=REPO)
    log_path = os.path.join(tmp, 'node.log')
    with open(log_path, 'w') as log:
        p = subprocess.Popen([sys.executable, '-c', NODE_CHILD, '--ros-args', '-r',
                              '__ns:=/compile_cost', '--params-file', params],
                             env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    import rclpy
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    from ros_dynamics_msgs.msg import Christoffel, Dynamics
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    probe = rclpy.create_node(f'compile_cost_probe_{os.getpid()}', context=ctx)
    got = {}
    probe.create_subscription(Dynamics, '/compile_cost/dynamics/dynamics',
                              lambda m: got.setdefault('dynamics', nl.cpu_seconds(p.pid)), 10)
    probe.create_subscription(
        Christoffel, '/compile_cost/dynamics/christoffel',
        lambda m: got.setdefault('christoffel', nl.cpu_seconds(p.pid)),
        QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                   durability=DurabilityPolicy.TRANSIENT_LOCAL))
    pub = probe.create_publisher(JointState, '/compile_cost/joint_states', 10)
    from rclpy.executors import SingleThreadedExecutor
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(probe)
    names = rd.load_urdf(rd.bundled_urdf('arm7')).joint_names
    marks, end, text = {}, time.monotonic() + timeout, ''
    try:
        while len(got) < 2 and time.monotonic() < end:
            with open(log_path) as fh:
                text = fh.read()
            if p.poll() is not None:
                raise RuntimeError('the node exited:\n' + text)
            if 'model ready' in text and not marks:
                marks['dynamics_node: model and kernels ready'] = nl.cpu_seconds(p.pid)
            if marks:
                js = JointState(name=names, position=[0.1] * 7, velocity=[0.0] * 7,
                                effort=[0.0] * 7)
                js.header.stamp = probe.get_clock().now().to_msg()
                pub.publish(js)
            ex.spin_once(timeout_sec=0.02)
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        ex.shutdown()
        probe.destroy_node()
        ctx.try_shutdown()
        with open(log_path) as fh:
            text = fh.read()
        shutil.rmtree(tmp, ignore_errors=True)
    if len(got) < 2:
        raise RuntimeError(f'no ~/dynamics and ~/christoffel after {timeout} s:\n{text[-3000:]}')
    marks['dynamics_node: first ~/dynamics received'] = got['dynamics']
    marks['dynamics_node: first ~/christoffel received'] = got['christoffel']
    rows = []
    for line in text.splitlines():
        if line.startswith('COMPILE '):
            _, name, t = line.split()
            rows.append(dict(name=name, total=float(t), self=float(t), depth=0, step='node'))
    return dict(marks=marks, rows=rows)


def minimum(results):
    """Per mark and per (kernel, step) the minimum over repeated runs."""
    marks = {k: min(r['marks'][k] for r in results) for k in results[0]['marks']}
    best = {}
    for r in results:
        for row in r['rows']:
            key = (row['name'], row['step'], row['depth'])
            if key not in best or row['total'] < best[key]['total']:
                best[key] = row
    return dict(marks=marks, rows=list(best.values()))


def table(result):
    lines = ['| kernel | step | self CPU [s] | total CPU [s] |', '|---|---|---:|---:|']
    rows = sorted(result['rows'], key=lambda r: -r['total'])
    for r in rows:
        if r['total'] >= 0.05:
            lines.append(f"| {'  ' * r['depth']}{r['name']} | {r['step']} | {r['self']:.2f} | "
                         f"{r['total']:.2f} |")
    small = [r for r in rows if r['total'] < 0.05]
    lines.append(f'| ({len(small)} more under 0.05 s) | | {sum(r["self"] for r in small):.2f} | |')
    return '\n'.join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', default=None, help='markdown output (default: out/benchmarks/'
                    'compile_cost.md, with --node compile_cost_node.md)')
    ap.add_argument('--repeat', type=int, default=1, help='cold/warm pairs (minimum reported)')
    ap.add_argument('--node-only', action='store_true',
                    help="stop after the node's warm-up (skip the other kernels)")
    ap.add_argument('--node', action='store_true',
                    help='measure the dynamics_node process itself (ROS 2, loopback DDS)')
    args = ap.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from common import report
    colds, warms = [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as cache:
            if args.node:
                colds.append(run_node(cache))
                warms.append(run_node(cache))
            else:
                colds.append(run(cache, args.node_only))
                warms.append(run(cache, args.node_only))
    cold, warm = minimum(colds), minimum(warms)
    what = 'the dynamics_node process' if args.node else 'the library, as the node uses it'
    text = [f'# First start: compile cost of the kernels ({what})', '',
            f'## Cold cache (process CPU time since interpreter start; minimum of {args.repeat})',
            '']
    for k, t in cold['marks'].items():
        runs = ', '.join(f'{r["marks"][k]:.2f}' for r in colds)
        text.append(f'* {k}: {t:.2f} s (runs: {runs}; warm cache: {warm["marks"][k]:.2f} s)')
    text += ['', table(cold), '']
    name = 'compile_cost_node.md' if args.node else 'compile_cost.md'
    report(args.out or os.path.join(REPO, 'out', 'benchmarks', name), '\n'.join(text))


if __name__ == '__main__':
    main()
