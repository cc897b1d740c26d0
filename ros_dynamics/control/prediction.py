"""The stream state carried forward over a known delay (plain numpy, no ROS): a command computed
from the state measured at t acts on the robot from t + Δ (the sensing, the dynamics node, the
transport, the computation; Δ is the age the controller measures), so the controller's errors
should be those of the robot then.  As in a Smith predictor (Smith 1957, "Closer control of
loops with dead time"), the delay is taken out of the loop by a model of it: here the
first-order motion at the measured velocities,

    p ← p + Δ R v_lin,   R ← R exp(Δ [ω]×),   q_j ← q_j + Δ q̇_j,
    c ← c + Δ ċ,          x_f ← x_f + Δ J_f,lin v,

velocities, M, C, g, the Jacobians and J̇ v kept (they change little over tens of
milliseconds).  :func:`predicted` returns such a copy; nothing else of the state is touched.
"""
import math
from dataclasses import replace

import numpy as np

from .wbc import quaternion_matrix

__all__ = ['predicted']


def _quaternion_times_rotation(quat, w, dt):
    """The unit quaternion (x, y, z, w) of R exp(dt [w]×), ``w`` in the body frame."""
    angle = float(np.linalg.norm(w)) * dt
    if angle < 1e-12:
        return np.asarray(quat, dtype=float).copy()
    axis = np.asarray(w, dtype=float) / np.linalg.norm(w)
    s, c = math.sin(angle / 2), math.cos(angle / 2)
    bx, by, bz, bw = axis[0] * s, axis[1] * s, axis[2] * s, c
    x, y, z, qw = (float(v) for v in quat)
    out = np.array([qw * bx + x * bw + y * bz - z * by, qw * by - x * bz + y * bw + z * bx,
                    qw * bz + x * by - y * bx + z * bw, qw * bw - x * bx - y * by - z * bz])
    return out / np.linalg.norm(out)


def predicted(state, ahead):
    """``state`` (:class:`~ros_dynamics.control.wbc.StreamState`, a floating base first)
    carried ``ahead`` seconds forward (module docstring); ``state`` itself when ``ahead`` is 0."""
    if not ahead > 0:
        return state
    q, v = state.q.copy(), state.v
    R = quaternion_matrix(q[3:7])
    q[:3] += ahead * (R @ v[:3])
    q[3:7] = _quaternion_times_rotation(q[3:7], v[3:6], ahead)
    q[7:] += ahead * v[6:]
    feet = state.positions + ahead * np.einsum('kij,j->ki', state.jacobians[:, :3], v)
    return replace(state, q=q, com=state.com + ahead * state.com_velocity, positions=feet)
