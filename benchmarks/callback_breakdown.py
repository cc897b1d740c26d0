#!/usr/bin/env python3
"""What one joint state costs inside dynamics_node and inside the plain Pinocchio node, by piece.

In-process, from public pieces only: dynamics_node's engine for the robot with the node's
default settings (its assembler, its Cycle, its preallocated messages) and this process's own
publishers of the same types, each with one subscriber in a second process context (so that
publishing serializes and hands the sample to DDS as in the node).  Per joint state, in the
node's order, the thread CPU time (time.thread_time) of:

* ``read JointState (wire bytes)``: the node's JointStateReader on the serialized message
  (the node's subscription is raw: rclpy makes no Python message object);
* ``JointStateCycle.step``: the usual cycle in one compiled call (stamp policy, gather and bounds,
  terms, observer, finite check, the arrays written into the serialized messages;
  estimation/fused_cycle.py), and in the "Python pipeline only" rows the same rules step by
  step (the assembler, then Cycle.step: the terms, Gamma every 10th, the observer, contact,
  finite checks);
* ``dynamics_message``: M, C, dM/dt, g written into the serialized ~/dynamics template, and
  its bytes;
* ``publish Dynamics`` (the bytes);
* ``christoffel_message + publish`` (every 10th joint state, latched; averaged per joint state).

The Pinocchio node's pieces: deserialize, gather by index, pin_terms (crba, Coriolis matrix,
gravity, C + C^T), filling a new Dynamics, publish.  ``timer overhead`` is the cost of an
empty piece (two thread_time reads); it is included in every line.  What the executor and DDS
threads add (wait set, take, the listener threads) is the node CPU of vs_pinocchio.py minus the
sum of these lines.

    python benchmarks/callback_breakdown.py [--robots panda talos] [--messages 3000]
        [--out-dir out/benchmarks]
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import node_latency as nl  # noqa: E402,F401  (the ROS environment: localhost, a domain id)
from common import example_robot_data_urdf, provenance  # noqa: E402
from vs_pinocchio import ROBOTS, trajectory  # noqa: E402

import numpy as np  # noqa: E402


def breakdown(xml, messages, variant_params, fused=True):
    import pinocchio as pin
    import rclpy
    from rclpy.serialization import deserialize_message, serialize_message
    from sensor_msgs.msg import JointState

    from pinocchio_node import pin_terms
    from ros_dynamics.estimation.joint_state_cycle import JointStateCycle
    from ros_dynamics.ros import interfaces as itf
    from ros_dynamics.ros.engine import build_engine
    from ros_dynamics.ros.parameters import defaults
    from ros_dynamics.ros.wire import JointStateReader

    names, Q, V, E, _ = trajectory(xml, messages / 1000.0, 1000.0)
    wire = []
    for k in range(len(Q)):
        m = JointState()
        m.name = names
        m.header.stamp.sec, m.header.stamp.nanosec = 1000 + k // 1000, (k % 1000) * 1_000_000
        m.position, m.velocity, m.effort = Q[k], V[k], E[k]
        wire.append(serialize_message(m))

    ctx, ctx2 = rclpy.Context(), rclpy.Context()
    rclpy.init(context=ctx)
    rclpy.init(context=ctx2)
    node = rclpy.create_node(f'breakdown_{os.getpid()}', context=ctx)
    listener = rclpy.create_node(f'breakdown_listener_{os.getpid()}', context=ctx2)
    cfg = defaults().replace(**variant_params)
    eng = build_engine(xml, cfg)
    pubs = {}
    for typ in (itf.Dynamics, itf.Christoffel):
        topic = f'/breakdown_{os.getpid()}/{typ.__name__.lower()}'
        pubs[typ] = node.create_publisher(typ, topic, 500)
        listener.create_subscription(typ, topic, lambda m: None, 500)
    end = time.monotonic() + 10
    while time.monotonic() < end and not all(pubs[t].get_subscription_count()
                                             for t in (itf.Dynamics, itf.Christoffel)):
        time.sleep(0.02)

    # ours
    acc = {}
    tt = time.thread_time

    def add(label, t0):
        t1 = tt()
        acc[label] = acc.get(label, 0.0) + (t1 - t0)
        return t1

    reader = JointStateReader()
    dec = cfg.christoffel_decimation if cfg.christoffel_stream and eng.with_gamma else 0
    if fused:
        eng.warm_fused()
        js = eng.joint_state_cycle
    else:                   # the same rules step by step in Python (no output buffers)
        js = JointStateCycle(eng.assembler, eng.cycle, eng.q, eng.v, eng.tau, None,
                             cfg.effort_source, cfg.commanded_torque_timeout)
    label = ('JointStateCycle.step, compiled call' if fused else
             'JointStateCycle.step, Python pipeline') + (
        ' (stamp, gather and bounds, terms, observer, outputs)')
    count = 0
    for k, w in enumerate(wire):
        t = tt()
        t = add('timer overhead', t)
        names, p, v, e, sec, nanosec = reader.read(w)
        t = add('read JointState (wire bytes)', t)
        st = (sec, nanosec)
        due = bool(dec and count % dec == 0)
        out = js.step(names, p, v, e, sec, nanosec, time.time_ns(), christoffel=due)
        t = add(label, t)
        assert out.verdict == 'cycle', out.refusal
        res = out.result
        count += 1
        msg = eng.messages.dynamics(st, res.out, out.written)
        t = add('dynamics_message', t)
        pubs[itf.Dynamics].publish(msg)
        t = add('publish Dynamics', t)
        if res.out.gamma is not None:
            pubs[itf.Christoffel].publish(eng.messages.christoffel(st, res.out))
            t = add('christoffel_message + publish (per joint state)', t)
        eng.requests.keep(eng.q, eng.v, st, 0, None)
        t = add('remember (state for the services)', t)
    if fused:
        print(f'  compiled call: {js.fast_cycles} of {len(wire)} joint states, the others '
              'through the pipeline (a new layout, the observer start)', flush=True)
    ours = {k: 1e6 * x / len(wire) for k, x in acc.items()}

    # the Pinocchio node's callback, its pieces
    acc.clear()
    pm = pin.buildModelFromXML(xml)
    pd = pm.createData()
    pnames = list(pm.names)[1:]
    where = {nm: i for i, nm in enumerate(names)}
    index = np.array([where[nm] for nm in pnames])
    from ros_dynamics_msgs.msg import Dynamics
    import array

    def f(x):
        return array.array('d', x.tobytes())
    for w in wire:
        t = tt()
        t = add('timer overhead', t)
        js = deserialize_message(w, JointState)
        t = add('deserialize JointState', t)
        q = np.asarray(js.position)[index]
        v = np.asarray(js.velocity)[index]
        t = add('gather by index', t)
        M, C, Mdot, g = pin_terms(pm, pd, q, v)
        t = add('pin_terms (crba, Coriolis matrix, gravity, C + C^T)', t)
        out = Dynamics()
        out.header = js.header
        out.names = pnames
        out.position, out.velocity = f(q), f(v)
        out.mass_matrix, out.coriolis_matrix = f(M), f(C)
        out.mass_matrix_dot, out.gravity = f(Mdot), f(g)
        t = add('new Dynamics filled', t)
        pubs[itf.Dynamics].publish(out)
        t = add('publish Dynamics', t)
    theirs = {k: 1e6 * x / len(wire) for k, x in acc.items()}
    node.destroy_node()
    listener.destroy_node()
    ctx.try_shutdown()
    ctx2.try_shutdown()
    return ours, theirs


def table(robot, label, pieces):
    total = sum(pieces.values())
    lines = [f'| {robot} | {label} | {k} | {x:.1f} |' for k, x in pieces.items()]
    return lines + [f'| {robot} | {label} | **sum** | **{total:.1f}** |']


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--robots', nargs='+', default=list(ROBOTS), choices=list(ROBOTS))
    ap.add_argument('--messages', type=int, default=3000)
    ap.add_argument('--out-dir', default=os.path.join(nl.REPO_ROOT, 'out', 'benchmarks'))
    ap.add_argument('--name', default='callback_breakdown')
    args = ap.parse_args()
    head = (f'{provenance()}; {args.messages} joint states per robot, thread CPU time per '
            'joint state [us]')
    lines = ['| robot | node | piece | us |', '|---|---|---|---|']
    for robot in args.robots:
        with open(example_robot_data_urdf(ROBOTS[robot])) as f:
            xml = f.read()
        ours, theirs = breakdown(xml, args.messages, {})
        pipeline, _ = breakdown(xml, args.messages, {}, fused=False)
        lean, _ = breakdown(xml, args.messages,
                            {'christoffel_stream': False, 'observer_enabled': False})
        lines += table(robot, 'ours (defaults: compiled cycle)', ours)
        lines += table(robot, 'ours (defaults, Python pipeline only)', pipeline)
        lines += table(robot, 'ours-lean (no observer, no Gamma stream)', lean)
        lines += table(robot, 'pinocchio', theirs)
    print(head)
    print('\n'.join(lines))
    os.makedirs(args.out_dir, exist_ok=True)
    md = os.path.join(args.out_dir, f'{args.name}.md')
    with open(md, 'w') as f:
        f.write(f'# Per-callback breakdown\n\n{head}\n\n' + '\n'.join(lines) + '\n')
    print(f'wrote {md}')


if __name__ == '__main__':
    main()
