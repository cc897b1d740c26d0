#!/usr/bin/env python3
"""Do calibrate's stated uncertainties cover the truth? Payload and friction over many draws (the project's simulator, ~10 min).

Each draw is arm7 in the project's rigid simulator (ros_dynamics.simulation, semi-implicit Euler
at 1 kHz, while the observer integrates with the trapezoid rule) carrying a payload the URDF
does not know on arm_link_7 (mass 0.5-3 kg, CoM within 6 cm of the flange, principal inertias
2-8 g m²) and joint friction of the observer's law (F_v 0.1-0.8 N m s/rad, F_c 0.2-1 N m per
joint), with the demo's sensor noise (1e-5 rad, 2e-3 rad/s, 0.05 N m) and a random excitation
(sines of random amplitudes 0.6-1.2x and frequencies 0.12-0.5 Hz per joint, 15 s).  The plant's
law is the observer's, so the fit has a truth for every parameter.  ``calibrate BAG --urdf U
--payload-link arm_link_7`` with its default options (the standard errors: the noise, the
jackknife, torque constants 2 % off, and the spread of refits with the velocities
differentiated from the positions at 20 and 5 Hz).  Reported: per group (the mass, the CoM's
components, viscous and Coulomb friction) the share of |error| within 1 and 2 standard errors
(a Gaussian: 68 % and 95 %), the largest |error| / SE and the median SE.

Then motion that does not determine the payload (as a real 6-joint arm's chirp, where the
joints move in lockstep): every joint on one sine of the same frequency and phase, a 0.48 kg
payload: whether calibrate says so (its ``determined``), and whether 2 SE cover the mass.

    python benchmarks/calibration_coverage.py [--draws 12] [--lockstep 3] [--out-dir out/benchmarks]
"""
import argparse
import time

import numpy as np

from common import add_out_dir, docstring_report, log, output, provenance, report

MEASURES = ('ros_dynamics/identification', 'ros_dynamics/estimation/observer.py',
            'ros_dynamics/estimation/cycle.py')

import ros_dynamics as rd  # noqa: E402
from ros_dynamics import simulation as S  # noqa: E402
from ros_dynamics.control.trajectories import SineTrajectory  # noqa: E402
from ros_dynamics.identification.calibration import calibrate  # noqa: E402
from ros_dynamics.identification.samples import Samples  # noqa: E402

MODEL = rd.load_urdf(rd.bundled_urdf('arm7'))
LINK = 'arm_link_7'
NOISE = dict(noise_position=1e-5, noise_velocity=2e-3, noise_effort=0.05)
HOME = S.home_pose(MODEL)[0]
AMPLITUDE = np.array([0.5, 0.4, 0.5, 0.4, 0.8, 0.6, 1.0])


def draw(seed, lockstep=False):
    """(samples, truth dict) of one plant and motion."""
    rng = np.random.default_rng(seed)
    mass = 0.48 if lockstep else rng.uniform(0.5, 3.0)
    com = rng.uniform(-0.03, 0.03, 3) + np.array([0.0, 0.0, 0.03])
    inertia = np.diag(rng.uniform(2e-3, 8e-3, 3))
    fv, fc = rng.uniform(0.1, 0.8, 7), rng.uniform(0.2, 1.0, 7)
    sim, _ = S.make_scenario(MODEL, 'none', payload=(LINK, mass, com, inertia),
                             friction_viscous=fv, friction_coulomb=fc, seed=seed, **NOISE)
    if lockstep:
        sim.trajectory = SineTrajectory(HOME, 0.5 * AMPLITUDE, np.full(7, 0.3))
    else:
        sim.trajectory = SineTrajectory(HOME, AMPLITUDE * rng.uniform(0.6, 1.2, 7),
                                        rng.uniform(0.12, 0.5, 7))
    out = sim.run(15.0)
    return (Samples(out['t'], out['q'], out['v'], out['tau']),
            {'mass': mass, 'com': com, 'fv': fv, 'fc': fc})


def zscores(cal, truth):
    return {'mass': np.array([(cal.payload_mass - truth['mass']) / cal.payload_mass_se]),
            'CoM': (cal.payload_com - truth['com']) / cal.payload_com_se,
            'F_v': (cal.friction_viscous - truth['fv']) / cal.friction_viscous_se,
            'F_c': (cal.friction_coulomb - truth['fc']) / cal.friction_coulomb_se}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--draws', type=int, default=12, help='plants and motions')
    ap.add_argument('--lockstep', type=int, default=3, help='draws of lockstep motion')
    add_out_dir(ap)
    args = ap.parse_args()
    head = provenance()
    z, se, cpu = {}, {}, []
    for seed in range(1, args.draws + 1):
        log(f'draw {seed} ...')
        s, truth = draw(seed)
        t0 = time.process_time()
        cal = calibrate(MODEL, s, LINK)
        cpu.append(time.process_time() - t0)
        for k, x in zscores(cal, truth).items():
            z.setdefault(k, []).append(np.abs(x))
        se.setdefault('mass', []).append(cal.payload_mass_se / truth['mass'])
        se.setdefault('CoM', []).append(1e3 * cal.payload_com_se)
        log(f'  mass {cal.payload_mass:.4f} ± {cal.payload_mass_se:.4f} (truth {truth["mass"]:.4f})')
    lines = [f'{args.draws} draws, calibrate CPU {min(cpu):.1f}-{max(cpu):.1f} s each', '',
             '| parameters | within 1 SE | within 2 SE | largest abs(error) / SE |',
             '|---|---|---|---|']
    for k, v in z.items():
        a = np.concatenate(v)
        lines.append(f'| {k} ({a.size}) | {np.mean(a <= 1):.0%} | {np.mean(a <= 2):.0%} | '
                     f'{a.max():.2f} |')
    lines += ['', f'- median standard error: mass {100 * np.median(se["mass"]):.2f} % of the '
              f'mass, CoM {np.median(np.concatenate(se["CoM"])):.3g} mm', '',
              '### Lockstep motion (every joint on one sine), 0.48 kg', '',
              '| draw | mass ± SE [kg] | error / SE | calibrate says determined |', '|---|---|---|---|']
    for seed in range(101, 101 + args.lockstep):
        log(f'lockstep draw {seed} ...')
        s, truth = draw(seed, lockstep=True)
        cal = calibrate(MODEL, s, LINK)
        err = (cal.payload_mass - truth['mass']) / cal.payload_mass_se
        lines.append(f'| {seed} | {cal.payload_mass:.3f} ± {cal.payload_mass_se:.3f} | '
                     f'{err:.2f} | {cal.determined} |')
        said = [n for n in cal.notes if n.startswith(('the recording does not determine',
                                                      'a motion that would'))]
        lines += [f'|  | {n} | | |' for n in said[:2]]
    report(output(args.out_dir, 'calibration_coverage.md'),
           docstring_report(__doc__, head, '\n'.join(lines)))


if __name__ == '__main__':
    main()
