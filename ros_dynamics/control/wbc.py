"""Task-space inverse dynamics for a floating-base robot on point feet: one QP per control cycle
over the generalized acceleration, the contact forces and the joint torques (plain numpy and
proxsuite, no ROS, no model of its own).

Everything it needs comes from the dynamics node's stream at one state (docs/conventions.md):
``M, C, g`` and the coordinate names from ``Dynamics``; the feet's Jacobians ``J``, their
``J̇ v``, positions, the mass ``m``, the CoM ``c``, ``ċ``, ``A_G`` and ``Ȧ_G v`` from
``TaskSpace``.  :class:`StreamState` holds them as numpy arrays; the controller never builds or
evaluates a model (the test suite checks that this module imports nothing of the core).

The QP (the task-space inverse dynamics of Del Prete, Mansard et al. 2016 and the
weighted-task QPs of Herzog et al. 2016, written for point contacts), variables
``x = (v̇, f_1 .. f_k, τ)`` (n, 3 per stance foot, n − 6):

    minimize    Σ_t w_t ‖A_t v̇ − b_t‖² + ε_v ‖v̇‖² + ε_f Σ ‖f_c‖² + ε_τ ‖τ‖²
    subject to  M v̇ − Σ J_c,linᵀ f_c − Sᵀ τ = −(C v + g)       (equations of motion; S selects
                                                               the actuated joints)
                J_c,lin v̇ = −(J̇_c v)_lin                      (stance feet do not accelerate)
                |f_x|, |f_y| ≤ μ f_z,  f_min ≤ f_z ≤ f_max      (linearized friction cone,
                                                               unilateral normal force)
                τ_min ≤ τ ≤ τ_max                              (the URDF's effort limits)

with the tasks (desired accelerations from PD references, each a row block of the stream):

* CoM: ``m c̈ = A_G[:3] v̇ + (Ȧ_G v)[:3]`` (Orin, Goswami & Lee 2013): ``A_t = A_G[:3] / m``,
  ``b_t = c̈_ref + K_p (c_ref − c) + K_d (ċ_ref − ċ) − (Ȧ_G v)[:3] / m``;
* trunk orientation: the free-flyer's angular rows.  Its angular velocity ``ω_b = v[3:6]`` is in
  the base frame, so the world angular acceleration is ``R v̇[3:6]`` with no bias term:
  ``b_t = Rᵀ (K_p log(R_ref Rᵀ) − K_d R ω_b)``;
* swing feet: ``J_lin v̇ + (J̇ v)_lin = p̈_ref + K_p (p_ref − p) + K_d (ṗ_ref − J_lin v)``.

Solved with proxsuite's dense ProxQP (Bambade et al. 2022), warm-started from the previous
cycle's solution while the stance set keeps its size (docs/algorithms.md says why that solver).
"""

import time
from dataclasses import dataclass, field

import numpy as np
import proxsuite

__all__ = ['StreamState', 'WBCReference', 'WBCSolution', 'TaskSpaceInverseDynamics',
           'quaternion_matrix', 'rotation_log', 'effort_limits_from_urdf']

BASE_PREFIX = 'floating_base/'


@dataclass
class StreamState:
    """The stream at one stamp as numpy arrays (shapes: n = nv, k task frames)."""
    names: list                 # n coordinate names (Dynamics.names): six floating_base/* first
    q: np.ndarray               # nq = n + 1: x y z qx qy qz qw, joints
    v: np.ndarray               # n
    M: np.ndarray               # (n, n)
    C: np.ndarray               # (n, n)
    g: np.ndarray               # n
    frames: list                # k task-frame names (TaskSpace.frames)
    positions: np.ndarray       # (k, 3) frame origins, world
    jacobians: np.ndarray       # (k, 6, n) LOCAL_WORLD_ALIGNED
    jacobian_dot_v: np.ndarray  # (k, 6)
    mass: float
    com: np.ndarray             # (3,)
    com_velocity: np.ndarray    # (3,)
    centroidal_matrix: np.ndarray   # (6, n)
    centroidal_bias: np.ndarray     # (6,)


@dataclass
class WBCReference:
    """What the controller should do in this cycle: CoM (position, velocity, acceleration),
    trunk orientation ``R_ref`` (world), the stance feet, the swing feet's references
    ``{foot: (p, ṗ, p̈)}`` and, per stance foot, an upper bound on its normal force (unloading
    before lift-off, loading after touch-down; default: ``f_max``)."""
    com: np.ndarray
    com_velocity: np.ndarray
    com_acceleration: np.ndarray
    stance: tuple
    swing: dict = field(default_factory=dict)
    R_ref: np.ndarray = field(default_factory=lambda: np.eye(3))
    normal_force_max: dict = field(default_factory=dict)


@dataclass
class WBCSolution:
    """The QP's answer: ``dv`` (n), ``forces`` {stance foot: f (3,), world}, ``tau`` (n − 6, the
    actuated joints in the stream's order), ``solved`` (ProxQP reported PROXQP_SOLVED),
    ``iterations``, ``equality_residual`` (max |A x − b| of the returned x) and ``cpu_time``
    (s, thread CPU time of building and solving the QP)."""
    dv: np.ndarray
    forces: dict
    tau: np.ndarray
    solved: bool
    iterations: int
    equality_residual: float
    cpu_time: float = 0.0


def quaternion_matrix(quat):
    """Rotation matrix of a unit quaternion (x, y, z, w), scalar last."""
    x, y, z, w = np.asarray(quat, dtype=float) / np.linalg.norm(quat)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def rotation_log(R):
    """The rotation vector of ``R`` (the SO(3) logarithm, angle < π)."""
    cos = np.clip((np.trace(R) - 1.0) / 2.0, -1.0, 1.0)
    angle = np.arccos(cos)
    axis = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    if angle < 1e-9:
        return 0.5 * axis
    return angle / (2.0 * np.sin(angle)) * axis


def effort_limits_from_urdf(xml, joints):
    """``<limit effort=...>`` of each named joint of a URDF string (ValueError if one is
    missing): the torque bounds, read without building a model."""
    import xml.etree.ElementTree as ET
    limits = {}
    for j in ET.fromstring(xml).iter('joint'):
        lim = j.find('limit')
        if lim is not None and lim.get('effort') is not None:
            limits[j.get('name')] = float(lim.get('effort'))
    missing = [n for n in joints if n not in limits]
    if missing:
        raise ValueError(f'no effort limit in the URDF for {missing}')
    return np.array([limits[n] for n in joints])


class TaskSpaceInverseDynamics:
    """The QP of the module docstring for the point feet ``feet`` (task-frame names).

    ``effort_limit``: |τ| bound per actuated joint (stream order); ``mu``: friction coefficient
    of the pyramid; gains ``(K_p, K_d)`` per task; ``weights`` per task.
    """

    def __init__(self, feet, effort_limit, mu=0.5, normal_force=(1.0, 200.0),
                 com_gains=(400.0, 40.0), orientation_gains=(400.0, 40.0),
                 swing_gains=(900.0, 60.0), weights=None, regularization=(1e-4, 1e-4, 1e-5),
                 eps_abs=1e-7):
        self.feet = list(feet)
        self.effort_limit = np.asarray(effort_limit, dtype=float)
        if not np.all(self.effort_limit > 0):
            raise ValueError('effort limits must be > 0')
        self.mu = float(mu)
        self.f_min, self.f_max = map(float, normal_force)
        self.com_gains, self.orientation_gains = com_gains, orientation_gains
        self.swing_gains = swing_gains
        self.weights = {'com': 100.0, 'orientation': 100.0, 'swing': 100.0, **(weights or {})}
        self.reg = regularization
        self.eps_abs = float(eps_abs)
        self._qp = {}                 # number of stance feet -> its proxsuite QP (warm start)
        self._frame_index = None

    def _frames(self, state):
        if self._frame_index is None or self._frame_index[0] != state.frames:
            missing = [f for f in self.feet if f not in state.frames]
            if missing:
                raise ValueError(f'feet {missing} are not among the task frames {state.frames}')
            self._frame_index = (list(state.frames),
                                 {f: state.frames.index(f) for f in self.feet})
        return self._frame_index[1]

    def tasks(self, state, ref):
        """[(name, A_t, b_t)]: the weighted tasks of this cycle (module docstring)."""
        n, m = len(state.v), float(state.mass)
        idx = self._frames(state)
        kp, kd = self.com_gains
        A_com = state.centroidal_matrix[:3] / m
        a_com = (np.asarray(ref.com_acceleration) + kp * (np.asarray(ref.com) - state.com)
                 + kd * (np.asarray(ref.com_velocity) - state.com_velocity))
        out = [('com', A_com, a_com - state.centroidal_bias[:3] / m)]
        R = quaternion_matrix(state.q[3:7])
        kp, kd = self.orientation_gains
        alpha = kp * rotation_log(np.asarray(ref.R_ref) @ R.T) - kd * (R @ state.v[3:6])
        A_rot = np.zeros((3, n))
        A_rot[:, 3:6] = np.eye(3)
        out.append(('orientation', A_rot, R.T @ alpha))
        kp, kd = self.swing_gains
        for foot, (p, pd, pdd) in ref.swing.items():
            J = state.jacobians[idx[foot], :3]
            a = (np.asarray(pdd) + kp * (np.asarray(p) - state.positions[idx[foot]])
                 + kd * (np.asarray(pd) - J @ state.v))
            out.append(('swing', J, a - state.jacobian_dot_v[idx[foot], :3]))
        return out

    def solve(self, state, ref):
        """One cycle: the :class:`WBCSolution` for ``state`` (:class:`StreamState`) and
        ``ref`` (:class:`WBCReference`).  ValueError on a fixed base or unknown feet."""
        t0 = time.thread_time()
        names = list(state.names)
        if len(names) < 6 or not all(x.startswith(BASE_PREFIX) for x in names[:6]):
            raise ValueError('a floating base is needed (six floating_base/* coordinates first)')
        n = len(state.v)
        na = n - 6
        if self.effort_limit.shape != (na,):
            raise ValueError(f'{self.effort_limit.size} effort limits for {na} joints')
        idx = self._frames(state)
        stance = list(ref.stance)
        if len(set(stance)) != len(stance) or set(stance) & set(ref.swing):
            raise ValueError(f'a foot twice in stance {stance} and swing {list(ref.swing)}')
        unknown = [f for f in stance + list(ref.swing) if f not in idx]
        if unknown:
            raise ValueError(f'{unknown} are not among the feet {self.feet}')
        k = len(stance)
        nx = n + 3 * k + na
        iv, itau = slice(0, n), slice(n + 3 * k, nx)
        # cost: Σ w_t ‖A_t v̇ − b_t‖² + regularization (1/2 xᵀ H x + gᵀ x up to a constant)
        H = np.zeros((nx, nx))
        gq = np.zeros(nx)
        for name, A_t, b_t in self.tasks(state, ref):
            w = self.weights[name]
            H[iv, iv] += w * A_t.T @ A_t
            gq[iv] -= w * A_t.T @ b_t
        ev, ef, et = self.reg
        H[iv, iv] += ev * np.eye(n)
        H[n:n + 3 * k, n:n + 3 * k] += ef * np.eye(3 * k)
        H[itau, itau] += et * np.eye(na)
        H *= 2.0
        gq *= 2.0
        # equalities: equations of motion, stance feet at zero acceleration
        A = np.zeros((n + 3 * k, nx))
        b = np.zeros(n + 3 * k)
        A[:n, iv] = state.M
        A[6:n, itau] = -np.eye(na)                      # − Sᵀ τ
        b[:n] = -(state.C @ state.v + state.g)
        for i, foot in enumerate(stance):
            J = state.jacobians[idx[foot], :3]
            A[:n, n + 3 * i:n + 3 * i + 3] = -J.T       # − J_cᵀ f_c
            A[n + 3 * i:n + 3 * i + 3, iv] = J
            b[n + 3 * i:n + 3 * i + 3] = -state.jacobian_dot_v[idx[foot], :3]
        # inequalities: friction pyramid (4 rows), normal force bounds (1 row) per foot; torques
        C = np.zeros((5 * k + na, nx))
        lo = np.full(5 * k + na, -np.inf)
        hi = np.zeros(5 * k + na)
        for i, foot in enumerate(stance):
            c = n + 3 * i
            for r, (axis, sign) in enumerate(((0, 1), (0, -1), (1, 1), (1, -1))):
                C[5 * i + r, c + axis] = sign                # ± f_t − μ f_z ≤ 0
                C[5 * i + r, c + 2] = -self.mu
            C[5 * i + 4, c + 2] = 1.0
            fmax = min(self.f_max, ref.normal_force_max.get(foot, self.f_max))
            lo[5 * i + 4], hi[5 * i + 4] = min(self.f_min, fmax), fmax
        C[5 * k:, itau] = np.eye(na)
        lo[5 * k:], hi[5 * k:] = -self.effort_limit, self.effort_limit
        x, solved, iters = self._solve_qp(k, H, gq, A, b, C, lo, hi)
        res = float(np.max(np.abs(A @ x - b))) if A.size else 0.0
        forces = {foot: x[n + 3 * i:n + 3 * i + 3].copy() for i, foot in enumerate(stance)}
        return WBCSolution(x[iv].copy(), forces, x[itau].copy(), solved, iters, res,
                           time.thread_time() - t0)

    def _new_qp(self, H, g, A, b, C, lo, hi, guess):
        qp = proxsuite.proxqp.dense.QP(H.shape[0], A.shape[0], C.shape[0])
        qp.settings.eps_abs = self.eps_abs
        qp.settings.eps_rel = 0.0
        qp.settings.verbose = False
        qp.settings.initial_guess = guess
        qp.init(H, g, A, b, C, lo, hi)
        return qp

    def _solve_qp(self, k, H, g, A, b, C, lo, hi):
        qp = self._qp.get(k)
        guess = proxsuite.proxqp.InitialGuess
        if qp is None or qp.model.dim != H.shape[0]:
            qp = self._qp[k] = self._new_qp(H, g, A, b, C, lo, hi,
                                            guess.WARM_START_WITH_PREVIOUS_RESULT)
        else:
            qp.update(H, g, A, b, C, lo, hi)
        qp.solve()
        ok = proxsuite.proxqp.QPSolverOutput.PROXQP_SOLVED
        iters = int(qp.results.info.iter)
        if qp.results.info.status != ok:
            # a warm start from the previous cycle failed once in 3,550-6,800 noisy cycles on
            # the MuJoCo plants: solve this cycle again from the equality-constrained guess
            # (Bambade et al. 2022, the initial guesses), keep that solver if it converged
            cold = self._new_qp(H, g, A, b, C, lo, hi, guess.EQUALITY_CONSTRAINED_INITIAL_GUESS)
            cold.solve()
            iters += int(cold.results.info.iter)
            if cold.results.info.status == ok:
                cold.settings.initial_guess = guess.WARM_START_WITH_PREVIOUS_RESULT
                qp = self._qp[k] = cold
        solved = qp.results.info.status == ok
        return np.array(qp.results.x), bool(solved), iters
