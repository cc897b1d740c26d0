"""An independent plant: the robot simulated by MuJoCo (Todorov, Erez & Tassa 2012), for
identification and calibration checks that must not share code with what they check (no ROS).

The project's own :mod:`.plant` integrates the library's forward dynamics with the observer's
friction law, so a calibration measured on it is partly checked against itself.  Here the
plant is MuJoCo's: its own rigid-body algorithms, its own joint friction and rotor inertia,

* ``armature`` (reflected rotor inertia, added to the diagonal of MuJoCo's mass matrix),
* ``damping`` (viscous friction, integrated implicitly by MuJoCo's Euler scheme),
* ``frictionloss`` (dry friction as a frictional constraint with a bounded force, MuJoCo's
  own model: a sticking joint stays at rest until the torque exceeds it; no ``tanh``),

plus a constant offset on the measured torques and white sensor noise; optionally what a real
arm adds (``load_friction``: dry friction growing with the joint's load torque, MuJoCo's
``frictionloss`` set each control period; ``torque_scale``: torques reported from currents
through torque constants that are off; ``noise_effort_relative``: current noise growing with
the torque; ``rate`` and ``jitter``: a controller sampling slower than the physics, at
irregular periods).  The model is written
as MJCF from a :class:`ros_dynamics.Model` (same kinematics: joint frames, axes, inertials per
body after merging fixed joints), usually a :func:`perturbed_model` of the URDF's, so that every
link differs from what the URDF says.

Sample convention (as :mod:`.plant`): a sample at ``t_{k+1}`` carries the measured state at
``t_{k+1}`` and the torque commanded over ``[t_k, t_{k+1}]`` (zero-order hold, 1 kHz default).
The controller is PD + gravity compensation on the *nominal* model, on the measured state.
"""

import numpy as np

from ..core import configuration
from ..core.api import mass_matrix
from .plant import PDGravityController

__all__ = ['MujocoPlant', 'mjcf', 'perturbed_model']


def perturbed_model(model, spread=(0.2, 0.3), seed=0):
    """``model`` with every moving body's inertial parameters off by ``spread`` (relative, each
    factor ``1 ± u``, ``u`` uniform in ``spread``, random sign), physically consistent:

    * mass ``m (1 ± u)``;
    * centre of mass moved by ``u (|c| + 0.02 m)`` in a random direction;
    * each principal moment about the CoM ``(1 ± u)``, redrawn until the three satisfy the
      triangle inequality (a rigid body's inertia, Traversaro et al. 2016).
    """
    lo, hi = float(spread[0]), float(spread[1])
    if not 0 <= lo <= hi < 1:
        raise ValueError('spread must be (lo, hi) with 0 <= lo <= hi < 1')
    rng = np.random.default_rng(seed)

    def factor():
        return 1.0 + rng.choice((-1.0, 1.0)) * rng.uniform(lo, hi)

    mass, com, inertia = model.mass.copy(), model.com.copy(), model.inertia.copy()
    for i in range(model.nbodies):
        if mass[i] <= 0:
            continue
        mass[i] *= factor()
        d = rng.standard_normal(3)
        com[i] = com[i] + rng.uniform(lo, hi) * (np.linalg.norm(com[i]) + 0.02) * d / np.linalg.norm(d)
        w, U = np.linalg.eigh(0.5 * (inertia[i] + inertia[i].T))
        for _ in range(100):
            w1 = w * np.array([factor() for _ in range(3)])
            a, b, c = np.sort(w1)
            if a > 0 and a + b >= c:
                break
        else:
            w1 = w * factor()
        inertia[i] = U @ np.diag(w1) @ U.T
    return model.copy(mass=mass, com=com, inertia=inertia)


def _per_joint(x, nj, name):
    a = np.broadcast_to(np.asarray(x, dtype=float), (nj,)).copy()
    if not np.all(np.isfinite(a)) or np.any(a < 0) and name != 'torque_offset':
        raise ValueError(f'{name} must be finite (and >= 0)')
    return a


def _f(x):
    return ' '.join(repr(float(v)) for v in np.ravel(x))


def mjcf(model, armature=0.0, damping=0.0, frictionloss=0.0, dt=1e-3):
    """The MJCF text of a fixed-base ``model`` (revolute and prismatic joints): one MuJoCo body
    per body of the model, its joint frame as the body frame, the inertial about the CoM
    (``fullinertia``), no geometry (so no contacts), and per joint ``armature``, ``damping``,
    ``frictionloss`` (scalars or one per joint)."""
    if model.floating_base:
        raise ValueError('the MuJoCo plant supports fixed-base models only')
    import mujoco
    nj = len(model.joint_names)
    arm = _per_joint(armature, nj, 'armature')
    dmp = _per_joint(damping, nj, 'damping')
    fls = _per_joint(frictionloss, nj, 'frictionloss')
    children = {i: [] for i in range(-1, model.nbodies)}
    for i in range(model.nbodies):
        children[int(model.parent[i])].append(i)

    def body(i, indent):
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, np.ascontiguousarray(model.X_R[i]).ravel())
        I = model.inertia[i]
        j = int(model.v_idx[i])
        kind = 'hinge' if int(model.jtype[i]) == configuration.REVOLUTE else 'slide'
        pad = ' ' * indent
        lines = [f'{pad}<body name="{model.body_names[i]}" pos="{_f(model.X_p[i])}" '
                 f'quat="{_f(quat)}">',
                 f'{pad}  <joint name="{model.joint_names[j]}" type="{kind}" '
                 f'axis="{_f(model.axis[i])}" armature="{float(arm[j])!r}" damping="{float(dmp[j])!r}" '
                 f'frictionloss="{float(fls[j])!r}"/>',
                 f'{pad}  <inertial pos="{_f(model.com[i])}" mass="{max(float(model.mass[i]), 1e-9)!r}" '
                 f'fullinertia="{_f([I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]])}"/>']
        for c in children[i]:
            lines += body(c, indent + 2)
        lines.append(f'{pad}</body>')
        return lines

    out = [f'<mujoco model="{model.name}">',
           '  <compiler angle="radian" boundmass="1e-9" boundinertia="1e-12" '
           'balanceinertia="false"/>',
           f'  <option timestep="{dt!r}" gravity="{_f(model.gravity)}" integrator="Euler">',
           '    <flag contact="disable"/>', '  </option>', '  <worldbody>']
    for c in children[-1]:
        out += body(c, 4)
    out += ['  </worldbody>', '</mujoco>']
    return '\n'.join(out)


class MujocoPlant:
    """MuJoCo simulation of ``truth`` (a fixed-base :class:`ros_dynamics.Model`, e.g. a
    :func:`perturbed_model`) tracking ``trajectory(t) -> (q_d, v_d, a_d)`` under PD + gravity
    compensation computed on ``nominal`` (default ``truth``) from the measured state.

    Plant effects (scalars or one per joint): ``armature`` [kg m²], ``damping``
    [N m s/rad], ``frictionloss`` [N m] (MuJoCo's dry friction); ``torque_offset`` [N m] added
    to the measured torque; noise ``noise_position`` [rad], ``noise_velocity`` [rad/s],
    ``noise_effort`` [N m] (standard deviations).  ``pushes``: ``(link, point, force, t_start,
    t_end)`` external forces (world frame, at ``point`` in the link frame).

    A real arm's effects (off by default): ``load_friction`` [N m per N m]: the dry friction is
    ``frictionloss + load_friction |tau|`` over each control period (``tau`` the commanded
    torque: Mamedov et al. 2020, load-dependent friction); ``torque_scale``: the reported torque
    is ``torque_scale * tau`` (current times a torque constant that is off);
    ``noise_effort_relative``: noise of ``noise_effort_relative |tau|`` on top; ``rate`` [Hz]:
    the controller's sample rate (default 1/dt: every physics step), each period drawn
    uniformly within ``± jitter`` of its nominal length (in physics steps).

    :meth:`run` returns a dict of arrays ``t, q, v, tau`` (measured; ``tau`` is the torque a
    driver reports: commanded + offset + noise) and ``tau_ext`` (true external joint torques,
    from MuJoCo's ``mj_applyFT``), the layout of :meth:`ros_dynamics.simulation.Simulator.run`.
    """

    def __init__(self, truth, trajectory, nominal=None, dt=1e-3, armature=0.0, damping=0.0,
                 frictionloss=0.0, torque_offset=0.0, noise_position=0.0, noise_velocity=0.0,
                 noise_effort=0.0, seed=0, kp=None, kd=None, pushes=(), load_friction=0.0,
                 torque_scale=1.0, noise_effort_relative=0.0, rate=None, jitter=0.0):
        import mujoco
        self._mj = mujoco
        self.truth = truth
        self.nominal = truth if nominal is None else nominal
        nj = len(truth.joint_names)
        self.xml = mjcf(truth, armature, damping, frictionloss, dt)
        self.m = mujoco.MjModel.from_xml_string(self.xml)
        self.d = mujoco.MjData(self.m)
        self.trajectory = trajectory
        self.dt = float(dt)
        self.offset = _per_joint(torque_offset, nj, 'torque_offset')
        self.noise = (float(noise_position), float(noise_velocity), float(noise_effort))
        self.rng = np.random.default_rng(seed)
        self.frictionloss = _per_joint(frictionloss, nj, 'frictionloss')
        self.load_friction = _per_joint(load_friction, nj, 'load_friction')
        self.torque_scale = np.broadcast_to(np.asarray(torque_scale, float), (nj,)).copy()
        self.noise_relative = float(noise_effort_relative)
        self.steps = 1 if rate is None else max(1, int(round(1.0 / (float(rate) * self.dt))))
        self.jitter = int(round(float(jitter) * self.steps))
        q0 = np.asarray(trajectory(0.0)[0], dtype=float)
        if kp is None or kd is None:   # the scenarios' loop: ω = 30 rad/s, ζ = 1 on M_ii at q0
            Mii = np.diag(mass_matrix(self.nominal, q0))
            kp = 900.0 * Mii if kp is None else kp
            kd = 60.0 * Mii if kd is None else kd
        self.controller = PDGravityController(self.nominal, kp, kd)
        self.pushes = [(truth.link_frames[link], np.asarray(point, float),
                        np.asarray(force, float), float(a), float(b))
                       for link, point, force, a, b in pushes]
        self.d.qpos[:] = q0
        mujoco.mj_forward(self.m, self.d)

    def _measure(self):
        sq, sv, _ = self.noise
        q, v = self.d.qpos.copy(), self.d.qvel.copy()
        return (q + sq * self.rng.standard_normal(q.size) if sq > 0 else q,
                v + sv * self.rng.standard_normal(v.size) if sv > 0 else v)

    def _external(self, t):
        """The pushes active at ``t`` as joint torques (MuJoCo's mj_applyFT at the point)."""
        qfrc = np.zeros(self.m.nv)
        if any(a <= t < b for *_, a, b in self.pushes):
            self._mj.mj_forward(self.m, self.d)     # positions and Jacobians at this state
        for (body, R, p), point, force, a, b in self.pushes:
            if a <= t < b:
                bid = body + 1                       # MuJoCo's body 0 is the world
                x = self.d.xpos[bid] + self.d.xmat[bid].reshape(3, 3) @ (R @ point + p)
                self._mj.mj_applyFT(self.m, self.d, force, np.zeros(3), x, bid, qfrc)
        return qfrc

    def run(self, duration):
        nv = self.m.nv
        ts, qs, vs, taus, exts = [0.0], [], [], [np.zeros(nv)], [np.zeros(nv)]
        se, sr = self.noise[2], self.noise_relative
        q, v = self._measure()
        qs.append(q), vs.append(v)
        k, end = 0, int(round(duration / self.dt))
        while k < end:
            t = k * self.dt
            qd, vd, _ = self.trajectory(t)
            tau = self.controller(t, q, v, qd, vd)
            if np.any(self.load_friction):
                self.m.dof_frictionloss[:] = self.frictionloss + self.load_friction * np.abs(tau)
            n = self.steps
            if self.jitter:
                n = max(1, n + int(self.rng.integers(-self.jitter, self.jitter + 1)))
            n = min(n, end - k)
            for _ in range(n):
                ext = self._external(k * self.dt)
                self.d.qfrc_applied[:] = tau + ext
                self._mj.mj_step(self.m, self.d)
                k += 1
            if not np.all(np.isfinite(self.d.qvel)):
                raise FloatingPointError(f'MuJoCo diverged at t = {t:.4f} s')
            q, v = self._measure()
            meas = self.torque_scale * tau + self.offset
            if se > 0 or sr > 0:
                meas = meas + (se + sr * np.abs(tau)) * self.rng.standard_normal(nv)
            ts.append(k * self.dt), qs.append(q), vs.append(v), taus.append(meas)
            exts.append(ext)
        out = {'t': np.asarray(ts), 'q': np.asarray(qs), 'v': np.asarray(vs),
               'tau': np.asarray(taus), 'tau_ext': np.asarray(exts)}
        out['contact'] = np.any(out['tau_ext'] != 0, axis=1)
        return out
