"""Core work of one dynamics_node cycle for the bundled arm, without ROS (issue #8).

    python benchmarks/node_cycle.py [--cycles 20000]

One accepted joint state costs the node: M, C, dM/dt, g; Gamma every ``--decimation``-th cycle;
the momentum observer's update (p = M v, C^T v, g) and the contact detector.  Two variants are
timed interleaved in one process (median of blocks, microseconds per cycle):

* ``separate calls``: rd.dynamics + rd.christoffel + obs.update(q, v, tau, dt) + det.update(r),
  each validating its input and running its own forward kinematics (the node before issue #8);
* ``one pass``: rd.compute_all_terms(model, q, v, data, christoffel=...) then
  obs.update_from(data, tau, dt) + det.update(r): one validation, one kinematics pass, no
  allocation in the core.

Kinematics passes per cycle are counted from the calls (forward kinematics of each kernel).
"""

import argparse
import os
import sys

import numpy as np

import time

from common import RESULTS, interleaved, log, machine_info, us

import ros_dynamics as rd  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--decimation', type=int, default=10, help='Gamma every N-th cycle')
    ap.add_argument('--blocks', type=int, default=31)
    ap.add_argument('--out', default=os.path.join(RESULTS, 'node_cycle.md'))
    args = ap.parse_args(argv)
    model = rd.load_urdf(rd.bundled_urdf('arm7.urdf'))
    n = model.nv
    rng = np.random.default_rng(0)
    q, v = rng.uniform(-1, 1, model.nq), rng.uniform(-1, 1, n)
    # the torque that keeps the momentum constant (p-dot = tau + C^T v - g = 0): free motion, the
    # residual stays ~0 and the detector takes its usual no-contact path, as in most cycles
    tau = rd.gravity(model, q) - rd.coriolis_transpose_times_v(model, q, v)
    dt, N = 1e-3, args.decimation

    obs_a, det_a = rd.MomentumObserver(model, gain=50.0), rd.ContactDetector(model, threshold=5.0)
    state = {'k': 0}

    def separate():
        k = state['k'] = state['k'] + 1
        rd.dynamics(model, q, v)
        if k % N == 0:
            rd.christoffel(model, q)
        det_a.update(obs_a.update(q, v, tau, dt))

    variants = {'separate calls': separate}
    passes = {'separate calls': 2 + 1.0 / N}
    if hasattr(rd, 'compute_all_terms'):
        data = rd.Data(model)
        obs_b, det_b = rd.MomentumObserver(model, gain=50.0), rd.ContactDetector(model, threshold=5.0)

        def fused():
            k = state['k'] = state['k'] + 1
            rd.compute_all_terms(model, q, v, data, christoffel=(k % N == 0))
            det_b.update(obs_b.update_from(data, tau, dt))

        variants['one pass'] = fused
        passes['one pass'] = 1.0
    log(f'machine: {machine_info()}')
    for f in variants.values():
        for _ in range(2 * N):
            f()
    t = interleaved(variants, blocks=args.blocks, block_s=0.01, stat='min', clock=time.thread_time)
    lines = ['# One dynamics_node cycle, core work only (bundled arm7, nv = %d)' % n, '',
             f'Machine: {machine_info()}; 1-min load average {os.getloadavg()[0]:.2f}.  '
             f'Gamma every {N}-th cycle; minimum thread CPU time over {args.blocks} interleaved blocks.', '',
             '| variant | us per cycle | kinematics passes per cycle |', '|---|---:|---:|']
    for name, sec in t.items():
        lines.append(f'| {name} | {us(sec)} | {passes[name]:.1f} |')
    text = '\n'.join(lines) + '\n'
    print(text)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, 'w') as fh:
        fh.write(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
