"""The node's task-space output without a node (ros_dynamics.ros.dynamics_node.task_space_output): the
parameter task_frames resolved with the reason on a bad frame; quaternions of the frame poses
against Pinocchio's; mimic_reduced columns against finite differences of the configuration
map; the preallocated serialized ~/task_space (written in place) deserializes to what the core
computed, field by field, for a floating-base quadruped and a fixed-base arm."""
import os

import numpy as np
import pinocchio as pin
import pytest

import ros_dynamics as rd
from _oracle import random_state, rel_err

pytestmark = pytest.mark.ros

from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from geometry_msgs.msg import Pose  # noqa: E402
from ros_dynamics_msgs.msg import TaskSpace  # noqa: E402
from ros_dynamics_msgs.srv import GetTaskSpace  # noqa: E402

from ros_dynamics.ros.dynamics_node.task_space_output import (TaskSpaceOutput, TaskSpaceStream,  # noqa: E402
                                                resolve_task_frames, rotation_to_quaternion)

GRIPPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures', 'urdf',
                       'gripper_mimic.urdf')
FEET = ['LF_foot', 'RF_foot', 'LH_foot', 'RH_foot']


def _quadruped():
    return rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)


def test_task_frames_are_refused_with_the_reason():
    model = _quadruped()
    assert resolve_task_frames(model, FEET).names == tuple(FEET)
    with pytest.raises(ValueError, match=r"task_frames: unknown link 'LF_feet'.*closest: 'LF_foot'"):
        resolve_task_frames(model, ['LF_feet'])
    with pytest.raises(ValueError, match="'RF_foot' is listed twice"):
        resolve_task_frames(model, ['RF_foot', 'RF_foot'])
    with pytest.raises(ValueError, match='center_of_mass'):
        resolve_task_frames(model, FEET, 'center_of_mass')
    com = rd.output_coordinates(model, 'center_of_mass')
    assert not TaskSpaceOutput(model, com, []).enabled
    assert TaskSpaceOutput(model, rd.output_coordinates(model, 'joint'), []).enabled
    arm = rd.load_urdf(rd.bundled_urdf('arm7'))
    assert not TaskSpaceOutput(arm, rd.output_coordinates(arm, 'joint'), []).enabled


def test_quaternions_match_pinocchio():
    rng = np.random.default_rng(0)
    quats = rng.normal(size=(200, 4))
    quats /= np.linalg.norm(quats, axis=1, keepdims=True)
    quats[:4] = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]   # 180 deg and identity
    R = np.array([pin.Quaternion(q[3], q[0], q[1], q[2]).toRotationMatrix() for q in quats])
    ours = rotation_to_quaternion(R)
    expected = np.where(quats[:, 3:4] < 0, -quats, quats)
    w0 = np.abs(quats[:, 3]) < 1e-12                       # q and -q: both right
    assert np.abs(ours[~w0] - expected[~w0]).max() < 1e-14
    assert np.minimum(np.abs(ours[w0] - quats[w0]).max(1), np.abs(ours[w0] + quats[w0]).max(1)).max() < 1e-14


def test_mimic_reduced_columns():
    """Jbar = J A: the frame velocity is Jbar vbar for v = A vbar (A from finite differences of
    the configuration map qbar -> q), and dJbar/dt vbar = dJ/dt v along the constrained motion."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', rd.URDFWarning)
        model = rd.load_urdf(GRIPPER)
    oc = rd.output_coordinates(model, 'mimic_reduced')
    assert oc.nv < model.nv
    frames = [name for name in model.frame_names if name != model.root_link][-2:]
    out = TaskSpaceOutput(model, oc, frames)
    rng = np.random.default_rng(4)
    qbar, vbar = rng.uniform(-0.5, 0.5, oc.nq), rng.uniform(-1, 1, oc.nv)
    q, v = oc.full_state(qbar, vbar)
    vals = out.values(rd.task_space(model, q, v, frames))
    Jbar = vals['jacobians'].reshape(len(frames), 6, oc.nv)
    h = 1e-6
    fwd = rd.task_space(model, oc.q(qbar + h * vbar), v, frames)
    bwd = rd.task_space(model, oc.q(qbar - h * vbar), v, frames)
    vel = (fwd.positions - bwd.positions) / (2 * h)
    assert rel_err(Jbar[:, :3] @ vbar, vel) < 1e-7
    Jdv = ((fwd.jacobians - bwd.jacobians) @ v) / (2 * h)
    assert rel_err(vals['jacobian_dot_v'].reshape(-1, 6), Jdv) < 1e-7
    Abar = vals['centroidal_matrix'].reshape(6, oc.nv)
    assert rel_err(Abar[:3] @ vbar, vals['centroid'][0] * vals['centroid'][4:7]) < 1e-12


@pytest.mark.parametrize('robot, floating, frames, kind', [
    ('quadruped', True, FEET, 'joint'), ('arm7', False, ['tool', 'arm_link_3'], 'joint'),
    (GRIPPER, True, None, 'mimic_reduced')])
def test_stream_message_deserializes_to_the_terms(robot, floating, frames, kind):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', rd.URDFWarning)
        model = rd.load_urdf(robot if os.path.isfile(robot) else rd.bundled_urdf(robot),
                             floating_base=floating)
    frames = frames or model.frame_names[-3:]
    coords = rd.output_coordinates(model, kind)
    out = TaskSpaceOutput(model, coords, frames)
    stream = TaskSpaceStream(out, TaskSpace(), serialize_message, Pose, 'world')
    assert stream.template is not None                      # the serialized path is exercised
    data = rd.Data(model)
    rng = np.random.default_rng(9)
    for trial in range(3):
        q, v, _ = random_state(model, rng)
        rd.compute_all_terms(model, q, v, data)
        ts = out.after_terms(data)
        stream.write(ts)
        msg = deserialize_message(stream.message((12, 345 + trial)), TaskSpace)
        ref = rd.task_space(model, q, v, frames)
        A = np.eye(model.nv) if kind == 'joint' else coords.A       # v = A vbar
        n, k = coords.nv, len(frames)
        assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (12, 345 + trial)
        assert msg.header.frame_id == 'world'
        assert list(msg.names) == list(coords.names) and list(msg.frames) == frames
        np.testing.assert_allclose(np.reshape(msg.jacobians, (k, 6, n)), ref.jacobians @ A,
                                   atol=1e-12)
        np.testing.assert_allclose(np.reshape(msg.jacobian_dot_v, (k, 6)), ref.jacobian_dot_v,
                                   atol=1e-12)
        np.testing.assert_allclose(np.reshape(msg.centroidal_matrix, (6, n)),
                                   ref.centroidal_matrix @ A, atol=1e-12)
        np.testing.assert_allclose(msg.centroidal_bias, ref.centroidal_bias, atol=1e-12)
        assert msg.mass == pytest.approx(model.total_mass() if floating else ref.mass, rel=1e-12)
        np.testing.assert_allclose([msg.com.x, msg.com.y, msg.com.z], ref.com, atol=1e-12)
        np.testing.assert_allclose([msg.com_velocity.x, msg.com_velocity.y, msg.com_velocity.z],
                                   ref.com_velocity, atol=1e-12)
        for i, pose in enumerate(msg.poses):
            p, o = pose.position, pose.orientation
            np.testing.assert_allclose([p.x, p.y, p.z], ref.positions[i], atol=1e-12)
            R = pin.Quaternion(o.w, o.x, o.y, o.z).toRotationMatrix()
            np.testing.assert_allclose(R, ref.rotations[i], atol=1e-12)
        # the object path (service responses) gives the same message
        obj = out.fill(GetTaskSpace.Response().task_space, ts, Pose)
        assert list(obj.jacobians) == list(msg.jacobians) and obj.poses == msg.poses
        assert obj.mass == msg.mass and obj.com == msg.com


def test_service_fields_in_the_requested_order():
    """~/get_task_space's path: frames in the request's order at a requested state, every field
    as the core computes it; an unknown frame gives the reason with the closest names."""
    from geometry_msgs.msg import Point, Vector3
    model = _quadruped()
    out = TaskSpaceOutput(model, rd.output_coordinates(model, 'joint'), FEET)
    rng = np.random.default_rng(11)
    q, v, _ = random_state(model, rng)
    order = ['RH_foot', 'trunk', 'LF_foot']
    fields = out.fields(out.at(q, v, order), Pose, Point, Vector3)
    ref = rd.task_space(model, q, v, order)
    assert fields['frames'] == order and fields['names'] == list(out.names)
    np.testing.assert_allclose(np.reshape(fields['jacobians'], (3, 6, model.nv)), ref.jacobians,
                               atol=1e-12)
    assert fields['mass'] == pytest.approx(ref.mass)
    np.testing.assert_allclose([fields['com'].x, fields['com'].y, fields['com'].z], ref.com,
                               atol=1e-12)
    np.testing.assert_allclose([p.position.z for p in fields['poses']], ref.positions[:, 2],
                               atol=1e-12)
    with pytest.raises(ValueError, match=r"'RH_fot'.*closest: 'RH_foot'"):
        out.at(q, v, ['RH_fot'])
