#!/usr/bin/env python3
"""Contact-observer demo: a simulated 7-DoF arm hits a wall, is pushed, and the dynamics node
detects it.

    python scripts/demo.py            # ~25 s; writes out/demo_observer.png
    python scripts/demo.py --urdf robot.urdf --contact-link LINK     # your robot (fixed base)

Two real ROS 2 processes on the bundled ``arm7``:

* ``sim`` (``python -m ros_dynamics.ros.simulation.sim_node``): the arm under PD + gravity compensation
  moves its tool into a wall (contact on ``arm_link_7``), backs off, and is later pushed on
  ``arm_link_4``; it publishes ``joint_states`` at 1 kHz (with sensor noise) and the ground
  truth on ``/sim/external_torque_truth`` and ``/sim/contact_truth``;
* ``dynamics_node`` (``python -m ros_dynamics.ros.dynamics_node.node``): its momentum observer publishes
  ``/dynamics/external_torque`` and ``/dynamics/contact_estimate``.

This script listens to both, prints every detection as it happens (time, isolated link,
estimated vs. true external torque, delay), and saves the residual vs. the ground truth per
joint.  The detection thresholds are calibrated first, offline, on the simulator's free motion
(``ros_dynamics.identification.thresholds.calibrate_thresholds``), as one would on a real robot.

On your robot (``--urdf``, a fixed-base URDF or xacro file, and ``--contact-link``): the same
two processes and scenarios, with the wall touched by ``LINK`` (a point off its joint axis) and,
in the mixed scenario, the push on a link half way down the chain; the home and target poses
are generic (alternating ±0.3 rad, +0.35 rad), clipped to the URDF's joint limits.

The last line reports the wall time since ``./scripts/demo.sh`` started (or this script, run
alone) and what each phase took: set-up (first run: installation and message build), the
calibration (first run: compiling the kernels), the start of the two processes until the first
residual, the run, and the results.

Isolation in the network: the script sets ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST and a random
ROS_DOMAIN_ID for itself and its children, and stops the children when it ends.
"""
import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:          # run from a source checkout without installing
    sys.path.insert(0, ROOT)

_CHILD_FLAG = '_ROS_DYNAMICS_DEMO_ENV'
_T_IMPORT = time.time()


class Phases:
    """Wall time since the demo started (``./scripts/demo.sh`` sets ROS_DYNAMICS_DEMO_T0 and
    ROS_DYNAMICS_DEMO_SETUP_END), split into named phases."""

    def __init__(self):
        self.t0 = float(os.environ.get('ROS_DYNAMICS_DEMO_T0') or _T_IMPORT)
        self.last = self.t0
        self.done = []
        setup_end = os.environ.get('ROS_DYNAMICS_DEMO_SETUP_END')
        if setup_end:
            self.mark('set-up (.venv, message build)', float(setup_end))

    def mark(self, name, now=None):
        now = time.time() if now is None else now
        self.done.append((name, now - self.last))
        self.last = now

    def report(self):
        total = time.time() - self.t0
        parts = ', '.join(f'{name} {dt:.1f} s' for name, dt in self.done)
        return f'wall time {total:.1f} s since the start: {parts}'


def _setup_environment():
    """Re-execute once with LOCALHOST discovery, a domain (the given one, else random) and the
    ROS wheels' libraries."""
    if os.environ.get(_CHILD_FLAG):
        return
    from ros_dynamics.ros import compat as ros_compat
    domain = os.environ.get('ROS_DOMAIN_ID') or random.SystemRandom().randint(1, 100)
    env = ros_compat.ros_environment(domain_id=domain, localhost_only=True)
    env.pop('ROS_LOCALHOST_ONLY', None)
    env[_CHILD_FLAG] = '1'
    env.setdefault('ROS_DYNAMICS_DEMO_T0', repr(_T_IMPORT))     # keep the start across the exec
    env['PYTHONPATH'] = ROOT + (os.pathsep + env['PYTHONPATH'] if env.get('PYTHONPATH') else '')
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


def _parse():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--scenario', default='mixed', choices=('wall', 'push', 'mixed'))
    ap.add_argument('--duration', type=float, default=9.0, help='simulated seconds (default 9)')
    ap.add_argument('--gain', type=float, default=50.0, help='observer gain K [1/s]')
    ap.add_argument('--rate', type=float, default=1000.0, help='joint_states rate [Hz]')
    ap.add_argument('--real-time-factor', type=float, default=1.0,
                    help='simulated seconds per wall-clock second (stamps stay simulated time)')
    ap.add_argument('--noise', type=float, default=1.0,
                    help='sensor noise scale (1: 1e-5 rad, 2e-3 rad/s, 0.05 N m; 0: none)')
    ap.add_argument('--out', default=os.path.join(ROOT, 'out', 'demo_observer.png'))
    ap.add_argument('--json', default=None, help='also write the results as JSON here')
    ap.add_argument('--timeout', type=float, default=55.0,
                    help='hard wall-clock limit of the ROS part [s] (from the start of the two '
                         'processes)')
    ap.add_argument('--urdf', default=None,
                    help='your robot: a fixed-base URDF or xacro file (default: the bundled arm7)')
    ap.add_argument('--contact-link', default=None,
                    help='the link that touches the wall (default: the deepest link; for arm7 '
                         'the tool flange)')
    ap.add_argument('--quiet', action='store_true')
    ap.add_argument('--view', action='store_true',
                    help='also serve the live browser view (ros_dynamics.ros.viewer) on --view-port')
    ap.add_argument('--view-port', type=int, default=8080)
    return ap.parse_args()


def _calibrate(model, gain, noise, rate):
    """Thresholds from 10 s of contact-free simulated motion (margin 2, floor 0.2 N m)."""
    from ros_dynamics import simulation as S
    from ros_dynamics.estimation.observer import MomentumObserver
    from ros_dynamics.identification.thresholds import calibrate_thresholds
    sim, _ = S.make_scenario(model, 'none', dt=1.0 / rate, seed=1234, **noise)
    res = S.simulate_observer(sim, MomentumObserver(model, gain), None, 10.0)
    return calibrate_thresholds(res['r'], margin=2.0, floor=0.2)


def _write_params(path, node_name, params):
    import yaml
    with open(path, 'w') as f:
        yaml.safe_dump({node_name: {'ros__parameters': params}}, f, default_flow_style=None)


def start_program(procs, log_path, program, params):
    """Start ``python <program> --ros-args --params-file <params>`` (``program``: the argument
    list, e.g. ``['-m', module]``) from the repository, its output into ``log_path``; it joins
    ``procs`` (stopped by :func:`_stop`)."""
    procs.append(subprocess.Popen(
        [sys.executable] + list(program) + ['--ros-args', '--params-file', params],
        stdout=open(log_path, 'w'), stderr=subprocess.STDOUT, cwd=ROOT))
    return procs[-1]


def spin_until_ended(executor, proc, deadline, progress=None):
    """Spin ``executor`` until the process ``proc`` ends or the monotonic ``deadline`` passes
    (``progress()`` every 10 s), then take what is still queued."""
    last = time.monotonic()
    while proc.poll() is None and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.05)
        if progress is not None and time.monotonic() - last > 10.0:
            last = time.monotonic()
            progress()
    for _ in range(200):                     # drain what is still queued
        executor.spin_once(timeout_sec=0.01)


def stamp_key(msg):
    """A message's header stamp in nanoseconds (the key records are matched by)."""
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


def _stop(procs):
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
    deadline = time.monotonic() + 5.0
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def main():
    args = _parse()
    phases = Phases()
    t_start = time.monotonic()
    import numpy as np

    import ros_dynamics as rd
    from ros_dynamics import simulation as S
    from ros_dynamics.estimation.observer import ContactDetector, estimate_contact_wrench

    from urdf_params import read_urdf
    xml = read_urdf(args.urdf or rd.bundled_urdf('arm7'))
    model = rd.load_urdf(xml)
    robot = model.name or 'robot'
    names = list(model.joint_names)
    if args.contact_link is not None and args.contact_link not in model.link_names:
        print(f'[demo] --contact-link {args.contact_link!r} is not a link of {robot!r}; links: '
              f'{", ".join(model.link_names)}', file=sys.stderr)
        return 2
    noise = {'noise_position': 1e-5 * args.noise, 'noise_velocity': 2e-3 * args.noise,
             'noise_effort': 0.05 * args.noise}
    thr = _calibrate(model, args.gain, noise, args.rate)
    phases.mark('calibration (compiles the kernels on the first run)')
    desc = S.make_scenario(model, args.scenario, contact_link=args.contact_link)[1]
    points = {desc['contact_link']: desc['point'], desc['middle_link']: desc['middle_point']}
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, flush=True))
    say(f'[demo] ROS_DOMAIN_ID={os.environ.get("ROS_DOMAIN_ID")} (LOCALHOST discovery); '
        f'robot {robot!r} ({len(names)} joints), wall contact on {desc["contact_link"]!r}; '
        f'observer K = {args.gain:g} 1/s; thresholds [N m] = {np.round(thr, 2).tolist()}')

    # -- the two processes ------------------------------------------------------------------
    tmp = tempfile.mkdtemp(prefix='ros_dynamics_demo_')
    sim_yaml, node_yaml = os.path.join(tmp, 'sim.yaml'), os.path.join(tmp, 'node.yaml')
    _write_params(sim_yaml, 'sim', dict(
        robot_description=xml, scenario=args.scenario, rate=args.rate,
        real_time_factor=args.real_time_factor, duration=args.duration, wait_for_subscribers=2, wait_timeout=40.0, start_delay=0.5,
        publish_robot_description=False, seed=7, **noise))
    _write_params(node_yaml, 'dynamics', dict(
        robot_description=xml, observer_gain=[args.gain], contact_threshold=thr.tolist(),
        contact_release_ratio=0.5, christoffel_stream=False, input_qos_depth=5000,
        qos_depth=5000))
    log_dir = os.path.join(os.path.dirname(os.path.abspath(args.out)), 'demo_logs')
    os.makedirs(log_dir, exist_ok=True)
    procs = []

    def start(name, program, params):
        return start_program(procs, os.path.join(log_dir, name + '.log'), program, params)

    import rclpy
    from rclpy.node import Node
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    from std_msgs.msg import String

    rclpy.init(args=[])
    lis = Node('demo_listener')
    qos = QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.VOLATILE)
    data = {'js': {}, 'truth': {}, 'est': {}, 'det': {}}

    key = stamp_key

    lis.create_subscription(JointState, 'joint_states',
                            lambda m: data['js'].__setitem__(key(m), np.array(m.position)), qos)
    lis.create_subscription(JointState, '/sim/external_torque_truth',
                            lambda m: data['truth'].__setitem__(key(m), np.array(m.effort)), qos)
    pending = []
    lis.create_subscription(JointState, '/dynamics/external_torque',
                            lambda m: pending.append((key(m), np.array(m.effort))), qos)
    link_truth = []        # (latest truth stamp when received, link string)
    latched = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
    lis.create_subscription(String, '/sim/contact_link_truth', lambda m: link_truth.append(
        (max(data['truth']) if data['truth'] else 0, m.data)), latched)

    viewer = None
    if args.view:   # first: it is listening when the simulator starts
        viewer = subprocess.Popen(
            [sys.executable, '-m', 'ros_dynamics.ros.viewer', '--urdf',
             args.urdf or rd.bundled_urdf('arm7'),
             '--port', str(args.view_port), '--threshold', *(f'{t:.6g}' for t in thr)],
            stdout=open(os.path.join(log_dir, 'viewer.log'), 'w'), stderr=subprocess.STDOUT,
            cwd=ROOT)
        say(f'[demo] live view: http://localhost:{args.view_port} (log: {log_dir}/viewer.log)')
    try:
        t_start = time.monotonic()      # --timeout counts from here: the two processes
        node = start('dynamics_node', ['-m', 'ros_dynamics.ros.dynamics_node.node'], node_yaml)
        start('sim', [os.path.join(HERE, 'demo_sim.py'), args.contact_link]
              if args.contact_link else ['-m', 'ros_dynamics.ros.simulation.sim_node'], sim_yaml)
        det = ContactDetector(model, threshold=thr, release_ratio=0.5)
        settle_ns = int(5.0 / args.gain * 1e9)
        events = []
        t0_ns = None
        true_on_ns = None
        onset_ns = None
        last_rx = time.monotonic()
        got_any = False
        done = False
        # the listener takes ~3 messages per millisecond: the events executor keeps up where
        # the default one falls behind its queues on a loaded machine (README, Performance)
        from ros_dynamics.ros.process import make_executor
        executor = make_executor('events')
        executor.add_node(lis)
        while not done:
            executor.spin_once(timeout_sec=0.02)
            for _ in range(200):            # take what else is ready before the bookkeeping
                executor.spin_once(timeout_sec=0.0)
            now = time.monotonic()
            if now - t_start > args.timeout:
                say('[demo] time limit reached')
                break
            if node.poll() is not None:
                raise RuntimeError('dynamics_node exited early; see ' +
                                   os.path.join(log_dir, 'dynamics_node.log'))
            while pending:
                k, r = pending.pop(0)
                if not got_any:
                    phases.mark('start of both processes until the first residual')
                    _check_contact_link(os.path.join(log_dir, 'sim.log'), desc['contact_link'])
                got_any, last_rx = True, now
                data['est'][k] = r
                if t0_ns is None:
                    t0_ns = min(data['truth'] or [k])
                tt = data['truth'].get(k)
                if tt is not None:
                    on = bool(np.any(tt != 0.0))
                    if on and true_on_ns is None:
                        true_on_ns = k - int(round(1e9 / args.rate))
                    elif not on:
                        true_on_ns = None
                st = det.update(r)
                data['det'][k] = (st.in_contact, st.link)
                t_s = (k - t0_ns) * 1e-9
                if st.onset:
                    onset_ns = k
                    delay = None if true_on_ns is None else (k - true_on_ns) * 1e-9
                    dtxt = f'{delay * 1e3:.0f} ms after the true onset' if delay is not None \
                        else 'NO TRUE CONTACT (false positive)'
                    say(f'[demo] t = {t_s:6.3f} s  CONTACT detected ({dtxt}); deepest joint '
                        f'over threshold so far: {st.link}')
                    events.append({'t': t_s, 'kind': 'onset', 'link': st.link, 'delay': delay})
                elif st.in_contact and onset_ns is not None and k - onset_ns >= settle_ns:
                    onset_ns = None
                    q = data['js'].get(k)
                    F = Ft = None
                    pt = points.get(st.link)
                    if q is not None and tt is not None and pt is not None:
                        try:
                            F = estimate_contact_wrench(model, q, r, st.link, pt,
                                                        force_only=True)[:3]
                            Ft = estimate_contact_wrench(model, q, tt, st.link, pt,
                                                         force_only=True)[:3]
                        except ValueError:      # fewer than 3 joints up to the link
                            F = Ft = None
                    say(f'[demo] t = {t_s:6.3f} s  isolated: contact on {st.link}  '
                        f'(5/K = {5e3 / args.gain:.0f} ms after detection)')
                    say('         est  tau_ext [N m]: ' + ' '.join(f'{x:6.2f}' for x in r))
                    if tt is not None:
                        say('         true tau_ext [N m]: ' + ' '.join(f'{x:6.2f}' for x in tt))
                    if F is not None:
                        say(f'         contact force at the known point [N]: est '
                            f'{np.round(F, 1).tolist()}, true {np.round(Ft, 1).tolist()}')
                    events.append({'t': t_s, 'kind': 'isolated', 'link': st.link,
                                   'est': r.tolist(), 'true': None if tt is None else tt.tolist(),
                                   'force_est': None if F is None else F.tolist(),
                                   'force_true': None if Ft is None else Ft.tolist()})
                elif st.release:
                    onset_ns = None
                    say(f'[demo] t = {t_s:6.3f} s  contact released')
                    events.append({'t': t_s, 'kind': 'release'})
                if t_s >= args.duration - 1e-6:
                    done = True
            if got_any and now - last_rx > 3.0:
                say('[demo] no more data from the dynamics node')
                break
    finally:
        _stop(procs + ([viewer] if viewer is not None else []))
        lis.destroy_node()
        rclpy.try_shutdown()
    phases.mark('run')

    # -- results ----------------------------------------------------------------------------
    ks = sorted(k for k in data['est'] if k in data['truth'])
    if not ks:
        print('[demo] no residual received from the dynamics node; logs in ' + log_dir)
        return 1
    t = (np.array(ks) - (t0_ns if t0_ns is not None else ks[0])) * 1e-9   # the printed times
    R = np.array([data['est'][k] for k in ks])
    T = np.array([data['truth'][k] for k in ks])
    # what the two processes say they did (their exit summaries): the listener above is a third
    # process on a shared machine and may itself miss messages; the residual is compared with
    # the truth on the samples it did receive
    logs = {n: open(os.path.join(log_dir, n + '.log')).read() for n in ('sim', 'dynamics_node')}
    m_sim = re.search(r'joint states published: (\d+)', logs['sim'])
    m_dyn = re.search(r'joint states accepted: (\d+), rejected: (\d+)[^;]*; observer outputs: '
                      r'(\d+)', logs['dynamics_node'])
    sent = int(m_sim.group(1)) if m_sim else len(data['truth'])
    accepted, rejected, outputs = (int(x) for x in m_dyn.groups()) if m_dyn else (None,) * 3
    contact_true = np.any(T != 0.0, axis=1)
    # K/(s+K) of the truth, what an ideal observer shows, over every truth sample received
    # (a step of e^{-K dt} per sample, so a sample this listener missed is a longer step)
    tk = sorted(data['truth'])
    filt, y, prev = {}, np.zeros(len(names)), None
    for k in tk:
        a = np.exp(-args.gain * ((k - prev) * 1e-9 if prev is not None else 0.0))
        y = a * y + (1 - a) * data['truth'][k] if prev is not None else y
        filt[k], prev = y, k
    ref = np.array([filt[k] for k in ks])
    err = np.abs(R - ref).max(axis=0)
    dt = 1.0 / args.rate
    det_arr = np.array([data['det'].get(k, (False, None))[0] for k in ks])
    links = [data['det'].get(k, (False, None))[1] for k in ks]
    lt_k = np.array([x[0] for x in link_truth] or [0])
    true_link = []
    for k in ks:     # the truth link string received last before this sample's truth
        i = int(np.searchsorted(lt_k, k, side='right')) - 1
        name = link_truth[i][1] if i >= 0 and link_truth else ''
        true_link.append(name.split(',')[0] or None)
    res = {'t': t, 'dt': dt, 'detected': det_arr, 'contact': contact_true, 'link': links,
           'true_link': true_link, 'force_err': np.full(len(ks), np.nan)}
    met = S.detection_metrics(res, args.gain)
    for e in met['episodes']:      # the true link: the one reported mid-episode by the sim
        mid = int(np.searchsorted(t, 0.5 * (e['start'] + e['end'])))
        e['true_link'] = true_link[min(mid, len(ks) - 1)]
        # expected delay: when K/(s+K) of the true torque first crosses a threshold
        a0 = int(np.searchsorted(t, e['start'] + dt - 1e-6))
        over = np.flatnonzero(np.any(np.abs(ref[a0:]) > thr, axis=1))
        e['expected_delay'] = (float(t[a0 + over[0]] - e['start']) if over.size
                               else float('nan'))
    summary = {'samples_sent': sent, 'samples_accepted': accepted, 'samples_rejected': rejected,
               'observer_outputs': outputs, 'samples_compared': len(ks),
               'listener_received': {'joint_states': len(data['js']),
                                     'truth': len(data['truth']), 'residual': len(data['est'])},
               'events': events,
               'episodes': met['episodes'], 'false_onsets': met['false_onsets'],
               'thresholds': thr.tolist(), 'gain': args.gain,
               'max_abs_error_vs_filtered_truth': err.tolist(),
               'wall_time': time.time() - phases.t0, 'scenario': args.scenario,
               'joint_names': names}
    say(f'[demo] the sim published {sent} joint states; the dynamics node accepted {accepted}, '
        f'rejected {rejected}, published {outputs} residuals; this listener compared {len(ks)} '
        f'with the truth: max |r - K/(s+K) tau_true| per joint [N m]: '
        f'{np.round(err, 2).tolist()}')
    say('[demo] true contact                detected after (ideal)   isolated link')
    for e in met['episodes']:
        ok = 'OK' if e['link'] == e['true_link'] else 'WRONG'
        dl = 'missed' if not np.isfinite(e['delay']) else f'{e["delay"] * 1e3:5.0f} ms'
        say(f'[demo] {e["start"]:5.2f}-{e["end"]:5.2f} s on {e["true_link"]!s:11}  {dl:>9} '
            f'({e["expected_delay"] * 1e3:3.0f} ms)    {e["link"]} ({ok})')
    say(f'[demo] false detections: {met["false_onsets"]}')
    onsets = [e for e in events if e['kind'] == 'onset']
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, axs = plt.subplots(len(names), 1, figsize=(10, 1.6 * len(names) + 1), sharex=True)
    for j, ax in enumerate(axs):
        ax.fill_between(t, 0, 1, where=contact_true, transform=ax.get_xaxis_transform(),
                        color='0.9', label='true contact' if j == 0 else None)
        ax.plot(t, R[:, j], 'C3-', lw=0.6, alpha=0.8,
                label='observer residual' if j == 0 else None)
        ax.plot(t, T[:, j], 'k-', lw=1.0, label='true $\\tau_{ext}$' if j == 0 else None)
        ax.axhline(thr[j], color='C0', lw=0.6, ls='--')
        ax.axhline(-thr[j], color='C0', lw=0.6, ls='--',
                   label='threshold' if j == 0 else None)
        for e in onsets:
            ax.axvline(e['t'], color='C2', lw=0.8)
        ax.set_ylabel(f'{names[j]}\n[N m]', fontsize=8)
    axs[0].legend(loc='upper right', fontsize=7, ncol=4)
    axs[0].set_title(f'{robot}: momentum observer residual (K = {args.gain:g} 1/s) against the '
                     'true external torque\ngrey: true contact, green: detections, dashed: '
                     'thresholds')
    axs[-1].set_xlabel('time [s]')
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    fig.savefig(args.out, dpi=110)
    say(f'[demo] plot saved to {os.path.abspath(args.out)}; process logs in {log_dir}')
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(summary, f, indent=1, default=float)
        say(f'[demo] results saved to {os.path.abspath(args.json)}')
    phases.mark('results and plot')
    say('[demo] ' + phases.report())
    return 0


def _check_contact_link(sim_log, link):
    """The simulator logs its scenario's contact link: stop if it is not the one asked for."""
    with open(sim_log) as f:
        text = f.read()
    m = re.search(r"contact link '([^']*)'", text)
    if m and m.group(1) != link:
        raise RuntimeError(f'the simulator put the contact on {m.group(1)!r}, not {link!r}; '
                           f'see {sim_log}')


if __name__ == '__main__':
    _setup_environment()
    sys.exit(main())
