#!/usr/bin/env python3
"""Calibration report on the bundled arm7 (simulation, no ROS; ~1 min).

The plant carries an unknown 1.5 kg tool on arm_link_7 (CoM (10, -20, 80) mm, inertia
diag(4, 5, 3) g m²) and joint friction (viscous 0.1-0.8 N m s/rad, Coulomb 0.2-1 N m) that the
URDF does not know.  For several sensor-noise levels and recording lengths it records free
motion (an excitation trajectory: every joint sinusoidal at its own frequency) into a bag,
calibrates (``ros_dynamics.estimation.calibration.calibrate``, observer K = 50 1/s) and prints:

* recovered vs true: mass, CoM, inertia (when identified), friction (max relative error) and the
  reported standard errors;
* the residual before/after (max over joints of the rms);
* false contact onsets in 20 s of other free motion (other seed, the scenario's slow motion),
  nominal vs calibrated observer, with the calibrated thresholds;
* the residual bias under a known 20 N force on the tool flange (from 5/K after the onset,
  window mean, relative to the true external torque), nominal vs calibrated.

    python benchmarks/calibration_report.py [--out out/benchmarks/calibration.md]

The result file starts with the date, the command, the machine and its load average.
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ros_dynamics as rd  # noqa: E402
from ros_dynamics import bags  # noqa: E402
from ros_dynamics import simulation as S  # noqa: E402
from ros_dynamics.control.trajectories import SineTrajectory  # noqa: E402
from ros_dynamics.estimation.calibration import calibrate, observer_residuals  # noqa: E402
from ros_dynamics.estimation.samples import Samples  # noqa: E402

MODEL = rd.load_urdf(rd.bundled_urdf('arm7'))
LINK = 'arm_link_7'
MASS, COM, INERTIA = 1.5, np.array([0.01, -0.02, 0.08]), np.diag([0.004, 0.005, 0.003])
FV = np.array([0.8, 0.8, 0.5, 0.5, 0.2, 0.2, 0.1])
FC = np.array([1.0, 1.0, 0.6, 0.6, 0.3, 0.3, 0.2])
K = 50.0
NOISE = {'none': (0.0, 0.0, 0.0), 'demo': (1e-5, 2e-3, 0.05), '3x demo': (3e-5, 6e-3, 0.15)}


def sim(noise, seed, excite=True):
    s, desc = S.make_scenario(MODEL, 'none', payload=(LINK, MASS, COM, INERTIA),
                              friction_viscous=FV, friction_coulomb=FC, seed=seed,
                              noise_position=noise[0], noise_velocity=noise[1],
                              noise_effort=noise[2])
    if excite:
        s.trajectory = SineTrajectory(S.home_pose(MODEL)[0],
                                      np.array([0.5, 0.4, 0.5, 0.4, 0.8, 0.6, 1.0]),
                                      0.15 + 0.05 * np.arange(7))
    return s, desc


def samples(out):
    return Samples(out['t'], out['q'], out['v'], out['tau'])


def onsets(contact):
    return int(np.sum(contact[1:] & ~contact[:-1]) + contact[0])


def one(noise_name, duration, tmp):
    noise = NOISE[noise_name]
    out = sim(noise, 3)[0].run(duration)
    path = os.path.join(tmp, f'{noise_name}_{duration}'.replace(' ', '_'))
    bags.write_joint_states(path, out, names=MODEL.joint_names, storage='mcap')
    t0 = time.process_time()
    cal = calibrate(MODEL, bags.read_joint_states(path, joint_names=MODEL.joint_names), LINK,
                    gain=K)
    cpu = time.process_time() - t0
    row = {'noise': noise_name, 'T [s]': duration, 'cpu [s]': cpu,
           'mass err [%]': 100 * (cal.payload_mass - MASS) / MASS,
           'mass se [%]': 100 * cal.payload_mass_se / MASS,
           'CoM err [mm]': 1e3 * np.linalg.norm(cal.payload_com - COM),
           'CoM se [mm]': 1e3 * np.linalg.norm(cal.payload_com_se),
           'inertia': ('%.1f %%' % (100 * np.linalg.norm(cal.payload_inertia - INERTIA)
                                    / np.linalg.norm(INERTIA)) if cal.inertia_identified
                       else 'not identified'),
           'Fv max err [%]': 100 * np.max(np.abs(cal.friction_viscous - FV) / FV),
           'Fc max err [%]': 100 * np.max(np.abs(cal.friction_coulomb - FC) / FC),
           'rms before': np.max(cal.before['rms']), 'rms after': np.max(cal.after['rms'])}
    # false detections in other free motion
    free = samples(sim(noise, 11, excite=False)[0].run(20.0))
    nom = observer_residuals(MODEL, free, K, threshold=cal.thresholds)
    calr = observer_residuals(cal.model(MODEL), free, K, cal.friction_viscous,
                              cal.friction_coulomb, threshold=cal.thresholds)
    row['false onsets nominal'] = onsets(nom['contact'])
    row['false onsets calibrated'] = onsets(calr['contact'])
    # bias under a known force
    s, desc = sim(noise, 5, excite=False)
    s.contacts = [S.WrenchContact(LINK, force=(12.0, -10.0, -12.0), point=desc['point'],
                                  t_start=2.0)]
    out = s.run(4.0)
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
    ap.add_argument('--out', default=os.path.join('out', 'benchmarks', 'calibration.md'))
    args = ap.parse_args()
    from common import machine_info
    started = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())
    load0 = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for noise, duration in (('none', 15.0), ('demo', 15.0), ('demo', 5.0),
                                ('3x demo', 15.0)):
            rows.append(one(noise, duration, tmp))
            print(rows[-1], flush=True)
    keys = list(rows[0])
    fmt = lambda x: f'{x:.3g}' if isinstance(x, float) else str(x)  # noqa: E731
    lines = ['| ' + ' | '.join(keys) + ' |', '|' + '---|' * len(keys)]
    lines += ['| ' + ' | '.join(fmt(r[k]) for k in keys) + ' |' for r in rows]
    text = '\n'.join(lines)
    print(text)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, 'w') as f:
        command = ' '.join(['python benchmarks/calibration_report.py'] + sys.argv[1:])
        setup = ' '.join(__doc__.split('\n\n')[1].split()).replace(' and prints:', '.')
        noise = '; '.join(f'{k}: {p:g} rad, {v:g} rad/s, {e:g} N m' for k, (p, v, e)
                          in NOISE.items())
        f.write('# ' + __doc__.split('\n')[0] + '\n\n'
                f'{started}; `{command}`; '
                f'{machine_info()}; 1-minute load average {load0:.2f} at the start, '
                f'{os.getloadavg()[0]:.2f} at the end. Errors relative to the true values '
                '(mass, CoM, inertia, friction: max over the joints), rms = the largest rms of '
                'the residual over the joints [N m] before and after calibration; bias = mean '
                'residual error under a 20 N force from 5/K on, relative to the true external '
                'torque.\n\n' + setup + f' Sensor noise (standard deviations): {noise}.\n\n'
                + text + '\n')
    print(f'wrote {args.out}')


if __name__ == '__main__':
    main()
