#!/usr/bin/env python3
"""Thresholds that hold live: identification, then the node's cycle on other motion (MuJoCo arm plants, ~15 min).

Each plant is arm7 simulated by MuJoCo (ros_dynamics.simulation.mujoco_plant) with every link's
mass, CoM and principal inertias 20-30 % off the URDF (a random draw per seed), reflected rotor
inertia (0.01-0.3 kg m²), MuJoCo's dry friction (``frictionloss`` 0.2-1 N m) growing with the
joint's load torque (+3 % of |tau|), viscous friction, torque offsets, torques reported through
torque constants 1-3 % off (current-based), current-like noise (0.05 N m + 1 % of |tau|), and
the controller (PD + gravity compensation on the URDF's model, 30 rad/s at 1 kHz, 10 rad/s at
100 Hz) sampling at 1 kHz or 100 Hz with jitter (periods ±50 % / ±10 %, physics at 2 kHz).
Per plant, with the default options:

* ``--links all`` on 30 s of excitation motion (a bag written and read back): the parameter
  file and the identified model; its thresholds from the held-out tail replayed through the
  node's cycle;
* *other* motion (another trajectory, another noise seed; not the tail of the excitation),
  20 s contact-free, replayed through the node's cycle (``calibrate check``) with the identified
  model and parameter file: false contact onsets and time in contact; the same with the
  thresholds of the previous rule (held-out blocks far above the rest left out, constant
  thresholds) for comparison; the smallest external torque the thresholds detect;
* the same other motion with two known contacts (30 N on the last link at 3-5 s, 40 N on link 4
  at 10-12 s): each detected, isolated to its link (the share of its samples in contact that
  name it), the residual against MuJoCo's external joint torque (window mean from 5/K after the
  onset to the end, ``|mean r − tau_ext| / |tau_ext|``; the isolated share over the same
  window, once the residual settled, and over the part of it where the contact's torque on its
  link's own joint is above 1.5 x that joint's threshold), detections outside the contacts
  (and 0.5 s of the residual's decay after them);
* the payload (2.8 kg on the last link, CoM (0, 10, 60) mm): the excitation motion recorded with
  it, ``--payload-link --reference <no-load recording>`` with default options: mass error, CoM
  error and its standard error; and without ``--reference``: the estimate and the share of it
  the report attributes to the robot's own model error.

The same at 1 kHz without sensor noise (``--noise-free``): the fit is then near perfect and
the friction at reversals stands far out of the rest, which the previous rule left out.

    python benchmarks/thresholds_mujoco.py [--seeds 1 2] [--rates 1000 100] [--noise-free 1] [--out-dir out/benchmarks]
"""
import argparse
import os
import subprocess
import tempfile
import time

import numpy as np

from common import add_out_dir, docstring_report, log, output, provenance, report

import ros_dynamics as rd
from ros_dynamics.control.trajectories import SineTrajectory
from ros_dynamics.identification import bags
from ros_dynamics.identification.calibration import calibrate
from ros_dynamics.identification.check import check_recording
from ros_dynamics.identification.samples import Samples
from ros_dynamics.identification.thresholds import calibrate_thresholds
from ros_dynamics.identification.whole_model import (typical_blocks, identify_recording,
                                                     payload_against_reference)
from ros_dynamics.simulation import home_pose
from ros_dynamics.simulation.mujoco_plant import MujocoPlant, perturbed_model

MODEL = rd.load_urdf(rd.bundled_urdf('arm7'))
FV = np.array([0.8, 0.8, 0.5, 0.5, 0.2, 0.2, 0.1])
FC = np.array([1.0, 1.0, 0.6, 0.6, 0.3, 0.3, 0.2])
ARMATURE = np.array([0.3, 0.3, 0.1, 0.1, 0.03, 0.03, 0.01])
OFFSET = np.array([0.5, -0.4, 0.3, 0.2, -0.1, 0.05, 0.02])
LOAD_FRICTION = 0.03
NOISE = (1e-5, 2e-3, 0.05, 0.01)        # rad, rad/s, N m, relative to |tau|
K = 50.0
HOME = home_pose(MODEL)[0]
EXCITE = SineTrajectory(HOME, np.array([0.5, 0.4, 0.5, 0.4, 0.8, 0.6, 1.0]),
                        0.15 + 0.05 * np.arange(7))
OTHER = SineTrajectory(HOME + 0.1, np.array([0.3, 0.25, 0.4, 0.3, 0.5, 0.4, 0.6]),
                       0.11 + 0.03 * np.arange(7))
PUSHES = [('arm_link_7', np.array([0.05, 0.0, 0.05]), np.array([18.0, -15.0, -18.0]), 3.0, 5.0),
          ('arm_link_4', np.array([0.1, 0.0, 0.1]), np.array([0.0, 28.0, 28.0]), 10.0, 12.0)]
TOOL = (2.8, np.array([0.0, 0.01, 0.06]), np.diag([5e-3, 5e-3, 3e-3]))
PHYSICS_DT = 5e-4


def plant(truth, seed, trajectory, rate, scale, pushes=(), noise=1.0):
    # the PD loop: 30 rad/s at 1 kHz (the plant's default), 10 rad/s at 100 Hz (stable there)
    w = 30.0 if rate >= 1000 else 10.0
    Mii = np.diag(rd.mass_matrix(MODEL, trajectory(0.0)[0]))
    return MujocoPlant(truth, trajectory, nominal=MODEL, dt=PHYSICS_DT, armature=ARMATURE,
                       kp=w * w * Mii, kd=2.0 * w * Mii,
                       damping=FV, frictionloss=FC, torque_offset=OFFSET,
                       noise_position=noise * NOISE[0], noise_velocity=noise * NOISE[1],
                       noise_effort=noise * NOISE[2], noise_effort_relative=noise * NOISE[3],
                       load_friction=LOAD_FRICTION,
                       torque_scale=scale, rate=rate, jitter=0.5 if rate >= 1000 else 0.1,
                       seed=seed, pushes=pushes)


def samples(out):
    return Samples(out['t'], out['q'], out['v'], out['tau'])


def f(a, n=3):
    return '[' + ', '.join(f'{x:.{n}g}' for x in a) + ']'


def check(model, s, ident, thresholds=None, velocity=None, torque=None):
    return check_recording(model, s, K, ident.friction_viscous, ident.friction_coulomb,
                           threshold=ident.thresholds if thresholds is None else thresholds,
                           threshold_velocity=(ident.threshold_velocity if velocity is None
                                               else velocity),
                           threshold_torque=ident.threshold_torque if torque is None else torque,
                           torque_offset=ident.torque_offset)


def previous_thresholds(ident, s):
    """The rule before this benchmark's commit: held-out blocks far above the rest left out of
    the thresholds, max(0.2, 2 max |r|) of the identifier's prediction on the others."""
    ref = ident.held.residual_after
    keep = typical_blocks(s.t[ident.held.test_rows], ref)
    return calibrate_thresholds(ref[keep], margin=2.0, floor=0.2), int((~keep).sum())


def contacts(out, ck):
    """Per push: detected, isolated share, residual error [%]; and detections elsewhere."""
    t = out['t']
    rows, outside = [], ck.contact.copy()
    for link, _, _, a, b in PUSHES:
        inside = (t >= a) & (t < b)
        outside[(t >= a) & (t < b + 0.5)] = False
        det = ck.contact[inside]
        win = (t >= a + 5.0 / K) & (t < b)
        named = np.array(ck.link, dtype=object)[win]
        # where the contact's torque on its link's own joint is well above that joint's
        # threshold (elsewhere a force through the joint's axis leaves a more proximal link:
        # the detector's premise, observer.ContactDetector)
        j = MODEL.joint_names.index(link.replace('link', 'joint'))
        own = np.abs(out['tau_ext'][win, j]) > 1.5 * ck.threshold[win, j]
        ref = np.mean(out['tau_ext'][win], axis=0)
        err = np.linalg.norm(np.nanmean(ck.r[win], axis=0) - ref) / np.linalg.norm(ref)
        delay = float(t[inside][np.argmax(det)] - a) if det.any() else float('nan')
        rows.append({'link': link, 'detected': bool(det.any()), 'delay [ms]': 1e3 * delay,
                     'isolated': float(np.mean(named == link)),
                     'isolated own': float(np.mean(named[own] == link)) if own.any() else 0.0,
                     'own share': float(np.mean(own)),
                     'residual error [%]': 100 * err, 'tau_ext': ref})
    onsets = int(np.sum(outside[1:] & ~outside[:-1]) + outside[0])
    return rows, onsets


def one(seed, rate, tmp, noise=1.0):
    rng = np.random.default_rng(100 + seed)
    scale = 1.0 + rng.choice((-1, 1), 7) * rng.uniform(0.01, 0.03, 7)
    truth = perturbed_model(MODEL, spread=(0.2, 0.3), seed=seed)
    out = plant(truth, 3, EXCITE, rate, scale, noise=noise).run(30.0)
    path = os.path.join(tmp, f'plant{seed}_{rate}_{noise:g}')
    bags.write_joint_states(path, out, names=MODEL.joint_names, storage='mcap')
    s = bags.read_joint_states(path, joint_names=MODEL.joint_names)
    t0 = time.process_time()
    ident = identify_recording(MODEL, s, gain=K)
    cpu = time.process_time() - t0
    idm = ident.model(MODEL)
    row = {'plant': f'seed {seed}, {rate} Hz' + ('' if noise else ', no sensor noise'), 'identification cpu [s]': f'{cpu:.1f}',
           'held-out rms URDF [N m]': f(ident.held.before['rms']),
           'held-out rms identified, replayed through the node\'s cycle [N m]':
               f(ident.held.after['rms']),
           'thresholds [N m]': f(ident.thresholds),
           'threshold growth with |v| [N m s/rad], |tau| [-]':
               f'{f(ident.threshold_velocity)}, {f(ident.threshold_torque)}',
           'held-out check (the report)': f'{ident.held.check.onsets} onsets'}
    free = samples(plant(truth, 11, OTHER, rate, scale, noise=noise).run(20.0))
    ck = check(idm, free, ident)
    row['other motion, 20 s free: false onsets, time in contact [s]'] = (
        f'{ck.onsets}, {ck.contact_time:.2f}')
    row['other motion: max |r| / threshold per joint'] = f(ck.ratio)
    row['smallest detected external torque: median threshold, at every sample [N m]'] = (
        f'{f(ck.detectable)}, {f(ck.detectable_sure)}')
    old, dropped = previous_thresholds(ident, s)
    cko = check(idm, free, ident, old, np.zeros(7), np.zeros(7))
    row['previous rule: thresholds [N m], held-out samples left out'] = f'{f(old)}, {dropped}'
    row['previous rule, other motion: false onsets, time in contact [s]'] = (
        f'{cko.onsets}, {cko.contact_time:.2f}')
    out = plant(truth, 5, OTHER, rate, scale, pushes=PUSHES, noise=noise).run(14.0)
    pushed = check(idm, samples(out), ident)
    rows, elsewhere = contacts(out, pushed)
    for c in rows:
        row[f'contact on {c["link"]}: detected, delay [ms], isolated share (all; where its '
            'joint\'s torque > 1.5 x its threshold, that part of the time), residual error [%]'] = (
            f'{c["detected"]}, {c["delay [ms]"]:.0f}, {c["isolated"]:.3f} ({c["isolated own"]:.3f}, '
            f'{c["own share"]:.2f}), '
            f'{c["residual error [%]"]:.2f} (|tau_ext| {np.linalg.norm(c["tau_ext"]):.1f} N m)')
    row['detections outside the contacts'] = elsewhere
    withp = samples(plant(rd.attach_payload(truth, 'arm_link_7', *TOOL), 4, EXCITE, rate,
                          scale, noise=noise).run(30.0))
    _, cal = payload_against_reference(MODEL, withp, s, 'arm_link_7', gain=K)
    com_err = cal.payload_com - TOOL[1]
    row['payload with reference: mass error [%], CoM error [mm], CoM error / standard error'] = (
        f'{100 * (cal.payload_mass - TOOL[0]) / TOOL[0]:.2f}, '
        f'{f(1e3 * com_err)}, {f(np.abs(com_err) / cal.payload_com_se)}')
    cal = calibrate(MODEL, withp, 'arm_link_7', gain=K)
    share = [n for n in cal.notes if n.startswith('without --reference')]
    row['payload without reference: mass error [%], model-error share the report states'] = (
        f'{100 * (cal.payload_mass - TOOL[0]) / TOOL[0]:.1f}, '
        + (share[0].split('may be ')[1].split(' of')[0] if share else 'none'))
    return row


def commit():
    try:
        return subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], capture_output=True,
                              text=True, cwd=os.path.dirname(os.path.abspath(__file__)),
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return 'unknown'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--seeds', type=int, nargs='+', default=[1], help='plant draws')
    ap.add_argument('--rates', type=int, nargs='+', default=[1000, 100],
                    help='controller sample rates [Hz]')
    ap.add_argument('--noise-free', type=int, nargs='*', default=[1],
                    help='plant draws also run at 1 kHz without sensor noise (where the '
                    'friction at reversals stands out of the noise the most)')
    add_out_dir(ap)
    args = ap.parse_args()
    head = provenance() + f'; commit {commit()}'
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        runs = [(seed, rate, 1.0) for rate in args.rates for seed in args.seeds]
        runs += [(seed, 1000, 0.0) for seed in args.noise_free]
        for seed, rate, noise in runs:
            log(f'plant seed {seed}, {rate} Hz, noise x{noise:g} ...')
            rows.append(one(seed, rate, tmp, noise))
            log(rows[-1])
    text = '\n\n'.join('\n'.join([f'### {r["plant"]}', ''] + [f'- {k}: {v}' for k, v in r.items()
                                                            if k != 'plant']) for r in rows)
    report(output(args.out_dir, 'thresholds_mujoco.md'), docstring_report(__doc__, head, text))


if __name__ == '__main__':
    main()
