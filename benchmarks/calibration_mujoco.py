#!/usr/bin/env python3
"""Calibration (friction + payload) measured on an independent plant: MuJoCo (~1 min).

The plant is arm7 simulated by MuJoCo (ros_dynamics.simulation.mujoco_plant), which shares no
code with the observer: its own rigid-body algorithms, viscous friction as MuJoCo's joint
``damping`` and dry friction as MuJoCo's ``frictionloss`` (a frictional constraint with a
bounded force, which sticks at velocity reversals; not the observer's ``tanh`` law).  The plant
carries an unknown 1.5 kg tool on arm_link_7 (CoM (10, -20, 80) mm, inertia diag(4, 5, 3)
g m²); F_v 0.1-0.8 N m s/rad, F_c 0.2-1 N m.  For each sensor-noise level and recording
length it records excitation motion (PD + gravity compensation on the nominal model, 1 kHz),
writes it as a bag, reads it back, calibrates with the default options (observer K = 50 1/s)
and reports:

* recovered vs true: mass, CoM, inertia (when identified), friction (max relative error);
* the residual rms before/after on the recording (max over joints);
* false contact onsets in 20 s of other free motion (another trajectory and noise seed),
  nominal vs calibrated observer, both with the calibrated thresholds;
* the residual bias under a known 20 N force on the tool (window mean from 5/K after the
  onset, relative to MuJoCo's external joint torque), nominal vs calibrated.

    python benchmarks/calibration_mujoco.py [--out-dir out/benchmarks]
"""
import argparse
import os
import tempfile
import time

import numpy as np

from common import add_out_dir, docstring_report, log, output, provenance, report

MEASURES = ('ros_dynamics/identification', 'ros_dynamics/estimation/observer.py',
            'ros_dynamics/estimation/cycle.py')

import ros_dynamics as rd
from ros_dynamics.identification import bags
from ros_dynamics.control.trajectories import SineTrajectory
from ros_dynamics.core.model import attach_payload
from ros_dynamics.identification.calibration import calibrate, observer_residuals
from ros_dynamics.identification.samples import CalibrationError, Samples
from ros_dynamics.simulation import home_pose
from ros_dynamics.simulation.mujoco_plant import MujocoPlant

MODEL = rd.load_urdf(rd.bundled_urdf('arm7'))
LINK = 'arm_link_7'
MASS, COM, INERTIA = 1.5, np.array([0.01, -0.02, 0.08]), np.diag([0.004, 0.005, 0.003])
FV = np.array([0.8, 0.8, 0.5, 0.5, 0.2, 0.2, 0.1])
FC = np.array([1.0, 1.0, 0.6, 0.6, 0.3, 0.3, 0.2])
K = 50.0
NOISE = {'none': (0.0, 0.0, 0.0), 'demo': (1e-5, 2e-3, 0.05), '3x demo': (3e-5, 6e-3, 0.15)}
HOME = home_pose(MODEL)[0]
EXCITE = SineTrajectory(HOME, np.array([0.5, 0.4, 0.5, 0.4, 0.8, 0.6, 1.0]),
                        0.15 + 0.05 * np.arange(7))
OTHER = SineTrajectory(HOME, np.array([0.3, 0.25, 0.4, 0.3, 0.5, 0.4, 0.6]),
                       0.11 + 0.03 * np.arange(7))
POINT, FORCE = np.array([0.0, 0.0, 0.05]), np.array([12.0, -10.0, -12.0])


def plant(noise, seed, trajectory, pushes=()):
    truth = attach_payload(MODEL, LINK, MASS, COM, INERTIA)
    return MujocoPlant(truth, trajectory, nominal=MODEL, damping=FV, frictionloss=FC,
                       noise_position=noise[0], noise_velocity=noise[1], noise_effort=noise[2],
                       seed=seed, pushes=pushes)


def samples(out):
    return Samples(out['t'], out['q'], out['v'], out['tau'])


def onsets(contact):
    return int(np.sum(contact[1:] & ~contact[:-1]) + contact[0])


def one(noise_name, duration, tmp):
    noise = NOISE[noise_name]
    out = plant(noise, 3, EXCITE).run(duration)
    path = os.path.join(tmp, f'{noise_name}_{duration}'.replace(' ', '_'))
    bags.write_joint_states(path, out, names=MODEL.joint_names, storage='mcap')
    s = bags.read_joint_states(path, joint_names=MODEL.joint_names)
    row = {'noise': noise_name, 'T [s]': duration}
    t0 = time.process_time()
    try:
        cal = calibrate(MODEL, s, LINK, gain=K)
        row['default options'] = 'accepted'
    except CalibrationError as exc:
        row['default options'] = 'refused: ' + str(exc).split(':')[0]
        cal = calibrate(MODEL, s, LINK, gain=K, contact='exclude')
    row['cpu [s]'] = time.process_time() - t0
    row.update({
        'mass err [%]': 100 * (cal.payload_mass - MASS) / MASS,
        'CoM err [mm]': 1e3 * np.linalg.norm(cal.payload_com - COM),
        'inertia err': ('%.1f %%' % (100 * np.linalg.norm(cal.payload_inertia - INERTIA)
                                     / np.linalg.norm(INERTIA)) if cal.inertia_identified
                        else 'not identified'),
        'Fv max err [%]': 100 * np.max(np.abs(cal.friction_viscous - FV) / FV),
        'Fc max err [%]': 100 * np.max(np.abs(cal.friction_coulomb - FC) / FC),
        'rms before [N m]': np.max(cal.before['rms']),
        'rms after [N m]': np.max(cal.after['rms'])})
    free = samples(plant(noise, 11, OTHER).run(20.0))
    nom = observer_residuals(MODEL, free, K, threshold=cal.thresholds)
    calr = observer_residuals(cal.model(MODEL), free, K, cal.friction_viscous,
                              cal.friction_coulomb, threshold=cal.thresholds)
    row['false onsets nominal'] = onsets(nom['contact'])
    row['false onsets calibrated'] = onsets(calr['contact'])
    out = plant(noise, 5, OTHER, pushes=[(LINK, POINT, FORCE, 2.0, 1e9)]).run(4.0)
    smp = samples(out)
    win = smp.t > 2.0 + 5.0 / K
    truth = np.mean(out['tau_ext'][win], axis=0)
    for name, model, fv, fc in (('nominal', MODEL, 0.0, 0.0),
                                ('calibrated', cal.model(MODEL), cal.friction_viscous,
                                 cal.friction_coulomb)):
        r = observer_residuals(model, smp, K, fv, fc)['r']
        row[f'bias {name} [%]'] = 100 * np.linalg.norm(np.mean(r[win], axis=0) - truth) \
            / np.linalg.norm(truth)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    add_out_dir(ap)
    args = ap.parse_args()
    rows = []
    head = provenance()
    with tempfile.TemporaryDirectory() as tmp:
        for noise, duration in (('none', 15.0), ('demo', 15.0), ('demo', 5.0),
                                ('3x demo', 15.0)):
            log(f'{noise}, {duration:g} s ...')
            rows.append(one(noise, duration, tmp))
            log(rows[-1])
    keys = list(rows[0])
    fmt = lambda x: f'{x:.3g}' if isinstance(x, float) else str(x)  # noqa: E731
    lines = ['| ' + ' | '.join(keys) + ' |', '|' + '---|' * len(keys)]
    lines += ['| ' + ' | '.join(fmt(r[k]) for k in keys) + ' |' for r in rows]
    report(output(args.out_dir, 'calibration_mujoco.md'),
           docstring_report(__doc__, head, '\n'.join(lines)))


if __name__ == '__main__':
    main()
