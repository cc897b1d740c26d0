#!/usr/bin/env python3
"""CPU time per call of the node's health counters (ros_dynamics.ros.dynamics_node.diagnostics.NodeHealth).

The per-cycle calls (``accepted``, ``rejected``, ``observer``) only add to counters; the 1 Hz
calls (``status``, ``to_msg``) compute the windows, rates and levels.  Each call is timed over
--calls calls (process CPU time, ``time.process_time``) after a 1 kHz history of --calls
joint states has filled the window, minus the same loop around an empty function (the loop's
own cost), the minimum of --repeat rounds.  Arrays as the node passes them (nv = 7).

    python benchmarks/diagnostics_cost.py [--calls 200000] [--repeat 3] [--out-dir DIR]

Writes out/benchmarks/diagnostics_cost.md (date, command, machine, load).
"""

MEASURES = ('ros_dynamics/ros/dynamics_node/diagnostics.py',)

import argparse
import time

import numpy as np

from common import add_out_dir, log, output, report

from ros_dynamics.ros.dynamics_node.diagnostics import NodeHealth  # noqa: E402


def per_call(fn, n):
    """Process CPU seconds of one call of fn(i)."""
    t0 = time.process_time()
    for i in range(n):
        fn(i)
    return (time.process_time() - t0) / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--calls', type=int, default=200000)
    ap.add_argument('--repeat', type=int, default=3)
    add_out_dir(ap)
    args = ap.parse_args()
    clock = [0.0]
    health = NodeHealth(expected_rate=1000.0, clock=lambda: clock[0])
    health.model(nv=7, warnings=0, coordinates='joint', names=[f'j{i}' for i in range(7)])
    r, thr = np.full(7, 0.1), np.full(7, 1.0)
    from builtin_interfaces.msg import Time
    stamp = Time(sec=1, nanosec=0)

    def accepted(i):
        clock[0] += 1e-3
        health.accepted(int(clock[0] * 1e9), 1e-4)

    calls = {
        'accepted(stamp_ns, latency_s)': (accepted, args.calls),
        'rejected(reason)': (lambda i: health.rejected('missing_joint'), args.calls),
        'observer(r, threshold, in_contact=False) (nv = 7)':
            (lambda i: health.observer(r, thr, False), args.calls),
        'observer(r, threshold, in_contact=True)':
            (lambda i: health.observer(r, thr, True), args.calls),
        'status() (1 Hz)': (lambda i: health.status(), max(args.calls // 1000, 20)),
        'to_msg() (1 Hz)': (lambda i: health.to_msg(stamp, hardware_id='arm7'),
                            max(args.calls // 1000, 20)),
    }
    log(f'filling the window with {args.calls} joint states ...')
    per_call(accepted, args.calls)
    best = {}
    for _ in range(args.repeat):
        for name, (fn, n) in calls.items():
            empty = per_call(lambda i: None, n)
            best[name] = min(best.get(name, np.inf), per_call(fn, n) - empty)
    lines = ['# Cost of the node\'s health counters (NodeHealth)', '',
             f'Process CPU time per call, loop overhead subtracted, minimum of {args.repeat} rounds '
             f'of {args.calls} calls (1 Hz calls: {max(args.calls // 1000, 20)}).', '',
             '| call | µs per call |', '|---|---:|']
    lines += [f'| `{name}` | {1e6 * t:.2f} |' if t < 1e-5 else f'| `{name}` | {1e6 * t:.0f} |'
              for name, t in best.items()]
    report(output(args.out_dir, 'diagnostics_cost.md'), '\n'.join(lines) + '\n')


if __name__ == '__main__':
    main()
