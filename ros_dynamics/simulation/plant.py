"""The simulated plant (no ROS): a rigid-body robot integrated under motor torques, external
wrenches and contact models, with the sensors that measure it.  Ground truth for the observer.

* Plant: ``M_p(q) v̇ + C_p v + g_p = τ_cmd − τ_f(v) + τ_ext`` with ``forward_dynamics``
  (CRBA + sparse LTDL) of the *plant's* model ``M_p, C_p, g_p``.  The plant may differ from
  the model the controller and the observer use (an imperfect-model robot):

  - joint friction ``τ_f = F_v v + F_c tanh(v/ε)`` (viscous + smoothed Coulomb, per joint; the
    model of :func:`ros_dynamics.estimation.observer.friction_torque`);
  - an unknown payload on a link (``payload=(link, mass, com, inertia)``), lumped into the
    plant's model only with :func:`ros_dynamics.core.model.attach_payload`.

* Integrator: semi-implicit (symplectic) Euler at ``dt`` (default 1 ms = 1 kHz):
  ``v_{k+1} = v_k + Δt a_k``, ``q_{k+1} = q_k ⊕ Δt v_{k+1}`` (quaternion exponential for a
  floating base).  It is stable for the contact stiffnesses used here (``ω Δt ≪ 2``) and costs
  one forward-dynamics call per step.
* Controller: any ``controller(t, q, v, q_d, v_d) -> τ`` on the *measured* state, computed once
  per period and held over it (zero-order hold), as a 1 kHz digital controller does; the default
  is PD + gravity compensation (:class:`PDGravityController`, the law
  :class:`ros_dynamics.control.laws.PDGravity` on the controller's model).
* Contacts (ground truth): :class:`WrenchContact` (known wrench at a link point over a time
  window) and :class:`WallContact` (stiff unilateral spring-damper plane acting on a link
  point); ``τ_ext = Σ Jᵀ F`` with ``link_jacobian`` (world frame, linear rows first).
* Sensors: additive white Gaussian noise on position, velocity and effort.

Sample convention (the one :class:`ros_dynamics.estimation.observer.MomentumObserver` assumes):
a sample at ``t_{k+1}`` carries the state at ``t_{k+1}`` and the motor torque (and the true
external torque) that acted during ``[t_k, t_{k+1}]``.
"""

import math
from dataclasses import dataclass

import numpy as np

from ..control.laws import PDGravity
from ..core import configuration
from ..core.api import forward_dynamics, gravity, link_jacobian, link_placement
from ..core.model import attach_payload
from ..estimation.observer import friction_torque
from ..estimation.rules import FRICTION_EPS

__all__ = ['Simulator', 'PDGravityController', 'WrenchContact', 'WallContact', 'Sample',
           'link_point_position', 'integrate', 'plant_model']


def link_point_position(model, q, link, point=None):
    """World position of ``point`` (link frame, default origin) of ``link`` at ``q``."""
    pt = np.zeros(3) if point is None else np.asarray(point, dtype=float)
    R, p = link_placement(model, q, link)
    return p + R @ pt


def integrate(model, q, v, dt):
    """``q ⊕ v dt`` (:func:`ros_dynamics.core.configuration.integrate`)."""
    return configuration.integrate(model, q, v, dt)


def plant_model(model, payload=None):
    """The plant's model: ``model`` with ``payload`` lumped into its link, or ``model`` itself.

    ``payload``: None, or ``(link, mass[, com[, inertia]])`` / a dict with those keys
    (``com`` in the link frame [m], ``inertia`` 3x3 about the CoM in link axes [kg m²])."""
    if payload is None:
        return model
    if isinstance(payload, dict):
        return attach_payload(model, payload['link'], payload['mass'],
                              payload.get('com', (0.0, 0.0, 0.0)), payload.get('inertia'))
    return attach_payload(model, *payload)


class PDGravityController:
    """The simulator's default controller: :class:`~ros_dynamics.control.laws.PDGravity`
    ``τ = g(q) − K_p (q − q_d) − K_d (v − v_d)`` with ``g`` of ``model`` (the controller's model,
    which may differ from the plant).  For a floating base the base rows get zero torque."""

    def __init__(self, model, kp, kd):
        self.model = model
        nj = len(model.joint_names)
        self.law = PDGravity(np.broadcast_to(np.asarray(kp, dtype=float), (nj,)),
                             np.broadcast_to(np.asarray(kd, dtype=float), (nj,)))
        self.nbase = configuration.base_nv(model)
        self.nqbase = configuration.base_nq(model)

    @property
    def kp(self):
        return self.law.kp

    @property
    def kd(self):
        return self.law.kd

    def __call__(self, t, q, v, qd, vd):
        nb = self.nbase
        tau = np.zeros(int(self.model.nv))
        g = gravity(self.model, q)
        qj, vj = q[self.nqbase:], v[nb:]
        tau[nb:] = self.law(qj, vj, qd, vd, None, None, None, g[nb:])
        return tau


# ---------------------------------------------------------------------------------------------
# Contacts


class WrenchContact:
    """A known wrench (world frame) at ``point`` of ``link`` during ``[t_start, t_end)``.

    ``ramp`` [s] > 0 blends it in and out with a smooth (cosine) ramp; 0 = a step.  With
    ``period`` the window repeats.
    """

    def __init__(self, link, force=(0.0, 0.0, 0.0), torque=(0.0, 0.0, 0.0), point=None,
                 t_start=0.0, t_end=math.inf, ramp=0.0, period=None):
        self.link = link
        self.W = np.concatenate([np.asarray(force, dtype=float).reshape(3),
                                 np.asarray(torque, dtype=float).reshape(3)])
        self.point = None if point is None else np.asarray(point, dtype=float)
        self.t_start, self.t_end, self.ramp, self.period = t_start, t_end, ramp, period

    def scale(self, t):
        if self.period:
            t = t % self.period
        if t < self.t_start or t >= self.t_end:
            return 0.0
        if self.ramp <= 0:
            return 1.0
        a = min(1.0, (t - self.t_start) / self.ramp, (self.t_end - t) / self.ramp)
        return 0.5 - 0.5 * math.cos(math.pi * a)

    def wrench(self, t, model, q, v):
        """(wrench (6,), Jacobian (6, nv)) or None when inactive."""
        s = self.scale(t)
        if s == 0.0:
            return None
        J = link_jacobian(model, q, self.link, self.point)
        return s * self.W, J


class WallContact:
    """Unilateral spring-damper plane: the free side is ``(x − plane_point)·n > 0``.

    Penetration ``d = −(x − plane_point)·n`` of the link point ``x``; while ``d > 0`` the wall
    pushes with ``F = n max(0, k d + c ḋ)`` (no pulling).
    """

    def __init__(self, link, plane_point, normal, point=None, stiffness=5000.0, damping=50.0):
        self.link = link
        self.point = None if point is None else np.asarray(point, dtype=float)
        self.p0 = np.asarray(plane_point, dtype=float).reshape(3)
        n = np.asarray(normal, dtype=float).reshape(3)
        self.n = n / np.linalg.norm(n)
        self.k, self.c = float(stiffness), float(damping)

    def wrench(self, t, model, q, v):
        x = link_point_position(model, q, self.link, self.point)
        d = -float((x - self.p0) @ self.n)
        if d <= 0.0:
            return None
        J = link_jacobian(model, q, self.link, self.point)
        ddot = -float(self.n @ (J[:3] @ v))
        f = max(0.0, self.k * d + self.c * ddot)
        if f == 0.0:
            return None
        return np.concatenate([f * self.n, np.zeros(3)]), J


# ---------------------------------------------------------------------------------------------
# Simulator


@dataclass
class Sample:
    """One sample at time ``t``: measured ``q, v`` at ``t``; ``tau`` (measured motor torque),
    ``tau_ext`` (true external joint torque) and ``contact`` over the period ending at ``t``."""
    t: float
    q: np.ndarray
    v: np.ndarray
    tau: np.ndarray
    tau_ext: np.ndarray
    contact: bool
    contact_links: tuple = ()
    q_true: np.ndarray = None
    v_true: np.ndarray = None
    wrenches: tuple = ()
    contact_points: tuple = ()


class Simulator:
    """Plant + controller + contacts + sensors; :meth:`step` advances one period ``dt``.

    ``model`` is the robot as described (kinematics of the contacts, default controller);
    plant mismatch: ``friction_viscous`` / ``friction_coulomb`` (scalar or one per joint) act in
    the plant only, and ``payload`` (see :func:`plant_model`) is attached to the plant's model
    ``plant`` only, so a controller or observer on ``model`` sees an imperfect model.
    """

    def __init__(self, model, trajectory, controller=None, contacts=(), dt=1e-3, q0=None,
                 v0=None, friction_viscous=0.0, friction_coulomb=0.0, friction_velocity_eps=FRICTION_EPS,
                 noise_position=0.0, noise_velocity=0.0, noise_effort=0.0, seed=0,
                 kp=None, kd=None, payload=None):
        self.model = model
        self.plant = plant_model(model, payload)
        self.payload = payload
        self.trajectory = trajectory
        if controller is None:
            kp = 400.0 if kp is None else kp
            kd = 40.0 if kd is None else kd
            controller = PDGravityController(model, kp, kd)
        self.controller = controller
        self.contacts = list(contacts)
        self.dt = float(dt)
        if not self.dt > 0:
            raise ValueError('dt must be > 0')
        nq, nv = int(model.nq), int(model.nv)
        qd0 = trajectory(0.0)[0]
        if q0 is None:
            q0 = configuration.neutral(model)
            q0[configuration.base_nq(model):] = qd0
        self.q = np.array(q0, dtype=float).reshape(nq)
        self.v = np.zeros(nv) if v0 is None else np.array(v0, dtype=float).reshape(nv)
        self.fv = _friction_coefficients(friction_viscous, model, 'friction_viscous')
        self.fc = _friction_coefficients(friction_coulomb, model, 'friction_coulomb')
        self.feps = friction_velocity_eps
        self.noise = (float(noise_position), float(noise_velocity), float(noise_effort))
        self.rng = np.random.default_rng(seed)
        self.t = 0.0
        self.k = 0
        self.q_meas, self.v_meas = self._measure()

    def _measure(self):
        sq, sv, _ = self.noise
        q = self.q.copy()
        v = self.v.copy()
        if sq > 0:
            nb = configuration.base_nq(self.model)
            q[nb:] += sq * self.rng.standard_normal(len(q) - nb)
        if sv > 0:
            v += sv * self.rng.standard_normal(len(v))
        return q, v

    def initial_sample(self):
        nv = int(self.model.nv)
        return Sample(self.t, self.q_meas.copy(), self.v_meas.copy(), np.zeros(nv),
                      np.zeros(nv), False, (), self.q.copy(), self.v.copy())

    def external(self, t, q, v):
        """True external joint torque, the active contact links and wrenches at (t, q, v)."""
        tau_ext = np.zeros(int(self.model.nv))
        links, wrenches, points = [], [], []
        for c in self.contacts:
            res = c.wrench(t, self.model, q, v)
            if res is None:
                continue
            W, J = res
            tau_ext += J.T @ W
            links.append(c.link)
            wrenches.append(W)
            points.append(c.point)
        return tau_ext, tuple(links), tuple(wrenches), tuple(points)

    def step(self):
        t, q, v = self.t, self.q, self.v
        qd, vd, _ = self.trajectory(t)
        tau_cmd = self.controller(t, self.q_meas, self.v_meas, qd, vd)
        external = self.external(t, q, v)
        tau = tau_cmd + external[0]
        if np.any(self.fv) or np.any(self.fc):
            tau = tau - friction_torque(v, self.fv, self.fc, self.feps)
        q1, v1, external = self._plant_step(q, v, tau, external)
        tau_ext, links, wrenches, points = external
        if not (np.all(np.isfinite(q1)) and np.all(np.isfinite(v1))):
            raise FloatingPointError(f'simulation diverged at t = {t:.4f} s')
        self.q, self.v = q1, v1
        self.k += 1
        self.t = self.k * self.dt
        self.q_meas, self.v_meas = self._measure()
        se = self.noise[2]
        tau_meas = tau_cmd if se <= 0 else tau_cmd + se * self.rng.standard_normal(len(tau_cmd))
        return Sample(self.t, self.q_meas.copy(), self.v_meas.copy(), tau_meas, tau_ext,
                      bool(links), links, q1.copy(), v1.copy(), wrenches, points)

    def _plant_step(self, q, v, tau, external):
        """One step of the plant under the total joint torque tau: semi-implicit Euler on the
        forward dynamics.  ``external`` = (tau_ext, links, wrenches, points) of the applied
        external forces; a subclass that adds contact forces returns them extended.
        Returns (q1, v1, external)."""
        a = forward_dynamics(self.plant, q, v, tau)
        v1 = v + self.dt * a
        return integrate(self.model, q, v1, self.dt), v1, external

    def run(self, duration, callback=None):
        """Simulate ``duration`` seconds; returns a dict of stacked arrays (the initial sample
        first).  ``callback(sample)`` is called for every sample, the initial one included."""
        n = int(round(duration / self.dt))
        s0 = self.initial_sample()
        if callback is not None:
            callback(s0)
        nq, nv = len(s0.q), len(s0.v)
        out = {'t': np.empty(n + 1), 'q': np.empty((n + 1, nq)), 'v': np.empty((n + 1, nv)),
               'tau': np.empty((n + 1, nv)), 'tau_ext': np.empty((n + 1, nv)),
               'contact': np.zeros(n + 1, dtype=bool)}
        out['t'][0], out['q'][0], out['v'][0] = s0.t, s0.q, s0.v
        out['tau'][0], out['tau_ext'][0] = s0.tau, s0.tau_ext
        for i in range(1, n + 1):
            s = self.step()
            if callback is not None:
                callback(s)
            out['t'][i], out['q'][i], out['v'][i] = s.t, s.q, s.v
            out['tau'][i], out['tau_ext'][i], out['contact'][i] = s.tau, s.tau_ext, s.contact
        return out




def _friction_coefficients(x, model, name):
    """Friction coefficients per velocity index: one value for all joints or one per joint
    (finite, >= 0); a floating base's six rows get none."""
    nb, nj = configuration.base_nv(model), len(model.joint_names)
    a = np.asarray(x, dtype=float)
    if a.ndim == 0:
        a = np.full(nj, float(a))
    if a.shape != (nj,):
        raise ValueError(f'{name} must be one value or one per joint ({nj}), got shape {a.shape}')
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError(f'{name} must be finite and >= 0')
    return np.concatenate([np.zeros(nb), a])
