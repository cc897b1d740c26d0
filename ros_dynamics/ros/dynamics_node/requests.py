"""What the dynamics node answers requests from, one model's worth: the latest accepted state
(the services' default) and the recorded joint states of ``~/estimate_payload`` (both kept by
the compiled cycle, read here), and the parsing of a service request's state and of a
``~/commanded_torque`` under the input policy of ``joint_states``
(:mod:`~ros_dynamics.estimation.joint_input`: the same name maps, layout check and bounds).
"""
from __future__ import annotations

import numpy as np

from ...core.configuration import base_nq, base_nv, is_normalized, normalize, set_free_joint
from ...core.validation import close_names
from ...estimation.joint_input import JointNameMap, NameMaps, layout_error
from ...identification.samples import Samples


class Requests:
    """One model's requests (module text); ``names``: the joint-coordinate names of the
    recorded samples; ``cycle``: the model's
    :class:`~ros_dynamics.estimation.cycle.JointStateCycle`, whose data keeps the latest state
    and the recent samples (the compiled cycle writes them)."""

    def __init__(self, model, names, cycle):
        self.model, self.names, self.cycle = model, list(names), cycle
        self.joint_names = list(model.joint_names)
        self.nq, self.nv = int(model.nq), int(model.nv)

    def configure(self, bounds, mimic, hint):
        """The input bounds, mimic relation and missing-joint hint of the input settings."""
        self.bounds, self.mimic, self.hint = bounds, mimic, hint
        self._commands = NameMaps(self.joint_names, mimic, hint)

    @property
    def latest(self):
        """(q, v, (sec, nanosec)) of the latest cycle, for the services; None before it."""
        return self.cycle.latest()

    def recorded(self, window=0.0):
        """The recorded joint states of the last ``window`` s (0: all), oldest first: one per
        10 ms of the cycles with the observer's torque, the last 20 s."""
        return Samples(*self.cycle.history(window), self.names)

    # ------------------------------------------------------------------ parsing
    def command(self, names, effort):
        """The joint torques (nj,) of a ~/commanded_torque, or (kind, reason) if refused."""
        nmap = self._commands(names)
        if nmap.error is not None or len(effort) != len(names):
            return 'cmd_layout', '~/commanded_torque rejected: ' + (
                nmap.error or f'{len(effort)} efforts for {len(names)} names')
        tau = np.empty(len(self.joint_names))
        nmap.efforts(np.asarray(effort, dtype=float), tau)
        if not (np.abs(tau) <= self.bounds.effort).all():
            return 'cmd_bound', ('~/commanded_torque rejected: non-finite effort or beyond the '
                                 'effort limit (input_limit_factor x URDF limit)')
        return tau

    def state(self, names, position, velocity, base_pose=None, base_twist=None,
              with_velocity=True):
        """(q, v) of a service request's state under the input policy of joint_states;
        ValueError with the reason."""
        nmap = JointNameMap(names, self.joint_names, self.mimic, self.hint)
        if nmap.unknown:
            raise ValueError('unknown joint(s) ' + ', '.join(
                f'{j!r}{close_names(j, self.joint_names, "joints")}' for j in nmap.unknown))
        if nmap.error is not None:
            raise ValueError(nmap.error)
        bad = layout_error(len(names), len(position), len(velocity) if with_velocity else 0,
                           0, True)
        if bad is not None:
            raise ValueError(bad[1] + (' (give none for zero velocity)'
                                       if bad[0] == 'velocities' else ''))
        q, v = np.zeros(self.nq), np.zeros(self.nv)
        qj, vj = q[base_nq(self.model):], v[base_nv(self.model):]
        nmap.positions(np.asarray(position, dtype=float), qj)
        if with_velocity and len(velocity):
            nmap.rates(np.asarray(velocity, dtype=float), vj)
        bad = self.bounds.violation(qj, vj)
        if bad is not None:
            raise ValueError(bad[1])
        if self.model.floating_base:
            p, o, t = base_pose.position, base_pose.orientation, base_twist
            set_free_joint(q, v, (p.x, p.y, p.z), (o.x, o.y, o.z, o.w), *(
                ((t.linear.x, t.linear.y, t.linear.z), (t.angular.x, t.angular.y, t.angular.z))
                if with_velocity else ()))
            if not (np.abs(q[:3]) <= self.bounds.position).all() or not np.isfinite(v).all():
                raise ValueError('NaN, inf or out-of-bounds value in the base pose or twist')
            if not is_normalized(self.model, q):   # the core's tolerance, as for odom
                raise ValueError('base_pose orientation is not a unit quaternion')
            q = normalize(self.model, q)
        return q, v
