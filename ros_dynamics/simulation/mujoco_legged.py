"""Any quadruped URDF in MuJoCo (Todorov, Erez & Tassa 2012) as a plant that is not the model:
the whole-body controller's closed loop is judged on it (``sim_mujoco`` runs it as a node).

Built from the URDF text by MuJoCo's own importer (the visual and collision shapes dropped, so no
mesh file is needed), a free joint on the root link, a floor plane and one sphere per foot
(centred on the foot frame, the only geoms that touch the floor; MuJoCo's soft contacts,
elliptic friction cones ``mu``).  What the URDF does not say, the plant may differ in
(:class:`LeggedPlantOptions`, the vocabulary of :class:`~.plant_options.PlantOptions` shared
with :mod:`.mujoco_quadruped`): a hidden load on the root link, every link's inertials off,
joint friction and rotor inertia.

Everything in and out is in the project's coordinates (docs/conventions.md):
``q = [x y z qx qy qz qw, joints]``, ``v = [base linear (base frame), base angular (base frame),
joints]``; MuJoCo's free joint keeps ``[x y z qw qx qy qz]`` and the linear velocity in world
axes.  :class:`Odometry` is what a legged robot's state estimator gives: the base pose and twist
``delay`` s late, at ``rate`` Hz, with white noise and a constant bias on the twist.

The module lacking in :mod:`.mujoco_quadruped` (the bundled robot only, driven by its own
PD) is why this one exists: the robot, its feet and its stance come from parameters here.
mujoco is imported when a plant is made (a development dependency, requirements-dev.txt).
"""

import re
from collections import deque
from dataclasses import dataclass

import numpy as np

from .mujoco_contacts import foot_contact_forces
from .plant_options import PlantOptions, add_hidden_load, apply_model_error

__all__ = ['LeggedPlantOptions', 'MujocoLegged', 'Odometry', 'TruthRecord']


@dataclass
class LeggedPlantOptions(PlantOptions):
    """How the plant differs from the URDF (:class:`~.plant_options.PlantOptions`; zeros: it
    does not), its contacts (friction coefficient ``mu``, MuJoCo's ``impratio``, the foot
    spheres' radius [m]) and its terrain: a step of ``step_rise`` m (0: a flat floor) at
    ``x = step_edge`` (world, m), up (rise > 0: the ground is higher for x >= step_edge) or
    down (rise < 0: the robot starts on the higher ground, which ends at the edge), across the
    whole floor; the controller is not told.  ``effort_limit`` [N m]: the actuators' torque,
    each joint's clipped to it (0: none, any torque applied)."""
    mu: float = 0.8
    impratio: float = 100.0
    foot_radius: float = 0.02
    seed: int = 0
    step_edge: float = 0.3
    step_rise: float = 0.0
    effort_limit: float = 0.0

    def ground(self, x):
        """The height of the ground at world ``x`` (array or float)."""
        up = np.asarray(x) >= self.step_edge
        return np.where(up == (self.step_rise > 0), abs(self.step_rise), 0.0)

    def clearance(self, p):
        """The gap [m] between a foot sphere centred at world ``p`` (..., 3) and the terrain:
        the distance from its centre to the nearer of the two levels' solids (each a
        quarter-plane in x-z bounded by the edge, so the step's corner and face count) minus
        ``foot_radius``; <= 0 where the sphere touches.  A foot resting on the step's corner
        is on the ground, though its centre is a step's height above the ground under it."""
        p = np.asarray(p, dtype=float)
        x, z = p[..., 0] - self.step_edge, p[..., 2]
        before, after = self.ground(self.step_edge - 1.0), self.ground(self.step_edge)
        to_before = np.hypot(np.maximum(x, 0.0), np.maximum(z - before, 0.0))   # x < edge
        to_after = np.hypot(np.maximum(-x, 0.0), np.maximum(z - after, 0.0))    # x >= edge
        return np.minimum(to_before, to_after) - self.foot_radius


def _strip_shapes(xml):
    """The URDF without visual/collision elements (no meshes to find) and without a
    ``<mujoco>`` element of its own."""
    for tag in ('visual', 'collision', 'mujoco'):
        xml = re.sub(rf'<{tag}\b.*?</{tag}>', '', xml, flags=re.S)
        xml = re.sub(rf'<{tag}\b[^>]*/>', '', xml)
    return re.sub(r'(<robot\b[^>]*>)', r'\1<mujoco><compiler discardvisual="true" '
                  r'fusestatic="false" balanceinertia="true"/></mujoco>', xml, count=1)


class MujocoLegged:
    """The robot of ``xml`` (URDF text) in MuJoCo, standing on the floor z = 0 at the joint
    angles ``pose`` {joint: rad} (the others 0), stepped at ``dt``.

    ``joints``: the joint order of the arrays in and out (default: MuJoCo's, i.e. the URDF's);
    ``feet``: the foot links.
    Each :meth:`step` applies the joint torques ``tau`` (project order) and a world force
    ``push`` at the root's centre of mass over one period.
    """

    def __init__(self, xml, feet, joints=None, pose=None, dt=1e-3, options=None):
        import mujoco
        self._mj = mujoco
        self.options = o = options or LeggedPlantOptions()
        spec = mujoco.MjSpec.from_string(_strip_shapes(xml))
        spec.option.timestep = dt
        spec.option.integrator = mujoco.mjtIntegrator.mjINT_EULER
        spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
        spec.option.impratio = o.impratio
        root = spec.worldbody.first_body()
        root.add_freejoint()
        self.root_name, self.feet = root.name, list(feet)
        missing = [f for f in self.feet if spec.body(f) is None]
        if missing or len(self.feet) < 3:
            raise ValueError(f'feet {self.feet}: {missing or "fewer than 3"} not links of the URDF')
        for foot in self.feet:
            spec.body(foot).add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[o.foot_radius, 0, 0],
                                     contype=1, conaffinity=0, friction=[o.mu, 0.005, 0.0001],
                                     mass=0.0, density=0.0)
        spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[5, 5, 0.1], contype=0,
                                conaffinity=1, friction=[o.mu, 0.005, 0.0001])
        if o.step_rise:                      # the higher ground: a box 10 m wide
            rise, edge = abs(o.step_rise), o.step_edge
            centre = edge + 2.5 if o.step_rise > 0 else edge - 2.5
            spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=[2.5, 5, rise / 2],
                                    pos=[centre, 0, rise / 2], contype=0, conaffinity=1,
                                    friction=[o.mu, 0.005, 0.0001])
        add_hidden_load(root, o)
        self.m = m = spec.compile()
        self.joints = list(joints) if joints is not None else [
            m.joint(j).name for j in range(m.njnt) if m.jnt_type[j] != mujoco.mjtJoint.mjJNT_FREE]
        self._qadr = np.array([m.joint(n).qposadr[0] for n in self.joints])
        self._vadr = np.array([m.joint(n).dofadr[0] for n in self.joints])
        apply_model_error(m, o, self._vadr)
        self.d = d = mujoco.MjData(m)
        mujoco.mj_setConst(m, d)
        self.dt = dt
        self._root = m.body(self.root_name).id
        self._foot_body = {m.body(f).id: i for i, f in enumerate(self.feet)}
        self.mass = float(np.sum(m.body_mass))
        unknown = sorted(set(pose or {}) - set(self.joints))
        if unknown:
            raise ValueError(f'pose names {unknown}, not joints of the URDF')
        self.q_pose = np.array([float((pose or {}).get(n, 0.0)) for n in self.joints])
        d.qpos[self._qadr] = self.q_pose
        d.qpos[3] = 1.0
        mujoco.mj_kinematics(m, d)
        lowest = min(d.xpos[b][2] - o.ground(d.xpos[b][0]) for b in self._foot_body)
        d.qpos[2] = o.foot_radius - lowest
        mujoco.mj_forward(m, d)
        self.t = 0.0
        self.unstable_at = None     # plant time [s] MuJoCo first found its accelerations bad
        self.tau = np.zeros(len(self.joints))
        self.foot_forces = np.zeros((len(self.feet), 3))
        self.touching = np.zeros(len(self.feet), dtype=bool)
        self.push_generalized = np.zeros(m.nv)

    def state(self):
        """(q, v) in the project's coordinates."""
        d = self.d
        q = np.concatenate([d.qpos[:3], d.qpos[4:7], d.qpos[3:4], d.qpos[self._qadr]])
        R = d.xmat[self._root].reshape(3, 3)
        v = np.concatenate([R.T @ d.qvel[:3], d.qvel[3:6], d.qvel[self._vadr]])
        return q, v

    def com(self):
        """The whole robot's centre of mass (world), the plant's truth (load included)."""
        return self.d.subtree_com[self._root].copy()

    def foot_positions(self):
        """(k, 3) the feet frames' origins (world)."""
        return np.array([self.d.xpos[b] for b in self._foot_body])

    def step(self, tau, push=(0.0, 0.0, 0.0)):
        """Apply ``tau`` (joints, project order) and ``push`` (N, world) over one step; the
        feet's contact forces over it are then in :attr:`foot_forces` (world, on the foot),
        which feet MuJoCo had in contact (a contact with a positive normal force) in
        :attr:`touching`, and the push's generalized force (project coordinates: the
        velocity's, power invariant) in :attr:`push_generalized`."""
        mj, m, d = self._mj, self.m, self.d
        self.tau = np.array(tau, dtype=float)
        if self.options.effort_limit > 0:           # the actuators saturate
            np.clip(self.tau, -self.options.effort_limit, self.options.effort_limit,
                    out=self.tau)
        d.qfrc_applied[self._vadr] = self.tau       # (its other entries stay zero)
        px, py, pz = (float(x) for x in push)
        # (Python per step costs more than MuJoCo's: only what changes is written)
        if px or py or pz or d.xfrc_applied[self._root, :3].any():
            d.xfrc_applied[self._root, :3] = (px, py, pz)     # at the root's centre of mass
            f = np.zeros(m.nv)
            mj.mj_applyFT(m, d, np.array((px, py, pz)), np.zeros(3), d.xipos[self._root],
                          self._root, f)
            R = d.xmat[self._root].reshape(3, 3)
            self.push_generalized = np.concatenate([R.T @ f[:3], f[3:6], f[self._vadr]])
        mj.mj_step(m, d)
        if self.unstable_at is None and d.warning[mj.mjtWarning.mjWARN_BADQACC].number:
            self.unstable_at = self.t     # MuJoCo reset its state: what follows is no motion
        mj.mj_forward(m, d)       # positions-dependent quantities (CoM, frames) at the new t
        self.t += self.dt
        self.foot_forces, self.touching = foot_contact_forces(mj, m, d, self._foot_body)

    def hold(self, kp, kd):
        """Joint PD torques towards the standing pose (before the first command, and when
        commands stop)."""
        q, v = self.state()
        return kp * (self.q_pose - q[7:]) - kd * v[6:]


class Odometry:
    """A legged robot's base state estimate from the plant's truth: each :meth:`sample` call
    (every plant step) stores (t, q, v); every ``1/rate`` s it returns the state of ``delay`` s
    ago (stamped with that time; the first state stands for the times before it) with white
    noise ``noise_linear`` (m/s) and ``noise_angular``
    (rad/s) and the constant ``bias_linear`` (m/s, base frame) on the twist, and white noise
    ``noise_position`` (m) on the position; else None."""

    def __init__(self, rate=1000.0, delay=0.0, noise_linear=0.0, noise_angular=0.0,
                 bias_linear=(0.0, 0.0, 0.0), noise_position=0.0, seed=0):
        if not rate > 0 or delay < 0:
            raise ValueError('odometry rate must be > 0 and delay >= 0')
        self.period, self.delay = 1.0 / rate, float(delay)
        self.noise = (float(noise_linear), float(noise_angular), float(noise_position))
        self.bias = np.asarray(bias_linear, dtype=float)
        self.rng = np.random.default_rng(seed)
        self.history = deque()
        self._next = 0.0

    def sample(self, t, q, v):
        """(stamp t', q7, v6) of the state at t' = t − delay when one is due, else None."""
        self.history.append((t, q[:7].copy(), v[:6].copy()))
        if t + 1e-9 < self._next:
            return None
        while len(self.history) > 1 and self.history[1][0] <= t - self.delay + 1e-9:
            self.history.popleft()
        ts, q7, v6 = self.history[0]
        # before delay s of history: the first state (the plant settled at rest before it)
        ts = min(ts, t - self.delay)
        self._next = t + self.period - 1e-9
        nl, na, npos = self.noise
        v6 = v6.copy()
        v6[:3] += self.bias + nl * self.rng.standard_normal(3)
        v6[3:] += na * self.rng.standard_normal(3)
        q7 = q7.copy()
        q7[:3] += npos * self.rng.standard_normal(3)
        return ts, q7, v6


class TruthRecord:
    """What the plant did, per step (its truth, for the metrics): stamp, CoM, base pose and
    twist (the project's coordinates: linear and angular velocity in the base frame), feet
    positions; over the period ending at the stamp its contact forces, which feet MuJoCo had
    in contact, the torque and the push's generalized force; the push to come."""

    FIELDS = ('stamp_ns', 'com', 'base', 'twist', 'feet', 'foot_forces', 'push', 'tau',
              'touching', 'push_generalized')

    def __init__(self):
        self.rows = {k: [] for k in self.FIELDS}

    def add(self, stamp_ns, plant, push, state=None):
        """One step's row; ``state``: the plant's (q, v) now if the caller has it."""
        q, v = plant.state() if state is None else state
        for k, x in zip(self.FIELDS, (stamp_ns, plant.com(), q[:7], v[:6],
                                      plant.foot_positions(), plant.foot_forces.copy(),
                                      np.asarray(push, float), plant.tau.copy(),
                                      plant.touching.copy(), plant.push_generalized.copy())):
            self.rows[k].append(x)

    def save(self, path, **meta):
        np.savez(path, **{k: np.asarray(v) for k, v in self.rows.items()},
                 **{k: np.asarray(v) for k, v in meta.items()})
