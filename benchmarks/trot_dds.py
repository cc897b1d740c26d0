#!/usr/bin/env python3
"""A quadruped trotting through the stream over DDS, MuJoCo's plant in real time never waiting
for the controller: the check from outside, run by the project (scripts/closed_loop_trot.py).

    python benchmarks/trot_dds.py [--robot solo12] [--seeds 1 2 3] [--variants plan push step]
                                  [--rates 500 250] [--real-time-factors 1 0.5] [--name N]

Four processes on the machine's cores: ``sim_mujoco`` (MuJoCo at 1 kHz at the wall clock's
pace, ``max_delay`` 0: a command acts when it arrives; the actuators saturate at the robot's,
Solo12's 2.7 N m, where the URDF says 1000), the dynamics node as trot.launch.py
runs it (the feet as task and contact frames; it keeps the 10 newest joint states, not a
backlog; launch_logic.TROT_NODE), ``wbc_controller`` (gait trot at each of ``--rates``, default
500 Hz as quadruped-reactive-walking; touch-downs from the node's ``~/contact_forces``) and the
script's listener (plays the commands on ``cmd_vel``, records the node's contact states;
drained 20 times a second, about 0.06 CPU s per simulated s).  The plant hides a 1 kg
trunk load from the URDF; the sensing is a legged robot's (odometry 200 Hz, 10 ms late, white
noise 0.03 m/s and 0.01 rad/s; joint velocity noise 0.05 rad/s, effort noise 0.05 N m).

Variants, each over the seeds (the sensing noise): ``plan``: trot in place, forward 0.3 m/s,
sideways 0.2 m/s, turning 0.6 rad/s, stop; ``push``: trotting forward, a lateral push of 20 %
of the weight for 0.1 s; ``step``: forward over an unseen 2 cm step.  Figures from MuJoCo's
truth (falls, the base's mean velocity over the last 2 s of each command against it, the node's
contact state against MuJoCo's, how long after the truth it saw each touch-down and lift-off,
touch-downs it reported with the foot 1 cm or more above the ground; a run in which MuJoCo
found the accelerations bad and reset its state, "blew up", is judged up to there, and that is
one fall) and from the controller's
own statistics (periods answered,
staleness of the states it answered); the simulator's transport delay (a state's stamp to the
step its command acts on); the CPU each process used per simulated second; the machine's load.
The machine is shared: a run with the load above the cores' number is disturbed, and its
controller statistics say by how much; the cores themselves are shared with other machines, so
before each run a fixed pure-Python workload is timed (``reference workload``, this process's
CPU time): the same code takes longer when that figure is larger.

``--real-time-factors``: the simulator's pace, simulated seconds per wall second (default 1,
the check).  At 0.5 every process has twice the wall time per simulated second: the runs show
whether the stack holds when the cores are not the limit, and the CPU it then uses per
simulated second is what it needs to run in real time.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from common import add_out_dir, docstring_report, log, output, report  # noqa: E402

MEASURES = ('ros_dynamics/core', 'ros_dynamics/estimation', 'ros_dynamics/ros/dynamics_node',
            'ros_dynamics/control', 'ros_dynamics/ros/control/wbc_node.py',
            'ros_dynamics/ros/control/wbc_stream.py',
            'ros_dynamics/ros/simulation/mujoco_sim_node.py',
            'ros_dynamics/simulation/mujoco_legged.py',
            'ros_dynamics/simulation/legged_metrics.py', 'scripts/closed_loop_trot.py',
            'scripts/closed_loop_stack.py')

#: name: closed_loop_trot.py's arguments
VARIANTS = {
    'plan': ['--plan', 'commands'],
    'push': ['--plan', 'forward', '--push', '0.2', '--push-time', '4.0'],
    'step': ['--plan', 'forward', '--step-rise', '0.02'],
}


def reference_ms():
    """This process's CPU time [ms] for a fixed pure-Python workload: how fast the machine
    runs Python at the moment (the cores are shared with other machines' work; a larger
    figure is a slower machine, whatever the load average inside it says)."""
    t0 = time.process_time()
    total = 0
    for i in range(2_000_000):
        total += i * i % 7
    return 1e3 * (time.process_time() - t0)


def one(robot, variant, seed, folder, rate=500.0, factor=1.0):
    """closed_loop_trot.py's result (its .json) for one run, with the load averages around it
    and the reference workload's time before it."""
    path = os.path.join(folder, f'{robot}_{variant}_{seed}_{rate:g}_{factor:g}.json')
    cmd = [sys.executable, os.path.join(ROOT, 'scripts', 'closed_loop_trot.py'), '--robot',
           robot, '--real-time', '--hidden-load', '1.0', '--sensing', 'noisy', '--seed',
           str(seed), '--json', path, '--out', os.path.join(folder, f'{robot}_{variant}_{seed}'
                                                                    '.png'),
           '--control-rate', str(rate), '--real-time-factor', str(factor), *VARIANTS[variant]]
    before, reference = os.getloadavg()[0], reference_ms()
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(proc.stdout[-3000:] + proc.stderr[-3000:])
    with open(path) as f:
        res = json.load(f)
    res.update(load_before=before, load_after=os.getloadavg()[0], wall=time.monotonic() - t0,
               reference_ms=reference)
    return res


def _ms(spread):
    """p50 / p90 of a delay spread [s] (legged_metrics), in ms."""
    return f'{1e3 * spread[0]:.0f} / {1e3 * spread[1]:.0f}' if spread else '-'


def _row(robot, variant, seed, r, rate, factor):
    c = r['controller'] or {}
    segs = r['segments']
    v = max(max(abs(s['error'][0]), abs(s['error'][1])) for s in segs)
    w = max(abs(s['error'][2]) for s in segs)
    cpu, sim_s = r.get('cpu_s') or {}, r.get('simulated_s') or 1.0
    per = ' / '.join(f'{cpu[k] / sim_s:.2f}' if k in cpu else '-'
                     for k in ('sim', 'dynamics_node', 'wbc_controller', 'listener'))
    d, st = r.get('transport_delay_ms'), c.get('staleness_ms')
    cells = [robot, variant, f'{rate:g}', f'{factor:g}', str(seed), str(r['falls']), f'{v:.3f}',
             f'{w:.3f}',
             f'{100 * c.get("answered_fraction", 0.0):.2f}', str(c.get('owed', 0)),
             f'{st[0]:.1f} / {st[1]:.1f} / {st[2]:.0f}' if st else '-',
             f'{d[0]:.0f} / {d[1]:.0f}' if d else '-',
             f'{100 * r.get("contact_agreement", float("nan")):.1f}',
             _ms(r.get('touchdown_delay_s')), _ms(r.get('liftoff_delay_s')),
             str(r.get('touchdowns_reported_above_1cm', '-')),
             f'{r["sim_pace"][0] / r["sim_pace"][1]:.2f}' if r.get('sim_pace') else '-',
             '-' if r.get('plant_unstable_s') is None else f'{r["plant_unstable_s"]:.2f}', per,
             f'{r["load_before"]:.1f} / {r["load_after"]:.1f}', f'{r["reference_ms"]:.0f}']
    return '| ' + ' | '.join(cells) + ' |'


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--robot', default='solo12', choices=('solo12', 'quadruped'))
    ap.add_argument('--seeds', type=int, nargs='+', default=[1, 2, 3])
    ap.add_argument('--variants', nargs='+', default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument('--rates', type=float, nargs='+', default=[500.0],
                    help='the controller\'s rates [Hz] (each variant and seed at each)')
    ap.add_argument('--real-time-factors', type=float, nargs='+', default=[1.0],
                    help='the simulator\'s paces (each rate, variant and seed at each)')
    ap.add_argument('--name', default=None,
                    help='the result file\'s name (default trot_dds_<robot>)')
    add_out_dir(ap)
    args = ap.parse_args(argv)
    folder = tempfile.mkdtemp(prefix='rd_trot_dds_')
    columns = ('robot', 'variant', 'controller [Hz]', 'real-time factor', 'seed', 'falls',
               'velocity error max [m/s]', 'yaw rate error max [rad/s]', 'periods answered [%]',
               'periods owed', 'staleness p50 / p99 / max [ms]', 'transport delay p50 / p99 [ms]',
               'contact agreement [%]', 'touch-down seen after p50 / p90 [ms]',
               'lift-off seen after p50 / p90 [ms]', 'touch-downs reported >= 1 cm up',
               'simulated s per wall s', 'MuJoCo blew up at [s]',
               'CPU s per simulated s: sim / node / controller / listener',
               'load before / after', 'reference workload [ms]')
    lines = ['| ' + ' | '.join(columns) + ' |', '|' + '---|' * len(columns)]
    t0 = time.monotonic()
    for factor in args.real_time_factors:
        for rate in args.rates:
            for variant in args.variants:
                for seed in args.seeds:
                    log(f'{args.robot} {variant} at {rate:g} Hz, {factor:g} x real time, seed '
                        f'{seed}: about {1 / factor:.0f} minute(s) of wall time '
                        f'({time.monotonic() - t0:.0f} s so far) ...')
                    r = one(args.robot, variant, seed, folder, rate, factor)
                    lines.append(_row(args.robot, variant, seed, r, rate, factor))
                    log('  ' + r['summary'])
    report(output(args.out_dir, f'{args.name or "trot_dds_" + args.robot}.md'),
           docstring_report(__doc__, body='\n'.join(lines)),
           draws=f'{len(args.seeds)} independent draws of the sensing noise, seeds '
                 f'{", ".join(map(str, args.seeds))}')


if __name__ == '__main__':
    sys.exit(main())
