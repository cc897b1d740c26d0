"""Start-up cost: first-ever JIT compile vs a later process that loads the numba cache.

    python benchmarks/startup.py            # 1 cold + 5 warm processes (~1-2 min, mostly the cold compile)
    python benchmarks/startup.py --quick    # 1 cold + 3 warm

Each measurement is a fresh ``python`` subprocess with ``NUMBA_CACHE_DIR`` pointing at a new
temporary directory (so nothing is shared with the package's own ``__pycache__``):

* cold: the first process on an empty cache dir compiles every kernel it touches;
* warm: later processes on the same dir load the compiled code from the cache.

The child reports the time of each step since interpreter start (import ros_dynamics,
load_urdf of the bundled 7-DoF arm, first rd.dynamics, first rd.christoffel), then, after the
first results, the first call of the remaining entry points (inverse/forward dynamics,
observer_terms, dynamics_batch).  "Wall" is the subprocess wall time seen by the parent,
including interpreter start-up and exit.  Target: warm time to first result < 1 s.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from common import log, machine_info

CHILD = r'''
import json, sys, time
t0 = time.perf_counter()
out = {}
def mark(k):
    out[k] = time.perf_counter() - t0
sys.path.insert(0, sys.argv[1])
import numpy as np
mark('import numpy')
import ros_dynamics as rd
mark('import ros_dynamics')
m = rd.load_urdf(rd.bundled_urdf('arm7'))
mark('load_urdf(arm7)')
q, v = np.full(m.nv, 0.3), np.full(m.nv, 0.1)
rd.dynamics(m, q, v)
mark('first dynamics')
rd.christoffel(m, q)
mark('first christoffel')
rd.inverse_dynamics(m, q, v, v)
rd.forward_dynamics(m, q, v, v)
rd.observer_terms(m, q, v)
mark('+ rnea, fd, observer')
rd.dynamics_batch(m, np.tile(q, (4, 1)), np.tile(v, (4, 1)))
mark('+ dynamics_batch')
print(json.dumps(out))
'''

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, '-c', CHILD, REPO], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(p.stderr)
    marks = json.loads(p.stdout.strip().splitlines()[-1])
    marks['wall (process)'] = wall
    return marks


def bare_python():
    t0 = time.perf_counter()
    subprocess.run([sys.executable, '-c', 'pass'], check=True)
    return time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--quick', action='store_true')
    args = ap.parse_args(argv)
    nwarm = 3 if args.quick else 5
    log(f'machine: {machine_info()}')
    with tempfile.TemporaryDirectory(prefix='rd_numba_cache_') as cache:
        log('cold process (empty NUMBA_CACHE_DIR: compiles everything) ...')
        cold = run(cache)
        log(f'    first result after {cold["first christoffel"]:.2f} s, process wall {cold["wall (process)"]:.2f} s')
        warm = []
        for i in range(nwarm):
            warm.append(run(cache))
            log(f'warm process {i + 1}/{nwarm}: first result after {warm[-1]["first christoffel"]:.3f} s, '
                f'process wall {warm[-1]["wall (process)"]:.3f} s')
    bare = statistics.median(bare_python() for _ in range(3))
    keys = list(cold)
    print(f'# Start-up time (seconds since interpreter start; warm = median of {nwarm} processes)')
    print()
    print(f'Machine: {machine_info()}.  Bare `python -c pass`: {bare:.3f} s.')
    print()
    print('| step (cumulative) | cold: empty cache, compiles | warm: cache loaded |')
    print('|---|---:|---:|')
    for k in keys:
        wk = statistics.median(w[k] for w in warm)
        b = '**' if k == 'first christoffel' else ''
        print(f'| {b}{k}{b} | {b}{cold[k]:.2f}{b} | {b}{wk:.3f}{b} |')
    wk = statistics.median(w['first christoffel'] for w in warm)
    print()
    print(f'Time to first result (import + load + dynamics + christoffel): cold {cold["first christoffel"]:.1f} s, '
          f'warm {wk:.2f} s (target < 1 s: {"met" if wk < 1.0 else "NOT met"}).')
    return 0


if __name__ == '__main__':
    sys.exit(main())
