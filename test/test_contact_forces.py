"""Forces at the contact frames from the momentum residual (estimation/contact_forces.py):
exact on synthetic residuals, then against the foot forces of the project's rigid-contact
quadruped and of MuJoCo (an independent engine), each filtered by the observer's exact K/(s+K)."""
import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics import ContactForceEstimator
from ros_dynamics.estimation.cycle_state import CycleState, ObserverSettings
from ros_dynamics.simulation.contact_force_runs import metrics, run
from ros_dynamics.simulation.mujoco_quadruped import FEET, SensingOptions, ShiftLiftPush

pytestmark = pytest.mark.core


@pytest.fixture(scope='module')
def quadruped():
    return rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)


def standing_q(model):
    """A standing configuration of the floating quadruped (shared with test_contact_state)."""
    q = model.neutral()
    q[7:] = [{'HAA': 0.1, 'HFE': 0.7, 'KFE': -1.4}[n.split('_')[1]] for n in model.joint_names]
    q[2] = 0.3
    return q


def test_recovers_forces_that_make_the_residual(quadruped):
    model = quadruped
    q = standing_q(model)
    f = np.array([[1.0, -2.0, 20.0], [0.5, 0.5, 18.0], [-3.0, 1.0, 25.0], [0.0, 0.0, 0.0]])
    push = np.zeros(model.nv)
    push[:3] = [4.0, -2.0, 0.0]                            # a force on the trunk origin
    r = sum(rd.link_jacobian(model, q, foot)[:3].T @ fi for foot, fi in zip(FEET, f)) + push
    est = ContactForceEstimator(model, FEET, threshold=5.0)
    out = est.update(q, r)
    assert out.in_contact.tolist() == [True, True, True, False]
    np.testing.assert_allclose(out.wrenches[:, :3], f, atol=1e-4)
    np.testing.assert_allclose(out.wrenches[:, 3:], 0.0)
    np.testing.assert_allclose(out.unexplained, push, atol=1e-3)    # the push, whole
    # a pulling foot is not a contact: the unilateral constraint gives it no force and the
    # residual it would explain stays unexplained
    r2 = r + rd.link_jacobian(model, q, 'RH_foot')[:3].T @ np.array([0.0, 0.0, -15.0])
    out2 = est.update(q, r2)
    assert -1e-6 <= out2.normal_forces[3] < 2.5      # never pulls; below the release level
    assert not out2.in_contact[3]
    np.testing.assert_array_equal(out2.wrenches[3], 0.0)
    J_rh = rd.link_jacobian(model, q, 'RH_foot')[:3].T
    np.testing.assert_allclose(out2.unexplained, push + J_rh @ [0.0, 0.0, -15.0], atol=1e-2)
    # the published wrenches and the unexplained part add up to the residual
    explained = sum(rd.link_jacobian(model, q, ft).T @ w for ft, w in zip(FEET, out2.wrenches))
    np.testing.assert_allclose(explained + out2.unexplained, r2, atol=1e-9)
    # hysteresis: in contact above the threshold, released only below release_ratio of it
    for fz, expect in ((6.0, True), (3.0, True), (2.4, False), (4.0, False)):
        ff = f.copy()
        ff[0, 2] = fz
        ff[0, :2] = 0.0
        r3 = sum(rd.link_jacobian(model, q, ft)[:3].T @ fi for ft, fi in zip(FEET, ff))
        assert est.update(q, r3).in_contact[0] == expect, fz


def test_friction_cone_bounds_the_tangential_force(quadruped):
    model = quadruped
    q = standing_q(model)
    est = ContactForceEstimator(model, ['LF_foot'], friction=0.5, threshold=1.0)
    f = np.array([20.0, 0.0, 10.0])                        # outside the cone mu = 0.5
    r = rd.link_jacobian(model, q, 'LF_foot')[:3].T @ f
    w = est.update(q, r).wrenches[0, :3]
    assert abs(w[0]) <= 0.5 * w[2] + 1e-6 and abs(w[1]) <= 0.5 * w[2] + 1e-6
    wr = ContactForceEstimator(model, ['LF_foot'], frame_model='wrench', threshold=1.0)
    W = np.array([1.0, 2.0, 30.0, 0.3, -0.2, 0.1])
    out = wr.update(q, rd.link_jacobian(model, q, 'LF_foot').T @ W)
    np.testing.assert_allclose(out.wrenches[0], W, atol=1e-4)


def test_fresh_estimators_repeat_to_the_bit(quadruped):
    """A closed loop grows the last bit of a force into a different walk: a hundred fresh
    estimators, each kept so that the next one's memory lies elsewhere, give the same forces
    to the bit on a residual that needs the QP (measured: ProxQP's primal-dual backend gave
    two answers 1e-14 apart on this residual; a fresh solver started warm from memory no solve
    had written)."""
    model = quadruped
    q = standing_q(model)
    f = np.array([[30.0, -2.0, 20.0], [0.5, 0.5, 18.0], [-3.0, 1.0, 25.0], [0.0, 0.0, -15.0]])
    r = sum(rd.link_jacobian(model, q, foot)[:3].T @ fi for foot, fi in zip(FEET, f))
    answers, kept = set(), []
    for i in range(100):
        kept.append(bytearray(8 * (i % 13) + 1))
        kept.append(ContactForceEstimator(model, FEET, threshold=5.0))
        answers.add(kept[-1].update(q, r).wrenches.tobytes())
        assert kept[-1].status == 'PROXQP_SOLVED'     # the first foot is outside the cone
    assert len(answers) == 1


@pytest.mark.parametrize('scale', [1.0, 1e4, 1e8])
def test_a_diverged_residual_is_solved_in_bounded_iterations(quadruped, scale):
    """(2) is homogeneous in r (its constraints are cones): a residual ``scale`` times larger,
    as a fallen robot's observer gives (10⁷ was seen over DDS), with the threshold as much
    larger, has the forces ``scale`` times larger, found in a few ProxQP iterations (an
    absolute tolerance took 10⁴-10⁶ iterations, seconds, at 10⁸)."""
    model = quadruped
    q = standing_q(model)
    f = np.array([[30.0, -2.0, 20.0], [0.5, 0.5, 18.0], [-3.0, 1.0, 25.0], [0.0, 0.0, -15.0]])
    r = sum(rd.link_jacobian(model, q, foot)[:3].T @ fi for foot, fi in zip(FEET, f))
    base = ContactForceEstimator(model, FEET, threshold=5.0).update(q, r)
    est = ContactForceEstimator(model, FEET, threshold=5.0 * scale)
    out = est.update(q, scale * r)
    assert est.status == 'PROXQP_SOLVED'      # the first foot is outside the cone
    assert est.iterations <= 40
    np.testing.assert_allclose(out.wrenches / scale, base.wrenches, rtol=1e-6, atol=1e-6)
    assert out.in_contact.tolist() == base.in_contact.tolist() == [True, True, True, False]


@pytest.mark.parametrize('kwargs, match', [
    (dict(frames=['nope']), 'nope'), (dict(frames=[]), 'empty'),
    (dict(frames=FEET, frame_model='plane'), 'contact_frame_model'),
    (dict(frames=FEET, normal=(0, 0, 0)), 'non-zero'),
    (dict(frames=FEET, threshold=-1.0), 'threshold')])
def test_bad_settings_are_refused(quadruped, kwargs, match):
    with pytest.raises(ValueError, match=match):
        ContactForceEstimator(quadruped, **kwargs)
    if not kwargs['frames']:
        assert ObserverSettings(quadruped, contact_frames=()).contact_forces(quadruped) is None
        return
    with pytest.raises(ValueError, match=match):
        ObserverSettings(quadruped, contact_frames=kwargs.pop('frames'),
                         **{'contact_' + ('frame_model' if k == 'frame_model' else
                                          'force_threshold' if k == 'threshold' else k): v
                            for k, v in kwargs.items()})


def test_standing_on_rigid_feet_is_not_a_contact(quadruped):
    out = run('standing', duration=1.5)
    m = metrics(out)
    # measured 2026-11-28 (no random input: the same every run): rms 0.317 % of the weight,
    # the four feet's sum 1.5e-5 off the weight; asserted at 3x
    assert max(m['rms_per_foot']) < 0.0095
    assert m['state_accuracy'] == 1.0
    late = out['t'] > 0.3
    assert not out['detected'][late].any()                # the weight is the feet's, no contact
    np.testing.assert_allclose(out['estimate'][-1, :, 2].sum(), out['weight'], rtol=4.5e-5)


def test_trot_on_rigid_feet():
    m = metrics(run('trot', duration=2.5, gain=200.0))
    # measured 2026-11-28 (deterministic): rms 0.811 %, state 98.74 % right (1.26 % wrong),
    # lift-off delay 6 ms; asserted at 3x
    assert max(m['rms_per_foot']) < 0.024
    assert m['state_accuracy'] >= 1 - 3 * 0.0126
    assert m['liftoff_delay'] and max(m['liftoff_delay']) < 0.018


def test_mujoco_shift_lift_push():
    """MuJoCo at 1 kHz, exact sensing, a 25 % lateral push: judged on MuJoCo's truth, every
    foot within 1.7 % of the weight of the filtered engine force at every sample, the state
    right (against MuJoCo's contacts) in >= 99.3 % of the samples, the push in the unexplained
    part within 15 % and reported by the detector, standing not reported.  Measured
    (benchmarks/results/contact_forces.md, deterministic): 0.56 %, 99.78 %, 8.12 %; the bounds
    are 3x those (the push's: the requirement, 15 %, tighter than 3x)."""
    out = run('mujoco', push=ShiftLiftPush.LATERAL_PUSH)
    m = metrics(out)
    assert max(m['rms_per_foot']) < 0.017
    assert m['state_accuracy'] >= 0.993
    assert m['push_relative_error'] < 0.15
    t = out['t']
    assert not out['detected'][(t > 0.5) & (t < 1.0)].any()
    assert out['detected'][(t > 5.2) & (t < 6.0)].mean() > 0.95
    lift = (t > 2.8) & (t < 3.0)
    assert not out['in_contact'][lift, 0].any()           # LF lifted, seen as such
    assert out['touching'][lift].tolist() == [[False, True, True, True]] * lift.sum()


def test_odometry_noise_enters_the_unexplained_base_rows_in_proportion():
    """White noise sigma on the base twist: the foot forces hardly move (the legs' joint rows
    determine them), the unexplained base rows grow in proportion to sigma (the observer's
    noise law, about K m sigma): doubling sigma doubles their rms."""
    rms = {}
    for sigma in (0.01, 0.02):
        out = run('standing', duration=1.0, odom_twist_noise=0.0, sensing=SensingOptions(
            odom_linear_noise=sigma, odom_angular_noise=sigma, seed=1))
        late = out['t'] > 0.3
        # seeds 1-5 measured 2026-11-28: foot rms 0.361-0.489 % of the weight; ratio of the
        # base rows' rms 1.99941-1.99982; rms / (K m sigma) 0.902-0.969; asserted at 3x
        assert max(metrics(out)['rms_per_foot']) < 0.0145
        rms[sigma] = np.sqrt((out['unexplained'][late, :3] ** 2).mean())
    assert rms[0.02] / rms[0.01] == pytest.approx(2.0, rel=9e-4)
    assert rms[0.01] == pytest.approx(50.0 * 8.332 * 0.01, rel=0.3)     # K m sigma


def test_non_finite_residual_is_refused(quadruped):
    est = ContactForceEstimator(quadruped, FEET)
    r = np.zeros(quadruped.nv)
    r[7] = np.nan
    with pytest.raises(ValueError, match='NaN or inf'):
        est.update(standing_q(quadruped), r)
