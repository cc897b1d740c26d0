"""The dynamics node's task-space output (``~/task_space``, ``~/get_task_space``), without rclpy.

From the parameter ``task_frames`` (validated when it is set: :func:`resolve_task_frames`) and
one cycle's workspace, :class:`TaskSpaceOutput` computes the task-space terms
(:func:`ros_dynamics.task_space_after_terms`: no second kinematics pass after the cycle's
Algorithm 1) and writes them into a ``ros_dynamics_msgs/TaskSpace`` message: per frame the
pose, the Jacobian and dJ/dt v, and the mass, CoM, CoM velocity, A_G and dA_G/dt v (field
meanings: the message file and docs/conventions.md).  :class:`TaskSpaceStream` is the same
message preallocated as serialized bytes (:class:`~ros_dynamics.ros.dynamics_node.wire.Template`): a cycle
writes its numbers into them, nothing else is converted.

Coordinates: the Jacobians and A_G have one column per published coordinate (the names of
``~/dynamics``), as the coordinates' ``task_space`` gives them: in ``mimic_reduced``
coordinates v = A vbar with a constant A, so Jbar = J A, Abar_G = A_G A, and dJ/dt v,
dA_G/dt v are unchanged (Echeandia & Wensing 2021, Sec. 3.3, with Adot = 0);
``center_of_mass`` coordinates are refused (their A depends on q).
"""
from __future__ import annotations

import array

import numpy as np
from numba import njit

from ...core.api import task_frames, task_space, task_space_after_terms
from . import wire

#: what the node's output needs the configured frames to be: the reason when it cannot be made
NOT_IN_COM_COORDINATES = ('task_frames are not supported with coordinates center_of_mass (its '
                          'velocity map depends on q); use coordinates joint or mimic_reduced')


def resolve_task_frames(model, names, coordinates='joint'):
    """The parameter ``task_frames`` resolved on ``model`` (a :class:`ros_dynamics.TaskFrames`);
    ValueError with the reason (an unknown frame with the closest names, a repeated one, or
    coordinates the task space does not support)."""
    names = list(names)
    if names and coordinates == 'center_of_mass':
        raise ValueError(NOT_IN_COM_COORDINATES)
    seen = set()
    for name in names:
        if name in seen:
            raise ValueError(f'task_frames: {name!r} is listed twice')
        seen.add(name)
    try:
        return task_frames(model, names)
    except ValueError as exc:
        raise ValueError(f'task_frames: {exc}') from None


@njit(cache=True, nogil=True)
def pose_rows(rot, pos, out):
    """out[k] = (origin, unit quaternion x y z w with w >= 0) of the frames (rot (k, 3, 3), pos
    (k, 3)).  Shepperd's method (1978): each quaternion from the largest of 4w^2, 4x^2, 4y^2,
    4z^2, so that no small number is divided by or square-rooted (full precision for every
    rotation)."""
    for k in range(rot.shape[0]):
        m = rot[k]
        t0 = 1.0 + m[0, 0] + m[1, 1] + m[2, 2]                      # 4 w^2
        t1 = 1.0 + m[0, 0] - m[1, 1] - m[2, 2]                      # 4 x^2
        t2 = 1.0 - m[0, 0] + m[1, 1] - m[2, 2]                      # 4 y^2
        t3 = 1.0 - m[0, 0] - m[1, 1] + m[2, 2]                      # 4 z^2
        d21, d02, d10 = m[2, 1] - m[1, 2], m[0, 2] - m[2, 0], m[1, 0] - m[0, 1]
        s01, s02, s12 = m[0, 1] + m[1, 0], m[0, 2] + m[2, 0], m[1, 2] + m[2, 1]
        if t0 >= t1 and t0 >= t2 and t0 >= t3:
            s = 2.0 * np.sqrt(t0)                                    # 4 |w|
            x, y, z, w = d21 / s, d02 / s, d10 / s, 0.25 * s
        elif t1 >= t2 and t1 >= t3:
            s = 2.0 * np.sqrt(t1)                                    # 4 |x|
            x, y, z, w = 0.25 * s, s01 / s, s02 / s, d21 / s
        elif t2 >= t3:
            s = 2.0 * np.sqrt(t2)                                    # 4 |y|
            x, y, z, w = s01 / s, 0.25 * s, s12 / s, d02 / s
        else:
            s = 2.0 * np.sqrt(t3)                                    # 4 |z|
            x, y, z, w = s02 / s, s12 / s, 0.25 * s, d10 / s
        n = np.sqrt(x * x + y * y + z * z + w * w)
        if w < 0.0:
            n = -n
        out[k, 0], out[k, 1], out[k, 2] = pos[k, 0], pos[k, 1], pos[k, 2]
        out[k, 3], out[k, 4], out[k, 5], out[k, 6] = x / n, y / n, z / n, w / n


@njit(cache=True, nogil=True)
def _write(words, offsets, index, poses, rot, pos, centroid, J, Jdv, A_G, bias):
    """One cycle's terms into the serialized message's float64 words: the four float64 arrays
    at their word ``offsets`` (jacobians, jacobian_dot_v, centroidal_matrix, centroidal_bias),
    the poses' and the centroid's words at ``index`` (7 per frame, then mass, com,
    com_velocity); ``poses``: (k, 7) scratch.  One compiled call: per-call dispatch is what a
    few small numpy copies would cost most."""
    for o, src in ((offsets[0], J.reshape(-1)), (offsets[1], Jdv.reshape(-1)),
                   (offsets[2], A_G.reshape(-1)), (offsets[3], bias)):
        for i in range(src.shape[0]):
            words[o + i] = src[i]
    pose_rows(rot, pos, poses)
    k = poses.shape[0]
    for f in range(k):
        for j in range(7):
            words[index[7 * f + j]] = poses[f, j]
    for j in range(7):
        words[index[7 * k + j]] = centroid[j]


def rotation_to_quaternion(R):
    """Unit quaternions (x, y, z, w), w >= 0, of rotation matrices R (k, 3, 3): (k, 4)."""
    R = np.ascontiguousarray(R, dtype=float).reshape(-1, 3, 3)
    out = np.empty((len(R), 7))
    pose_rows(R, np.zeros((len(R), 3)), out)
    return out[:, 3:]


class TaskSpaceOutput:
    """The task-space terms of one model in the published coordinates (module text).

    ``coords``: the node's output coordinates (a ``ros_dynamics.Coordinates``); ``frames``:
    the parameter ``task_frames``.  ValueError with the reason if they cannot be served."""

    def __init__(self, model, coords, frames):
        self.model, self.coords = model, coords
        self.frames = resolve_task_frames(model, frames, coords.kind)
        self.names = list(coords.names)
        self.supported = coords.kind != 'center_of_mass'
        # the stream applies coords.task_space's constant A itself, into preallocated arrays
        self.A = None if coords.identity or not self.supported else coords.A
        self.enabled = self.supported and (len(self.frames) > 0 or model.floating_base)

    def after_terms(self, data):
        """The task space of the state the cycle just computed into ``data`` (its q, v)."""
        return task_space_after_terms(self.model, data, self.frames)

    def at(self, q, v, frames):
        """The task space at a requested state for requested frames (names: an unknown one
        raises ValueError with the closest names)."""
        if not self.supported:
            raise ValueError(NOT_IN_COM_COORDINATES)
        return task_space(self.model, q, v, list(frames))

    def values(self, ts):
        """{field: flat float64 array} of the message's float64 arrays, plus 'poses' (k, 7:
        position, quaternion x y z w) and 'centroid' (mass, CoM, CoM velocity)."""
        ts = self.coords.task_space(None, None, None, ts)       # the published columns
        poses = np.empty((len(ts.frames), 7))
        pose_rows(ts.rotations, ts.positions, poses)
        return {'jacobians': ts.jacobians.reshape(-1),
                'jacobian_dot_v': ts.jacobian_dot_v.reshape(-1),
                'centroidal_matrix': ts.centroidal_matrix.reshape(-1),
                'centroidal_bias': ts.centroidal_bias.copy(),
                'poses': poses, 'centroid': ts.centroid.copy()}

    def fields(self, ts, pose_type, point_type, vector3_type):
        """{field: value} of a TaskSpace message (header excepted) for ``ts``: what a service
        response sets (geometry_msgs Pose, Point and Vector3 types given by the caller).
        ValueError if a value is not finite."""
        vals = self.values(ts)
        if not all(np.isfinite(a).all() for a in vals.values()):
            raise ValueError('non-finite task-space terms at this state')
        poses = []
        for row in vals['poses']:
            p = pose_type()
            p.position.x, p.position.y, p.position.z = (float(x) for x in row[:3])
            (p.orientation.x, p.orientation.y, p.orientation.z,
             p.orientation.w) = (float(x) for x in row[3:])
            poses.append(p)
        c = [float(x) for x in vals['centroid']]
        out = {'names': list(self.names), 'frames': list(ts.frames), 'poses': poses,
               'mass': c[0], 'com': point_type(x=c[1], y=c[2], z=c[3]),
               'com_velocity': vector3_type(x=c[4], y=c[5], z=c[6])}
        for field in ('jacobians', 'jacobian_dot_v', 'centroidal_matrix', 'centroidal_bias'):
            out[field] = array.array('d', vals[field])
        return out

    def fill(self, msg, ts, pose_type):
        """Write ``ts`` into the TaskSpace message object ``msg`` (header left to the caller)."""
        for name, value in self.fields(ts, pose_type, type(msg.com),
                                       type(msg.com_velocity)).items():
            setattr(msg, name, value)
        return msg


class TaskSpaceStream:
    """``~/task_space`` of one model preallocated: :meth:`write` a cycle's terms, then
    :meth:`message` (serialized bytes in the node's usual format, or the message object where
    the middleware's serialization is not plain CDR).

    ``msg``: an empty ``ros_dynamics_msgs/TaskSpace``; ``serialize``:
    ``rclpy.serialization.serialize_message``; ``pose_type``: geometry_msgs/Pose."""

    def __init__(self, output, msg, serialize, pose_type, frame_id):
        self.output, self.msg, self.pose_type = output, msg, pose_type
        k, n = len(output.frames), len(output.names)
        msg.header.frame_id = frame_id
        msg.names, msg.frames = list(output.names), list(output.frames.names)
        sizes = {'jacobians': 6 * k * n, 'jacobian_dot_v': 6 * k, 'centroidal_matrix': 6 * n,
                 'centroidal_bias': 6}
        for field, size in sizes.items():
            setattr(msg, field, array.array('d', bytes(8 * size)))
        # Sentinels in the poses and centroid words, found again in the serialized payload:
        # their float64 word offsets there (CDR aligns every float64 to 8 bytes).
        marks = -np.arange(1, 7 * k + 8, dtype=float) * 1.0e-300
        msg.poses = [pose_type() for _ in range(k)]
        for i, p in enumerate(msg.poses):
            (p.position.x, p.position.y, p.position.z, p.orientation.x, p.orientation.y,
             p.orientation.z, p.orientation.w) = marks[7 * i:7 * i + 7]
        msg.mass = marks[7 * k]
        msg.com.x, msg.com.y, msg.com.z = marks[7 * k + 1:7 * k + 4]
        msg.com_velocity.x, msg.com_velocity.y, msg.com_velocity.z = marks[7 * k + 4:]
        try:
            self.template = wire.Template(msg, serialize)
        except ValueError:
            self.template = None
            return
        words = self.template.payload
        found = [np.flatnonzero(words == x) for x in marks]
        if any(len(f) != 1 for f in found):     # each sentinel exactly once, else the message
            self.template = None                # object is published
            return
        index = np.array([f[0] for f in found], dtype=np.int64)
        words[index] = 0.0
        self.index, self.poses = index, np.zeros((k, 7))
        o = self.template.offsets
        self.offsets = np.array([o['jacobians'], o['jacobian_dot_v'], o['centroidal_matrix'],
                                 o['centroidal_bias']], dtype=np.int64)
        if output.A is not None:        # mimic_reduced: the columns J A, A_G A (k, 6, nbar)
            self.J, self.A_G = np.zeros((k, 6, n)), np.zeros((6, n))

    def write(self, ts):
        """Write one cycle's :class:`ros_dynamics.TaskSpace` into the message."""
        if self.template is None:
            self.output.fill(self.msg, ts, self.pose_type)
            return
        J, A_G, A = ts.jacobians, ts.centroidal_matrix, self.output.A
        if A is not None:
            J, A_G = np.matmul(J, A, out=self.J), np.matmul(A_G, A, out=self.A_G)
        _write(self.template.payload, self.offsets, self.index, self.poses, ts.rotations,
               ts.positions, ts.centroid, J, ts.jacobian_dot_v, A_G, ts.centroidal_bias)

    def message(self, stamp):
        """The message stamped ``stamp`` ((sec, nanosec)) with the terms last written."""
        return wire.stamped(self.template, self.msg, stamp)
