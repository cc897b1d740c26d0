"""The legged plant that is not the model and the sensing a legged robot has (simulation/
mujoco_quadruped.py), and the foot forces and unexplained part that survive it (estimation/
stance_residual.py), judged on MuJoCo's truth (its contact forces and contact data)."""
import dataclasses

import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics.estimation.stance_residual import fused_twist, stance_twist
from ros_dynamics.simulation.contact_force_runs import metrics, run
from ros_dynamics.simulation.mujoco_quadruped import (FEET, REALISTIC_ODOMETRY, MujocoQuadruped,
                                                      PlantOptions, SensingOptions, Sensors,
                                                      ShiftLiftPush)
from ros_dynamics.simulation.plant import PDGravityController
from test_contact_forces import quadruped  # noqa: F401  (the fixture)

pytestmark = pytest.mark.core


def test_odometry_is_late_slow_held_noisy_and_biased():
    """The base twist that Sensors reports for a known truth (its value = the sample index):
    each new value is the truth odom_delay old plus the bias and the noise, a new value every
    1/odom_rate s, held in between; the joints get their own noise; the truth is not changed."""
    opts = SensingOptions(odom_linear_noise=0.03, odom_linear_bias=(0.02, -0.01, 0.0),
                          odom_delay=0.01, odom_rate=200.0, velocity_noise=0.05, seed=3)
    sensors = Sensors(opts, 1e-3)
    n, nv = 4000, 18
    got, joints = np.empty((n, 6)), np.empty((n, 12))
    for k in range(n):
        q = np.zeros(19)
        q[0], q[6] = k, 1.0
        v = np.full(nv, float(k))
        qm, vm, _ = sensors.measure(q, v, np.zeros(nv))
        assert v[0] == k and q[0] == k                       # the truth untouched
        got[k], joints[k] = vm[:6], vm[6:] - k
        assert qm[0] == max(0, k - (k % 5) - 10)             # the pose: 10 ms old, held 5 ms
    updates = np.arange(0, n, 5)
    truth = np.maximum(0, updates - 10)
    lin = got[updates, :3] - truth[:, None]
    np.testing.assert_allclose(lin.mean(axis=0), [0.02, -0.01, 0.0], atol=0.005)
    np.testing.assert_allclose(lin.std(axis=0), 0.03, rtol=0.15)
    np.testing.assert_array_equal(got[updates, 3:], truth[:, None] * np.ones(3))  # no ang. noise
    for j in range(1, 5):                                    # held between updates
        np.testing.assert_array_equal(got[updates[:-1] + j], got[updates[:-1]])
    assert joints.std() == pytest.approx(0.05, rel=0.05)


def test_plant_options_change_the_plant_not_the_model(quadruped):
    """By default MuJoCo's mass matrix is the URDF's (rd.mass_matrix); a hidden trunk load
    adds its mass; links off (link_error 0.25) change every link's mass by 20-30 %
    (0.25 x [0.8, 1.2]) and the mass matrix by more than 5 %; friction and rotor inertia reach
    MuJoCo."""
    path = rd.bundled_urdf('quadruped')
    traj = ShiftLiftPush(quadruped, np.zeros(12))
    ctrl = PDGravityController(quadruped, 60.0, 1.0)

    def plant(**kw):
        return MujocoQuadruped(path, quadruped, ctrl, traj, options=PlantOptions(**kw))

    def mass_matrix(p):
        import mujoco
        M = np.zeros((p.m.nv, p.m.nv))
        mujoco.mj_fullM(p.m, p.d, M)
        return M[6:, 6:]                            # the joint block: same coordinates
    base = plant()
    q, _ = base.state()
    M_urdf = rd.mass_matrix(quadruped, q)[6:, 6:]
    np.testing.assert_allclose(mass_matrix(base), M_urdf, atol=1e-9)
    assert base.total_mass == pytest.approx(quadruped.total_mass(), abs=1e-9)
    assert plant(hidden_load=1.0).total_mass == pytest.approx(quadruped.total_mass() + 1.0)
    off = plant(link_error=0.25)
    keep = base.m.body_mass > 0
    ratio = off.m.body_mass[keep] / base.m.body_mass[keep]
    assert np.all((np.abs(ratio - 1) >= 0.2 - 1e-9) & (np.abs(ratio - 1) <= 0.3 + 1e-9))
    assert np.abs(mass_matrix(off) - M_urdf).max() > 0.05 * np.abs(M_urdf).max()
    fr = plant(joint_viscous=0.01, joint_coulomb=0.03, rotor_inertia=5e-4)
    np.testing.assert_allclose(fr.m.dof_damping[6:], 0.01)
    np.testing.assert_allclose(fr.m.dof_frictionloss[6:], 0.03)
    np.testing.assert_allclose(fr.m.dof_armature[6:], 5e-4)


def test_stance_twist_recovers_the_base_twist_from_the_legs(quadruped):
    """Feet at rest (each leg's joint velocities solved so, with rd.link_jacobian): with stance
    feet trusted (σ_f → 0) the base twist of (1) is the true one whatever the odometry says;
    with the default weights (σ_f = 5 mm/s against σ_o = 0.03) the linear twist's error is a
    tenth of the odometry's noise (0.10 measured; asserted 0.3), the roll the least determined
    (the feet at ±0.15 m); with no foot in stance it is the odometry's."""
    model = quadruped
    rng = np.random.default_rng(0)
    q = model.neutral()
    q[7:] = [{'HAA': 0.2, 'HFE': 0.7, 'KFE': -1.4}[n.split('_')[1]] for n in model.joint_names]
    v = np.zeros(model.nv)
    v[:6] = rng.normal(0, 0.2, 6)
    for i, foot in enumerate(FEET):
        J = rd.link_jacobian(model, q, foot)[:3]
        cols = 6 + 3 * i + np.arange(3)
        v[cols] = -np.linalg.solve(J[:, cols], J[:, :6] @ v[:6])
    G = np.vstack([rd.link_jacobian(model, q, foot)[:3] for foot in FEET])
    np.testing.assert_allclose(G @ v, 0.0, atol=1e-12)
    noise = rng.normal(0, 0.03, 6)
    odom = v.copy()
    odom[:6] += noise
    w_odom = np.full(6, 1 / 0.03 ** 2)
    np.testing.assert_allclose(stance_twist(G, odom, w_odom, 1e14), v[:6], atol=1e-6)
    est = stance_twist(G, odom, w_odom, 1 / 0.005 ** 2)
    assert np.linalg.norm(est[:3] - v[:3]) < 0.3 * np.linalg.norm(noise[:3])
    np.testing.assert_allclose(stance_twist(G[:0], odom, w_odom, 1 / 0.005 ** 2), odom[:6])
    # the compiled form (Cholesky) against the normal equations (numpy's solve); a foot that
    # moves faster than the gate is left out
    A = np.ascontiguousarray(G.T)
    vh, stance = np.zeros(model.nv), np.ones(4, dtype=bool)
    fused_twist(A, odom, stance, 3, w_odom, 1 / 0.005 ** 2, 0.1, vh, np.zeros((6, 7)))
    np.testing.assert_allclose(vh[:6], est, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(vh[6:], odom[6:])
    assert stance.all()
    moving = odom.copy()
    moving[6:9] += 3.0                                    # LF's joints: its foot moves
    fused_twist(A, moving, stance, 3, w_odom, 1 / 0.005 ** 2, 0.1, vh, np.zeros((6, 7)))
    assert stance.tolist() == [False, True, True, True]
    np.testing.assert_allclose(vh[:6], stance_twist(G[3:], moving, w_odom, 1 / 0.005 ** 2),
                               rtol=1e-9, atol=1e-12)


def test_push_survives_the_odometry_of_a_legged_state_estimator():
    """MuJoCo, a 25 % lateral push, the odometry a legged robot's state estimator gives
    (0.03 m/s white noise on the linear twist, 10 ms late, 200 Hz held, joint states at 1 kHz):
    judged on MuJoCo's truth, every foot within 4.8 % of the weight, the contact state right in
    >= 99.1 % of the samples, the push in the unexplained part within 15 %.  Worst measured over
    the odometry's noise draws 0-5 (benchmarks/results/contact_forces.md): 1.60 %, 99.70 %,
    9.49 % (two runs of the same draw can differ in the worst foot by a few tenths of a
    percent, draw 2 gave 1.04 % in another run: ProxQP's solutions differ at 1e-8 between runs
    and a contact state can then flip a sample earlier or later); bounds 3x 1.60 %, 0.30 %
    missed states, the push's the requirement (tighter than 3x).  From
    the odometry's twist as is (odom_twist_noise 0) the push is lost in the noise (92.91 %
    measured; asserted > 50 %)."""
    sensing = dataclasses.replace(REALISTIC_ODOMETRY, seed=7)
    m = metrics(run('mujoco', push=ShiftLiftPush.LATERAL_PUSH, sensing=sensing))
    assert max(m['rms_per_foot']) < 0.048
    assert m['state_accuracy'] >= 0.991
    assert m['push_relative_error'] < 0.15
    assert 0.0 <= m['push_lag'] <= 0.05                  # the requirement (32 ms measured)
    raw = metrics(run('mujoco', push=ShiftLiftPush.LATERAL_PUSH, sensing=sensing,
                      odom_twist_noise=0.0))
    assert raw['push_relative_error'] > 0.5
    assert max(raw['rms_per_foot']) < 0.048               # the forces never needed the twist


@pytest.mark.parametrize('sensing', ['exact', 'realistic'])
def test_solo12_foot_forces_and_push_on_mujocos_truth(sensing):
    """MuJoCo's Solo12 (example-robot-data's URDF, 2.5 kg; simulation/mujoco_legged.py) under
    the same scenario (the front left foot lifted, a 25 % lateral push: 6.13 N), with exact
    sensing and with the odometry of a legged state estimator (0.03 m/s, 10 ms late, 200 Hz):
    judged on MuJoCo's contact forces and contact states, every foot within 5 % of the weight,
    the contact state right in >= 99.3 % of the samples, the push in the unexplained part
    within 15 %.  Measured (2026-11-28, benchmarks/results/contact_forces.md and draws 0-7):
    exact 1.05 %, 99.81 %, 8.90 %; realistic worst over the draws 1.72 %, 99.76 %, 13.13 %.
    Bounds: the requirement's 5 % (3x 1.72 % = 5.2 %), 3x the worst missed states (0.24 %),
    the requirement's 15 % (tighter than 3x)."""
    from ros_dynamics.simulation.contact_force_runs import lateral_push
    s = SensingOptions() if sensing == 'exact' else dataclasses.replace(REALISTIC_ODOMETRY,
                                                                          seed=7)
    res = run('solo12', push=lateral_push('solo12'), sensing=s)
    assert res['weight'] == pytest.approx(2.5 * 9.81, rel=1e-3)
    m = metrics(res)
    assert max(m['rms_per_foot']) < 0.05
    assert m['state_accuracy'] >= 0.9928
    assert m['push_relative_error'] < 0.15
    assert m['liftoff_delay'] and m['touchdown_delay']      # the lifted foot was seen to lift
