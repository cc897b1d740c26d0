#!/usr/bin/env python3
"""Floating-base identification (calibrate --floating-base) on a MuJoCo quadruped (~3 min).

The plant is the bundled quadruped in MuJoCo (ros_dynamics.simulation.mujoco_quadruped) with
every link's mass, CoM and principal inertias 20-30 % off the URDF
(ros_dynamics.simulation.legged_identification.plant_urdf, seed 1).  The identification
recording: the whole-body controller (given the plant's own model, so that it stays standing)
plays control.stand_step.ExcitingStandSchedule at 1 kHz (three feet lifted in turn: on MuJoCo's
soft floor the feet creep and the fourth lift tips this plant over; then the trunk swayed in
six directions and the weight shifted towards each foot; the recording ends 0.5 s before a
fall, if any); joint states and the base pose and twist are written to a
bag (joint_states + nav_msgs/Odometry) and read back, once with the odometry clean and once
with white noise on it (pose 1 mm / 1 mrad, twist 0.01 m/s / 0.01 rad/s, 1 sigma per sample),
and the whole model is identified from it with the default options (stance from the foot
speeds; fit on the first 70 %).

Judged on other motion, with clean odometry: control.stand_step.StandStepSchedule played by the
same controller on the same plant (stand, CoM trajectory, weight shift, the left front foot
lifted and put down, shift back, stand) with a 15.8 N push on the trunk from 6.0 to 6.8 s,
replayed through the node's cycle
(identification.calibration.observer_residuals) with the URDF as shipped and with the
identified model, its residual split by estimation.contact_forces.ContactForceEstimator over
the four feet (threshold 8 N, release 4 N): per-foot force rms error as a fraction of the
plant's weight (reference: MuJoCo's foot forces through the observer's exact K/(s+K)), contact
state accuracy, and the push's generalized force found in the unexplained part (relative
error), as in benchmarks/contact_forces.py; the same with the plant's own inertials shows what
the estimator itself leaves.

    python benchmarks/identification_floating_mujoco.py [--out-dir out/benchmarks]
"""
import argparse
import os
import subprocess
import tempfile
import time

import numpy as np

from common import add_out_dir, docstring_report, log, output, provenance, report

from ros_dynamics.identification import bags
from ros_dynamics.identification.floating_base import identify_floating_recording, unexplained
from ros_dynamics.identification.samples import Samples
from ros_dynamics.simulation.contact_force_runs import filtered, metrics
from ros_dynamics.simulation.legged_identification import plant_urdf, record, shipped
from ros_dynamics.simulation.mujoco_quadruped import FEET

K = 50.0
NOISE = (1e-3, 0.01)            # odometry: pose [m, rad], twist [m/s, rad/s], 1 sigma
THRESHOLD = 8.0                 # foot-force threshold [N] (release 4 N), as contact_forces.py
PUSH = (6.0, 6.8, np.array([5.0, 15.0, 0.0]))     # on the trunk [s, s, N world]


def judge(run, model, fv=0.0, fc=0.0):
    """The contact-force figures of ``model`` on the evaluation run (contact_force_runs.metrics)."""
    s = Samples(run['t'], run['q'], run['v'], run['tau'])
    rows = np.arange(1, len(s))
    U, F, C = unexplained(model, s, FEET, rows, K, fv, fc, force_threshold=THRESHOLD)
    dt = run['dt']
    out = dict(t=run['t'][rows], feet=run['feet'][rows], estimate=F,
               filtered=filtered(run['feet'], K, dt)[rows],
               in_contact=C, unexplained=U,
               push=filtered(run['push'], K, dt)[rows], phase=run['phase'][rows],
               weight=run['weight'], release=0.5 * THRESHOLD)
    return metrics(out)


def commit():
    try:
        return subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], capture_output=True,
                              text=True, cwd=os.path.dirname(os.path.abspath(__file__))
                              ).stdout.strip() or 'unknown'
    except OSError:
        return 'unknown'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    add_out_dir(ap)
    ap.add_argument('--seed', type=int, default=1, help='plant draw (default 1)')
    ap.add_argument('--duration', type=float, default=None,
                    help='identification recording [s] (default: the whole schedule)')
    args = ap.parse_args()
    head = provenance() + f'; commit {commit()}'
    _, _, model = shipped()
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        path, truth = plant_urdf(tmp, seed=args.seed)
        log('evaluation run (StandStepSchedule with a push) ...')
        run = record(path, 'stand_step', controller_model=truth, push=PUSH)
        run['q'], run['v'] = run['q_true'], run['v_true']
        w = run['weight']
        lines += [f'Plant seed {args.seed}: mass {truth.total_mass():.3f} kg (URDF '
                  f'{model.total_mass():.3f} kg), weight {w:.1f} N.', '']
        res = {'URDF as shipped': judge(run, model),
               "the plant's own inertials (the estimator's limit)": judge(run, truth)}
        log('identification recording (ExcitingStandSchedule) ...')
        rec = record(path, 'excite', duration=args.duration, controller_model=truth,
                     repeats=1, lifts=FEET[:3])
        end = rec['t'][-1]
        fell = (f'; the plant fell in the phase {str(rec["phase"][-1])!r}, the recording ends 0.5 s '
                'before' if end < rec['planned'] - 1e-6 else '')
        lines.append(f'Identification recording: {end:.1f} s of the schedule\'s '
                     f'{rec["planned"]:.1f} s{fell}; {rec["failed"]} unsolved QPs.')
        rng = np.random.default_rng(7)
        for label, noise in (('clean odometry', (0.0, 0.0)), ('noisy odometry', NOISE)):
            q, v = rec['q_true'].copy(), rec['v_true'].copy()
            if noise[0] > 0:
                q[:, :3] += noise[0] * rng.standard_normal((len(q), 3))
                q[:, 3:7] += 0.5 * noise[0] * rng.standard_normal((len(q), 4))
                q[:, 3:7] /= np.linalg.norm(q[:, 3:7], axis=1, keepdims=True)
                v[:, :6] += noise[1] * rng.standard_normal((len(v), 6))
            bag = os.path.join(tmp, label.replace(' ', '_'))
            bags.write_floating_base(bag, dict(t=rec['t'], q=q, v=v, tau=rec['tau']),
                                     model.joint_names, storage='mcap')
            s = bags.read_floating_base(bag, model.joint_names)
            log(f'identifying ({label}) ...')
            t0 = time.process_time()
            ident = identify_floating_recording(model, s, FEET, gain=K)
            cpu = time.process_time() - t0
            lines += ['', f'### Identified from the recording with {label}', '',
                      f'- CPU time of the identification: {cpu:.0f} s']
            lines += [f'- {x}' for x in ident.summary()]
            idm = ident.model(model)
            res[f'identified, {label}'] = judge(run, idm, ident.friction_viscous,
                                                ident.friction_coulomb)
    table = ['', '### The evaluation run (other motion, clean odometry)', '',
             '| model | rms error per foot LF, RF, LH, RH (of the weight) | worst foot | '
             'contact state accuracy | push in unexplained, rel. error |', '|---|---|---|---|---|']
    for name, m in res.items():
        table.append(f'| {name} | ' + ', '.join(f'{100 * x:.2f} %' for x in m['rms_per_foot'])
                     + f' | {100 * max(m["rms_per_foot"]):.2f} % | '
                     f'{100 * m["state_accuracy"]:.2f} % | {100 * m["push_relative_error"]:.2f} % |')
    text = '\n'.join(lines + table)
    report(output(args.out_dir, 'identification_floating_mujoco.md'),
           docstring_report(__doc__, head, text))


if __name__ == '__main__':
    main()
