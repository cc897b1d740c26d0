"""The quadruped's closed loop on a MuJoCo plant that is not the model (``closed_loop_quadruped.py
--plant mujoco``): ``sim_mujoco`` (MuJoCo at 1 kHz, soft contacts, optional hidden trunk load,
link mass errors, sensor noise, late and slower odometry; commands applied as they arrive, no
lock-step) + dynamics node + ``wbc_controller``, three processes over loopback DDS.

Every figure is the plant's truth: the CoM of MuJoCo's robot (its hidden load included) against
the reference the controller published for the same stamp, falls, the lifted foot's rise, the
stance feet's slide (``ros_dynamics.simulation.legged_metrics``); QP solved from the
controller's log; the transport delay (simulated time from a joint state to the step its
command acts on) from the simulator's.
"""
import copy
import json
import os
import re
import shutil
import time
import tempfile

from closed_loop_stack import controller_statistics
from demo import _write_params

from ros_dynamics.simulation.legged_robots import ROBOTS, robot_urdf

#: the sensing of a legged robot (issue: odometry 0.03 m/s white noise on the linear twist,
#: 10 ms late, 200 Hz; joint velocity noise 0.05 rad/s)
SENSING = {
    'clean': dict(),
    'noisy': dict(noise_velocity=0.05, noise_effort=0.05, odom_rate=200.0, odom_delay=0.01,
                  odom_noise_linear=0.03, odom_noise_angular=0.01),
}


def schedule(args):
    """The controller's schedule for ``--schedule`` (its phase times; no start state needed)."""
    import numpy as np

    from ros_dynamics.control.stand_step import StandStepSchedule
    t_track, segment, shift, unload, swing, stand = args.schedule
    return StandStepSchedule(['a', 'b', 'c', 'd'], np.zeros(3), np.zeros((4, 3)),
                             t_track=t_track, segment=segment, shift=shift, unload=unload,
                             swing=swing, stand=stand)


def robot_mass(xml):
    import numpy as np

    import ros_dynamics as rd
    model = rd.load_urdf(xml, floating_base=True)
    return float(rd.task_space(model, np.r_[0, 0, 0, 0, 0, 0, 1, np.zeros(model.nv - 6)],
                               np.zeros(model.nv), rd.task_frames(model, [])).mass)


def run(args, duration, tmp, log_dir, say):
    """Start the three processes, record the controller's CoM references and the stream's CoM
    until the simulator ends; returns (truth arrays, references, stream CoM, logs)."""
    import numpy as np
    import rclpy
    from geometry_msgs.msg import PointStamped
    from rclpy.node import Node
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    from demo import stamp_key
    from ros_dynamics.ros.control.wbc_stream import task_space_msg_type
    robot = ROBOTS[args.robot]
    _, xml = robot_urdf(args.robot)
    truth_path = os.path.join(tmp, 'truth.npz')
    push = [args.push_time, args.push_duration, 0.0, args.push, 0.0]
    files = {n: os.path.join(tmp, f'{n}.yaml') for n in ('sim', 'dyn', 'ctl')}
    _write_params(files['sim'], 'sim', dict(
        robot_description=xml, feet=robot['feet'], foot_radius=robot['foot_radius'],
        pose=[f'{j}={a}' for j, a in robot['pose'].items()], duration=duration,
        real_time_factor=args.real_time_factor, command_delay=args.command_delay,
        max_delay=args.max_delay,
        hidden_load=args.hidden_load, load_offset=list(args.load_offset),
        link_error=args.link_error, base_push=push, wait_for_subscribers=1,
        wait_timeout=120.0, truth_record=truth_path, seed=args.seed,
        **SENSING[args.sensing]))
    corrected = getattr(args, 'com_correction', 'off') == 'on'
    weight = 9.81 * robot_mass(xml)
    _write_params(files['dyn'], 'dynamics', dict(
        robot_description=xml, floating_base=True, task_frames=robot['feet'],
        christoffel_stream=False, input_qos_depth=2000, qos_depth=2000,
        **(dict(contact_frames=list(robot['feet']), contact_force_threshold=0.1 * weight)
           if corrected else {})))
    _write_params(files['ctl'], 'wbc_controller', dict(
        robot_description=xml, feet=robot['feet'], lift_foot=robot['lift'], report_period=0.0,
        schedule=list(args.schedule),
        **(dict(contact_forces_topic='dynamics/contact_forces') if corrected else {})))
    logs = {n: os.path.join(log_dir, f'{args.robot}_mujoco_{n}.log')
            for n in ('sim', 'dynamics_node', 'wbc_controller')}
    rclpy.init(args=[])
    lis = Node('closed_loop_listener')
    qos = QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE)
    ref, stream = {}, {}
    sub_ts = lis.create_subscription(task_space_msg_type(), '/dynamics/task_space', lambda m: (
        stream.__setitem__(stamp_key(m), np.array((m.com.x, m.com.y, m.com.z)))), qos)
    sub_ref = lis.create_subscription(PointStamped, '/wbc_controller/com_reference', lambda m: (
        ref.__setitem__(stamp_key(m), np.array((m.point.x, m.point.y, m.point.z)))), qos)
    from closed_loop_stack import run_stack
    t_start = run_stack(
        lis, (sub_ts, sub_ref), logs, files, 'ros_dynamics.ros.simulation.mujoco_sim_node', args, log_dir,
        say, f'[closed_loop] {args.robot} on MuJoCo: sim_mujoco + dynamics node + wbc_controller '
        f'started; {duration:g} simulated s at real-time factor {args.real_time_factor:g}, no '
        'lock-step', lambda: say(f'[closed_loop]   {len(ref)} CoM references so far'))
    text = {n: open(p).read() for n, p in logs.items()}
    if not os.path.exists(truth_path):
        raise RuntimeError(f'the simulator wrote no truth record; its log: {text["sim"][-3000:]}')
    truth = dict(np.load(truth_path))
    say(f'[closed_loop] {len(ref)} CoM references, {len(truth["stamp_ns"])} plant steps '
        f'({time.monotonic() - t_start:.0f} s wall)')
    return truth, ref, stream, text


def evaluate(truth, ref, stream, text, args):
    import numpy as np

    from ros_dynamics.simulation.legged_metrics import closed_loop_metrics
    robot = ROBOTS[args.robot]
    sched = schedule(args)
    r = closed_loop_metrics(truth, ref, robot['feet'].index(robot['lift']),
                            (sched.t_swing, sched.t_down))
    gap = [np.linalg.norm(stream[k] - c) for k, c in zip(r['_stamps'], r['_com']) if k in stream]
    ctl = controller_statistics(text['wbc_controller']) or {}
    delay = re.findall(r'transport delay p50 ([\d.]+) ms, p99 ([\d.]+) ms', text['sim'])
    steps = re.findall(r'joint states published: (\d+); commands applied (\d+), hold steps '
                       r'(\d+)', text['sim'])
    t, com = r['_t'], r['_com']
    win = (t >= args.push_time) & (t < args.push_time + 0.5)
    at = np.searchsorted(t, args.push_time)
    r.update({'com_push_response_m': (float(np.abs(com[win, 1] - com[at, 1]).max())
                                      if win.any() and at < len(t) else None),
              'qp_solved_fraction': (ctl['qp_solved'] / ctl['qp_tried'] if ctl.get('qp_tried')
                                     else 0.0),
              'periods_answered_fraction': ctl.get('answered_fraction', 0.0),
              'cycles_served': ctl.get('answered', 0), 'controller': ctl,
              'stream_com_vs_plant_rms_m': float(np.sqrt(np.mean(np.square(gap)))) if gap
              else None,
              'qp_cpu_time_us_p50_p99': ctl.get('qp_cpu_us'),
              'transport_delay_ms_p50_p99': [float(x) for x in delay[-1]] if delay else None,
              'plant_steps_commands_hold': [int(x) for x in steps[-1]] if steps else None,
              'plant_mass_kg': float(truth['mass']), '_sched': sched,
              # the CoM error's mean per axis (a constant offset) and its rms about it
              'com_error_mean_xyz_m': (com - r['_ref']).mean(axis=0).tolist(),
              'com_error_std_xyz_m': (com - r['_ref']).std(axis=0).tolist()})
    return r


def summary_line(r, args):
    return (f'{args.robot} on MuJoCo (hidden load {args.hidden_load:g} kg, {args.sensing} '
            f'sensing): CoM rms {r["com_rms_m"]:.5f} m, falls {r["falls"]}, lifted foot '
            f'{r["lift_foot_height_m"] or 0.0:.4f} m, stance slide {r["stance_slide_max_m"]:.4f} '
            f'm, QP solved {100 * r["qp_solved_fraction"]:.2f} %')


def plot(r, path, args):
    import matplotlib
    import numpy as np
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    t, com, ref, s = r['_t'], r['_com'], r['_ref'], r['_sched']
    fig, axs = plt.subplots(3, 1, figsize=(11, 9), sharex=True)
    for ax in axs:
        ax.axvspan(s.t_swing, s.t_down, color='C1', alpha=0.15)
        if args.push:
            ax.axvspan(args.push_time, args.push_time + args.push_duration, color='C3',
                       alpha=0.3)
    for j, (lab, col) in enumerate(zip('xyz', ('C0', 'C2', 'C4'))):
        axs[0].plot(t, (ref[:, j] - ref[0, j]) * 1e3, '--', color=col, lw=1.2,
                    label=f'{lab} reference')
        axs[0].plot(t, (com[:, j] - ref[0, j]) * 1e3, color=col, lw=0.8,
                    label=f'{lab} MuJoCo (truth)')
    axs[0].axhline(0, color='k', lw=0.3)
    axs[0].set_ylabel('CoM - start [mm]')
    axs[0].legend(fontsize=8, ncol=3)
    axs[0].set_title(f'MuJoCo\'s CoM against the controller\'s reference: rms '
                     f'{r["com_rms_m"] * 1e3:.2f} mm (target 10 mm); orange: swing, red: '
                     f'{args.push:.1f} N push')
    axs[1].plot(r['_ta'], r['_rise'] * 1e2, 'C1', label='lifted foot height')
    axs[1].plot(r['_ta'], r['_slide'] * 1e2, 'C3', label='stance feet slide (max)')
    axs[1].axhline(2.0, color='k', ls=':', lw=1, label='2 cm (lift >= it, slide <= it)')
    axs[1].set_ylabel('[cm]')
    axs[1].legend(fontsize=8)
    win = np.ones(20) / 20.0                   # 20 ms moving average: the noise is the sensors'
    for f, foot in enumerate(ROBOTS[args.robot]['feet']):
        axs[2].plot(r['_ta'], np.convolve(r['_fz'][:, f], win, mode='same'), lw=0.9, label=foot)
    axs[2].set_ylabel('MuJoCo normal force, 20 ms mean [N]')
    axs[2].set_xlabel('time since the controller started [s]')
    axs[2].legend(fontsize=8, ncol=4)
    for ax in axs:
        ax.grid(alpha=0.3)
    d = r['transport_delay_ms_p50_p99']
    fig.suptitle(f'{args.robot} ({r["plant_mass_kg"]:.2f} kg in MuJoCo, {args.hidden_load:g} kg '
                 f'of it unknown to the URDF' + (f', links ±{100 * args.link_error:.0f} %'
                                                 if args.link_error else '')
                 + f'), {args.sensing} sensing, over DDS without '
                 f'lock-step: falls {r["falls"]}, QP solved {100 * r["qp_solved_fraction"]:.2f} %'
                 + (f', delay {d[0]:.1f} ms p50' if d else ''), fontsize=10)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


#: (name, options) of ``--variants``: what the plant hides from the controller
VARIANTS = (
    ('nominal, clean sensing', dict(hidden_load=0.0, link_error=0.0, sensing='clean')),
    ('hidden trunk load, noisy sensing', dict(hidden_load=1.0, link_error=0.0, sensing='noisy')),
    ('hidden load off-centre, links off 16-24 %, noisy sensing',
     dict(hidden_load=1.0, load_offset=(0.03, 0.02, 0.02), link_error=0.2, sensing='noisy')),
    ('CoM-corrected, hidden load off-centre, links off 16-24 %, noisy sensing',
     dict(hidden_load=1.0, load_offset=(0.03, 0.02, 0.02), link_error=0.2, sensing='noisy',
          com_correction='on')),
    ('CoM-corrected, nominal, clean sensing',
     dict(hidden_load=0.0, link_error=0.0, sensing='clean', com_correction='on')),
)

COLUMNS = (('plant mass [kg]', 'plant_mass_kg', 1, '.2f'),
           ('CoM rms [mm]', 'com_rms_m', 1e3, '.2f'),
           ('CoM max [mm]', 'com_max_m', 1e3, '.1f'), ('falls', 'falls', 1, 'd'),
           ('lifted foot [cm]', 'lift_foot_height_m', 1e2, '.1f'),
           ('stance slide [cm]', 'stance_slide_max_m', 1e2, '.2f'),
           ('QP solved [%]', 'qp_solved_fraction', 1e2, '.2f'),
           ('max tilt [deg]', 'max_tilt_deg', 1, '.1f'))


def once(args, root, say):
    """One closed loop: (result dict, metrics with time series); writes the plot and json."""
    _, xml = robot_urdf(args.robot)
    if args.push is None:
        args.push = round(0.2 * 9.81 * (robot_mass(xml) + args.hidden_load), 2)
    duration = args.duration or schedule(args).duration
    say(f'[closed_loop] ROS_DOMAIN_ID={os.environ.get("ROS_DOMAIN_ID")} (LOCALHOST); '
        f'{args.robot} on MuJoCo, {duration:g} s, hidden load {args.hidden_load:g} kg, link '
        f'error {args.link_error:g}, push {args.push:g} N at {args.push_time:g} s, '
        f'{args.sensing} sensing')
    log_dir = os.path.join(os.path.dirname(os.path.abspath(args.out)), 'closed_loop_logs')
    os.makedirs(log_dir, exist_ok=True)
    truth, ref, stream, text = run(args, duration, tempfile.mkdtemp(prefix='rd_mujoco_'),
                                   log_dir, say)
    r = evaluate(truth, ref, stream, text, args)
    plot(r, args.out, args)
    res = {k: v for k, v in r.items() if not k.startswith('_')}
    res.update(sensing=SENSING[args.sensing], push_N=args.push, summary=summary_line(r, args),
               args=dict(vars(args), out=os.path.relpath(args.out, root),
                         json=args.json and os.path.relpath(args.json, root)))
    base = os.path.splitext(os.path.abspath(args.out))[0]
    for path in filter(None, (base + '.json', args.json)):
        with open(path, 'w') as f:
            json.dump(res, f, indent=1, default=float)
    say(f'[closed_loop] plot saved to {args.out}; logs in {log_dir}')
    say(res['summary'])
    return res


def main(args, root):
    """``closed_loop_quadruped.py --plant mujoco``: one run, or ``--variants``; the result file
    (.md, next to the plot and to ``--result``) names date, machine, load, script and commit."""
    import numpy as np

    from common import report
    say = lambda *a: print(*a, flush=True)  # noqa: E731
    if args.out == os.path.join(root, 'out', 'closed_loop_quadruped.png'):
        args.out = os.path.join(root, 'out', f'closed_loop_quadruped_mujoco_{args.robot}.png')
    stem = os.path.splitext(os.path.abspath(args.out))[0]
    rows = []
    for i, (name, opts) in enumerate(VARIANTS if args.variants else (('as given', {}),)):
        a = copy.deepcopy(args)
        vars(a).update(opts)
        if args.variants:
            a.out, a.json = f'{stem}_{i}.png', None
        rows.append((name, once(a, root, say)))
    head = ['variant', 'hidden load [kg]', 'link error', 'sensing', 'CoM correction',
            'push [N]'] + [
        c[0] for c in COLUMNS] + ['delay p50/p99 [ms]']
    lines = ['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    for name, res in rows:
        a = res['args']
        cells = [name, f'{a["hidden_load"]:g}', f'{a["link_error"]:g}', a['sensing'],
                 a['com_correction'], f'{res["push_N"]:g}']
        cells += [format(res[k] * s if k != 'falls' else res[k], f) if res[k] is not None
                  else '-' for _, k, s, f in COLUMNS]
        d = res['transport_delay_ms_p50_p99']
        cells.append(f'{d[0]:.1f}/{d[1]:.1f}' if d else '-')
        lines.append('| ' + ' | '.join(cells) + ' |')
    text = (f'# {args.robot} closed loop on a MuJoCo plant over DDS\n\n'
            'Plant: MuJoCo steps the robot at 1 kHz (soft contacts, elliptic cones, foot '
            'spheres); the controller never sees its state, only the dynamics node\'s stream '
            'computed from the joint states and odometry it publishes; commands act as they '
            'arrive over DDS (no lock-step), no earlier than 2 ms and the plant waits when they '
            'fall more than 5 ms behind (simulated time). Clean sensing: exact joint states and '
            'odometry at 1 kHz. Noisy: joint velocity noise 0.05 rad/s, effort 0.05 N m; '
            'odometry 200 Hz, 10 ms late, white noise 0.03 m/s on the linear and 0.01 rad/s on '
            'the angular twist. CoM correction on: the controller shifts its model\'s CoM '
            'target by the offset the feet\'s centre of pressure gives while the reference '
            'rests (the dynamics node\'s contact_forces; ros_dynamics/control/com_offset.py). '
            'Link error e: every link\'s mass, '
            'inertia and CoM off by e x [0.8, 1.2] (PlantOptions.link_error). '
            'Push: 20 % of the weight, lateral, 0.1 s at '
            f'{args.push_time:g} s. Every figure is MuJoCo\'s truth (legged_metrics): its CoM '
            'against the controller\'s reference, its feet, its base.\n\n'
            + '\n'.join(lines) + '\n\n' + '\n'.join(f'- {n}: {r["summary"]}' for n, r in rows)
            + '\n')
    path = report(stem + '.md', text)
    if args.result:
        shutil.copy(path, args.result)
    say(f'[closed_loop] result {stem}.md' + (f', {args.result}' if args.result else ''))
    say(rows[-1][1]['summary'])                 # the last line: the (last) run's summary
    return 0 if all(np.isfinite(r['com_rms_m']) for _, r in rows) else 1
