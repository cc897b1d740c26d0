"""Forces at known contact frames from the generalized-momentum residual, without force sensors.

The momentum observer (observer.py; De Luca et al. 2006) gives ``r ≈ K/(s+K) τ_ext`` over all
``nv`` velocity coordinates; on a floating base its first six rows are the base's, whose applied
torque is zero (the base is unactuated), so the weight the feet carry is in ``r`` from the first
sample on.  With contacts at known frames ``i`` (feet, fingertips) the external torque is

    τ_ext = Σ_i J_iᵀ f_i + τ_u,                                                        (1)

``J_i`` (6 × nv) the frame's Jacobian at its origin, rows linear then angular velocity in world
axes (``rd.task_space``), ``f_i`` the force (``point``: 3-D at the frame origin, ``J_i``'s first
three rows) or wrench (``wrench``: force then torque, world axes) that the environment applies,
and ``τ_u`` whatever the contact frames cannot explain: a push on the trunk, a knee against an
obstacle, model error.  This is the contact-force decomposition of the momentum-observer
literature for legged robots (Bledt et al. 2018, "Contact model fusion for event-based
locomotion in unstructured terrains"; Morlando, Teimoorzadeh & Ruggiero 2021, "Whole-body
control with disturbance rejection through a momentum-based observer for quadruped robots"),
posed here as one small quadratic programme per observer update:

    min_f  ½ ‖r − A f‖²_W + ½ ρ ‖f‖²,      A = [J_1ᵀ … J_kᵀ] (the force columns),          (2)
    s.t.   n·f_i ≥ 0                        (unilateral: the ground pushes, never pulls)
           |t_j·f_i| ≤ μ n·f_i,  j = 1, 2   (the friction cone, linearized as a pyramid)

``n`` = ``contact_normal`` (world axes), ``t_1``, ``t_2`` a tangent basis, ``μ`` =
:data:`FRICTION` by default (the outer pyramid of a cone as wide as rubber feet on common floors
get: the constraint rejects implausible forces, it does not model the floor; for ``wrench`` the
torque is free).  ``W`` weighs the joint rows 1 and the six base rows ``base_weight`` (default
1e-6): a leg's own joint rows determine its foot force (3 joints, 3 unknowns), and the base rows
only fill what the joints leave undetermined (6-D wrenches, a stretched knee) — so a push on the
trunk is not spread over the feet but stays, whole, in the base rows of ``τ_u``.  ``ρ`` (1e-12)
keeps (2) strictly convex when frames are undetermined (a foot in the air, its leg singular).
When a foot leaves the ground its leg's residual vanishes and (2) gives it no force; the
constraints keep the noise of a swing leg from becoming a pulling or sliding force.  The
solver is ProxQP (Bambade et al. 2022, proxsuite), warm-started from the previous update.
(2) is homogeneous in ``r`` (the cones are cones: ``f(s r) = s f(r)``), so its tolerance is
relative: :data:`QP_TOLERANCE` times the largest entry of ``Aᵀ W r`` (at least 1 N); an absolute
one would ask a diverged observer's residual (a fallen robot's, 10⁷) for digits a double does
not hold, and ProxQP would iterate for seconds.  Its iterations are bounded too
(:data:`QP_MAX_ITER` outer, each at most as many inner): no update stalls the cycle.

Per frame, the contact state comes from a fast force and the frame's motion (contact_state.py:
the residual's rate, the frame's height and velocity; the threshold ``threshold`` [N] and the
release ``release_ratio × threshold``); without the observer's period (:meth:`solve` alone) from
the normal force ``n·f_i`` of (2) over every frame, with that hysteresis.  A frame out of
contact carries no new force: if there is one, (2) is solved again without it, and what it
would have explained (a foot brushing the ground below the threshold, a push that a swing
foot's free wrench directions could absorb) stays in the unexplained part.  What the residual
still holds of a force that ended at a lift-off is no new force either: the observer forgets
it exactly as ``e^{−K t}`` in every coordinate (the force is zero since), so at a lift-off the
frame's part ``m_i = J_iᵀ f_i`` of the solution over every frame is kept and decays by
``e^{−K Δt}`` per period (:func:`remember`; dropped when the frame is in contact again), and

    τ_u = r − Σ_{i in contact} J_iᵀ f_i − Σ_{i out of contact} m_i,                     (3)

the frame out of contact publishing its force at lift-off with the same decay (its force
through K/(s+K): a lifted foot's filtered force falls for ``5/K``, the state says it is off at
once).  The published wrenches and ``τ_u`` add up to ``r`` while every frame is in contact,
and up to the legs' motion since a lift-off (in the decaying ``m_i``) otherwise.
Since (2) is linear in ``r`` where no constraint is active and the observer filters every row
by the same ``K/(s+K)`` (one gain), the forces are the plant's contact forces through that
filter: what the tests compare them with.
"""
from __future__ import annotations

import math
from collections import namedtuple
from dataclasses import dataclass

import numpy as np
from numba import njit

from ..core.api import task_frames, task_space
from ..core.data import Data
from ..core.validation import check_configuration, check_vector
from .contact_state import FrameContactState

__all__ = ['ContactForceEstimator', 'ContactForces', 'FRICTION', 'FRAME_MODELS',
           'ObserverUpdate']

#: friction coefficient of the estimator's cone (its outer pyramid): a plausibility bound
FRICTION = 1.0
#: the contact models: the size of the unknown per frame
FRAME_MODELS = {'point': 3, 'wrench': 6}

#: the observer update that gave a residual (the cycle's, by name): the velocity ``v`` (nv,)
#: and torque ``tau`` (nv,) of its sample, its period ``dt`` [s], and ``bridge``: an update
#: across a gap (observer_interval)
ObserverUpdate = namedtuple('ObserverUpdate', ('v', 'tau', 'dt', 'bridge'))


@dataclass
class ContactForces:
    """One update of :class:`ContactForceEstimator` (new arrays at every update)."""
    frames: tuple               # the contact frames' names
    in_contact: np.ndarray      # (k,) bool: the frame's state (contact_state.py)
    wrenches: np.ndarray        # (k, 6): force, torque (world axes, at the frame origin) the
                                # environment applies through K/(s+K); out of contact its
                                # force at lift-off decaying (module text)
    normal_forces: np.ndarray   # (k,): n·f of the programme's solution (also out of contact)
    unexplained: np.ndarray     # (nv,): r − Σ J_iᵀ f_i
    onset: np.ndarray           # (k,) bool: the frame came into contact at this update
    release: np.ndarray         # (k,) bool: the frame left contact at this update
    positions: np.ndarray       # (k, 3): the frames' origins, world axes


@njit(cache=True, nogil=True)
def weighted_least_squares(A, w, r, rho, cols, C, lower, upper, H, y):
    """The unconstrained minimizer of (2) over the columns ``cols`` of ``A``, into ``y[:m]``
    (m = len(cols)): ``H = A_cᵀ W A_c + ρ I``, ``H y = A_cᵀ W r`` by Cholesky (H is positive
    definite: ρ > 0).  Returns whether it satisfies the constraints ``lower <= C y <= upper``
    (the rows of ``C`` that involve only those columns: the frames' own rows)."""
    m, nv = cols.shape[0], A.shape[0]
    for a in range(m):
        ca = cols[a]
        for b in range(a + 1):
            cb = cols[b]
            s = 0.0
            for i in range(nv):
                s += A[i, ca] * w[i] * A[i, cb]
            H[a, b] = s
        H[a, a] += rho
        s = 0.0
        for i in range(nv):
            s += A[i, ca] * w[i] * r[i]
        y[a] = s
    for a in range(m):                          # H = L Lᵀ in the lower triangle
        for b in range(a + 1):
            s = H[a, b]
            for c in range(b):
                s -= H[a, c] * H[b, c]
            H[a, b] = math.sqrt(s) if a == b else s / H[b, b]
    for a in range(m):                          # L z = A_cᵀ W r
        s = y[a]
        for c in range(a):
            s -= H[a, c] * y[c]
        y[a] = s / H[a, a]
    for a in range(m - 1, -1, -1):              # Lᵀ y = z
        s = y[a]
        for c in range(a + 1, m):
            s -= H[c, a] * y[c]
        y[a] = s / H[a, a]
    feasible = True
    for j in range(C.shape[0]):
        s = 0.0
        for a in range(m):
            s += C[j, cols[a]] * y[a]
        if not (lower[j] <= s <= upper[j]):
            feasible = False
    return feasible


@njit(cache=True, nogil=True)
def remember(A, x, d, was, now, gains, frame_gains, dt, memory, force, total):
    """What the residual still holds of the forces of the frames out of contact, in place: at a
    lift-off (``was`` and not ``now``) a frame's row of ``memory`` (k × nv) becomes its part
    ``J_iᵀ f_i`` of ``x`` (the programme over every frame, columns of ``A``) and its row of
    ``force`` (k × d) its force; out of contact both decay as the observer forgets them,
    ``e^{−K Δt}`` per coordinate (exactly: the force is zero since) and per frame (its gain in
    ``frame_gains``); in contact they are zero.  ``total`` (nv,) <- the sum of the rows."""
    k, nv = was.shape[0], A.shape[0]
    for j in range(nv):
        total[j] = 0.0
    for i in range(k):
        if now[i]:
            for j in range(nv):
                memory[i, j] = 0.0
            for c in range(d):
                force[i, c] = 0.0
            continue
        if was[i]:
            for j in range(nv):
                s = 0.0
                for c in range(i * d, i * d + d):
                    s += A[j, c] * x[c]
                memory[i, j] = s
            for c in range(d):
                force[i, c] = x[i * d + c]
        elif dt > 0.0:
            for j in range(nv):
                memory[i, j] *= math.exp(-gains[j] * dt)
            a = math.exp(-frame_gains[i] * dt)
            for c in range(d):
                force[i, c] *= a
        for j in range(nv):
            total[j] += memory[i, j]


def _tangents(normal):
    """Two unit vectors orthogonal to ``normal`` and to each other."""
    n = normal
    e = np.eye(3)[int(np.argmin(np.abs(n)))]
    t1 = np.cross(n, e)
    t1 /= np.linalg.norm(t1)
    return t1, np.cross(n, t1)


#: ProxQP's tolerance on (2), relative to its scale (module text)
QP_TOLERANCE = 1e-9
#: ProxQP's outer iterations (and inner ones per outer) on (2) at most (module text)
QP_MAX_ITER = 50


class ContactForceEstimator:
    """Contact forces at ``frames`` from the momentum residual (module docstring, eq. 2).

    Parameters
    ----------
    model : ros_dynamics.Model
    frames : list of str
        Contact frames (any of ``model.frame_names``), e.g. the four feet.
    frame_model : 'point' or 'wrench'
        A 3-D force at each frame origin, or a 6-D wrench (flat feet, grippers).
    normal : (3,) array
        The contact normal in world axes (normalized here).
    threshold : float
        Normal force [N] above which a frame is in contact; > 0.
    release_ratio : float in (0, 1]
        A frame in contact is released below ``release_ratio * threshold``.
    friction : float
        μ of the linearized friction cone (> 0).
    base_weight : float
        Weight of a floating base's six rows in (2), relative to the joint rows (> 0).
    regularization : float
        ρ of (2) (> 0).
    stance_residual : StanceResidual or None
        With a floating base, the residual with the base twist from the stance legs
        (stance_residual.py) that the unexplained part is taken from (:meth:`update` with the
        state); None: from ``r``.
    gain : float or (nv,) array
        The gain [1/s] of the observer whose residual :meth:`update` is given (the contact
        state recovers its input from it: contact_state.py).
    state_options : ContactStateOptions or None
        The contact state's settings (contact_state.py; None: its defaults).
    """

    def __init__(self, model, frames, frame_model='point', normal=(0.0, 0.0, 1.0),
                 threshold=10.0, release_ratio=0.5, friction=FRICTION, base_weight=1e-6,
                 regularization=1e-12, stance_residual=None, gain=50.0, state_options=None):
        if frame_model not in FRAME_MODELS:
            raise ValueError(f'contact_frame_model must be one of {sorted(FRAME_MODELS)}, '
                             f'got {frame_model!r}')
        names = list(frames)
        if not names:
            raise ValueError('contact_frames is empty')
        if len(set(names)) != len(names):
            raise ValueError(f'contact_frames has duplicates: {names}')
        self.frames = task_frames(model, names)
        n = check_vector(normal, 3, 'contact_normal')
        if not np.linalg.norm(n) > 1e-9:
            raise ValueError('contact_normal must be a non-zero vector')
        if not (np.isfinite(threshold) and threshold > 0):
            raise ValueError(f'contact_force_threshold must be > 0, got {threshold}')
        if not 0.0 < float(release_ratio) <= 1.0:
            raise ValueError('release_ratio must be in (0, 1]')
        if not (friction > 0 and base_weight > 0 and regularization > 0):
            raise ValueError('friction, base_weight and regularization must be > 0')
        self.model = model
        self.nv = int(model.nv)
        self.frame_model = frame_model
        self.stance_residual = stance_residual if model.floating_base else None
        self.normal = n / np.linalg.norm(n)
        self.threshold = float(threshold)
        self.release_ratio = float(release_ratio)
        self.friction = float(friction)
        self.base_weight = float(base_weight)
        self.regularization = float(regularization)
        k, d = len(names), FRAME_MODELS[frame_model]
        self._k, self._d = k, d
        self._data = Data(model)
        self._zero_v = np.zeros(self.nv)
        w = np.ones(self.nv)
        if model.floating_base:
            w[:6] = self.base_weight
        self._w = w
        # the constraints of (2), per frame: n·f >= 0 and (±t_j − μ n)·f <= 0
        t1, t2 = _tangents(self.normal)
        rows = [self.normal] + [s * t - self.friction * self.normal
                                for t in (t1, t2) for s in (1.0, -1.0)]
        C = np.zeros((5 * k, k * d))
        for i in range(k):
            C[5 * i:5 * i + 5, i * d:i * d + 3] = rows
        self._C = C
        self._lower = np.tile([0.0] + [-1e20] * 4, k)
        self._upper = np.tile([1e20] + [0.0] * 4, k)
        import proxsuite        # here, not at a sample (contact_forces extra; requirements-dev)
        self._proxsuite = proxsuite
        self._all = np.ones(k, dtype=bool)
        self._cols = np.arange(k * d).reshape(k, d)             # a frame's columns, C rows
        self._rows = np.arange(5 * k).reshape(k, 5)
        self._H, self._y = np.zeros((k * d, k * d)), np.zeros(k * d)
        # the kernel compiled (or loaded from numba's cache) here, not at a sample
        weighted_least_squares(np.zeros((self.nv, k * d)), np.ones(self.nv), np.zeros(self.nv),
                               1.0, self._cols.ravel(), C, self._lower, self._upper, self._H,
                               self._y)
        self._qp = {}
        self._x = np.zeros(k * d)
        self._phi = np.zeros(k * d)      # the fast forces (contact_state.py)
        self._state_and_memory(gain, state_options)
        self.status = None               # the solver's status at the last update
        self.iterations = 0              # and its iterations (0: unconstrained)
        self.reset()

    def _state_and_memory(self, gain, state_options):
        """The contact state (contact_state.py) and what the residual still holds of a frame's
        force after its lift-off (module text): per frame, in the residual's coordinates and
        as the frame's force, and its decay rate."""
        k, d, model = self._k, self._d, self.model
        gains = np.broadcast_to(np.asarray(gain, dtype=float), (self.nv,))
        if not np.all(gains > 0):
            raise ValueError('the observer gain must be > 0')
        self.contact_state = FrameContactState(
            gains, self.normal, k, (self.threshold, self.release_ratio * self.threshold),
            state_options)
        self._gains = gains.copy()
        self._memory, self._memory_force = np.zeros((k, self.nv)), np.zeros((k, d))
        self._memory_sum = np.zeros(self.nv)
        self._all_cols = self._cols.ravel()
        body = np.asarray(model.dof_body)
        self._frame_gain = np.array([gains[body == b].mean() if np.any(body == b) else
                                     gains.mean() for b in self.frames.body])
        flags = np.zeros(k, dtype=np.bool_)    # (remember compiled or loaded here)
        remember(np.zeros((self.nv, k * d)), self._x, d, flags, flags, self._gains,
                 self._frame_gain, 1e-3, self._memory, self._memory_force, self._memory_sum)

    def _programme(self, A, r, on):
        """(2) over the frames ``on`` (bool, k) only (the others carry no force): the
        unconstrained minimizer of the strictly convex programme when it satisfies the
        constraints (then it is the solution: the usual case, every loaded frame inside its
        cone; :func:`weighted_least_squares`), else ProxQP, warm-started (one solver per set of
        frames)."""
        d = self._d
        x = np.zeros(self._k * d)
        if not on.any():
            return x
        cols = self._cols[on].ravel()
        rows = self._rows[on].ravel()
        m = cols.shape[0]
        C, lo, up = self._C[rows], self._lower[rows], self._upper[rows]
        y = self._y[:m]
        if weighted_least_squares(A, self._w, r, self.regularization, cols, C, lo, up,
                                  self._H, y):
            self.status, self.iterations = 'unconstrained', 0
        else:
            Ac = A[:, cols]
            AW = Ac.T * self._w
            H = AW @ Ac
            H.flat[::m + 1] += self.regularization
            g = -(AW @ r)
            C = C[:, cols]
            key = on.tobytes()
            qp, ps = self._qp.get(key), self._proxsuite
            if qp is None:
                # the primal LDLT backend repeats to the bit (the primal-dual one's last
                # bits move with where its memory lies: wbc.py)
                qp = ps.proxqp.dense.QP(m, 0, len(lo),
                                        dense_backend=ps.proxqp.dense.DenseBackend.PrimalLDLT)
                qp.settings.eps_rel = 0.0
                qp.settings.max_iter = qp.settings.max_iter_in = QP_MAX_ITER
                qp.settings.verbose = False
                # the first solve from no guess (a warm start would start from memory no
                # solve has written), every later one from the last answer
                qp.settings.initial_guess = ps.proxqp.InitialGuess.NO_INITIAL_GUESS
                qp.init(H, g, None, None, C, lo, up)
                self._qp[key] = qp
            else:
                qp.update(H=H, g=g)
            qp.settings.eps_abs = QP_TOLERANCE * max(1.0, float(np.abs(g).max()))
            qp.solve()
            qp.settings.initial_guess = ps.proxqp.InitialGuess.WARM_START_WITH_PREVIOUS_RESULT
            self.status = str(qp.results.info.status).rsplit('.', 1)[-1]
            self.iterations = int(qp.results.info.iter)
            y = qp.results.x
        x[cols] = y
        return x

    def reset(self):
        """Every frame out of contact; the next solve starts cold (and the stance residual
        starts over)."""
        self.contact_state.reset()
        self._memory[:] = 0.0
        self._memory_force[:] = 0.0
        self._qp = {}
        self._x[:] = 0.0
        if self.stance_residual is not None:
            self.stance_residual.reset()

    def jacobians(self, q):
        """(A, positions): the force columns of ``[J_1ᵀ … J_kᵀ]`` (nv × k d) and the frame
        origins (k, 3) at ``q``, from one kinematics pass of ``rd.task_space``."""
        check_configuration(self.model, q)
        ts = task_space(self.model, q, self._zero_v, self.frames, data=self._data)
        J = ts.jacobians[:, :self._d, :]                        # (k, d, nv)
        return J.transpose(2, 0, 1).reshape(self.nv, -1), ts.positions

    def update(self, q, r, state=None):
        """The contact forces for the residual ``r`` (nv,) at the configuration ``q``.
        ``state``: the :data:`ObserverUpdate` that gave ``r`` (the cycle's):
        with a :class:`StanceResidual` the unexplained part is then ``r̂ − Σ J_iᵀ f_i``, r̂ its
        residual with the base twist from the frames in contact (stance_residual.py)."""
        r = check_vector(r, self.nv, 'r')
        A, positions = self.jacobians(q)
        if self.stance_residual is None or state is None:
            return self.solve(A, r, positions, state)
        # the stance residual with the frames in contact at the last update: its rate gives
        # the contact state's fast force (the legs' base twist: less noise than the odometry's)
        sr = self.stance_residual
        rh = sr.update(q, state.v, state.tau, state.dt, A, self.contact_state.state,
                       state.bridge)
        out = self.solve(A, r, positions, state, rh, sr.stepped)
        out.unexplained = rh - self._memory_sum - A @ self._x       # (3) with r̂
        return out

    def solve(self, A, r, positions=None, state=None, fast=None, fast_stepped=False):
        """(2) for the columns ``A`` (nv × k d, :meth:`jacobians`) and the residual ``r``;
        ``state``: the :data:`ObserverUpdate` that gave ``r`` (the contact
        state from the fast force of ``fast``, a residual of the same gain, default ``r``, and
        the frames' motion, contact_state.py), or None (from the normal forces of (2) with
        hysteresis); ``fast_stepped``: ``fast`` stepped at this sample without an external
        torque (its rate is held: contact_state.py)."""
        k, d = self._k, self._d
        A = np.ascontiguousarray(A)
        # every frame first: its normal forces and the frames' motion decide the contact
        # states; then, if some frame is out of contact, the programme again without it: it
        # carries no force, and what it would have explained stays in the unexplained part
        x = self._programme(A, r, self._all)
        if not np.all(np.isfinite(x)):
            self.reset()
            raise ValueError('the contact-force programme gave a non-finite solution')
        fn = x.reshape(k, d)[:, :3] @ self.normal
        was = self.contact_state.state.copy()
        rr = r
        if state is None or positions is None:
            now = self.contact_state.hysteresis(fn).copy()
        else:
            now = self._state_update(A, r if fast is None else fast, x, fn, positions, state,
                                     fast_stepped)
            rr = self._remembered(A, x, r, was, now, state.dt, state.bridge)
        if not now.all():
            x = self._programme(A, rr, now)
        if not np.all(np.isfinite(x)):
            self.reset()
            raise ValueError('the contact-force programme gave a non-finite solution')
        self._x[:] = x
        wrenches = np.zeros((k, 6))
        wrenches[:, :d] = np.where(now[:, None], x.reshape(k, d), self._memory_force)
        return ContactForces(self.frames.names, now, wrenches, fn, rr - A @ x, now & ~was,
                             was & ~now,
                             np.zeros((k, 3)) if positions is None else positions.copy())

    def _state_update(self, A, fast, x, fn, positions, state, fast_stepped):
        """The frames' new contact states (contact_state.py) from the fast forces of the
        residual ``fast`` (or the programme's ``x`` without the fast residual) and the frames'
        motion; ``state``: the :data:`ObserverUpdate`."""
        v, dt, bridge = state.v, state.dt, state.bridge
        cs = self.contact_state
        forces = x
        if cs.fast:
            rho = cs.residual(fast, dt, bridge or fast_stepped)
            weighted_least_squares(A, self._w, rho, self.regularization, self._all_cols,
                                   self._C, self._lower, self._upper, self._H, self._phi)
            forces = self._phi
        if self.stance_residual is not None:      # the legs' base twist (no odometry lag)
            v = self.stance_residual.velocity
        return cs.update(forces, fn, A, np.ascontiguousarray(positions), self._d,
                         np.ascontiguousarray(v, dtype=float), 0.0 if bridge else dt).copy()

    def _remembered(self, A, x, r, was, now, dt, bridge):
        """``r`` minus what it still holds of the forces of the frames out of contact
        (:func:`remember`)."""
        remember(A, x, self._d, was, now, self._gains, self._frame_gain,
                 0.0 if bridge else dt, self._memory, self._memory_force, self._memory_sum)
        return r - self._memory_sum
