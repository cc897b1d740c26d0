#!/usr/bin/env python3
"""Floating-base identification (calibrate --floating-base) on a MuJoCo quadruped (~5 min).

The plant is the bundled quadruped in MuJoCo (ros_dynamics.simulation.mujoco_quadruped) with
every link's mass, CoM and principal inertias 20-30 % off the URDF
(ros_dynamics.simulation.legged_identification.plant_urdf, seed 1).  The identification
recording: the whole-body controller (given the plant's own model, so that it stays standing)
plays control.stand_step.ExcitingStandSchedule at 1 kHz (three feet lifted in turn: on MuJoCo's
soft floor the feet creep and the fourth lift tips this plant over; then the trunk swayed in
six directions and the weight shifted towards each foot; the recording ends 0.5 s before a
fall, if any); joint states and the base pose and twist are written to a bag (joint_states +
nav_msgs/Odometry) and read back, once with the odometry exact and once as a legged robot's
state estimator gives it (mujoco_quadruped.REALISTIC_ODOMETRY: 0.03 m/s white noise on the
linear twist, 10 ms late, 200 Hz, held between updates), and the whole model is identified
from it with the default options (stance from the foot speeds; fit on the first 70 %; the base
twist from the stance legs, odom_twist_noise 0.03), and, to compare, from the realistic one
with the odometry's twist as is (odom_twist_noise 0: the fit before the stance legs' twist).

Judged on other motion and another controller, MuJoCo's truth only: the contact-force scenario
of benchmarks/contact_forces.py (simulation.contact_force_runs.run: a wide stance under PD +
gravity control on the URDF's model; stand, weight shift, the left front foot lifted and put
down, a lateral push of 20.4 N on the trunk raised and lowered over 0.2 s) on the same plant,
through the node's cycle (the contact-force estimator over the four feet, threshold 8 N, the
unexplained part from the stance legs' residual, odom_twist_noise 0.03: the node's defaults)
with the URDF as shipped, the plant's own inertials (what the estimator itself leaves) and the
identified models, each with the odometry exact and realistic: per-foot force rms error as a
fraction of the plant's weight (reference: MuJoCo's foot forces through the observer's exact
K/(s+K)), contact-state accuracy against MuJoCo's contacts, and the push's generalized force
found in the unexplained part (relative error; contact_force_runs.metrics).

    python benchmarks/identification_floating_mujoco.py [--out-dir out/benchmarks]
"""

MEASURES = ('ros_dynamics/identification', 'ros_dynamics/estimation', 'ros_dynamics/simulation',
            'urdf/quadruped.urdf')

import argparse
import os
import tempfile
import time

import numpy as np

from common import add_out_dir, docstring_report, log, output, provenance, report

from ros_dynamics.identification import bags
from ros_dynamics.identification.floating_base import identify_floating_recording
from ros_dynamics.simulation.contact_force_runs import metrics, run
from ros_dynamics.simulation.legged_identification import plant_urdf, record, shipped
from ros_dynamics.simulation.mujoco_quadruped import (FEET, REALISTIC_ODOMETRY, Sensors,
                                                      SensingOptions, ShiftLiftPush)

K = 50.0
SENSING = (('exact', SensingOptions()), ('realistic', REALISTIC_ODOMETRY))
#: the identifications: (label, the recording's odometry, the fit's odom_twist_noise); the last
#: is the fit before the stance legs' twist (the odometry's twist as is), to compare
FITS = (('exact odometry', SensingOptions(), 0.03),
        ('realistic odometry', REALISTIC_ODOMETRY, 0.03),
        ('realistic odometry, its twist as is (odom_twist_noise 0)', REALISTIC_ODOMETRY, 0.0))


def judge(path, model, options=None):
    """The contact-force figures (contact_force_runs.metrics) of the estimate with ``model`` and
    its observer ``options`` on the plant of ``path``, per odometry of SENSING."""
    return {name: metrics(run(gain=K, sensing=sens, plant_urdf=path, estimator=(
        model, options or {}), push=ShiftLiftPush.LATERAL_PUSH)) for name, sens in SENSING}


def sensed(rec, sensing):
    """The recording as the odometry of ``sensing`` reports it (Sensors: noise, delay, rate)."""
    sen = Sensors(sensing, rec['dt'])
    rows = [sen.measure(q, v, tau) for q, v, tau in zip(rec['q_true'], rec['v_true'], rec['tau'])]
    return {'t': rec['t'], 'q': np.array([r[0] for r in rows]),
            'v': np.array([r[1] for r in rows]), 'tau': np.array([r[2] for r in rows])}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    add_out_dir(ap)
    ap.add_argument('--seed', type=int, default=1, help='plant draw (default 1)')
    ap.add_argument('--duration', type=float, default=None,
                    help='identification recording [s] (default: the whole schedule)')
    args = ap.parse_args()
    head = provenance()
    _, _, model = shipped()
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        path, truth = plant_urdf(tmp, seed=args.seed)
        w = -truth.total_mass() * truth.gravity[2]
        lines += [f'Plant seed {args.seed}: mass {truth.total_mass():.3f} kg (URDF '
                  f'{model.total_mass():.3f} kg), weight {w:.1f} N.', '']
        log('evaluation runs (the contact-force scenario) ...')
        res = {'URDF as shipped': judge(path, model),
               "the plant's own inertials (the estimator's limit)": judge(path, truth)}
        log('identification recording (ExcitingStandSchedule) ...')
        rec = record(path, 'excite', duration=args.duration, controller_model=truth,
                     repeats=1, lifts=FEET[:3])
        end = rec['t'][-1]
        fell = (f'; the plant fell in the phase {str(rec["phase"][-1])!r}, the recording ends 0.5 s '
                'before' if end < rec['planned'] - 1e-6 else '')
        lines.append(f'Identification recording: {end:.1f} s of the schedule\'s '
                     f'{rec["planned"]:.1f} s{fell}; {rec["failed"]} unsolved QPs.')
        for label, sens, twist in FITS:
            bag = os.path.join(tmp, label.replace(' ', '_').replace(',', ''))
            bags.write_floating_base(bag, sensed(rec, sens), model.joint_names, storage='mcap')
            s = bags.read_floating_base(bag, model.joint_names)
            log(f'identifying ({label}) ...')
            t0 = time.process_time()
            ident = identify_floating_recording(model, s, FEET, gain=K, odom_twist_noise=twist)
            cpu = time.process_time() - t0
            lines += ['', f'### Identified from the recording with {label}', '',
                      f'- CPU time of the identification: {cpu:.0f} s']
            summary = ident.summary()
            lines += [f'- {x}' for x in (summary if twist > 0 else summary[:2])]
            res[f'identified, {label}'] = judge(path, ident.model(model), dict(
                friction_viscous=ident.friction_viscous,
                friction_coulomb=ident.friction_coulomb, torque_offset=ident.torque_offset))
    table = ['', '### The evaluation runs (other motion, another controller)', '',
             '| model | odometry of the evaluation | rms error per foot LF, RF, LH, RH (of the '
             'weight) | worst foot | contact state accuracy | push in unexplained, rel. error |',
             '|---|---|---|---|---|---|']
    for name, by in res.items():
        for sens, m in by.items():
            table.append(f'| {name} | {sens} | ' + ', '.join(
                f'{100 * x:.2f} %' for x in m['rms_per_foot'])
                + f' | {100 * max(m["rms_per_foot"]):.2f} % | '
                f'{100 * m["state_accuracy"]:.2f} % | {100 * m["push_relative_error"]:.2f} % |')
    text = '\n'.join(lines + table)
    report(output(args.out_dir, 'identification_floating_mujoco.md'),
           docstring_report(__doc__, head, text))


if __name__ == '__main__':
    main()
