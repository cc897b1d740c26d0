"""A quadruped walking in MuJoCo under the whole-body controller, as the ROS stack runs it but
in one process (no ROS, no DDS, deterministic): the closed loop the trot is built and tested on.

Per plant step (1 kHz): MuJoCo's state goes through the sensors (:class:`~.mujoco_quadruped.
Sensors`: joint noise, the late, noisy, slower odometry of a legged state estimator) into the
dynamics node's own cycle (:func:`~ros_dynamics.estimation.cycle.node_cycle`, the feet as
contact frames: the node's ``~/contact_forces``, ``in_contact`` per foot) and into the stream
the node publishes at that state (M, C, g by :func:`ros_dynamics.dynamics`; the feet's
Jacobians, positions and the centroidal terms by :func:`ros_dynamics.task_space`).  Every
``1/control_rate`` s the controller (:class:`~ros_dynamics.control.legged_controller.
LeggedController`, the node's) answers that state; its torques act ``command_delay`` s after
the state's stamp and are held until the next.  The plant may differ from the URDF
(:class:`~.mujoco_legged.LeggedPlantOptions`: hidden load, link errors, a step in the ground),
be pushed, and the command (``cmd_vel``) changes over the run.

:func:`walk` returns the plant's truth and what the controller saw and did, per step;
:mod:`.legged_metrics` judges it on the truth.
"""
from dataclasses import dataclass, field

import numpy as np

from ..control.legged_controller import LeggedController
from ..control.wbc import StreamState, effort_limits_from_urdf
from ..core import load_urdf
from ..core.api import dynamics, task_frames, task_space
from ..estimation.cycle import node_cycle, step_sample
from ..estimation.cycle_state import ObserverSettings
from .legged_robots import ROBOTS, robot_urdf
from .mujoco_legged import LeggedPlantOptions, MujocoLegged, TruthRecord
from .mujoco_quadruped import SensingOptions, Sensors

__all__ = ['NOISY', 'WalkScenario', 'walk', 'stream_state']

BASE = ['floating_base/' + c for c in ('linear_x', 'linear_y', 'linear_z', 'angular_x',
                                       'angular_y', 'angular_z')]

#: a legged robot's sensing (the issue's): odometry 200 Hz, 10 ms late, 0.03 m/s and 0.01 rad/s
#: white noise on its twist; joint velocity noise 0.05 rad/s, effort noise 0.05 N m
NOISY = SensingOptions(velocity_noise=0.05, torque_noise=0.05, odom_linear_noise=0.03,
                       odom_angular_noise=0.01, odom_delay=0.01, odom_rate=200.0)


@dataclass
class WalkScenario:
    """One run: ``robot`` (of :data:`~.legged_robots.ROBOTS`), ``gait``, ``commands``
    ((t [s from the controller's start], (vx, vy, wz)) ..., each held until the next),
    ``duration`` [s]; ``touchdown`` 'estimate' (the node's ``in_contact`` ends swings) or
    'schedule'; ``push`` (t, duration [s], force (3,) world [N]) on the trunk or None;
    ``plant`` its :class:`LeggedPlantOptions` (foot radius: the robot's), ``sensing``."""
    robot: str = 'solo12'
    gait: str = 'trot'
    commands: tuple = ((0.0, (0.0, 0.0, 0.0)),)
    duration: float = 4.0
    touchdown: str = 'estimate'
    push: tuple = None
    plant: LeggedPlantOptions = field(default_factory=LeggedPlantOptions)
    sensing: SensingOptions = field(default_factory=SensingOptions)
    control_rate: float = 500.0
    command_delay: float = 0.002
    step_height: float = 0.0
    settle: float = 0.3
    contact_share: float = 0.2
    ahead: float = 0.0


def stream_state(model, frames, feet, q, v):
    """The stream the dynamics node publishes at (q, v) (``~/dynamics``, ``~/task_space`` of
    the task ``frames``), as the controller reads it."""
    d = dynamics(model, q, v)
    ts = task_space(model, q, v, frames)
    return StreamState(BASE + list(model.joint_names), q, v, d.M, d.C, d.g, list(feet),
                       ts.positions, ts.jacobians, ts.jacobian_dot_v, ts.mass, ts.com,
                       ts.com_velocity, ts.centroidal_matrix, ts.centroidal_bias)


def _node(model, feet, weight, share):
    """The dynamics node's cycle with the feet as contact frames, its contact threshold
    ``share`` of a foot's share of the weight in a trot (weight / 2), and its observer gain
    [1/s]."""
    settings = ObserverSettings(model, contact_frames=tuple(feet),
                                contact_force_threshold=share * weight / 2.0,
                                threshold=0.1 * weight / 2.0, odom_twist_noise=0.03)
    return node_cycle(model, settings), float(np.max(settings.gain))


def walk(sc):
    """Run ``sc`` (:class:`WalkScenario`); a dict of per-step arrays: the truth
    (:class:`TruthRecord`'s fields), ``estimate`` (T, 4) the node's in_contact, ``modes``
    (T, 4) the controller's foot modes, ``unexplained`` (T, nv) the node's unexplained part
    (``observer_gain``: its observer's K), ``answered`` (T,) whether the controller answered that
    state, ``qp_time`` [s] per answer, and ``feet``, ``dt``, ``mass``, ``ground`` (the terrain
    under each foot, (T, 4)), ``clearance`` (T, 4) each foot sphere's gap to the terrain, the
    step's corner included (:meth:`~.mujoco_legged.LeggedPlantOptions.clearance`).  A run
    whose trunk falls below 0.3 of its standing height ends there (the metrics count the
    fall)."""
    robot = ROBOTS[sc.robot]
    path, xml = robot_urdf(sc.robot)
    model = load_urdf(path, floating_base=True)
    feet = robot['feet']
    frames = task_frames(model, feet)
    plant_opts = sc.plant if sc.plant.foot_radius == robot['foot_radius'] else \
        LeggedPlantOptions(**{**sc.plant.__dict__, 'foot_radius': robot['foot_radius']})
    plant = MujocoLegged(xml, feet, model.joint_names, robot['pose'], options=plant_opts)
    hold = (10.0 * plant.mass, 0.2 * plant.mass)
    for _ in range(int(round(sc.settle / plant.dt))):       # settle on the floor, held by PD
        plant.step(plant.hold(*hold))
    weight = -model.total_mass() * model.gravity[2]
    node, gain = _node(model, feet, weight, sc.contact_share)
    ctl = LeggedController(feet, effort_limits_from_urdf(xml, model.joint_names), sc.gait,
                           sc.step_height)
    sensors = Sensors(sc.sensing, plant.dt)
    every = max(1, int(round(1.0 / (sc.control_rate * plant.dt))))
    delay = int(round(sc.command_delay / plant.dt))
    truth, pending, tau = TruthRecord(), [], plant.hold(*hold)
    z0 = plant.state()[0][2] - plant_opts.ground(plant.state()[0][0])
    log = {k: [] for k in ('estimate', 'estimate_force', 'unexplained', 'modes', 'answered',
                           'qp_time')}
    for k in range(int(round(sc.duration / plant.dt))):
        t = k * plant.dt
        q, v = plant.state()
        qs, vs, taus = sensors.measure(q, v, np.r_[np.zeros(6), plant.tau])
        got = step_sample(node, qs, vs, taus, int(round(t * 1e9)))
        forces = got.result.forces if got.verdict == 'cycle' else None
        contact = (dict(zip(feet, (bool(x) for x in forces.in_contact)))
                   if forces is not None and sc.touchdown == 'estimate' else None)
        log['estimate'].append(forces.in_contact.copy() if forces is not None
                               else np.ones(len(feet), bool))
        log['estimate_force'].append(forces.wrenches[:, 2].copy() if forces is not None
                                     else np.zeros(len(feet)))
        log['unexplained'].append(forces.unexplained.copy() if forces is not None
                                  else np.zeros(model.nv))
        if k % every == 0:
            state = stream_state(model, frames, feet, qs, vs)
            cmd = _command(sc.commands, t)
            new, _, sol = ctl.command(int(round(t * 1e9)), state, cmd, contact, ahead=sc.ahead)
            if new is not None:
                pending.append((k + delay, new.copy()))
            log['qp_time'].append(sol.cpu_time)
        log['answered'].append(k % every == 0)
        log['modes'].append([ctl.gait.foot[f].mode if hasattr(ctl.gait, 'foot') else 'stance'
                             for f in feet])
        while pending and pending[0][0] <= k:
            tau = pending.pop(0)[1]
        push = np.zeros(3)
        if sc.push is not None and sc.push[0] <= t < sc.push[0] + sc.push[1]:
            push = np.asarray(sc.push[2], dtype=float)
        truth.add(int(round(t * 1e9)), plant, push)
        plant.step(tau, push)
        base = plant.state()[0]
        if base[2] - plant_opts.ground(base[0]) < 0.3 * z0:       # fallen: the run ends
            break
    out = {k: np.asarray(x) for k, x in truth.rows.items()}
    out.update({k: np.asarray(x) for k, x in log.items()})
    out.update(foot_names=list(feet), dt=plant.dt, mass=plant.mass, weight=weight,
               ground=plant_opts.ground(out['feet'][:, :, 0]), scenario=sc,
               touchdowns={f: dict(ctl.gait.foot[f].touchdowns) for f in feet}
               if hasattr(ctl.gait, 'foot') else None,
               foot_radius=plant_opts.foot_radius, ground_fn=plant_opts.ground,
               observer_gain=gain,
               clearance=plant_opts.clearance(out['feet']))
    return out


def _command(commands, t):
    """The command held at ``t`` (the last one started)."""
    cmd = (0.0, 0.0, 0.0)
    for start, c in commands:
        if t >= start:
            cmd = c
    return cmd
