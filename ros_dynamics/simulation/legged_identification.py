"""Recordings for the floating-base identification's evidence (no ROS): the bundled quadruped in
MuJoCo (:class:`~ros_dynamics.simulation.mujoco_quadruped.MujocoQuadruped`) with every link's
inertia off the URDF, standing under the whole-body controller
(:class:`~ros_dynamics.control.wbc.TaskSpaceInverseDynamics` on the URDF's model, fed the
stream's quantities as the dynamics node would) playing a schedule of
:mod:`ros_dynamics.control.stand_step`, the base state recorded as an odometry would give it
(optionally with white noise on pose and twist).

:func:`plant_urdf` writes the plant's URDF (the shipped one with perturbed inertials,
:func:`ros_dynamics.simulation.mujoco_plant.perturbed_model`); :func:`record` runs a schedule
and returns the samples, the true foot forces (world axes) and the push's generalized force;
:func:`shift_lift_push` runs MuJoCo's contact-force scenario (PD + gravity control on the
URDF's model) on such a plant.
"""

import os

import numpy as np

from ..core import bundled_urdf, load_urdf
from ..core.api import task_frames
from ..control.stand_step import ExcitingStandSchedule, StandStepSchedule
from ..control.wbc import TaskSpaceInverseDynamics, effort_limits_from_urdf
from ..identification.urdf_inertials import replace_inertials
from .legged_walk import stream_state
from .mujoco_plant import perturbed_model
from .mujoco_quadruped import FEET, MujocoQuadruped, ShiftLiftPush
from .plant import PDGravityController

SCHEDULES = ('excite', 'stand_step')


def shipped():
    """(path, URDF text, floating-base model) of the bundled quadruped."""
    path = bundled_urdf('quadruped')
    with open(path) as f:
        return path, f.read(), load_urdf(path, floating_base=True)


def plant_urdf(folder, spread=(0.2, 0.3), seed=1):
    """Write the plant's URDF (every link's mass, CoM and principal inertias ``spread`` off the
    shipped URDF) into ``folder``; returns (path, the plant's model)."""
    _, text, model = shipped()
    truth = perturbed_model(model, spread=spread, seed=seed)
    path = os.path.join(folder, f'quadruped_plant_{seed}.urdf')
    with open(path, 'w') as f:
        f.write(replace_inertials(text, model, truth))
    return path, truth


class _WBC:
    """The controller as the node runs it: the stream's quantities from the URDF's model."""

    def __init__(self, model, xml, schedule, **kw):
        self.model, self.frames = model, task_frames(model, FEET)
        self.ctl = TaskSpaceInverseDynamics(FEET, effort_limits_from_urdf(
            xml, model.joint_names))
        self.kind, self.kw, self.schedule = schedule, kw, None
        self.failed = 0

    def __call__(self, t, q, v, qd, vd):
        s = stream_state(self.model, self.frames, FEET, q, v)
        if self.schedule is None:
            cls = ExcitingStandSchedule if self.kind == 'excite' else StandStepSchedule
            self.schedule = cls(FEET, s.com, s.positions,
                                unload_from=np.linalg.norm(s.g[:3]) / 4, **self.kw)
        sol = self.ctl.solve(s, self.schedule(t))
        self.failed += not sol.solved
        return np.concatenate([np.zeros(6), sol.tau])


def record(plant_path, schedule='excite', duration=None, odom_noise=(0.0, 0.0), seed=0,
           push=None, dt=1e-3, controller_model=None, **schedule_options):
    """Run ``schedule`` (``'excite'``: :class:`ExcitingStandSchedule`; ``'stand_step'``:
    :class:`StandStepSchedule`) on the MuJoCo plant of ``plant_path``; returns a dict of arrays
    ``t, q, v`` (the odometry's base state: ``odom_noise`` = (pose noise [m, rad], twist noise
    [m/s, rad/s]) white, 1 σ per sample), ``q_true, v_true, tau`` (joint torques, base rows
    zero), ``feet`` (T, 4, 3) the true foot forces, ``push`` (T, nv) its generalized force,
    ``touching`` (T, 4) MuJoCo's contact states,
    ``phase``, ``weight`` (the plant's), ``failed`` (unsolved QPs) and ``planned`` (the
    duration asked for); if the trunk falls below half its start height the recording ends
    0.5 s before.  ``push``: (start, end,
    force (3,) world) on the trunk.  ``controller_model``: the controller's model (default the
    URDF's; the plant's own keeps it standing through larger motions when the URDF is far
    off)."""
    _, xml, model = shipped()
    ctl = _WBC(controller_model or model, xml, schedule, **schedule_options)
    plant = MujocoQuadruped(plant_path, model, ctl, lambda t: (None, None, None), dt=dt)
    ctl(0.0, *plant.state(), None, None)                 # the schedule from the first state
    duration = duration or ctl.schedule.duration
    rng = np.random.default_rng(seed)
    rows = []
    z0 = plant.state()[0][2]
    for _ in range(int(round(duration / dt))):
        if push is not None:
            plant.push = np.asarray(push[2], float) if push[0] <= plant.t < push[1] else np.zeros(3)
        rows.append(plant.step() + (plant.touching.copy(),))
        if not rows[-1][1][2] > 0.5 * z0:             # fell: the recording ends before
            rows = rows[:max(1, len(rows) - 500)]
            break
    out = {k: np.array([r[i] for r in rows]) for i, k in enumerate(
        ('t', 'q_true', 'v_true', 'tau', 'feet', 'push', 'touching'))}
    q, v = out['q_true'].copy(), out['v_true'].copy()
    sp, sv = odom_noise
    if sp > 0:
        q[:, :3] += sp * rng.standard_normal((len(q), 3))
        rot = sp * rng.standard_normal((len(q), 3))          # small rotation, base frame
        x, y, z, w = q[:, 3:7].T
        dq = np.concatenate([0.5 * rot, np.ones((len(q), 1))], axis=1)
        a, b, c, d = dq.T
        q[:, 3:7] = np.stack([w * a + x * d + y * c - z * b, w * b - x * c + y * d + z * a,
                              w * c + x * b - y * a + z * d, w * d - x * a - y * b - z * c], 1)
        q[:, 3:7] /= np.linalg.norm(q[:, 3:7], axis=1, keepdims=True)
    if sv > 0:
        v[:, :6] += sv * rng.standard_normal((len(v), 6))
    mj = plant.m
    out.update(q=q, v=v, model=model, dt=dt, failed=ctl.failed, planned=duration,
               phase=np.array([ctl.schedule.phase(t - 0.5 * dt) for t in out['t']]),
               weight=float(np.sum(mj.body_mass) * -mj.opt.gravity[2]))
    return out


def shift_lift_push(plant_path, model, push=True, gains=(60.0, 1.0), lift=0.6):
    """:class:`ShiftLiftPush` (stand, weight shift, the left front foot lifted and put down, a
    push on the trunk if ``push``; ``lift`` [rad] the knee's flexion, 0: no lift) on the plant
    of ``plant_path``, PD + gravity control on ``model``: a dict of ``t, q, v, tau, feet, push,
    phase, weight`` (the plant's), ``dt``."""
    from .mujoco_quadruped import joint_pose
    stance = (0.0, 0.7, -1.4)            # HAA, HFE, KFE: the narrow stance it was measured on
    pose = np.array(joint_pose(model.joint_names, stance))
    traj = ShiftLiftPush(model, pose, shift=0.15, lift=lift)
    plant = MujocoQuadruped(plant_path, model, PDGravityController(model, *gains), traj,
                            pose=stance)
    start, end, force = traj.PUSH
    rows = []
    for _ in range(int(round(traj.DURATION / plant.dt))):
        plant.push = force if push and start <= plant.t < end else np.zeros(3)
        rows.append(plant.step())
    out = {k: np.array([r[i] for r in rows]) for i, k in enumerate(
        ('t', 'q', 'v', 'tau', 'feet', 'push'))}
    out['phase'] = np.array([traj.phase(t - 0.5 * plant.dt) for t in out['t']])
    out['weight'] = float(np.sum(plant.m.body_mass) * -plant.m.opt.gravity[2])
    out['dt'] = plant.dt
    return out
