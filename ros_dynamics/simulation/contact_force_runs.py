"""The contact-force estimate (estimation/contact_forces.py) against a plant's foot forces, no ROS.

:func:`run` drives the node's cycle (:func:`~ros_dynamics.estimation.cycle.node_cycle`)
with the four feet as contact frames on the project's rigid-contact quadruped (``standing``,
``trot``) or on MuJoCo (standing, weight shift, a foot lifted, a push on the trunk): the
bundled quadruped (``mujoco``, :mod:`.mujoco_quadruped`) or Solo12 (``solo12``,
:mod:`.mujoco_legged`, the URDF of example-robot-data), optionally with the base state from a
noisy, late odometry, and returns the plant's foot forces, their exact
``K/(s+K)`` filter (the observer's discrete step, observer.py), the estimate, the states and
the unexplained part against the push's filtered generalized force.  :func:`metrics` reduces a
run to the figures of docs/contact_forces.md.
"""

import dataclasses

import numpy as np

from ..core import bundled_urdf, load_urdf
from ..estimation.cycle import node_cycle, step_sample
from ..estimation.cycle_state import ObserverSettings
from .legged_metrics import observer_filtered, push_in_unexplained
from .legged_robots import ROBOTS, robot_urdf, stance_pose
from .mujoco_legged import LeggedPlantOptions, MujocoLegged
from .mujoco_quadruped import (FEET, MujocoQuadruped, SensingOptions, Sensors,
                               ShiftLiftPush, joint_pose, smooth_step)
from .plant import PDGravityController
from .plant_options import PlantOptions
from .rigid_simulator import standing_quadruped, trotting_quadruped
from .scripted_trot import JointTrot, ScriptedTrot

PLANTS = ('standing', 'trot', 'mujoco', 'solo12', 'solo12_trot', 'quadruped_trot')
POSE = (0.25, 0.7, -1.4)            # HAA (abduction), HFE, KFE [rad]: a wide stance
KP, KD = 60.0, 1.0                  # the joints' PD gains [N m/rad, N m s/rad]
#: the quadruped's thresholds [N]: a foot's force for contact, the detector's
THRESHOLDS = (8.0, 5.0)
#: the lateral push on the trunk [share of the weight]
PUSH_SHARE = 0.25


def _robot(plant):
    """(URDF path, floating-base model, feet) of a plant's robot."""
    if plant.startswith('solo12'):
        path = robot_urdf('solo12')[0]
        feet = tuple(ROBOTS['solo12']['feet'])
    else:
        path, feet = bundled_urdf('quadruped'), FEET
    return path, load_urdf(path, floating_base=True), feet


def weight(model):
    """The robot's weight [N]."""
    return -model.total_mass() * model.gravity[2]


def lateral_push(plant):
    """The push of the issue on a plant's robot: :data:`PUSH_SHARE` of its weight, lateral
    (world y) [N]: 20.4 N on the quadruped, 6.13 N on Solo12."""
    return np.array([0.0, PUSH_SHARE * weight(_robot(plant)[1]), 0.0])


def _solo12(model, path, plant_options, push):
    """Solo12 in MuJoCo (:class:`MujocoLegged`: elliptic cones, 1.6 cm foot spheres) under the
    quadruped's scenario (:class:`ShiftLiftPush`, the front left foot lifted), a wide stance
    (HAA 0.25 rad) and the quadruped's joint gains scaled by the mass (2.5 / 8.33 kg)."""
    robot = ROBOTS['solo12']
    pose = stance_pose('solo12', model.joint_names, POSE[0])
    q0 = np.array([pose[j] for j in model.joint_names])
    traj = ShiftLiftPush(model, q0, lift_leg='FL')
    options = LeggedPlantOptions(**dataclasses.asdict(plant_options or PlantOptions()),
                                 foot_radius=robot['foot_radius'])
    with open(path) as f:
        plant = MujocoLegged(f.read(), robot['feet'], model.joint_names, pose, options=options)
    scale = model.total_mass() / _robot('mujoco')[1].total_mass()
    ctrl = PDGravityController(model, KP * scale, KD * scale)
    force = lateral_push('solo12') if push is None else np.asarray(push, dtype=float)

    def step():
        q, v = plant.state()
        qd, vd, _ = traj(plant.t)
        tau = np.asarray(ctrl(plant.t, q, v, qd, vd), dtype=float)
        plant.step(tau[6:], traj.push_profile(plant.t) * force)
        q1, v1 = plant.state()
        return (plant.t, q1, v1, tau, plant.foot_forces.copy(), plant.push_generalized.copy(),
                plant.touching.copy(), _heights(plant))
    return step, plant.dt, traj.phase


def _heights(plant):
    """The feet's heights above the floor [m] (the spheres' lowest points: MuJoCo's truth)."""
    return plant.foot_positions()[:, 2] - plant.options.foot_radius


@dataclasses.dataclass
class Trot:
    """The trot of :mod:`.scripted_trot` (a joint-space PD on MuJoCo's state, not the project's
    controller: ``period`` [s], knee ``lift`` [rad], swing ``profile``, ``stride`` [rad], from
    ``start`` s ramped in over ``ramp`` s; the standing pose's HAA ``abduction`` [rad]; the
    Raibert ``placement`` [s]) for ``duration`` s, and a lateral push on the trunk while it
    trots: :data:`TROT_PUSH_SHARE` of the weight from ``push_start`` for ``push_length`` s,
    raised and lowered over :attr:`ShiftLiftPush.PUSH_RAMP` s (``push_length`` 0: none)."""
    period: float = 0.4
    lift: float = 0.4
    profile: str = 'sine'
    stride: float = 0.0
    start: float = 0.5
    ramp: float = 1.0
    push_start: float = 3.0
    push_length: float = 0.0
    duration: float = 4.0
    abduction: float = 0.15
    placement: float = 0.3

    def push_profile(self, t):
        """The push's share at t (0 without a push)."""
        if self.push_length <= 0:
            return 0.0
        a, b, r = self.push_start, self.push_start + self.push_length, ShiftLiftPush.PUSH_RAMP
        return smooth_step(t, a, a + r) - smooth_step(t, b - r, b)

    def phase(self, t):
        """'stand', 'trot' (the amplitude ramped in) or 'push' (trotting, pushed)."""
        if t < self.start + self.ramp:
            return 'stand'
        return 'push' if self.push_profile(t) > 0 else 'trot'


#: the lateral push on the trotting trunk [share of the weight] (the issue's)
TROT_PUSH_SHARE = 0.2
#: the trot pushed from 3 s to 4 s (a second of trotting after it)
PUSHED_TROT = Trot(push_length=1.0, duration=5.0)
#: the foot threshold in a trot [share of a foot's part of the weight: half] (the issue's)
TROT_THRESHOLD = 0.2


def _trot(name, model, path, plant_options, push, trot):
    """A robot of :data:`ROBOTS` (``name``: 'solo12' or 'quadruped') trotting in MuJoCo under
    :class:`~.scripted_trot.ScriptedTrot` (:class:`Trot`), standing at the robot's pose."""
    robot = ROBOTS[name]
    pose = stance_pose(name, model.joint_names, trot.abduction)
    options = LeggedPlantOptions(**dataclasses.asdict(plant_options or PlantOptions()),
                                 foot_radius=robot['foot_radius'])
    with open(path) as f:
        plant = MujocoLegged(f.read(), robot['feet'], model.joint_names, pose, options=options)
    gait = JointTrot(model.joint_names, [pose[j] for j in model.joint_names], trot.period,
                     trot.lift, trot.stride, trot.start, trot.ramp, trot.profile)
    ctrl = ScriptedTrot(plant, gait, placement=trot.placement)
    force = (np.array([0.0, TROT_PUSH_SHARE * weight(model), 0.0]) if push is None
             else np.asarray(push, dtype=float))

    def step():
        tau = np.zeros(model.nv)
        tau[6:] = ctrl()
        plant.step(tau[6:], trot.push_profile(plant.t) * force)
        q1, v1 = plant.state()
        return (plant.t, q1, v1, tau, plant.foot_forces.copy(), plant.push_generalized.copy(),
                plant.touching.copy(), _heights(plant))
    return step, plant.dt, trot.phase


def _plant(name, model, path, duration, plant_options=None, push=None, trot=None):
    """A step function () -> (t, q, v, tau, feet (4, 3), push (nv,), touching (4,), heights
    (4,): NaN where the plant has none) of the true samples, the period and the phase of a
    time."""
    if name == 'solo12':
        return _solo12(model, path, plant_options, push)
    if name.endswith('_trot'):
        return _trot(name[:-len('_trot')], model, path, plant_options, push, trot or Trot())
    if name == 'mujoco':
        traj = ShiftLiftPush(model, joint_pose(model.joint_names, POSE))
        plant = MujocoQuadruped(path, model, PDGravityController(model, KP, KD), traj,
                                pose=POSE, options=plant_options)
        force = traj.PUSH[2] if push is None else np.asarray(push, dtype=float)

        def step():
            plant.push = traj.push_profile(plant.t) * force
            return plant.step() + (plant.touching.copy(), np.full(len(FEET), np.nan))
        return step, plant.dt, traj.phase
    sim = (standing_quadruped if name == 'standing' else trotting_quadruped)(model, path)

    def step():
        s = sim.step()
        feet = np.zeros((len(FEET), 3))
        for link, w in zip(s.contact_links, s.wrenches):
            if link in FEET:
                feet[FEET.index(link)] += w[:3]
        return (s.t, s.q, s.v, s.tau, feet, np.zeros(model.nv), feet[:, 2] > 0.0,
                np.full(len(FEET), np.nan))
    return step, sim.dt, (lambda t: name)


def record(plant='mujoco', duration=None, plant_options=None, push=None):
    """The plant's samples without an estimate (to replay them elsewhere, e.g. to a node):
    a dict of arrays t, q, v, tau (the model's coordinates), feet (T, 4, 3), push (T, nv),
    touching (T, 4), phase, and the model."""
    path, model, _ = _robot(plant)
    duration = _duration(plant, duration, None)
    step, dt, phase = _plant(plant, model, path, duration, plant_options, push)
    rows = [step() for _ in range(int(round(duration / dt)))]
    out = {k: np.array([r[i] for r in rows]) for i, k in enumerate(
        ('t', 'q', 'v', 'tau', 'feet', 'push', 'touching', 'height'))}
    out.update(phase=np.array([phase(t - 0.5 * dt) for t in out['t']]), model=model, dt=dt,
               weight=weight(model))
    return out


def _duration(plant, duration, trot):
    """A run's duration [s]: ``duration``, else the scenario's."""
    if duration:
        return duration
    if plant.endswith('_trot'):
        return (trot or Trot()).duration
    return ShiftLiftPush.DURATION if plant in ('mujoco', 'solo12') else 3.0


def run(plant='mujoco', duration=None, gain=50.0, threshold=None, sensing=None,
        plant_options=None, push=None, frame_model='point', contact_threshold=None,
        odom_twist_noise=0.03, plant_urdf=None, estimator=None, trot=None):
    """One run (module docstring).  ``sensing``: :class:`SensingOptions` (what the estimate
    receives: odometry noise, bias, delay and rate, joint noise; exact by default);
    ``plant_options``: :class:`PlantOptions` (MuJoCo's departures from the URDF); ``push``: the
    trunk push [N] (world axes) instead of the scenario's.  ``threshold``: a foot's force for
    contact, ``contact_threshold``: the detector's (on the unexplained part), by default
    :data:`THRESHOLDS` in proportion to the robot's weight (the quadruped's: 8 N, 5 N);
    ``odom_twist_noise``: the estimator's (> 0, the node's default: the unexplained part with
    the base twist from the stance legs, stance_residual.py; 0: from the odometry's twist as
    is).  ``plant_urdf``: MuJoCo's plant from this URDF instead of the robot's (e.g.
    legged_identification.plant_urdf: every link off; the controller keeps the robot's model);
    ``estimator``: (model, observer options) the estimate runs with instead of the robot's
    URDF's (e.g. an identified model and its friction); ``trot``: the :class:`Trot` of the
    ``*_trot`` plants (default ``Trot()``), whose foot threshold is by default
    :data:`TROT_THRESHOLD` of a foot's share of the weight in the trot (half).  Returns a dict
    of arrays over the samples."""
    path, model, feet = _robot(plant)
    duration = _duration(plant, duration, trot)
    step, dt, phase = _plant(plant, model, plant_urdf or path, duration, plant_options, push,
                             trot)
    plant_weight = weight(load_urdf(plant_urdf, floating_base=True) if plant_urdf else model)
    scale = 1.0 if feet == FEET else weight(model) / weight(_robot('mujoco')[1])
    if threshold is None:
        threshold = (TROT_THRESHOLD * 0.5 * weight(model) if plant.endswith('_trot')
                     else THRESHOLDS[0] * scale)
    contact_threshold = THRESHOLDS[1] * scale if contact_threshold is None else contact_threshold
    est_model, options = estimator or (model, {})
    settings = ObserverSettings(est_model, gain=gain, threshold=contact_threshold,
                                contact_frames=feet,
                                contact_frame_model=frame_model,
                                contact_force_threshold=threshold,
                                odom_twist_noise=odom_twist_noise, **options)
    js = node_cycle(est_model, settings)
    sensors = Sensors(sensing or SensingOptions(), dt)
    out = {k: [] for k in ('t', 'feet', 'estimate', 'in_contact', 'unexplained',
                           'push', 'phase', 'detected', 'touching', 'height')}
    n = int(round(duration / dt))
    for k in range(n):
        t, q, v, tau, feet, push_k, touching, height = step()
        got = step_sample(js, *sensors.measure(q, v, tau), int(round(t * 1e9)))
        if got.verdict != 'cycle':
            raise RuntimeError(got.refusal[1])
        res = got.result
        if res.forces is None:                  # the first sample starts the observer
            continue
        for key, val in (('t', t), ('feet', feet),
                         ('estimate', res.forces.wrenches[:, :3].copy()),
                         ('in_contact', res.forces.in_contact.copy()),
                         ('unexplained', res.forces.unexplained.copy()), ('push', push_k),
                         ('phase', phase(t - 0.5 * dt)), ('detected', res.contact.in_contact),
                         ('touching', touching), ('height', height)):
            out[key].append(val)
    out = {k: np.array(v) for k, v in out.items()}
    # the plant's feet forces and push through the observer's K/(s+K): what the estimate and
    # the unexplained part are judged against
    out['filtered'] = observer_filtered(out['feet'], gain, dt)
    out['push'] = observer_filtered(out['push'], gain, dt)
    out.update(weight=plant_weight, threshold=threshold,
               release=settings.release_ratio * threshold, dt=dt, plant=plant)
    return out


def _transitions(x):
    """Indices where a boolean series turns on, and where it turns off."""
    d = np.diff(x.astype(int))
    return np.flatnonzero(d == 1) + 1, np.flatnonzero(d == -1) + 1


def metrics(out, settle=0.5):
    """The figures of a run, on the plant's truth: per-foot force rms error (over all samples
    after ``settle`` s, and per phase) as a fraction of the weight, the estimate against the
    plant's foot force through K/(s+K) at every sample (also where the estimate says "no
    contact" and the plant has one, and vice versa); contact-state accuracy against the
    plant's contact data (``touching``: MuJoCo's contacts; the rigid simulator's positive
    normal forces); touch-down and lift-off delays (to the estimate's nearest such transition
    within 0.1 s); the push found in the unexplained part
    (:func:`~.legged_metrics.push_in_unexplained`)."""
    t, w = out['t'], out['weight']
    m = t >= settle
    err = out['estimate'] - out['filtered']
    rms = np.sqrt((err[m] ** 2).sum(axis=2).mean(axis=0)) / w
    phases = {}
    for ph in dict.fromkeys(out['phase'][m]):
        sel = m & (out['phase'] == ph)
        phases[str(ph)] = (np.sqrt((err[sel] ** 2).sum(axis=2).mean(axis=0)) / w).tolist()
    truth = out['touching']
    acc = float((out['in_contact'][m] == truth[m]).mean())
    down, up = [], []
    for i in range(truth.shape[1]):
        on_m, off_m = _transitions(out['in_contact'][:, i])
        on_t, off_t = _transitions(truth[:, i])
        for ref, mine, acc_list in ((on_t, on_m, down), (off_t, off_m, up)):
            for j in ref:                       # the estimate's nearest such transition
                if t[j] >= settle and mine.size:
                    near = mine[np.argmin(np.abs(t[mine] - t[j]))]
                    if abs(t[near] - t[j]) < 0.1:
                        acc_list.append(t[near] - t[j])
    return dict(rms_per_foot=rms.tolist(), rms_per_phase=phases, state_accuracy=acc,
                touchdown_delay=down, liftoff_delay=up,
                **push_in_unexplained(t, out['unexplained'], out['push'], out['dt']))


#: a touch-down reported while the foot is this high above the floor or higher is false [m]
FALSE_TOUCHDOWN_HEIGHT = 0.01
#: MuJoCo's contact flickers at impacts (gaps of 1-2 ms while a sphere is in the floor, blips
#: as a foot skims it): runs up to this long [s] are not events of the truth's
FLICKER = 0.003


def _runs(x, value):
    """(start, end) index pairs of the runs of ``value`` in a boolean series."""
    d = np.diff(np.r_[False, x == value, False].astype(int))
    return zip(np.flatnonzero(d == 1), np.flatnonzero(d == -1))


def steady(x, samples):
    """A boolean series without its runs of at most ``samples`` samples: gaps filled first,
    then blips removed (MuJoCo's flicker, :data:`FLICKER`)."""
    x = x.copy()
    for value in (False, True):
        for a, b in _runs(x, value):
            if b - a <= samples and a > 0 and b < len(x):
                x[a:b] = not value
    return x


def state_metrics(out, phases=('trot',)):
    """The contact state's figures over the samples of ``phases`` (the trot's), on MuJoCo's
    truth: the share of samples (all feet) whose ``in_contact`` is MuJoCo's (also against its
    steady truth, :func:`steady`); per touch-down and lift-off of the steady truth the delay of
    the estimate's nearest such transition within 0.1 s (none there: missed); the estimate's
    touch-downs while the foot (MuJoCo's sphere) is at least :data:`FALSE_TOUCHDOWN_HEIGHT`
    above the floor (false), the highest foot at a reported touch-down, and how many
    transitions each made."""
    t, raw, est = out['t'], out['touching'], out['in_contact']
    flicker = int(round(FLICKER / out['dt']))
    truth = np.stack([steady(raw[:, i], flicker) for i in range(raw.shape[1])], axis=1)
    sel = np.isin(out['phase'], phases)
    down, up, missed, false, highest = [], [], 0, 0, 0.0
    counts = dict(true_touchdowns=0, true_liftoffs=0, touchdowns=0, liftoffs=0)
    for i in range(truth.shape[1]):
        on_m, off_m = _transitions(est[:, i])
        on_t, off_t = _transitions(truth[:, i])
        on_m, off_m = on_m[sel[on_m]], off_m[sel[off_m]]
        on_t, off_t = on_t[sel[on_t]], off_t[sel[off_t]]
        for key, x in zip(counts, (on_t, off_t, on_m, off_m)):
            counts[key] += len(x)
        for ref, mine, delays in ((on_t, on_m, down), (off_t, off_m, up)):
            for j in ref:
                near = mine[np.argmin(np.abs(t[mine] - t[j]))] if mine.size else None
                if near is None or abs(t[near] - t[j]) >= 0.1:
                    missed += 1
                else:
                    delays.append(float(t[near] - t[j]))
        h = out['height'][on_m, i]
        false += int(np.sum(h >= FALSE_TOUCHDOWN_HEIGHT))
        highest = max(highest, float(h.max()) if h.size else 0.0)
    return dict(state_accuracy=float((est[sel] == raw[sel]).mean()),
                steady_accuracy=float((est[sel] == truth[sel]).mean()), touchdown_delay=down,
                liftoff_delay=up, missed=missed, false_touchdowns=false,
                highest_touchdown=highest, **counts)
