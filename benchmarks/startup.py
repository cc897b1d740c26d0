"""Start-up cost: first-ever compile time and a second process's time to its first result.

Each measurement is a fresh Python process (import ros_dynamics, load the bundled arm, first
`dynamics` and first `christoffel`) with NUMBA_CACHE_DIR pointing at a new temporary folder:
run 1 compiles and writes the cache, runs 2..n reuse it.  Usage: python benchmarks/startup.py
"""

import os
import subprocess
import sys
import tempfile

CHILD = r'''
import time
t0 = time.perf_counter()
import numpy as np
import ros_dynamics as rd
t1 = time.perf_counter()
model = rd.load_urdf(rd.bundled_urdf('arm7'))
q, v = np.zeros(model.nq), np.ones(model.nv)
rd.dynamics(model, q, v)
t2 = time.perf_counter()
rd.christoffel(model, q)
rd.observer_terms(model, q, v)
rd.forward_dynamics(model, q, v, v)
t3 = time.perf_counter()
print(f'{t1 - t0:.3f} {t2 - t1:.3f} {t3 - t0:.3f}')
'''


def run(cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    out = subprocess.run([sys.executable, '-c', CHILD], env=env, capture_output=True, text=True,
                         check=True)
    return [float(x) for x in out.stdout.split()]


def main(repeats=3):
    with tempfile.TemporaryDirectory(prefix='numba_cache_') as cache:
        print('process  import [s]  load+first dynamics [s]  total to first results [s]')
        for k in range(1 + repeats):
            imp, first, total = run(cache)
            label = 'cold (compiles)' if k == 0 else f'warm cache #{k}'
            print(f'{label:16s} {imp:9.3f}  {first:23.3f}  {total:26.3f}', flush=True)


if __name__ == '__main__':
    main()
