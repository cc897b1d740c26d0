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

    python benchmarks/observer_report.py [--gains 10 50 200] [--free 60]
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

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


def fmt_eps(eps):
    parts = []
    for e in eps:
        ok = '' if e['link'] == e['true_link'] else f' WRONG:{e["link"]}'
        fe = '' if not np.isfinite(e['force_err']) else f', F err {100 * e["force_err"]:.1f}%'
        d = 'missed' if not np.isfinite(e['delay']) else f'{1e3 * e["delay"]:.0f} ms'
        parts.append(f'{e["name"]}: {d}{fe}{ok}')
    return '; '.join(parts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--gains', type=float, nargs='+', default=[10.0, 50.0, 200.0])
    ap.add_argument('--free', type=float, default=60.0, help='free-motion seconds')
    args = ap.parse_args()
    t0 = time.time()
    with open(rd.bundled_urdf('arm7')) as f:
        xml = f.read()
    model = rd.load_urdf(xml)
    plant_err = rd.load_urdf(S.perturb_urdf_inertia(xml, 0.01, seed=1))
    print(f'arm7, 1 kHz, semi-implicit Euler; free motion {args.free:g} s per case\n')
    rows = []
    for K in args.gains:
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

    print('Exact model, no noise (thresholds 0.2 N m)')
    print(f'{"K [1/s]":>8} | {"step err (motion)":>17} | {"|r-tau| after 5/K":>17} | '
          f'{"false det.":>10} | detection delay, force-estimate error')
    for K, em, er, fp0, eps0, *_ in rows:
        print(f'{K:8g} | {em:16.3f}% | {er:16.3f}% | {fp0:10d} | {fmt_eps(eps0)}')
    print('\n1 % inertial error (every link, random) + noise 1e-5 rad / 2e-3 rad/s / 0.05 N m '
          '(calibrated thresholds)')
    print(f'{"K [1/s]":>8} | {"thresholds [N m]":>40} | {"false det.":>10} | '
          f'{"false time":>10} | detection delay, force-estimate error')
    for K, _, _, _, _, thr, met, eps1, free in rows:
        fp = met['false_onsets'] + sum(e['false_onsets'] for e in eps1[:1] + eps1[2:])
        print(f'{K:8g} | {np.array2string(thr, precision=2, separator=","):>40} | '
              f'{met["false_onsets"]:10d} | {met["false_time"]:9.3f}s | {fmt_eps(eps1)}')
        rate = met['false_onsets'] / (met['duration'] / 60.0)
        print(f'{"":8} |   false-positive rate {rate:.2f}/min in free motion; '
              f'{fp - met["false_onsets"]} outside contact windows of the contact runs')
    print(f'\n(total {time.time() - t0:.0f} s)')


if __name__ == '__main__':
    main()
