#!/usr/bin/env python3
"""The dynamics node's cycle in one process, without a DDS peer: the one in-process benchmark.

    python benchmarks/node_cycle.py [--decimation 10] [--blocks 31] [--out out/node_cycle.md]
    python benchmarks/node_cycle.py --base COMMIT [--runs 3] [--out out/node_cycle_ab.md]
    python benchmarks/node_cycle.py --breakdown [--robots panda talos] [--messages 3000]
        [--evict BYTES] [--out out/benchmarks/callback_breakdown.md]

Three views of the same cycle, each through the node's public path: the node's engine built
for the model with the node's default parameters (``ros_dynamics.ros.dynamics_node.engine.build_engine(xml,
parameters.defaults())``, which loads its compiled cycle) and ``Engine.run``, the call
the node's joint-state callback makes per message (stamp policy, gather and bounds, terms,
observer, detector, the per-cycle output arrays).

* default: one cycle on the bundled arm, interleaved with the bare core calls
  (``rd.compute_all_terms`` with Gamma every N-th cycle, ``rd.MomentumObserver.update_from``,
  ``rd.ContactDetector.update``: the floor); minimum thread CPU time over the blocks.  Rows
  ``core calls`` and ``Engine.run (what the node runs)``;
* ``--base COMMIT``: A/B against another commit.  The commit is checked out into
  ``out/ab/<commit>`` (a git worktree, kept for later runs) and its own
  ``benchmarks/node_cycle.py`` runs on its own code alternately with this checkout's, in
  separate processes; per run the row "what the node runs" and the core calls of the same
  process are kept, so that a run slowed by the machine's load shows in both;
* ``--breakdown``: what one joint state costs by piece inside the node and inside the plain
  Pinocchio node (benchmarks/pinocchio_node.py), thread CPU per joint state: reading the
  serialized JointState (``ros_dynamics.ros.dynamics_node.wire.JointStateReader``, the node's raw
  subscription), ``Outputs.christoffel_due``, ``Engine.run``, and the node's outputs
  (``ros_dynamics.ros.dynamics_node.outputs.Outputs``, the node's own publishers, on the node's executor so
  that they learn of their subscribers: ``Outputs.publish`` fills and publishes what is due,
  ~/dynamics and, every N-th joint state, ~/christoffel, for a subscriber of both in a second
  context, and records the cycle's health); the Pinocchio node's deserialization, gather,
  ``pin_terms``, new message, publish.  ``timer overhead`` (two clock reads) is in every line.
  In the running node (vs_pinocchio.py) the same calls cost more than in this loop: its
  process shares the cores with the publisher, the subscriber and DDS, so a joint state's code
  rarely finds its caches warm; ``--evict BYTES`` reads that many bytes before each joint state
  (untimed) to time the pieces that way.  The relay's callback (benchmarks/relay_node.py: the
  stamp copied into a pre-built Dynamics, published to a subscriber) is timed in the same
  loop: the floor of the pieces.

Free motion (the torque keeps the momentum constant), as in most cycles.
"""

MEASURES = ('ros_dynamics/core', 'ros_dynamics/estimation', 'ros_dynamics/ros/dynamics_node',
            'benchmarks/pinocchio_node.py', 'benchmarks/relay_node.py')

import argparse
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(ROOT, 'out')
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

from common import interleaved, log, machine_info, provenance, report, us  # noqa: E402


def node_engine(xml, **params):
    """The node's engine for ``xml`` with its default parameters (and ``params``), ready."""
    from ros_dynamics.ros.dynamics_node.engine import build_engine
    from ros_dynamics.ros.dynamics_node.parameters import defaults
    cfg = defaults().replace(robot_description=xml, **params)
    return build_engine(xml, cfg), cfg      # (built: its compiled cycle loaded)


# ------------------------------------------------------------------ default: one cycle
def cycle(args):
    import struct

    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState

    import ros_dynamics as rd
    xml = open(rd.bundled_urdf('arm7')).read()
    model = rd.load_urdf(xml)
    n, N = model.nv, args.decimation
    rng = np.random.default_rng(0)
    q, v = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    tau = rd.gravity(model, q) - rd.coriolis_transpose_times_v(model, q, v)
    names = tuple(model.joint_names)
    state = {'k': 0, 't': 10**9}

    data = rd.Data(model)
    obs, det = rd.MomentumObserver(model, gain=50.0), rd.ContactDetector(model, threshold=5.0)
    rd.compute_all_terms(model, q, v, data)
    obs.reset_from(data, tau)

    def core_calls():
        k = state['k'] = state['k'] + 1
        rd.compute_all_terms(model, q, v, data, christoffel=(k % N == 0))
        det.update(obs.update_from(data, tau, 1e-3))

    eng, _ = node_engine(xml, christoffel_decimation=N)
    # the message as the node receives it: a serialized JointState (a few, the stamp changed
    # per message in place, as a subscription gives a new bytes object per message)
    msg = JointState()
    msg.name, msg.position, msg.velocity, msg.effort = list(names), q, v, tau
    raw = bytearray(serialize_message(msg))

    def run(sec, nanosec, t, christoffel):
        raw[4:12] = struct.pack('<iI', sec, nanosec)
        return eng.run(bytes(raw), t, christoffel)

    def engine_step():
        k = state['k'] = state['k'] + 1
        t = state['t'] = state['t'] + 1_000_000
        sec, nanosec = divmod(t, 10**9)
        run(sec, nanosec, t, k % N == 0)

    variants = {'core calls': core_calls,
                'Engine.run: the serialized message read and its cycle (what the node runs)':
                    engine_step}
    for f in variants.values():
        for _ in range(4 * N):
            f()
    out = run(*divmod(state['t'] + 1_000_000, 10**9), state['t'] + 1_000_000, False)
    state['t'] += 1_000_000
    if out.verdict != 'cycle':
        raise SystemExit(f'the node refused the benchmark joint state: {out.verdict}')
    log(f'machine: {machine_info()}')
    t = interleaved(variants, blocks=args.blocks, block_s=0.01, stat='min',
                    clock=time.thread_time)
    lines = [f'# One dynamics_node cycle without ROS (bundled arm, nv = {n})', '',
             f'{provenance()}. Gamma every {N}-th cycle; minimum thread CPU time over '
             f'{args.blocks} interleaved blocks. Engine.run reads the serialized JointState and '
             'makes its cycle (one compiled call since the Model/Data cycle; before it, the row '
             'of an older commit timed the cycle alone, the message already read).', '',
             '| variant | us per cycle |', '|---|---:|']
    lines += [f'| {name} | {us(sec)} |' for name, sec in t.items()]
    report(args.out or os.path.join(OUT, 'node_cycle.md'), '\n'.join(lines) + '\n')


# ------------------------------------------------------------------ --base: A/B
def _worktree(commit):
    path = os.path.join(OUT, 'ab', commit)
    if not os.path.isdir(path):
        log(f'checking out {commit} into {path}')
        subprocess.run(['git', '-C', ROOT, 'worktree', 'add', '--detach', path, commit],
                       check=True, capture_output=True)
    return path


def _run(tree, out):
    env = dict(os.environ, PYTHONPATH=tree)
    subprocess.run([sys.executable, os.path.join(tree, 'benchmarks', 'node_cycle.py'), '--out',
                    out], cwd=tree, env=env, check=True, capture_output=True, timeout=1800)
    text = open(out).read()
    node = re.search(r'\| [^|]*what the node runs[^|]* \| ([0-9.]+) \|', text)
    core = re.search(r'\| core calls \| ([0-9.]+) \|', text)
    load = re.search(r'load average ([0-9.]+)', text)
    return float(node.group(1)), float(core.group(1)), float(load.group(1).rstrip('.'))


def ab(args):
    base = _worktree(args.base)
    head = subprocess.run(['git', '-C', ROOT, 'rev-parse', '--short', 'HEAD'], check=True,
                          capture_output=True, text=True).stdout.strip()
    rows = []
    for k in range(args.runs):
        for label, tree in ((args.base, base), (head, ROOT)):
            log(f'run {k + 1}/{args.runs}: {label} ...')
            rows.append((k + 1, label) + _run(tree, os.path.join(OUT, f'node_cycle_{label}.md')))
    lines = ['# The node\'s cycle without ROS, two commits alternated (bundled arm)', '',
             f'`python benchmarks/node_cycle.py --base {args.base} --runs {args.runs}` at '
             f'{head}, {time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}; machine: '
             f'{machine_info()}; 1-min load average per run in the last column. Each run is '
             'one process of that commit\'s `benchmarks/node_cycle.py` (minimum thread CPU over '
             'interleaved blocks); "what the node runs" is its row for the cycle the node '
             'makes per message, "core calls" the bare core work in the same process.', '',
             '| run | commit | what the node runs [us] | core calls [us] | load |',
             '|---:|---|---:|---:|---:|']
    lines += [f'| {k} | {c} | {n:.2f} | {b:.2f} | {ld:.2f} |' for k, c, n, b, ld in rows]
    for label in (args.base, head):
        n = [r[2] for r in rows if r[1] == label]
        lines.append(f'\n{label}: {min(n):.2f}-{max(n):.2f} us per cycle '
                     f'(median {sorted(n)[len(n) // 2]:.2f})')
    report(args.out or os.path.join(OUT, 'node_cycle_ab.md'), '\n'.join(lines) + '\n')


# ------------------------------------------------------------------ --breakdown
class _Pieces:
    """Thread CPU per piece of a joint state's callback, summed over the messages."""

    def __init__(self, evict):
        self.acc, self.scratch = {}, np.ones(max(1, evict // 8))

    def start(self):
        self.scratch.sum()        # (untimed: the caches as the running node finds them)
        return self.add('timer overhead', time.thread_time())

    def add(self, label, t0):
        t1 = time.thread_time()
        self.acc[label] = self.acc.get(label, 0.0) + (t1 - t0)
        return t1

    def us(self, n):
        return {k: 1e6 * x / n for k, x in self.acc.items()}


def _wire(xml, messages):
    """(joint names, serialized JointStates of a smooth motion at 1 kHz)."""
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState
    from vs_pinocchio import trajectory
    names, Q, V, E, _ = trajectory(xml, messages / 1000.0, 1000.0)
    wire = []
    for k in range(len(Q)):
        m = JointState()
        m.name = names
        m.header.stamp.sec, m.header.stamp.nanosec = 1000 + k // 1000, (k % 1000) * 1_000_000
        m.position, m.velocity, m.effort = Q[k], V[k], E[k]
        wire.append(serialize_message(m))
    return names, wire


def _node_outputs(xml, params):
    """(the engine, the parameters, a node with the node's Outputs, a listener node on its
    ~/dynamics, ~/christoffel and a relay topic, the relay publisher, the contexts), the
    outputs matched with the listener (the node's executor delivered the matched events)."""
    import rclpy
    from rclpy.experimental import EventsExecutor
    from rclpy.qos import DurabilityPolicy, QoSProfile
    from ros_dynamics_msgs.msg import Christoffel, Dynamics
    from ros_dynamics.ros.dynamics_node.outputs import Outputs
    ctx, ctx2 = rclpy.Context(), rclpy.Context()
    rclpy.init(context=ctx)
    rclpy.init(context=ctx2)
    node = rclpy.create_node(f'breakdown_{os.getpid()}', context=ctx)
    listener = rclpy.create_node(f'breakdown_listener_{os.getpid()}', context=ctx2)
    eng, cfg = node_engine(xml, **params)
    qos = QoSProfile(depth=cfg.qos_depth)
    outputs = Outputs(node.create_publisher, node.get_logger(), node.get_name(), qos,
                      QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL),
                      lambda *note: None)
    outputs.install(eng.messages, cfg, 0, eng.cycle.data.observer.free_peak)
    relay = node.create_publisher(Dynamics, '~/relay', qos)
    for topic, typ in (('dynamics', Dynamics), ('christoffel', Christoffel), ('relay', Dynamics)):
        listener.create_subscription(typ, f'/breakdown_{os.getpid()}/{topic}', lambda m: None,
                                     QoSProfile(depth=500, durability=(
                                         DurabilityPolicy.TRANSIENT_LOCAL
                                         if topic == 'christoffel' else
                                         DurabilityPolicy.VOLATILE)))
    end = time.monotonic() + 10
    streams = outputs.streams
    while time.monotonic() < end and not all(p.get_subscription_count() for p in (
            streams['dynamics'].publisher, streams['christoffel'].publisher, relay)):
        time.sleep(0.02)
    executor = EventsExecutor(context=ctx)     # the node's: the outputs learn of the subscriber
    executor.add_node(node)
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.05)
    return eng, cfg, outputs, relay, (executor, node, listener, ctx, ctx2)


def _ours(eng, cfg, outputs, wire, evict):
    pieces = _Pieces(evict)
    for w in wire:
        t = pieces.start()
        now = time.time_ns()
        gamma = outputs.christoffel_due(cfg)
        t = pieces.add('Outputs.christoffel_due (Gamma this cycle?)', t)
        out = eng.run(w, now, gamma)
        t = pieces.add('Engine.run (the serialized JointState read, stamp, gather and bounds, '
                       'terms, observer, output messages written: one compiled call)', t)
        assert out.verdict == 'cycle', out.verdict
        outputs.publish(cfg, out, time.perf_counter())
        pieces.add('Outputs.publish (the live outputs made and published, health)', t)
    return pieces.us(len(wire))


def _relay(xml, publisher, wire, evict):
    """benchmarks/relay_node.py's callback."""
    from relay_node import STAMP, prebuilt_messages
    pieces = _Pieces(evict)
    dyn = bytearray(prebuilt_messages(xml, False, [])[0])
    for w in wire:
        t = pieces.start()
        dyn[STAMP] = w[STAMP]
        publisher.publish(bytes(dyn))
        pieces.add('the relay callback (stamp copied, pre-built Dynamics published)', t)
    return pieces.us(len(wire))


def _pinocchio(xml, names, publisher, wire, evict):
    """benchmarks/pinocchio_node.py's callback, piece by piece."""
    import array

    import pinocchio as pin
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import JointState
    from ros_dynamics_msgs.msg import Dynamics
    from pinocchio_node import pin_terms
    pieces = _Pieces(evict)
    pm = pin.buildModelFromXML(xml)
    pd = pm.createData()
    pnames = list(pm.names)[1:]
    where = {nm: i for i, nm in enumerate(names)}
    index = np.array([where[nm] for nm in pnames])

    def f(x):
        return array.array('d', x.tobytes())
    for w in wire:
        t = pieces.start()
        js = deserialize_message(w, JointState)
        t = pieces.add('deserialize JointState', t)
        q = np.asarray(js.position)[index]
        v = np.asarray(js.velocity)[index]
        t = pieces.add('gather by index', t)
        M, C, Mdot, g = pin_terms(pm, pd, q, v)
        t = pieces.add('pin_terms (crba, Coriolis matrix, gravity, C + C^T)', t)
        out = Dynamics()
        out.header = js.header
        out.names = pnames
        out.position, out.velocity = f(q), f(v)
        out.mass_matrix, out.coriolis_matrix = f(M), f(C)
        out.mass_matrix_dot, out.gravity = f(Mdot), f(g)
        t = pieces.add('new Dynamics filled', t)
        publisher.publish(out)
        pieces.add('publish Dynamics', t)
    return pieces.us(len(wire))


def _pieces(xml, messages, params, evict=0):
    """({piece: us per joint state} of the node, the same of the Pinocchio node and of the
    relay); ``evict`` bytes read before each joint state's pieces (untimed): their caches as
    the running node finds them, after the publisher, the subscriber and DDS ran."""
    names, wire = _wire(xml, messages)
    eng, cfg, outputs, relay, ros = _node_outputs(xml, params)
    ours = _ours(eng, cfg, outputs, wire, evict)
    relayed = _relay(xml, relay, wire, evict)
    theirs = _pinocchio(xml, names, outputs.streams['dynamics'].publisher, wire, evict)
    executor, node, listener, ctx, ctx2 = ros
    executor.shutdown()
    node.destroy_node()
    listener.destroy_node()
    ctx.try_shutdown()
    ctx2.try_shutdown()
    return ours, theirs, relayed


def _table(robot, label, pieces):
    total = sum(pieces.values())
    lines = [f'| {robot} | {label} | {k} | {x:.1f} |' for k, x in pieces.items()]
    return lines + [f'| {robot} | {label} | **sum** | **{total:.1f}** |']


def breakdown(args):
    import node_latency  # noqa: F401  (this process's ROS environment: localhost, a domain id)
    from common import example_robot_data_urdf
    from vs_pinocchio import ROBOTS
    head = (f'{provenance()}; {args.messages} joint states per robot, thread CPU time per '
            'joint state [us]' + (f'; before each joint state {args.evict} bytes read (untimed): '
                                  'its caches as the running node finds them'
                                  if args.evict else ''))
    lines = ['| robot | node | piece | us |', '|---|---|---|---|']
    for robot in args.robots:
        with open(example_robot_data_urdf(ROBOTS[robot])) as f:
            xml = f.read()
        ours, theirs, relay = _pieces(xml, args.messages, {}, args.evict)
        lean, _, _ = _pieces(xml, args.messages,
                             {'christoffel_stream': False, 'observer_enabled': False},
                             args.evict)
        lines += _table(robot, 'ours (defaults)', ours)
        lines += _table(robot, 'ours-lean (no observer, no Gamma stream)', lean)
        lines += _table(robot, 'pinocchio', theirs)
        lines += _table(robot, 'relay (benchmarks/relay_node.py)', relay)
    report(args.out or os.path.join(OUT, 'benchmarks', 'callback_breakdown.md'),
           f'# Per-callback breakdown\n\n{head}\n\n' + '\n'.join(lines) + '\n')


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--decimation', type=int, default=10, help='Gamma every N-th cycle')
    ap.add_argument('--blocks', type=int, default=31)
    ap.add_argument('--base', metavar='COMMIT', help='A/B: alternate with this commit\'s run')
    ap.add_argument('--runs', type=int, default=3, help='with --base: runs of each commit')
    ap.add_argument('--breakdown', action='store_true', help='the pieces of one joint state')
    ap.add_argument('--robots', nargs='+', default=['panda', 'talos'],
                    choices=['panda', 'talos'], help='with --breakdown')
    ap.add_argument('--messages', type=int, default=3000, help='with --breakdown')
    ap.add_argument('--evict', type=int, default=0, metavar='BYTES',
                    help='with --breakdown: read this many bytes before each joint state '
                    '(untimed), so that its code and data come from memory as in the running '
                    'node (e.g. 8000000)')
    ap.add_argument('--out', help='the result file (default: out/node_cycle.md, '
                    'out/node_cycle_ab.md, out/benchmarks/callback_breakdown.md)')
    args = ap.parse_args(argv)
    if args.base and args.breakdown:
        raise SystemExit('--base and --breakdown are two different runs')
    if args.base:
        return ab(args)
    if args.breakdown:
        return breakdown(args)
    return cycle(args)


if __name__ == '__main__':
    main()
