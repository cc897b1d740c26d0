#!/usr/bin/env python3
"""dynamics_node against the plain rclpy node a user would write with Pinocchio, side by side.

For each robot (Panda and the full Talos v2 with a fixed base from example-robot-data, and the
bundled 7-DoF arm, urdf/arm7.urdf) and each repetition, the node variants are run one after the
other in an order that rotates from one repetition to the next (so each goes first as often as
the others):

* ``ours``: dynamics_node with its defaults (robot_description the only parameter; the
  EventsExecutor, the joint state read and ~/dynamics written as serialized bytes) but
  ``catch_up: false``: it publishes every joint state, as every other variant does (fresh when
  behind it would skip publishing some on a busy machine: benchmarks/fresh_when_behind.py).
  Publishes
  ~/dynamics (M, C, dM/dt, g, q, v) per joint state, the latched ~/christoffel (Gamma) every
  10th, and runs the observer and contact detector (its ~/external_torque, ~/gravity_torque
  have no subscriber here, so they are not filled);
* ``ours-lean``: the same with the outputs of the Pinocchio node only (christoffel_stream and
  observer_enabled false): ~/dynamics only;
* ``pinocchio``: benchmarks/pinocchio_node.py spun with ``rclpy.spin`` (rclpy's default
  SingleThreadedExecutor): pin.crba, computeCoriolisMatrix, computeGeneralizedGravity,
  dM/dt = C + C^T, published as the same ~/dynamics message; message objects in and out;
* ``pinocchio-events``: the same node spun with the EventsExecutor, ours's executor;
* ``relay``: benchmarks/relay_node.py, an empty relay node (joint_states in as bytes, a
  pre-built Dynamics of the node's size out as bytes, ours's executor spun as ours spins it):
  what rclpy and DDS cost with no computation, the floor;
* ``relay-cycle``: the relay that also reads each joint state with the node's reader and runs
  the node's compiled cycle (``relay_node.py --cycle``: ``Engine.run``, its ~/dynamics
  published), nothing else of the node: the floor of a node that computes with this cycle.
  ``ours`` is also divided by it: what the node's own Python per message (accounting, health,
  outputs policy) and its process (timers, services, parameters) cost above that floor.

With task frames (robots ``quadruped-feet``: the bundled quadruped, urdf/quadruped.urdf, with its
four feet; ``talos-feet-hands``: the full Talos v2 with its soles and gripper bases), the base is
floating: both nodes get ``floating_base: true`` and ``task_frames`` and read nav_msgs/Odometry on
``odom``, published with the stamp of each joint state just before it (a smooth base motion:
pose in the world frame, twist in the base frame); both also publish
ros_dynamics_msgs/TaskSpace on ~/task_space (frame poses, LOCAL_WORLD_ALIGNED Jacobians,
dJ/dt v, mass, CoM, CoM velocity, A_G, dA_G/dt v), which the subscriber process receives too
(a joint state counts as answered when both messages arrived).  Before the runs the Pinocchio
node's task-space function is checked against rd.task_space at random states (1e-9 relative).

The ratios to both Pinocchio variants are reported: to ``pinocchio-events`` the same executor
(like for like), to ``pinocchio`` the node a user writes by default; and every variant's ratio
to ``relay`` (the floor).

Each run: the node process, a subscriber process on its ~/dynamics (node_latency.SUBSCRIBER,
the same for every variant), this process publishing sensor_msgs/JointState at --rate Hz
(1 kHz) for --duration s (a smooth trajectory with the efforts that produce it, inverse
dynamics, so that the observer sees free motion and every input passes the bounds).  Measured:
the node's CPU seconds (utime + stime of all threads, /proc/<pid>/stat, over the publishing
window plus 0.3 s of tail) per joint state sent, per thread, and the fraction of joint states
answered on ~/dynamics.  Before the runs, the Pinocchio node's terms are checked against
rd.dynamics at random states (1e-9): both publish the same output; and every kernel is
compiled into the disk cache (``python -m ros_dynamics.warmup``, in this checkout and in
``--base``'s), so no run pays the first start.

    python benchmarks/vs_pinocchio.py [--robots panda talos arm7 quadruped-feet talos-feet-hands]
        [--reps 5] [--duration 5]
        [--rate 1000] [--variants relay relay-cycle ours ours-lean pinocchio pinocchio-events]
        [--idle SECONDS]   (also each node's CPU while connected and idle, before the runs)
        [--perf]   (also where each node's Python thread spends its CPU: perf, by library)
        [--out-dir out/benchmarks] [--name vs_pinocchio]
        [--base ROOT]   (also the node of another checkout: before/after in one run)
"""

MEASURES = ('ros_dynamics/core', 'ros_dynamics/estimation', 'ros_dynamics/ros/dynamics_node',
            'ros_dynamics/ros/process.py', 'benchmarks/pinocchio_node.py',
            'benchmarks/relay_node.py')

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import node_latency as nl  # noqa: E402  (sets the ROS environment: localhost, its domain id)
import thread_profile  # noqa: E402
from common import example_robot_data_urdf, output, report  # noqa: E402

import numpy as np  # noqa: E402
import yaml  # noqa: E402

import ros_dynamics as rd  # noqa: E402
from ros_dynamics.estimation.joint_input import InputBounds  # noqa: E402
from ros_dynamics.ros import compat as ros_compat  # noqa: E402

ROBOTS = {'panda': 'panda_description/urdf/panda.urdf',
          'talos': 'talos_data/robots/talos_full_v2.urdf',
          'arm7': None,                       # the bundled arm (urdf/arm7.urdf)
          'quadruped-feet': None,             # the bundled quadruped (urdf/quadruped.urdf)
          'talos-feet-hands': 'talos_data/robots/talos_full_v2.urdf'}
# Robots with a floating base and task frames (~/task_space): the frames
TASK_FRAMES = {'quadruped-feet': ['LF_foot', 'RF_foot', 'LH_foot', 'RH_foot'],
               'talos-feet-hands': ['left_sole_link', 'right_sole_link',
                                    'gripper_left_base_link', 'gripper_right_base_link']}
#: ours publishes every joint state, as the relays and the Pinocchio node do (catch_up false:
#: on a busy machine it would otherwise skip publishing some, fresh when behind, and do less;
#: benchmarks/fresh_when_behind.py measures that)
VARIANTS = {'ours': {'catch_up': False},
            'ours-lean': {'christoffel_stream': False, 'observer_enabled': False,
                          'catch_up': False}}
# The Pinocchio node's variants, with the executor each spins with (the references of the ratios)
PINOCCHIO = {'pinocchio': 'spin', 'pinocchio-events': 'events'}
#: the floor: benchmarks/relay_node.py, no computation (every variant is also divided by it)
RELAY = 'relay'
#: the floor of a node that computes: the relay with the node's reader and compiled cycle (ours
#: is also divided by it)
RELAY_CYCLE = 'relay-cycle'
ALL_VARIANTS = ['relay', 'relay-cycle', 'ours', 'ours-lean', 'pinocchio', 'pinocchio-events']
OUTPUTS = ('What each variant does per joint state: ours (dynamics_node, defaults but '
           'catch_up false: every joint state published, EventsExecutor, serialized bytes in '
           'and out) publishes ~/dynamics (M, C, dM/dt, g, '
           'q, v), the latched ~/christoffel every 10th and runs the observer and contact '
           'detector; ours-lean publishes ~/dynamics only; pinocchio '
           '(benchmarks/pinocchio_node.py, rclpy.spin, message objects) and pinocchio-events '
           '(the same with the EventsExecutor) '
           'publish the same ~/dynamics message; relay (benchmarks/relay_node.py, ours\'s '
           'executor, bytes in and out) publishes a pre-built ~/dynamics of the same size, '
           'stamped as the joint state, and computes nothing; relay-cycle (relay_node.py '
           '--cycle) reads the joint state and runs the node\'s compiled cycle (Engine.run, one '
           'compiled call) and publishes its ~/dynamics, nothing else of the node. One '
           'subscriber process on ~/dynamics for each. '
           'Robots with task frames (quadruped-feet, talos-feet-hands): a floating base (odom '
           'with each joint state) and ~/task_space (frame poses, LOCAL_WORLD_ALIGNED Jacobians, '
           'dJ/dt v, mass, CoM, CoM velocity, A_G, dA_G/dt v) from every variant, received by '
           'the same subscriber process; answered = both messages received.')


def robot_urdf(robot):
    """Path of the robot's URDF."""
    if ROBOTS[robot] is None:
        return rd.bundled_urdf(robot.split('-')[0])
    return example_robot_data_urdf(ROBOTS[robot])


def load_models(xml, floating):
    """(ours, Pinocchio's model, index of ours's q in Pinocchio's q, the same for v)."""
    import pinocchio as pin
    model = rd.load_urdf(xml, floating_base=floating)
    pm = (pin.buildModelFromXML(xml, pin.JointModelFreeFlyer()) if floating
          else pin.buildModelFromXML(xml))
    bq, bv = (7, 6) if floating else (0, 0)
    iq = np.r_[0:bq, [pm.idx_qs[pm.getJointId(n)] for n in model.joint_names]].astype(int)
    iv = np.r_[0:bv, [pm.idx_vs[pm.getJointId(n)] for n in model.joint_names]].astype(int)
    return model, pm, iq, iv


def random_states(pm, trials, seed=1):
    """(q, v) in Pinocchio's order; a unit quaternion on a floating base."""
    rng = np.random.default_rng(seed)
    for _ in range(trials):
        qp, vp = rng.uniform(-1, 1, pm.nq), rng.uniform(-1, 1, pm.nv)
        if pm.nq > pm.nv:
            qp[3:7] /= np.linalg.norm(qp[3:7])
        yield qp, vp


def check_same_output(xml, floating=False, trials=5):
    """max |ours - Pinocchio| over M, C, dM/dt, g at random states."""
    from pinocchio_node import pin_terms
    model, pm, iq, iv = load_models(xml, floating)
    pd = pm.createData()
    ix = np.ix_(iv, iv)
    err = 0.0
    for qp, vp in random_states(pm, trials):
        d = rd.dynamics(model, qp[iq], vp[iv])
        M, C, Mdot, g = pin_terms(pm, pd, qp, vp)
        for a, b in zip((M[ix], C[ix], Mdot[ix], g[iv]), (d.M, d.C, d.Mdot, d.g)):
            err = max(err, float(np.abs(a - b).max()))
    return err


def check_same_task_space(xml, frames, trials=5):
    """max relative difference (to max(1, |ours|)) between the Pinocchio node's task space
    (pinocchio_node.PinTaskSpace, one object for every state, as in the node) and
    rd.task_space, over every field, at random states."""
    from pinocchio_node import PinTaskSpace
    model, pm, iq, iv = load_models(xml, True)
    pts, tf = PinTaskSpace(pm, frames), rd.task_frames(model, frames)
    err = 0.0
    for qp, vp in random_states(pm, trials):
        ts = rd.task_space(model, qp[iq], vp[iv], tf)
        fr, mass, com, vcom, Ag, bias = pts(qp, vp)
        pairs = [(Ag[:, iv], ts.centroidal_matrix), (bias, ts.centroidal_bias), (com, ts.com),
                 (vcom, ts.com_velocity), (np.array([mass]), np.array([ts.mass]))]
        for k, (R, p, J, a) in enumerate(fr):
            pairs += [(R, ts.rotations[k]), (p, ts.positions[k]), (J[:, iv], ts.jacobians[k]),
                      (a, ts.jacobian_dot_v[k])]
        err = max(err, max(float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))
                           for a, b in pairs))
    return err


def base_motion(T, w):
    """A smooth floating-base motion at times T (column): (pose [x y z qx qy qz qw], twist
    [linear, angular] in the base frame, its time derivative), a sway in x and y, a bob in z
    and a yaw about the world z axis."""
    s, c = np.sin(w * T[:, 0]), np.cos(w * T[:, 0])
    amp = np.array([0.05, 0.03, 0.02])
    p = np.c_[amp[0] * s, amp[1] * s, 0.5 + amp[2] * s]
    dp, ddp = amp * w * c[:, None], -amp * w * w * s[:, None]
    yaw, dyaw, ddyaw = 0.3 * s, 0.3 * w * c, -0.3 * w * w * s
    cy, sy = np.cos(yaw), np.sin(yaw)
    quat = np.c_[0 * yaw, 0 * yaw, np.sin(yaw / 2), np.cos(yaw / 2)]
    # R(yaw)^T applied to world vectors; d/dt (R^T dp) = R^T ddp - omega x (R^T dp)
    def to_base(x):
        return np.c_[cy * x[:, 0] + sy * x[:, 1], -sy * x[:, 0] + cy * x[:, 1], x[:, 2]]
    lin = to_base(dp)
    om = np.c_[0 * yaw, 0 * yaw, dyaw]
    dlin = to_base(ddp) - np.cross(om, lin)
    return (np.c_[p, quat], np.c_[lin, om], np.c_[dlin, 0 * yaw, 0 * yaw, ddyaw])


def trajectory(xml, duration, rate, floating=False):
    """Joint names and the (Q, V, E, B) lists of a smooth motion within the input bounds (joint
    positions, rates, efforts; B: the base's (pose, twist) per step on a floating base, else
    None)."""
    model = rd.load_urdf(xml, floating_base=floating)
    names, n = list(model.joint_names), len(model.joint_names)
    w = 2 * np.pi * 0.5
    bounds = InputBounds(model)
    # amplitude 0.3..0.8 (rad or m), velocity at most a quarter of the node's velocity bound
    amp = np.minimum(np.linspace(0.3, 0.8, n), 0.25 * bounds.velocity / w)
    steps = int(round(duration * rate))
    T = np.arange(steps)[:, None] / rate
    Q, V, A = amp * np.sin(w * T), amp * w * np.cos(w * T), -amp * w * w * np.sin(w * T)
    B = None
    if floating:   # the joint efforts of the motion (the base wrench is left unexplained)
        bq, bv, ba = base_motion(T, w)
        E = np.array([rd.inverse_dynamics(model, np.r_[bq[k], Q[k]], np.r_[bv[k], V[k]],
                                          np.r_[ba[k], A[k]])[6:] for k in range(steps)])
        B = [(bq[k, :3].tolist(), bq[k, 3:].tolist(), bv[k, :3].tolist(), bv[k, 3:].tolist())
             for k in range(steps)]
    else:
        E = np.array([rd.inverse_dynamics(model, Q[k], V[k], A[k]) for k in range(steps)])
    bad = next((b for k in range(0, steps, 50) for b in [bounds.violation(Q[k], V[k], E[k])]
                if b is not None), None)
    if bad is not None:
        raise SystemExit(f'the benchmark trajectory is outside the input bounds: {bad[1]}')
    return names, Q.tolist(), V.tolist(), E.tolist(), B


def start_process(ns, argv, params, root, subscriber_timeout, task_space=False):
    """A node process (``argv``, importing ros_dynamics from ``root``) in /ns with ``params``
    and the ~/dynamics subscriber, also on ~/task_space with ``task_space`` (as
    node_latency.start_node_and_subscriber starts ours)."""
    tmp = tempfile.mkdtemp(prefix='rd_vs_pin_')
    pfile = os.path.join(tmp, 'params.yaml')
    with open(pfile, 'w') as f:
        yaml.safe_dump({f'/{ns}/dynamics': {'ros__parameters': params}}, f)
    env = ros_compat.ros_environment(domain_id=nl.DOMAIN_ID, localhost_only=True)
    env['PYTHONPATH'] = os.pathsep.join([root, nl.REPO_ROOT, env.get('PYTHONPATH', '')])
    log = open(os.path.join(tmp, 'node.log'), 'w')
    proc = subprocess.Popen([sys.executable] + argv + ['--ros-args', '-r', f'__ns:=/{ns}',
                                                       '--params-file', pfile],
                            env=env, stdout=log, stderr=subprocess.STDOUT, cwd=root)
    sub_out = os.path.join(tmp, 'received.json')
    sub = subprocess.Popen([sys.executable, '-c', nl.SUBSCRIBER, f'/{ns}/dynamics/dynamics',
                            sub_out, str(subscriber_timeout)]
                           + ([f'/{ns}/dynamics/task_space'] if task_space else []),
                           env=env, stdout=subprocess.PIPE, text=True)
    return proc, sub, log, sub_out


def start_variant(robot, variant, xml, duration, ns, base_root=None):
    """The node process of ``variant`` for ``robot`` in /ns and its ~/dynamics subscriber
    (start_process's four)."""
    frames = TASK_FRAMES.get(robot)
    model_params = ({'robot_description': xml, 'floating_base': True, 'task_frames': frames}
                    if frames else {'robot_description': xml})
    if variant in PINOCCHIO:
        argv = [os.path.join(HERE, 'pinocchio_node.py'), '--executor', PINOCCHIO[variant]]
    elif variant in (RELAY, RELAY_CYCLE):
        argv = [os.path.join(HERE, 'relay_node.py')] + (['--cycle'] if variant == RELAY_CYCLE
                                                        else [])
    elif variant == 'ours@base':   # the node of another checkout (before a change)
        return start_process(ns, ['-m', 'ros_dynamics.ros.dynamics_node.node'], model_params,
                             base_root, duration + 120, bool(frames))
    else:
        return nl.start_node_and_subscriber(ns, {**model_params, **VARIANTS[variant]},
                                            duration + 120, bool(frames))
    return start_process(ns, argv, model_params, nl.REPO_ROOT, duration + 120, bool(frames))


def odometry_before(node, ns, B):
    """(the odom publisher, before(k, sec, nanosec): publishes the base state of step k with
    that stamp), for a floating base's trajectory ``B``."""
    from nav_msgs.msg import Odometry
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    odom_pub = node.create_publisher(
        Odometry, f'/{ns}/odom', QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
    odom = Odometry()
    odom.header.frame_id, odom.child_frame_id = 'world', 'base'

    def before(k, sec, nanosec):
        (odom.pose.pose.position.x, odom.pose.pose.position.y,
         odom.pose.pose.position.z), quat, lin, ang = B[k]
        o, t = odom.pose.pose.orientation, odom.twist.twist
        o.x, o.y, o.z, o.w = quat
        t.linear.x, t.linear.y, t.linear.z = lin
        t.angular.x, t.angular.y, t.angular.z = ang
        odom.header.stamp.sec, odom.header.stamp.nanosec = sec, nanosec
        odom_pub.publish(odom)
    return odom_pub, before


def client(ns, tag):
    """(context, node, joint-state publisher on /ns/joint_states, executor) of this process's
    rclpy client of a node in /ns."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node(f'bench_client_{tag}', context=ctx)
    pub = node.create_publisher(JointState, f'/{ns}/joint_states',
                                QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(node)
    return ctx, node, pub, ex


def warm_caches(roots):
    """Every kernel into the disk cache of each checkout (``python -m ros_dynamics.warmup``), so
    that no measured run pays the first start (with a cold cache the node compiles the Gamma
    kernel on a thread after its first answer)."""
    print('compiling the kernels into the cache (python -m ros_dynamics.warmup) ...', flush=True)
    for root in roots:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get('PYTHONPATH',
                                                                                '')]))
        subprocess.run([sys.executable, '-m', 'ros_dynamics.warmup'], check=True, cwd=root,
                       stdout=subprocess.DEVNULL, env=env)


def run_trial(robot, variant, xml, traj, duration, rate, tag, base_root=None, idle=0.0,
              perf=False):
    """One run (module text); with ``idle`` > 0 also the node's CPU over ``idle`` seconds
    before the first joint state, connected and with nothing to do (ms per second); with
    ``perf`` where its Python thread's CPU went (benchmarks/thread_profile.py)."""
    ns = f'vs_{robot}_{variant}_{tag}'.replace('-', '_').replace('@', '_')
    proc, sub, log, sub_out = start_variant(robot, variant, xml, duration, ns, base_root)
    ctx, node, pub, ex = client(ns, tag)
    B = traj[4]
    odom_pub, before = odometry_before(node, ns, B) if B is not None else (None, None)
    try:
        end = time.monotonic() + 120
        while B is not None and not odom_pub.get_subscription_count() and time.monotonic() < end:
            ex.spin_once(timeout_sec=0.05)
        nl.wait_until_connected(pub, ex, proc, sub, log, 120)   # then the node is idle
        sent, elapsed, extra = _measure(proc, pub, traj, rate, before, idle, perf, ns)
        sub.wait(timeout=duration + 150)
    finally:
        nl.stop_trial(ex, node, ctx, proc, sub, log)
    return _answered(robot, variant, sub_out, sent, elapsed, extra)


def _measure(proc, pub, traj, rate, before, idle, perf, ns):
    """The node process's CPU while the trajectory is published (and idle before it, and
    where its Python thread's CPU went): (stamps sent, seconds, the measures)."""
    extra = {}
    if idle > 0:
        c0 = nl.cpu_seconds(proc.pid)
        time.sleep(idle)
        extra['idle_cpu_ms_per_s'] = 1e3 * (nl.cpu_seconds(proc.pid) - c0) / idle
    recorder = (thread_profile.start(proc.pid, os.path.join(tempfile.gettempdir(),
                                                            f'rd_perf_{ns}.data'))
                if perf else None)
    cpu0, threads0 = nl.cpu_seconds(proc.pid), nl.thread_cpu(proc.pid)
    names, Q, V, E, _ = traj
    sent, elapsed = nl.publish_paced(pub, names, Q, V, E, rate, before)
    time.sleep(0.3)   # the tail of the queue
    cpu1, threads1 = nl.cpu_seconds(proc.pid), nl.thread_cpu(proc.pid)
    if recorder is not None:
        thread_profile.stop(recorder)
        extra['main_thread_shares'] = thread_profile.shares(recorder.args[-1])
    n = len(sent)
    extra.update(cpu_us_per_joint_state=1e6 * (cpu1 - cpu0) / n, cpu=cpu1 - cpu0,
                 cpu_us_by_thread={k: round(1e6 * (threads1[k] - threads0.get(k, 0.0)) / n, 1)
                                   for k in sorted(threads1)
                                   if threads1[k] - threads0.get(k, 0.0) > 0},
                 loadavg_1min=os.getloadavg()[0])
    return sent, elapsed, extra


def _answered(robot, variant, sub_out, sent, elapsed, extra):
    """One run's result: the joint states answered (with task frames: both messages)."""
    with open(sub_out) as f:
        received = {s for s, _ in json.load(f)}
    n = len(sent)
    if TASK_FRAMES.get(robot):     # answered: both ~/dynamics and ~/task_space arrived
        with open(sub_out + '.ts') as f:
            received_ts = set(json.load(f))
        extra.update(dynamics_answered_fraction=sum(s in received for s in sent) / n,
                     task_space_answered_fraction=sum(s in received_ts for s in sent) / n)
        received &= received_ts
    answered = sum(s in received for s in sent)
    cpu = extra.pop('cpu')
    return {'robot': robot, 'variant': variant, 'sent': n, 'send_rate_hz': n / elapsed,
            'answered_fraction': answered / n, **extra,
            'cpu_us_per_answered': 1e6 * cpu / max(answered, 1)}


def ratio_pairs(variants):
    """The (variant, reference) pairs whose CPU ratio is reported."""
    refs = [v for v in variants if v in PINOCCHIO]
    others = [v for v in variants if v not in PINOCCHIO and v != RELAY]
    return ([(v, RELAY) for v in variants if v != RELAY] if RELAY in variants else []) + (
        [(v, RELAY_CYCLE) for v in ('ours', 'ours@base') if v in variants]
        if RELAY_CYCLE in variants else []) + [
        (v, ref) for ref in refs for v in others if v != RELAY_CYCLE]


def summarize(results, robots, variants, full=0.999):
    """Markdown lines and a summary.  Each of our variants is divided by each Pinocchio variant
    of the same repetition (interleaved runs, same subscriber, same joint states).  A ratio
    counts for the median and range only if both nodes answered (>= 99.9 % of the joint
    states): a node that fell behind dropped joint states it then never paid for; likewise a
    node's median and range of us per joint state use its fully answered runs."""
    pairs = ratio_pairs(variants)
    lines = ['| robot | rep | order | ' + ' | '.join(f'{v} us/js (answered)' for v in variants)
             + ' | ' + ' | '.join(f'{v} / {ref}' for v, ref in pairs)
             + ' | all answered | load |', '|' + '---|' * (6 + len(variants) + len(pairs))]
    summary = {}
    for robot in robots:
        rows, summary[robot] = _robot_rows(results, robot, variants, pairs, full)
        lines += rows
    return (lines + _by_thread(results, robots, variants)
            + _idle_rows(results, robots, variants, summary)
            + _profile_rows(results, robots, variants, summary)), summary


def _robot_rows(results, robot, variants, pairs, full):
    """A robot's rows (one per repetition, then median [range]) and its summary."""
    lines, ratios, us = [], {p: [] for p in pairs}, {v: [] for v in variants}
    for rep in sorted({r['rep'] for r in results if r['robot'] == robot}):
        row = {r['variant']: r for r in results if r['robot'] == robot and r['rep'] == rep}
        order = ' '.join(r['variant'] for r in sorted(row.values(), key=lambda r: r['slot']))
        answered = {v: row[v]['answered_fraction'] >= full for v in variants}
        cells = [f'{row[v]["cpu_us_per_joint_state"]:.0f} '
                 f'({100 * row[v]["answered_fraction"]:.1f} %)' for v in variants]
        rc = []
        for v, ref in pairs:
            x = row[v]['cpu_us_per_joint_state'] / row[ref]['cpu_us_per_joint_state']
            both = answered[v] and answered[ref]
            rc.append(f'{x:.2f}' if both else f'({x:.2f})')
            if both:
                ratios[(v, ref)].append(x)
        for v in variants:
            if answered[v]:
                us[v].append(row[v]['cpu_us_per_joint_state'])
        load = max(r['loadavg_1min'] for r in row.values())
        lines.append(f'| {robot} | {rep} | {order} | ' + ' | '.join(cells) + ' | '
                     + ' | '.join(rc) + f' | {"yes" if all(answered.values()) else "no"} | '
                     f'{load:.1f} |')

    def mr(x):
        return f'**{statistics.median(x):.2f}** [{min(x):.2f}, {max(x):.2f}]' if x else 'n/a'

    def ur(x):
        return f'{statistics.median(x):.0f} [{min(x):.0f}, {max(x):.0f}]' if x else 'n/a'
    lines.append(f'| {robot} | median [range] over the answered runs | | '
                 + ' | '.join(ur(us[v]) for v in variants) + ' | '
                 + ' | '.join(mr(ratios[p]) for p in pairs) + ' | | |')
    return lines, {
        'runs_answered': {v: len(x) for v, x in us.items()},
        'ratios_counted': {f'{v} / {ref}': len(x) for (v, ref), x in ratios.items()},
        'us_median': {v: statistics.median(x) if x else None for v, x in us.items()},
        'us_range': {v: [min(x), max(x)] if x else None for v, x in us.items()},
        'ratio_median': {f'{v} / {ref}': statistics.median(x) if x else None
                         for (v, ref), x in ratios.items()},
        'ratio_range': {f'{v} / {ref}': [min(x), max(x)] if x else None
                        for (v, ref), x in ratios.items()}}


def _by_thread(results, robots, variants):
    lines = ['', 'Median CPU per joint state by thread [us]:', '',
             '| robot | variant | by thread |', '|---|---|---|']
    for robot in robots:
        for v in variants:
            rs = [r for r in results if r['robot'] == robot and r['variant'] == v]
            keys = sorted({k for r in rs for k in r['cpu_us_by_thread']})
            med = {k: statistics.median(r['cpu_us_by_thread'].get(k, 0.0) for r in rs)
                   for k in keys}
            lines.append(f'| {robot} | {v} | ' + ', '.join(
                f'{k} {x:.0f}' for k, x in sorted(med.items(), key=lambda t: -t[1]) if x >= 0.5)
                + ' |')
    return lines


def _idle_rows(results, robots, variants, summary):
    idle = [r for r in results if 'idle_cpu_ms_per_s' in r]
    if not idle:
        return []
    lines = ['', 'Idle CPU before the first joint state (connected, nothing to do), ms per '
             'second, median [range]:', '', '| robot | variant | idle CPU |', '|---|---|---|']
    for robot in robots:
        for v in variants:
            x = [r['idle_cpu_ms_per_s'] for r in idle if r['robot'] == robot and r['variant'] == v]
            if x:
                lines.append(f'| {robot} | {v} | {statistics.median(x):.1f} '
                             f'[{min(x):.1f}, {max(x):.1f}] |')
                summary[robot].setdefault('idle_cpu_ms_per_s', {})[v] = statistics.median(x)
    return lines


def _profile_rows(results, robots, variants, summary):
    profiled = [r for r in results if r.get('main_thread_shares')]
    if not profiled:
        return []
    groups = [g for g, _ in thread_profile.GROUPS]
    lines = ['', 'Where the Python thread\'s CPU per joint state goes (perf record of that '
             'thread, by library: benchmarks/thread_profile.py; its share of the samples times '
             'the thread\'s CPU per joint state), median over the repetitions, us:', '',
             '| robot | variant | Python thread | ' + ' | '.join(groups) + ' |',
             '|---|---|---|' + '---|' * len(groups)]
    for robot in robots:
        for v in variants:
            rs = [r for r in profiled if r['robot'] == robot and r['variant'] == v]
            if not rs:
                continue
            main = [r['cpu_us_by_thread'].get('main (Python)', 0.0) for r in rs]
            us_by = {g: statistics.median(r['main_thread_shares'].get(g, 0.0) * m
                                          for r, m in zip(rs, main)) for g in groups}
            lines.append(f'| {robot} | {v} | {statistics.median(main):.0f} | '
                         + ' | '.join(f'{us_by[g]:.1f}' for g in groups) + ' |')
            summary[robot].setdefault('main_thread_us_by_library', {})[v] = us_by
    return lines


def prepare(robots, duration, rate):
    """(URDFs, trajectories, checks against Pinocchio, task-space checks) per robot; exits if
    the two libraries differ."""
    xmls, trajs, checks, ts_checks = {}, {}, {}, {}
    for robot in robots:
        with open(robot_urdf(robot)) as f:
            xmls[robot] = f.read()
        frames = TASK_FRAMES.get(robot)
        checks[robot] = check_same_output(xmls[robot], floating=bool(frames))
        if not checks[robot] <= 1e-9:
            raise SystemExit(f'{robot}: Pinocchio and ours differ by {checks[robot]:.3g}')
        trajs[robot] = trajectory(xmls[robot], duration, rate, bool(frames))
        print(f'{robot}: {len(trajs[robot][0])} joints; max |ours - pinocchio| over M, C, dM/dt, '
              f'g = {checks[robot]:.1e}', flush=True)
        if frames:
            err = check_same_task_space(xmls[robot], frames)
            ts_checks[robot] = err
            print(f'{robot}: floating base, task frames {", ".join(frames)}; max relative '
                  f'|ours - pinocchio| over the task space = {err:.1e}', flush=True)
            if not err <= 1e-9:
                raise SystemExit(f'{robot}: the task spaces differ by {err:.3g}')
    return xmls, trajs, checks, ts_checks


def commit_of(root):
    """The commit of the checkout at ``root`` (what a result file names, not a local path)."""
    res = subprocess.run(['git', '-C', root, 'rev-parse', '--short', 'HEAD'],
                         capture_output=True, text=True)
    return res.stdout.strip() or 'an unknown commit (not a git checkout)'


def _dirty(root):
    """Whether the checkout at ``root`` has uncommitted changes to tracked files."""
    res = subprocess.run(['git', '-C', root, 'status', '--porcelain', '--untracked-files=no'],
                         capture_output=True, text=True)
    return bool(res.stdout.strip())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--robots', nargs='+', default=list(ROBOTS), choices=list(ROBOTS))
    ap.add_argument('--variants', nargs='+', default=ALL_VARIANTS, choices=ALL_VARIANTS)
    ap.add_argument('--reps', type=int, default=5)
    ap.add_argument('--duration', type=float, default=5.0)
    ap.add_argument('--rate', type=float, default=1000.0)
    ap.add_argument('--perf', action='store_true',
                    help='also where each node\'s Python thread spends its CPU, by library '
                         '(perf record of that thread; its sampling adds to the CPU measured: '
                         'take the costs from a run without it)')
    ap.add_argument('--idle', type=float, default=0.0, metavar='SECONDS',
                    help='also each node\'s CPU over this many seconds before the first joint '
                         'state, connected and with nothing to do (ms per second)')
    ap.add_argument('--out-dir', default=os.path.join(nl.REPO_ROOT, 'out', 'benchmarks'))
    ap.add_argument('--name', default='vs_pinocchio')
    ap.add_argument('--base', metavar='ROOT',
                    help='also run the node of this checkout with its defaults (variant '
                         'ours@base: before/after a change in the same run)')
    ap.add_argument('--resummarize', metavar='JSON',
                    help='no runs: write the tables again from the runs of this JSON')
    args = ap.parse_args()
    if args.perf:
        thread_profile.check()
    if args.resummarize:
        return resummarize(args.resummarize, args.out_dir, args.name)
    variants = [v for v in ALL_VARIANTS if v in args.variants]
    if args.base:
        variants.insert(variants.index('ours') + 1 if 'ours' in variants else 0, 'ours@base')
    if not any(v in PINOCCHIO or v == RELAY for v in variants):
        raise SystemExit('a pinocchio variant or the relay is the reference of the ratios')
    head = (f'ours: the node of {commit_of(nl.REPO_ROOT)}'
            + (' with uncommitted changes' if _dirty(nl.REPO_ROOT) else '') + '; '
            + (f'ours@base: the node of {commit_of(args.base)}; ' if args.base else '')
            + f'ROS_DOMAIN_ID={nl.DOMAIN_ID}, localhost only; {args.rate:g} Hz for '
            f'{args.duration:g} s per run, {args.reps} repetitions')
    print(head, flush=True)
    xmls, trajs, checks, ts_checks = prepare(args.robots, args.duration, args.rate)
    warm_caches([nl.REPO_ROOT] + ([args.base] if args.base else []))   # each checkout's own
    results = []
    for rep in range(args.reps):
        for robot in args.robots:
            k = rep % len(variants)
            order = variants[k:] + variants[:k]
            for slot, v in enumerate(order):
                r = run_trial(robot, v, xmls[robot], trajs[robot], args.duration, args.rate,
                              f'{rep}_{os.getpid()}', args.base, args.idle, args.perf)
                r.update(rep=rep, slot=slot)
                results.append(r)
                print(f'[{robot} rep {rep} {v}] {r["cpu_us_per_joint_state"]:.0f} us CPU per '
                      f'joint state, answered {100 * r["answered_fraction"]:.2f} %, sent at '
                      f'{r["send_rate_hz"]:.0f} Hz, load {r["loadavg_1min"]:.1f}; by thread '
                      + ', '.join(f'{t} {x:.0f}' for t, x in r['cpu_us_by_thread'].items()),
                      flush=True)
    write_outputs(args.out_dir, args.name, head, checks, results, args.robots, variants,
                  ts_checks)


def write_outputs(out_dir, name, head, checks, results, robots, variants, ts_checks=None):
    """The result files <name>.md and <name>.json (the runs, to summarize again)."""
    lines, summary = summarize(results, robots, variants)
    md = report(os.path.join(out_dir, f'{name}.md'),
                f'# dynamics_node vs a plain rclpy + Pinocchio node\n\n{head}.\n'
                + ''.join(f'{r}: max |ours - pinocchio| = {e:.1e}. ' for r, e in checks.items())
                + ''.join(f'{r}: task space, max relative |ours - pinocchio| = {e:.1e} '
                          f'(frames {", ".join(TASK_FRAMES[r])}). '
                          for r, e in (ts_checks or {}).items())
                + '\n\n' + OUTPUTS
                + '\n\nNode CPU (all threads) per joint state sent, us; answered = fraction of '
                  'joint states with a ~/dynamics message received by the subscriber process. '
                  'Ratios: CPU per joint state of the first variant over the second, same '
                  'repetition; in parentheses where one of the two answered less than 99.9 % '
                  '(not counted in the median and range); load = the highest 1-minute load '
                  'average of its runs.\n\n'
                + '\n'.join(lines) + '\n')
    js = output(out_dir, f'{name}.json')
    with open(js, 'w') as f:
        json.dump({'head': head, 'robots': robots, 'variants': variants, 'runs': results,
                   'summary': summary, 'check': checks, 'task_space_check': ts_checks or {}},
                  f, indent=2)
    print(f'wrote {md} and {js}')


def resummarize(path, out_dir, name):
    """Write the result files again from the runs of a JSON this script wrote."""
    with open(path) as f:
        data = json.load(f)
    runs = data['runs']
    robots = data.get('robots') or list(dict.fromkeys(r['robot'] for r in runs))
    after = ALL_VARIANTS.index('ours') + 1
    variants = data.get('variants') or [v for v in ALL_VARIANTS[:after] + ['ours@base'] +
                                        ALL_VARIANTS[after:] if any(r['variant'] == v
                                                                    for r in runs)]
    head = data['head']
    write_outputs(out_dir, name, head, data['check'], runs, robots, variants,
                  data.get('task_space_check'))


if __name__ == '__main__':
    main()
