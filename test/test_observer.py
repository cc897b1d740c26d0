"""Momentum observer, contact detector/isolation and force estimate (simulation, no ROS)."""
import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics import simulation as S
from ros_dynamics.control.trajectories import MinJerkTrajectory
from ros_dynamics.estimation.observer import (ContactDetector, MomentumObserver, estimate_contact_wrench,
                                              friction_torque, joint_child_links)
from ros_dynamics.identification.thresholds import calibrate_thresholds

pytestmark = pytest.mark.core

ARM = rd.bundled_urdf('arm7')
with open(ARM) as _f:
    XML = _f.read()
MODEL = rd.load_urdf(XML)
LINKS = MODEL.link_names
NOISE = dict(noise_position=1e-5, noise_velocity=2e-3, noise_effort=0.05)   # documented levels


def _filtered(tau_ext, K, dt):
    """Exact sampled response of K/(s+K) to the (piecewise-constant) true external torque."""
    a = np.exp(-np.asarray(K) * dt)
    out = np.zeros_like(tau_ext)
    for i in range(1, len(tau_ext)):
        out[i] = a * out[i - 1] + (1 - a) * tau_ext[i]
    return out


# -- API -------------------------------------------------------------------------------------

def test_exports_and_validation():
    obs = MomentumObserver(MODEL, gain=50.0)
    q, v = np.zeros(7), np.zeros(7)
    with pytest.raises(ValueError):
        MomentumObserver(MODEL, gain=0.0)
    with pytest.raises(ValueError):
        MomentumObserver(MODEL, gain=np.ones(3))
    with pytest.raises(ValueError):
        MomentumObserver(MODEL, friction_viscous=-1.0)
    obs.reset(q, v)
    with pytest.raises(ValueError):
        obs.update(np.zeros(6), v, np.zeros(7), 1e-3)
    with pytest.raises(ValueError):
        obs.update(q, v, np.full(7, np.nan), 1e-3)
    with pytest.raises(ValueError):
        obs.update(q, v, np.zeros(7), 0.0)
    with pytest.raises(ValueError):
        ContactDetector(MODEL, threshold=-1.0)
    with pytest.raises(ValueError):
        ContactDetector(MODEL, release_ratio=1.5)
    assert joint_child_links(MODEL) == LINKS


def test_first_update_initializes_and_static_arm_has_zero_residual():
    obs = MomentumObserver(MODEL, gain=np.linspace(10, 200, 7))
    q = np.array([0.1, 0.5, -0.2, -1.3, 0.3, 0.6, 0.1])
    g = rd.gravity(MODEL, q)
    r = obs.update(q, np.zeros(7), g, 1e-3)        # no reset(): the first call initializes
    assert np.all(r == 0)
    for _ in range(20):
        r = obs.update(q, np.zeros(7), g, 1e-3)
    assert np.max(np.abs(r)) < 1e-9
    # a constant extra torque held by the motors = an external torque of the opposite sign
    for _ in range(3000):
        r = obs.update(q, np.zeros(7), g + 2.0, 1e-3)
    np.testing.assert_allclose(r, -2.0, atol=1e-6)
    obs.reset(q, np.zeros(7))
    assert np.all(obs.residual == 0)


# -- exact model: step response, free motion ---------------------------------------------------

@pytest.mark.parametrize('K', [10.0, 50.0, 200.0])
def test_step_response_follows_first_order_filter(K):
    """Step force on the last link during motion: r = K/(s+K) τ_ext within 1 % of the step,
    and at rest |r − τ_ext| < 1 % of the step from 5/K after the step on."""
    sim, desc = S.make_scenario(MODEL, 'push')
    res = S.simulate_observer(sim, MomentumObserver(MODEL, K), None, 3.6)
    ref = _filtered(res['tau_ext'], K, sim.dt)
    k0 = int(round(2.0 / sim.dt)) + 1                       # first sample with the force
    step = np.abs(res['tau_ext'][k0])
    assert step.max() > 5.0
    err = np.abs(res['r'] - ref).max(axis=0)
    assert np.all(err < 0.01 * step.max()), (err, step)
    # holding still (target = home), a step force of 30 N at t = 0.5 s
    traj = MinJerkTrajectory([0.0, 1.0], [sim.trajectory.q0, sim.trajectory.q0])
    sim2 = S.Simulator(MODEL, traj, sim.controller, [
        S.WrenchContact(desc['contact_link'], force=(-20.0, 20.0, 10.0), point=desc['point'],
                        t_start=0.5)])
    res2 = S.simulate_observer(sim2, MomentumObserver(MODEL, K), None, 0.5 + 6.0 / K)
    k1 = int(round((0.5 + 5.0 / K) / sim.dt)) + 1
    step2 = np.abs(res2['tau_ext'][k1:]).max()
    err2 = np.abs(res2['r'][k1:] - res2['tau_ext'][k1:]).max()
    assert err2 < 0.01 * step2, (err2, step2)
    # and before the step: nothing
    assert np.abs(res2['r'][:int(0.5 / sim.dt)]).max() < 1e-3 * step2


def test_no_false_detection_in_60s_of_free_motion_exact_model():
    sim, _ = S.make_scenario(MODEL, 'none')
    det = ContactDetector(MODEL, threshold=0.1)              # a tenth of a N m on every joint
    res = S.simulate_observer(sim, MomentumObserver(MODEL, 200.0), det, 60.0)
    assert np.abs(res['r']).max() < 0.02
    assert not res['detected'].any()
    assert np.abs(res['tau_ext']).max() == 0.0
    # the motion is not trivial
    assert np.ptp(res['t']) >= 60.0 - 1e-9


# -- detection, isolation, force estimate ------------------------------------------------------

@pytest.mark.parametrize('scenario', ['push', 'mixed'])
def test_detection_isolation_and_force_exact_model(scenario):
    K = 50.0
    sim, desc = S.make_scenario(MODEL, scenario)
    det = ContactDetector(MODEL, threshold=0.2, release_ratio=0.5)
    res = S.simulate_observer(sim, MomentumObserver(MODEL, K), det, 9.0, estimate_force=True)
    met = S.detection_metrics(res, K)
    eps = met['episodes']
    assert [e['true_link'] for e in eps] == [desc['contact_link'], desc['middle_link']]
    for e in eps:
        assert e['link'] == e['true_link'], e
        assert 0.0 < e['delay'] < 0.05, e
    assert met['false_onsets'] == 0
    # pushes are pure step forces: after 5/K the force estimate is within 2 %
    if scenario == 'push':
        assert all(e['force_err'] < 0.02 for e in eps), eps
    else:   # the mid-link push of 'mixed'
        assert eps[1]['force_err'] < 0.02, eps


def test_estimate_contact_wrench_recovers_full_wrench():
    rng = np.random.default_rng(3)
    q = rng.uniform(-1.0, 1.0, 7)
    W = np.array([3.0, -2.0, 5.0, 0.3, -0.2, 0.1])
    J = rd.link_jacobian(MODEL, q, 'arm_link_7', [0.0, 0.02, 0.05])
    r = J.T @ W
    np.testing.assert_allclose(estimate_contact_wrench(MODEL, q, r, 'arm_link_7',
                                                       [0.0, 0.02, 0.05]), W, atol=1e-9)
    # a pure force on link 4 (4 joints): force_only recovers it
    f = np.array([0.0, 0.0, -30.0])
    J4 = rd.link_jacobian(MODEL, q, 'arm_link_4', [0.0, 0.0, 0.1])
    F = estimate_contact_wrench(MODEL, q, J4[:3].T @ f, 'arm_link_4', [0.0, 0.0, 0.1],
                                force_only=True)
    np.testing.assert_allclose(F, np.concatenate([f, np.zeros(3)]), atol=1e-9)
    with pytest.raises(ValueError):
        estimate_contact_wrench(MODEL, q, r, 'no_such_link')


def test_state_dependent_threshold_rule():
    """ContactDetector with threshold_velocity/threshold_torque: active exactly where
    |r_i| > base_i + k_v,i |v_i| + k_tau,i |tau_i| (computed here with numpy), released below
    release_ratio times that same threshold."""
    rng = np.random.default_rng(0)
    base, kv, kt = np.full(7, 1.0), np.linspace(0.0, 2.0, 7), np.linspace(0.5, 0.0, 7)
    det = ContactDetector(MODEL, threshold=base, threshold_velocity=kv, threshold_torque=kt,
                          release_ratio=1.0)
    for _ in range(200):
        r, v, tau = rng.normal(0, 2, 7), rng.normal(0, 1, 7), rng.normal(0, 3, 7)
        st = det.update(r, v, tau)
        want = np.abs(r) > base + kv * np.abs(v) + kt * np.abs(tau)
        np.testing.assert_array_equal(st.joints, want)
        assert st.in_contact == want.any()
    assert not det.update(np.full(7, 0.9)).in_contact        # no state given: the base alone
    with pytest.raises(ValueError, match='threshold_torque'):
        ContactDetector(MODEL, threshold_torque=-1.0)


def test_detector_hysteresis_and_isolation_synthetic():
    det = ContactDetector(MODEL, threshold=[2, 2, 1, 1, 1, 0.5, 0.5], release_ratio=0.5)
    z = np.zeros(7)
    assert not det.update(z).in_contact
    st = det.update(np.array([3.0, 0, 0, 1.5, 0, 0, 0]))        # deepest active: joint 4
    assert st.in_contact and st.onset and st.link == 'arm_link_4' and st.joint == 3
    st = det.update(np.array([1.5, 0, 0, 0.6, 0, 0, 0]))        # below thr, above release
    assert st.in_contact and not st.onset and st.link == 'arm_link_4'
    st = det.update(np.array([0.9, 0, 0, 0.6, 0, 0.6, 0]))      # joint 1 released, joint 6 on
    assert st.in_contact and st.link == 'arm_link_6'
    assert list(np.flatnonzero(st.joints)) == [3, 5]
    st = det.update(np.array([0.9, 0, 0, 0.4, 0, 0.2, 0]))
    assert not st.in_contact and st.release and st.link is None
    # debounce
    det2 = ContactDetector(MODEL, threshold=1.0, min_samples=3)
    assert not det2.update(np.full(7, 2.0)).in_contact
    assert not det2.update(np.full(7, 2.0)).in_contact
    assert det2.update(np.full(7, 2.0)).in_contact


@pytest.mark.parametrize('floating', [False, True])
def test_isolation_on_a_tree_reports_each_branch(floating):
    qm = rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=floating)
    rng = np.random.default_rng(0)
    q = qm.neutral()
    q[qm.nq - 12:] = rng.uniform(-0.5, 0.5, 12)
    det = ContactDetector(qm, threshold=0.05)
    f = np.array([5.0, 10.0, 30.0, 0, 0, 0])
    r = rd.link_jacobian(qm, q, 'LH_foot').T @ f              # foot merged into LH_shank
    st = det.update(r)
    assert st.in_contact and st.link == 'LH_shank' and st.links == ['LH_shank']
    r2 = r + rd.link_jacobian(qm, q, 'RF_thigh', [0.0, 0.0, -0.1]).T @ f
    st = det.update(r2)
    assert st.in_contact and sorted(st.links) == ['LH_shank', 'RF_thigh']


# -- model mismatch: payload and friction ----------------------------------------------------

def test_payload_mismatch_and_compensation():
    payload = dict(mass=1.5, com=(0.0, 0.0, 0.05))
    plant = rd.attach_payload(MODEL, 'tool', **payload)
    K = 50.0
    sim, _ = S.make_scenario(plant, 'none', controller_model=plant)
    res = S.simulate_observer(sim, MomentumObserver(MODEL, K), None, 3.0)
    # unknown payload: the residual is the payload's (negative) gravity torque
    k = len(res['t']) - 1
    g_extra = rd.gravity(plant, sim.q) - rd.gravity(MODEL, sim.q)
    assert np.abs(res['r'][k]).max() > 1.0
    np.testing.assert_allclose(res['r'][k], -g_extra, atol=0.05 * np.abs(g_extra).max())
    # the observer told about it: residual back to ~0
    sim, _ = S.make_scenario(plant, 'none', controller_model=plant)
    res = S.simulate_observer(sim, MomentumObserver(rd.attach_payload(MODEL, 'tool', **payload),
                                                    K), None, 3.0)
    assert np.abs(res['r']).max() < 0.02


def test_set_model_at_run_time_has_no_jump():
    plant = rd.attach_payload(MODEL, 'tool', 1.5)
    sim, _ = S.make_scenario(plant, 'none', controller_model=plant)
    obs = MomentumObserver(MODEL, 50.0)
    s = sim.initial_sample()
    obs.reset(s.q, s.v)
    for i in range(2000):
        s = sim.step()
        r = obs.update(s.q, s.v, s.tau, sim.dt)
        if i == 1000:
            obs.set_model(rd.attach_payload(MODEL, 'tool', 1.5))
    assert np.abs(r).max() < 0.02


def test_friction_model():
    fv = np.array([2.0, 2.0, 1.0, 1.0, 0.5, 0.3, 0.3])
    fc = np.array([1.0, 1.0, 0.5, 0.5, 0.3, 0.2, 0.2])
    v = np.array([0.5, -0.5, 0.0, 1e-4, 1.0, -1.0, 0.2])
    tf = friction_torque(v, fv, fc, 1e-2)
    np.testing.assert_allclose(tf, fv * v + fc * np.tanh(v / 1e-2))
    K = 50.0
    mk = lambda: S.make_scenario(MODEL, 'none', friction_viscous=fv, friction_coulomb=fc)[0]  # noqa
    res = S.simulate_observer(mk(), MomentumObserver(MODEL, K), None, 3.0)
    assert np.abs(res['r']).max() > 0.5                        # friction looks like contact
    res = S.simulate_observer(mk(), MomentumObserver(MODEL, K, friction_viscous=fv,
                                                     friction_coulomb=fc), None, 3.0)
    # (the residual error left is the sampling of the steep smoothed Coulomb term at reversals)
    assert np.abs(res['r']).max() < 0.05


def test_torque_offset():
    """Measured torques with a constant offset b (measured = applied + b): the residual shows
    -b in free motion; an observer given the offset shows none (a static arm: exact)."""
    b = np.array([0.4, -0.3, 0.2, 0.0, 0.1, -0.05, 0.02])
    np.testing.assert_allclose(friction_torque(np.zeros(7), 0.0, 0.0, 1e-2, b), b)
    q, v = np.linspace(-0.6, 0.6, 7), np.zeros(7)
    tau = rd.gravity(MODEL, q) + b
    for offset, expected in ((0.0, -b), (b, 0.0 * b)):
        obs = MomentumObserver(MODEL, gain=50.0, torque_offset=offset)
        obs.reset(q, v, tau)
        for _ in range(400):                    # 0.4 s at 1 kHz: e^-20 of the step left
            r = obs.update(q, v, tau, 1e-3)
        np.testing.assert_allclose(r, expected, atol=1e-7)


# -- noise and model error ------------------------------------------------------------------

def test_noise_and_inertia_error_calibrated_thresholds():
    """1 % random inertial error of every link + sensor noise (NOISE): thresholds calibrated on
    20 s of free motion, then 30 s of free motion with another noise seed has no false
    detection, and the contacts are detected on the right link within 30 ms."""
    K = 50.0
    plant = rd.load_urdf(S.perturb_urdf_inertia(XML, 0.01, seed=1))
    sim, _ = S.make_scenario(plant, 'none', seed=11, controller_model=MODEL, **NOISE)
    cal = S.simulate_observer(sim, MomentumObserver(MODEL, K), None, 20.0)
    thr = calibrate_thresholds(cal['r'], margin=1.5, floor=0.1)
    assert np.all(thr >= 0.1)
    sim, _ = S.make_scenario(plant, 'none', seed=12, controller_model=MODEL, **NOISE)
    free = S.simulate_observer(sim, MomentumObserver(MODEL, K), ContactDetector(MODEL, thr), 30.0)
    assert not free['detected'].any()
    sim, desc = S.make_scenario(plant, 'push', seed=13, controller_model=MODEL, **NOISE)
    res = S.simulate_observer(sim, MomentumObserver(MODEL, K), ContactDetector(MODEL, thr), 7.0,
                              estimate_force=True)
    met = S.detection_metrics(res, K)
    assert met['false_onsets'] == 0
    for e in met['episodes']:
        assert e['link'] == e['true_link'] and 0 < e['delay'] < 0.03, e
        assert e['force_err'] < 0.1, e
