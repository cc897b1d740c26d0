"""dynamics_node's task space (~/task_space, ~/get_task_space, parameter task_frames) on the
floating-base quadruped with its four feet, through a running node over loopback DDS: every
field against Pinocchio (frame placements, getFrameJacobian LOCAL_WORLD_ALIGNED,
getFrameClassicalAcceleration, computeCentroidalMap, computeCentroidalMapTimeVariation) to
1e-9 relative, one message per accepted joint state with the stamp of its ~/dynamics; the
service in the requested frame order; a bad frame refused at parameter time with the reason."""
import itertools

import numpy as np
import pinocchio as pin
import pytest

from test_node_support import QUADRUPED, read, running_node, set_model_params
from test_node_floating import base_state, joints, odom

pytestmark = pytest.mark.ros

import ros_dynamics as rd  # noqa: E402
from _oracle import PinocchioOracle, rel_err  # noqa: E402

FEET = ['LF_foot', 'RF_foot', 'LH_foot', 'RH_foot']
_stamps = itertools.count(3_000_000_000_000, 1_000_000)


@pytest.fixture(scope='module')
def node(rclpy_context, ros_env, tmp_path_factory):
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from ros_dynamics_msgs.msg import TaskSpace
    tmp = str(tmp_path_factory.mktemp('ts'))
    params = {'robot_description': read(QUADRUPED), 'floating_base': True, 'task_frames': FEET,
              'log_throttle_sec': 0.0}
    with running_node(rclpy_context, ros_env, tmp, 'ts', params) as (proc, probe):
        received = []
        sub = probe.node.create_subscription(
            TaskSpace, f'{probe.prefix}/task_space', received.append,
            QoSProfile(depth=200, reliability=ReliabilityPolicy.RELIABLE))
        assert probe.spin_until(lambda: sub.get_publisher_count() >= 1
                                and probe.odom_pub.get_subscription_count() >= 1)
        probe.spin_for(0.3)
        yield proc, probe, received


def _state(msg):
    """(q, v) of the Dynamics message the task space belongs to."""
    return np.asarray(msg.position, dtype=float), np.asarray(msg.velocity, dtype=float)


def _check(ts_msg, frames, q, v):
    model = rd.load_urdf(QUADRUPED, floating_base=True)
    o = PinocchioOracle(QUADRUPED, model)
    pm = o.pm
    pd = pm.createData()
    qp, vp = o.q(q), o.v(v)
    pin.forwardKinematics(pm, pd, qp, vp, np.zeros(pm.nv))
    pin.computeJointJacobians(pm, pd, qp)
    pin.updateFramePlacements(pm, pd)
    n, k = model.nv, len(frames)
    assert list(ts_msg.frames) == frames and len(ts_msg.names) == n
    J = np.reshape(ts_msg.jacobians, (k, 6, n))
    Jdv = np.reshape(ts_msg.jacobian_dot_v, (k, 6))
    for i, name in enumerate(frames):
        fid = pm.getFrameId(name, pin.BODY)
        a = pin.getFrameClassicalAcceleration(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED)
        assert rel_err(J[i], pin.getFrameJacobian(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED)[:, o.v_index]) < 1e-9
        assert rel_err(Jdv[i], np.r_[a.linear, a.angular]) < 1e-9
        p, r = ts_msg.poses[i].position, ts_msg.poses[i].orientation
        assert rel_err([p.x, p.y, p.z], pd.oMf[fid].translation) < 1e-9
        R = pin.Quaternion(r.w, r.x, r.y, r.z).toRotationMatrix()
        assert rel_err(R, pd.oMf[fid].rotation) < 1e-9
    Ag = pin.computeCentroidalMap(pm, pm.createData(), qp)[:, o.v_index]
    dAg = pin.computeCentroidalMapTimeVariation(pm, pm.createData(), qp, vp)[:, o.v_index]
    assert rel_err(np.reshape(ts_msg.centroidal_matrix, (6, n)), Ag) < 1e-9
    assert rel_err(ts_msg.centroidal_bias, dAg @ v) < 1e-9
    d = pm.createData()
    com = pin.centerOfMass(pm, d, qp, vp)
    assert rel_err([ts_msg.com.x, ts_msg.com.y, ts_msg.com.z], com) < 1e-9
    c = ts_msg.com_velocity
    assert rel_err([c.x, c.y, c.z], d.vcom[0]) < 1e-9
    assert ts_msg.mass == pytest.approx(pin.computeTotalMass(pm), rel=1e-12)


def test_stream_matches_pinocchio_with_the_dynamics_stamp(node):
    proc, probe, received = node
    model = rd.load_urdf(QUADRUPED, floating_base=True)
    names = list(model.joint_names)
    pos, quat, lin, ang = base_state(5)
    probe.odom_pub.publish(odom(pos, quat, lin, ang))
    # odom and joint_states are separate topics: send until they are paired
    assert probe.send_until_answered(
        lambda: probe.joint_state(names, *joints(model, 99), next(_stamps))) is not None
    for seed in range(10):
        qj, vj, ej = joints(model, seed)
        s = next(_stamps)
        # odometry held: every joint state answered (by the deadline)
        dyn = probe.send_and_wait(probe.joint_state(names, qj, vj, ej, s))
        assert dyn is not None, (seed, proc.log()[-3000:])
        assert probe.spin_until(lambda: any(
            m.header.stamp.sec * 10**9 + m.header.stamp.nanosec == s for m in received))
        ts = next(m for m in received if m.header.stamp.sec * 10**9 + m.header.stamp.nanosec == s)
        assert ts.header.frame_id == dyn.header.frame_id
        assert list(ts.names) == list(dyn.names)
        _check(ts, FEET, *_state(dyn))


def test_service_in_the_requested_order(node):
    from ros_dynamics_msgs.srv import GetTaskSpace
    proc, probe, _ = node
    model = rd.load_urdf(QUADRUPED, floating_base=True)
    rng = np.random.default_rng(3)
    qj, vj = rng.uniform(-1, 1, len(model.joint_names)), rng.uniform(-1, 1, len(model.joint_names))
    pos, quat, lin, ang = base_state(7)
    req = GetTaskSpace.Request()
    req.state = probe.joint_state(model.joint_names, qj, vj)
    p, o, t = req.base_pose.position, req.base_pose.orientation, req.base_twist
    p.x, p.y, p.z = map(float, pos)
    o.x, o.y, o.z, o.w = map(float, quat)
    t.linear.x, t.linear.y, t.linear.z = map(float, lin)
    t.angular.x, t.angular.y, t.angular.z = map(float, ang)
    req.frames = ['RH_foot', 'trunk', 'LF_shank']
    resp = probe.call(GetTaskSpace, f'{probe.prefix}/get_task_space', req)
    assert resp.success, resp.message
    q = np.r_[pos, quat, qj]
    v = np.r_[lin, ang, vj]
    _check(resp.task_space, req.frames, q, v)
    req.frames = ['RH_fot']
    resp = probe.call(GetTaskSpace, f'{probe.prefix}/get_task_space', req)
    assert not resp.success and "closest: 'RH_foot'" in resp.message


def test_bad_frame_is_refused_at_parameter_time(node):
    proc, probe, _ = node
    res = set_model_params(proc, probe, task_frames=['LF_foot', 'LF_fot'])
    assert not res.successful and "'LF_fot'" in res.reason and "closest: 'LF_foot'" in res.reason
