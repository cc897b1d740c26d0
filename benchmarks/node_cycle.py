"""CPU per dynamics_node cycle without ROS: the per-cycle pipeline against the bare core calls.

    python benchmarks/node_cycle.py [--decimation 10] [--blocks 31] [--out out/node_cycle.md]

Variants, timed interleaved in one process (minimum thread CPU time over blocks, bundled arm):

* ``core calls``: compute_all_terms (Gamma every N-th cycle) + MomentumObserver.update_from +
  ContactDetector.update: the core work alone, a floor;
* ``before the split``: what dynamics_node's callback did per joint state before the pipeline
  existed, without rclpy (commit 2d3c5be, restated here): gather by name (np.take x 3), finite
  and bound checks in numpy, the core calls, the coordinate map, the finite-output check;
* ``Cycle.step``: the same through :class:`ros_dynamics.estimation.cycle.Cycle` (plus the
  observer timing, the gap rule and the finite-output check);
* ``assemble + Cycle.step``: the joint-input assembler (names, stamp policy, bounds) and then
  the cycle: what the node runs for a message the compiled cycle declines;
* ``JointStateCycle.step``: what the node runs per joint-state message: in the usual case the
  same rules (estimation/rules.py) in one compiled call (estimation/fused_cycle.py).

Free motion (the torque keeps the momentum constant), as in most cycles.
"""
import argparse
import os
import time

import numpy as np

from common import interleaved, log, machine_info, provenance, report, us

import ros_dynamics as rd
from ros_dynamics.estimation.cycle import Cycle, ObserverSettings
from ros_dynamics.estimation.joint_input import InputBounds, JointStateAssembler
from ros_dynamics.estimation.joint_state_cycle import JointStateCycle

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'out')


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--decimation', type=int, default=10, help='Gamma every N-th cycle')
    ap.add_argument('--blocks', type=int, default=31)
    ap.add_argument('--out', default=os.path.join(OUT, 'node_cycle.md'))
    args = ap.parse_args(argv)
    model = rd.load_urdf(rd.bundled_urdf('arm7'))
    n, N = model.nv, args.decimation
    rng = np.random.default_rng(0)
    q, v = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    tau = rd.gravity(model, q) - rd.coriolis_transpose_times_v(model, q, v)
    names = tuple(model.joint_names)
    state = {'k': 0, 't': 10**9}

    data = rd.Data(model)
    obs, det = rd.MomentumObserver(model, gain=50.0), rd.ContactDetector(model, threshold=5.0)
    rd.compute_all_terms(model, q, v, data)
    obs.reset_from(data, tau)

    def core_calls():
        k = state['k'] = state['k'] + 1
        rd.compute_all_terms(model, q, v, data, christoffel=(k % N == 0))
        det.update(obs.update_from(data, tau, 1e-3))

    # the node's callback before the split, restated without rclpy (its numpy glue and core calls)
    index = np.arange(n)
    qj, vj, ej = np.zeros(n), np.zeros(n), np.zeros(n)
    bounds = InputBounds(model)
    data_b = rd.Data(model)
    obs_b, det_b = rd.MomentumObserver(model, gain=50.0), rd.ContactDetector(model, threshold=5.0)
    rd.compute_all_terms(model, q, v, data_b)
    obs_b.reset_from(data_b, tau)

    def finite(x):
        return np.isfinite(x.sum())

    def before():
        k = state['k'] = state['k'] + 1
        np.take(q, index, out=qj)
        np.take(v, index, out=vj)
        np.take(tau, index, out=ej)
        if not (finite(qj) and finite(vj) and finite(ej)):
            raise AssertionError
        if not ((np.abs(qj) <= bounds.position).all() and (np.abs(vj) <= bounds.velocity).all()
                and (np.abs(ej) <= bounds.effort).all()):
            raise AssertionError
        g = k % N == 0
        rd.compute_all_terms(model, qj, vj, data_b, christoffel=g)
        d = data_b.dynamics
        r = obs_b.update_from(data_b, ej, 1e-3)
        det_b.update(r)
        for x in (d.M, d.C, d.Mdot, d.g, data_b.Gamma if g else None, r):
            if x is not None and not finite(x):
                raise AssertionError

    cyc = Cycle(model, 'joint', ObserverSettings(model, gain=50.0, threshold=5.0))

    def cycle_step():
        k = state['k'] = state['k'] + 1
        state['t'] += 1_000_000
        cyc.step(q, v, tau, state['t'], christoffel=(k % N == 0))

    cyc2 = Cycle(model, 'joint', ObserverSettings(model, gain=50.0, threshold=5.0))
    asm = JointStateAssembler(names, InputBounds(model))

    def assemble_and_step():
        k = state['k'] = state['k'] + 1
        t = state['t'] = state['t'] + 1_000_000
        asm.add(names, q, v, tau, t // 10**9, t % 10**9, 0)
        cyc2.step(asm.q, asm.v, asm.e if asm.has_effort else None, asm.stamp_ns,
                  christoffel=(k % N == 0))

    cyc3 = Cycle(model, 'joint', ObserverSettings(model, gain=50.0, threshold=5.0))
    asm3 = JointStateAssembler(names, InputBounds(model))
    m2 = n * n
    offsets = np.array([1, 2 + m2, 3 + 2 * m2, 4 + 3 * m2, 1, 1], dtype=np.int64)
    outputs = (np.zeros(5 + 3 * m2 + n), np.zeros(n + 1), np.zeros(n + 1), offsets)
    js = JointStateCycle(asm3, cyc3, np.zeros(n), np.zeros(n), np.zeros(n), outputs)
    js.compile()

    def joint_state_cycle():
        k = state['k'] = state['k'] + 1
        t = state['t'] = state['t'] + 1_000_000
        sec, nanosec = divmod(t, 10**9)
        js.step(names, q, v, tau, sec, nanosec, 0, christoffel=(k % N == 0))

    variants = {'core calls': core_calls, 'before the split': before, 'Cycle.step': cycle_step,
                'assemble + Cycle.step': assemble_and_step,
                'JointStateCycle.step (what the node runs)': joint_state_cycle}
    for f in variants.values():
        for _ in range(4 * N):
            f()
    log(f'machine: {machine_info()}')
    t = interleaved(variants, blocks=args.blocks, block_s=0.01, stat='min', clock=time.thread_time)
    lines = [f'# One dynamics_node cycle without ROS (bundled arm, nv = {n})', '',
             f'{provenance()}. Gamma '
             f'every {N}-th cycle; minimum thread CPU time over {args.blocks} interleaved blocks.',
             '', '| variant | us per cycle |', '|---|---:|']
    lines += [f'| {name} | {us(sec)} |' for name, sec in t.items()]
    report(args.out, '\n'.join(lines) + '\n')


if __name__ == '__main__':
    main()
