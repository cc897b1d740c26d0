"""The one place where the whole-body controller reads the stream into numpy (no rclpy import):
a ``ros_dynamics_msgs/Dynamics`` and the ``ros_dynamics_msgs/TaskSpace`` with the same stamp ->
:class:`ros_dynamics.control.wbc.StreamState`; a ``ContactForces`` -> the feet's contact states
and forces; a serialized message's stamp, read without deserializing it (:func:`header_stamp`:
the controller's subscriptions keep the messages serialized and deserialize only the pairs it
answers).

Layouts as fixed in docs/conventions.md ("Array layouts in the messages"): ``mass_matrix``,
``coriolis_matrix`` row-major n×n, ``jacobians`` k·6·n (frame f, row r, column c at
``(f*6 + r)*n + c``), ``jacobian_dot_v`` k·6, ``centroidal_matrix`` 6·n, ``centroidal_bias`` 6.
"""

import struct

import numpy as np

from ros_dynamics.control.wbc import StreamState

__all__ = ['dynamics_arrays', 'dynamics_sizes', 'stream_state', 'task_space_msg_type',
           'contact_estimate', 'header_stamp']


def header_stamp(data):
    """The ``header.stamp`` [ns] of a serialized message whose first field is a
    ``std_msgs/Header`` (Dynamics, TaskSpace, ContactForces): the CDR encapsulation (4 bytes,
    the second one 1 for little-endian), then ``int32 sec``, ``uint32 nanosec``.  ValueError
    when ``data`` is too short."""
    if len(data) < 12:
        raise ValueError(f'a serialized message of {len(data)} bytes has no header')
    sec, nanosec = struct.unpack_from('<iI' if data[1] else '>iI', data, 4)
    return sec * 1_000_000_000 + nanosec


def task_space_msg_type():
    """``ros_dynamics_msgs.msg.TaskSpace``, or ImportError saying how to build it."""
    try:
        from ros_dynamics_msgs.msg import TaskSpace
    except ImportError as exc:
        raise ImportError('ros_dynamics_msgs is not built/installed: colcon build the '
                          'ros_dynamics_msgs package (or scripts/build_interfaces.sh in a venv) '
                          'and source its install space') from exc
    return TaskSpace


def _finite(name, a):
    if not np.all(np.isfinite(a)):
        raise ValueError(f'non-finite {name}')
    return a


def dynamics_sizes(msg):
    """ValueError when a Dynamics message's array lengths do not fit its names (checked as it
    arrives, before it waits for its TaskSpace; no array is made)."""
    n = len(msg.names)
    sizes = (len(msg.position), len(msg.velocity), len(msg.gravity), len(msg.mass_matrix),
             len(msg.coriolis_matrix))
    if sizes[1:] != (n, n, n * n, n * n) or sizes[0] < n:
        raise ValueError(f'Dynamics sizes (position {sizes[0]}, velocity {sizes[1]}, gravity '
                         f'{sizes[2]}, mass_matrix {sizes[3]}, coriolis_matrix {sizes[4]}) do '
                         f'not fit {n} names')


def contact_estimate(msg, feet):
    """({foot: in_contact}, forces (len(feet), 3) world) of a ContactForces message for the
    ``feet``; ValueError when one of them is missing or a force is not finite."""
    index = {f: i for i, f in enumerate(msg.frames)}
    missing = [f for f in feet if f not in index]
    if missing or len(msg.in_contact) != len(msg.frames) or len(msg.wrenches) != len(
            msg.frames):
        raise ValueError(f'no contact estimate for the feet {missing or feet} in '
                         f'{list(msg.frames)}')
    rows = [index[f] for f in feet]
    forces = np.array([(msg.wrenches[i].force.x, msg.wrenches[i].force.y,
                        msg.wrenches[i].force.z) for i in rows])
    _finite('contact forces', forces)
    return {f: bool(msg.in_contact[i]) for f, i in zip(feet, rows)}, forces


def dynamics_arrays(msg):
    """(names, q, v, M, C, g) of a Dynamics message; ValueError on sizes or non-finite values."""
    dynamics_sizes(msg)
    names = list(msg.names)
    n = len(names)
    q = np.asarray(msg.position, dtype=float)
    v = np.asarray(msg.velocity, dtype=float)
    g = np.asarray(msg.gravity, dtype=float)
    M = np.asarray(msg.mass_matrix, dtype=float)
    C = np.asarray(msg.coriolis_matrix, dtype=float)
    for name, a in (('position', q), ('velocity', v), ('gravity', g), ('mass_matrix', M),
                    ('coriolis_matrix', C)):
        _finite(name, a)
    return names, q, v, M.reshape(n, n), C.reshape(n, n), g


def stream_state(dyn, ts):
    """A :class:`StreamState` from ``dyn`` = :func:`dynamics_arrays` of a Dynamics message and
    the TaskSpace message ``ts`` of the same stamp; ValueError when they do not fit together."""
    names, q, v, M, C, g = dyn
    n = len(names)
    if list(ts.names) != names:
        raise ValueError('TaskSpace names differ from the Dynamics names')
    frames = list(ts.frames)
    k = len(frames)
    if len(ts.poses) != k:
        raise ValueError(f'{len(ts.poses)} poses for {k} frames')
    J = _finite('jacobians', np.asarray(ts.jacobians, dtype=float))
    Jdv = _finite('jacobian_dot_v', np.asarray(ts.jacobian_dot_v, dtype=float))
    AG = _finite('centroidal_matrix', np.asarray(ts.centroidal_matrix, dtype=float))
    AGdv = _finite('centroidal_bias', np.asarray(ts.centroidal_bias, dtype=float))
    if J.size != k * 6 * n or Jdv.size != k * 6 or AG.size != 6 * n or AGdv.size != 6:
        raise ValueError(f'TaskSpace sizes (jacobians {J.size}, jacobian_dot_v {Jdv.size}, '
                         f'centroidal_matrix {AG.size}, centroidal_bias {AGdv.size}) do not fit '
                         f'{k} frames and {n} names')
    P = _finite('poses', np.array([(p.position.x, p.position.y, p.position.z)
                                   for p in ts.poses]).reshape(k, 3))
    c, cd = ts.com, ts.com_velocity
    com = _finite('com', np.array((c.x, c.y, c.z)))
    comv = _finite('com_velocity', np.array((cd.x, cd.y, cd.z)))
    mass = float(ts.mass)
    if not mass > 0:
        raise ValueError(f'mass {mass} is not > 0')
    return StreamState(names, q, v, M, C, g, frames, P, J.reshape(k, 6, n), Jdv.reshape(k, 6),
                       mass, com, comv, AG.reshape(6, n), AGdv)
