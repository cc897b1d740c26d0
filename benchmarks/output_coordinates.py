"""Cost per cycle of dynamics_node's output coordinates (parameter ``coordinates``).

The node computes M, C, dM/dt, g (and, on Christoffel cycles, Gamma) in the model's joint
coordinates and maps them with the core's rd.output_coordinates(model, kind).  This
times that mapping next to the cycle's core call it adds to, in CPU time (thread_time,
interleaved medians; see common.py), per robot and coordinate choice:

  dynamics      rd.dynamics(model, q, v)                  the core call of every cycle
  map           Coordinates.apply(q, v, d)                added to every cycle
  christoffel   rd.christoffel(model, q)                  the core call of a Gamma cycle
  map+Gamma     Coordinates.apply(q, v, d, Gamma)         added to a Gamma cycle (incl. map)

Every mapping is checked against the core library's coordinate objects before it is timed.
With --node it also times the whole node callback per joint state in-process (no DDS peers;
validation, core calls, observer, mapping, writing and publishing; Gamma every 10th cycle, so
this is the average cycle) for each robot and choice, as CPU time per joint state.
Usage: python benchmarks/output_coordinates.py [--quick] [--node]
"""

MEASURES = ('ros_dynamics/core', 'ros_dynamics/estimation')

import argparse
import os
import sys
import time

import numpy as np

from common import add_out_dir, interleaved, log, output, report, us

import ros_dynamics as rd

HERE = os.path.dirname(os.path.abspath(__file__))
GRIPPER = os.path.join(os.path.dirname(HERE), 'test', 'fixtures', 'urdf', 'gripper_mimic.urdf')

CASES = [  # (label, URDF, floating base, coordinates)
    ('gripper (5 joints, 2 mimic)', GRIPPER, False, 'joint'),
    ('gripper (5 joints, 2 mimic)', GRIPPER, False, 'mimic_reduced'),
    ('arm7', rd.bundled_urdf('arm7'), False, 'joint'),
    ('arm7', rd.bundled_urdf('arm7'), False, 'mimic_reduced'),
    ('quadruped floating (nv 18)', rd.bundled_urdf('quadruped'), True, 'joint'),
    ('quadruped floating (nv 18)', rd.bundled_urdf('quadruped'), True, 'mimic_reduced'),
    ('quadruped floating (nv 18)', rd.bundled_urdf('quadruped'), True, 'center_of_mass'),
]


def state(model, rng):
    q = rng.uniform(-1, 1, model.nq)
    if model.floating_base:
        q[3:7] /= np.linalg.norm(q[3:7])
    return q, rng.uniform(-1, 1, model.nv)


def check(oc, model, q, v):
    """apply() equals the separate calls (state, dynamics, christoffel; or the input for joint)."""
    d = rd.dynamics(model, q, v)
    G = rd.christoffel(model, q)
    out = oc.apply(q, v, d, G)
    if oc.identity:
        ref_d, ref_G, ref_q = d, G, q
    elif oc.kind == 'mimic_reduced':
        ref_d, ref_G = oc.reduce(d), rd.transform_christoffel(G, oc.A)
        ref_q = oc.state(q, v)[0]
    else:
        ref_d, ref_G, ref_q = oc.dynamics(q, v), oc.christoffel(q), oc.state(q, v)[0]
    err = max(np.abs(np.asarray(getattr(out.d, f)) - getattr(ref_d, f)).max()
              for f in ('M', 'C', 'Mdot', 'g'))
    err = max(err, np.abs(out.gamma - ref_G).max(), np.abs(out.q - ref_q).max())
    return err


def node_cycle(urdf, floating, kind, cycles):
    """CPU seconds per cycle of the node's cycle (estimation.cycle.node_cycle: the
    compiled step, then the published coordinates) in ``kind`` coordinates, observer on, Gamma
    every 10th cycle."""
    from ros_dynamics.estimation.cycle_state import ObserverSettings
    from ros_dynamics.estimation import cycle as jsc

    model = rd.load_urdf(urdf, floating_base=floating)
    # a floating base's torque is not in a joint state: its residual is the support wrench,
    # which the base coordinates' thresholds leave out (free motion: no contact judged)
    nb = 6 if floating else 0
    threshold = np.r_[np.full(nb, 1e6), np.full(model.nv - nb, 5.0)]
    cyc = jsc.node_cycle(model, ObserverSettings(model, threshold=threshold), kind)
    rng = np.random.default_rng(0)
    q = model.neutral()
    b = 7 if floating else 0
    q[b:] = rng.uniform(-0.5, 0.5, model.nq - b)
    if floating:
        q[2] = 0.4
    v = np.full(model.nv, 0.1)
    tau = rd.gravity(model, q)   # holding its weight
    for k in range(50):
        jsc.step_sample(cyc, q, v, tau, 10**9 + k * 10**6, christoffel=k % 10 == 0)
    t0 = time.thread_time()
    for k in range(cycles):
        out = jsc.step_sample(cyc, q, v, tau, 2 * 10**9 + k * 10**6, christoffel=k % 10 == 0)
        assert out.verdict == 'cycle', out.refusal
    return (time.thread_time() - t0) / cycles


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--quick', action='store_true', help='fewer timing blocks')
    ap.add_argument('--node', action='store_true',
                    help='also time the whole node callback per joint state (needs rclpy)')
    add_out_dir(ap)
    args = ap.parse_args()
    blocks = 9 if args.quick else 31
    rng = np.random.default_rng(0)
    lines = ['# dynamics_node output coordinates: CPU time per call (us)', '',
             'Median thread CPU time per call over interleaved blocks; each mapping checked '
             "against the core's coordinate objects first (max diff vs core).", '',
             '| robot | coordinates | nv -> published | dynamics | map | christoffel | '
             'map+Gamma | max diff vs core |', '|---|---|---|---:|---:|---:|---:|---:|']
    for label, urdf, floating, kind in CASES:
        model = rd.load_urdf(urdf, floating_base=floating)
        oc = rd.output_coordinates(model, kind)
        q, v = state(model, rng)
        err = check(oc, model, q, v)
        d = rd.dynamics(model, q, v)
        G = rd.christoffel(model, q)
        log(f'{label} {kind}: timing')
        t = interleaved({
            'dynamics': lambda: rd.dynamics(model, q, v),
            'map': lambda: oc.apply(q, v, d),
            'christoffel': lambda: rd.christoffel(model, q),
            'map+Gamma': lambda: oc.apply(q, v, d, G),
        }, blocks=blocks, clock=time.thread_time)
        lines.append(f'| {label} | {kind} | {model.nv} -> {oc.nv} | {us(t["dynamics"])} | '
                     f'{us(t["map"])} | {us(t["christoffel"])} | {us(t["map+Gamma"])} | '
                     f'{err:.1e} |')
    if args.node:
        cycles = 1000 if args.quick else 3000
        lines += ['', '## Node callback per joint state (in-process, CPU time, Gamma every 10th '
                  'cycle, observer on, minimum of 3 runs)', '',
                  '| robot | coordinates | us per joint state |', '|---|---|---:|']
        for label, urdf, floating, kind in CASES:
            log(f'{label} {kind}: node cycle')
            runs = [node_cycle(urdf, floating, kind, cycles) for _ in range(3)]
            lines.append(f'| {label} | {kind} | {us(min(runs))} |')
    report(output(args.out_dir, 'output_coordinates.md'), '\n'.join(lines) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
