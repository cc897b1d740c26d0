#!/usr/bin/env python3
"""Identification of the whole model (calibrate --links all) on independent MuJoCo plants (~2 min).

Each plant is arm7 simulated by MuJoCo (ros_dynamics.simulation.mujoco_plant) with every link's
mass, CoM and principal inertias 20-30 % off the URDF (a different random draw per seed),
reflected rotor inertia (armature 0.01-0.3 kg m²), MuJoCo's own friction (joint ``damping``
F_v 0.1-0.8 N m s/rad and the ``frictionloss`` constraint F_c 0.2-1 N m, not the observer's
tanh law), torque offsets (-0.4..0.5 N m) and sensor noise (1e-5 rad, 2e-3 rad/s, 0.05 N m).
A recording of excitation motion (PD + gravity compensation on the URDF's model, 1 kHz) is
written as a bag and read back; the model is identified on all of it with the default
options and a second recording of *other* motion held out (``calibrate --links all
--held-out BAG2``: 15 s of another trajectory, another noise seed), and reported on:

* the held-out recording replayed through the node's cycle (not the identifier's linear
  prediction): residual rms per joint with the URDF's model and with the identified one (the
  residual the node will show: identified inertials, friction, armature, torque offsets); the
  thresholds come from it;
* 20 s of a third free motion (another trajectory and noise seed) replayed through the node's
  pipeline with the identified URDF, friction, armature and thresholds: false contact onsets;
  the same with friction and thresholds from the friction-only calibration (``calibrate``
  without ``--links``, default options) for comparison;
* a known 20 N force on the last link: the residual's bias (window mean from 5/K after the
  onset, relative to MuJoCo's external joint torque), URDF model vs the identified model with
  its friction and torque offset (what the node runs with the identified files).

Payload against a reference (``calibrate --payload-link L --reference BAG``), per plant: a
second 20 s recording of the same motion with a 2.8 kg tool on the last link (CoM (0, 10, 60)
mm); the payload from the two recordings (with the CoM error over its standard error per axis)
vs from the payload recording alone on the URDF.

    python benchmarks/identification_mujoco.py [--out-dir out/benchmarks]
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
from ros_dynamics.identification.calibration import calibrate, observer_residuals
from ros_dynamics.identification.whole_model import identify_recording, payload_against_reference
from ros_dynamics.identification.samples import CalibrationError, Samples
from ros_dynamics.simulation import home_pose
from ros_dynamics.simulation.mujoco_plant import MujocoPlant, perturbed_model

MODEL = rd.load_urdf(rd.bundled_urdf('arm7'))
FV = np.array([0.8, 0.8, 0.5, 0.5, 0.2, 0.2, 0.1])
FC = np.array([1.0, 1.0, 0.6, 0.6, 0.3, 0.3, 0.2])
ARMATURE = np.array([0.3, 0.3, 0.1, 0.1, 0.03, 0.03, 0.01])
OFFSET = np.array([0.5, -0.4, 0.3, 0.2, -0.1, 0.05, 0.02])
NOISE = (1e-5, 2e-3, 0.05)
K = 50.0
HOME = home_pose(MODEL)[0]
EXCITE = SineTrajectory(HOME, np.array([0.5, 0.4, 0.5, 0.4, 0.8, 0.6, 1.0]),
                        0.15 + 0.05 * np.arange(7))
OTHER = SineTrajectory(HOME, np.array([0.3, 0.25, 0.4, 0.3, 0.5, 0.4, 0.6]),
                       0.11 + 0.03 * np.arange(7))
HELD = SineTrajectory(HOME - 0.1, np.array([0.4, 0.3, 0.3, 0.35, 0.6, 0.5, 0.8]),
                      0.13 + 0.04 * np.arange(7))
LINK, POINT, FORCE = 'arm_link_7', np.array([0.0, 0.0, 0.05]), np.array([12.0, -10.0, -12.0])


def plant(truth, seed, trajectory, pushes=()):
    return MujocoPlant(truth, trajectory, nominal=MODEL, armature=ARMATURE, damping=FV,
                       frictionloss=FC, torque_offset=OFFSET, noise_position=NOISE[0],
                       noise_velocity=NOISE[1], noise_effort=NOISE[2], seed=seed,
                       pushes=pushes)


def samples(out):
    return Samples(out['t'], out['q'], out['v'], out['tau'])


def onsets(contact):
    return int(np.sum(contact[1:] & ~contact[:-1]) + contact[0])


def f(a):
    return '[' + ', '.join(f'{x:.3g}' for x in a) + ']'


def one(seed, duration, tmp):
    truth = perturbed_model(MODEL, spread=(0.2, 0.3), seed=seed)
    out = plant(truth, 3, EXCITE).run(duration)
    path = os.path.join(tmp, f'plant{seed}')
    bags.write_joint_states(path, out, names=MODEL.joint_names, storage='mcap')
    s = bags.read_joint_states(path, joint_names=MODEL.joint_names)
    held = samples(plant(truth, 7, HELD).run(15.0))
    t0 = time.process_time()
    ident = identify_recording(MODEL, s, gain=K, held_out=held)
    cpu = time.process_time() - t0
    row = {'plant': f'seed {seed}', 'T [s]': duration, 'cpu [s]': f'{cpu:.1f}',
           'base parameters': f'{ident.base.rank} of {ident.base.n_parameters}',
           'condition': f'{ident.base.condition:.3g}',
           'held out': ident.held.label,
           'held-out rms URDF [N m]': f(ident.held.before['rms']),
           'held-out rms identified, replayed through the node\'s cycle [N m]':
               f(ident.held.after['rms']),
           'held-out rms identified / URDF (max over joints)':
               f'{np.max(ident.held.after["rms"] / ident.held.before["rms"]):.3f}'}
    free = samples(plant(truth, 11, OTHER).run(20.0))
    idm = ident.model(MODEL)
    res = observer_residuals(idm, free, K, ident.friction_viscous, ident.friction_coulomb,
                             threshold=ident.thresholds, torque_offset=ident.torque_offset)
    row['false onsets identified'] = onsets(res['contact'])
    try:
        cal = calibrate(MODEL, s, gain=K)
        res = observer_residuals(MODEL, free, K, cal.friction_viscous, cal.friction_coulomb,
                                 threshold=cal.thresholds)
        row['false onsets friction-only calibration'] = onsets(res['contact'])
    except CalibrationError as exc:
        row['false onsets friction-only calibration'] = 'refused: ' + str(exc).split(':')[0]
    out = plant(truth, 5, OTHER, pushes=[(LINK, POINT, FORCE, 2.0, 1e9)]).run(4.0)
    smp = samples(out)
    win = smp.t > 2.0 + 5.0 / K
    ref = np.mean(out['tau_ext'][win], axis=0)
    for name, model, fv, fc, off in (
            ('URDF', MODEL, 0.0, 0.0, 0.0),
            ('identified', idm, ident.friction_viscous, ident.friction_coulomb,
             ident.torque_offset)):
        r = observer_residuals(model, smp, K, fv, fc, torque_offset=off)['r']
        bias = 100 * np.linalg.norm(np.mean(r[win], axis=0) - ref) / np.linalg.norm(ref)
        row[f'bias {name} [%]'] = f'{bias:.2f}'
    tool = (2.8, np.array([0.0, 0.01, 0.06]), np.diag([5e-3, 5e-3, 3e-3]))
    withp = samples(plant(rd.attach_payload(truth, LINK, *tool), 4, EXCITE).run(duration))
    _, cal = payload_against_reference(MODEL, withp, s, LINK, gain=K)
    row['payload with reference: mass error [%], CoM error [mm], CoM |error| / SE'] = (
        f'{100 * (cal.payload_mass - tool[0]) / tool[0]:.2f}, '
        f'{1e3 * np.linalg.norm(cal.payload_com - tool[1]):.2f}, '
        f'{f(np.abs(cal.payload_com - tool[1]) / cal.payload_com_se)}')
    try:
        cal = calibrate(MODEL, withp, LINK, gain=K, contact='exclude')
        row['payload on the URDF alone: mass error [%], CoM error [mm]'] = (
            f'{100 * (cal.payload_mass - tool[0]) / tool[0]:.2f}, '
            f'{1e3 * np.linalg.norm(cal.payload_com - tool[1]):.2f}')
    except CalibrationError as exc:
        row['payload on the URDF alone: mass error [%], CoM error [mm]'] = f'refused: {exc}'
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    add_out_dir(ap)
    args = ap.parse_args()
    head = provenance()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in (1, 2, 3):
            log(f'plant seed {seed} ...')
            rows.append(one(seed, 20.0, tmp))
            log(rows[-1])
    text = '\n\n'.join('\n'.join([f'### {r["plant"]}', ''] + [f'- {k}: {v}' for k, v in r.items()
                                                            if k != 'plant']) for r in rows)
    report(output(args.out_dir, 'identification_mujoco.md'), docstring_report(__doc__, head, text))


if __name__ == '__main__':
    main()
