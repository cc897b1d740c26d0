"""Momentum observer against the ground truth in the two contact modes of the simulator.

    python benchmarks/rigid_observer.py

The arm7 'wall' scenario (6 s) with the spring-damper wall (k = 5000 N/m, c = 50 Ns/m) and with
the rigid wall (OS LCP of Jain et al. 2012; truth = the LCP's J^T F / dt).  Observer gain K = 50 1/s.
Reports, over the contact samples later than 5/K after each contact onset ("settled") and over
all contact samples: the relative error |r - tau_ext| / |tau_ext| (median, 95th percentile),
the force-estimate error at the true point, and the peak |tau_ext| (the rigid wall's impact).
Writes out/benchmarks/rigid_observer.md (or --out-dir DIR).
"""

MEASURES = ('ros_dynamics/estimation/observer.py', 'ros_dynamics/simulation', 'urdf/arm7.urdf')

import argparse

import numpy as np

from common import add_out_dir, log, output, report

import ros_dynamics as rd  # noqa: E402
from ros_dynamics import MomentumObserver  # noqa: E402
from ros_dynamics import simulation as S  # noqa: E402
from ros_dynamics.simulation.rigid_simulator import rigid_scenario  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_out_dir(ap)
    args = ap.parse_args()
    model = rd.load_urdf(rd.bundled_urdf('arm7'))
    K = 50.0
    lines = ['# Momentum observer vs ground truth: spring-damper wall vs rigid (LCP) wall', '',
             'arm7 wall scenario, 6 s, dt = 1 ms, observer gain K = 50 1/s. "settled": contact samples later '
             'than 5/K = 0.1 s after each contact onset.', '',
             '| wall | contact samples | contact episodes | settled rel. err. median | settled p95 | all-contact p95 '
             '| force err. (settled, median) | peak abs(tau_ext) [Nm] | settled median abs(tau_ext) [Nm] |',
             '|---|---|---|---|---|---|---|---|---|']
    for mode, make in (('spring-damper', S.make_scenario), ('rigid (OS LCP)', rigid_scenario)):
        log(mode)
        sim, desc = make(model, 'wall')
        res = S.simulate_observer(sim, MomentumObserver(model, K), None, 6.0, estimate_force=True)
        c = res['contact']
        runs = S.runs(c)
        settled = np.zeros(len(c), bool)
        for a, b in runs:
            settled[a + int(5 / K / sim.dt):b] = True
        def rel(mask):
            e = np.linalg.norm(res['r'][mask] - res['tau_ext'][mask], axis=1)
            return e / np.linalg.norm(res['tau_ext'][mask], axis=1)
        rs, ra = rel(settled), rel(c)
        nt = np.linalg.norm(res['tau_ext'], axis=1)
        lines.append(f'| {mode} | {int(c.sum())} | {len(runs)} | {np.median(rs):.1e} | {np.percentile(rs, 95):.3f} | '
                     f'{np.percentile(ra, 95):.3f} | {np.nanmedian(res["force_err"][settled]):.1e} | '
                     f'{nt.max():.1f} | {np.median(nt[settled]):.2f} |')
    report(output(args.out_dir, 'rigid_observer.md'), '\n'.join(lines) + '\n')


if __name__ == '__main__':
    main()
