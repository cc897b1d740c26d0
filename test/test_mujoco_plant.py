"""The MuJoCo plant (an independent simulator for identification checks) and the calibration
measured on it.

MuJoCo's own algorithms check the MJCF written from our model (mass matrix with armature,
bias forces), and the calibration is run on a plant whose friction is MuJoCo's (viscous
``damping`` and the ``frictionloss`` constraint, not the observer's tanh law).  Tolerances for
the calibration: the friction law differs, so friction is asserted to 30 % (the docs' table
shows ~20 %), the payload to 2 % / 3 mm (several standard errors, far below the nominal 100 %).
"""
import mujoco
import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics.control.trajectories import SineTrajectory
from ros_dynamics.identification.calibration import calibrate, observer_residuals
from ros_dynamics.identification.samples import Samples
from ros_dynamics.simulation import home_pose
from ros_dynamics.simulation.mujoco_plant import MujocoPlant, mjcf, perturbed_model

pytestmark = pytest.mark.core

MODEL = rd.load_urdf(rd.bundled_urdf('arm7'))
LINK = 'arm_link_7'
FV = np.array([0.8, 0.8, 0.5, 0.5, 0.2, 0.2, 0.1])
FC = np.array([1.0, 1.0, 0.6, 0.6, 0.3, 0.3, 0.2])
EXCITE = SineTrajectory(home_pose(MODEL)[0], np.array([0.5, 0.4, 0.5, 0.4, 0.8, 0.6, 1.0]),
                        0.15 + 0.05 * np.arange(7))


def _mujoco_mass_matrix(m, d):
    nv = m.nv
    H = np.zeros((nv, nv))
    for j in range(nv):
        e, col = np.zeros(nv), np.zeros(nv)
        e[j] = 1.0
        mujoco.mj_mulM(m, d, col, e)
        H[:, j] = col
    return H


def test_mjcf_has_the_model_dynamics_plus_armature():
    truth = perturbed_model(MODEL, seed=4)
    armature = np.linspace(0.05, 0.3, 7)
    m = mujoco.MjModel.from_xml_string(mjcf(truth, armature=armature))
    d = mujoco.MjData(m)
    rng = np.random.default_rng(0)
    for _ in range(3):
        q, v = rng.uniform(-1.5, 1.5, (2, 7))
        d.qpos[:], d.qvel[:] = q, v
        mujoco.mj_forward(m, d)
        np.testing.assert_allclose(_mujoco_mass_matrix(m, d),
                                   rd.mass_matrix(truth, q) + np.diag(armature), atol=1e-12)
        np.testing.assert_allclose(d.qfrc_bias, rd.inverse_dynamics(truth, q, v, np.zeros(7)),
                                   atol=1e-11)


def test_library_armature_matches_mujoco():
    """The model's armature (``Model.armature``) against MuJoCo's joint armature: mass
    matrix, inverse dynamics (mj_inverse), forward dynamics and the momentum p = M v."""
    armature = np.linspace(0.05, 0.3, 7)
    ours = MODEL.copy(armature=armature)
    m = mujoco.MjModel.from_xml_string(mjcf(MODEL, armature=armature))
    d = mujoco.MjData(m)
    rng = np.random.default_rng(1)
    for _ in range(3):
        q, v, a, tau = rng.uniform(-1.5, 1.5, (4, 7))
        d.qpos[:], d.qvel[:], d.qacc[:] = q, v, a
        mujoco.mj_inverse(m, d)
        np.testing.assert_allclose(rd.inverse_dynamics(ours, q, v, a), d.qfrc_inverse,
                                   atol=1e-11)
        d.qfrc_applied[:] = tau
        mujoco.mj_forward(m, d)
        H = _mujoco_mass_matrix(m, d)
        np.testing.assert_allclose(rd.mass_matrix(ours, q), H, atol=1e-12)
        np.testing.assert_allclose(rd.dynamics(ours, q, v).M, H, atol=1e-12)
        np.testing.assert_allclose(rd.forward_dynamics(ours, q, v, tau), d.qacc, atol=1e-10)
        np.testing.assert_allclose(rd.momentum(ours, q, v), H @ v, atol=1e-12)


def test_perturbed_model_moves_every_link_by_20_to_30_percent_and_stays_physical():
    P = perturbed_model(MODEL, spread=(0.2, 0.3), seed=7)
    ratio = P.mass / MODEL.mass
    assert np.all((np.abs(ratio - 1) >= 0.2 - 1e-12) & (np.abs(ratio - 1) <= 0.3 + 1e-12))
    for i in range(P.nbodies):
        w = np.sort(np.linalg.eigvalsh(P.inertia[i]))
        w0 = np.sort(np.linalg.eigvalsh(MODEL.inertia[i]))
        assert w[0] > 0 and w[0] + w[1] >= w[2]
        assert np.max(np.abs(w / w0 - 1)) >= 0.2 - 1e-9
        assert np.linalg.norm(P.com[i] - MODEL.com[i]) >= 0.2 * 0.02


def test_pushes_are_the_jacobian_transpose_of_the_force():
    force, point = np.array([3.0, -4.0, 5.0]), np.array([0.0, 0.01, 0.05])
    pl = MujocoPlant(MODEL, EXCITE, pushes=[(LINK, point, force, 0.0, 1.0)])
    out = pl.run(0.05)
    q = out['q'][-2]     # the state the last push was applied at (no sensor noise)
    J = rd.link_jacobian(MODEL, q, LINK, point)
    np.testing.assert_allclose(out['tau_ext'][-1], J[:3].T @ force, atol=1e-10)


@pytest.fixture(scope='module')
def mujoco_calibration():
    truth = rd.attach_payload(MODEL, LINK, 1.5, [0.01, -0.02, 0.08], np.diag([4e-3, 5e-3, 3e-3]))
    pl = MujocoPlant(truth, EXCITE, nominal=MODEL, damping=FV, frictionloss=FC,
                     noise_position=1e-5, noise_velocity=2e-3, noise_effort=0.05, seed=3)
    out = pl.run(6.0)
    return calibrate(MODEL, Samples(out['t'], out['q'], out['v'], out['tau']), LINK)


def test_calibration_on_mujoco_recovers_payload_and_friction(mujoco_calibration):
    cal = mujoco_calibration
    # measured 2026-12-01 over noise seeds 1-5 (the test's is 3), joints at rest left out of
    # the fit: mass 0.045-0.080 % light, CoM 0.20-0.45 mm; asserted at 3x.  Friction 8-11 %
    # off (the smooth law against MuJoCo's sticking friction; 19-22 % with the joints at rest
    # in the fit) and residual rms after/before 0.236-0.245: kept at their 30 % limits
    np.testing.assert_allclose(cal.payload_mass, 1.5, rtol=2.4e-3)
    assert np.linalg.norm(cal.payload_com - [0.01, -0.02, 0.08]) < 1.4e-3
    np.testing.assert_allclose(cal.friction_viscous, FV, rtol=0.3)
    np.testing.assert_allclose(cal.friction_coulomb, FC, rtol=0.3)
    assert np.all(cal.after['rms'] < 0.3 * cal.before['rms'])


def test_calibrated_thresholds_hold_on_other_mujoco_motion(mujoco_calibration):
    cal = mujoco_calibration
    truth = rd.attach_payload(MODEL, LINK, 1.5, [0.01, -0.02, 0.08], np.diag([4e-3, 5e-3, 3e-3]))
    other = SineTrajectory(home_pose(MODEL)[0], np.array([0.3, 0.25, 0.4, 0.3, 0.5, 0.4, 0.6]),
                           0.11 + 0.03 * np.arange(7))
    out = MujocoPlant(truth, other, nominal=MODEL, damping=FV, frictionloss=FC,
                      noise_position=1e-5, noise_velocity=2e-3, noise_effort=0.05,
                      seed=11).run(6.0)
    s = Samples(out['t'], out['q'], out['v'], out['tau'])
    nominal = observer_residuals(MODEL, s, 50.0, threshold=cal.thresholds)
    calibrated = observer_residuals(cal.model(MODEL), s, 50.0, cal.friction_viscous,
                                    cal.friction_coulomb, threshold=cal.thresholds)
    assert nominal['contact'].any()          # the uncalibrated model looks like contact
    assert not calibrated['contact'].any()
