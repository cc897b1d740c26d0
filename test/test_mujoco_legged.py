"""The MuJoCo legged plant the whole-body controller is judged on
(ros_dynamics.simulation.mujoco_legged), its odometry model and the metrics on its truth
(ros_dynamics.simulation.legged_metrics), without ROS.

Independent checks: Pinocchio on the same URDF gives the mass, the CoM and the feet positions at
the plant's state (so the plant's coordinates and its "truth" are the robot's, not ours); the
hidden load moves MuJoCo's CoM by exactly m_L / (m + m_L) of its offset; the odometry's delay,
rate and noise are read off its output against the history it was given."""
import mujoco
import numpy as np
import pinocchio as pin
import pytest

import ros_dynamics as rd
from ros_dynamics.simulation.legged_metrics import (closed_loop_metrics, observer_filtered,
                                                    push_in_unexplained)
from ros_dynamics.simulation.mujoco_legged import LeggedPlantOptions, MujocoLegged, Odometry

from _oracle import PinocchioOracle, erd_urdf

pytestmark = pytest.mark.core

ROBOTS = {
    'quadruped': (lambda: rd.bundled_urdf('quadruped'), ['LF_foot', 'RF_foot', 'LH_foot',
                                                         'RH_foot'], 0.02),
    'solo12': (lambda: erd_urdf('solo_description/robots/solo12.urdf'),
               ['FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT'], 0.016),
}


def _plant(robot, **options):
    path, feet, radius = ROBOTS[robot][0](), ROBOTS[robot][1], ROBOTS[robot][2]
    model = rd.load_urdf(path, floating_base=True)
    pose = {j: (0.3 if j.endswith('HFE') else -0.6 if j.endswith('KFE') else 0.1)
            for j in model.joint_names}
    with open(path) as f:
        plant = MujocoLegged(f.read(), feet, model.joint_names, pose,
                             options=LeggedPlantOptions(foot_radius=radius, **options))
    return path, model, feet, plant


@pytest.mark.parametrize('robot', sorted(ROBOTS))
def test_state_mass_com_and_feet_are_pinocchios(robot):
    path, model, feet, plant = _plant(robot)
    rng = np.random.default_rng(0)
    tau = 0.2 * rng.standard_normal(len(model.joint_names))
    for _ in range(30):                  # moving, turning a little: a state that is not the pose
        plant.step(tau, push=(1.0, -2.0, 0.5))
    q, v = plant.state()
    o = PinocchioOracle(path, model)
    pd = o.pm.createData()
    assert abs(plant.mass - pin.computeTotalMass(o.pm)) < 1e-9
    c = pin.centerOfMass(o.pm, pd, o.q(q))
    np.testing.assert_allclose(plant.com(), c, atol=1e-9)
    pin.framesForwardKinematics(o.pm, pd, o.q(q))
    P = np.array([pd.oMf[o.pm.getFrameId(f)].translation for f in feet])
    np.testing.assert_allclose(plant.foot_positions(), P, atol=1e-9)
    # the twist in the base frame (linear first): the feet velocities by Pinocchio at (q, v)
    # are MuJoCo's own (mj_objectVelocity of the foot bodies, world axes, taken at the body's
    # centre of mass: moved to its origin by ω × (x_origin − x_com))
    pin.forwardKinematics(o.pm, pd, o.q(q), o.v(v))
    pin.updateFramePlacements(o.pm, pd)
    vel = np.array([pin.getFrameVelocity(o.pm, pd, o.pm.getFrameId(f),
                                         pin.LOCAL_WORLD_ALIGNED).linear for f in feet])
    mj, res = mujoco, np.zeros(6)
    for i, f in enumerate(feet):
        mj.mj_objectVelocity(plant.m, plant.d, mj.mjtObj.mjOBJ_BODY, plant.m.body(f).id, res, 0)
        b = plant.m.body(f).id
        at_origin = res[3:] + np.cross(res[:3], plant.d.xpos[b] - plant.d.xipos[b])
        np.testing.assert_allclose(at_origin, vel[i], atol=1e-9)
    assert np.abs(vel).max() > 0.05                      # moving: the check means something


def test_hidden_load_is_hidden_and_moves_the_com_by_its_share():
    path, model, feet, plant0 = _plant('solo12')
    offset = np.array([0.05, -0.02, 0.03])
    _, _, _, plant = _plant('solo12', hidden_load=1.0, load_offset=tuple(offset))
    assert abs(plant.mass - plant0.mass - 1.0) < 1e-9
    q, _ = plant.state()
    R = pin.Quaternion(q[6], q[3], q[4], q[5]).toRotationMatrix()
    load = q[:3] + R @ offset
    o = PinocchioOracle(path, model)
    c = pin.centerOfMass(o.pm, o.pm.createData(), o.q(q))       # the URDF's CoM at this state
    expected = (plant0.mass * c + 1.0 * load) / (plant0.mass + 1.0)
    np.testing.assert_allclose(plant.com(), expected, atol=1e-9)


def test_link_error_changes_every_link_not_the_hidden_load():
    """link_error 0.2 (PlantOptions, the vocabulary both MuJoCo plants share): every link's
    mass (the root's too) off by 16-24 %, the hidden load's not."""
    _, _, _, plant0 = _plant('quadruped')
    _, _, _, plant = _plant('quadruped', link_error=0.2, hidden_load=1.0, seed=3)
    heavy = plant0.m.body_mass[1:] > 0                   # (the quadruped's imu link: none)
    ratio = plant.m.body_mass[1:plant0.m.nbody][heavy] / plant0.m.body_mass[1:][heavy]
    assert np.all((np.abs(ratio - 1) >= 0.16 - 1e-12) & (np.abs(ratio - 1) <= 0.24 + 1e-12))
    assert plant.m.body_mass[plant.m.body('hidden_load').id] == 1.0


def test_odometry_is_late_slower_and_noisy():
    odo = Odometry(rate=200.0, delay=0.01, noise_linear=0.03, noise_angular=0.01,
                   bias_linear=(0.02, 0.0, 0.0), seed=1)
    out = []
    for k in range(4000):
        t = k * 1e-3
        q = np.r_[t, 0.0, 0.3, 0, 0, 0, 1]
        v = np.r_[1.0 + t, 0.0, 0.0, 0.0, 0.0, 0.0]
        s = odo.sample(t, q, v)
        if s is not None:
            out.append((t, *s))
    t = np.array([x[0] for x in out])
    stamp = np.array([x[1] for x in out])
    assert np.allclose(np.diff(t), 0.005)                       # 200 Hz
    late = t[t >= 0.01] - stamp[t >= 0.01]
    assert np.allclose(late, 0.01, atol=1e-9)                   # 10 ms late, stamped so
    pos = np.array([x[2][0] for x in out])
    np.testing.assert_allclose(pos[t >= 0.01], stamp[t >= 0.01], atol=1e-9)   # the old pose
    err = np.array([x[3][0] - (1.0 + x[1]) for x in out])
    assert abs(err.mean() - 0.02) < 0.003 and abs(err.std() - 0.03) < 0.003   # 800 samples
    assert abs(np.array([x[3][4] for x in out]).std() - 0.01) < 0.001


def _record(z, feet):
    n = len(z)
    base = np.zeros((n, 7))
    base[:, 2], base[:, 6] = z, 1.0
    return dict(stamp_ns=np.arange(n) * 1_000_000, com=np.zeros((n, 3)), base=base, feet=feet,
                foot_forces=np.zeros((n, 4, 3)))


def test_metrics_count_falls_lift_and_slide():
    n = 1000
    z = np.full(n, 0.3)
    z[400:500] = 0.1                    # one episode below half the start height
    feet = np.zeros((n, 4, 3))
    feet[:, 0, 2] = np.where((np.arange(n) > 600) & (np.arange(n) < 700), 0.04, 0.0)
    feet[:, 2, 1] = np.linspace(0, 0.015, n)          # a stance foot creeping 1.5 cm
    refs = {k: np.array([0.0, 0.0, 0.003]) for k in range(0, n * 1_000_000, 1_000_000)}
    r = closed_loop_metrics(_record(z, feet), refs, 0, (0.6, 0.7))
    assert r['falls'] == 1
    assert abs(r['lift_foot_height_m'] - 0.04) < 1e-12
    assert abs(r['stance_slide_max_m'] - 0.015) < 1e-12
    assert abs(r['com_rms_m'] - 0.003) < 1e-12


def test_the_push_metric_on_signals_whose_answer_is_known():
    """push_in_unexplained on made-up signals: a 0.1 s lateral push of 5 N through K/(s+K)
    (K = 50, its closed form 1 - exp(-K t) checked), an unexplained part that is the push
    plus a constant (a hidden load's weight: removed by the change from before the push) and,
    in a second case, only 60 % of it shifted 5 ms late: the errors are 0 and 0.4, the lags
    0 and 5 ms."""
    dt, K = 1e-3, 50.0
    t = np.arange(3000) * dt
    raw = np.zeros((t.size, 18))
    raw[(t >= 2.0) & (t < 2.1), 1] = 5.0
    push = observer_filtered(raw, K, dt)
    on = (t >= 2.0) & (t < 2.1)
    np.testing.assert_allclose(push[on, 1], 5.0 * (1 - np.exp(-K * (t[on] - 2.0 + dt))),
                               rtol=1e-12)
    offset = np.zeros(18)
    offset[2] = -9.81
    exact = push_in_unexplained(t, push + offset, push, dt)
    assert exact['push_change_error'] < 1e-12 and exact['push_mean_change_error'] < 1e-12
    assert exact['push_relative_error'] > 1.0 and exact['push_lag'] == 0.0   # offset kept
    late = np.roll(0.6 * push, 5, axis=0) + offset
    part = push_in_unexplained(t, late, push, dt)
    assert abs(part['push_lag'] - 0.005) < 1e-12
    assert 0.39 < part['push_mean_change_error'] < 0.46, part


def _standing(**options):
    """Solo12 in its standing pose on LeggedPlantOptions(**options), held by its PD for 0.3 s."""
    from ros_dynamics.simulation.legged_robots import ROBOTS, robot_urdf
    robot = ROBOTS['solo12']
    plant = MujocoLegged(robot_urdf('solo12')[1], robot['feet'], pose=robot['pose'],
                         options=LeggedPlantOptions(foot_radius=robot['foot_radius'], **options))
    for _ in range(300):
        plant.step(plant.hold(10.0 * plant.mass, 0.2 * plant.mass))
    return plant


@pytest.mark.parametrize('rise, edge', [(0.02, -1.0), (-0.02, 1.0), (0.02, 1.0)],
                         ids=['on-a-step-up', 'on-a-step-down', 'before-a-step'])
def test_the_step_in_the_ground_is_where_the_options_say(rise, edge):
    """LeggedPlantOptions' step (step_rise at x = step_edge): the robot placed on the ground
    under its feet stands there, held by its PD, exactly as on the flat floor but for the
    height: its feet in contact, as far above that ground (the foot radius less MuJoCo's soft
    penetration) as on the floor, carrying its weight."""
    flat = _standing()
    plant = _standing(step_rise=rise, step_edge=edge)
    P = plant.foot_positions()
    ground = plant.options.ground(P[:, 0])
    assert np.allclose(ground, 0.02 if (rise > 0) == (edge < 0) else 0.0), ground
    assert np.all(plant.touching) and np.all(flat.touching)
    np.testing.assert_allclose(P[:, 2] - ground, flat.foot_positions()[:, 2], atol=1e-6)
    assert abs(plant.foot_forces[:, 2].sum() - 9.81 * plant.mass) < 0.05 * 9.81 * plant.mass


def test_a_blow_up_is_told_with_its_time():
    """MuJoCo resets its state when it finds the accelerations bad (what follows is no motion):
    the plant says when (unstable_at, plant time), and a plant that held did not blow up."""
    plant = _standing()
    assert plant.unstable_at is None              # 0.3 s held on the floor
    t0 = plant.t
    for _ in range(50):                           # a torque no actuator gives
        plant.step(np.full(len(plant.joints), 1e12))
    assert plant.unstable_at is not None and t0 <= plant.unstable_at < plant.t


def test_the_actuators_saturate_at_effort_limit():
    """effort_limit: a torque beyond it acts as the limit itself (same motion, the applied torque
    recorded), one within it as it is; without it (0) the plant applies any torque."""
    capped, at_limit, free = _standing(effort_limit=1.0), _standing(), _standing()
    n = len(capped.joints)
    tau = np.linspace(-3.0, 3.0, n)
    for _ in range(20):
        capped.step(tau)
        at_limit.step(np.clip(tau, -1.0, 1.0))
        free.step(tau)
    np.testing.assert_array_equal(capped.tau, np.clip(tau, -1.0, 1.0))
    np.testing.assert_allclose(capped.state()[1], at_limit.state()[1], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(free.tau, tau)
    assert np.abs(free.state()[1] - capped.state()[1]).max() > 0.1
