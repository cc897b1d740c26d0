"""Forces at the feet and the unexplained part from the momentum residual, judged on the plant.

    python benchmarks/contact_forces.py --out-dir benchmarks/results   # the tracked figures
    python benchmarks/contact_forces.py                                 # out/benchmarks/
    python benchmarks/contact_forces.py --live 3 --out-dir benchmarks/results   # over DDS

``--live N`` runs test/test_e2e_sim_mujoco_contact_forces.py N times (sim_mujoco playing
Solo12 + a dynamics node over loopback DDS, the realistic odometry, a 25 % lateral push, judged
on sim_mujoco's truth record) and writes the figures it prints to contact_forces_live.md.

Runs ros_dynamics.simulation.contact_force_runs (no ROS) at 1 kHz with the four feet of the
bundled quadruped (8.33 kg, weight 81.7 N) as contact frames (point model, threshold 8 N,
release 4 N, observer gain K = 50 1/s unless said):

* MuJoCo (an independent engine, simulation/mujoco_quadruped.py; a wide stance, HAA 0.25
  rad): standing, weight shift, the left front foot lifted and put down, a lateral push of
  20.4 N (25 % of the weight) on the trunk, raised and lowered over 0.2 s;
* what the estimate receives (SensingOptions): exact; the odometry of a legged state
  estimator (0.03 m/s white noise on the linear twist, 10 ms late, 200 Hz, held between
  updates, against 1 kHz joint states) and variants of it; joint velocity and torque noise;
* the plant against the URDF (PlantOptions): the same; a hidden 1 kg load on the trunk; every
  link's inertials off by 20-30 %; joint friction and rotor inertia;
* the unexplained part from the residual with the base twist of the stance legs
  (estimation/stance_residual.py, odom_twist_noise 0.03, the node's default) and, to compare,
  from the odometry's twist as is (odom_twist_noise 0);
* MuJoCo's Solo12 (example-robot-data's URDF, 2.5 kg, weight 24.5 N; simulation/
  mujoco_legged.py: elliptic cones, 1.6 cm foot spheres) under the same scenario (the front
  left foot lifted, HAA 0.25 rad, the joint gains and the thresholds scaled by the mass and the
  weight: 18 N m/rad, 2.4 N, 1.5 N), a lateral push of 6.13 N (25 % of its weight), with exact
  sensing and with the realistic odometry above, repeated over odometry seeds; a hidden load
  and links off;
* the project's rigid-contact simulator (OS LCP): standing, and an open-loop trot.

Every figure is on the plant's truth: per-foot rms error of the estimated force against the
plant's foot force through the observer's exact K/(s+K), at every sample (also where the
estimate says "no contact" and the plant has one, and vice versa), as a fraction of the
weight; contact-state accuracy against MuJoCo's contact data (a contact with a positive
normal force); touch-down and lift-off delays; the push's generalized force (mj_applyFT)
through K/(s+K) against the unexplained part, mean relative error over the samples above 90 %
of its peak, and against the change of the unexplained part from its mean over the 0.5 s
before the push (a constant model error, a hidden load, removed), and the lag of the unexplained
part behind the push's K/(s+K) (the shift that fits best); the estimator's CPU time per update.  The realistic case is repeated over
odometry seeds.  Writes contact_forces.md and contact_forces.json to --out-dir and the plot
of the push in the unexplained part to out/contact_forces.png.
"""

MEASURES = ('ros_dynamics/estimation', 'ros_dynamics/simulation', 'ros_dynamics/ros/dynamics_node',
            'ros_dynamics/ros/simulation/mujoco_sim_node.py',
            'test/test_e2e_sim_mujoco_contact_forces.py')

import argparse
import dataclasses
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (add_out_dir, live_runs, log, output, provenance, report,  # noqa: E402
                    wrote)

import ros_dynamics as rd  # noqa: E402
from ros_dynamics.estimation.contact_forces import ContactForceEstimator, ObserverUpdate  # noqa: E402
from ros_dynamics.simulation.contact_force_runs import lateral_push, metrics, run  # noqa: E402
from ros_dynamics.simulation.mujoco_quadruped import (  # noqa: E402
    FEET, REALISTIC_ODOMETRY, PlantOptions, SensingOptions, ShiftLiftPush)

PUSH = ShiftLiftPush.LATERAL_PUSH
REAL = REALISTIC_ODOMETRY
SENSING = {
    'exact': SensingOptions(),
    'realistic odometry (0.03 m/s, 10 ms, 200 Hz)': REAL,
    'twist noise 0.03 m/s only': SensingOptions(odom_linear_noise=0.03),
    'delay 20 ms only': SensingOptions(odom_delay=0.02),
    'rate 100 Hz only': SensingOptions(odom_rate=100.0),
    'realistic + 0.03 rad/s, bias (0.02, -0.01, 0) m/s, 20 ms': dataclasses.replace(
        REAL, odom_angular_noise=0.03, odom_linear_bias=(0.02, -0.01, 0.0), odom_delay=0.02),
    'realistic + joints 0.05 rad/s, 0.05 N m': dataclasses.replace(
        REAL, velocity_noise=0.05, torque_noise=0.05),
}
PLANTS = {
    'hidden 1 kg trunk load': PlantOptions(hidden_load=1.0, load_offset=(0.05, 0.03, 0.02)),
    'links off 20-30 %': PlantOptions(link_error=0.25),
    'joint friction 0.01 N m s/rad + 0.03 N m, rotor inertia 5e-4 kg m2': PlantOptions(
        joint_viscous=0.01, joint_coulomb=0.03, rotor_inertia=5e-4),
}
SEEDS = range(1, 6)               # the odometry's noise draws (0 is the runs above)


def commit():
    """The commit measured (with '+dirty' when the worktree differs from it)."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        head = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=here, text=True,
                              capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(['git', 'status', '--porcelain', '--untracked-files=no'],
                               cwd=here, text=True, capture_output=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return 'unknown'
    return head + ('+dirty' if dirty else '')


def _fmt(x):
    return '—' if x is None else f'{100 * x:.2f} %'


def _delays(d):
    return f'{1e3 * np.median(d):.0f} ({1e3 * np.min(d):.0f}–{1e3 * np.max(d):.0f})' if d else '—'


def estimator_time():
    """Median CPU time of one update (Jacobians + the programme), standing and with active
    constraints (a pulling foot); and standing with the stance residual (its twist fusion and
    its observer update)."""
    from ros_dynamics.estimation.stance_residual import StanceResidual
    model = rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)
    q = model.neutral()
    q[7:] = [{'HAA': 0.0, 'HFE': 0.7, 'KFE': -1.4}[n.split('_')[1]] for n in model.joint_names]
    f = np.tile([0.0, 0.0, 20.0], (4, 1))
    r = sum(rd.link_jacobian(model, q, ft)[:3].T @ fi for ft, fi in zip(FEET, f))
    r_pull = r + rd.link_jacobian(model, q, 'LF_foot')[:3].T @ np.array([0.0, 0.0, -40.0])
    v, tau = np.zeros(model.nv), np.zeros(model.nv)
    out = {}
    for label, rr, stance in (('unconstrained', r, None), ('constrained', r_pull, None),
                              ('stance residual', r, StanceResidual(model, 0.03,
                                                                     dict(gain=50.0)))):
        est = ContactForceEstimator(model, FEET, threshold=8.0, stance_residual=stance)
        state = ObserverUpdate(v=v, tau=tau, dt=1e-3, bridge=False)
        est.update(q, rr, state)
        ts = []
        for _ in range(400):
            t0 = time.thread_time()
            est.update(q, rr, state)
            ts.append(time.thread_time() - t0)
        out[label] = float(np.median(ts))
    return out


def plot(runs, path):
    """The push's lateral row through K/(s+K) and the unexplained part's, with the realistic
    odometry, from the odometry's twist as is and with the stance legs' twist."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, axs = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    for ax, (title, res) in zip(axs, runs.items()):
        t = res['t']
        sel = (t > 4.5) & (t < 6.6)
        ax.plot(t[sel], res['unexplained'][sel, 1], 'C3', lw=0.6, label='unexplained (base y row)')
        ax.plot(t[sel], res['push'][sel, 1], 'k', lw=1.5, label='push through K/(s+K) (MuJoCo)')
        ax.set_title(title, fontsize=9)
        ax.set_ylabel('[N]')
        ax.set_ylim(-25, 45)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc='upper right')
    axs[-1].set_xlabel('time [s]')
    fig.suptitle('A 20.4 N lateral push on the trunk in the unexplained part, odometry '
                 '0.03 m/s, 10 ms late, 200 Hz (K = 50 1/s)', fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _row(label, m):
    return (f'| {label} | {_fmt(max(m["rms_per_foot"]))} | {100 * m["state_accuracy"]:.2f} % | '
            f'{_delays(m["touchdown_delay"])} | {_delays(m["liftoff_delay"])} | '
            f'{_fmt(m["push_relative_error"])} | {_fmt(m["push_change_error"])} | '
            f'{_lag(m["push_lag"])} |')


def _lag(x):
    return '—' if x is None else f'{1e3 * x:.0f}'


HEADER = ['| run | worst foot rms error | state accuracy | touch-down delay [ms] median '
          '(min–max) | lift-off delay [ms] | push in unexplained, rel. error | push as the '
          'change of unexplained, rel. error | lag behind the push\'s K/(s+K) [ms] |',
          '|---|---|---|---|---|---|---|---|']


SOLO12_PLANTS = {
    'hidden 0.5 kg trunk load (20 % of the robot)': PlantOptions(hidden_load=0.5,
                                                                 load_offset=(0.03, 0.02, 0.02)),
    'links off 20-30 %': PlantOptions(link_error=0.25),
}


def solo12(case, results, lines):
    """MuJoCo's Solo12: exact sensing and the realistic odometry (the stance legs' twist and the
    odometry's as is), repeated over the odometry's draws; plants other than the URDF."""
    push = lateral_push('solo12')
    lines += ['', f'## MuJoCo Solo12: sensing (exact plant), push {push[1]:.2f} N lateral', '']
    lines += HEADER
    for name in ('exact', 'realistic odometry (0.03 m/s, 10 ms, 200 Hz)'):
        for sigma in (0.03, 0.0):
            kind = 'stance legs' if sigma else 'odometry as is'
            case(f'Solo12: {name}; {kind}', plant='solo12', push=push, sensing=SENSING[name],
                 odom_twist_noise=sigma)
    lines += ['', '## MuJoCo Solo12: plants other than the URDF (realistic odometry, stance '
              'legs)', ''] + HEADER
    for name, options in SOLO12_PLANTS.items():
        case(f'Solo12: {name}', plant='solo12', push=push, sensing=REAL, plant_options=options)
    lines += ['', '## MuJoCo Solo12 repeated: exact sensing (runs 1-3) and realistic odometry '
              f'(noise draws {SEEDS[0]}-{SEEDS[-1]}), stance legs', ''] + HEADER
    notes = []
    for kind, draws in (('exact', range(1, 4)), ('realistic', SEEDS)):
        worst = dict(foot=0.0, state=1.0, push=0.0)
        for seed in draws:
            sensing = SensingOptions() if kind == 'exact' else dataclasses.replace(REAL, seed=seed)
            m = metrics(run('solo12', push=push, sensing=sensing))
            log(f'Solo12 {kind} {seed}: {m["push_relative_error"]:.3f}')
            label = f'Solo12 {kind} ' + ('run' if kind == 'exact' else 'odometry noise draw')
            results[f'{label} {seed}'] = m
            lines.append(_row(f'{label} {seed}', m))
            worst = dict(foot=max(worst['foot'], max(m['rms_per_foot'])),
                         state=min(worst['state'], m['state_accuracy']),
                         push=max(worst['push'], m['push_relative_error']))
        results[f'Solo12 {kind} worst'] = worst
        notes.append(f'Solo12, {kind}, worst over the {len(draws)} runs: foot '
                     f'{_fmt(worst["foot"])}, state accuracy {100 * worst["state"]:.2f} %, '
                     f'push {_fmt(worst["push"])}.')
    lines += [''] + notes


LIVE_TEST = 'test/test_e2e_sim_mujoco_contact_forces.py'
LIVE_LINE = re.compile(r'Solo12 over DDS: worst foot rms ([\d.]+) % of the weight, contact state '
                       r'([\d.]+) %, push ([\d.]+) %; answer after the joint state \(wall, at '
                       r'the test\) p50 (-?[\d.]+) ms, p99 (-?[\d.]+) ms; (\d+) answers')


def live(runs, out_dir):
    """``--live``: the system test ``runs`` times, its printed figures into a result file."""
    head, measured = provenance(), commit()
    rows = []
    for i, g in enumerate(live_runs(LIVE_TEST, LIVE_LINE, runs)):
        rows.append(f'| {i + 1} | ' + ' | '.join(g[:3]) + ' | ' + ' / '.join(g[3:5])
                    + f' | {g[5]} |')
    text = (f'# Foot forces live over DDS: sim_mujoco playing Solo12, the dynamics node\n\n'
            f'{head} at the start; commit measured: {measured}.\n\n'
            f'Each run is `python -m pytest {LIVE_TEST} -s` (system tier): sim_mujoco plays '
            'Solo12 (2.5 kg, held standing by its PD) at 1 kHz paced at half real time, joint '
            'states at 1 kHz and the odometry of a legged state estimator (0.03 m/s white noise '
            'on the linear twist, 10 ms late, 200 Hz) over loopback DDS to a running dynamics '
            'node (contact frames the four feet, K = 50 1/s), which answers on ~/contact_forces '
            'as they arrive; a lateral push of 6.13 N (25 % of the weight) for 1 s. Every figure '
            'on the truth record sim_mujoco writes: the worst foot\'s rms error against '
            'MuJoCo\'s foot force through K/(s+K) as a share of the weight, the contact state '
            'against MuJoCo\'s contacts, the push\'s generalized force against the unexplained '
            'part (mean relative error over the push); the delay is the wall time from a joint '
            'state reaching the test to its answer reaching it (the test\'s executor may take '
            'the two topics\' messages in either order: near 0 it can be negative).\n\n'
            '| run | worst foot rms error [%] | state accuracy [%] | push in unexplained, rel. '
            'error [%] | answer after the joint state p50 / p99 [ms] | answers |\n'
            '|---|---|---|---|---|---|\n' + '\n'.join(rows) + '\n')
    md = output(out_dir, 'contact_forces_live.md')
    report(md, text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    add_out_dir(ap)
    ap.add_argument('--live', type=int, default=0, metavar='N',
                    help='run the live test over DDS N times instead (contact_forces_live.md)')
    args = ap.parse_args(argv)
    if args.live:
        return live(args.live, args.out_dir)
    head, measured = provenance(), commit()
    results, lines = {}, []

    def case(label, **kw):
        log(f'run {label} ...')
        res = run(**kw)
        m = metrics(res)
        results[label] = m
        lines.append(_row(label, m))
        return res

    lines += ['## MuJoCo: sensing (exact plant)', ''] + HEADER
    shown = {}
    for name, sensing in SENSING.items():
        for sigma in (0.03, 0.0):
            kind = 'stance legs' if sigma else 'odometry as is'
            res = case(f'{name}; {kind}', push=PUSH, sensing=sensing, odom_twist_noise=sigma)
            if sensing is REAL:
                shown[f'unexplained from the {kind}'] = res
    for gain in (200.0,):
        for name in ('exact', 'realistic odometry (0.03 m/s, 10 ms, 200 Hz)'):
            case(f'{name}; stance legs; K = 200', push=PUSH, sensing=SENSING[name], gain=gain)
    lines += ['', '## MuJoCo: plants other than the URDF (realistic odometry, stance legs)', '']
    lines += HEADER
    for name, options in PLANTS.items():
        case(name, push=PUSH, sensing=REAL, plant_options=options)
    lines += ['', '## Repeated: realistic odometry, stance legs, odometry noise draws '
              f'{SEEDS[0]}-{SEEDS[-1]}', ''] + HEADER
    worst = dict(foot=0.0, state=1.0, push=0.0)
    for seed in SEEDS:
        m = metrics(run(push=PUSH, sensing=dataclasses.replace(REAL, seed=seed)))
        log(f'seed {seed}: {m["push_relative_error"]:.3f}')
        results[f'realistic draw {seed}'] = m
        lines.append(_row(f'odometry noise draw {seed}', m))
        worst = dict(foot=max(worst['foot'], max(m['rms_per_foot'])),
                     state=min(worst['state'], m['state_accuracy']),
                     push=max(worst['push'], m['push_relative_error']))
    results['realistic worst over draws'] = worst
    lines += ['', f'Worst over the draws {SEEDS[0]}-{SEEDS[-1]}: foot {_fmt(worst["foot"])}, '
              f'state accuracy {100 * worst["state"]:.2f} %, push {_fmt(worst["push"])}.']
    solo12(case, results, lines)
    lines += ['', '## The project\'s rigid-contact simulator (exact sensing)', ''] + HEADER
    for label, kw in (('rigid standing K=50', dict(plant='standing')),
                      ('rigid trot K=50', dict(plant='trot')),
                      ('rigid trot K=200', dict(plant='trot', gain=200.0))):
        case(label, **kw)
    os.makedirs('out', exist_ok=True)
    plot(shown, 'out/contact_forces.png')
    wrote('out/contact_forces.png')
    c = results['estimator_cpu_s'] = estimator_time()
    lines += ['', f'Estimator CPU time per update (Jacobians + programme, thread_time median of '
              f'400): {1e6 * c["unconstrained"]:.0f} us when the unconstrained solution is '
              f'feasible, {1e6 * c["constrained"]:.0f} us when ProxQP solves it, '
              f'{1e6 * c["stance residual"]:.0f} us standing with the stance residual.']
    body = '\n'.join(lines)
    description = __doc__.split('\n\n', 2)[2].strip()
    text = (f'# {__doc__.splitlines()[0]}\n\n{head} at the start; commit measured: {measured}.'
            f'\n\n{description}\n\n{body}\n')
    results['run'] = dict(provenance=head, commit=measured)
    md, js = output(args.out_dir, 'contact_forces.md'), output(args.out_dir, 'contact_forces.json')
    with open(js, 'w') as f:
        json.dump(results, f, indent=1, default=float)
    wrote(js)
    report(md, text)


if __name__ == '__main__':
    main()
