"""Identification of the whole model (every link's inertia, friction, armature, torque offset)
on an independent plant: MuJoCo with every link 20-30 % off the URDF, rotor inertia, MuJoCo's
own friction (damping and the frictionloss constraint), torque offsets and sensor noise.

Tolerances: the friction laws differ (MuJoCo's sticking dry friction vs the observer's tanh),
so the held-out residual cannot reach the noise: on the first joint, whose residual is mostly
friction, it falls to about 30 % of the URDF model's (asserted: 35 %); on the gravity-loaded
shoulder and elbow, where the link errors dominate, to about 3-9 % (asserted: 10 %).  The
fitted URDF is checked for what it must be exactly."""
import re

import numpy as np
import pytest
import yaml

import ros_dynamics as rd
from ros_dynamics.identification import bags
from ros_dynamics.identification import calibrate as cli
from ros_dynamics.control.trajectories import SineTrajectory
from ros_dynamics.identification import inertial_parameters as IP
from ros_dynamics.identification import whole_model as ID
from ros_dynamics.identification.urdf_inertials import replace_inertials
from ros_dynamics.simulation import home_pose
from ros_dynamics.simulation.mujoco_plant import MujocoPlant, perturbed_model

pytestmark = pytest.mark.core

URDF = rd.bundled_urdf('arm7')
MODEL = rd.load_urdf(URDF)
TRUTH = perturbed_model(MODEL, spread=(0.2, 0.3), seed=1)
FV = np.array([0.8, 0.8, 0.5, 0.5, 0.2, 0.2, 0.1])
FC = np.array([1.0, 1.0, 0.6, 0.6, 0.3, 0.3, 0.2])
ARMATURE = np.array([0.3, 0.3, 0.1, 0.1, 0.03, 0.03, 0.01])
OFFSET = np.array([0.5, -0.4, 0.3, 0.2, -0.1, 0.05, 0.02])
EXCITE = SineTrajectory(home_pose(MODEL)[0], np.array([0.5, 0.4, 0.5, 0.4, 0.8, 0.6, 1.0]),
                        0.15 + 0.05 * np.arange(7))


def test_regressor_columns_sum_to_the_models_momentum_and_bias():
    """p = M v and Cᵀv − g are linear in the inertial parameters: the columns times every
    body's π must give the model's own terms (a different model than the unit ones)."""
    rng = np.random.default_rng(2)
    q, v = rng.uniform(-1.5, 1.5, (2, 4, 7))
    pi = IP.inertial_parameters(TRUTH)
    p, b = np.zeros((4, 7)), np.zeros((4, 7))
    for i in range(TRUTH.nbodies):
        P, B = ID.regressor_columns(TRUTH, q, v, i)
        p += P @ pi[i]
        b += B @ pi[i]
    for k in range(4):
        d = rd.dynamics(TRUTH, q[k], v[k])
        np.testing.assert_allclose(p[k], d.M @ v[k], atol=1e-10)
        np.testing.assert_allclose(b[k], d.C.T @ v[k] - d.g, atol=1e-10)


def test_pseudo_inertia_is_psd_exactly_for_rigid_bodies():
    for pi in IP.inertial_parameters(TRUTH):
        assert np.linalg.eigvalsh(IP.pseudo_inertia(pi))[0] > 0
        np.testing.assert_allclose(IP.pseudo_inertia_parameters(IP.pseudo_inertia(pi)), pi)
    # principal moments (1, 1, 3) violate the triangle inequality: no mass distribution has them
    bad = np.array([1.0, 0, 0, 0, 1.0, 0, 0, 1.0, 0, 3.0])
    assert np.linalg.eigvalsh(IP.pseudo_inertia(bad))[0] < 0


def test_replace_inertials_changes_only_the_inertials():
    text = open(URDF).read()
    out = replace_inertials(text, MODEL, TRUTH)
    m = rd.load_urdf(out)
    for k in ('mass', 'com', 'inertia'):
        np.testing.assert_allclose(getattr(m, k), getattr(TRUTH, k), atol=1e-12, err_msg=k)
    strip = lambda s: re.sub(r'\s*<inertial\b.*?</inertial>', '', s, flags=re.S)  # noqa: E731
    assert strip(out) == strip(text)
    np.testing.assert_allclose(m.X_p, MODEL.X_p)
    assert m.joint_names == MODEL.joint_names


def _bag(path, truth, trajectory, seed, duration):
    """A bag at ``path`` of the MuJoCo plant ``truth`` (armature, friction, torque offsets,
    sensor noise) following ``trajectory`` for ``duration`` s; returns the path."""
    out = MujocoPlant(truth, trajectory, nominal=MODEL, armature=ARMATURE, damping=FV,
                      frictionloss=FC, torque_offset=OFFSET, noise_position=1e-5,
                      noise_velocity=2e-3, noise_effort=0.05, seed=seed).run(duration)
    bags.write_joint_states(str(path), out, names=MODEL.joint_names)
    return str(path)


@pytest.fixture(scope='module')
def recording(tmp_path_factory):
    return _bag(tmp_path_factory.mktemp('bags') / 'free', TRUTH, EXCITE, 3, 12.0)


@pytest.fixture(scope='module')
def identified(recording, tmp_path_factory):
    d = tmp_path_factory.mktemp('ident')
    params, urdf = d / 'params.yaml', d / 'identified.urdf'
    assert cli.main([recording, '--urdf', URDF, '--links', 'all', '--out', str(params),
                     '--out-urdf', str(urdf)]) == 0
    return yaml.safe_load(params.read_text())['dynamics']['ros__parameters'], urdf.read_text()


def test_held_out_residual_falls_on_every_joint(recording):
    s = bags.read_joint_states(recording, joint_names=MODEL.joint_names)
    ident = ID.identify_recording(MODEL, s)
    before, after = ident.held.before['rms'], ident.held.after['rms']
    assert np.all(after < 0.35 * before), (before, after)
    assert np.all(after[[1, 3]] < 0.1 * before[[1, 3]]), (before, after)   # gravity-loaded
    assert 0 < ident.base.rank < ident.base.n_parameters        # some combinations are not identifiable
    np.testing.assert_allclose(ident.friction_coulomb, FC, rtol=0.3)
    # every identified body is physically consistent
    for pi in ident.parameters:
        assert np.linalg.eigvalsh(IP.pseudo_inertia(pi))[0] > 0


def test_held_out_on_a_second_recording_of_other_motion(recording, tmp_path, capsys):
    """``--held-out BAG``: the whole first recording is fitted, and the held-out figures, the
    thresholds and the check come from the second one (other motion, other noise), replayed
    through the node's cycle; the report says which."""
    other = SineTrajectory(home_pose(MODEL)[0] + 0.1,
                           np.array([0.3, 0.25, 0.4, 0.3, 0.5, 0.4, 0.6]),
                           0.11 + 0.03 * np.arange(7))
    path = _bag(tmp_path / 'other', TRUTH, other, 11, 8.0)
    params = tmp_path / 'params.yaml'
    assert cli.main([recording, '--urdf', URDF, '--links', 'all', '--held-out', path,
                     '--out', str(params)]) == 0
    text = capsys.readouterr().out
    assert 'held out: a second recording' in text and 'report on ' + path in text, text
    s = bags.read_joint_states(recording, joint_names=MODEL.joint_names)
    held = bags.read_joint_states(path, joint_names=MODEL.joint_names)
    ident = ID.identify_recording(MODEL, s, held_out=held)
    assert ident.held.test_rows.size == 0 and len(ident.held.check.t) == len(held)
    assert ident.held.check.onsets == 0
    # on motion the fit has not seen the residual still falls on every joint: measured 0.271 of
    # the URDF's on the first joint (friction), 0.086 and 0.031 on the shoulder and elbow
    ratio = ident.held.after['rms'] / ident.held.before['rms']
    assert np.all(ratio < 0.5) and np.all(ratio[[1, 3]] < 0.2), ratio


def test_cli_writes_a_parameter_file_and_a_urdf_the_node_loads(identified):
    params, urdf = identified
    for k in ('observer_friction_viscous', 'observer_friction_coulomb', 'joint_armature',
              'contact_threshold'):
        assert len(params[k]) == 7 and all(x >= 0 for x in params[k]), k
    m = rd.load_urdf(urdf)
    assert m.joint_names == MODEL.joint_names
    # gravity (identifiable from the motion) is much closer to the plant's than the URDF's,
    # also at configurations the recording never visited (about 1/3 of the error left there:
    # the torque offsets and gravity are nearly collinear on this motion)
    rng = np.random.default_rng(5)
    for q in rng.uniform(-1.2, 1.2, (5, 7)):
        truth = rd.gravity(TRUTH, q)
        assert np.linalg.norm(rd.gravity(m, q) - truth) \
            < 0.5 * np.linalg.norm(rd.gravity(MODEL, q) - truth)


def test_payload_against_a_reference_recording(recording, tmp_path):
    """The robot (every link off, armature, friction, torque offsets) from a recording without
    the payload, the 2.8 kg payload from one with it, on the same trajectory: the payload is
    the difference (a friction-and-payload fit on the URDF alone misses by link errors)."""
    payload = (2.8, np.array([0.0, 0.01, 0.06]), np.diag([5e-3, 5e-3, 3e-3]))
    truth = rd.attach_payload(TRUTH, 'arm_link_7', *payload)
    path = _bag(tmp_path / 'with_payload', truth, EXCITE, 4, 12.0)
    params = tmp_path / 'params.yaml'
    assert cli.main([path, '--urdf', URDF, '--payload-link', 'arm_link_7', '--reference',
                     recording, '--out', str(params)]) == 0
    d = yaml.safe_load(params.read_text())['dynamics']['ros__parameters']
    assert d['payload_mass'] == pytest.approx(2.8, rel=0.05)
    assert np.linalg.norm(np.array(d['payload_com']) - payload[1]) < 0.01
    assert len(d['joint_armature']) == 7


def test_a_contact_in_the_recording_is_left_out_of_the_fit():
    """A 1.5 s push of 25 N on the last link inside the fitted part: the trimmed fit leaves its
    blocks out and says so, and the held-out residual still falls as without it."""
    from ros_dynamics.identification.samples import Samples
    out = MujocoPlant(TRUTH, EXCITE, nominal=MODEL, armature=ARMATURE, damping=FV,
                      frictionloss=FC, torque_offset=OFFSET, noise_position=1e-5,
                      noise_velocity=2e-3, noise_effort=0.05, seed=3,
                      pushes=[('arm_link_7', (0.0, 0.0, 0.05), (20.0, -15.0, 0.0), 3.0, 4.5)]
                      ).run(12.0)
    s = Samples(out['t'], out['q'], out['v'], out['tau'])
    ident = ID.identify_recording(MODEL, s)
    assert any('left out' in n for n in ident.notes), ident.notes
    assert np.all(ident.held.after['rms'] < 0.35 * ident.held.before['rms'])
    assert np.all(ident.held.after['rms'][[1, 3]] < 0.1 * ident.held.before['rms'][[1, 3]])


def test_check_with_the_identified_files_shows_no_contact(identified, recording, tmp_path):
    """`calibrate check` with the identified URDF and parameter file (armature included): the
    node's pipeline on the recording itself reports no contact."""
    params, urdf = identified
    urdf_path, params_path = tmp_path / 'id.urdf', tmp_path / 'p.yaml'
    urdf_path.write_text(urdf)
    params_path.write_text(yaml.safe_dump({'dynamics': {'ros__parameters': params}}))
    csv_path = tmp_path / 'check.csv'
    assert cli.main(['check', recording, '--urdf', str(urdf_path), '--params',
                     str(params_path), '--out', str(csv_path)]) == 0
    rows = csv_path.read_text().splitlines()[1:]
    assert len(rows) > 10000 and all(r.split(',')[-2] == '0' for r in rows)


def _current_based(truth, seed, scale):
    """20 s at 100 Hz of a MuJoCo arm whose torques come from currents (Mamedov et al. 2020's
    case): dry friction growing by 0.2 N m per N m of load torque, torque constants ``scale``
    off, current-like noise, a jittered 100 Hz loop (ω = 10 rad/s)."""
    from ros_dynamics.identification.samples import Samples
    Mii = np.diag(rd.mass_matrix(MODEL, EXCITE(0.0)[0]))
    out = MujocoPlant(truth, EXCITE, nominal=MODEL, dt=5e-4, armature=ARMATURE, damping=FV,
                      frictionloss=FC, torque_offset=OFFSET, noise_position=1e-5,
                      noise_velocity=2e-3, noise_effort=0.05, noise_effort_relative=0.01,
                      load_friction=0.2, torque_scale=scale, rate=100, jitter=0.1,
                      kp=100.0 * Mii, kd=20.0 * Mii, seed=seed).run(20.0)
    return Samples(out['t'], out['q'], out['v'], out['tau'])


def test_payload_against_a_reference_with_load_dependent_friction():
    """A 2.8 kg tool against a no-load reference on a plant the model is not (links 20-30 %
    off, torque constants 1-3 % off, friction growing with the load torque): with the
    load-dependent friction identified on the reference and held in the payload's fit, the
    mass is within 5 % and its stated ± covers the truth (2 SE); with a constant Coulomb law
    on the reference (the payload's fit then finds its own F_l, which trades against the
    mass), it is neither.  Measured on this draw (links seed 1): with +1.1 % (0.76 SE),
    without -13.3 % (9.6 SE); over links seeds 1-4 with -2.1 to +1.5 % (at most 1.7 SE),
    without -16.6 to +5.5 % (1.95 to 11.9 SE)."""
    tool = (2.8, np.array([0.0, 0.01, 0.06]), np.diag([5e-3, 5e-3, 3e-3]))
    rng = np.random.default_rng(101)
    scale = 1.0 + rng.choice((-1, 1), 7) * rng.uniform(0.01, 0.03, 7)
    ref = _current_based(TRUTH, 3, scale)
    withp = _current_based(rd.attach_payload(TRUTH, 'arm_link_7', *tool), 4, scale)
    z = {}
    for held in (True, False):
        robot = ID.identify_recording(MODEL, ref, load_friction='auto' if held else False)
        assert (robot.friction_load is not None) == held
        _, cal = ID.payload_against_reference(MODEL, withp, ref, 'arm_link_7', robot=robot)
        z[held] = ((cal.payload_mass - tool[0]) / tool[0],
                   abs(cal.payload_mass - tool[0]) / cal.payload_mass_se)
    assert abs(z[True][0]) < 0.05 and z[True][1] < 2.0, z
    assert abs(z[False][0]) > 0.05 and z[False][1] > 2.0, z
