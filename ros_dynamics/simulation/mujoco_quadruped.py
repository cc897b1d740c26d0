"""The bundled quadruped in MuJoCo (Todorov, Erez & Tassa 2012): a plant that is not the
project's simulator, for the contact-force estimate's checks and figures.

The model is MuJoCo's own import of ``urdf/quadruped.urdf`` (same inertias, static links kept
as bodies, the visual shapes kept as geoms), with a free joint on the trunk, a floor plane and
contacts between the floor and the four 2 cm foot spheres only.  Everything in and out is in
the project's coordinates (docs/conventions.md): ``q = [x y z qx qy qz qw, joints]`` and
``v = [base linear, base angular (base frame), joints]``, whereas MuJoCo's free joint keeps
``[x y z qw qx qy qz]`` and the linear velocity in world axes.  A generalized force converts as
the velocity does (power is invariant): ``f = [Rᵀ f_lin, f_ang, f_joints]``.

mujoco is imported when a plant is made (a development dependency, requirements-dev.txt).
"""

import numpy as np

FEET = ('LF_foot', 'RF_foot', 'LH_foot', 'RH_foot')


class MujocoQuadruped:
    """The quadruped standing on a floor in MuJoCo, joints driven by ``controller`` (a
    :class:`~ros_dynamics.simulation.plant.PDGravityController` on the project's model) towards
    ``trajectory(t)`` targets, stepped at ``dt`` (1 kHz by default).

    :meth:`step` returns (t, q, v, tau, foot_forces (4, 3) world axes, push generalized force
    (nv,)) over the period ending at t: what the feet and the push applied during that step.
    """

    def __init__(self, urdf_path, model, controller, trajectory, dt=1e-3, mu=0.8,
                 pose=(0.0, 0.7, -1.4)):
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
        self.m = spec.compile()
        self.d = mujoco.MjData(self.m)
        self.model, self.controller, self.trajectory, self.dt = model, controller, trajectory, dt
        names = list(model.joint_names)
        self._qadr = np.array([self.m.joint(n).qposadr[0] for n in names])
        self._vadr = np.array([self.m.joint(n).dofadr[0] for n in names])
        self._foot_body = {self.m.body(n).id: i for i, n in enumerate(FEET)}
        self._trunk = self.m.body('trunk').id
        qj = np.array([pose[('HAA', 'HFE', 'KFE').index(n.split('_')[1])] for n in names])
        self.d.qpos[self._qadr] = qj
        self.d.qpos[3] = 1.0
        mujoco.mj_kinematics(self.m, self.d)
        lowest = min(self.d.xpos[b][2] for b in self._foot_body) - 0.02
        self.d.qpos[2] = -lowest
        mujoco.mj_forward(self.m, self.d)
        self.push = np.zeros(3)                     # world force at the trunk origin [N]
        self.t = 0.0

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
        feet = np.zeros((len(FEET), 3))
        f6 = np.zeros(6)
        for i in range(d.ncon):
            c = d.contact[i]
            b1, b2 = m.geom_bodyid[c.geom1], m.geom_bodyid[c.geom2]
            foot = self._foot_body.get(b2, self._foot_body.get(b1))
            if foot is None:
                continue
            mj.mj_contactForce(m, d, i, f6)
            fw = c.frame.reshape(3, 3).T @ f6[:3]   # on geom2, from geom1, world axes
            feet[foot] += fw if b2 in self._foot_body else -fw
        q1, v1 = self.state()
        return self.t, q1, v1, tau, feet, push


def _smooth(t, t0, t1):
    """0 before t0, 1 after t1, a cosine ramp between."""
    s = min(1.0, max(0.0, (t - t0) / (t1 - t0)))
    return 0.5 - 0.5 * np.cos(np.pi * s)


class ShiftLiftPush:
    """Joint targets of the MuJoCo scenario (``PHASES``): standing; the weight shifted towards
    the right hind foot (every HAA +``shift``, HFE −``shift`` [rad]); the left front foot lifted
    (its KFE flexed by ``lift``, HFE by half that) and put down; back to the pose.  The trunk
    push (:attr:`MujocoQuadruped.push`) is the caller's: ``PUSH`` (start, end, force)."""

    PHASES = (('stand', 0.0, 1.0), ('shift', 1.0, 2.0), ('lift', 2.0, 3.5), ('shift', 3.5, 4.0),
              ('stand', 4.0, 5.0), ('push', 5.0, 6.0), ('stand', 6.0, 7.0))
    PUSH = (5.0, 6.0, np.array([15.0, 5.0, 0.0]))
    DURATION = 7.0

    def __init__(self, model, pose_q, shift=0.15, lift=0.6):
        self.q0 = np.asarray(pose_q, dtype=float)
        self.names = [n.split('_') for n in model.joint_names]
        self.shift, self.lift = shift, lift

    def __call__(self, t):
        q, zero = self.q0.copy(), np.zeros_like(self.q0)
        s = _smooth(t, 1.0, 2.0) - _smooth(t, 4.0, 4.8)
        up = _smooth(t, 2.2, 2.7) - _smooth(t, 3.0, 3.5)
        for i, (leg, joint) in enumerate(self.names):
            if joint == 'HAA':
                q[i] += self.shift * s
            elif joint == 'HFE':
                q[i] -= self.shift * s
                if leg == 'LF':
                    q[i] -= 0.5 * self.lift * up
            elif joint == 'KFE' and leg == 'LF':
                q[i] -= self.lift * up
        return q, zero, zero

    @classmethod
    def phase(cls, t):
        for name, t0, t1 in cls.PHASES:
            if t0 <= t < t1:
                return name
        return cls.PHASES[-1][0]
