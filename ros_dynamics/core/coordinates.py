"""Output coordinates: one interface for the model's own coordinates and their changes
(Echeandia & Wensing, Sec. 3.3), e.g. to reduce mimic joints or to put a floating base in
centre-of-mass coordinates.

With q = q(qbar) and A = dq/dqbar (eq. (22)), qd = A qbard and qdd = A qbardd + Adot qbard, so

    Mbar = A^T M A                       (23)
    Cbar = A^T C A + A^T M Adot           (24)
    gbar = A^T g,   taubar = A^T tau      (25), (26)

and, by Theorem 1, the Christoffel-consistent C maps to the Christoffel-consistent Cbar.
For mimic joints q_m = k q_l + offset the map is affine, so A is constant and Adot = 0.
The same laws hold for generalized speeds (quasi-velocities) v = A(q) vbar (Remark 5), which
is how :class:`CenterOfMassCoordinates` puts a floating base in centre-of-mass coordinates
(Remark 6); its derivation is in that class.

``output_coordinates(model, kind)`` with kind in :data:`COORDINATES` gives one of

``'joint'``           :class:`JointCoordinates`: the model's coordinates, unchanged (no work);
                      names = [floating_base/linear_x..z, floating_base/angular_x..z,] joints;
                      position = q, velocity = v (base twist in the base frame, linear first).
``'mimic_reduced'``   :class:`MimicCoordinates`: the independent coordinates only, the mimic
                      joints (q_m = k q_leader + offset, chains resolved) dropped;
                      names = [floating_base/*,] the independent joints in model order.  A is
                      constant, so Gamma maps as Gammabar_ijk = A_ai A_bj A_ck Gamma_abc.
                      Without mimic joints this is the identity (``identity``; no work).
``'center_of_mass'``  :class:`CenterOfMassCoordinates` (floating base only, Remark 6):
                      names = [center_of_mass/x..z, floating_base/angular_x..z,] joints;
                      position = [CoM in the world (3), base quaternion x y z w (4), joints];
                      velocity = [CoM velocity in the world (3), base angular velocity in the
                      base frame (3), joint rates].  M becomes block-diagonal [m 1_3, 0; 0, M22]
                      and the CoM rows/columns of C, dM/dt and Gamma vanish.

and every one answers the same calls: ``names`` (the velocity coordinates, base first),
``base_names``, ``joint_names``, ``nq`` / ``nv`` (sizes of qbar / vbar), ``identity``,
``state(q, v, M=None) -> (qbar, vbar)``, ``full_state(qbar, vbar) -> (q, v)``,
``dynamics(q, v, d=None)`` (Mbar, Cbar, Mbar_dot, gbar at the full state; ``d``: M, C, Mdot, g
there if at hand), ``christoffel(q, Gamma=None, M=None)``, ``contact_compliance(q, points,
spatial=False)``, ``task_space(q, v, frames, ts=None)``, ``joint_map`` and
``apply(q, v, d, Gamma=None) -> Output`` for one cycle.
"""

import copy
from collections import namedtuple

import numpy as np

from .api import (christoffel, contact_compliance, contact_nodes, dynamics, link_jacobian,
                  link_placement, mass_matrix, task_space)
from .configuration import base_nq, base_nv, quaternion_matrix
from .data import Dynamics
from .spatial_numpy import skew

#: names of the free joint's six velocity coordinates (body twist in the base frame, linear first)
BASE_DOF_NAMES = ('floating_base/linear_x', 'floating_base/linear_y', 'floating_base/linear_z',
                  'floating_base/angular_x', 'floating_base/angular_y', 'floating_base/angular_z')
#: the same in centre-of-mass coordinates: the CoM velocity (world frame) replaces the linear part
CENTER_OF_MASS_NAMES = ('center_of_mass/x', 'center_of_mass/y', 'center_of_mass/z') + BASE_DOF_NAMES[3:]
#: the choices of :func:`output_coordinates`
COORDINATES = ('joint', 'mimic_reduced', 'center_of_mass')

#: one cycle's results in output coordinates: qbar (nq,), vbar (nv,), terms (an object with
#: M, C, Mdot, g), Gammabar (nv, nv, nv) or None
Output = namedtuple('Output', 'q v d gamma')


def transform_dynamics(d, A, Adot=None):
    """Dynamics in new coordinates from a :class:`Dynamics` (M, C, Mdot, g) and A = dq/dqbar."""
    A = np.asarray(A, dtype=float)
    n = d.M.shape[0]
    if A.ndim != 2 or A.shape[0] != n:
        raise ValueError(f'A must have shape ({n}, m), got {A.shape}')
    M = A.T @ d.M @ A
    C = A.T @ d.C @ A
    if Adot is not None:
        Adot = np.asarray(Adot, dtype=float)
        if Adot.shape != A.shape:
            raise ValueError(f'Adot must have the shape of A {A.shape}, got {Adot.shape}')
        C = C + A.T @ d.M @ Adot
    return Dynamics(M, C, C + C.T, A.T @ d.g)


def transform_christoffel(Gamma, A):
    """Gamma in new coordinates for a constant A (affine map, e.g. mimic joints):

    Gammabar_ijk = sum A_ai A_bj A_ck Gamma_abc (the proof of Theorem 1 with d2q/dqbar2 = 0),
    contracted one index at a time (c, then b, then a).
    """
    A = np.asarray(A, dtype=float)
    G = np.swapaxes(Gamma @ A, 1, 2) @ A                      # [a, k, j]
    return np.ascontiguousarray(np.swapaxes(np.tensordot(A, G, (0, 0)), 1, 2))


class Coordinates:
    """What every output coordinates object shares (module docstring): the names and sizes
    and the per-cycle :meth:`apply`.  Subclasses set ``kind``, ``base_names``, ``joint_names``
    and define ``state``, ``full_state``, ``dynamics`` and ``christoffel``."""

    kind = None
    identity = False      # True: qbar = q, vbar = v and every term unchanged (no work)
    joint_map = None      # see MimicCoordinates.joint_map

    def __init__(self, model, base_names, joint_names):
        self.model = model
        self.base_names = tuple(base_names) if model.floating_base else ()
        self.joint_names = list(joint_names)
        self.names = list(self.base_names) + self.joint_names
        self.nv = len(self.names)
        self.nq = self.nv + (1 if model.floating_base else 0)  # the base quaternion: 4 entries, 3 rates

    def contact_compliance(self, q, points, spatial=False):
        """Operational-space compliance of contact nodes at q in these coordinates.

        Lambda = J M^-1 J^T does not change under an invertible change of coordinates (Jbar =
        J A, Mbar = A^T M A give Jbar Mbar^-1 Jbar^T = J M^-1 J^T): the O(N) recursion of
        :func:`~ros_dynamics.contact_compliance` (overridden where the map constrains the
        joints, :meth:`MimicCoordinates.contact_compliance`).
        """
        return contact_compliance(self.model, q, points, spatial=spatial)

    def task_space(self, q, v, frames, ts=None):
        """:func:`~ros_dynamics.task_space` at the full state (q, v) in these coordinates
        (``ts``: that result, if at hand).  Only coordinates with a constant A have it
        (joint, mimic_reduced); the others refuse with the reason."""
        raise ValueError(f'the task space is not available in {self.kind} coordinates (their '
                         'velocity map depends on q): use joint or mimic_reduced coordinates')

    def apply(self, q, v, d, Gamma=None):
        """One cycle: :class:`Output` (qbar, vbar, terms, Gammabar or None) from the full state
        and ``d`` (M, C, Mdot, g there); the identity returns its inputs untouched."""
        if self.identity:
            return Output(q, v, d, Gamma)
        qbar, vbar = self.state(q, v, d.M)
        gbar = None if Gamma is None else self.christoffel(q, Gamma, d.M)
        return Output(qbar, vbar, self.dynamics(q, v, d), gbar)

    def __repr__(self):
        return f'<ros_dynamics {type(self).__name__} of {self.model.name!r}: nq={self.nq}, nv={self.nv}>'


class JointCoordinates(Coordinates):
    """The model's own coordinates: the identity (``kind = 'joint'``)."""

    kind = 'joint'
    identity = True

    def __init__(self, model):
        super().__init__(model, BASE_DOF_NAMES, model.joint_names)

    def state(self, q, v, M=None):
        return q, v

    def full_state(self, qbar, vbar):
        return qbar, vbar

    def dynamics(self, q, v, d=None):
        return dynamics(self.model, q, v) if d is None else d

    def christoffel(self, q, Gamma=None, M=None):
        return christoffel(self.model, q) if Gamma is None else Gamma

    def task_space(self, q, v, frames, ts=None):
        return task_space(self.model, q, v, frames) if ts is None else ts


class MimicCoordinates(Coordinates):
    """The independent coordinates of a model whose URDF has mimic joints.

    ``A`` (nv x nv_independent) maps independent rates to all joint rates; ``q(qbar)`` expands
    a configuration, ``reduce(d)`` applies eqs. (23)-(25) to a :func:`ros_dynamics.dynamics`
    result.  Chains of mimics (a mimic of a mimic) are resolved; floating-base DoFs stay.
    """

    kind = 'mimic_reduced'

    def __init__(self, model):
        base = 6 if model.floating_base else 0
        leader = {}
        for name in model.joint_names:
            k, off, cur = 1.0, 0.0, name
            seen = set()
            while cur in model.mimic:
                if cur in seen:
                    raise ValueError(f'mimic joints form a cycle through {cur!r}')
                seen.add(cur)
                # q_name = k q_cur + off and q_cur = mult q_lead + offset (URDF <mimic>)
                lead, mult, offset = model.mimic[cur]
                k, off, cur = k * mult, off + k * offset, lead
            leader[name] = (cur, k, off)
        self.independent = [n for n in model.joint_names if leader[n][0] == n]
        col = {n: base + i for i, n in enumerate(self.independent)}           # column of A
        qcol = {n: (7 if base else 0) + i for i, n in enumerate(self.independent)}  # index in qbar
        self.A = np.zeros((model.nv, base + len(self.independent)))
        self.A[:base, :base] = np.eye(base)
        self.offset = np.zeros(model.nq)
        self._q_map = []
        for name in model.joint_names:
            lead, k, off = leader[name]
            self.A[model.joint_v_index(name), col[lead]] = k
            self.offset[model.joint_q_index(name)] = off
            self._q_map.append((model.joint_q_index(name), qcol[lead], k))
        base_q, base_v = base_nq(model), base_nv(model)
        self._iq = np.r_[np.arange(base_q),                    # entries of qbar / vbar in q / v
                         [model.joint_q_index(n) for n in self.independent]].astype(np.intp)
        self._iv = np.r_[np.arange(base_v),
                         [model.joint_v_index(n) for n in self.independent]].astype(np.intp)
        super().__init__(model, BASE_DOF_NAMES, self.independent)
        self.identity = self.nv == model.nv          # no mimic joints: A = 1

    def q(self, qbar):
        """Full configuration from the independent one (floating-base block copied)."""
        base = 7 if self.model.floating_base else 0
        qbar = np.asarray(qbar, dtype=float)
        if qbar.shape != (base + len(self.independent),):
            raise ValueError(f'qbar must have shape ({base + len(self.independent)},), got {qbar.shape}')
        q = self.offset.copy()
        q[:base] = qbar[:base]
        for iq, ibar, k in self._q_map:
            q[iq] += k * qbar[ibar]
        return q

    def v(self, vbar):
        return self.A @ np.asarray(vbar, dtype=float)

    def reduce(self, d):
        """Mbar, Cbar (Christoffel-consistent), Mbar_dot, gbar from the full-coordinate result."""
        return transform_dynamics(d, self.A)

    def state(self, q, v, M=None):
        """(qbar, vbar): the independent entries of a full state (the mimic entries are dropped,
        not checked against their leaders)."""
        q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float)
        return q[self._iq], v[self._iv]

    def full_state(self, qbar, vbar):
        return self.q(qbar), self.v(vbar)

    def dynamics(self, q, v, d=None):
        """Mbar, Cbar, Mbar_dot, gbar at the full state (q, v) (eqs. (23)-(25), Adot = 0)."""
        return self.reduce(dynamics(self.model, q, v) if d is None else d)

    def christoffel(self, q, Gamma=None, M=None):
        """Gammabar[i, j, k] in the independent coordinates (constant A: transform_christoffel)."""
        return transform_christoffel(christoffel(self.model, q) if Gamma is None else Gamma, self.A)

    def task_space(self, q, v, frames, ts=None):
        """The task space with columns in the independent coordinates: Jbar = J A and
        Abar_G = A_G A; dJ/dt v and dA_G/dt v are unchanged (v = A vbar, Adot = 0).  A new
        result whose other arrays are those of ``ts`` (shared, not copied)."""
        ts = task_space(self.model, q, v, frames) if ts is None else ts
        if self.identity:
            return ts
        out = copy.copy(ts)
        out.jacobians = ts.jacobians @ self.A
        out.centroidal_matrix = ts.centroidal_matrix @ self.A
        return out

    @property
    def joint_map(self):
        """With mimic joints: (independent joint names, E, offset) with the model's joint
        positions q_joints = E q_independent + offset and rates v_joints = E v_independent (E:
        the joint block of A, nj x n_independent); None without (the identity)."""
        if self.identity:
            return None
        bq, bv = base_nq(self.model), base_nv(self.model)
        return list(self.independent), self.A[bv:, bv:], self.offset[bq:]

    def contact_compliance(self, q, points, spatial=False):
        """Lambdabar = Jbar Mbar^-1 Jbar^T of contact nodes in the independent coordinates.

        The nodes' velocity is J v = J A vbar, so Jbar = J A, and Mbar = A^T M A (eq. (23)):
            Lambdabar = J A (A^T M A)^-1 A^T J^T,
        which is not J M^-1 J^T: the mimic relation couples joints (across branches, e.g. two
        fingers) that the articulated-body recursion of :func:`contact_compliance` (Jain,
        Eq. 51) treats as free.  The constraint does not fit that recursion, so Lambdabar is
        formed densely here: ``link_jacobian`` per node and a Cholesky factor of Mbar (reduced
        systems are small).  ``points``, ``spatial`` and the row layout as in
        :func:`contact_compliance`.  Without mimic joints: the O(N) Lambda.
        """
        if self.identity:
            return super().contact_compliance(q, points, spatial)
        nodes = list(points)
        contact_nodes(self.model, nodes)                 # the same validation and messages
        rows = 6 if spatial else 3
        A = self.A
        Jbar = np.empty((rows * len(nodes), A.shape[1]))
        for i, (link, xyz) in enumerate(nodes):
            Jbar[rows * i:rows * (i + 1)] = link_jacobian(self.model, q, link, xyz)[:rows] @ A
        Mbar = A.T @ mass_matrix(self.model, q) @ A
        try:
            L = np.linalg.cholesky(Mbar)
        except np.linalg.LinAlgError:
            raise ValueError('the reduced mass matrix A^T M A is not positive definite at this '
                             'configuration') from None
        X = np.linalg.solve(L, Jbar.T)                   # L^-1 Jbar^T
        Lam = X.T @ X
        return 0.5 * (Lam + Lam.T)


class CenterOfMassCoordinates(Coordinates):
    """Centre-of-mass coordinates of a floating-base model (Echeandia & Wensing, Remark 6).

    Choice: the paper's generalized speeds ``nu = [pdot_CoM, nu_2]`` with
        qbar = [p_CoM (world), base quaternion (x y z w), joint positions]      (nq entries)
        vbar = [pdot_CoM (world frame), omega (base angular velocity, base frame), joint rates].
    nu_2 = (omega, joint rates) keeps the base's angular velocity as Remark 6 recommends (no
    orientation parametrization, no singularity) and is independent of pdot_CoM, so the kinetic
    energy splits as 1/2 m |pdot_CoM|^2 + (motion about the CoM) and
        Mbar = [[m 1_3, 0], [0, M22]]            (eq. (32), from that split of the kinetic energy)
    and the CoM rows and columns of Cbar and Gammabar vanish.  Only the base's linear rate is
    replaced, and the map follows from the total momentum Algorithm 1 already computes: in the
    base frame (linear first) the free joint's rows of M give the spatial momentum, whose linear
    part is m R^T pdot_CoM, so with M11 = M[0:3, 0:3] = m 1_3, M12 = M[0:3, 3:] and R the base
    rotation
        vbar = T v,  T = [[R M[0:3, :] / m], [0, 1]],     v = A vbar,  A = T^-1 = [[R^T, -M12 / m], [0, 1]].
    Differentiating T A = 1 with Rdot = R (omega x) gives Adot = -A Tdot A, nonzero only in the
    top three rows:
        Adot[0:3, :] = -((omega x) M[0:3, :] + Mdot[0:3, :]) A / m,
    from Mdot = C + C^T, which Algorithm 1 returns too, so Mbar, Cbar (eq. (24): A^T C A +
    A^T M Adot), gbar need one ``dynamics`` call plus O(nv^2) work.  (The base CoM offset c, in the
    base frame, is read off the same block: M[0:3, 3:6] = -m (c x).)  Gammabar[:, :, k] =
    dCbar/dvbar_k = A^T C(q, A e_k) A + A^T M Adot(q, A e_k), both linear in v.
    By Remark 5 / Prop. 3 Cbar is an admissible factorization (Mbar_dot = Cbar + Cbar^T).
    """

    kind = 'center_of_mass'

    def __init__(self, model):
        if not model.floating_base:
            raise ValueError("coordinates 'center_of_mass' need a floating-base model "
                             '(load_urdf(..., floating_base=True))')
        super().__init__(model, CENTER_OF_MASS_NAMES, model.joint_names)
        self.mass = model.total_mass()
        if not self.mass > 0.0:
            raise ValueError(f'model {model.name!r} has no mass')
        q0 = model.neutral()   # the root link's frame is the free joint's: R from q[3:7]
        q0[3:7] = np.array([0.3, -0.5, 0.1, 0.8]) / np.sqrt(0.99)
        if not np.allclose(self._rotation(q0), link_placement(model, q0, model.root_link)[0],
                           rtol=0, atol=1e-12):
            raise ValueError(f'the root link {model.root_link!r} is not the free joint frame')

    def _rotation(self, q):
        """Base rotation (world <- base) of the free joint's quaternion q[3:7] (x y z w)."""
        return quaternion_matrix(q[3], q[4], q[5], q[6])

    def com_offset(self, M):
        """c: the CoM in the base frame, from M[0:3, 3:6] = -m (c x)."""
        S = -M[0:3, 3:6] / self.mass
        return 0.5 * np.array([S[2, 1] - S[1, 2], S[0, 2] - S[2, 0], S[1, 0] - S[0, 1]])

    def velocity_map(self, M, R):
        """A (nv x nv) with v = A vbar at the configuration whose mass matrix is M, rotation R."""
        A = np.eye(self.nv)
        A[0:3, 0:3] = R.T
        A[0:3, 3:] = -M[0:3, 3:] / self.mass
        return A

    def velocity_map_derivative(self, A, M, Mdot, omega):
        """Adot along the motion, from A, M, Mdot = dM/dt and the base angular velocity."""
        Adot = np.zeros_like(A)
        Adot[0:3] = -((skew(omega) @ M[0:3] + Mdot[0:3]) @ A) / self.mass
        return Adot

    def state(self, q, v, M=None):
        """(qbar, vbar) from the free-flyer state (q, v) (``M``: the mass matrix at q, if known)."""
        if M is None:
            M = mass_matrix(self.model, q)
        R = self._rotation(q)
        qbar = np.array(q, dtype=float)
        qbar[0:3] = q[0:3] + R @ self.com_offset(M)
        vbar = np.array(v, dtype=float)
        vbar[0:3] = R @ (M[0:3] @ v) / self.mass
        return qbar, vbar

    def full_state(self, qbar, vbar):
        """(q, v) from (qbar, vbar).  c depends on the joints only: M is taken at the base origin."""
        q = np.array(qbar, dtype=float)
        q[0:3] = 0.0
        M = mass_matrix(self.model, q)
        R = self._rotation(q)
        q[0:3] = qbar[0:3] - R @ self.com_offset(M)
        return q, self.velocity_map(M, R) @ np.asarray(vbar, dtype=float)

    def dynamics(self, q, v, d=None):
        """Mbar, Cbar, Mbar_dot, gbar at the full state (q, v) (``d``: its ``dynamics`` result)."""
        if d is None:
            d = dynamics(self.model, q, v)
        A = self.velocity_map(d.M, self._rotation(q))
        Adot = self.velocity_map_derivative(A, d.M, d.Mdot, np.asarray(v, dtype=float)[3:6])
        return transform_dynamics(d, A, Adot)

    def christoffel(self, q, Gamma=None, M=None):
        """Gammabar[i, j, k] = dCbar_ij / dvbar_k at q (from Gamma = christoffel(q) and M)."""
        if Gamma is None:
            Gamma = christoffel(self.model, q)
        if M is None:
            M = mass_matrix(self.model, q)
        A = self.velocity_map(M, self._rotation(q))
        m = self.mass
        # all k at once, stacked along the first axis: Ck = C(q, A e_k) = GA[k]
        GA = np.moveaxis(Gamma @ A, 2, 0)                              # [k, a, b]
        out = A.T @ GA @ A                                              # A^T C(A e_k) A
        # Adot(q, A e_k) has only three nonzero rows (velocity_map_derivative):
        #   Adot_k[0:3] = -((omega_k x) M[0:3] + (Ck + Ck^T)[0:3]) A / m,  omega_k = A[3:6, k]
        omega = A[3:6].T                                                # [k, 3]
        WM = np.cross(omega[:, None, :], M[0:3].T[None, :, :])          # [k, col, 3] = omega_k x M[0:3, col]
        T = np.swapaxes(WM, 1, 2) + GA[:, 0:3, :] + np.swapaxes(GA[:, :, 0:3], 1, 2)
        Adot_top = -(T @ A) / m                                         # [k, 3, nv]
        out += (A.T @ M[:, 0:3]) @ Adot_top                             # A^T M Adot_k
        return np.ascontiguousarray(np.moveaxis(out, 0, 2))


def output_coordinates(model, kind):
    """The output coordinates ``kind`` (one of :data:`COORDINATES`) of ``model`` (module
    docstring); 'mimic_reduced' without mimic joints is the identity."""
    if kind == 'joint':
        return JointCoordinates(model)
    if kind == 'mimic_reduced':
        return MimicCoordinates(model)
    if kind == 'center_of_mass':
        return CenterOfMassCoordinates(model)
    raise ValueError(f'coordinates must be one of {COORDINATES}, got {kind!r}')
