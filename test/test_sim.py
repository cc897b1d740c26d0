"""The simulator (ros_dynamics.simulation: plant, scenarios): kinematics, integration, contacts, scenarios."""
import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics import simulation as S
from ros_dynamics.control.trajectories import MinJerkTrajectory, SineTrajectory

pytestmark = pytest.mark.core

ARM = rd.bundled_urdf('arm7')
MODEL = rd.load_urdf(ARM)
DATA = rd.Data(MODEL)


def test_link_point_position_and_jacobian_match_pinocchio():
    import pinocchio as pin  # a test dependency: missing means failing, not skipping
    pm = pin.buildModelFromUrdf(ARM)
    pd = pm.createData()
    rng = np.random.default_rng(0)
    for _ in range(5):
        q = rng.uniform(-1.5, 1.5, 7)
        pin.framesForwardKinematics(pm, pd, q)
        M = pd.oMf[pm.getFrameId('tool')]
        pt = np.array([0.0, 0.03, 0.01])
        ref = M.translation + M.rotation @ pt
        np.testing.assert_allclose(S.link_point_position(MODEL, q, 'tool', pt), ref, atol=1e-12)
        R, p = rd.link_placement(MODEL, q, 'tool', data=DATA)     # the workspace path
        np.testing.assert_allclose(p + R @ pt, ref, atol=1e-12)
        # τ_ext = Jᵀ F with the world-frame point Jacobian (linear rows first)
        pin.computeJointJacobians(pm, pd, q)
        Jf = pin.getFrameJacobian(pm, pd, pm.getFrameId('tool'), pin.LOCAL_WORLD_ALIGNED)
        Jp = Jf.copy()
        Jp[:3] -= pin.skew(M.rotation @ pt) @ Jf[3:]
        np.testing.assert_allclose(rd.link_jacobian(MODEL, q, 'tool', pt), Jp, atol=1e-12)
        np.testing.assert_allclose(rd.link_jacobian(MODEL, q, 'tool', pt, data=DATA), Jp, atol=1e-12)


def test_integrate_floating_base_quaternion():
    fm = rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)
    q = fm.neutral()
    v = np.zeros(fm.nv)
    v[0], v[5] = 1.0, np.pi          # forward 1 m/s while turning about z at pi rad/s
    for _ in range(500):
        q = S.integrate(fm, q, v, 1e-3)
    assert abs(np.linalg.norm(q[3:7]) - 1.0) < 1e-12
    np.testing.assert_allclose(q[3:7], [0, 0, np.sin(np.pi / 4), np.cos(np.pi / 4)], atol=1e-9)
    # body-frame forward velocity while turning by 90 deg: a quarter circle of radius 1/pi
    np.testing.assert_allclose(q[:2], [1 / np.pi, 1 / np.pi], atol=2e-3)


def test_holds_still_at_rest_and_tracks():
    home = S.home_pose(MODEL)[0]
    ctrl = S.make_scenario(MODEL, 'none')[0].controller
    sim = S.Simulator(MODEL, MinJerkTrajectory([0.0, 1.0], [home, home]), ctrl)
    out = sim.run(0.5)
    assert np.abs(out['q'] - home).max() < 1e-9              # exact gravity compensation
    sim, _ = S.make_scenario(MODEL, 'none')
    out = sim.run(5.0)
    qd = np.array([sim.trajectory(t)[0] for t in out['t']])
    assert np.abs(out['q'] - qd).max() < 0.02                 # PD + g tracks the sine motion
    assert np.ptp(out['q'], axis=0).min() > 0.1


def test_wall_contact_ground_truth():
    sim, desc = S.make_scenario(MODEL, 'wall')
    forces = []
    out = sim.run(4.0, callback=lambda s: forces.append(
        s.wrenches[0][:3] if s.wrenches else np.zeros(3)))
    forces = np.array(forces)
    c = out['contact']
    assert not c[:int(1.5 / sim.dt)].any() and c[int(3.0 / sim.dt)]
    # pressing (t = 3 s, at rest): spring force k d along the normal, τ_ext = Jᵀ F
    k = int(3.5 / sim.dt)
    wall = sim.contacts[0]
    x = S.link_point_position(MODEL, out['q'][k], wall.link, wall.point)
    depth = -(x - wall.p0) @ wall.n
    assert depth > 0
    np.testing.assert_allclose(forces[k], wall.k * depth * wall.n, rtol=2e-2)
    assert 10.0 < np.linalg.norm(forces[k]) < 80.0
    J = rd.link_jacobian(MODEL, out['q'][k - 1], wall.link, wall.point)
    np.testing.assert_allclose(out['tau_ext'][k], J[:3].T @ forces[k], rtol=1e-2, atol=1e-2)
    # the wall never pulls
    assert np.all(forces @ wall.n >= 0)


def test_push_windows_noise_and_determinism():
    kw = dict(noise_position=1e-4, noise_velocity=1e-2, noise_effort=0.1, seed=5)
    a = S.make_scenario(MODEL, 'push', **kw)[0].run(2.2)
    b = S.make_scenario(MODEL, 'push', **kw)[0].run(2.2)
    np.testing.assert_array_equal(a['q'], b['q'])
    t = a['t']
    np.testing.assert_array_equal(a['contact'], (t > 2.0 + 1e-9))
    # the noise is on the measurements only: a noise-free run has the same true motion to
    # within the effect of the noisy feedback
    clean = S.make_scenario(MODEL, 'push')[0].run(2.2)
    dq = a['q'] - clean['q']
    assert 2e-5 < np.std(dq) < 1e-2


def test_scenarios_validate():
    with pytest.raises(ValueError):
        S.make_scenario(MODEL, 'nope')
    with pytest.raises(ValueError):
        S.Simulator(MODEL, SineTrajectory(np.zeros(7), 0.1, 0.2), dt=0.0)
    # a generic robot (the quadruped on a stand) also gets every scenario
    qm = rd.load_urdf(rd.bundled_urdf('quadruped'))
    for sc in S.SCENARIOS:
        sim, desc = S.make_scenario(qm, sc)
        out = sim.run(0.2)
        assert np.all(np.isfinite(out['q']))


def test_plant_mismatch_payload_acts_in_the_plant_only():
    """A payload on the plant: the torque g_with_payload(q) holds the plant still, while the
    nominal model's gravity lets it sag; the controller's and contacts' model stays nominal."""
    link = MODEL.link_names[-1]
    payload = (link, 1.5, (0.0, 0.02, 0.08))
    heavy = rd.attach_payload(MODEL, *payload)
    home = S.home_pose(MODEL)[0]
    traj = MinJerkTrajectory([0.0, 1.0], [home, home])
    hold_heavy = lambda t, q, v, qd, vd: rd.gravity(heavy, q)  # noqa: E731
    hold_nominal = lambda t, q, v, qd, vd: rd.gravity(MODEL, q)  # noqa: E731
    sim = S.Simulator(MODEL, traj, hold_heavy, payload=payload)
    assert sim.model is MODEL and sim.plant is not MODEL
    assert np.abs(sim.run(0.5)['q'] - home).max() < 1e-9
    sag = S.Simulator(MODEL, traj, hold_nominal, payload=payload).run(0.5)['q']
    assert np.abs(sag - home).max() > 1e-2


def test_plant_friction_dissipates_per_joint():
    """Viscous friction on one joint only: with gravity compensated exactly, that joint's
    velocity decays like exp(-F_v t / M_ii) at the start while the frictionless plant keeps it."""
    home = S.home_pose(MODEL)[0]
    traj = MinJerkTrajectory([0.0, 1.0], [home, home])
    hold = lambda t, q, v, qd, vd: rd.gravity(MODEL, q)  # noqa: E731
    v0 = np.zeros(7)
    v0[6] = 1.0
    fv = np.zeros(7)
    fv[6] = 0.05
    free = S.Simulator(MODEL, traj, hold, v0=v0).run(0.02)['v'][-1, 6]
    damped = S.Simulator(MODEL, traj, hold, v0=v0, friction_viscous=fv).run(0.02)['v'][-1, 6]
    m77 = rd.mass_matrix(MODEL, home)[6, 6]
    # the decay ratio of the last joint over 20 ms (other joints barely move in that time)
    assert damped / free == pytest.approx(np.exp(-0.05 * 0.02 / m77), rel=0.05)
    with pytest.raises(ValueError, match='one value or one per joint'):
        S.Simulator(MODEL, traj, hold, friction_viscous=[1.0, 2.0])
    with pytest.raises(ValueError, match='>= 0'):
        S.Simulator(MODEL, traj, hold, friction_coulomb=-1.0)
