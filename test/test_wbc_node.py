"""``wbc_controller`` as a real process over loopback DDS, fed by hand-written Dynamics and
TaskSpace messages (the layouts of docs/conventions.md written here independently of the
node's reader): malformed messages are refused and the node keeps running; a good pair is
answered with the torques the controller computes in this process from the same arrays, with
the pair's stamp, and with the CoM reference of the schedule's start."""
import re
import subprocess
import sys

import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics.control.stand_step import StandStepSchedule
from ros_dynamics.control.wbc import StreamState, TaskSpaceInverseDynamics, effort_limits_from_urdf
from ros_dynamics.simulation.rigid_simulator import standing_quadruped
from test_node_support import NodeProcess, TIMEOUT

pytestmark = pytest.mark.ros

FEET = ['LF_foot', 'RF_foot', 'LH_foot', 'RH_foot']
BASE = ['floating_base/' + c for c in ('linear_x', 'linear_y', 'linear_z', 'angular_x',
                                       'angular_y', 'angular_z')]


def _messages(model, q, v, stamp):
    from geometry_msgs.msg import Pose
    from ros_dynamics_msgs.msg import Dynamics, TaskSpace
    d = rd.dynamics(model, q, v)
    ts = rd.task_space(model, q, v, rd.task_frames(model, FEET))
    names = BASE + list(model.joint_names)
    n, k = len(names), len(FEET)
    dm = Dynamics(names=names, position=q.tolist(), velocity=v.tolist(),
                  mass_matrix=[d.M[i, j] for i in range(n) for j in range(n)],
                  coriolis_matrix=[d.C[i, j] for i in range(n) for j in range(n)],
                  mass_matrix_dot=[0.0] * (n * n), gravity=d.g.tolist())
    tm = TaskSpace(names=names, frames=FEET, mass=float(ts.mass))
    tm.jacobians = [ts.jacobians[f, r, c] for f in range(k) for r in range(6) for c in range(n)]
    tm.jacobian_dot_v = [ts.jacobian_dot_v[f, r] for f in range(k) for r in range(6)]
    tm.centroidal_matrix = [ts.centroidal_matrix[r, c] for r in range(6) for c in range(n)]
    tm.centroidal_bias = ts.centroidal_bias.tolist()
    for p in ts.positions:
        pose = Pose()
        pose.position.x, pose.position.y, pose.position.z = (float(x) for x in p)
        pose.orientation.w = 1.0
        tm.poses.append(pose)
    tm.com.x, tm.com.y, tm.com.z = (float(x) for x in ts.com)
    tm.com_velocity.x, tm.com_velocity.y, tm.com_velocity.z = (float(x) for x in ts.com_velocity)
    for m in (dm, tm):
        m.header.stamp.sec, m.header.stamp.nanosec = stamp
    state = StreamState(names, q, v, d.M, d.C, d.g, FEET, ts.positions, ts.jacobians,
                        ts.jacobian_dot_v, ts.mass, ts.com, ts.com_velocity,
                        ts.centroidal_matrix, ts.centroidal_bias)
    return dm, tm, state


class _Probe:
    """A test node publishing ~/dynamics and ~/task_space into namespace ``ns`` and recording
    the controller's commands and CoM references."""

    def __init__(self, context, ns, depth):
        import rclpy
        from geometry_msgs.msg import PointStamped
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from ros_dynamics_msgs.msg import Dynamics, TaskSpace
        from sensor_msgs.msg import JointState
        self.ns, self.cli = ns, rclpy.create_node(f'{ns}_probe', context=context)
        self.ex = SingleThreadedExecutor(context=context)
        self.ex.add_node(self.cli)
        qos = QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE)
        self.pub_d = self.cli.create_publisher(Dynamics, f'/{ns}/dynamics/dynamics', qos)
        self.pub_t = self.cli.create_publisher(TaskSpace, f'/{ns}/dynamics/task_space', qos)
        self.cmds, self.refs = [], []
        self.cli.create_subscription(JointState, f'/{ns}/sim/effort_command', self.cmds.append,
                                     qos)
        self.cli.create_subscription(PointStamped, f'/{ns}/wbc_controller/com_reference',
                                     self.refs.append, qos)

    def spin_until(self, pred, timeout=TIMEOUT):
        import time
        end = time.monotonic() + timeout
        while time.monotonic() < end and not pred():
            self.ex.spin_once(timeout_sec=0.01)
        return pred()

    def connected(self):
        return self.spin_until(
            lambda: self.pub_d.get_subscription_count() and self.pub_t.get_subscription_count()
            and self.cli.count_publishers(f'/{self.ns}/sim/effort_command')
            and self.cli.count_publishers(f'/{self.ns}/wbc_controller/com_reference'))

    def close(self):
        self.ex.remove_node(self.cli)
        self.ex.shutdown()
        self.cli.destroy_node()


def test_pair_answered_with_the_in_process_solution_bad_input_refused(rclpy_context, ros_env,
                                                                      tmp_path):
    path = rd.bundled_urdf('quadruped')
    xml = open(path).read()
    model = rd.load_urdf(path, floating_base=True)
    q = standing_quadruped(model, path).q.copy()
    v = 0.05 * np.sin(np.arange(model.nv))              # moving a little: C v and J̇ v matter
    # gains and force bounds other than the defaults: the parameters reach the QP (the torques
    # below differ from the defaults' by 0.44 N m at most: the damping terms act, v != 0)
    gains = dict(com_gains=[300.0, 30.0], orientation_gains=[200.0, 20.0],
                 swing_gains=[800.0, 50.0], normal_force_range=[0.02, 2.0])
    node = NodeProcess(ros_env, str(tmp_path), 'wbcn', dict(robot_description=xml,
                                                            report_period=0.0, **gains),
                       node_name='wbc_controller', module='ros_dynamics.ros.control.wbc_node')
    probe = _Probe(rclpy_context, 'wbcn', 100)
    try:
        assert probe.connected(), node.log()
        dm, tm, state = _messages(model, q, v, (5, 0))
        bad_d, good_t, _ = _messages(model, q, v, (3, 0))
        bad_d.mass_matrix = bad_d.mass_matrix[:-1]                   # one entry short
        probe.pub_d.publish(bad_d)
        probe.pub_t.publish(good_t)
        assert probe.spin_until(lambda: 'Dynamics sizes' in node.log()), node.log()
        good_d, bad_t, _ = _messages(model, q, v, (4, 0))
        bad_t.jacobians = list(bad_t.jacobians) + [0.0]               # one too many
        for m in (good_d, dm):
            probe.pub_d.publish(m)
        for m in (bad_t, tm):
            probe.pub_t.publish(m)
        assert probe.spin_until(lambda: probe.cmds and probe.refs), node.log()
        assert node.alive()
        assert 'stream pair rejected: Dynamics sizes' in node.log()   # (one line per 2 s)
        cmds = probe.cmds
        assert len(cmds) == 1, [c.header.stamp for c in cmds]        # only the good pair
        assert (cmds[0].header.stamp.sec, cmds[0].header.stamp.nanosec) == (5, 0)
        assert list(cmds[0].name) == list(model.joint_names)
        weight = np.linalg.norm(state.g[:3])
        ctl = TaskSpaceInverseDynamics(
            FEET, effort_limits_from_urdf(xml, model.joint_names),
            normal_force=tuple(weight * x for x in gains['normal_force_range']),
            com_gains=tuple(gains['com_gains']),
            orientation_gains=tuple(gains['orientation_gains']),
            swing_gains=tuple(gains['swing_gains']))
        sched = StandStepSchedule(FEET, state.com, state.positions, unload_from=weight / 4)
        sol = ctl.solve(state, sched(0.0))
        assert sol.solved
        np.testing.assert_allclose(cmds[0].effort, sol.tau, rtol=1e-6, atol=1e-6)
        default = TaskSpaceInverseDynamics(FEET, effort_limits_from_urdf(xml, model.joint_names))
        assert np.abs(default.solve(state, sched(0.0)).tau - sol.tau).max() > 1e-3
        r = probe.refs[-1].point
        np.testing.assert_allclose((r.x, r.y, r.z), state.com, atol=1e-12)
        node.stop()
        # the pair (3, 0) (its Dynamics malformed) rejected; (4, 0) (its TaskSpace malformed)
        # rejected if the worker took it before (5, 0) completed, else skipped (a newer pair
        # was there): neither answered
        assert 'answered 1 ' in node.log() and 'pairs 3/3, QP solved 1/1' in node.log(), \
            node.log()
        assert re.search(r'rejected [12],', node.log()), node.log()
    finally:
        node.stop()
        probe.close()


@pytest.mark.parametrize('argument, text', [
    ('gait:=gallop', 'wbc_controller: gait must be one of stand_step, trot'),
    ('feet:=[LF_foot, RF_foot, LH_foot]', 'four different links are needed'),
    ('feet:=[LF_foot, RF_foot, LH_foot, tail]', "feet ['tail'] are not links of "
     'robot_description'),
    ('lift_foot:=nose', "lift_foot 'nose' is not one of the feet"),
], ids=['gait', 'three-feet', 'unknown-foot', 'lift-foot'])
def test_a_robot_it_cannot_drive_is_refused_at_start_up(ros_env, tmp_path, argument, text):
    """Refused with the reason, before any message: an unknown gait, not four feet, a foot that
    is not a link of the URDF (exit status 2, no traceback)."""
    from test_node_support import write_params
    with open(rd.bundled_urdf('quadruped')) as f:
        xml = f.read()
    pfile = write_params(str(tmp_path / 'p.yaml'), dict(robot_description=xml),
                         '/wbc_controller')
    res = subprocess.run([sys.executable, '-m', 'ros_dynamics.ros.control.wbc_node',
                          '--ros-args', '--params-file', pfile, '-p', argument],
                         env=ros_env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, res.stdout + res.stderr
    assert 'could not start: ' in res.stderr and text in res.stderr, res.stderr
    assert 'Traceback' not in res.stdout + res.stderr, res.stdout + res.stderr


def test_a_backlog_is_skipped_not_worked_through(rclpy_context, ros_env, tmp_path):
    """Pairs queued faster than it computes (all published before it can take them): the
    controller answers the newest it holds whenever it is free, so its answers are fewer than
    the periods it owes, their stamps increase, the newest pair is answered, and its
    statistics say so (answered + skipped = owed)."""
    path = rd.bundled_urdf('quadruped')
    xml = open(path).read()
    model = rd.load_urdf(path, floating_base=True)
    q = standing_quadruped(model, path).q.copy()
    v = np.zeros(model.nv)
    n_pairs = 200                                   # one per 2 ms period at 500 Hz
    msgs = [_messages(model, q, v, (10, 2_000_000 * k))[:2] for k in range(n_pairs)]
    node = NodeProcess(ros_env, str(tmp_path), 'wbcb', dict(robot_description=xml,
                                                            report_period=0.0),
                       node_name='wbc_controller', module='ros_dynamics.ros.control.wbc_node')
    probe = _Probe(rclpy_context, 'wbcb', 1000)
    last = (10, 2_000_000 * (n_pairs - 1))
    try:
        assert probe.connected(), node.log()
        for dm, tm in msgs:
            probe.pub_d.publish(dm)
            probe.pub_t.publish(tm)
        assert probe.spin_until(lambda: probe.cmds and (
            probe.cmds[-1].header.stamp.sec, probe.cmds[-1].header.stamp.nanosec) == last), \
            node.log()
        node.stop()
    finally:
        node.stop()
        probe.close()
    stamps = [c.header.stamp.sec * 10**9 + c.header.stamp.nanosec for c in probe.cmds]
    assert stamps == sorted(set(stamps)), stamps                 # increasing, none twice
    assert len(stamps) < n_pairs / 2, len(stamps)               # a backlog skipped
    m = re.search(r'owed (\d+), answered (\d+) \([\d.]+ %\), skipped (\d+)', node.log())
    assert m, node.log()
    owed, answered, skipped = (int(x) for x in m.groups())
    # owed: the pairs received in distinct periods (its subscriptions keep 100 messages: older
    # ones of the burst may be dropped before it takes them)
    assert 2 <= owed <= n_pairs and answered == len(stamps) and answered + skipped == owed, \
        m.group()


def test_serialized_messages_read_as_rclpy_deserializes_them():
    """The controller's reader of serialized Dynamics, TaskSpace and ContactForces
    (ros/control/wbc_wire.py) against rclpy's deserialization of the same bytes; bytes it cannot
    walk (another encapsulation, cut short) are left to rclpy (None)."""
    from geometry_msgs.msg import Wrench
    from rclpy.serialization import deserialize_message, serialize_message
    from ros_dynamics_msgs.msg import ContactForces, Dynamics, TaskSpace

    from ros_dynamics.ros.control import wbc_stream, wbc_wire
    path = rd.bundled_urdf('quadruped')
    model = rd.load_urdf(path, floating_base=True)
    q = standing_quadruped(model, path).q.copy()
    dm, tm, _ = _messages(model, q, 0.05 * np.sin(np.arange(model.nv)), (7, 123))
    tm.header.frame_id = 'world'                        # a string before the arrays
    cf = ContactForces(frames=FEET, in_contact=[True, False, True, True],
                       wrenches=[Wrench() for _ in FEET], unexplained=list(np.arange(18.0)))
    cf.header.stamp.sec, cf.header.stamp.nanosec = 7, 123
    for i, w in enumerate(cf.wrenches):
        w.force.x, w.force.y, w.force.z, w.torque.z = i + 0.1, -i, 2.0 * i, 5.0
    convert = {'Dynamics': lambda m: m, 'TaskSpace': wbc_stream.task_space_arrays,
               'ContactForces': wbc_stream.contact_arrays}
    for m, kind in ((dm, 'Dynamics'), (tm, 'TaskSpace'), (cf, 'ContactForces')):
        data = serialize_message(m)
        got = wbc_wire.read(kind, data)
        want = convert[kind](deserialize_message(data, type(m)))
        assert got is not None, kind
        for field in got._fields:
            a, b = getattr(got, field), getattr(want, field)
            if isinstance(a, list):
                assert a == list(b), (kind, field)
            else:
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=field)
        assert wbc_stream.header_stamp(data) == 7 * 10**9 + 123
        assert wbc_wire.read(kind, data[:len(data) // 2]) is None            # cut short
        assert wbc_wire.read(kind, bytes([0, 0]) + data[2:]) is None        # big-endian
