"""Compile cost of the numba kernels and the CPU from a cold start to the first results.

    python benchmarks/compile_cost.py                 # cold cache, then a warm process
    python benchmarks/compile_cost.py --out out/compile_cost.md

Each measurement is a fresh ``python`` process with ``NUMBA_CACHE_DIR`` on a new temporary
directory (cold: nothing cached; warm: the same directory again).  The child listens to numba's
``numba:compile`` events and charges the process CPU time (``time.process_time``) of each
compilation to its kernel (nested compilations of callees are charged to the callee and
subtracted from the caller: "self" time; "total" includes them).  The child's steps:

1. ``import ros_dynamics`` (CPU since interpreter start);
2. what the ROS node does first on urdf/arm7.urdf: ``compute_all_terms`` (with Gamma),
   ``christoffel``, ``link_jacobian``, one observer update (``MomentumObserver.update_from``,
   ``ContactDetector.update``, ``estimate_contact_wrench``): CPU to the first results;
3. every other public entry point once (all kernels compiled).
"""

import argparse
import json
import os
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
marks['import ros_dynamics'] = time.process_time()
step[0] = 'node'
m = rd.load_urdf(rd.bundled_urdf('arm7'))
q, v = np.full(m.nq, 0.3), np.full(m.nv, 0.1)
data = rd.Data(m)
rd.compute_all_terms(m, q, v, data, christoffel=True)
rd.christoffel(m, q)
rd.link_jacobian(m, q, m.link_names[-1])
obs = rd.MomentumObserver(m)
obs.reset_from(data)
r = obs.update_from(data, np.zeros(m.nv), 1e-3)
rd.ContactDetector(m).update(r)
rd.estimate_contact_wrench(m, q, np.ones(m.nv), m.link_names[-1])
marks['first node results'] = time.process_time()
step[0] = 'rest'
rd.dynamics(m, q, v); rd.mass_matrix(m, q); rd.gravity(m, q)
rd.inverse_dynamics(m, q, v, v); rd.forward_dynamics(m, q, v, v)
rd.observer_terms(m, q, v); rd.link_placement(m, q, m.link_names[-1])
rd.contact_compliance(m, q, [(m.link_names[-1], (0.0, 0.0, 0.0))])
rd.dynamics_batch(m, np.tile(q, (2, 1)), np.tile(v, (2, 1))); rd.christoffel_batch(m, np.tile(q, (2, 1)))
marks['everything'] = time.process_time()
print(json.dumps(dict(marks=marks, rows=rows)))
'''

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cache_dir, extra_env=None):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, **(extra_env or {}))
    p = subprocess.run([sys.executable, '-c', CHILD, REPO], env=env, capture_output=True,
                       text=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr)
    return json.loads(p.stdout.strip().splitlines()[-1])


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
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as cache:
        cold = run(cache)
        warm = run(cache)
    text = ['## Cold cache (process CPU time since interpreter start)', '']
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
