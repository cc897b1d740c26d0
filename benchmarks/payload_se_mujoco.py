#!/usr/bin/env python3
"""A payload's standard errors against its true error: do they cover it? (MuJoCo arm plants, ~10 min)

The plants of thresholds_mujoco.py (arm7 in MuJoCo with every link 20-30 % off, rotor inertia,
dry friction growing with the load torque (+3 % of |tau|, ``--load-friction``), viscous
friction, torque offsets, torques through torque constants 1-3 % off per joint, current-like
noise, a 1 kHz or 100 Hz controller with jittered periods).  Per plant: 30 s of excitation
motion without the payload (the reference) and 30 s with a 2.8 kg tool on the last link (CoM
(0, 10, 60) mm); the robot identified from the reference (``calibrate --links all``, with the
estimator's friction law), then the payload against it (``calibrate --payload-link
--reference``), with

* ``default``: the default options: standard errors from the noise (least squares inflated by
  the residual's autocorrelation time), a delete-one-block jackknife, torque constants 2 %
  off per joint (one standard deviation) and the spread of refits with the velocities
  differentiated from the positions and low-passed at 20 and 5 Hz; load-dependent Coulomb
  friction selected on the reference's held-out samples and held in the payload's fit;
  joints at rest left out;
* ``F_l in the payload fit only``: the default options, but the reference identified with a
  constant Coulomb law, the payload's fit selecting its own ``F_l`` (the estimator before the
  reference's ``F_l`` was held);
* ``noise and jackknife``: the standard errors of noise and jackknife only
  (``torque_scale_error=0``, ``velocity_filters=()``), constant Coulomb friction.

Reported per trial: mass error and its standard error, CoM error per axis [mm], its standard
error, and the error's size over its standard error; then per estimator the share of the CoM components (and masses)
within 2 standard errors, and the largest ratio (``error / SE``: absolute values).

    python benchmarks/payload_se_mujoco.py [--seeds 1 2 3 4 5 6] [--seeds-100 1 2 3]
        [--load-friction 0.03] [--out-dir out/benchmarks]
"""
import argparse

import numpy as np

from common import add_out_dir, docstring_report, log, output, provenance, report

MEASURES = ('ros_dynamics/identification', 'ros_dynamics/estimation/observer.py',
            'ros_dynamics/estimation/cycle.py')
from thresholds_mujoco import EXCITE, MODEL, TOOL, K, plant, samples

import ros_dynamics as rd
from ros_dynamics.identification.whole_model import identify_recording, payload_against_reference
from ros_dynamics.simulation.mujoco_plant import perturbed_model

ESTIMATORS = {'default': {},
              'F_l in the payload fit only': {'reference_load_friction': False},
              'noise and jackknife': {'torque_scale_error': 0.0, 'load_friction': False,
                                      'velocity_filters': ()}}


def one(seed, rate, load_friction):
    rng = np.random.default_rng(100 + seed)
    scale = 1.0 + rng.choice((-1, 1), 7) * rng.uniform(0.01, 0.03, 7)
    truth = perturbed_model(MODEL, spread=(0.2, 0.3), seed=seed)
    ref = samples(plant(truth, 3, EXCITE, rate, scale, load_friction=load_friction).run(30.0))
    withp = samples(plant(rd.attach_payload(truth, 'arm_link_7', *TOOL), 4, EXCITE, rate,
                          scale, load_friction=load_friction).run(30.0))
    out = {}
    for name, options in ESTIMATORS.items():   # the robot with the estimator's friction law
        options = dict(options)
        law = options.pop('reference_load_friction', options.get('load_friction', 'auto'))
        robot = identify_recording(MODEL, ref, gain=K, load_friction=law)
        _, cal = payload_against_reference(MODEL, withp, ref, 'arm_link_7', gain=K, robot=robot,
                                           **options)
        err = cal.payload_com - TOOL[1]
        out[name] = {'mass err [%]': 100 * (cal.payload_mass - TOOL[0]) / TOOL[0],
                     'mass error / SE': abs(cal.payload_mass - TOOL[0]) / cal.payload_mass_se,
                     'CoM err [mm]': 1e3 * err, 'CoM SE [mm]': 1e3 * cal.payload_com_se,
                     'CoM error / SE': np.abs(err) / cal.payload_com_se,
                     'load friction': cal.friction_load is not None}
    return out


def f(a, n=3):
    return '[' + ', '.join(f'{x:.{n}g}' for x in a) + ']'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--seeds', type=int, nargs='*', default=[1, 2, 3, 4, 5, 6],
                    help='plant draws at 1 kHz')
    ap.add_argument('--seeds-100', type=int, nargs='*', default=[1, 2, 3],
                    help='plant draws at 100 Hz')
    ap.add_argument('--load-friction', type=float, default=0.03,
                    help='the plants\' dry friction per N m of load torque (0.1-0.2: a '
                    'harmonic drive with torques from currents)')
    add_out_dir(ap)
    args = ap.parse_args()
    head = provenance()
    trials = [(s, 1000) for s in args.seeds] + [(s, 100) for s in args.seeds_100]
    rows = []
    for seed, rate in trials:
        log(f'plant seed {seed}, {rate} Hz ...')
        rows.append(((seed, rate), one(seed, rate, args.load_friction)))
        log(rows[-1])
    keys = ['mass err [%]', 'mass error / SE', 'CoM err [mm]', 'CoM SE [mm]', 'CoM error / SE',
            'load friction']
    fmt = lambda x: f(x) if isinstance(x, np.ndarray) else (  # noqa: E731
        str(x) if isinstance(x, bool) else f'{x:.3g}')
    lines = []
    for name in ESTIMATORS:
        z = np.concatenate([r[name]['CoM error / SE'] for _, r in rows])
        zm = np.array([r[name]['mass error / SE'] for _, r in rows])
        lines += [f'### {name}', '',
                  f'- CoM components within 2 standard errors: {np.sum(z <= 2)} of {z.size} '
                  f'({np.mean(z <= 2):.0%}); largest |error| / SE {z.max():.3g}; median SE '
                  f'{np.median(np.concatenate([r[name]["CoM SE [mm]"] for _, r in rows])):.3g} mm',
                  f'- masses within 2 standard errors: {np.sum(zm <= 2)} of {zm.size}; largest '
                  f'|error| / SE {zm.max():.3g}', '',
                  '| plant | ' + ' | '.join(keys) + ' |', '|---|' + '---|' * len(keys)]
        lines += [f'| seed {s}, {rate} Hz | ' + ' | '.join(fmt(r[name][k]) for k in keys) + ' |'
                  for (s, rate), r in rows]
        lines.append('')
    name = ('payload_se_mujoco.md' if args.load_friction == 0.03 else
            f'payload_se_mujoco_load{args.load_friction:g}.md')
    report(output(args.out_dir, name),
           docstring_report(__doc__, head, '\n'.join(lines)))


if __name__ == '__main__':
    main()
