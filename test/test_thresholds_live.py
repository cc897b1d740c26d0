"""Thresholds that hold live, on an independent plant that is not the model: MuJoCo's arm7 with
every link 20-30 % off, rotor inertia, dry friction growing with the load, viscous friction,
torque offsets, torques through torque constants 1-3 % off, current-like noise, and a 1 kHz
controller with jittered periods (benchmarks/thresholds_mujoco.py measures the same on more
plants and at 100 Hz).

``calibrate --links all`` (identify_recording, default options) on excitation motion; then
*other* motion (another trajectory and noise seed) through the node's cycle with what it wrote
(calibrate check): no false contact in free motion; two known contacts each detected and
isolated, the residual near MuJoCo's external joint torque; a payload against a no-load
recording with the default options.  Tolerances are stated at each assertion against the worst
value measured (benchmarks/results/thresholds_mujoco.md and runs of this test)."""
import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics.control.trajectories import SineTrajectory
from ros_dynamics.identification.check import check_recording, contact_stretches
from ros_dynamics.identification.samples import Samples
from ros_dynamics.identification.whole_model import identify_recording, payload_against_reference
from ros_dynamics.simulation import home_pose
from ros_dynamics.simulation.mujoco_plant import MujocoPlant, perturbed_model

pytestmark = pytest.mark.core

MODEL = rd.load_urdf(rd.bundled_urdf('arm7'))
TRUTH = perturbed_model(MODEL, spread=(0.2, 0.3), seed=2)
SCALE = np.array([1.02, 0.98, 1.03, 0.99, 1.01, 0.97, 1.02])
K = 50.0
HOME = home_pose(MODEL)[0]
EXCITE = SineTrajectory(HOME, np.array([0.5, 0.4, 0.5, 0.4, 0.8, 0.6, 1.0]),
                        0.15 + 0.05 * np.arange(7))
OTHER = SineTrajectory(HOME + 0.1, np.array([0.3, 0.25, 0.4, 0.3, 0.5, 0.4, 0.6]),
                       0.11 + 0.03 * np.arange(7))
PUSHES = [('arm_link_7', np.array([0.05, 0.0, 0.05]), np.array([18.0, -15.0, -18.0]), 2.0, 4.0),
          ('arm_link_4', np.array([0.1, 0.0, 0.1]), np.array([0.0, 28.0, 28.0]), 6.0, 8.0)]
TOOL = (2.8, np.array([0.0, 0.01, 0.06]), np.diag([5e-3, 5e-3, 3e-3]))


def test_thresholds_cover_the_recording_its_extremes_and_dry_friction():
    """Three joints of 60 s of residual with Gaussian noise: each threshold is at least 2 x the
    largest |r|; the Gumbel level of a 10 h target is on the safe side of the exact one and
    near it (the level crossed once per 10 h by 0.25 s blocks of 250 independent samples,
    5.55 sigma; the Gumbel fit of 240 block maxima extrapolates a Gaussian's light tail
    heavier: 6.6 sigma here; 2 x the 60 s maximum, ~8.5 sigma, stays the larger); a joint
    whose Coulomb friction is above both gets that, and the report says which set it."""
    from ros_dynamics.identification.thresholds import fit_thresholds, return_level
    from scipy.stats import norm
    rng = np.random.default_rng(0)
    t = np.arange(60000) * 1e-3
    r = rng.standard_normal((t.size, 3)) * [0.1, 0.2, 0.05]
    th = fit_thresholds(t, r, margin=2.0, floor=0.01, coulomb=[0.0, 0.0, 1.0])
    top = np.max(np.abs(r), axis=0)
    assert th.base[0] == pytest.approx(2.0 * top[0]) and th.base[1] == pytest.approx(2 * top[1])
    assert th.base[2] == 1.0 and list(th.coulomb) == [False, False, True]
    z = return_level(t, np.abs(r[:, 0]) / 0.1)
    p_block = 0.25 / 36000.0                       # one block in 10 h
    exact = norm.isf(0.5 * (1 - (1 - p_block) ** (1 / 250)))
    assert exact <= z < 1.25 * exact, (z, exact)
    assert set(th.parameters()) == {'contact_threshold'}


def test_a_stretch_is_contact_only_with_evidence():
    """Two stretches stand far out of a residual: a 0.3 s one on one joint at a velocity
    reversal (friction-like) is kept; a 0.3 s one on two joints at once, far beyond what the
    rest leaves at that state, is called contact, with its time, duration and joints."""
    rng = np.random.default_rng(1)
    t = np.arange(10000) * 1e-3
    v = np.column_stack([np.cos(t), np.sin(t), np.cos(2 * t)])
    tau = np.ones_like(v)
    r = 0.02 * rng.standard_normal(v.shape)
    r[3000:3300, 0] += 0.5                        # one joint
    r[7000:7300, 1:] += 0.5                       # two joints: a force on a link
    mask, found = contact_stretches(t, r, v, tau, ['a', 'b', 'c'])
    assert [s['contact'] for s in found] == [False, True], found
    assert mask[7000:7300].all() and not mask[3000:3300].any() and mask.sum() < 600
    c = found[1]
    assert c['joints'] == ['b', 'c'] and 6.9 <= c['start'] <= 7.0 and c['duration'] >= 0.25


def run(truth, trajectory, seed, duration, pushes=()):
    plant = MujocoPlant(truth, trajectory, nominal=MODEL, dt=5e-4,
                        armature=[0.3, 0.3, 0.1, 0.1, 0.03, 0.03, 0.01],
                        damping=[0.8, 0.8, 0.5, 0.5, 0.2, 0.2, 0.1],
                        frictionloss=[1.0, 1.0, 0.6, 0.6, 0.3, 0.3, 0.2], load_friction=0.03,
                        torque_offset=[0.5, -0.4, 0.3, 0.2, -0.1, 0.05, 0.02],
                        torque_scale=SCALE, noise_position=1e-5, noise_velocity=2e-3,
                        noise_effort=0.05, noise_effort_relative=0.01, rate=1000.0, jitter=0.5,
                        seed=seed, pushes=pushes)
    out = plant.run(duration)
    return out, Samples(out['t'], out['q'], out['v'], out['tau'])


@pytest.fixture(scope='module')
def identified():
    _, s = run(TRUTH, EXCITE, 3, 25.0)
    return s, identify_recording(MODEL, s, gain=K)


def _check(ident, s):
    return check_recording(ident.model(MODEL), s, K, ident.friction_viscous,
                           ident.friction_coulomb, torque_offset=ident.torque_offset,
                           **ident.contact_thresholds.settings())


def test_the_plant_is_not_the_model():
    """What the test stands on: the jittered periods and the plant's effects are there."""
    out, s = run(TRUTH, OTHER, 1, 0.5)
    dt = np.diff(s.t)
    assert dt.min() == pytest.approx(5e-4) and dt.max() == pytest.approx(1.5e-3)
    assert abs(TRUTH.mass[1] / MODEL.mass[1] - 1) >= 0.2


def test_no_false_contact_on_other_motion_and_the_report_says_held_out(identified):
    s, ident = identified
    assert ident.held.check is not None and 'held-out' in ident.held.check.label
    assert ident.held.check.onsets == 0
    _, free = run(TRUTH, OTHER, 11, 12.0)
    ck = _check(ident, free)
    assert ck.onsets == 0 and ck.contact_time == 0.0, ck.summary()
    # not bought with thresholds so wide that contacts go unseen: the largest threshold stays
    # below what the contacts below put on the joints (8-12 N m on the shoulder and elbow)
    assert np.all(ck.detectable < 5.0), ck.detectable     # measured at most 3.95 N m


def test_both_contacts_detected_isolated_and_estimated(identified):
    _, ident = identified
    out, s = run(TRUTH, OTHER, 5, 9.5, PUSHES)
    ck = _check(ident, s)
    t = out['t']
    busy = np.zeros(len(t), dtype=bool)
    for link, _, _, a, b in PUSHES:
        inside = (t >= a) & (t < b)
        busy |= (t >= a) & (t < b + 0.5)
        assert ck.contact[inside].any(), link
        win = (t >= a + 5.0 / K) & (t < b)       # the residual settled (99 % of a step)
        named = np.array(ck.link, dtype=object)[win]
        assert ck.contact[win].all(), link
        # isolated to its link once settled, wherever the contact's torque on the link's own
        # joint is well above that joint's threshold (judged on MuJoCo's torque; where the
        # force's line passes near the joint's axis a more proximal link is named, the
        # detector's stated limitation)
        j = MODEL.joint_names.index(link.replace('link', 'joint'))
        own = np.abs(out['tau_ext'][win, j]) > 1.5 * ck.threshold[win, j]
        assert own.sum() > 200 and np.mean(named[own] == link) >= 0.95, (link, set(named))
        #                                                      (measured 1.0 on both)
        ref = np.mean(out['tau_ext'][win], axis=0)
        err = np.linalg.norm(np.mean(ck.r[win], axis=0) - ref) / np.linalg.norm(ref)
        assert err < 0.05, (link, err)    # the target; measured 3.9 % and 4.7 %
    assert not ck.contact[~busy].any(), ck.summary()


def test_payload_against_a_no_load_recording_with_default_options(identified):
    s, _ = identified
    _, withp = run(rd.attach_payload(TRUTH, 'arm_link_7', *TOOL), EXCITE, 4, 25.0)
    robot, cal = payload_against_reference(MODEL, withp, s, 'arm_link_7', gain=K)
    # measured -0.78 % and 1.7 mm on this plant (2026-11-28); asserted ~3x: 2.5 % and 5 mm
    assert cal.payload_mass == pytest.approx(TOOL[0], rel=0.025)
    assert np.linalg.norm(cal.payload_com - TOOL[1]) < 0.005
    # standard errors that cover the error (benchmarks/results/payload_se_mujoco.md on more
    # plants): measured |error| / SE 1.22 (mass), 2.13 / 0.40 / 0.62 (CoM x, y, z), asserted 3;
    # not by being wide: SE 0.034 kg, CoM 0.26 / 0.40 / 2.7 mm, asserted below 3x that
    com_z = np.abs(cal.payload_com - TOOL[1]) / cal.payload_com_se
    assert abs(cal.payload_mass - TOOL[0]) < 3 * cal.payload_mass_se, cal.summary()
    assert np.all(com_z < 3.0), (com_z, cal.summary())
    assert cal.payload_mass_se < 0.1 and np.all(cal.payload_com_se < [0.8e-3, 1.2e-3, 8e-3])
    # the estimator before (noise and jackknife only, constant Coulomb friction, the robot
    # identified with it too) did not
    _, old = payload_against_reference(MODEL, withp, s, 'arm_link_7', gain=K,
                                       torque_scale_error=0.0, load_friction=False)
    # (measured |error| / SE 4.6 on the CoM's x)
    assert np.max(np.abs(old.payload_com - TOOL[1]) / old.payload_com_se) > 3.0
