"""The one place where the tracking controller reads ROS messages into numpy (no rclpy import):
``ros_dynamics_msgs/Dynamics`` -> :class:`Terms`, ``sensor_msgs/JointState`` -> joint arrays in
a fixed joint order, stamps -> integer nanoseconds.

Field meanings as fixed in docs/conventions.md (``Dynamics``: ``header.stamp`` copied from the joint
state, ``names`` the nv coordinates, ``mass_matrix`` / ``coriolis_matrix`` / ``mass_matrix_dot``
row-major nv*nv, ``gravity`` nv).  Fixed-base robots only (the controller is joint-space).
"""

from collections import namedtuple

import numpy as np

__all__ = ['Terms', 'stamp_ns', 'terms_from_msg', 'dynamics_msg_type']

Terms = namedtuple('Terms', 'names q v M C Mdot g')


def stamp_ns(stamp):
    """``builtin_interfaces/Time`` -> integer nanoseconds (the pairing key)."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def dynamics_msg_type():
    """``ros_dynamics_msgs.msg.Dynamics``, or ImportError saying how to build it."""
    try:
        from ros_dynamics_msgs.msg import Dynamics
    except ImportError as exc:
        raise ImportError('ros_dynamics_msgs is not built/installed: colcon build the '
                          'ros_dynamics_msgs package (or scripts/build_interfaces.sh in a venv) '
                          'and source its install space') from exc
    return Dynamics


def terms_from_msg(msg, order=None):
    """A :class:`Terms` from a Dynamics message; ``order`` (an index array from
    :attr:`ros_dynamics.estimation.joint_input.JointNameMap.index` of ``msg.names``) permutes everything into the controller's joint
    order.  Raises ValueError on wrong sizes, a floating base or non-finite values."""
    names = list(msg.names)
    n = len(names)
    if any(x.startswith('floating_base/') for x in names):
        raise ValueError('floating-base dynamics: the tracking controller is joint-space only')
    q = np.asarray(msg.position, dtype=float)
    v = np.asarray(msg.velocity, dtype=float)
    g = np.asarray(msg.gravity, dtype=float)
    mats = []
    for field in ('mass_matrix', 'coriolis_matrix', 'mass_matrix_dot'):
        a = np.asarray(getattr(msg, field), dtype=float)
        if a.size != n * n:
            raise ValueError(f'{field} has {a.size} entries for {n} names')
        mats.append(a.reshape(n, n))
    if q.size != n or v.size != n or g.size != n:
        raise ValueError(f'position/velocity/gravity sizes {q.size}/{v.size}/{g.size} '
                         f'for {n} names')
    arrays = (q, v, g, *mats)
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError('non-finite dynamics terms')
    M, C, Mdot = mats
    if order is not None:
        ix = np.ix_(order, order)
        q, v, g, M, C, Mdot = q[order], v[order], g[order], M[ix], C[ix], Mdot[ix]
        names = [names[i] for i in order]
    return Terms(names, q, v, M, C, Mdot, g)
