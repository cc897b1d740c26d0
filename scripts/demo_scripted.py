#!/usr/bin/env python3
"""Scripted demo of dynamics_node: no robot or simulator needed.

Starts dynamics_node (a subprocess) on a URDF (default: the bundled 7-DoF arm), publishes a
sinusoidal joint trajectory on joint_states whose efforts are the inverse-dynamics torques of
that trajectory, and between 40 % and 70 % of the run pretends that something pushes the
second joint (the reported effort is off by --push N m, so the observer sees an external
torque and ~/contact_estimate reports the contact). Every --period seconds it prints a live summary: answered
rate, latency (joint-state stamp to reception of ~/dynamics), ||M||_F, cond(M), g,
the largest external-torque estimate and the contact flag. Exits cleanly after --duration s.

The ROS environment is set here: ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST, a random
ROS_DOMAIN_ID (or --domain-id), and the library path of the pip ROS wheels.

    .venv/bin/python scripts/demo_scripted.py [--duration 10] [--rate 200] [--urdf FILE]
"""
import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO_ROOT)

from ros_dynamics.ros import compat as ros_compat  # noqa: E402


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--duration', type=float, default=10.0, help='seconds of scripted motion')
    ap.add_argument('--rate', type=float, default=200.0, help='joint_states rate [Hz]')
    ap.add_argument('--period', type=float, default=0.5, help='summary period [s]')
    ap.add_argument('--urdf', default=os.path.join(REPO_ROOT, 'urdf', 'arm7.urdf'))
    ap.add_argument('--push', type=float, default=8.0,
                    help='external torque on joint 2 during the push phase [N m]')
    ap.add_argument('--domain-id', type=int, default=None)
    return ap.parse_args()


def main():
    args = parse_args()
    domain = args.domain_id if args.domain_id is not None else random.randint(1, 100)
    os.environ.update(ros_compat.ros_environment(domain_id=domain, localhost_only=True))

    import numpy as np
    import rclpy
    import yaml
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    from ros_dynamics_msgs.msg import ContactEstimate, Dynamics

    import ros_dynamics as rd

    with open(args.urdf) as f:
        xml = f.read()
    model = rd.load_urdf(xml)
    names = list(model.joint_names)
    n = model.nv

    tmp = tempfile.mkdtemp(prefix='ros_dynamics_demo_')
    pfile = os.path.join(tmp, 'node.yaml')
    with open(pfile, 'w') as f:
        yaml.safe_dump({'/demo/dynamics': {'ros__parameters': {
            'robot_description': xml, 'observer_gain': [30.0], 'contact_threshold': [3.0],
            'christoffel_decimation': 10}}}, f)
    env = ros_compat.ros_environment(domain_id=domain, localhost_only=True)
    env['PYTHONPATH'] = os.pathsep.join([REPO_ROOT, env.get('PYTHONPATH', '')])
    log_path = os.path.join(tmp, 'node.log')
    log = open(log_path, 'w')
    print(f'ROS_DOMAIN_ID={domain} (localhost only); node log: {log_path}')
    proc = subprocess.Popen([sys.executable, '-m', 'ros_dynamics.ros.dynamics_node.node', '--ros-args',
                             '-r', '__ns:=/demo', '--params-file', pfile],
                            env=env, stdout=log, stderr=subprocess.STDOUT)

    rclpy.init()
    node = rclpy.create_node('demo_scripted', namespace='/demo')
    qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
    pub = node.create_publisher(JointState, 'joint_states', qos)
    state = {'M': None, 'g': None, 'r': None, 'contact': False, 'lat': [], 'answered': 0}

    def on_dynamics(msg):
        s = msg.header.stamp
        state['lat'].append(time.time() - (s.sec + 1e-9 * s.nanosec))
        state['answered'] += 1
        state['M'] = np.asarray(msg.mass_matrix).reshape(n, n)
        state['g'] = np.asarray(msg.gravity)

    def on_r(msg):
        state['r'] = np.asarray(msg.effort)

    def on_contact(msg):
        state['contact'] = msg.in_contact

    node.create_subscription(Dynamics, 'dynamics/dynamics', on_dynamics, qos)
    node.create_subscription(JointState, 'dynamics/external_torque', on_r, qos)
    node.create_subscription(ContactEstimate, 'dynamics/contact_estimate', on_contact, qos)
    executor = SingleThreadedExecutor()
    executor.add_node(node)

    amp = np.linspace(0.6, 0.2, n)
    freq = np.linspace(0.3, 0.7, n)
    push = np.zeros(n)
    push[min(1, n - 1)] = args.push

    def trajectory(t):
        w = 2 * np.pi * freq
        return amp * np.sin(w * t), amp * w * np.cos(w * t), -amp * w * w * np.sin(w * t)

    rc = 0
    try:
        deadline = time.monotonic() + 60
        while not (pub.get_subscription_count() and node.count_publishers(
                '/demo/dynamics/dynamics')):
            executor.spin_once(timeout_sec=0.05)
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError('dynamics_node did not start:\n' + open(log_path).read())
        print(f'dynamics_node up: {n} joints; {args.rate:.0f} Hz scripted joint_states for '
              f'{args.duration:.0f} s (push on joint {min(2, n)} from '
              f'{0.4 * args.duration:.1f} s to {0.7 * args.duration:.1f} s)')
        print(f'{"t[s]":>5} {"rate[Hz]":>8} {"lat p50/max[ms]":>15} {"||M||F":>7} '
              f'{"cond(M)":>8} {"max|r|":>7} contact  g[N m]')
        msg = JointState()
        msg.name = names
        period = 1.0 / args.rate
        t0 = time.monotonic()
        next_pub, next_print, k = t0, t0 + args.period, 0
        last_answered = 0
        while True:
            now = time.monotonic()
            t = now - t0
            if t >= args.duration:
                break
            if now >= next_pub:
                tk = k * period
                q, v, a = trajectory(tk)
                tau = rd.inverse_dynamics(model, q, v, a)
                if 0.4 * args.duration <= tk < 0.7 * args.duration:
                    tau = tau - push  # the motors do less than the motion needs: a push helps
                msg.position, msg.velocity, msg.effort = q.tolist(), v.tolist(), tau.tolist()
                stamp = time.time_ns()
                msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp, 1_000_000_000)
                pub.publish(msg)
                k += 1
                next_pub = t0 + k * period
            if now >= next_print:
                lat = np.array(state['lat'] or [np.nan]) * 1e3
                state['lat'] = []
                rate = (state['answered'] - last_answered) / args.period
                last_answered = state['answered']
                M, g, r = state['M'], state['g'], state['r']
                normM = np.linalg.norm(M) if M is not None else np.nan
                cond = np.linalg.cond(M) if M is not None else np.nan
                rmax = np.max(np.abs(r)) if r is not None else np.nan
                gtxt = np.array2string(g, precision=1, suppress_small=True,
                                       max_line_width=200) if g is not None else '-'
                print(f'{t:5.1f} {rate:8.0f} {np.nanmedian(lat):7.2f}/{np.nanmax(lat):<7.2f} '
                      f'{normM:7.3f} {cond:8.1f} {rmax:7.2f} {str(state["contact"]):7s}  {gtxt}',
                      flush=True)
                next_print += args.period
            executor.spin_once(timeout_sec=max(0.0, min(next_pub, next_print)
                                               - time.monotonic()))
        drain = time.monotonic() + 0.5  # let the last answers arrive
        while time.monotonic() < drain and state['answered'] < k:
            executor.spin_once(timeout_sec=0.02)
        print(f'done: {state["answered"]} of {k} joint states answered')
    except KeyboardInterrupt:
        pass
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        rc = 1
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
    return rc


if __name__ == '__main__':
    sys.exit(main())
