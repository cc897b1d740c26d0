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
Its iterations are bounded (:data:`QP_MAX_ITER` outer, each at most as many inner: a few
milliseconds of CPU at most): a QP with no solution within the torque limits, a falling robot's,
otherwise iterates for 10⁴-10⁶ iterations, a tenth of a second and more, while the plant runs on
the torques of long ago; it is reported not solved (the controller repeats its last solved
torques).  Solved cycles take 5 iterations at the median and at most 41 (Solo12 trotting in
MuJoCo, 9000 cycles).
"""

import math
import time
from dataclasses import dataclass, field

import numpy as np
import proxsuite

__all__ = ['StreamState', 'WBCReference', 'WBCSolution', 'TaskSpaceInverseDynamics',
           'quaternion_matrix', 'rotation_log', 'effort_limits_from_urdf', 'QP_MAX_ITER']

#: ProxQP's outer iterations at most, and inner ones per outer (module text)
QP_MAX_ITER = 30

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
    trunk orientation ``R_ref`` (world) and angular velocity (world), the stance feet, the
    swing feet's references
    ``{foot: (p, ṗ, p̈)}`` and, per stance foot, an upper bound on its normal force (unloading
    before lift-off, loading after touch-down; default: ``f_max``) and a lower one (default
    ``f_min``; a foot probing for the ground is held at a known force)."""
    com: np.ndarray
    com_velocity: np.ndarray
    com_acceleration: np.ndarray
    stance: tuple
    swing: dict = field(default_factory=dict)
    R_ref: np.ndarray = field(default_factory=lambda: np.eye(3))
    normal_force_max: dict = field(default_factory=dict)
    normal_force_min: dict = field(default_factory=dict)
    angular_velocity: np.ndarray = field(default_factory=lambda: np.zeros(3))


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
    x, y, z, w = (float(c) for c in quat)
    s = 1.0 / math.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x * s, y * s, z * s, w * s
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def rotation_log(R):
    """The rotation vector of ``R`` (the SO(3) logarithm, angle < π)."""
    cos = min(1.0, max(-1.0, (float(R[0, 0] + R[1, 1] + R[2, 2]) - 1.0) / 2.0))
    angle = math.acos(cos)
    axis = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    if angle < 1e-9:
        return 0.5 * axis
    return angle / (2.0 * math.sin(angle)) * axis


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


class _Workspace:
    """The QP of ``k`` stance feet for ``n`` velocity coordinates: its proxsuite solver (warm
    started from the previous cycle's solution) and its matrices, allocated once; the rows
    that do not depend on the state (the friction pyramids' and the normal forces') written
    once, the regularization's diagonal kept."""

    def __init__(self, n, k, mu, regularization, w_rot):
        na = n - 6
        self.n, self.k = n, k
        self.nx, self.neq, self.nin = n + 3 * k, 6 + 3 * k, 5 * k + na
        self.H = np.zeros((self.nx, self.nx))
        self.diagonal = self.H.reshape(-1)[::self.nx + 1]        # a view of H's diagonal
        ev, ef, self.e_tau = regularization
        self.regularization = np.r_[np.full(n, ev), np.full(3 * k, ef)]
        self.regularization[3:6] += w_rot          # the orientation task: w ‖v̇[3:6] − b‖²
        self.g = np.zeros(self.nx)
        self.A = np.zeros((self.neq, self.nx))
        self.b = np.zeros(self.neq)
        self.C = np.zeros((self.nin, self.nx))
        self.lo = np.full(self.nin, -np.inf)
        self.hi = np.zeros(self.nin)
        self.B = self.C[5 * k:]                     # τ = B x + h_a: the torque limits' rows
        self.normal = np.arange(k) * 5 + 4          # rows of the normal force bounds
        for i in range(k):                          # ± f_t − μ f_z ≤ 0, then f_z's bounds
            c = n + 3 * i
            for r, (axis, sign) in enumerate(((0, 1), (0, -1), (1, 1), (1, -1))):
                self.C[5 * i + r, c + axis] = sign
                self.C[5 * i + r, c + 2] = -mu
            self.C[5 * i + 4, c + 2] = 1.0
        self.qp = None


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
        self._sqrt_w = {k: math.sqrt(w) for k, w in self.weights.items()}
        self.reg = regularization
        self.eps_abs = float(eps_abs)
        self._work = {}               # number of stance feet -> its _Workspace
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
        """(T, t, b_rot): the CoM and swing tasks' rows ``√w_t A_t`` stacked in ``T`` and
        ``√w_t b_t`` in ``t`` (module docstring), and the orientation task's ``b_t`` (its
        ``A_t`` selects v̇[3:6])."""
        m = float(state.mass)
        idx = self._frames(state)
        kp, kd = self.com_gains
        s = self._sqrt_w['com']
        a_com = (ref.com_acceleration + kp * (ref.com - state.com)
                 + kd * (ref.com_velocity - state.com_velocity) - state.centroidal_bias[:3] / m)
        rows, rhs = [state.centroidal_matrix[:3] * (s / m)], [s * a_com]
        R = quaternion_matrix(state.q[3:7])
        kp, kd = self.orientation_gains
        alpha = (kp * rotation_log(ref.R_ref @ R.T)
                 + kd * (ref.angular_velocity - R @ state.v[3:6]))
        kp, kd = self.swing_gains
        s = self._sqrt_w['swing']
        for foot, (p, pd, pdd) in ref.swing.items():
            i = idx[foot]
            J = state.jacobians[i, :3]
            rows.append(s * J)
            rhs.append(s * (pdd + kp * (p - state.positions[i]) + kd * (pd - J @ state.v)
                            - state.jacobian_dot_v[i, :3]))
        return np.concatenate(rows), np.concatenate(rhs), R.T @ alpha

    def _check(self, state, ref):
        """The stance feet's frame indices; ValueError on a fixed base or unknown feet."""
        names = state.names
        if len(names) < 6 or not all(x.startswith(BASE_PREFIX) for x in names[:6]):
            raise ValueError('a floating base is needed (six floating_base/* coordinates first)')
        na = len(state.v) - 6
        if self.effort_limit.shape != (na,):
            raise ValueError(f'{self.effort_limit.size} effort limits for {na} joints')
        idx = self._frames(state)
        stance = list(ref.stance)
        if len(set(stance)) != len(stance) or set(stance) & set(ref.swing):
            raise ValueError(f'a foot twice in stance {stance} and swing {list(ref.swing)}')
        unknown = [f for f in stance + list(ref.swing) if f not in idx]
        if unknown:
            raise ValueError(f'{unknown} are not among the feet {self.feet}')
        return [idx[f] for f in stance]

    def _workspace(self, n, k):
        """The workspace of ``k`` stance feet, warm started from the last cycle that had as
        many (measured on a trot: 3.1 iterations on average on two feet, against 4.1 when
        each stance pair keeps a solver of its own: the other pair's last solution, a cycle
        old, is the better guess than its own, a step old)."""
        w = self._work.get(k)
        if w is None or w.n != n:
            w = self._work[k] = _Workspace(n, k, self.mu, self.reg, self.weights['orientation'])
        return w

    def solve(self, state, ref):
        """One cycle: the :class:`WBCSolution` for ``state`` (:class:`StreamState`) and
        ``ref`` (:class:`WBCReference`).  ValueError on a fixed base or unknown feet."""
        t0 = time.thread_time()
        stance = self._check(state, ref)
        n, k = len(state.v), len(stance)
        w = self._workspace(n, k)
        Jc = state.jacobians[stance, :3].reshape(3 * k, n)    # stance feet, linear rows
        h = state.C @ state.v + state.g
        # τ = S (M v̇ + h − J_cᵀ f): the actuated rows of the equations of motion
        w.B[:, :n] = state.M[6:]
        np.negative(Jc[:, 6:].T, out=w.B[:, n:])
        # cost ½ xᵀ H x + gᵀ x of Σ w_t ‖A_t v̇ − b_t‖² + ε_v ‖v̇‖² + ε_f ‖f‖² + ε_τ ‖τ‖²
        T, t, b_rot = self.tasks(state, ref)
        H, g = w.H, w.g
        np.matmul(w.B.T, w.B, out=H)
        H *= w.e_tau
        H[:n, :n] += T.T @ T
        w.diagonal += w.regularization
        H *= 2.0
        np.matmul(w.B.T, (2.0 * w.e_tau) * h[6:], out=g)
        g[:n] -= 2.0 * (T.T @ t)
        g[3:6] -= (2.0 * self.weights['orientation']) * b_rot
        # equalities: the floating base's rows of the equations of motion; stance feet at rest
        w.A[:6, :n] = state.M[:6]
        np.negative(Jc[:, :6].T, out=w.A[:6, n:])
        np.negative(h[:6], out=w.b[:6])
        w.A[6:, :n] = Jc
        np.negative(state.jacobian_dot_v[stance, :3].reshape(-1), out=w.b[6:])
        # inequalities: normal force bounds (the pyramids' rows are constant); torque limits
        fmax = [min(self.f_max, ref.normal_force_max.get(f, self.f_max)) for f in ref.stance]
        w.hi[w.normal] = fmax
        w.lo[w.normal] = [min(ref.normal_force_min.get(f, self.f_min), u)
                          for f, u in zip(ref.stance, fmax)]
        np.subtract(-self.effort_limit, h[6:], out=w.lo[5 * k:])
        np.subtract(self.effort_limit, h[6:], out=w.hi[5 * k:])
        x, solved, iters = self._solve_qp(w)
        res = float(np.abs(w.A @ x - w.b).max())
        forces = {foot: x[n + 3 * i:n + 3 * i + 3] for i, foot in enumerate(ref.stance)}
        return WBCSolution(x[:n], forces, w.B @ x + h[6:], solved, iters, res,
                           time.thread_time() - t0)

    def _new_qp(self, w, guess):
        # the primal LDLT backend: the primal-dual one's answer moves in its last bits with
        # where its memory lies (two answers on identical data, 1e-14 apart, measured), which
        # a closed loop amplifies; the primal one repeats to the bit
        qp = proxsuite.proxqp.dense.QP(w.nx, w.neq, w.nin,
                                       dense_backend=proxsuite.proxqp.dense.DenseBackend.PrimalLDLT)
        qp.settings.eps_abs = self.eps_abs
        qp.settings.eps_rel = 0.0
        qp.settings.max_iter = qp.settings.max_iter_in = QP_MAX_ITER
        qp.settings.verbose = False
        qp.settings.initial_guess = guess
        qp.init(w.H, w.g, w.A, w.b, w.C, w.lo, w.hi)
        return qp

    def _solve_qp(self, w):
        guess = proxsuite.proxqp.InitialGuess
        fresh = w.qp is None
        if fresh:
            # a new solver's first solve starts from the equality-constrained guess: warm
            # started, it would start from memory no solve has written
            w.qp = self._new_qp(w, guess.EQUALITY_CONSTRAINED_INITIAL_GUESS)
        else:
            w.qp.update(w.H, w.g, w.A, w.b, w.C, w.lo, w.hi)
        qp = w.qp
        qp.solve()
        if fresh:
            qp.settings.initial_guess = guess.WARM_START_WITH_PREVIOUS_RESULT
        ok = proxsuite.proxqp.QPSolverOutput.PROXQP_SOLVED
        iters = int(qp.results.info.iter)
        if qp.results.info.status != ok and not fresh:
            # a warm start from the previous cycle failed once in 3,550-6,800 noisy cycles on
            # the MuJoCo plants: solve this cycle again from the equality-constrained guess
            # (Bambade et al. 2022, the initial guesses), keep that solver if it converged
            cold = self._new_qp(w, guess.EQUALITY_CONSTRAINED_INITIAL_GUESS)
            cold.solve()
            iters += int(cold.results.info.iter)
            if cold.results.info.status == ok:
                cold.settings.initial_guess = guess.WARM_START_WITH_PREVIOUS_RESULT
                qp = w.qp = cold
        solved = qp.results.info.status == ok
        return np.array(qp.results.x), bool(solved), iters
