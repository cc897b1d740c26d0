"""Compile cost of the numba kernels and the CPU from a cold start to the first results.

    python benchmarks/compile_cost.py                 # cold cache, then a warm process
    python benchmarks/compile_cost.py --out out/compile_cost.md
    python benchmarks/compile_cost.py --node-only --repeat 3     # the node's warm-up only
    python benchmarks/compile_cost.py --node --repeat 3          # the ROS node process

Each measurement is a fresh ``python`` process with ``NUMBA_CACHE_DIR`` on a new temporary
directory (cold: nothing cached; warm: the same directory again).  The child listens to numba's
``numba:compile`` events and charges the process CPU time (``time.process_time``) of each
compilation to its kernel (nested compilations of callees are charged to the callee and
subtracted from the caller: "self" time; "total" includes them).  The child's steps:

1. ``import ros_dynamics`` (CPU since interpreter start);
2. what the ROS node does for its first ~/dynamics on urdf/arm7.urdf: two joint states through
   the joint-input assembler and the per-cycle pipeline (``estimation.cycle.Cycle.step``:
   M, C, dM/dt, g, the observer's reset and first update, the contact detector);
3. the rest of the node's warm-up, in two steps: a cycle that also computes Gamma and
   ``rd.christoffel``; then ``link_jacobian`` and ``estimate_contact_wrench`` (the contact path);
4. every other public entry point once (all kernels compiled).

``--node`` measures the ROS node itself instead: ``dynamics_node`` on the bundled arm (its
``robot_description`` from a parameter file, loopback DDS), cold and then warm, and reports the
process CPU time (all threads, /proc) when it logs that the model and kernels are ready (its
warm-up compiles everything the first ~/dynamics needs), with the compile CPU of each kernel
it compiled (numba's events; DDS threads' CPU included).

``--repeat N`` runs the cold/warm pair N times and reports the minimum of each mark (CPU time
on a shared machine is noisy: other processes slow this one's caches and cores).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

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
from ros_dynamics.estimation.cycle import Cycle, ObserverSettings
from ros_dynamics.estimation.joint_input import InputBounds, JointStateAssembler
marks['import ros_dynamics'] = time.process_time()
step[0] = 'dynamics'
m = rd.load_urdf(rd.bundled_urdf('arm7'))
names = list(m.joint_names)
asm = JointStateAssembler(names, InputBounds(m))
cycle = Cycle(m, 'joint', ObserverSettings(m))
q, v, tau = np.full(m.nq, 0.3), np.full(m.nv, 0.1), np.zeros(m.nv)
for k in range(2):
    asm.add(names, q, v, tau, 1, k, 0)
    res = cycle.step(asm.q, asm.v, asm.e, 10**9 + k * 10**6)
    assert res.error is None, res.error
marks['first ~/dynamics (cycle: M, C, g, observer)'] = time.process_time()
step[0] = 'gamma'
res = cycle.step(q, v, None, 10**9 + 2 * 10**6, christoffel=True)
assert res.error is None, res.error
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
runpy.run_module('ros_dynamics.ros.dynamics_node', run_name='__main__')
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
    """The dynamics_node process with NUMBA_CACHE_DIR=cache_dir until it logs 'model ready':
    {'marks': {'node ready': process CPU}, 'rows': per kernel compile CPU}."""
    import random
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
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, PYTHONPATH=REPO,
               ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
    env.setdefault('ROS_DOMAIN_ID', str(random.randint(101, 200)))
    log_path = os.path.join(tmp, 'node.log')
    with open(log_path, 'w') as log:
        p = subprocess.Popen([sys.executable, '-c', NODE_CHILD, '--ros-args', '-r',
                              '__ns:=/compile_cost', '--params-file', params],
                             env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    tick = os.sysconf('SC_CLK_TCK')
    cpu, end = None, time.monotonic() + timeout
    try:
        while cpu is None and time.monotonic() < end:
            with open(log_path) as fh:
                text = fh.read()
            if 'model ready' in text:
                with open(f'/proc/{p.pid}/stat') as fh:
                    f = fh.read().rsplit(')', 1)[1].split()
                cpu = (int(f[11]) + int(f[12])) / tick
            elif p.poll() is not None:
                raise RuntimeError('the node exited:\n' + text)
            else:
                time.sleep(0.02)
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    if cpu is None:
        raise RuntimeError(f'the node was not ready after {timeout} s')
    rows = []
    for line in text.splitlines():
        if line.startswith('COMPILE '):
            _, name, t = line.split()
            rows.append(dict(name=name, total=float(t), self=float(t), depth=0, step='node'))
    return dict(marks={'dynamics_node: model and kernels ready': cpu}, rows=rows)


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
    ap.add_argument('--out', default=None, help='markdown output (default: stdout only)')
    ap.add_argument('--repeat', type=int, default=1, help='cold/warm pairs (minimum reported)')
    ap.add_argument('--node-only', action='store_true',
                    help="stop after the node's warm-up (skip the other kernels)")
    ap.add_argument('--node', action='store_true',
                    help='measure the dynamics_node process itself (ROS 2, loopback DDS)')
    args = ap.parse_args(argv)
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
    text = [f'## Cold cache (process CPU time since interpreter start; minimum of {args.repeat})',
            '']
    for k, t in cold['marks'].items():
        text.append(f'* {k}: {t:.2f} s (warm cache: {warm["marks"][k]:.2f} s)')
    text += ['', table(cold), '']
    text = '\n'.join(text)
    print(text)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, 'w') as fh:
            fh.write(text)


if __name__ == '__main__':
    main()
