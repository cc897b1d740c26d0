"""Cost per cycle of dynamics_node's output coordinates (parameter ``coordinates``).

The node computes M, C, dM/dt, g (and, on Christoffel cycles, Gamma) in the model's joint
coordinates and maps them with ros_dynamics.ros.output_coordinates.OutputCoordinates.  This
times that mapping next to the cycle's core call it adds to, in CPU time (thread_time,
interleaved medians; see common.py), per robot and coordinate choice:

  dynamics      rd.dynamics(model, q, v)                  the core call of every cycle
  map           OutputCoordinates.apply(q, v, d)          added to every cycle
  christoffel   rd.christoffel(model, q)                  the core call of a Gamma cycle
  map+Gamma     OutputCoordinates.apply(q, v, d, Gamma)   added to a Gamma cycle (incl. map)

Every mapping is checked against the core library's coordinate objects before it is timed.
With --node it also times the whole node callback per joint state in-process (no DDS peers;
validation, core calls, observer, mapping, writing and publishing; Gamma every 10th cycle, so
this is the average cycle) for each robot and choice, as CPU time per joint state.
Usage: python benchmarks/output_coordinates.py [--quick] [--node]
"""
import argparse
import os
import sys
import time

import numpy as np

from common import interleaved, log, machine_info, us

import ros_dynamics as rd
from ros_dynamics.ros.output_coordinates import OutputCoordinates

HERE = os.path.dirname(os.path.abspath(__file__))
GRIPPER = os.path.join(os.path.dirname(HERE), 'test', 'fixtures', 'urdf', 'gripper_mimic.urdf')
BASE = tuple(f'floating_base/{a}' for a in ('linear_x', 'linear_y', 'linear_z',
                                              'angular_x', 'angular_y', 'angular_z'))

CASES = [  # (label, URDF, floating base, coordinates)
    ('gripper (5 joints, 2 mimic)', GRIPPER, False, 'joint'),
    ('gripper (5 joints, 2 mimic)', GRIPPER, False, 'mimic_reduced'),
    ('arm7', rd.bundled_urdf('arm7'), False, 'joint'),
    ('arm7', rd.bundled_urdf('arm7'), False, 'mimic_reduced'),
    ('quadruped floating (nv 18)', rd.bundled_urdf('quadruped'), True, 'joint'),
    ('quadruped floating (nv 18)', rd.bundled_urdf('quadruped'), True, 'mimic_reduced'),
    ('quadruped floating (nv 18)', rd.bundled_urdf('quadruped'), True, 'center_of_mass'),
]


def state(model, rng):
    q = rng.uniform(-1, 1, model.nq)
    if model.floating_base:
        q[3:7] /= np.linalg.norm(q[3:7])
    return q, rng.uniform(-1, 1, model.nv)


def check(oc, model, q, v):
    """The adapter's output equals the core coordinate object's (or the input for joint)."""
    d = rd.dynamics(model, q, v)
    G = rd.christoffel(model, q)
    out = oc.apply(q, v, d, G)
    if oc.identity:
        ref_d, ref_G, ref_q = d, G, q
    elif oc.kind == 'mimic_reduced':
        ref_d, ref_G = oc.co.reduce(d), rd.transform_christoffel(G, oc.co.A)
        ref_q = oc.co.state(q, v)[0]
    else:
        ref_d, ref_G, ref_q = oc.co.dynamics(q, v), oc.co.christoffel(q), oc.co.state(q, v)[0]
    err = max(np.abs(np.asarray(getattr(out.d, f)) - getattr(ref_d, f)).max()
              for f in ('M', 'C', 'Mdot', 'g'))
    err = max(err, np.abs(out.gamma - ref_G).max(), np.abs(out.q - ref_q).max())
    return err


def node_cycle(urdf, floating, kind, cycles):
    """CPU seconds per joint state of DynamicsNode._on_joint_state, in-process."""
    import rclpy
    from nav_msgs.msg import Odometry
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import JointState

    from ros_dynamics.ros.dynamics_node import DynamicsNode

    with open(urdf) as f:
        xml = f.read()
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    params = dict(robot_description=xml, floating_base=floating, coordinates=kind,
                  christoffel_decimation=10)
    node = DynamicsNode(context=ctx, namespace=f'/coords_{os.getpid()}',
                        parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])
    eng = node.engine
    if floating:
        odom = Odometry()
        odom.pose.pose.position.z = 0.4
        odom.pose.pose.orientation.w = 1.0
        odom.twist.twist.linear.x = 0.2
        node._on_odom(odom)
    rng = np.random.default_rng(0)
    q0 = rng.uniform(-0.5, 0.5, eng.nj)
    # efforts = the joint part of g(q): a robot holding its weight, no contact detected (in
    # contact the wrench estimate would add its least-squares solve to every choice alike)
    q_full = eng.model.neutral()
    q_full[eng.base_q:] = q0
    if floating:
        q_full[2] = 0.4
    g0 = rd.gravity(eng.model, q_full)[eng.base_v:]
    msgs = []
    for k in range(cycles):
        m = JointState()
        m.header.stamp.sec, m.header.stamp.nanosec = 1000, k * 100_000
        m.name = list(eng.joint_names)
        m.position = q0.tolist()
        m.velocity = [0.1] * eng.nj
        m.effort = g0.tolist()
        msgs.append(m)
    for m in msgs[:50]:
        node._on_joint_state(m)
    node._last_stamp_ns = None
    t0 = time.thread_time()
    for m in msgs:
        node._on_joint_state(m)
    dt = (time.thread_time() - t0) / cycles
    assert node.stats['rejected'] == 0, node.stats
    node.destroy_node()
    ctx.try_shutdown()
    return dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--quick', action='store_true', help='fewer timing blocks')
    ap.add_argument('--node', action='store_true',
                    help='also time the whole node callback per joint state (needs rclpy)')
    args = ap.parse_args()
    blocks = 9 if args.quick else 31
    rng = np.random.default_rng(0)
    print(f'# dynamics_node output coordinates: CPU time per call (us)\n\n{machine_info()}; '
          f'load average {os.getloadavg()[0]:.1f}\n')
    print('| robot | coordinates | nv -> published | dynamics | map | christoffel | '
          'map+Gamma | max diff vs core |')
    print('|---|---|---|---:|---:|---:|---:|---:|')
    for label, urdf, floating, kind in CASES:
        model = rd.load_urdf(urdf, floating_base=floating)
        oc = OutputCoordinates(model, kind, BASE)
        q, v = state(model, rng)
        err = check(oc, model, q, v)
        d = rd.dynamics(model, q, v)
        G = rd.christoffel(model, q)
        log(f'{label} {kind}: timing')
        t = interleaved({
            'dynamics': lambda: rd.dynamics(model, q, v),
            'map': lambda: oc.apply(q, v, d),
            'christoffel': lambda: rd.christoffel(model, q),
            'map+Gamma': lambda: oc.apply(q, v, d, G),
        }, blocks=blocks, clock=time.thread_time)
        print(f'| {label} | {kind} | {model.nv} -> {oc.nv} | {us(t["dynamics"])} | '
              f'{us(t["map"])} | {us(t["christoffel"])} | {us(t["map+Gamma"])} | {err:.1e} |')
    if args.node:
        cycles = 1000 if args.quick else 3000
        print('\n## Node callback per joint state (in-process, CPU time, Gamma every 10th cycle, '
              'observer on)\n')
        print('| robot | coordinates | us per joint state |')
        print('|---|---|---:|')
        for label, urdf, floating, kind in CASES:
            log(f'{label} {kind}: node cycle')
            runs = [node_cycle(urdf, floating, kind, cycles) for _ in range(3)]
            print(f'| {label} | {kind} | {us(min(runs))} |')
    return 0


if __name__ == '__main__':
    sys.exit(main())
