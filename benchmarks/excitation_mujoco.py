#!/usr/bin/env python3
"""Excitation that is worth it: identification from the optimised trajectory (calibrate excite) against plain ones of the same duration, on independent MuJoCo plants.

`calibrate excite` (ros_dynamics.identification.excitation) optimises a Fourier series
(Swevers et al. 1997) for the condition number of the identification regressor, with the exact
gradient.  Its cost is timed here (process CPU time; the first call, which compiles, is not
counted).  Each plant is the arm7 plant of identification_mujoco.py (every link's mass, CoM and
principal inertias 20-30 % off the URDF, a different draw per seed; MuJoCo's armature,
damping and dry friction; torque offsets; sensor noise), driven for the same duration along

* ``optimised``: the trajectory `calibrate excite` writes (default options);
* ``start``: the series the optimiser starts from (random coefficients shrunk into the same
  limits): a plain Fourier series of the same family and limits;
* ``sine``: the plain sines of identification_mujoco.py (one frequency per joint).

Each recording is identified with the default options (``calibrate --links all``:
identify_recording, fit on its first 70 %), then judged on the plant's truth:

* the held-out residual on *other* motion: 20 s of a different trajectory and noise seed
  replayed through the node's pipeline with the identified model, friction, armature and
  torque offset (rms over joints and time, and the worst joint's rms) [N m];
* the parameter error: the identified inertial parameters against the plant's, each scaled by
  its natural size (mass m_0, first moment m_0 L, inertia m_0 L², as the identification scales
  them), as the norm of the scaled error over the norm of the scaled truth [%], and the worst
  relative error of a link mass [%]; the armature's rms error against MuJoCo's [kg m²];
* the condition number of the regressor at the optimiser's samples, and what identify reports
  (the rank of the base part and its condition).

    python benchmarks/excitation_mujoco.py [--seeds 1 2 3] [--duration 20] [--out-dir out/benchmarks]
"""
import argparse
import sys
import time

import numpy as np

from common import add_out_dir, docstring_report, log, output, provenance, report

MEASURES = ('ros_dynamics/identification', 'ros_dynamics/estimation/observer.py',
            'ros_dynamics/estimation/cycle.py')

from identification_mujoco import ARMATURE, EXCITE, K, MODEL, OTHER, plant, samples
from ros_dynamics.identification.calibration import observer_residuals
from ros_dynamics.identification.excitation import ExcitationProblem, optimise_excitation
from ros_dynamics.identification.inertial_parameters import inertial_parameters, parameter_scales
from ros_dynamics.identification.whole_model import identify_recording
from ros_dynamics.simulation.mujoco_plant import perturbed_model


class Shifted:
    """A periodic trajectory run from ``t0`` on (the sines start at rest at ``t = 0``; the Fourier
    series are used as written)."""

    def __init__(self, traj):
        self.traj = traj

    def __call__(self, t):
        q, v, a = self.traj(t)
        return q[0], v[0], a[0]


def judge(truth, recording, other):
    """Identify the recording; held-out residual on ``other`` motion and parameter errors."""
    ident = identify_recording(MODEL, samples(recording), gain=K)
    res = observer_residuals(ident.model(MODEL), other, K, ident.friction_viscous,
                             ident.friction_coulomb, torque_offset=ident.torque_offset)
    r = res['r'][np.all(np.isfinite(res['r']), axis=1)]
    rms_joint = np.sqrt(np.mean(r ** 2, axis=0))
    true = inertial_parameters(truth)
    scale = parameter_scales(MODEL, inertial_parameters(MODEL)).reshape(true.shape)
    err = np.linalg.norm((ident.parameters - true) / scale) / np.linalg.norm(true / scale)
    mass = np.max(np.abs(ident.parameters[:, 0] - true[:, 0]) / true[:, 0])
    return {'held-out rms [N m]': f'{np.sqrt(np.mean(r ** 2)):.4f}',
            'worst joint rms [N m]': f'{rms_joint.max():.4f}',
            'parameter error [%]': f'{100 * err:.1f}',
            'worst link mass error [%]': f'{100 * mass:.1f}',
            'armature rms error [kg m²]':
                f'{np.sqrt(np.mean((ident.armature - ARMATURE) ** 2)):.4f}',
            'base parameters': f'{ident.base.rank} of {ident.base.n_parameters}',
            'identify condition': f'{ident.base.condition:.3g}'}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--seeds', type=int, nargs='+', default=[1, 2, 3], help='plant seeds')
    ap.add_argument('--duration', type=float, default=20.0,
                    help='duration of each recording and period of the series [s]')
    add_out_dir(ap)
    args = ap.parse_args()
    head = provenance()
    optimise_excitation(MODEL, args.duration, 1, samples=10, maxiter=1)      # compile
    t0 = time.process_time()
    optimised, c_start, c_opt = optimise_excitation(MODEL, args.duration)
    cpu = time.process_time() - t0
    log(f'excite: {cpu:.1f} s CPU, condition {c_start:.3g} -> {c_opt:.3g}')
    problem = ExcitationProblem(MODEL, args.duration)
    start = problem.trajectory(problem.x0)
    q, v, a = EXCITE(problem.t[:, None])
    conds = {'optimised': f'{c_opt:.3g}', 'start': f'{c_start:.3g}',
             'sine': f'{problem.condition_at(q, v, a):.3g}'}
    rows = []
    for seed in args.seeds:
        truth = perturbed_model(MODEL, spread=(0.2, 0.3), seed=seed)
        other = samples(plant(truth, 11, OTHER).run(20.0))
        for name, traj in (('optimised', Shifted(optimised)), ('start', Shifted(start)),
                           ('sine', EXCITE)):
            log(f'plant seed {seed}, {name} ...')
            rec = plant(truth, 3, traj).run(args.duration)
            row = {'plant': f'seed {seed}', 'trajectory': name}
            row.update(judge(truth, rec, other))
            rows.append(row)
            log(row)
    cols = list(rows[0])
    table = '\n'.join(['| ' + ' | '.join(cols) + ' |', '|' + '---|' * len(cols)] +
                      ['| ' + ' | '.join(str(r[c]) for c in cols) + ' |' for r in rows])
    summary = []
    for name in ('optimised', 'start', 'sine'):
        mine = [r for r in rows if r['trajectory'] == name]
        summary.append(f'| {name} | {conds.get(name, "-")} | '
                       + ' | '.join(f'{min(float(r[k]) for r in mine):g}-'
                                    f'{max(float(r[k]) for r in mine):g}'
                                    for k in ('held-out rms [N m]', 'parameter error [%]',
                                              'worst link mass error [%]')) + ' |')
    body = (f'`calibrate excite` (default options: {args.duration:g} s, 4 harmonics, 120 samples, '
            f'up to 100 iterations): {cpu:.1f} s of CPU, condition number {c_start:.3g} -> '
            f'{c_opt:.3g}.\n\n'
            '| trajectory | condition at the samples | held-out rms on other motion [N m] '
            '| parameter error [%] | worst link mass error [%] |\n|---|---|---|---|---|\n'
            + '\n'.join(summary) + f'\n\nRanges over the plants (seeds {args.seeds}).\n\n'
            + table)
    report(output(args.out_dir, 'excitation_mujoco.md'), docstring_report(__doc__, head, body))


if __name__ == '__main__':
    sys.exit(main())
