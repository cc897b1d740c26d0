"""The node's contact state on trotting robots, judged on MuJoCo's truth.

    python benchmarks/contact_state.py --out-dir benchmarks/results   # the tracked figures
    python benchmarks/contact_state.py                                 # out/benchmarks/
    python benchmarks/contact_state.py --quick                         # one draw per case
    python benchmarks/contact_state.py --live 3 --out-dir benchmarks/results   # over DDS

``--live N`` runs test/test_e2e_trot_contact_state.py N times (sim_mujoco playing Solo12, a
dynamics node over loopback DDS, the realistic odometry, a joint-space PD trot in the test
process; judged on sim_mujoco's truth record) and writes the figures it prints to
contact_state_live.md.

Runs ros_dynamics.simulation.contact_force_runs (no ROS: the node's own cycle, sample by
sample) on MuJoCo's Solo12 (example-robot-data's URDF, 2.5 kg) and the bundled quadruped
(8.33 kg) trotting in place under a controller that is not the project's
(simulation/scripted_trot.py: a joint-space PD trot on MuJoCo's own state and bias forces,
diagonal pairs every 0.2 s, Raibert foot placement), in two gaits: 'sine' (the feet leave and
meet the ground at speed, 4 cm clearance on Solo12) and 'smooth' (they leave and land at rest,
5 cm).  The plant: the URDF's inertias, every link's inertials off by 20-30 % (PlantOptions
link_error 0.25, drawn per run), or a hidden trunk load of 20 % of the robot's mass.  What the
estimate receives: joint states at 1 kHz and the odometry of a legged state estimator (0.03
m/s white noise on the linear twist, 10 ms late, 200 Hz), each case over odometry noise draws
(and link-error draws) 1-3.  The four feet are contact frames (point model, K = 50 1/s), the
threshold 20 % of a foot's share of the weight in the trot (half the weight), released at half
of it.  Two estimates of the same runs: the node's (estimation/contact_state.py, defaults: fast
gain 400 1/s, touch-down height 1.5 cm, lift speed 0.3 m/s) and the filter's (the contact
state from the programme's K/(s+K) force alone: fast gain, height and speed 0, what the node
did before).

Judged on MuJoCo's truth over the trot (after the 1 s ramp): the share of samples (all feet)
whose in_contact is MuJoCo's (a contact of its contact data with a positive normal force); the
delay of the estimate's nearest touch-down and lift-off to each of MuJoCo's (within 0.1 s; the
truth's flicker at impacts, runs up to 3 ms, not counted as events); touch-downs reported while
MuJoCo's foot sphere is 1 cm or more above the floor (false) and the highest foot at a reported
touch-down; the estimate's transitions beyond the truth's (chatter).  A lateral push of 20 % of
the weight on the trotting trunk (3-4 s, raised and lowered over 0.2 s): the unexplained
part's change from its mean over the 0.5 s before the push against the push's generalized
force through K/(s+K), as the change of the mean over the push (the trot's ripple averaged
out) and per sample; the foot forces against MuJoCo's through K/(s+K) (rms, worst foot, share
of the weight).
"""
import argparse
import dataclasses
import os
import re
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (add_out_dir, interleaved, live_runs, log, output, provenance,  # noqa: E402
                    report)

from ros_dynamics.estimation.contact_forces import ObserverUpdate  # noqa: E402
from ros_dynamics.estimation.contact_state import ContactStateOptions  # noqa: E402
from ros_dynamics.simulation.contact_force_runs import (  # noqa: E402
    PUSHED_TROT, Trot, _robot, metrics, run, state_metrics)
from ros_dynamics.simulation.mujoco_quadruped import (  # noqa: E402
    REALISTIC_ODOMETRY, PlantOptions)

#: the code this measures (benchmarks.results --stale)
MEASURES = ('ros_dynamics/estimation/contact_state.py',
            'ros_dynamics/estimation/contact_forces.py',
            'ros_dynamics/estimation/stance_residual.py',
            'ros_dynamics/simulation/contact_force_runs.py',
            'ros_dynamics/simulation/scripted_trot.py')

ROBOTS = {'Solo12': 'solo12_trot', 'quadruped': 'quadruped_trot'}
GAITS = {'sine': Trot(profile='sine', lift=0.4), 'smooth': Trot(profile='smooth', lift=0.5)}
ESTIMATES = {'node': ContactStateOptions(),
             'filter': ContactStateOptions(fast_gain=0.0, touchdown_height=0.0, lift_speed=0.0)}


def plants(robot, draw):
    """The plants of a draw: the URDF's, links off, a hidden trunk load of 20 % of the mass."""
    mass = _robot(ROBOTS[robot])[1].total_mass()
    return {"URDF's": None,
            'links off 20-30 %': PlantOptions(link_error=0.25, seed=draw),
            'hidden load 20 %': PlantOptions(hidden_load=0.2 * mass,
                                             load_offset=(0.03, 0.02, 0.02))}


def _estimator(robot, options):
    model = _robot(ROBOTS[robot])[1]
    return model, dict(contact_state=options)


def _ms(x):
    return f'{1e3 * x:.0f}'


def case(robot, gait, plant, options, draw, estimate):
    """One run: its state figures."""
    out = run(ROBOTS[robot], trot=GAITS[gait], plant_options=options,
              sensing=dataclasses.replace(REALISTIC_ODOMETRY, seed=draw),
              estimator=_estimator(robot, ESTIMATES[estimate]))
    m = state_metrics(out)
    m['rms'] = max(metrics(out)['rms_per_foot'])
    return m


def worst(ms):
    """The worst of a case's draws."""
    td = [x for m in ms for x in m['touchdown_delay']]
    lo = [x for m in ms for x in m['liftoff_delay']]
    return dict(
        accuracy=min(m['state_accuracy'] for m in ms),
        td_median=max(np.median(m['touchdown_delay']) for m in ms),
        td_p90=max(np.percentile(m['touchdown_delay'], 90) for m in ms),
        lo_median=max(np.median(m['liftoff_delay']) for m in ms),
        lo_median_min=min(np.median(m['liftoff_delay']) for m in ms),
        lo_p90=max(np.percentile(np.abs(m['liftoff_delay']), 90) for m in ms),
        td_all=td, lo_all=lo, missed=sum(m['missed'] for m in ms),
        false=sum(m['false_touchdowns'] for m in ms),
        highest=max(m['highest_touchdown'] for m in ms),
        chatter=sum(max(0, m['touchdowns'] - m['true_touchdowns']) for m in ms),
        rms=max(m['rms'] for m in ms))


def row(label, w, n):
    return (f'| {label} | {100 * w["accuracy"]:.2f} | {_ms(w["td_median"])} / {_ms(w["td_p90"])}'
            f' | {_ms(w["lo_median_min"])} … {_ms(w["lo_median"])} / {_ms(w["lo_p90"])} | '
            f'{w["false"]} ({1e3 * w["highest"]:.1f} mm) | {w["chatter"]} | {w["missed"]} | '
            f'{100 * w["rms"]:.2f} | {n} |')


HEADER = ['| robot, gait, plant, estimate | accuracy, worst draw [%] | touch-down delay '
          'median / p90, worst draw [ms] | lift-off delay median (range over draws) / |p90| '
          'worst [ms] | false touch-downs (highest foot) | extra touch-downs | missed events |'
          ' worst foot force rms [% weight] | draws |',
          '|---|---|---|---|---|---|---|---|---|']


def cost():
    """Thread CPU time [s] of one estimator update (Jacobians, the programme, the stance
    residual, the contact state, the memory) on Solo12 with four and with two (a trot's
    diagonal) feet loaded, for each estimate, timed interleaved (common.interleaved: the
    median over blocks)."""
    from ros_dynamics.estimation.cycle_state import ObserverSettings
    model = _robot('solo12_trot')[1]
    feet = ('FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT')
    q = model.neutral()
    q[2] = 0.22
    for i, n in enumerate(model.joint_names):
        q[7 + i] = {'HFE': 0.8, 'KFE': -1.6}.get(n.split('_')[1], 0.0) * (
            -1.0 if n.startswith('H') else 1.0)
    A = ObserverSettings(model, contact_frames=feet).contact_forces(model).jacobians(q)[0]
    state = ObserverUpdate(v=np.zeros(model.nv), tau=np.zeros(model.nv), dt=1e-3, bridge=False)
    calls = {}
    for label, loaded in (('four feet', (1, 1, 1, 1)), ('two feet', (1, 0, 0, 1))):
        r = A @ np.concatenate([[0.0, 0.0, 6.0 * x] for x in loaded])
        for estimate, options in ESTIMATES.items():
            est = ObserverSettings(model, contact_frames=feet, contact_force_threshold=2.45,
                                   contact_state=options).contact_forces(model)
            calls[(label, estimate)] = (lambda e=est, r=r: e.update(q, r, state))
    return interleaved(calls, blocks=41, clock=time.thread_time)


def push(robot, draw):
    """The pushed trot (the node's estimate): the unexplained part and the state."""
    out = run(ROBOTS[robot], trot=PUSHED_TROT,
              sensing=dataclasses.replace(REALISTIC_ODOMETRY, seed=draw))
    m = metrics(out)
    s = state_metrics(out, phases=('push',))
    return m, s


LIVE_TEST = 'test/test_e2e_trot_contact_state.py'
LIVE_LINE = re.compile(r'Solo12 trotting over DDS: contact state ([\d.]+) %, touch-down median '
                       r'(-?\d+) ms p90 (-?\d+) ms, lift-off median (-?\d+) ms p90 \|\.\| '
                       r'(\d+) ms, false touch-downs (\d+) \(highest foot ([\d.]+) mm\), '
                       r'(\d+) touch-downs against MuJoCo\'s (\d+)')


def live(runs, out_dir):
    """``--live``: the system test ``runs`` times, its printed figures into a result file."""
    head, rows = provenance(), []
    for i, g in enumerate(live_runs(LIVE_TEST, LIVE_LINE, runs)):
        rows.append(f'| {i + 1} | {g[0]} | {g[1]} / {g[2]} | {g[3]} / {g[4]} | {g[5]} '
                    f'({g[6]} mm) | {g[7]} / {g[8]} |')
    text = ('# The node\'s contact state live over DDS: sim_mujoco playing Solo12, trotting\n\n'
            f'{head} at the start.\n\nEach run is `python -m pytest {LIVE_TEST} -s` (system '
            'tier): sim_mujoco plays Solo12 (2.5 kg) at 1 kHz paced at half real time, joint '
            'states at 1 kHz and the odometry of a legged state estimator (0.03 m/s white noise '
            'on the linear twist, 10 ms late, 200 Hz) over loopback DDS to a running dynamics '
            'node (contact frames the four feet, K = 50 1/s, threshold 2.45 N: 20 % of a foot\'s '
            'share of the weight in a trot); a joint-space PD trot in place (0.4 s period, '
            'simulation/scripted_trot.py) in the test process commands the efforts, each acting '
            '1 ms after the state it answers. Over the 2.5 s of trotting, judged on the truth '
            'record sim_mujoco writes: the share of samples whose in_contact is MuJoCo\'s, the '
            'delays of the estimate\'s nearest touch-down and lift-off to MuJoCo\'s (its flicker '
            'up to 3 ms not counted), touch-downs reported while a foot is 1 cm or more above the '
            'floor.\n\n| run | contact state [%] | touch-down median / p90 [ms] | lift-off '
            'median / p90 of |.| [ms] | false touch-downs (highest foot) | touch-downs, the '
            'node\'s / MuJoCo\'s |\n|---|---|---|---|---|---|\n' + '\n'.join(rows) + '\n')
    report(output(out_dir, 'contact_state_live.md'), text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    add_out_dir(ap)
    ap.add_argument('--quick', action='store_true', help='one draw per case')
    ap.add_argument('--live', type=int, default=0, metavar='N',
                    help='run the live test over DDS N times instead (contact_state_live.md)')
    args = ap.parse_args(argv)
    if args.live:
        return live(args.live, args.out_dir)
    head, t0 = provenance(), time.time()
    draws = (1,) if args.quick else (1, 2, 3)
    lines, summary = ['## The contact state while trotting (realistic odometry)', ''] + HEADER, {}
    for robot in ROBOTS:
        for gait in GAITS:
            for plant in plants(robot, 1):
                for estimate in ESTIMATES:
                    ms = []
                    for draw in draws:
                        log(f'{robot} {gait} {plant} {estimate} draw {draw} ...')
                        ms.append(case(robot, gait, plant, plants(robot, draw)[plant], draw,
                                       estimate))
                    w = worst(ms)
                    summary[(robot, gait, plant, estimate)] = w
                    lines.append(row(f'{robot}, {gait}, {plant}, {estimate}', w, len(ms)))
    lines += ['', '## All runs of an estimate together', '',
              '| estimate | accuracy, worst run [%] | touch-down delay median / p90 [ms] | '
              'lift-off delay median / p90 / max |.| [ms] | false touch-downs | runs |',
              '|---|---|---|---|---|---|']
    for estimate in ESTIMATES:
        ws = [w for k, w in summary.items() if k[3] == estimate]
        td = np.array([x for w in ws for x in w['td_all']])
        lo = np.array([x for w in ws for x in w['lo_all']])
        lines.append(f'| {estimate} | {100 * min(w["accuracy"] for w in ws):.2f} | '
                     f'{_ms(np.median(td))} / {_ms(np.percentile(td, 90))} | '
                     f'{_ms(np.median(lo))} / {_ms(np.percentile(lo, 90))} / '
                     f'{_ms(np.abs(lo).max())} | {sum(w["false"] for w in ws)} | '
                     f'{len(ws) * len(draws)} |')
    lines += ['', '## A lateral push of 20 % of the weight while trotting (sine gait, the '
              "URDF's plant, the node's estimate)", '',
              '| robot, draw | unexplained change of the mean, rel. error | per sample | '
              'worst foot force rms [% weight] | state accuracy during the push [%] |',
              '|---|---|---|---|---|']
    for robot in ROBOTS:
        for draw in draws:
            log(f'{robot} pushed trot draw {draw} ...')
            m, s = push(robot, draw)
            lines.append(f'| {robot}, {draw} | {100 * m["push_mean_change_error"]:.1f} % | '
                         f'{100 * m["push_change_error"]:.0f} % | '
                         f'{100 * max(m["rms_per_foot"]):.2f} | '
                         f'{100 * s["state_accuracy"]:.2f} |')
    c = cost()
    lines += ['', '## Cost', '', 'Thread CPU time of one estimator update (Jacobians, the '
              'programme, the stance residual, the contact state, the memory of lifted feet), '
              'Solo12, the four calls timed interleaved (median over 41 blocks): ' + '; '.join(
                  f'{label}, {estimate}: {1e6 * t:.0f} us' for (label, estimate), t in c.items())
              + '.']
    body = '\n'.join(lines)
    description = __doc__.split('\n\n', 2)[2].strip()
    text = (f'# {__doc__.splitlines()[0]}\n\n{head} at the start; run time '
            f'{(time.time() - t0) / 60:.0f} min.\n\n{description}\n\n{body}\n')
    report(output(args.out_dir, 'contact_state.md'), text)


if __name__ == '__main__':
    main()
