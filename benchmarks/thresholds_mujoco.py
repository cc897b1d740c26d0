#!/usr/bin/env python3
"""Thresholds on motion never recorded: identification on slow motion, then the node's cycle on other and faster motion (MuJoCo arm plants, ~10 min).

Each plant is arm7 simulated by MuJoCo (ros_dynamics.simulation.mujoco_plant) with every link's
mass, CoM and principal inertias 20-30 % off the URDF (a random draw per seed), reflected rotor
inertia (0.01-0.3 kg m²), MuJoCo's dry friction (``frictionloss`` 0.2-1 N m, which sticks at
reversals) growing with the joint's load torque (+3 % of |tau|), viscous friction, torque
offsets, torques reported through torque constants 1-3 % off (current-based), current-like
noise (0.05 N m + 1 % of |tau|), and the controller (PD + gravity compensation on the URDF's
model, 30 rad/s at 1 kHz) sampling at 1 kHz with jittered periods (±50 %, physics at 2 kHz).
Per plant, with the default options:

* ``calibrate --links all`` on 30 s of slow excitation motion (sines of 0.1-0.28 Hz): the
  identified model and the parameter file, its thresholds from the held-out tail replayed
  through the node's cycle;
* *other* motion, not the tail of the recording: 20 s of another trajectory (other centre,
  amplitudes 0.8x) at the recording's speeds (``other``) and 2.5 times faster (``faster``,
  speeds and accelerations the recording never reached), another noise seed each, replayed
  through the node's cycle with the identified model and each rule's thresholds
  (``calibrate check``): false contact onsets and samples;
* the rules: ``this`` (the default: at least margin x the largest held-out residual, the
  false-alarm level and the joint's Coulomb friction, docs/calibration.md) and ``constant``
  (the previous release on these plants, whose state terms were never selected here:
  max(0.2, 2 max |r|) per joint);
* the sensitivity each costs: the median threshold per joint over the faster motion (the
  smallest external torque detected there), and two known contacts on the faster motion (30 N
  on the last link at 3-5 s, 40 N on link 4 at 10-12 s): detected, delay.

    python benchmarks/thresholds_mujoco.py [--seeds 1 2 3] [--out-dir out/benchmarks]
"""
import argparse
import time

import numpy as np

from common import add_out_dir, docstring_report, log, output, provenance, report

MEASURES = ('ros_dynamics/identification', 'ros_dynamics/estimation/rules.py',
            'ros_dynamics/estimation/observer.py', 'ros_dynamics/estimation/cycle.py')

import ros_dynamics as rd
from ros_dynamics.control.trajectories import SineTrajectory
from ros_dynamics.identification.check import check_recording
from ros_dynamics.identification.samples import Samples
from ros_dynamics.identification.thresholds import Thresholds, calibrate_thresholds
from ros_dynamics.identification.whole_model import identify_recording
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


def plant(truth, seed, trajectory, rate, scale, pushes=(), noise=1.0,
          load_friction=LOAD_FRICTION):
    # the PD loop: 30 rad/s at 1 kHz (the plant's default), 10 rad/s at 100 Hz (stable there)
    w = 30.0 if rate >= 1000 else 10.0
    Mii = np.diag(rd.mass_matrix(MODEL, trajectory(0.0)[0]))
    return MujocoPlant(truth, trajectory, nominal=MODEL, dt=PHYSICS_DT, armature=ARMATURE,
                       kp=w * w * Mii, kd=2.0 * w * Mii,
                       damping=FV, frictionloss=FC, torque_offset=OFFSET,
                       noise_position=noise * NOISE[0], noise_velocity=noise * NOISE[1],
                       noise_effort=noise * NOISE[2], noise_effort_relative=noise * NOISE[3],
                       load_friction=load_friction,
                       torque_scale=scale, rate=rate, jitter=0.5 if rate >= 1000 else 0.1,
                       seed=seed, pushes=pushes)


def samples(out):
    return Samples(out['t'], out['q'], out['v'], out['tau'])


def f(a, n=3):
    return '[' + ', '.join(f'{x:.{n}g}' for x in a) + ']'


SLOW = SineTrajectory(HOME, np.array([0.5, 0.4, 0.5, 0.4, 0.8, 0.6, 1.0]),
                     0.1 + 0.03 * np.arange(7))
FASTER = 2.5


def other(speed):
    """The other motion: another centre, 0.8 x the amplitudes, ``speed`` x the frequencies."""
    return SineTrajectory(HOME + 0.1, 0.8 * SLOW.A, speed * SLOW.w / (2 * np.pi))


def check(model, s, ident, th):
    return check_recording(model, s, K, ident.friction_viscous, ident.friction_coulomb,
                           torque_offset=ident.torque_offset, **th.settings())


def constant_rule(ident):
    """The previous release's rule on these plants: max(0.2, 2 max |r|) over the held-out
    residual replayed through the node's cycle."""
    r = ident.held.check.r
    return Thresholds(calibrate_thresholds(r[np.all(np.isfinite(r), axis=1)], margin=2.0,
                                                floor=0.2))


def contacts(out, ck):
    """Per push: detected, delay [ms]; and detections outside the pushes (and 0.5 s after)."""
    t = out['t']
    rows, outside = [], ck.contact.copy()
    for link, _, _, a, b in PUSHES:
        inside = (t >= a) & (t < b)
        outside[(t >= a) & (t < b + 0.5)] = False
        det = ck.contact[inside]
        delay = float(t[inside][np.argmax(det)] - a) if det.any() else float('nan')
        rows.append(f'{link} {"detected" if det.any() else "MISSED"} {1e3 * delay:.0f} ms')
    onsets = int(np.sum(outside[1:] & ~outside[:-1]) + outside[0])
    return rows, onsets


def one(seed):
    rng = np.random.default_rng(100 + seed)
    scale = 1.0 + rng.choice((-1, 1), 7) * rng.uniform(0.01, 0.03, 7)
    truth = perturbed_model(MODEL, spread=(0.2, 0.3), seed=seed)
    rec = samples(plant(truth, 3, SLOW, 1000, scale).run(30.0))
    t0 = time.process_time()
    ident = identify_recording(MODEL, rec, gain=K)
    idm = ident.model(MODEL)
    row = {'plant': f'seed {seed}', 'identification cpu [s]': f'{time.process_time() - t0:.1f}',
           'recorded max |v| [rad/s]': f(np.max(np.abs(rec.v), axis=0))}
    motions = {'other': samples(plant(truth, 11, other(1.0), 1000, scale).run(20.0)),
               'faster': samples(plant(truth, 12, other(FASTER), 1000, scale).run(20.0))}
    row['faster max |v| [rad/s]'] = f(np.max(np.abs(motions['faster'].v), axis=0))
    out = plant(truth, 5, other(FASTER), 1000, scale, pushes=PUSHES).run(14.0)
    for name, th in (('this', ident.contact_thresholds), ('constant', constant_rule(ident))):
        row[f'{name}: thresholds [N m]'] = f(th.base)
        for motion, s in motions.items():
            ck = check(idm, s, ident, th)
            row[f'{name}: {motion} motion, false onsets, samples'] = (
                f'{ck.onsets}, {int(ck.contact.sum())}')
            row[f'{name}: {motion} motion, max |r| / threshold'] = f(ck.ratio)
            if motion == 'faster':
                row[f'{name}: median threshold on the faster motion [N m]'] = f(ck.detectable)
        found, elsewhere = contacts(out, check(idm, samples(out), ident, th))
        row[f'{name}: contacts on the faster motion, detections elsewhere'] = (
            f'{", ".join(found)}; {elsewhere}')
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--seeds', type=int, nargs='+', default=[1, 2, 3], help='plant draws')
    add_out_dir(ap)
    args = ap.parse_args()
    head = provenance()
    rows = []
    for seed in args.seeds:
        log(f'plant seed {seed} ...')
        rows.append(one(seed))
        log(rows[-1])
    totals = []
    for name in ('this', 'constant'):
        for motion in ('other', 'faster'):
            n = [int(r[f'{name}: {motion} motion, false onsets, samples'].split(',')[0])
                 for r in rows]
            totals.append(f'- {name}, {motion} motion: {sum(n)} false onsets over '
                          f'{len(rows)} plants ({", ".join(map(str, n))})')
    text = '\n'.join(totals) + '\n\n' + '\n\n'.join(
        '\n'.join([f'### {r["plant"]}', ''] + [f'- {k}: {v}' for k, v in r.items()
                                                if k != 'plant']) for r in rows)
    report(output(args.out_dir, 'thresholds_mujoco.md'), docstring_report(__doc__, head, text))


if __name__ == '__main__':
    main()
