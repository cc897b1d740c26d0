"""Scenarios for the bundled robots (no ROS): home poses, joint limits, contact links and the
ready-to-run :class:`~ros_dynamics.simulation.plant.Simulator` of :func:`make_scenario`."""

import xml.etree.ElementTree as ET

import numpy as np

from ..control.trajectories import MinJerkTrajectory, SineTrajectory
from ..core import configuration
from ..core.api import link_placement, mass_matrix
from ..core.bundled import bundled_urdf as _bundled_urdf
from .plant import PDGravityController, Simulator, WallContact, WrenchContact, link_point_position

__all__ = ['SCENARIOS', 'make_scenario', 'home_pose', 'clip_to_limits', 'deepest_links',
           'bundled_urdf', 'perturb_urdf_inertia']

SCENARIOS = ('wall', 'push', 'mixed', 'none')


def bundled_urdf(name='arm7'):
    """Path of a bundled URDF (``arm7`` or ``quadruped``), source tree or installed share."""
    return _bundled_urdf(name)


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


def _arm7(model):
    return list(model.joint_names) == [f'arm_joint_{i}' for i in range(1, 8)]


def home_pose(model):
    """(home, target) joint positions of the scenarios (arm7: the tool pointing down)."""
    nj = len(model.joint_names)
    if _arm7(model):
        # tool pointing straight down (q2 − q4 + q6 = π) at both poses; it moves forward
        home = np.array([0.0, 0.3, 0.0, -1.6, 0.0, 1.2416, 0.0])
        target = np.array([0.0, 0.75, 0.0, -1.15, 0.0, 1.2416, 0.0])
        return home, target
    home = np.array([0.3 * (-1) ** i for i in range(nj)])
    return home, home + 0.35


def clip_to_limits(model, q):
    """``q`` clipped 0.05 inside the joint limits of the model (joints with both limits)."""
    lim = getattr(model, 'joint_limits', {}) or {}
    q = np.array(q, dtype=float)
    for i, n in enumerate(model.joint_names):
        d = lim.get(n) or {}
        lo, hi = d.get('lower'), d.get('upper')
        if lo is not None and hi is not None and hi > lo:
            q[i] = min(max(q[i], lo + 0.05), hi - 0.05)
    return q


def deepest_links(model):
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
                  wall_damping=50.0, push_force=30.0, controller_model=None, wall_depth=0.05,
                  payload=None):
    """A ready-to-run :class:`Simulator` and a description dict, for any fixed-base model
    (tuned for the bundled ``arm7``).  All scenarios are periodic, so a node can run forever.

    * ``wall``  (period 6 s): rest at home 1 s, min-jerk move (1.5 s) towards a target beyond
      a wall plane placed at 60 % of the way of the tool point, press 1.5 s, move back (1.5 s).
    * ``push``  (period 8 s): slow sinusoidal motion; a 30 N step force (world −x) on the
      last link during [2, 3.5) s and on a middle link during [5, 6.5) s.
    * ``mixed`` (period 9 s): the wall cycle (0–6 s), then a push on the middle link
      during [6.5, 8) s at the home pose.
    * ``none``: the sinusoidal motion only (free motion, for false-positive tests).

    Plant mismatch: ``friction_viscous``, ``friction_coulomb`` (one value or one per joint) and
    ``payload`` (``(link, mass[, com[, inertia]])``) act in the plant only
    (:class:`~ros_dynamics.simulation.plant.Simulator`); ``controller_model`` (default
    ``model``) is the model of the PD + gravity controller.
    """
    if scenario not in SCENARIOS:
        raise ValueError(f'unknown scenario {scenario!r}; one of {SCENARIOS}')
    nj = len(model.joint_names)
    home, target = home_pose(model)
    home, target = clip_to_limits(model, home), clip_to_limits(model, target)
    last, mid = deepest_links(model)
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
                    friction_viscous=friction_viscous, friction_coulomb=friction_coulomb,
                    payload=payload)
    return sim, desc
