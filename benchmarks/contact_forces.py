"""Forces at the feet from the momentum residual, against two plants (docs/contact_forces.md).

    python benchmarks/contact_forces.py --out-dir benchmarks/results   # the tracked figures
    python benchmarks/contact_forces.py                                 # out/benchmarks/

Runs ros_dynamics.simulation.contact_force_runs (no ROS) at 1 kHz with the four feet of the
bundled quadruped as contact frames (point model, threshold 8 N, release 4 N):

* MuJoCo (an independent engine): standing, weight shift, the left front foot lifted and put
  down, a 15.8 N push on the trunk; observer gain K = 50 and 200 1/s;
* the project's rigid-contact simulator (OS LCP): standing, and an open-loop trot;
* the base pose and twist from an odometry: white noise on the base twist and a delay of the
  base state (the joint states on time), on the MuJoCo run, K = 50.

Figures (the plant's foot forces through the observer's exact K/(s+K) as the reference): per-
foot force rms error as a fraction of the weight, per phase; contact-state accuracy (the plant's
foot in contact while its normal force exceeds the release level); touch-down and lift-off
delays; the push's generalized force found in the unexplained part; the estimator's CPU time
per update.  Writes contact_forces.md and contact_forces.json to --out-dir and the foot-force
plot to out/contact_forces.png.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import add_out_dir, log, machine_info, output, wrote  # noqa: E402

import ros_dynamics as rd  # noqa: E402
from ros_dynamics.estimation.contact_forces import ContactForceEstimator  # noqa: E402
from ros_dynamics.simulation.contact_force_runs import metrics, run  # noqa: E402
from ros_dynamics.simulation.mujoco_quadruped import FEET  # noqa: E402

NOISE = (0.0, 0.01, 0.03, 0.1)          # base twist noise [m/s, rad/s], 1 sigma per sample
DELAY = (0.0, 0.002, 0.005, 0.01, 0.02)  # odometry delay [s]


def _fmt(x):
    return '—' if x is None else f'{100 * x:.2f} %'


def _delays(d):
    return f'{1e3 * np.median(d):.0f} ({1e3 * np.min(d):.0f}–{1e3 * np.max(d):.0f})' if d else '—'


def estimator_time():
    """Median CPU time of one update (Jacobians + the programme), standing and with active
    constraints (a pulling foot)."""
    model = rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)
    q = model.neutral()
    q[7:] = [{'HAA': 0.0, 'HFE': 0.7, 'KFE': -1.4}[n.split('_')[1]] for n in model.joint_names]
    est = ContactForceEstimator(model, FEET, threshold=8.0)
    f = np.tile([0.0, 0.0, 20.0], (4, 1))
    r = sum(rd.link_jacobian(model, q, ft)[:3].T @ fi for ft, fi in zip(FEET, f))
    r_pull = r + rd.link_jacobian(model, q, 'LF_foot')[:3].T @ np.array([0.0, 0.0, -40.0])
    out = {}
    for label, rr in (('unconstrained', r), ('constrained', r_pull)):
        est.update(q, rr)
        ts = []
        for _ in range(400):
            t0 = time.thread_time()
            est.update(q, rr)
            ts.append(time.thread_time() - t0)
        out[label] = float(np.median(ts))
    return out


def plot(res, path):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    t = res['t']
    fig, axs = plt.subplots(5, 1, figsize=(10, 10), sharex=True)
    for i, (ax, name) in enumerate(zip(axs, FEET)):
        ax.plot(t, res['feet'][:, i, 2], color='0.75', lw=0.8, label='MuJoCo foot force')
        ax.plot(t, res['filtered'][:, i, 2], 'k', lw=1.2, label='its K/(s+K)')
        ax.plot(t, res['estimate'][:, i, 2], 'C3--', lw=1.2, label='estimate')
        ax.fill_between(t, 0, 62, where=res['in_contact'][:, i], color='C2', alpha=0.08,
                        label='estimated in contact')
        ax.set_ylabel(f'{name}\nFz [N]')
        ax.set_ylim(-2, 62)
        ax.grid(alpha=0.3)
    axs[0].legend(fontsize=7, ncol=4, loc='upper right')
    axs[0].set_title('Foot forces from the momentum residual vs MuJoCo (K = 50 1/s, 1 kHz)')
    ax = axs[4]
    ax.plot(t, res['push'][:, 0], 'k', lw=1.2, label='push, filtered (base x row)')
    ax.plot(t, res['unexplained'][:, 0], 'C3--', lw=1.2, label='unexplained (base x row)')
    ax.set_ylabel('trunk [N]')
    ax.set_xlabel('time [s]')
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    add_out_dir(ap)
    args = ap.parse_args(argv)
    cases, results = {}, {}
    for label, kw in (('mujoco K=50', dict(plant='mujoco')),
                      ('mujoco K=200', dict(plant='mujoco', gain=200.0)),
                      ('standing K=50', dict(plant='standing')),
                      ('trot K=50', dict(plant='trot')),
                      ('trot K=200', dict(plant='trot', gain=200.0))):
        log(f'run {label} ...')
        res = run(**kw)
        if label == 'mujoco K=50':
            os.makedirs('out', exist_ok=True)
            plot(res, 'out/contact_forces.png')
            wrote('out/contact_forces.png')
        cases[label] = metrics(res)
    odom = {}
    for noise in NOISE:
        for delay in DELAY:
            if noise and delay:
                continue
            log(f'run odometry noise {noise} delay {delay} ...')
            m = metrics(run('mujoco', odom_noise=noise, odom_delay=delay))
            odom[f'{noise},{delay}'] = dict(noise=noise, delay=delay, **m)
    results['estimator_cpu_s'] = estimator_time()
    results['cases'], results['odometry'] = cases, odom
    stamp = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())
    results['run'] = dict(date=stamp, machine=machine_info(), load=os.getloadavg()[0])
    lines = ['# Contact forces at the feet from the momentum residual '
             '(benchmarks/contact_forces.py)', '',
             f'Run {stamp}. Machine: {machine_info()}; load average {os.getloadavg()[0]:.2f} at '
             'the end of the run.', 'Quadruped 8.33 kg (weight 81.7 N), 1 kHz, point contacts at '
             'the four feet, threshold 8 N, release 4 N. Reference: the plant foot forces through '
             'the exact K/(s+K). Errors as a fraction of the weight.', '',
             '| run | rms error per foot LF, RF, LH, RH | state accuracy | touch-down delay '
             '[ms] median (min–max) | lift-off delay [ms] | push in unexplained, rel. error |',
             '|---|---|---|---|---|---|']
    for label, m in cases.items():
        lines.append(f'| {label} | {", ".join(_fmt(x) for x in m["rms_per_foot"])} | '
                     f'{100 * m["state_accuracy"]:.2f} % | {_delays(m["touchdown_delay"])} | '
                     f'{_delays(m["liftoff_delay"])} | {_fmt(m["push_relative_error"])} |')
    lines += ['', '## Per phase (MuJoCo, K = 50): rms error per foot', '',
              '| phase | LF | RF | LH | RH |', '|---|---|---|---|---|']
    for ph, v in cases['mujoco K=50']['rms_per_phase'].items():
        lines.append(f'| {ph} | ' + ' | '.join(_fmt(x) for x in v) + ' |')
    lines += ['', '## Odometry: base twist noise and base-state delay (MuJoCo, K = 50)', '',
              '| twist noise [m/s, rad/s] | delay [ms] | worst foot rms error | state accuracy '
              '| push rel. error |', '|---|---|---|---|---|']
    for m in odom.values():
        lines.append(f'| {m["noise"]} | {1e3 * m["delay"]:.0f} | {_fmt(max(m["rms_per_foot"]))} '
                     f'| {100 * m["state_accuracy"]:.2f} % | {_fmt(m["push_relative_error"])} |')
    c = results['estimator_cpu_s']
    lines += ['', f'Estimator CPU time per update (Jacobians + programme, thread_time median of '
              f'400): {1e6 * c["unconstrained"]:.0f} us when the unconstrained solution is '
              f'feasible, {1e6 * c["constrained"]:.0f} us when ProxQP solves it.']
    md, js = output(args.out_dir, 'contact_forces.md'), output(args.out_dir, 'contact_forces.json')
    with open(md, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    with open(js, 'w') as f:
        json.dump(results, f, indent=1, default=float)
    print('\n'.join(lines))
    wrote(md, js)


if __name__ == '__main__':
    main()
