"""Calibration of the observer's model (friction, payload) from bags recorded in the simulator
with plant mismatch: the plant carries a 1.5 kg tool on arm7's last link and has joint friction
that the URDF (and the nominal observer) do not know.

Tolerances: the data are noisy (σ_q = 1e-5 rad, σ_v = 2e-3 rad/s, σ_τ = 0.05 N m, the demo's
sensor noise) and the plant integrates with semi-implicit Euler while the observer uses the
trapezoid rule, so the estimates are not exact; their standard errors are ~1e-3 kg, ~1e-4 m
and ≲ 7 % of the friction coefficients, so the asserted bounds (mass 5 %, CoM 1 cm, friction
10 %) are several standard errors wide and still far below the errors of the nominal model
(100 % of the payload, 100 % of the friction)."""
import os
import subprocess
import sys

import re

import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics.identification import bags
from ros_dynamics import simulation as S
from ros_dynamics.control.trajectories import SineTrajectory
from ros_dynamics.identification import calibration as C
from ros_dynamics.identification import payload as P
from ros_dynamics.identification.samples import CalibrationError, Samples

pytestmark = pytest.mark.core

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = rd.load_urdf(rd.bundled_urdf('arm7'))
LINK = 'arm_link_7'
MASS, COM = 1.5, np.array([0.01, -0.02, 0.08])
INERTIA = np.diag([0.004, 0.005, 0.003])
FV = np.array([0.8, 0.8, 0.5, 0.5, 0.2, 0.2, 0.1])
FC = np.array([1.0, 1.0, 0.6, 0.6, 0.3, 0.3, 0.2])
NOISE = dict(noise_position=1e-5, noise_velocity=2e-3, noise_effort=0.05)
GAIN = 50.0


def plant_sim(scenario='none', seed=3, excite=True, **kw):
    """The imperfect-model robot: payload and friction in the plant only."""
    sim, desc = S.make_scenario(MODEL, scenario, payload=(LINK, MASS, COM, INERTIA),
                                friction_viscous=FV, friction_coulomb=FC, seed=seed, **NOISE,
                                **kw)
    if excite:   # an excitation trajectory: every joint moves, the wrist turns the tool over
        sim.trajectory = SineTrajectory(S.home_pose(MODEL)[0],
                                        np.array([0.5, 0.4, 0.5, 0.4, 0.8, 0.6, 1.0]),
                                        0.15 + 0.05 * np.arange(7))
    return sim, desc


@pytest.fixture(scope='module')
def recording(tmp_path_factory):
    """15 s of free motion, written as a bag and read back."""
    sim, _ = plant_sim()
    out = sim.run(15.0)
    path = str(tmp_path_factory.mktemp('bags') / 'free')
    bags.write_joint_states(path, out, names=MODEL.joint_names)
    return path, out


@pytest.fixture(scope='module')
def calibrated(recording):
    samples = bags.read_joint_states(recording[0], joint_names=MODEL.joint_names)
    return C.calibrate(MODEL, samples, LINK, gain=GAIN)


# -- the regressor ------------------------------------------------------------------------------


def test_payload_regressor_matches_attach_payload_and_inverse_dynamics():
    rng = np.random.default_rng(1)
    for _ in range(3):
        q, v, a = rng.uniform(-1.5, 1.5, (3, 7))
        m, c = rng.uniform(0.2, 3.0), rng.uniform(-0.1, 0.1, 3)
        A = rng.standard_normal((3, 3))
        Ic = 0.01 * (A @ A.T + 0.1 * np.eye(3))
        link = rng.choice(['arm_link_4', 'arm_link_7', 'tool'])
        Y = P.payload_regressor(MODEL, link, q, v, a)
        pi = P.payload_parameters(m, c, Ic)
        truth = (rd.inverse_dynamics(rd.attach_payload(MODEL, link, m, c, Ic), q, v, a)
                 - rd.inverse_dynamics(MODEL, q, v, a))
        assert np.abs(truth).max() > 0.1
        np.testing.assert_allclose(Y @ pi, truth, atol=1e-10 * max(1.0, np.abs(truth).max()))
        # and the parameters map back
        m2, c2, I2 = P.payload_from_parameters(pi)
        assert m2 == pytest.approx(m) and np.allclose(c2, c) and np.allclose(I2, Ic)


def test_payload_gravity_column_is_the_static_torque_of_a_point_mass():
    """Independent check of the mass column: at rest, 1 kg at the link origin needs
    τ = J_linᵀ(−m g) at the joints (J the world-frame Jacobian of the link origin)."""
    q = np.array([0.3, -0.5, 0.2, -1.2, 0.4, 0.8, -0.3])
    Y = P.payload_regressor(MODEL, LINK, q, np.zeros(7), np.zeros(7))
    J = rd.link_jacobian(MODEL, q, LINK)
    np.testing.assert_allclose(Y[:, 0], J[:3].T @ (-MODEL.gravity), atol=1e-10)


# -- apply_payload ------------------------------------------------------------------------------


def test_apply_payload_equals_attach_payload():
    I6 = [0.004, 0.0001, 0.0, 0.005, 0.0, 0.003]
    m1 = P.apply_payload(MODEL, LINK, MASS, COM, I6)
    m2 = rd.attach_payload(MODEL, LINK, MASS, COM, P.inertia_matrix(I6))
    q, v = np.full(7, 0.3), np.full(7, 0.2)
    np.testing.assert_allclose(rd.dynamics(m1, q, v).M, rd.dynamics(m2, q, v).M)
    assert P.apply_payload(MODEL, LINK, 0.0, [0, 0, 0], [0] * 6) is MODEL


@pytest.mark.parametrize('args,match', [
    (('nope', 1.0, [0, 0, 0], [0] * 6), 'not a link'),
    ((LINK, -1.0, [0, 0, 0], [0] * 6), 'mass must be >= 0'),
    ((LINK, 1.0, [0, 0], [0] * 6), '3 values'),
    ((LINK, 1.0, [0, 0, 0], [0] * 5), '6 values'),
    ((LINK, float('nan'), [0, 0, 0], [0] * 6), 'finite'),
    ((LINK, 1.0, [0, 0, 0], [-0.1, 0, 0, 0.1, 0, 0.1]), 'positive semi-definite'),
    ((LINK, 1.0, [0, 0, 0], [0.01, 0, 0, 0.01, 0, 0.05]), 'triangle inequality'),
])
def test_apply_payload_rejects_bad_values(args, match):
    with pytest.raises(ValueError, match=match):
        P.apply_payload(MODEL, *args)


# -- calibration from a bag ---------------------------------------------------------------------


def test_calibration_recovers_payload_and_friction(calibrated):
    cal = calibrated
    print('\n'.join(cal.summary()))
    assert cal.payload_mass == pytest.approx(MASS, rel=0.05)
    assert np.linalg.norm(cal.payload_com - COM) < 0.01
    np.testing.assert_allclose(cal.friction_viscous, FV, rtol=0.10)
    np.testing.assert_allclose(cal.friction_coulomb, FC, rtol=0.10)
    # the reported standard errors are consistent with the actual errors (within 5 sigma)
    assert abs(cal.payload_mass - MASS) < 5 * cal.payload_mass_se + 1e-3
    assert np.all(cal.friction_viscous_se > 0) and cal.payload_mass_se < 0.05
    # the residual: large before, small after
    assert np.all(cal.after['rms'] < 0.3 * cal.before['rms'])
    assert cal.before['max'].max() > 10.0


def test_calibrated_observer_no_false_contact_in_free_motion(calibrated):
    """Another free-motion run (other noise, other motion): the nominal observer "detects"
    contact at once, the calibrated one never."""
    sim, _ = plant_sim(seed=11, excite=False)
    out = sim.run(8.0)
    s = Samples(out['t'], out['q'], out['v'], out['tau'])
    nominal = C.observer_residuals(MODEL, s, GAIN, threshold=calibrated.thresholds)
    assert nominal['contact'].any()
    first = s.t[np.argmax(nominal['contact'])]
    assert first < 0.5
    res = C.observer_residuals(calibrated.model(MODEL), s, GAIN, calibrated.friction_viscous,
                               calibrated.friction_coulomb, threshold=calibrated.thresholds)
    assert not res['contact'].any(), np.nanmax(np.abs(res['r']), axis=0)


def test_calibrated_observer_is_unbiased_under_a_known_external_force(calibrated):
    """A constant 20 N force on the tool flange from 2 s on: after 5/K the calibrated residual
    is within 5 % of the true external torque (window mean; the nominal one is far off)."""
    sim, desc = plant_sim(seed=5, excite=False)
    sim.contacts = [S.WrenchContact(LINK, force=(12.0, -10.0, -12.0), point=desc['point'],
                                    t_start=2.0)]
    out = sim.run(4.0)
    s = Samples(out['t'], out['q'], out['v'], out['tau'])
    res = C.observer_residuals(calibrated.model(MODEL), s, GAIN, calibrated.friction_viscous,
                               calibrated.friction_coulomb)
    nom = C.observer_residuals(MODEL, s, GAIN)
    win = s.t > 2.0 + 5.0 / GAIN
    truth = out['tau_ext'][win]
    err = np.linalg.norm(np.mean(res['r'][win] - truth, axis=0)) / np.linalg.norm(
        np.mean(truth, axis=0))
    err_nom = np.linalg.norm(np.mean(nom['r'][win] - truth, axis=0)) / np.linalg.norm(
        np.mean(truth, axis=0))
    print(f'relative residual bias under contact: calibrated {err:.4f}, nominal {err_nom:.3f}')
    assert err < 0.05
    assert err_nom > 0.3


def test_contact_in_the_recording_is_reported(tmp_path):
    """A 1.5 s push (25 N on the tool flange at 4 s) inside 10 s of free motion (with the
    residual's rise and decay, more than 10 % of the recording): the calibration refuses by
    default and names the span; with contact='exclude' it fits the rest and still recovers the
    payload."""
    sim, desc = plant_sim(seed=8)
    sim.contacts = [S.WrenchContact(LINK, force=(20.0, -15.0, 0.0), point=desc['point'],
                                    t_start=4.0, t_end=5.5)]
    out = sim.run(10.0)
    path = str(tmp_path / 'push')
    bags.write_joint_states(path, out, names=MODEL.joint_names, storage='mcap')
    s = bags.read_joint_states(path, joint_names=MODEL.joint_names)
    with pytest.raises(C.ContactInData, match=r'contains contact.* 4\.0\d-5\.[56]\d s.*too much'):
        C.calibrate(MODEL, s, LINK)
    cal = C.calibrate(MODEL, s, LINK, contact='exclude')
    assert cal.payload_mass == pytest.approx(MASS, rel=0.05)
    np.testing.assert_allclose(cal.friction_viscous, FV, rtol=0.10)
    assert not cal.used[(s.t > 4.0) & (s.t < 5.5)].any()
    assert any('fitted on the rest' in n for n in cal.notes)


def test_a_short_contact_is_fitted_around_by_default():
    """A 80 ms knock (60 N on the tool flange at 4 s) in 10 s of free motion: the default
    options fit the rest, name the stretch (when, how long, which joints) and recover the
    payload as without it (5 %, as the contact-free calibration tests)."""
    sim, desc = plant_sim(seed=8)
    sim.contacts = [S.WrenchContact(LINK, force=(50.0, -35.0, 0.0), point=desc['point'],
                                    t_start=4.0, t_end=4.08)]
    out = sim.run(10.0)
    s = Samples(out['t'], out['q'], out['v'], out['tau'])
    cal = C.calibrate(MODEL, s, LINK)
    assert cal.payload_mass == pytest.approx(MASS, rel=0.05)
    note = [n for n in cal.notes if 'fitted on the rest' in n]
    assert len(note) == 1 and re.search(r'4\.0\d-4\.\d\d s \(\d+ ms; up to arm_joint', note[0]), \
        cal.notes
    assert not cal.used[(cal.t > 4.0) & (cal.t < 4.1)].any()     # over cal.t: the samples the node takes


def test_contact_over_much_of_the_recording_is_reported():
    """The push scenario (two 30 N pushes, 40 % of a slow 6 s motion): no fit explains it."""
    sim, _ = plant_sim('push', seed=7, excite=False)
    out = sim.run(6.0)
    s = Samples(out['t'], out['q'], out['v'], out['tau'])
    with pytest.raises(C.ContactInData, match='contact'):
        C.calibrate(MODEL, s, LINK)


# -- estimate_payload from static poses --------------------------------------------------------


def test_estimate_payload_from_static_poses():
    rng = np.random.default_rng(2)
    true_model = rd.attach_payload(MODEL, LINK, MASS, COM, INERTIA)
    poses = [rng.uniform(-1.2, 1.2, 7) for _ in range(6)]
    pairs = [(q, rd.gravity(true_model, q) + 0.02 * rng.standard_normal(7)) for q in poses]
    est = P.estimate_payload(MODEL, pairs, LINK)
    assert est.mass == pytest.approx(MASS, rel=0.02)
    assert np.linalg.norm(est.com - COM) < 0.005
    assert est.mass_se < 0.05 and est.poses == 6
    # one pose does not determine the CoM
    with pytest.raises(CalibrationError, match='orientation|oriented'):
        P.estimate_payload(MODEL, pairs[:1], LINK)


# -- bags ---------------------------------------------------------------------------------------


@pytest.mark.parametrize('storage', ['sqlite3', 'mcap'])
def test_bag_round_trip(tmp_path, storage):
    sim, _ = plant_sim(excite=False)
    out = sim.run(0.5)
    path = str(tmp_path / storage)
    bags.write_joint_states(path, out, names=MODEL.joint_names, storage=storage)
    assert any(f.endswith('.db3' if storage == 'sqlite3' else '.mcap') for f in os.listdir(path))
    assert bags.bag_topics(path) == {'/joint_states': 'sensor_msgs/msg/JointState'}
    # read with the joints in another order: columns follow the requested names
    names = list(reversed(MODEL.joint_names))
    s = bags.read_joint_states(path, joint_names=names)
    np.testing.assert_array_equal(s.q, out['q'][:, ::-1])
    np.testing.assert_array_equal(s.v, out['v'][:, ::-1])
    np.testing.assert_array_equal(s.tau, out['tau'][:, ::-1])
    np.testing.assert_allclose(s.t, out['t'], atol=1e-12)


def test_bad_bags_give_clear_errors(tmp_path):
    sim, _ = plant_sim(excite=False)
    out = sim.run(0.2)
    other = str(tmp_path / 'other_topic')
    bags.write_joint_states(other, out, names=MODEL.joint_names, topic='/robot/joint_states')
    with pytest.raises(bags.BagError, match=r"no topic '/joint_states'.*/robot/joint_states"):
        bags.read_joint_states(other)
    noeff = str(tmp_path / 'no_effort')
    bags.write_joint_states(noeff, out, names=MODEL.joint_names, effort=False)
    with pytest.raises(bags.BagError, match='no efforts'):
        bags.read_joint_states(noeff, joint_names=MODEL.joint_names)
    few = str(tmp_path / 'few_joints')
    six = dict(out, q=out['q'][:, :6], v=out['v'][:, :6], tau=out['tau'][:, :6])
    bags.write_joint_states(few, six, names=MODEL.joint_names[:6])
    with pytest.raises(bags.BagError, match=r"missing required joint\(s\) \['arm_joint_7'\]"):
        bags.read_joint_states(few, joint_names=MODEL.joint_names)
    with pytest.raises(bags.BagError, match='not a ROS 2 bag folder'):
        bags.read_joint_states(str(tmp_path))
    with pytest.raises(bags.BagError, match='no such bag'):
        bags.read_joint_states(str(tmp_path / 'missing'))


# -- the command line ---------------------------------------------------------------------------


def test_cli_calibrate_and_check_end_to_end(recording, tmp_path):
    import yaml
    bag = recording[0]
    params = tmp_path / 'params.yaml'
    plots = tmp_path / 'plots'
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get('PYTHONPATH', ''))
    p = subprocess.run([sys.executable, '-m', 'ros_dynamics.identification.calibrate', bag, '--urdf',
                        rd.bundled_urdf('arm7'), '--payload-link', LINK, '--out', str(params),
                        '--plots', str(plots)], capture_output=True, text=True, env=env,
                       timeout=600, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert str(params) in p.stdout
    d = yaml.safe_load(params.read_text())['dynamics']['ros__parameters']
    assert d['payload_link'] == LINK
    assert d['payload_mass'] == pytest.approx(MASS, rel=0.05)
    assert len(d['payload_com']) == 3 and len(d['payload_inertia']) == 6
    for k in ('observer_friction_viscous', 'observer_friction_coulomb', 'contact_threshold'):
        assert len(d[k]) == 7 and all(x >= 0 for x in d[k]), k
    # what the node will do with it: the payload parameters load into a model
    P.apply_payload(MODEL, d['payload_link'], d['payload_mass'], d['payload_com'],
                    d['payload_inertia'])
    for f in ('residual_before_after.png', 'friction.png'):
        assert (plots / f).stat().st_size > 10000
    # the same bag through the node's cycle with those parameters: no detection
    csv_path = tmp_path / 'check.csv'
    p = subprocess.run([sys.executable, '-m', 'ros_dynamics.identification.calibrate', 'check', bag,
                        '--urdf', rd.bundled_urdf('arm7'), '--params', str(params), '--out',
                        str(csv_path)], capture_output=True, text=True, env=env, timeout=600,
                       cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    rows = csv_path.read_text().splitlines()
    assert rows[0].startswith('t,r_arm_joint_1') and rows[0].endswith('contact,link')
    assert len(rows) == len(recording[1]['t']) + 1
    assert all(r.split(',')[-2] == '0' for r in rows[1:])
    assert (tmp_path / 'check.png').exists()
    assert '0 contact onsets' in p.stdout and 'smallest detected external torque' in p.stdout
    # a bad bag: exit status != 0 and the reason on stderr
    p = subprocess.run([sys.executable, '-m', 'ros_dynamics.identification.calibrate', bag, '--urdf',
                        rd.bundled_urdf('arm7'), '--topic', '/nope', '--out',
                        str(tmp_path / 'x.yaml')], capture_output=True, text=True, env=env,
                       timeout=600, cwd=str(tmp_path))
    assert p.returncode != 0 and "no topic '/nope'" in p.stderr


def test_what_a_recording_does_not_determine_is_said_in_plain_words():
    """Two regressor columns nearly the same (the payload mass and joint 2's Coulomb friction
    move together in this motion), a third apart: the inflation of the first two is ~1/(1 -
    0.999^2), above the limit; the report names the mass, what it trades against, the joint,
    and the motion that would separate them; the friction of joint 3 is not named."""
    from ros_dynamics.identification.determination import VIF_LIMIT, not_determined
    from ros_dynamics.identification.residual_fit import ResidualFit
    rng = np.random.default_rng(0)
    x = rng.standard_normal(2000)
    cols = np.column_stack([x, 0.999 * x + 0.045 * rng.standard_normal(2000),
                            rng.standard_normal(2000)])[:, None, :]
    names = ['m', 'Fc[arm_joint_2]', 'Fv[arm_joint_3]']
    fit = ResidualFit(cols, rng.standard_normal((2000, 1)), names, np.ones((2000, 1), bool))
    vif, partners = fit.inflation(fit.solve(np.ones(2000, dtype=bool)))
    assert vif[0] > VIF_LIMIT and vif[1] > VIF_LIMIT and vif[2] < 1.1
    lines = not_determined(names, names, vif, partners, names, LINK)
    assert len(lines) == 3 and 'payload mass' in lines[0] and 'Coulomb friction of arm_joint_2' \
        in lines[0] and 'viscous friction of arm_joint_3' not in lines[-1]
    assert lines[-1].startswith('a motion that would: joints arm_joint_2') and \
        'calibrate excite' in lines[-1] and LINK in lines[-1]


def test_a_robot_settling_at_the_start_is_not_called_contact():
    """A MuJoCo arm (the URDF's links, MuJoCo's own friction) started 0.3 rad off its
    trajectory under a stiff loop (30 rad/s): the first ~0.15 s, settling, leave a residual
    of up to ~90 N m, far above the rest.  In 3.5 s of motion that stretch (with its margins)
    is 10 % of the recording, which was refused as contact; it is the start-up: left out,
    named, and the recording calibrated.  A contact-free twin of a real arm was refused so
    (a 618 ms stretch at the start)."""
    import mujoco
    from ros_dynamics.simulation.mujoco_plant import MujocoPlant
    traj = SineTrajectory(S.home_pose(MODEL)[0], np.array([0.5, 0.4, 0.5, 0.4, 0.8, 0.6, 1.0]),
                          0.15 + 0.05 * np.arange(7))
    p = MujocoPlant(MODEL, traj, armature=[0.3, 0.3, 0.1, 0.1, 0.03, 0.03, 0.01], damping=FV,
                    frictionloss=FC, **NOISE, seed=3)
    p.d.qpos[:] += 0.3 * np.array([1, -1, 1, -1, 1, -1, 1.0])
    mujoco.mj_forward(p.m, p.d)
    out = p.run(3.5)
    s = Samples(out['t'], out['q'], out['v'], out['tau'])
    cal = C.calibrate(MODEL, s, gain=GAIN)
    note = [n for n in cal.notes if 'start-up' in n]
    assert len(note) == 1 and re.search(r': 0\.0\d-0\.[12]\d s \(\d+ ms\)$', note[0]), cal.notes
    assert not any('fitted on the rest' in n for n in cal.notes), cal.notes
    assert not cal.used[cal.t < 0.2].any()
    np.testing.assert_allclose(cal.friction_coulomb[:4], FC[:4], rtol=0.3)
