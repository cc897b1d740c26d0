#!/usr/bin/env python3
"""Momentum-observer report on the bundled arm7 (simulation, no ROS; ~1 min).

For K in {10, 50, 200} 1/s at 1 kHz prints, for the exact model and for a perturbed one
(1 % random error of every link's mass and inertia in the plant + sensor noise: 1e-5 rad,
2e-3 rad/s, 0.05 N m):

* step response: max |r − K/(s+K) τ_ext| during motion, and |r − τ_ext| from 5/K after the step
  at rest, both in % of the step;
* false detections (onsets) in 60 s of contact-free motion;
* detection delay and isolated link for the scripted contacts (push on arm_link_7, push on
  arm_link_4 during motion, wall contact of the tool), from the start of the contact;
* force-estimate error (force-only least squares at the known contact point, mean over the
  settled part of each push, in % of |F|).

Thresholds: exact model 0.2 N m on every joint; perturbed model calibrated on 20 s of
contact-free motion (other noise seed) with ``calibrate_thresholds(margin=1.5, floor=0.1)``.

    python benchmarks/observer_report.py [--gains 10 50 200] [--free 60] [--out-dir DIR]

Writes out/benchmarks/observer_report.md.
"""

MEASURES = ('ros_dynamics/estimation/observer.py', 'ros_dynamics/simulation',
            'ros_dynamics/identification/thresholds.py', 'urdf/arm7.urdf')

import argparse

import numpy as np

from common import add_out_dir, log, output, report

import ros_dynamics as rd  # noqa: E402
from ros_dynamics import simulation as S  # noqa: E402
from ros_dynamics.control.trajectories import MinJerkTrajectory  # noqa: E402
from ros_dynamics.estimation.observer import ContactDetector, MomentumObserver  # noqa: E402
from ros_dynamics.identification.thresholds import calibrate_thresholds  # noqa: E402

NOISE = dict(noise_position=1e-5, noise_velocity=2e-3, noise_effort=0.05)


def step_errors(model, K):
    sim, desc = S.make_scenario(model, 'push')
    res = S.simulate_observer(sim, MomentumObserver(model, K), None, 3.6)
    a = np.exp(-K * sim.dt)
    ref = np.zeros_like(res['tau_ext'])
    for i in range(1, len(ref)):
        ref[i] = a * ref[i - 1] + (1 - a) * res['tau_ext'][i]
    step = np.abs(res['tau_ext'][int(round(2.0 / sim.dt)) + 1]).max()
    e_motion = np.abs(res['r'] - ref).max() / step
    traj = MinJerkTrajectory([0.0, 1.0], [sim.trajectory.q0, sim.trajectory.q0])
    sim2 = S.Simulator(model, traj, sim.controller, [
        S.WrenchContact(desc['contact_link'], force=(-20.0, 20.0, 10.0), point=desc['point'],
                        t_start=0.5)])
    res2 = S.simulate_observer(sim2, MomentumObserver(model, K), None, 0.5 + 6.0 / K)
    k1 = int(round((0.5 + 5.0 / K) / sim.dt)) + 1
    step2 = np.abs(res2['tau_ext'][k1:]).max()
    e_rest = np.abs(res2['r'][k1:] - res2['tau_ext'][k1:]).max() / step2
    return 100 * e_motion, 100 * e_rest


def contact_runs(plant, model, K, thr, noise, seed):
    out = []
    for sc, dur in (('push', 7.0), ('mixed', 5.0)):
        sim, desc = S.make_scenario(plant, sc, controller_model=model, seed=seed, **noise)
        res = S.simulate_observer(sim, MomentumObserver(model, K), ContactDetector(model, thr),
                                  dur, estimate_force=True)
        met = S.detection_metrics(res, K)
        eps = met['episodes'] if sc == 'push' else met['episodes'][:1]
        for e in eps:
            e['name'] = {('push', 0): 'push link7', ('push', 1): 'push link4',
                         ('mixed', 0): 'wall (tool)'}[(sc, len([x for x in out
                                                                 if x['scenario'] == sc]))]
            e['scenario'] = sc
            e['false_onsets'] = met['false_onsets']
            out.append(e)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--gains', type=float, nargs='+', default=[10.0, 50.0, 200.0])
    ap.add_argument('--free', type=float, default=60.0, help='free-motion seconds')
    add_out_dir(ap)
    args = ap.parse_args()
    with open(rd.bundled_urdf('arm7')) as f:
        xml = f.read()
    model = rd.load_urdf(xml)
    plant_err = rd.load_urdf(S.perturb_urdf_inertia(xml, 0.01, seed=1))
    log(f'arm7, 1 kHz, semi-implicit Euler; free motion {args.free:g} s per case')
    rows = []
    for K in args.gains:
        log(f'K = {K:g} ...')
        e_motion, e_rest = step_errors(model, K)
        # exact model
        thr0 = np.full(model.nv, 0.2)
        sim, _ = S.make_scenario(model, 'none')
        free = S.simulate_observer(sim, MomentumObserver(model, K), ContactDetector(model, thr0),
                                   args.free)
        fp0 = S.detection_metrics(free, K)['false_onsets']
        eps0 = contact_runs(model, model, K, thr0, {}, 0)
        # perturbed model + noise
        sim, _ = S.make_scenario(plant_err, 'none', seed=11, controller_model=model, **NOISE)
        cal = S.simulate_observer(sim, MomentumObserver(model, K), None, 20.0)
        thr = calibrate_thresholds(cal['r'], margin=1.5, floor=0.1)
        sim, _ = S.make_scenario(plant_err, 'none', seed=12, controller_model=model, **NOISE)
        free = S.simulate_observer(sim, MomentumObserver(model, K), ContactDetector(model, thr),
                                   args.free)
        met = S.detection_metrics(free, K)
        eps1 = contact_runs(plant_err, model, K, thr, NOISE, 13)
        rows.append((K, e_motion, e_rest, fp0, eps0, thr, met, eps1, free))

    names = [e['name'] for e in rows[0][4]]
    eps_head = ' | '.join(f'{n}: delay [ms], F err [%]' for n in names)
    lines = ['# Momentum observer on arm7 (simulation, no ROS)', '',
             f'arm7, 1 kHz, semi-implicit Euler; {args.free:g} s of free motion per case. Step '
             'error: max |r - K/(s+K) tau_ext| during motion, and |r - tau_ext| from 5/K after the '
             'step at rest, in % of the step. Delays from the start of each contact; F err: '
             'force-only least squares at the known contact point, mean over the settled push.',
             '', '## Exact model, no noise (thresholds 0.2 N m)', '',
             f'| K [1/s] | step error in motion [%] | abs(r - tau) after 5/K [%] | false onsets | '
             f'{eps_head} |', '|---:|---:|---:|---:|' + '---|' * len(names)]
    for K, em, er, fp0, eps0, *_ in rows:
        lines.append(f'| {K:g} | {em:.3f} | {er:.3f} | {fp0} | {_cells(eps0)} |')
    lines += ['', '## 1 % inertial error (every link) + noise 1e-5 rad, 2e-3 rad/s, 0.05 N m; '
              'thresholds calibrated on 20 s of free motion (margin 1.5, floor 0.1 N m)', '',
              f'| K [1/s] | thresholds [N m] | false onsets | false time [s] | false onsets per '
              f'min | {eps_head} |', '|---:|---|---:|---:|---:|' + '---|' * len(names)]
    for K, _, _, _, _, thr, met, eps1, free in rows:
        rate = met['false_onsets'] / (met['duration'] / 60.0)
        lines.append(f'| {K:g} | {np.array2string(thr, precision=2, separator=", ")} | '
                     f'{met["false_onsets"]} | {met["false_time"]:.3f} | {rate:.2f} | '
                     f'{_cells(eps1)} |')
    report(output(args.out_dir, 'observer_report.md'), '\n'.join(lines) + '\n',
           draws='one draw each: plant inertias perturbed with seed 1; sensor noise seeds 11 '
           '(calibration), 12 (free motion), 13 (contacts)')


def _cells(eps):
    """One table cell per contact episode: delay [ms], force-estimate error [%] (and a wrong
    isolated link)."""
    out = []
    for e in eps:
        d = 'missed' if not np.isfinite(e['delay']) else f'{1e3 * e["delay"]:.0f}'
        fe = '' if not np.isfinite(e['force_err']) else f', {100 * e["force_err"]:.1f}'
        ok = '' if e['link'] == e['true_link'] else f' (isolated {e["link"]})'
        out.append(f'{d}{fe}{ok}')
    return ' | '.join(out)

if __name__ == '__main__':
    main()
