#!/usr/bin/env python3
"""The whole-body controller's work per answer against the previous release (606e4da), in CPU
time, interleaved: its QP and the Python around it.

    python benchmarks/wbc_cycle.py [--seconds 4] [--blocks 31] [--base 606e4da]

The stream: the dynamics node's ``~/dynamics`` and ``~/task_space`` messages (as they arrive,
serialized by rclpy's types) of Solo12 in MuJoCo with a hidden 1 kg trunk load and a legged
robot's sensing (odometry 200 Hz, 10 ms late, 0.03 m/s noise; joint noise), recorded from the
in-process walk (ros_dynamics.simulation.legged_walk) under the stand-step schedule, which both
releases run, and under the trot (this release only).

Per pair of messages, each release's own code as its node runs it (the old code checked out
of git into a temporary package; nothing of this checkout's control/ is shared with it):

* ``callback``: what the subscriptions do per message pair: the old node's were deserialized
  by rclpy as they arrived and its callback converted every Dynamics message to arrays
  (``dynamics_arrays``); this one's subscriptions keep them serialized and read their stamps
  (``header_stamp``);
* ``answer``: one answer: the old node's from its deserialized pair (``stream_state``, the
  schedule's reference, the QP: ``TaskSpaceInverseDynamics.solve``); this one's from the
  serialized pair (read from the bytes by ``read_serialized``, ``dynamics_arrays``,
  ``stream_state``, then ``LeggedController.command``, the node's path);
* ``stream``: the message pair to arrays alone; ``QP``: ``solve`` alone (its assembly and
  proxsuite's solve) on the answer's reference, by a second solver of the same kind that
  solves every pair in the same order (its warm starts as in the answers).

Timed with this thread's CPU clock (time.thread_time: a core shared with other jobs does not
count), the two releases in alternating blocks over the same pairs in the same order (each
keeping its own warm starts from block to block), the median of the blocks' means per call and
the p50 / p99 of the single calls over all blocks.  Per second of 1 kHz joint states, the old
node ran the callback and an answer for every pair; this one runs the callback for every pair
and answers at 500 Hz.
"""
import argparse
import importlib
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

from common import add_out_dir, docstring_report, log, output, report  # noqa: E402

MEASURES = ('ros_dynamics/control', 'ros_dynamics/ros/control/wbc_stream.py',
            'ros_dynamics/ros/control/wbc_wire.py')

#: the previous release's files this benchmark imports, and where they go in its package
OLD_FILES = {'ros_dynamics/control/wbc.py': 'wbc.py',
             'ros_dynamics/control/stand_step.py': 'stand_step.py',
             'ros_dynamics/control/trajectories.py': 'trajectories.py',
             'ros_dynamics/ros/control/wbc_stream.py': 'wbc_stream.py'}


def old_release(commit):
    """The previous release's controller as a package of its own (``rd_old``), from git."""
    folder = tempfile.mkdtemp(prefix='rd_old_')
    pkg = os.path.join(folder, 'rd_old')
    os.makedirs(pkg)
    open(os.path.join(pkg, '__init__.py'), 'w').close()
    for path, name in OLD_FILES.items():
        text = subprocess.run(['git', 'show', f'{commit}:{path}'], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout
        text = text.replace('from ros_dynamics.control.wbc import', 'from .wbc import')
        with open(os.path.join(pkg, name), 'w') as f:
            f.write(text)
    sys.path.insert(0, folder)
    return {m: importlib.import_module(f'rd_old.{m}') for m in ('wbc', 'stand_step',
                                                                'wbc_stream')}


def record(gait, seconds):
    """(states, commands) of the in-process walk under ``gait``: the stream at each answered
    state (StreamState copies) and the trot's velocity commands."""
    import copy

    from ros_dynamics.control import legged_controller
    from ros_dynamics.simulation.legged_walk import NOISY, WalkScenario, walk
    from ros_dynamics.simulation.mujoco_legged import LeggedPlantOptions
    seen = []
    command = legged_controller.LeggedController.command

    def keep(self, stamp, state, *rest, **options):
        seen.append((stamp, copy.deepcopy(state)))
        return command(self, stamp, state, *rest, **options)
    legged_controller.LeggedController.command = keep
    try:
        walk(WalkScenario(robot='solo12', gait=gait, duration=seconds, sensing=NOISY,
                          plant=LeggedPlantOptions(hidden_load=1.0),
                          commands=((0.0, (0.0, 0.0, 0.0)), (1.0, (0.3, 0.0, 0.0)))))
    finally:
        legged_controller.LeggedController.command = command
    return seen


def messages(stamp, st):
    """The Dynamics and TaskSpace messages of one stream state, as the node publishes them,
    serialized (as they reach a subscription)."""
    from rclpy.serialization import serialize_message
    return tuple(serialize_message(m) for m in _messages(stamp, st))


def _messages(stamp, st):
    from geometry_msgs.msg import Pose
    from ros_dynamics_msgs.msg import Dynamics, TaskSpace
    n, k = len(st.names), len(st.frames)
    dm = Dynamics(names=list(st.names), position=st.q.tolist(), velocity=st.v.tolist(),
                  mass_matrix=st.M.ravel().tolist(), coriolis_matrix=st.C.ravel().tolist(),
                  mass_matrix_dot=[0.0] * (n * n), gravity=st.g.tolist())
    tm = TaskSpace(names=list(st.names), frames=list(st.frames), mass=float(st.mass),
                   jacobians=st.jacobians.ravel().tolist(),
                   jacobian_dot_v=st.jacobian_dot_v.ravel().tolist(),
                   centroidal_matrix=st.centroidal_matrix.ravel().tolist(),
                   centroidal_bias=st.centroidal_bias.tolist())
    for p in st.positions:
        pose = Pose()
        pose.position.x, pose.position.y, pose.position.z = (float(x) for x in p)
        tm.poses.append(pose)
    tm.com.x, tm.com.y, tm.com.z = (float(x) for x in st.com)
    tm.com_velocity.x, tm.com_velocity.y, tm.com_velocity.z = (float(x) for x in st.com_velocity)
    for m in (dm, tm):
        m.header.stamp.sec, m.header.stamp.nanosec = divmod(int(stamp), 1_000_000_000)
    return dm, tm


class Old:
    """The previous release's node path (wbc_node.py of 606e4da: _on_dynamics, _serve)."""

    def __init__(self, old, feet, limits, first):
        self.o, self.feet, self.t0 = old, feet, first[0]
        st = first[1]
        w = np.linalg.norm(st.g[:3])
        self.wbc, self.wbc2 = (old['wbc'].TaskSpaceInverseDynamics(
            feet, limits, normal_force=(0.0125 * w, 2.5 * w)) for _ in range(2))
        self.sched = old['stand_step'].StandStepSchedule(feet, st.com, st.positions,
                                                         f_max=2.5 * w, unload_from=w / 4)

    def callback(self, dm, tm):
        """rclpy's deserialization of both messages, then the old callback's conversion; the
        messages kept for the answer."""
        from rclpy.serialization import deserialize_message
        from ros_dynamics_msgs.msg import Dynamics, TaskSpace
        self.msgs = (deserialize_message(dm, Dynamics), deserialize_message(tm, TaskSpace))
        self.arrays = self.o['wbc_stream'].dynamics_arrays(self.msgs[0])

    def answer(self, stamp, dm, tm):
        """One answer from the pair the callback kept; returns its reference."""
        state = self.o['wbc_stream'].stream_state(self.arrays, self.msgs[1])
        ref = self.sched((stamp - self.t0) * 1e-9)
        self.wbc.solve(state, ref)
        return ref

    def stream(self, dm, tm):
        return self.o['wbc_stream'].stream_state(self.arrays, self.msgs[1])

    def qp(self, state, ref):
        return self.wbc2.solve(state, ref)


class New:
    """This release's node path (wbc_node.py: _on_dynamics, _answer)."""

    def __init__(self, gait, feet, limits):
        from ros_dynamics.control.legged_controller import LeggedController
        from ros_dynamics.ros.control import wbc_stream
        self.s = wbc_stream
        self.ctl = LeggedController(feet, limits, gait)
        self.wbc2 = None

    def callback(self, dm, tm):
        self.s.header_stamp(dm)
        self.s.header_stamp(tm)

    def answer(self, stamp, dm, tm):
        """One answer from the serialized pair; returns its reference."""
        return self.ctl.command(stamp, self.stream(dm, tm), (0.3, 0.0, 0.0))[1]

    def stream(self, dm, tm):
        from ros_dynamics_msgs.msg import Dynamics, TaskSpace
        return self.s.stream_state(
            self.s.dynamics_arrays(self.s.read_serialized('Dynamics', dm, Dynamics)),
            self.s.read_serialized('TaskSpace', tm, TaskSpace))

    def qp(self, state, ref):
        if self.wbc2 is None:
            import copy
            self.wbc2 = copy.deepcopy(self.ctl.wbc)
            self.wbc2._work = {}
        return self.wbc2.solve(state, ref)


def blocks(cands, pairs, n_blocks, per_block):
    """Per candidate and kind: block means and single calls (thread CPU seconds); the
    candidates alternate block by block, each going on through the pairs where it stopped."""
    kinds = ('callback', 'stream', 'answer', 'qp')
    out = {c: {k: ([], []) for k in kinds} for c in cands}
    pos = dict.fromkeys(cands, 0)
    refs = {c: {} for c in cands}
    for b in range(n_blocks + 2):
        order = list(cands) if b % 2 else list(cands)[::-1]
        for name in order:
            c, start = cands[name], pos[name]
            calls = {k: [] for k in kinds}
            for i in range(start, start + per_block):
                stamp, dm, tm, st = pairs[i % len(pairs)]
                for kind in kinds:                  # the callback first: it keeps the pair
                    t0 = time.thread_time()
                    if kind == 'callback':
                        c.callback(dm, tm)
                    elif kind == 'stream':
                        c.stream(dm, tm)
                    elif kind == 'answer':
                        refs[name][i % len(pairs)] = c.answer(stamp, dm, tm)
                    else:
                        c.qp(st, refs[name][i % len(pairs)])
                    calls[kind].append(time.thread_time() - t0)
            if b >= 2:                                      # two warm-up rounds
                for kind in kinds:
                    out[name][kind][0].append(np.mean(calls[kind]))
                    out[name][kind][1].extend(calls[kind])
            pos[name] += per_block
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--seconds', type=float, default=4.0, help='walk recorded [s]')
    ap.add_argument('--blocks', type=int, default=31)
    ap.add_argument('--per-block', type=int, default=100, help='calls per block')
    ap.add_argument('--base', default='606e4da', help='the previous release\'s commit')
    add_out_dir(ap)
    args = ap.parse_args(argv)
    from ros_dynamics.control.wbc import effort_limits_from_urdf
    from ros_dynamics.simulation.legged_robots import ROBOTS, robot_urdf
    feet = ROBOTS['solo12']['feet']
    old = old_release(args.base)
    rows = []
    for gait in ('stand_step', 'trot'):
        log(f'recording {args.seconds:g} s of Solo12 in MuJoCo under {gait} ...')
        seen = record(gait, args.seconds)
        limits = effort_limits_from_urdf(robot_urdf('solo12')[1], seen[0][1].names[6:])
        pairs = [(s, *messages(s, st), st) for s, st in seen]
        cands = {'this release': New(gait, feet, limits)}
        if gait == 'stand_step':
            cands[_previous(args)] = Old(old, feet, limits, seen[0])
        log(f'timing {len(cands)} candidate(s) over {len(pairs)} pairs, {args.blocks} blocks')
        rows.append((gait, blocks(cands, pairs, args.blocks, args.per_block)))
    text = _table(rows, args)
    report(output(args.out_dir, 'wbc_cycle.md'), docstring_report(__doc__, body=text))


def _table(rows, args):
    lines = ['| gait | code | kind | median of block means [us] | p50 [us] | p99 [us] |',
             '|---|---|---|---|---|---|']
    ratios = []
    for gait, res in rows:
        for name, kinds in res.items():
            for kind, (means, calls) in kinds.items():
                lines.append(f'| {gait} | {name} | {kind} | {np.median(means) * 1e6:.0f} | '
                             f'{np.percentile(calls, 50) * 1e6:.0f} | '
                             f'{np.percentile(calls, 99) * 1e6:.0f} |')
        prev = _previous(args)
        if prev in res:
            med = {n: {k: np.median(res[n][k][0]) for k in res[n]} for n in res}
            for kind in ('callback', 'stream', 'answer', 'qp'):
                new, old = med['this release'][kind], med[prev][kind]
                ratios.append(f'{kind}: {new * 1e6:.0f} against {old * 1e6:.0f} us '
                              f'({new / old:.2f} of the previous release\'s)')
            new = 1000 * med['this release']['callback'] + 500 * med['this release']['answer']
            old = 1000 * (med[prev]['callback'] + med[prev]['answer'])
            ratios.append(f'per second of 1 kHz joint states: {new * 1e3:.0f} against '
                          f'{old * 1e3:.0f} ms of CPU ({new / old:.2f})')
    return ('\n'.join(lines) + '\n\nStand-step, this release against the previous release '
            f'(commit `{args.base}`): ' + '; '.join(ratios) + '.')


def _previous(args):
    """The previous release's row label (its commit in code font: not a figure)."""
    return f'previous release (`{args.base}`)'


if __name__ == '__main__':
    sys.exit(main())
