"""The coordinates ``dynamics_node`` publishes in (parameter ``coordinates``).

The node computes every term in the model's own coordinates (joint coordinates, plus the
free-flyer block of a floating base) at the full state (q, v) it received.  One
:class:`OutputCoordinates` object, built with the model, maps those results -- M, C, dM/dt, g
and Gamma -- to the chosen coordinates with the core library's coordinate changes (seed 000,
Sec. 3.3: Mbar = A^T M A, Cbar = A^T C A + A^T M Adot, gbar = A^T g, Theorem 1: Cbar stays
Christoffel-consistent, Mbar_dot = Cbar + Cbar^T).  The published ``position`` / ``velocity``
are then the new coordinates' qbar / vbar, and ``names`` their names, in the order of every
array:

``joint``           the model's coordinates, unchanged (no work per cycle):
                    names = [floating_base/linear_x..z, floating_base/angular_x..z,] joints;
                    position = q, velocity = v (base twist in the base frame, linear first).
``mimic_reduced``   the independent coordinates only (rd.MimicCoordinates): the mimic joints
                    (q_m = k q_leader + offset, chains resolved) are dropped;
                    names = [floating_base/*,] the independent joints in model order;
                    position / velocity = the independent entries of q / v.  A is constant
                    (Adot = 0), so Gamma maps as Gammabar_ijk = A_ai A_bj A_ck Gamma_abc.
                    Without mimic joints this is ``joint`` (and costs nothing).
``center_of_mass``  floating base only (rd.CenterOfMassCoordinates, seed 000, Remark 6):
                    names = [center_of_mass/x..z, floating_base/angular_x..z,] joints;
                    position = [CoM position in the world frame (3), base quaternion x y z w (4),
                    joint positions]; velocity = [CoM velocity in the world frame (3), base
                    angular velocity in the base frame (3), joint rates].  M becomes
                    block-diagonal [m 1_3, 0; 0, M22] and the CoM rows/columns of C, dM/dt and
                    Gamma vanish; g's CoM entries are -m * gravity.

The cycle calls :meth:`OutputCoordinates.apply` once; the services call the same methods.
"""
from __future__ import annotations

from collections import namedtuple

import ros_dynamics as rd

COORDINATES = ('joint', 'mimic_reduced', 'center_of_mass')

#: one cycle's results in the published coordinates: qbar (nq_bar,), vbar (nv_bar,), terms (an
#: object with M, C, Mdot, g), Gammabar (nv_bar, nv_bar, nv_bar) or None
Output = namedtuple('Output', 'q v d gamma')


class OutputCoordinates:
    """Maps results in the model's coordinates to the published ones (see the module text).

    ``names`` (nv_bar), ``nq`` / ``nv`` (sizes of position / velocity), ``identity`` (True for
    ``joint``, and for ``mimic_reduced`` without mimic joints: the inputs are returned as they
    are).
    """

    def __init__(self, model, kind, base_names):
        if kind not in COORDINATES:
            raise ValueError(f'coordinates must be one of {COORDINATES}, got {kind!r}')
        self.kind = kind
        self.identity = kind == 'joint'
        floating = bool(model.floating_base)
        if kind == 'center_of_mass':
            if not floating:
                raise ValueError("coordinates 'center_of_mass' need a floating base "
                                 '(set floating_base: true)')
            self.co = rd.CenterOfMassCoordinates(model)
        elif kind == 'mimic_reduced':
            self.co = rd.MimicCoordinates(model)
            if self.co.nv == model.nv:      # no mimic joints: the joint coordinates, no work
                self.co, self.identity = None, True
        else:
            self.co = None
        base = list(base_names) if floating else []
        if self.co is not None and self.co.base_names is not None:
            base = list(self.co.base_names)
        joints = list(model.joint_names) if self.co is None else list(self.co.joint_names)
        self.names = base + joints
        self.nv = len(self.names)
        self.nq = self.nv + (1 if floating else 0)   # the base quaternion: 4 entries, 3 rates
        self.model = model

    def state(self, q, v, M=None):
        """(qbar, vbar) of the full state (``M``: the mass matrix at q, if at hand)."""
        if self.identity:
            return q, v
        if self.kind == 'center_of_mass':
            return self.co.state(q, v, M=M)
        return self.co.state(q, v)

    def dynamics(self, q, v, d):
        """Mbar, Cbar, Mbar_dot, gbar from ``d`` (M, C, Mdot, g at (q, v))."""
        if self.identity:
            return d
        if self.kind == 'center_of_mass':
            return self.co.dynamics(q, v, d=d)
        return self.co.reduce(d)

    def christoffel(self, q, Gamma, M=None):
        """Gammabar from Gamma at q (``M``: the mass matrix at q, needed for centre of mass)."""
        if self.identity:
            return Gamma
        if self.kind == 'center_of_mass':
            return self.co.christoffel(q, Gamma=Gamma, M=M)
        return rd.transform_christoffel(Gamma, self.co.A)

    def contact_compliance(self, q, points, spatial=False):
        """Operational-space compliance of contact nodes at q in these coordinates.

        Lambda = J M^-1 J^T does not change under an invertible change of coordinates (Jbar = J A,
        Mbar = A^T M A give Jbar Mbar^-1 Jbar^T = J M^-1 J^T), so ``joint`` and
        ``center_of_mass`` take the O(N) recursion (rd.contact_compliance); ``mimic_reduced``
        constrains the joints and gets J A (A^T M A)^-1 A^T J^T
        (rd.MimicCoordinates.contact_compliance).
        """
        if self.kind == 'mimic_reduced' and not self.identity:
            return self.co.contact_compliance(q, points, spatial=spatial)
        return rd.contact_compliance(self.model, q, points, spatial=spatial)

    @property
    def joint_map(self):
        """``mimic_reduced`` with mimic joints: (independent joint names, E, offset) with the
        model's joint positions q_joints = E q_independent + offset and rates v_joints = E
        v_independent (rd.MimicCoordinates.joint_map); None otherwise."""
        if self.kind != 'mimic_reduced' or self.identity:
            return None
        E, offset = self.co.joint_map
        return list(self.co.joint_names), E, offset

    def apply(self, q, v, d, Gamma=None):
        """One cycle: :class:`Output` (qbar, vbar, terms, Gammabar or None)."""
        if self.identity:
            return Output(q, v, d, Gamma)
        qbar, vbar = self.state(q, v, d.M)
        gbar = None if Gamma is None else self.christoffel(q, Gamma, d.M)
        return Output(qbar, vbar, self.dynamics(q, v, d), gbar)
