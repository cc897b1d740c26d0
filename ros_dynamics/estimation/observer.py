"""Contact observer: generalized-momentum residual, detection, isolation, force estimate.

Convention (docs/conventions.md): ``M(q) v̇ + C(q, v) v + g(q) = τ + τ_ext``, with the
Christoffel-consistent ``C`` (``Ṁ = C + Cᵀ``).

The momentum residual (De Luca and Mattone, 2003; De Luca et al., 2006)
-----------------------------------------------------------------------
With the generalized momentum ``p = M(q) v`` and ``Ṁ = C + Cᵀ``,

    ṗ = M v̇ + Ṁ v = τ + τ_ext + Cᵀ(q, v) v − g(q),

so ``τ_ext`` is the only unknown in ``ṗ``.  The residual

    r(t) = K_O [ p(t) − p(0) − ∫₀ᵗ (τ + Cᵀ v − g + r) ds ]

obeys ``ṙ = K_O (τ_ext − r)``: per joint a first-order low-pass ``K/(s + K)`` of the external
joint torque, without joint accelerations and without inverting ``M``.  Only the O(N) products
``p = M v``, ``Cᵀ v`` and ``g`` are evaluated (one fused pass, ``rd.observer_terms``; else
``rd.momentum``, ``rd.coriolis_transpose_times_v``, ``rd.gravity``); no n×n matrix is formed.

Discrete time (what :meth:`MomentumObserver.update` computes)
-------------------------------------------------------------
Write ``β(q, v) = Cᵀ(q, v) v − g(q) − τ_f(v)`` for the known state-dependent part (``τ_f`` the
optional joint-friction model, which is subtracted from the motor torque) and
``y(t) = p(t) − ∫ (τ + β) ds``, so that ``ṙ = K (ẏ − r)`` exactly.  Over one sample
``[t_k, t_k + Δt]`` take the known input as constant (zero-order hold):

* ``τ`` — the torque reported with sample ``k+1`` is the one that acted during the preceding
  period (a digital controller holds its command for one period; a motor driver reports the
  torque it applied over the last period).  ``tau_average=True`` uses ``½(τ_k + τ_{k+1})``
  instead, for torque sensors that sample the instantaneous value.
* ``β`` — known at both ends, replaced by its period mean, the trapezoid ``½(β_k + β_{k+1})``.

``p`` itself is measured at both ends, so the period mean of ``ṗ`` is exactly
``(p_{k+1} − p_k)/Δt``.  Hence ``ẏ`` is the constant

    w_k = (p_{k+1} − p_k)/Δt − τ_{k+1} − ½(β_k + β_{k+1}),

and the first-order ODE ``ṙ = K(w_k − r)`` with constant input is solved exactly:

    r_{k+1} = e^{−K Δt} r_k + (1 − e^{−K Δt}) w_k           (per joint, K = K_O[i]).

No Euler step is involved, so the filter is stable and unbiased for any ``K Δt`` (also for
irregular or dropped samples, ``Δt`` may change each call), its DC gain is exactly one, and
for an external torque that is constant over the sample, ``w_k`` equals it (up to the
trapezoid error of ``β``, O(Δt²)), so the residual is the exact sampled step response of
``K/(s+K)``.  Because the momentum differences telescope, the observer never drifts: summed
over samples it is the integral form above with ``p(t) − p(0)`` exact.

Gains: ``K`` [1/s] sets the bandwidth; the residual reaches 63 % of a step after ``1/K`` and
99.3 % after ``5/K``.  White velocity noise ``σ_v`` enters through ``Δp/Δt``; since the
differences telescope, its effect on ``r`` is about ``K M σ_v`` (proportional to ``K``), while
errors of the model (inertia, friction, payload) pass through unattenuated at low frequency.
Use the largest ``K`` the sensor noise allows for fast detection (typ. 10–200 1/s at 1 kHz).
"""

import math
from dataclasses import dataclass, field

import numpy as np
from numba import njit, types

from ..core.api import link_jacobian, observer_terms
from ..core.data import Data
from ..core.jit import entry, ready
from ..core.kernels import VEC
from ..core.validation import check_state, check_vector
from .rules import (FRICTION_EPS, THRESHOLD_BASE, THRESHOLD_TORQUE, THRESHOLD_VELOCITY,
                    any_above, friction_into, thresholds_into)

__all__ = ['MomentumObserver', 'ContactDetector', 'ContactState', 'estimate_contact_wrench',
           'friction_torque', 'joint_child_links']

_FLAGS = dict(cache=True, nogil=True)

#: rows of :attr:`MomentumObserver.state`
R, P, BETA, TAU, V, GAIN, FV, FC, FO = range(9)
ROWS = 9


@entry(types.none, VEC, VEC, types.float64, VEC, VEC, VEC, VEC, VEC, VEC, VEC, VEC,
       types.boolean, types.boolean, **_FLAGS)
def residual_step(r, gain, dt, p0, beta0, tau0, p1, ctv1, g1, tf1, tau1, average, bridge):
    """One exact zero-order-hold step of the residual filter, in place (module docstring):

        beta1 = C^T v - g - tau_f at the new sample,  tau = tau1 (or (tau0 + tau1)/2 if average),
        w = (p1 - p0)/dt - tau - (beta0 + beta1)/2,   r <- e^{-K dt} r + (1 - e^{-K dt}) w,

    then the new sample becomes the last one: p0 <- p1, beta0 <- beta1, tau0 <- tau1.

    ``bridge``: the period is a gap (``rules.observer_interval``), too long for its motion to be
    integrated as one held period (the trapezoid of beta and the held torque would turn the
    unseen motion into a residual); r keeps its value (the external torque is taken to persist
    through the gap) and the integral is re-anchored at the new sample, so the next periods
    estimate the external torque afresh: r then converges to it with the usual K/(s+K),
    without a restart, a release or a new onset."""
    for i in range(r.shape[0]):
        b1 = ctv1[i] - g1[i] - tf1[i]
        if not bridge:
            t = 0.5 * (tau0[i] + tau1[i]) if average else tau1[i]
            a = math.exp(-gain[i] * dt)
            w = (p1[i] - p0[i]) / dt - t - 0.5 * (beta0[i] + b1)
            r[i] = a * r[i] + (1.0 - a) * w
        p0[i], beta0[i], tau0[i] = p1[i], b1, tau1[i]



@njit(**_FLAGS)
def restart_at(r, p0, beta0, tau0, p1, ctv1, g1, tf1, tau1):
    """The residual filter (re)started at a sample (module docstring, ``r(0) = 0``): the
    sample's p = M v, beta = C^T v - g - tau_f and torque become the last sample's."""
    for i in range(r.shape[0]):
        r[i] = 0.0
        p0[i], beta0[i], tau0[i] = p1[i], ctv1[i] - g1[i] - tf1[i], tau1[i]

def _per_joint(x, n, name, positive=False, nonneg=False):
    a = np.asarray(x, dtype=float)
    if a.ndim == 0:
        a = np.full(n, float(a))
    if a.shape != (n,):
        raise ValueError(f'{name} must be a scalar or an array of length {n}, got shape {a.shape}')
    if not np.all(np.isfinite(a)):
        raise ValueError(f'{name} must be finite')
    if positive and np.any(a <= 0):
        raise ValueError(f'{name} must be > 0')
    if nonneg and np.any(a < 0):
        raise ValueError(f'{name} must be >= 0')
    return a.copy()


def friction_torque(v, viscous=0.0, coulomb=0.0, velocity_eps=FRICTION_EPS, offset=0.0):
    """Joint friction ``τ_f = F_v v + F_c tanh(v / ε) + b`` (:func:`rules.friction_into
    <ros_dynamics.estimation.rules.friction_into>`, the one statement of the law), for a
    velocity vector and scalar or per-joint coefficients; it opposes the motion (``b``: a
    constant offset of the measured torque), so the torque available to move the joint is
    ``τ − τ_f``.

    The Coulomb term is smoothed over ``|v| ≲ ε`` [rad/s or m/s], which avoids chattering in a
    simulator and noise-driven sign flips in the observer; ``velocity_eps <= 0`` gives the
    discontinuous ``sign(v)``.
    """
    v = np.asarray(v, dtype=float)
    shape = v.shape
    v = np.ascontiguousarray(v.reshape(-1))

    def per(x):
        return np.ascontiguousarray(np.broadcast_to(np.asarray(x, dtype=float), shape).reshape(-1))
    return friction_into(v, per(viscous), per(coulomb), per(offset), float(velocity_eps),
                         np.empty(v.shape)).reshape(shape)


class MomentumObserver:
    """Generalized-momentum residual ``r ≈ τ_ext`` (see the module docstring for the maths).

    Parameters
    ----------
    model : ros_dynamics.Model
        Model used by the observer (attach a payload with ``rd.attach_payload`` to remove a
        known model error; :meth:`set_model` swaps it at run time).
    gain : float or (nv,) array
        Observer gain ``K_O`` [1/s], per joint or one for all; must be > 0.
    friction_viscous, friction_coulomb : float or (nv,) array
        Joint-friction model (``F_v`` [N m s/rad], ``F_c`` [N m]) subtracted from ``τ``;
        see :func:`friction_torque`.  Zero by default (no friction compensation).
    friction_velocity_eps : float
        Smoothing velocity of the Coulomb term.
    tau_average : bool
        If True, use the mean of the previous and current ``τ`` over a sample instead of the
        current one (see module docstring).
    """

    def __init__(self, model, gain=50.0, friction_viscous=0.0, friction_coulomb=0.0,
                 friction_velocity_eps=FRICTION_EPS, tau_average=False, torque_offset=0.0):
        self.model = model
        self.nv = int(model.nv)
        self.nq = int(model.nq)
        n = self.nv
        # the observer's state and settings in one array (one argument for a compiled cycle,
        # cycle_kernel.py): rows R (residual), P, BETA, TAU (the last sample's p, beta, tau), V
        # (its velocity), GAIN, FV, FC, FO (friction and torque offset); the attributes below
        # are views of its rows
        self.state = np.zeros((ROWS, n))
        self._r, self._p, self._beta, self._tau, self._v = (self.state[k] for k in range(5))
        self._gain, self._fv, self._fc = self.state[GAIN], self.state[FV], self.state[FC]
        self._fo = self.state[FO]
        self._q = np.zeros(self.nq)                         # the last sample's q
        self._initialized = False
        self._have_tau = False
        self.samples = 0
        self.gain = gain
        self.set_friction(friction_viscous, friction_coulomb, torque_offset)
        self.friction_velocity_eps = float(friction_velocity_eps)
        self.tau_average = bool(tau_average)
        self._data = Data(model)                  # workspace of update(q, v, ...)
        ready(residual_step)                      # compiled (or loaded) here, not at a sample
        self._zeros, self._tf = np.zeros(n), np.zeros(n)

    # -- configuration ----------------------------------------------------------------------
    @property
    def gain(self):
        return self._gain.copy()

    @gain.setter
    def gain(self, value):
        self._gain[:] = _per_joint(value, self.nv, 'gain', positive=True)

    @property
    def friction_viscous(self):
        return self._fv.copy()

    @property
    def friction_coulomb(self):
        return self._fc.copy()

    @property
    def torque_offset(self):
        return self._fo.copy()

    def set_friction(self, viscous=None, coulomb=None, offset=None):
        """Change the friction model or the torque offset (from the next sample on)."""
        if viscous is not None:
            self._fv[:] = _per_joint(viscous, self.nv, 'friction_viscous', nonneg=True)
        if coulomb is not None:
            self._fc[:] = _per_joint(coulomb, self.nv, 'friction_coulomb', nonneg=True)
        if offset is not None:
            self._fo[:] = _per_joint(offset, self.nv, 'torque_offset')
        self._friction_on = bool(np.any(self._fv) or np.any(self._fc) or np.any(self._fo))
        if self._initialized:
            self._terms(self._q, self._v, self._p, self._beta)

    def set_model(self, model):
        """Use another model (e.g. with a payload attached) from the next sample on.

        The residual is kept; ``p`` and ``β`` at the last sample are re-evaluated with the new
        model so that the change of model does not appear as a momentum jump.
        """
        if int(model.nv) != self.nv or int(model.nq) != self.nq:
            raise ValueError('the new model has a different number of joints')
        self.model = model
        self._data = Data(model)
        if self._initialized:
            self._terms(self._q, self._v, self._p, self._beta)

    # -- state --------------------------------------------------------------------------------
    @property
    def residual(self):
        """The last residual (estimate of the external joint torque), shape (nv,)."""
        return self._r.copy()

    @property
    def initialized(self):
        return self._initialized

    def _friction(self, v):
        """τ_f(v) (into a buffer of its own), or zeros without a friction model."""
        if not self._friction_on:
            return self._zeros
        return friction_into(v, self._fv, self._fc, self._fo, self.friction_velocity_eps,
                             self._tf)

    def _terms(self, q, v, p_out, beta_out):
        """(p, β) at the validated state (q, v), from one fused O(N) pass, into the buffers."""
        p, ctv, g = observer_terms(self.model, q, v, data=self._data)
        p_out[:] = p
        np.subtract(ctv, g, out=beta_out)
        beta_out -= self._friction(v)

    def _start(self, q, v, tau):
        """Initialize at the state whose p, β are in self._p, self._beta."""
        self._q[:], self._v[:] = q, v
        self._have_tau = tau is not None
        if self._have_tau:
            self._tau[:] = tau
        self._r[:] = 0.0
        self._initialized = True
        self.samples = 0

    def reset(self, q, v, tau=None):
        """Start over at this state: ``p(0) = M(q) v``, residual zero."""
        q, v = check_state(self.model, q, v)
        tau = None if tau is None else check_vector(tau, self.nv, 'tau')
        self._terms(q, v, self._p, self._beta)
        self._start(q, v, tau)

    def reset_from(self, data, tau=None):
        """:meth:`reset` at the state of a workspace filled by ``rd.compute_all_terms``."""
        tau = None if tau is None else check_vector(tau, self.nv, 'tau')
        self._p[:] = data.p
        np.subtract(data.ctv, data.g, out=self._beta)
        self._beta -= self._friction(data.v)
        self._start(data.q, data.v, tau)

    def update(self, q, v, tau, dt, bridge=False):
        """Process one sample; returns the residual (nv,) after it.

        ``tau`` is the motor torque that acted during the ``dt`` seconds before this sample
        (see module docstring).  The first call after construction only initializes the
        observer (as :meth:`reset`) and returns zeros.  ``bridge``: as in :meth:`update_from`.
        """
        q, v, tau = check_state(self.model, q, v, tau=tau)
        dt = _positive_dt(dt)
        if not self._initialized:
            self.reset(q, v, tau)
            return self._r.copy()
        p, ctv, g = observer_terms(self.model, q, v, data=self._data)
        return self._step(p, ctv, g, q, v, tau, dt, bridge)

    def update_from(self, data, tau, dt, bridge=False):
        """:meth:`update` with p = M v, Cᵀ v, g and the state taken from ``data``, a workspace
        that ``rd.compute_all_terms(model, q, v, data)`` filled for this sample (same model):
        no kinematics pass of its own.  Only ``tau`` and ``dt`` are validated here.
        ``bridge``: the period is a gap; the residual is kept and the integral re-anchored
        here (:func:`residual_step`)."""
        tau = check_vector(tau, self.nv, 'tau')
        dt = _positive_dt(dt)
        if not self._initialized:
            self.reset_from(data, tau)
            return self._r.copy()
        return self._step(data.p, data.ctv, data.g, data.q, data.v, tau, dt, bridge)

    @property
    def last_q(self):
        """The last sample's q (the array itself: a compiled cycle writes it)."""
        return self._q

    def _step(self, p, ctv, g, q, v, tau, dt, bridge=False):
        residual_step(self._r, self._gain, dt, self._p, self._beta, self._tau, p, ctv, g,
                      self._friction(v), tau, self.tau_average and self._have_tau, bridge)
        self._have_tau = True
        self._q[:], self._v[:] = q, v
        self.samples += 1
        return self._r.copy()


def _positive_dt(dt):
    dt = float(dt)
    if not (math.isfinite(dt) and dt > 0.0):
        raise ValueError(f'dt must be a positive finite number, got {dt}')
    return dt


# ---------------------------------------------------------------------------------------------
# Topology helpers


def joint_child_links(model):
    """For each velocity index, the link (body) its DoF moves: the joint's child link.

    Floating-base DoFs (0..5) map to the base link.  Returns a list of length nv.
    """
    return [model.body_names[int(b)] for b in model.dof_body]


def _dof_depth(model):
    """Depth of each DoF in the DoF tree (number of DoFs on the path from the root)."""
    nv = int(model.nv)
    parent = np.asarray(model.dof_parent, dtype=int)
    depth = np.zeros(nv, dtype=int)
    for s in range(nv):
        depth[s] = 1 if parent[s] < 0 else depth[parent[s]] + 1
    return depth, parent


@dataclass
class ContactState:
    """Result of :meth:`ContactDetector.update`."""
    in_contact: bool = False
    link: object = None                 # isolated contact link (deepest active joint's child)
    joints: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    joint: object = None                # velocity index of the deepest active joint
    links: list = field(default_factory=list)   # one link per active branch (several contacts)
    onset: bool = False                 # contact started at this sample
    release: bool = False               # contact ended at this sample


class ContactDetector:
    """Threshold detection with hysteresis, and isolation of the contact link.

    A joint becomes *active* when ``|r_i| > threshold_i`` and stays active until
    ``|r_i| < release_ratio * threshold_i``.  The threshold is ``threshold + threshold_velocity
    |v_i| + threshold_torque |tau_i|`` at the sample's velocity and measured torque
    (:func:`~ros_dynamics.estimation.rules.threshold_at`; the last two 0 by default: a constant
    threshold); :attr:`thresholds` holds the three rows.  ``in_contact`` is true while any joint is active
    (after ``min_samples`` consecutive samples above threshold, a debounce against noise
    spikes; 1 = none).

    Isolation: an external force on link ``L`` produces ``τ_ext = J_Lᵀ F``, whose entries are
    zero for every joint that does not move ``L`` (the columns of ``J_L`` beyond ``L`` are
    zero).  For a single contact, the deepest active joint in the kinematic tree therefore
    moves the contact link, which is that joint's child link.  ``links`` lists one such link
    per active branch (a hint for multiple contacts on a tree).  Limitation: a force whose line
    of action passes through the axes of the contact link's own joint gives no torque there,
    and a more proximal link is reported.
    """

    def __init__(self, model, threshold=1.0, release_ratio=0.5, min_samples=1,
                 threshold_velocity=0.0, threshold_torque=0.0):
        self.nv = int(model.nv)
        self.thresholds = np.zeros((3, self.nv))     # rules.THRESHOLD_BASE ... (one argument)
        self._base = self.thresholds[THRESHOLD_BASE]  # (one view, not one per read)
        self.threshold = threshold
        self.thresholds[THRESHOLD_VELOCITY] = _per_joint(threshold_velocity, self.nv,
                                                         'threshold_velocity', nonneg=True)
        self.thresholds[THRESHOLD_TORQUE] = _per_joint(threshold_torque, self.nv,
                                                       'threshold_torque', nonneg=True)
        self._thr = np.zeros(self.nv)
        self._no_state = np.zeros(self.nv)
        if not 0.0 < float(release_ratio) <= 1.0:
            raise ValueError('release_ratio must be in (0, 1]')
        self.release_ratio = float(release_ratio)
        self.min_samples = max(1, int(min_samples))
        self.joint_links = joint_child_links(model)
        ready(any_above)
        self._depth, self._parent = _dof_depth(model)
        # ancestors (inclusive) of every DoF, to find the leaves of the active set
        self._ancestors = []
        for s in range(self.nv):
            anc, a = set(), s
            while a >= 0:
                anc.add(a)
                a = int(self._parent[a])
            self._ancestors.append(anc)
        self.reset()

    @property
    def threshold(self):
        """The base level of the thresholds (nv,) (a view: the row the compiled cycle reads)."""
        return self._base

    @threshold.setter
    def threshold(self, value):
        self.thresholds[THRESHOLD_BASE] = _per_joint(value, self.nv, 'threshold', positive=True)

    def reset(self):
        self._active = np.zeros(self.nv, dtype=bool)
        self._any_active = False
        no_joints = np.zeros(self.nv, dtype=bool)
        no_joints.flags.writeable = False
        self._free = ContactState(False, None, no_joints, None, [], False, False)
        self._above_count = 0
        self._in_contact = False
        self.state = ContactState(joints=self._active.copy())

    @property
    def free(self):
        """No joint active and no contact: the next residual below every threshold is a
        free-motion sample (:meth:`free_sample`)."""
        return not (self._in_contact or self._any_active)

    def free_sample(self):
        """:meth:`update` with a residual that a compiled cycle found below every threshold
        while :attr:`free` (the free-motion state, shared; not to be modified)."""
        self._above_count = 0
        self.state = self._free
        return self._free

    def update(self, r, v=None, tau=None):
        """One residual ``r`` (nv,), at the sample's velocity ``v`` and measured torque ``tau``
        (for state-dependent thresholds; None: zero)."""
        r = check_vector(r, self.nv, 'r')
        v = self._no_state if v is None else check_vector(v, self.nv, 'v')
        tau = self._no_state if tau is None else check_vector(tau, self.nv, 'tau')
        if not (self._in_contact or self._any_active or any_above(r, self.thresholds, v, tau)):
            # the usual case, free motion: nothing active, nothing to isolate
            return self.free_sample()
        mag = np.abs(r)
        thr = thresholds_into(self.thresholds, v, tau, self._thr)
        above = mag > thr
        self._active = above | (self._active & (mag >= self.release_ratio * thr))
        self._any_active = bool(self._active.any())
        self._above_count = self._above_count + 1 if above.any() else 0
        was = self._in_contact
        if not was:
            now = self._above_count >= self.min_samples
        else:
            now = bool(self._active.any())
        self._in_contact = now
        link, joint, links = None, None, []
        if now and self._active.any():
            act = np.flatnonzero(self._active)
            joint = int(act[np.argmax(self._depth[act])])
            link = self.joint_links[joint]
            aset = set(int(i) for i in act)
            for i in act:
                # a leaf: no other active DoF has i as an ancestor
                if not any(int(i) in self._ancestors[j] for j in aset if j != i):
                    if self.joint_links[i] not in links:
                        links.append(self.joint_links[i])
        self.state = ContactState(in_contact=now, link=link, joints=self._active.copy(),
                                  joint=joint, links=links, onset=now and not was,
                                  release=was and not now)
        return self.state


def estimate_contact_wrench(model, q, r, link, point=None, force_only=False, rcond=None):
    """Least-squares contact wrench ``F`` (6,) [force; torque], world frame, at ``point``.

    Solves ``J(q)ᵀ F = r`` with the link Jacobian at ``point`` (link frame; default the link
    origin): the minimum-norm least-squares solution.  With ``force_only=True`` a pure force at
    the point is estimated (``J_linᵀ f = r``, torque entries returned as zero), which is the
    right model for a point contact at a known location and needs only 3 joints between the
    root and the link instead of 6.
    """
    nv = int(model.nv)
    r = check_vector(r, nv, 'r')
    J = link_jacobian(model, q, link, point)
    if force_only:
        f = np.linalg.lstsq(J[:3].T, r, rcond=rcond)[0]
        return np.concatenate([f, np.zeros(3)])
    return np.linalg.lstsq(J.T, r, rcond=rcond)[0]


def filtered_columns(t, columns, restart, gain, bridge=None):
    """The observer's filter on parameter columns, streamed: for each sample k of the times
    ``t``, given ``columns`` yielding (P_k, B_k) (nv × p: the change of p and β per unit
    parameter), yields ``ρ_k = a ρ_{k−1} + (1 − a) w_k`` with ``w_k = (P_k − P_{k−1})/Δt −
    ½(B_k + B_{k−1})``, ``a = e^{−K Δt}`` (K = ``gain``, one or per coordinate); restarted
    (zero) where ``restart``, held where ``bridge`` (a gap the cycle bridged).  The array
    yielded is reused: copy what is kept."""
    cur = K = P_prev = B_prev = None
    for k, (P, B) in enumerate(columns):
        if cur is None:
            cur = np.zeros(P.shape)
            K = np.broadcast_to(np.asarray(gain, dtype=float), P.shape[:1])[:, None]
        if restart[k]:
            cur[:] = 0.0
        elif bridge is None or not bridge[k]:
            dt = t[k] - t[k - 1]
            a = np.exp(-K * dt)
            cur = a * cur + (1.0 - a) * ((P - P_prev) / dt - 0.5 * (B + B_prev))
        P_prev, B_prev = P, B
        yield cur
