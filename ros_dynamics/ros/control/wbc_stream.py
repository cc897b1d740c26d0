"""The one place where the whole-body controller reads the stream into numpy (no rclpy import):
a ``ros_dynamics_msgs/Dynamics`` and the ``ros_dynamics_msgs/TaskSpace`` with the same stamp ->
:class:`ros_dynamics.control.wbc.StreamState`.

Layouts as fixed in docs/conventions.md ("Array layouts in the messages"): ``mass_matrix``,
``coriolis_matrix`` row-major n×n, ``jacobians`` k·6·n (frame f, row r, column c at
``(f*6 + r)*n + c``), ``jacobian_dot_v`` k·6, ``centroidal_matrix`` 6·n, ``centroidal_bias`` 6.
"""

import numpy as np

from ros_dynamics.control.wbc import StreamState

__all__ = ['dynamics_arrays', 'stream_state', 'task_space_msg_type']


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


def dynamics_arrays(msg):
    """(names, q, v, M, C, g) of a Dynamics message; ValueError on sizes or non-finite values."""
    names = list(msg.names)
    n = len(names)
    q = np.asarray(msg.position, dtype=float)
    v = np.asarray(msg.velocity, dtype=float)
    g = np.asarray(msg.gravity, dtype=float)
    M = np.asarray(msg.mass_matrix, dtype=float)
    C = np.asarray(msg.coriolis_matrix, dtype=float)
    if v.size != n or g.size != n or M.size != n * n or C.size != n * n or q.size < n:
        raise ValueError(f'Dynamics sizes (position {q.size}, velocity {v.size}, gravity '
                         f'{g.size}, mass_matrix {M.size}, coriolis_matrix {C.size}) do not '
                         f'fit {n} names')
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
