"""A small rigid-body simulator for the bundled robots (no ROS): ground truth for the observer.

* Plant: ``M(q) v̇ + C v + g = τ_cmd − τ_f(v) + τ_ext`` with ``rd.forward_dynamics``
  (CRBA + sparse LTDL), optional joint friction ``τ_f`` (viscous + smoothed Coulomb, the same
  model as :func:`ros_dynamics.estimation.observer.friction_torque`).
* Integrator: semi-implicit (symplectic) Euler at ``dt`` (default 1 ms = 1 kHz):
  ``v_{k+1} = v_k + Δt a_k``, ``q_{k+1} = q_k ⊕ Δt v_{k+1}`` (quaternion exponential for a
  floating base).  It is stable for the contact stiffnesses used here (``ω Δt ≪ 2``) and costs one
  forward-dynamics call per step.
* Controller: joint-space PD + gravity compensation ``τ = K_p (q_d − q̃) + K_d (v_d − ṽ) + g(q̃)``
  on the *measured* state, computed once per period and held (zero-order hold) over it, as a
  1 kHz digital controller does.
* Contacts (ground truth): :class:`WrenchContact` (known wrench at a link point over a time
  window) and :class:`WallContact` (stiff unilateral spring-damper plane acting on a link
  point); ``τ_ext = Σ Jᵀ F`` with ``rd.link_jacobian`` (world frame, linear rows first).
* Sensors: additive white Gaussian noise on position, velocity and effort.

Sample convention (the one :class:`ros_dynamics.MomentumObserver` assumes): a sample at
``t_{k+1}`` carries the state at ``t_{k+1}`` and the motor torque (and the true external torque)
that acted during ``[t_k, t_{k+1}]``.
"""

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np

from ..control.trajectories import MinJerkTrajectory, SineTrajectory
from ..core import configuration
from ..core.api import forward_dynamics, gravity, link_jacobian, link_placement, mass_matrix
from ..core.bundled import bundled_urdf as _bundled_urdf
from ..estimation.observer import friction_torque

__all__ = ['Simulator', 'PDGravityController', 'MinJerkTrajectory', 'SineTrajectory',
           'WrenchContact', 'WallContact', 'Sample', 'make_scenario', 'link_point_position',
           'integrate', 'perturb_urdf_inertia', 'bundled_urdf', 'SCENARIOS',
           'simulate_observer', 'detection_metrics']

SCENARIOS = ('wall', 'push', 'mixed', 'none')


def bundled_urdf(name='arm7'):
    """Path of a bundled URDF (``arm7`` or ``quadruped``), source tree or installed share."""
    return _bundled_urdf(name)


def link_point_position(model, q, link, point=None):
    """World position of ``point`` (link frame, default origin) of ``link`` at ``q``."""
    pt = np.zeros(3) if point is None else np.asarray(point, dtype=float)
    R, p = link_placement(model, q, link)
    return p + R @ pt


def integrate(model, q, v, dt):
    """``q ⊕ v dt`` (:func:`ros_dynamics.core.configuration.integrate`)."""
    return configuration.integrate(model, q, v, dt)


def perturb_urdf_inertia(urdf_xml, rel_error=0.01, seed=0):
    """A URDF string whose link masses and inertias are scaled by independent random factors
    ``1 + rel_error * u``, ``u`` uniform in [-1, 1] (model error for robustness tests)."""
    if not urdf_xml.lstrip().startswith('<'):
        with open(urdf_xml) as f:
            urdf_xml = f.read()
    rng = np.random.default_rng(seed)
    root = ET.fromstring(urdf_xml)
    for inertial in root.iter('inertial'):
        s = 1.0 + rel_error * rng.uniform(-1.0, 1.0)
        m = inertial.find('mass')
        if m is not None:
            m.set('value', repr(float(m.get('value')) * s))
        I = inertial.find('inertia')
        if I is not None:
            for k in ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz'):
                if I.get(k) is not None:
                    I.set(k, repr(float(I.get(k)) * s))
    return ET.tostring(root, encoding='unicode')


# ---------------------------------------------------------------------------------------------
# Trajectories and controller


class PDGravityController:
    """``τ = K_p (q_d − q) + K_d (v_d − v) + g(q)`` (+ optional ``M(q) a_d`` feed-forward off).

    ``model`` is the controller's model (may differ from the plant).  Joint-space only (q and
    v of equal size); for a floating base the base rows get zero torque.
    """

    def __init__(self, model, kp, kd):
        self.model = model
        nj = len(model.joint_names)
        self.kp = np.broadcast_to(np.asarray(kp, dtype=float), (nj,)).copy()
        self.kd = np.broadcast_to(np.asarray(kd, dtype=float), (nj,)).copy()
        self.nbase = configuration.base_nv(model)

    def __call__(self, t, q, v, qd, vd):
        qb = configuration.base_nq(self.model)
        tau = gravity(self.model, q).copy()
        nb = self.nbase
        tau[nb:] += self.kp * (qd - q[qb:]) + self.kd * (vd - v[nb:])
        tau[:nb] = 0.0
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
    """Plant + controller + contacts + sensors; :meth:`step` advances one period ``dt``."""

    def __init__(self, model, trajectory, controller=None, contacts=(), dt=1e-3, q0=None,
                 v0=None, friction_viscous=0.0, friction_coulomb=0.0, friction_velocity_eps=1e-2,
                 noise_position=0.0, noise_velocity=0.0, noise_effort=0.0, seed=0,
                 kp=None, kd=None):
        self.model = model
        self.trajectory = trajectory
        nj = len(model.joint_names)
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
        self.fv = friction_viscous
        self.fc = friction_coulomb
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
        a = forward_dynamics(self.model, q, v, tau)
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


# ---------------------------------------------------------------------------------------------
# Scenarios for the bundled robots


def _arm7(model):
    return list(model.joint_names) == [f'arm_joint_{i}' for i in range(1, 8)]


def _home_pose(model):
    nj = len(model.joint_names)
    if _arm7(model):
        # tool pointing straight down (q2 − q4 + q6 = π) at both poses; it moves forward
        home = np.array([0.0, 0.3, 0.0, -1.6, 0.0, 1.2416, 0.0])
        target = np.array([0.0, 0.75, 0.0, -1.15, 0.0, 1.2416, 0.0])
        return home, target
    home = np.array([0.3 * (-1) ** i for i in range(nj)])
    return home, home + 0.35


def _limits(model, q):
    lim = getattr(model, 'joint_limits', {}) or {}
    q = np.array(q, dtype=float)
    for i, n in enumerate(model.joint_names):
        d = lim.get(n) or {}
        lo, hi = d.get('lower'), d.get('upper')
        if lo is not None and hi is not None and hi > lo:
            q[i] = min(max(q[i], lo + 0.05), hi - 0.05)
    return q


def _deepest_links(model):
    """The last body (deepest in a chain) and a middle one, for the default contacts."""
    names = list(model.link_names)
    depth = {}
    for i, p in enumerate(model.parent):
        depth[i] = 0 if p < 0 else depth[int(p)] + 1
    deepest = max(range(len(names)), key=lambda i: (depth[i], i))
    chain = []
    i = deepest
    while i >= 0:
        chain.append(i)
        i = int(model.parent[i])
    chain.reverse()
    mid = chain[max(0, len(chain) // 2)]
    return names[deepest], names[mid]


def make_scenario(model, scenario='wall', dt=1e-3, noise_position=0.0, noise_velocity=0.0,
                  noise_effort=0.0, seed=0, friction_viscous=0.0, friction_coulomb=0.0,
                  kp=None, kd=None, contact_link=None, wall_stiffness=5000.0,
                  wall_damping=50.0, push_force=30.0, controller_model=None, wall_depth=0.05):
    """A ready-to-run :class:`Simulator` and a description dict, for any fixed-base model
    (tuned for the bundled ``arm7``).  All scenarios are periodic, so a node can run forever.

    * ``wall``  (period 6 s): rest at home 1 s, min-jerk move (1.5 s) towards a target beyond
      a wall plane placed at 60 % of the way of the tool point, press 1.5 s, move back (1.5 s).
    * ``push``  (period 8 s): slow sinusoidal motion; a 30 N step force (world −x) on the
      last link during [2, 3.5) s and on a middle link during [5, 6.5) s.
    * ``mixed`` (period 9 s): the wall cycle (0–6 s), then a push on the middle link
      during [6.5, 8) s at the home pose.
    * ``none``: the sinusoidal motion only (free motion, for false-positive tests).
    """
    if scenario not in SCENARIOS:
        raise ValueError(f'unknown scenario {scenario!r}; one of {SCENARIOS}')
    nj = len(model.joint_names)
    home, target = _home_pose(model)
    home, target = _limits(model, home), _limits(model, target)
    last, mid = _deepest_links(model)
    link = contact_link or last
    nb = configuration.base_nq(model)
    qh = configuration.neutral(model)
    qt = qh.copy()
    qh[nb:], qt[nb:] = home, target
    # contact points: off the axis of the link's own joint, so that joint feels the contact
    body = model.link_frames[link][0]
    child_offsets = [model.X_p[i] for i in range(model.nbodies) if model.parent[i] == body]
    tip = max([np.asarray(p, dtype=float) for (b, R, p) in model.link_frames.values() if b == body]
              + child_offsets, key=np.linalg.norm, default=np.zeros(3))
    mid_body = model.link_frames[mid][0]
    nxt = [model.X_p[i] for i in range(model.nbodies) if model.parent[i] == mid_body]
    mid_point = 0.6 * np.asarray(nxt[0], dtype=float) if nxt else np.zeros(3)
    if _arm7(model) and contact_link is None:
        point = np.array([0.0, 0.03, 0.045])          # rim of the tool flange (r = 31.5 mm)
        push_last = np.array([-1.0, 1.0, 0.0]) / np.sqrt(2.0)
        push_mid = np.array([0.0, 0.0, -1.0])
    else:
        point = tip + np.array([0.0, 0.03, 0.0])
        push_last = np.array([-1.0, 1.0, 0.0]) / np.sqrt(2.0)
        push_mid = np.array([0.0, 0.0, -1.0])
    desc = {'scenario': scenario, 'contact_link': link, 'middle_link': mid, 'point': point,
            'middle_point': mid_point}

    amp = np.full(nj, 0.15)
    freq = 0.1 + 0.03 * np.arange(nj)
    contacts = []
    if scenario in ('wall', 'mixed'):
        T = [0.0, 1.0, 2.5, 4.0, 5.5, 6.0]
        traj_wall = MinJerkTrajectory(T, [home, home, target, target, home, home])
        xh = link_point_position(model, qh, link, point)
        xt = link_point_position(model, qt, link, point)
        d = xt - xh
        # wall normal: back towards home, perpendicular to the contact link's z axis at the
        # target (for the arm: a vertical wall, the force across the tool)
        z = link_placement(model, qt, link)[0][:, 2]
        dn = d - (d @ z) * z
        if np.linalg.norm(dn) < 0.3 * np.linalg.norm(d):
            dn = d
        n = -dn / np.linalg.norm(dn)
        p0 = xt + min(wall_depth, 0.5 * abs(n @ d)) * n   # the target is wall_depth beyond it
        contacts.append(WallContact(link, p0, n, point, wall_stiffness, wall_damping))
        desc.update(wall_point=p0, wall_normal=n)
    if scenario == 'wall':
        traj, period = traj_wall, 6.0
        traj.period = period
    elif scenario == 'mixed':
        period = 9.0
        traj = MinJerkTrajectory([0.0, 1.0, 2.5, 4.0, 5.5, 9.0],
                                 [home, home, target, target, home, home], period=period)
        contacts.append(WrenchContact(mid, force=push_force * push_mid, point=mid_point,
                                      t_start=6.5, t_end=8.0, period=period))
    elif scenario == 'push':
        period = 8.0
        traj = SineTrajectory(home, amp, freq)
        contacts.append(WrenchContact(link, force=push_force * push_last, point=point,
                                      t_start=2.0, t_end=3.5, period=period))
        contacts.append(WrenchContact(mid, force=push_force * push_mid, point=mid_point,
                                      t_start=5.0, t_end=6.5, period=period))
    else:
        period = None
        traj = SineTrajectory(home, amp, freq)
    desc['period'] = period
    ctrl_model = controller_model if controller_model is not None else model
    if kp is None or kd is None:
        # per-joint bandwidth ω and damping ζ on the diagonal of M at home: K_p = ω² M_ii,
        # K_d = 2 ζ ω M_ii (a stable explicit loop needs K_d Δt / M_ii ≪ 2)
        qh = configuration.neutral(model)
        qh[configuration.base_nq(model):] = home
        Mii = np.diag(mass_matrix(model, qh))[configuration.base_nv(model):]
        omega, zeta = 30.0, 1.0
        if kp is None:
            kp = omega**2 * Mii
        if kd is None:
            kd = 2.0 * zeta * omega * Mii
    ctrl = PDGravityController(ctrl_model, kp, kd)
    sim = Simulator(model, traj, ctrl, contacts, dt=dt, noise_position=noise_position,
                    noise_velocity=noise_velocity, noise_effort=noise_effort, seed=seed,
                    friction_viscous=friction_viscous, friction_coulomb=friction_coulomb)
    return sim, desc


# ---------------------------------------------------------------------------------------------
# Evaluation of the observer against the ground truth (tests, benchmark)


def simulate_observer(sim, observer, detector=None, duration=10.0, estimate_force=False):
    """Run ``sim`` for ``duration`` s feeding every sample to ``observer`` (and ``detector``).

    Returns a dict of arrays: ``t``, ``r`` (residual), ``tau_ext`` (truth), ``contact`` (truth),
    ``detected``, ``link`` (isolated link per sample, None when free), ``true_link`` (first
    true contact link or None), and with ``estimate_force`` ``force_err`` (relative error of the
    force-only estimate at the true link and point, NaN when not applicable).
    """
    from ..estimation.observer import estimate_contact_wrench
    n = int(round(duration / sim.dt))
    nv = int(sim.model.nv)
    res = {'t': np.empty(n + 1), 'r': np.zeros((n + 1, nv)), 'tau_ext': np.zeros((n + 1, nv)),
           'contact': np.zeros(n + 1, dtype=bool), 'detected': np.zeros(n + 1, dtype=bool),
           'link': [None] * (n + 1), 'true_link': [None] * (n + 1),
           'force_err': np.full(n + 1, np.nan), 'dt': sim.dt}
    s = sim.initial_sample()
    observer.reset(s.q, s.v)
    res['t'][0] = s.t
    for i in range(1, n + 1):
        s = sim.step()
        r = observer.update(s.q, s.v, s.tau, sim.dt)
        res['t'][i], res['r'][i], res['tau_ext'][i], res['contact'][i] = s.t, r, s.tau_ext, s.contact
        if s.contact_links:
            res['true_link'][i] = s.contact_links[0]
        if detector is not None:
            st = detector.update(r)
            res['detected'][i] = st.in_contact
            res['link'][i] = st.link
        if estimate_force and len(s.contact_links) == 1 and not np.any(s.wrenches[0][3:]):
            F = estimate_contact_wrench(sim.model, s.q, r, s.contact_links[0],
                                        s.contact_points[0], force_only=True)
            f_true = s.wrenches[0][:3]
            nf = np.linalg.norm(f_true)
            if nf > 0:
                res['force_err'][i] = np.linalg.norm(F[:3] - f_true) / nf
    return res


def _runs(mask):
    """(start, end) index pairs of the maximal runs of True in ``mask`` (end exclusive)."""
    m = np.concatenate([[False], np.asarray(mask, dtype=bool), [False]])
    d = np.flatnonzero(np.diff(m.astype(int)))
    return list(zip(d[0::2], d[1::2]))


def detection_metrics(res, gain=None, settle=None, fp_guard=0.3):
    """Summary of a :func:`simulate_observer` run.

    * per true contact episode: detection delay [s] (from the start of the first sample period
      with contact to the first detector onset; 0 if already detected; NaN if missed), the isolated link once settled (at ``settle`` s after
      the onset, default ``5/gain``, or the episode end), the true link, and the mean force
      error over the settled part;
    * ``false_onsets``: detector onsets with no true contact during the preceding ``fp_guard``
      seconds; ``false_time``: seconds flagged in contact while the truth had been free for
      ``fp_guard`` s.
    """
    t, dt = res['t'], res['dt']
    det, con = res['detected'], res['contact']
    if settle is None:
        settle = 5.0 / float(np.min(gain)) if gain is not None else 0.1
    episodes = []
    for a, b in _runs(con):
        onset = [i for i in range(a, min(len(t), b + int(0.5 / dt))) if det[i]]
        delay = np.nan   # from the start of the first contact period (t[a] - dt)
        if onset:
            # by time, not by sample count: the samples may have gaps (a ROS listener's)
            delay = t[onset[0]] - (t[a] - dt) if not (a > 0 and det[a - 1]) else 0.0
        k = min(b - 1, a + int(round(settle / dt)))
        fe = res['force_err'][k:b]
        fe = fe[np.isfinite(fe)]
        episodes.append({'start': float(t[a] - dt), 'end': float(t[b - 1]), 'delay': float(delay),
                         'true_link': res['true_link'][a], 'link': res['link'][k],
                         'force_err': float(np.mean(fe)) if fe.size else np.nan})
    guard = int(round(fp_guard / dt))
    recent = np.convolve(con.astype(float), np.ones(guard + 1))[:len(con)] > 0
    onsets = np.flatnonzero(det[1:] & ~det[:-1]) + 1
    false_onsets = int(np.sum(~recent[onsets]))
    false_time = float(np.sum(det & ~recent) * dt)
    return {'episodes': episodes, 'false_onsets': false_onsets, 'false_time': false_time,
            'duration': float(t[-1] - t[0])}
