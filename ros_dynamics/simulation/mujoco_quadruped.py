"""The bundled quadruped in MuJoCo (Todorov, Erez & Tassa 2012): a plant that is not the
project's simulator, for the contact-force estimate's checks and figures.

The model is MuJoCo's own import of ``urdf/quadruped.urdf`` (same inertias, static links kept
as bodies, the visual shapes kept as geoms), with a free joint on the trunk, a floor plane and
contacts between the floor and the four 2 cm foot spheres only.  Everything in and out is in
the project's coordinates (docs/conventions.md): ``q = [x y z qx qy qz qw, joints]`` and
``v = [base linear, base angular (base frame), joints]``, whereas MuJoCo's free joint keeps
``[x y z qw qx qy qz]`` and the linear velocity in world axes.  A generalized force converts as
the velocity does (power is invariant): ``f = [Rᵀ f_lin, f_ang, f_joints]``.

The plant need not be the model (:class:`~.plant_options.PlantOptions`, all off by default,
the vocabulary shared with :mod:`.mujoco_legged`): a load on the trunk that the URDF does not
know, every link's mass, centre of mass and inertia off by a random 20-30 %, joint friction
(viscous and Coulomb) and rotor inertia (MuJoCo's ``damping``, ``frictionloss`` and
``armature``).  What a robot's sensors report is :class:`Sensors` of
:class:`SensingOptions` (exact by default): white noise on the joint velocities and torques,
and the base pose and twist of a legged state estimator (Pronto, invariant-EKF style): white
noise and a bias on the twist, a delay, a rate lower than the joint states', each value held
until the next.  Every figure is judged on the plant's truth (:meth:`MujocoQuadruped.step`,
its contact data), never on the sensed values.

mujoco is imported when a plant is made (a development dependency, requirements-dev.txt).
"""

from collections import deque
from dataclasses import dataclass

import numpy as np

from .mujoco_contacts import foot_contact_forces
from .plant_options import PlantOptions, add_hidden_load, apply_model_error

FEET = ('LF_foot', 'RF_foot', 'LH_foot', 'RH_foot')


@dataclass
class SensingOptions:
    """What the sensors report (all exact by default, the odometry at every sample).

    Joints: white noise of ``velocity_noise`` [rad/s] and ``torque_noise`` [N m] (1 σ per
    sample).  Base pose and twist (an odometry, as a legged robot's state estimator gives):
    white noise ``odom_linear_noise`` [m/s] and ``odom_angular_noise`` [rad/s] and the
    constant biases ``odom_linear_bias``, ``odom_angular_bias`` (base axes) on the twist; the
    pose and twist ``odom_delay`` [s] old; a new value every 1/``odom_rate`` s (0: every
    sample), held in between.  :data:`REALISTIC_ODOMETRY` is the issue's case: 0.03 m/s,
    10 ms late, 200 Hz."""
    velocity_noise: float = 0.0
    torque_noise: float = 0.0
    odom_linear_noise: float = 0.0
    odom_angular_noise: float = 0.0
    odom_linear_bias: tuple = (0.0, 0.0, 0.0)
    odom_angular_bias: tuple = (0.0, 0.0, 0.0)
    odom_delay: float = 0.0
    odom_rate: float = 0.0
    seed: int = 0


#: the odometry of a legged state estimator: 0.03 m/s white noise on the linear twist, 10 ms
#: late, 200 Hz against 1 kHz joint states
REALISTIC_ODOMETRY = SensingOptions(odom_linear_noise=0.03, odom_delay=0.01, odom_rate=200.0)


class Sensors:
    """The sensed (q, v, tau) of a plant's true samples at period ``dt`` (:class:`SensingOptions`;
    the project's coordinates: the base pose ``q[:7]`` and twist ``v[:6]`` are the odometry's).
    Call :meth:`measure` once per sample, in order."""

    def __init__(self, options, dt):
        self.options, self.dt = options, float(dt)
        self._rng = np.random.default_rng(options.seed)
        self._lag = int(round(options.odom_delay / self.dt))
        self._every = (1 if options.odom_rate <= 0 else
                       max(1, int(round(1.0 / (options.odom_rate * self.dt)))))
        self._history = deque(maxlen=self._lag + 1)
        self._bias = np.concatenate([options.odom_linear_bias, options.odom_angular_bias])
        self._sigma = np.repeat([options.odom_linear_noise, options.odom_angular_noise], 3)
        self._held = None
        self._k = 0

    def measure(self, q, v, tau):
        """(q, v, tau) as reported for the true sample (q, v, tau)."""
        o, rng = self.options, self._rng
        q, v, tau = np.array(q, dtype=float), np.array(v, dtype=float), np.array(tau, dtype=float)
        self._history.append((q[:7].copy(), v[:6].copy()))
        if self._held is None or self._k % self._every == 0:
            qb, vb = self._history[0]               # odom_delay old (the oldest kept)
            vb = vb + self._bias + self._sigma * rng.standard_normal(6)
            self._held = (qb, vb)
        self._k += 1
        q[:7], v[:6] = self._held
        if o.velocity_noise > 0:
            v[6:] += o.velocity_noise * rng.standard_normal(v.size - 6)
        if o.torque_noise > 0:
            tau[6:] += o.torque_noise * rng.standard_normal(tau.size - 6)
        return q, v, tau


def joint_pose(names, pose):
    """The joint positions of a stance ``pose`` = (HAA, HFE, KFE) [rad] for the joints
    ``names`` ('LF_HAA', ...): HAA abducts (outward on both sides: + on the left legs, − on
    the right ones), HFE and KFE as given."""
    out = []
    for n in names:
        leg, joint = n.split('_')
        x = pose[('HAA', 'HFE', 'KFE').index(joint)]
        out.append(-x if joint == 'HAA' and leg.startswith('R') else x)
    return np.array(out, dtype=float)


class MujocoQuadruped:
    """The quadruped standing on a floor in MuJoCo, joints driven by ``controller`` (a
    :class:`~ros_dynamics.simulation.plant.PDGravityController` on the project's model) towards
    ``trajectory(t)`` targets, stepped at ``dt`` (1 kHz by default).

    :meth:`step` returns (t, q, v, tau, foot_forces (4, 3) world axes, push generalized force
    (nv,)) over the period ending at t: what the feet and the push applied during that step,
    the true state and the applied torque; :attr:`touching` (4,) then says which feet MuJoCo
    had in contact (a contact of its contact data with a positive normal force).  ``options``:
    :class:`PlantOptions` (the plant's departures from the URDF); ``pose``: the initial
    (HAA, HFE, KFE) of every leg (:func:`joint_pose`), the feet put on the floor.
    """

    def __init__(self, urdf_path, model, controller, trajectory, dt=1e-3, mu=0.8,
                 pose=(0.0, 0.7, -1.4), options=None):
        import mujoco
        self._mj = mujoco
        with open(urdf_path) as f:
            text = f.read()
        text = text.replace('<robot name="quadruped">', '<robot name="quadruped"><mujoco>'
                            '<compiler discardvisual="false" fusestatic="false" '
                            'balanceinertia="false"/></mujoco>', 1)
        spec = mujoco.MjSpec.from_string(text)
        spec.option.timestep = dt
        spec.option.integrator = mujoco.mjtIntegrator.mjINT_EULER
        spec.body('trunk').add_freejoint()
        for g in spec.geoms:                        # only the feet touch the floor
            foot = g.parent.name in FEET
            g.contype, g.conaffinity = (1, 0) if foot else (0, 0)
            g.friction = [mu, 0.005, 0.0001]
        spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[5, 5, 0.1],
                                contype=0, conaffinity=1, friction=[mu, 0.005, 0.0001])
        self.options = options = options or PlantOptions()
        add_hidden_load(spec.body('trunk'), options)
        self.m = spec.compile()
        self.d = mujoco.MjData(self.m)
        self.model, self.controller, self.trajectory, self.dt = model, controller, trajectory, dt
        names = list(model.joint_names)
        self._qadr = np.array([self.m.joint(n).qposadr[0] for n in names])
        self._vadr = np.array([self.m.joint(n).dofadr[0] for n in names])
        apply_model_error(self.m, options, self._vadr)
        self._foot_body = {self.m.body(n).id: i for i, n in enumerate(FEET)}
        self._trunk = self.m.body('trunk').id
        qj = joint_pose(names, pose)
        self.d.qpos[self._qadr] = qj
        self.d.qpos[3] = 1.0
        mujoco.mj_kinematics(self.m, self.d)
        lowest = min(self.d.xpos[b][2] for b in self._foot_body) - 0.02
        self.d.qpos[2] = -lowest
        mujoco.mj_forward(self.m, self.d)
        self.push = np.zeros(3)                     # world force at the trunk origin [N]
        self.touching = np.zeros(len(FEET), dtype=bool)
        self.t = 0.0

    @property
    def total_mass(self):
        """The plant's mass [kg] (with a hidden load and the links' errors)."""
        return float(self.m.body_mass.sum())

    def state(self):
        """(q, v) in the project's coordinates."""
        d = self.d
        q = np.empty(self.model.nq)
        q[:3] = d.qpos[:3]
        q[3:6], q[6] = d.qpos[4:7], d.qpos[3]
        q[7:] = d.qpos[self._qadr]
        R = d.xmat[self._trunk].reshape(3, 3)
        v = np.empty(self.model.nv)
        v[:3] = R.T @ d.qvel[:3]
        v[3:6] = d.qvel[3:6]
        v[6:] = d.qvel[self._vadr]
        return q, v

    def _generalized(self, f_mj):
        """A MuJoCo generalized force in the project's coordinates (module docstring)."""
        R = self.d.xmat[self._trunk].reshape(3, 3)
        out = np.empty(self.model.nv)
        out[:3] = R.T @ f_mj[:3]
        out[3:6] = f_mj[3:6]
        out[6:] = f_mj[self._vadr]
        return out

    def step(self):
        mj, m, d = self._mj, self.m, self.d
        q, v = self.state()
        qd, vd, _ = self.trajectory(self.t)
        tau = np.asarray(self.controller(self.t, q, v, qd, vd), dtype=float)
        d.qfrc_applied[:] = 0.0
        d.qfrc_applied[self._vadr] = tau[6:]
        d.xfrc_applied[:] = 0.0
        d.xfrc_applied[self._trunk, :3] = self.push      # at the trunk's CoM = its origin
        push = np.zeros(m.nv)
        if np.any(self.push):
            mj.mj_applyFT(m, d, self.push, np.zeros(3), d.xipos[self._trunk], self._trunk, push)
        push = self._generalized(push)
        mj.mj_step(m, d)
        self.t += self.dt
        feet, self.touching = foot_contact_forces(mj, m, d, self._foot_body)
        q1, v1 = self.state()
        return self.t, q1, v1, tau, feet, push


def smooth_step(t, t0, t1):
    """0 before t0, 1 after t1, a cosine ramp between."""
    s = min(1.0, max(0.0, (t - t0) / (t1 - t0)))
    return 0.5 - 0.5 * np.cos(np.pi * s)


class ShiftLiftPush:
    """Joint targets of the MuJoCo scenario (``PHASES``): standing; the weight shifted towards
    the right hind foot (every HAA +``shift``, HFE −``shift`` [rad]); the left front foot
    (``lift_leg``) lifted (its KFE flexed by ``lift``, HFE by half that) and put down; back to
    the pose.  The trunk
    push (:attr:`MujocoQuadruped.push`) is the caller's: ``PUSH`` (start, end, force)."""

    PHASES = (('stand', 0.0, 1.0), ('shift', 1.0, 2.0), ('lift', 2.0, 3.5), ('shift', 3.5, 4.0),
              ('stand', 4.0, 5.0), ('push', 5.0, 6.0), ('stand', 6.0, 7.0))
    PUSH = (5.0, 6.0, np.array([15.0, 5.0, 0.0]))
    #: the issue's push: 25 % of the weight (81.7 N), lateral
    LATERAL_PUSH = np.array([0.0, 20.4, 0.0])
    PUSH_RAMP = 0.2
    DURATION = 7.0

    def __init__(self, model, pose_q, shift=0.25, lift=0.6, lift_leg='LF'):
        self.q0 = np.asarray(pose_q, dtype=float)
        self.names = [n.split('_') for n in model.joint_names]
        self.shift, self.lift, self.lift_leg = shift, lift, lift_leg

    def __call__(self, t):
        q, zero = self.q0.copy(), np.zeros_like(self.q0)
        s = smooth_step(t, 1.0, 2.0) - smooth_step(t, 4.0, 4.8)
        up = smooth_step(t, 2.2, 2.7) - smooth_step(t, 3.0, 3.5)
        for i, (leg, joint) in enumerate(self.names):
            if joint == 'HAA':
                q[i] += self.shift * s
            elif joint == 'HFE':
                q[i] -= self.shift * s
                if leg == self.lift_leg:
                    q[i] -= 0.5 * self.lift * up
            elif joint == 'KFE' and leg == self.lift_leg:
                q[i] -= self.lift * up
        return q, zero, zero

    @classmethod
    def push_profile(cls, t):
        """The push's share at time t: 1 over ``PUSH``'s interval, raised and lowered over
        ``PUSH_RAMP`` s by a cosine (a hand's push, not a step)."""
        start, end, _ = cls.PUSH
        return (smooth_step(t, start, start + cls.PUSH_RAMP)
                - smooth_step(t, end - cls.PUSH_RAMP, end))

    @classmethod
    def phase(cls, t):
        for name, t0, t1 in cls.PHASES:
            if t0 <= t < t1:
                return name
        return cls.PHASES[-1][0]
