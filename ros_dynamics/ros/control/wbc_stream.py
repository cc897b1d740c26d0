"""The one place where the whole-body controller reads the stream into numpy (no rclpy import):
a ``ros_dynamics_msgs/Dynamics`` and the ``ros_dynamics_msgs/TaskSpace`` with the same stamp ->
:class:`ros_dynamics.control.wbc.StreamState`; a ``ContactForces`` -> the feet's contact states
and forces; a serialized message's stamp (:func:`header_stamp`).  The controller's
subscriptions keep the messages serialized; :func:`read_serialized` reads the pairs it answers
(:mod:`.wbc_wire`, rclpy's deserialization where that cannot), the checks here apply to both.

Layouts as fixed in docs/conventions.md ("Array layouts in the messages"): ``mass_matrix``,
``coriolis_matrix`` row-major n×n, ``jacobians`` k·6·n (frame f, row r, column c at
``(f*6 + r)*n + c``), ``jacobian_dot_v`` k·6, ``centroidal_matrix`` 6·n, ``centroidal_bias`` 6.
"""

import struct

import numpy as np

from ros_dynamics.control.wbc import StreamState

from . import wbc_wire

__all__ = ['dynamics_arrays', 'dynamics_sizes', 'stream_state', 'task_space_msg_type',
           'contact_estimate', 'header_stamp', 'task_space_arrays', 'contact_arrays',
           'read_serialized']


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


def read_serialized(kind, data, msg_type):
    """The arrays of a serialized message: ``kind`` 'Dynamics' (fields as the message's),
    'TaskSpace' (:data:`~.wbc_wire.TaskSpaceArrays`) or 'ContactForces'
    (:data:`~.wbc_wire.ContactArrays`); read from the bytes (:func:`.wbc_wire.read`), else
    deserialized by rclpy (``msg_type``) and converted."""
    out = wbc_wire.read(kind, data)
    if out is not None:
        return out
    from rclpy.serialization import deserialize_message
    msg = deserialize_message(data, msg_type)
    return {'Dynamics': lambda m: m, 'TaskSpace': task_space_arrays,
            'ContactForces': contact_arrays}[kind](msg)


def task_space_arrays(msg):
    """A TaskSpace message as :data:`~.wbc_wire.TaskSpaceArrays`."""
    P = np.array([(p.position.x, p.position.y, p.position.z) for p in msg.poses],
                 dtype=float).reshape(len(msg.poses), 3)
    c, cd = msg.com, msg.com_velocity
    return wbc_wire.TaskSpaceArrays(
        list(msg.names), list(msg.frames), P, np.asarray(msg.jacobians, dtype=float),
        np.asarray(msg.jacobian_dot_v, dtype=float), float(msg.mass),
        np.array((c.x, c.y, c.z)), np.array((cd.x, cd.y, cd.z)),
        np.asarray(msg.centroidal_matrix, dtype=float),
        np.asarray(msg.centroidal_bias, dtype=float))


def contact_arrays(msg):
    """A ContactForces message as :data:`~.wbc_wire.ContactArrays`."""
    return wbc_wire.ContactArrays(
        list(msg.frames), np.array(msg.in_contact, dtype=bool),
        np.array([(w.force.x, w.force.y, w.force.z) for w in msg.wrenches],
                 dtype=float).reshape(len(msg.wrenches), 3))


def contact_estimate(ca, feet):
    """({foot: in_contact}, forces (len(feet), 3) world) of the ``feet`` from
    :data:`~.wbc_wire.ContactArrays`; ValueError when one is missing or a force not finite."""
    index = {f: i for i, f in enumerate(ca.frames)}
    missing = [f for f in feet if f not in index]
    k = len(ca.frames)
    if missing or len(ca.in_contact) != k or len(ca.forces) != k:
        raise ValueError(f'no contact estimate for the feet {missing or feet} in '
                         f'{list(ca.frames)}')
    rows = [index[f] for f in feet]
    forces = _finite('contact forces', np.array(ca.forces[rows], dtype=float))
    return {f: bool(ca.in_contact[i]) for f, i in zip(feet, rows)}, forces


def dynamics_arrays(msg):
    """(names, q, v, M, C, g) of a Dynamics message (or :data:`~.wbc_wire.DynamicsArrays`);
    ValueError on sizes or non-finite values."""
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
    ``ts`` the :data:`~.wbc_wire.TaskSpaceArrays` of the TaskSpace of the same stamp (or the
    message); ValueError when they do not fit together."""
    if not isinstance(ts, wbc_wire.TaskSpaceArrays):
        ts = task_space_arrays(ts)
    names, q, v, M, C, g = dyn
    n = len(names)
    if list(ts.names) != names:
        raise ValueError('TaskSpace names differ from the Dynamics names')
    frames = list(ts.frames)
    k = len(frames)
    if len(ts.positions) != k:
        raise ValueError(f'{len(ts.positions)} poses for {k} frames')
    J = _finite('jacobians', np.asarray(ts.jacobians, dtype=float))
    Jdv = _finite('jacobian_dot_v', np.asarray(ts.jacobian_dot_v, dtype=float))
    AG = _finite('centroidal_matrix', np.asarray(ts.centroidal_matrix, dtype=float))
    AGdv = _finite('centroidal_bias', np.asarray(ts.centroidal_bias, dtype=float))
    if J.size != k * 6 * n or Jdv.size != k * 6 or AG.size != 6 * n or AGdv.size != 6:
        raise ValueError(f'TaskSpace sizes (jacobians {J.size}, jacobian_dot_v {Jdv.size}, '
                         f'centroidal_matrix {AG.size}, centroidal_bias {AGdv.size}) do not fit '
                         f'{k} frames and {n} names')
    P = _finite('poses', np.asarray(ts.positions, dtype=float))
    com = _finite('com', np.asarray(ts.com, dtype=float))
    comv = _finite('com_velocity', np.asarray(ts.com_velocity, dtype=float))
    mass = float(ts.mass)
    if not mass > 0:
        raise ValueError(f'mass {mass} is not > 0')
    return StreamState(names, q, v, M, C, g, frames, P, J.reshape(k, 6, n), Jdv.reshape(k, 6),
                       mass, com, comv, AG.reshape(6, n), AGdv)
