"""The contact frames' state (estimation/contact_state.py): the fast residual against a second
momentum observer, the touch-down and lift-off rules on constructed inputs, the residual's
memory of a lifted foot against the observer's filter, and the state of trotting robots in
MuJoCo (a controller that is not the project's) judged on MuJoCo's truth."""
import dataclasses

import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics import ContactForceEstimator
from ros_dynamics.estimation.contact_forces import ObserverUpdate
from ros_dynamics.estimation.contact_state import (CONFIRM, FrameContactState, ContactStateOptions,
                                                   fast_residual)
from ros_dynamics.simulation.contact_force_runs import (PUSHED_TROT, Trot, metrics, run,
                                                        state_metrics)
from ros_dynamics.simulation.legged_metrics import observer_filtered
from ros_dynamics.simulation.legged_robots import robot_urdf
from ros_dynamics.simulation.mujoco_quadruped import FEET, REALISTIC_ODOMETRY, PlantOptions
from ros_dynamics.simulation.rigid_simulator import trotting_quadruped
from test_contact_forces import quadruped, standing_q  # noqa: F401  (the fixture)

pytestmark = pytest.mark.core


def test_fast_residual_is_the_residual_of_a_faster_observer(quadruped):
    """(1)-(2) on the residuals of an observer of gain K = 50 give, sample by sample, the
    residual of a second observer of gain 400 on the same samples (a trot on the rigid-contact
    simulator, irregular periods): the two observers share nothing but their input."""
    model = quadruped
    sim = trotting_quadruped(model, rd.bundled_urdf('quadruped'))
    slow = rd.MomentumObserver(model, gain=50.0)
    fast = rd.MomentumObserver(model, gain=400.0)
    rho, r_prev = np.zeros(model.nv), np.zeros(model.nv)
    gains = np.full(model.nv, 50.0)
    rng = np.random.default_rng(0)
    t_last, worst, peak = None, 0.0, 0.0
    for k in range(1200):
        s = sim.step()
        if k % 3 and rng.random() < 0.5:                 # irregular periods
            continue
        dt = 0.0 if t_last is None else s.t - t_last
        t_last = s.t
        if dt == 0.0:
            slow.reset(s.q, s.v, s.tau)
            fast.reset(s.q, s.v, s.tau)
            continue
        r = slow.update(s.q, s.v, s.tau, dt)
        fast_residual(r, r_prev, gains, dt, 400.0, rho, False)
        ref = fast.update(s.q, s.v, s.tau, dt)
        worst = max(worst, np.abs(rho - ref).max())
        peak = max(peak, np.abs(ref).max())
    assert peak > 10.0                                   # the feet's forces went through
    assert worst < 1e-9 * peak


def test_the_node_parameters_default_to_the_contact_states_settings():
    """The node's parameters contact_fast_gain, contact_touchdown_height and contact_lift_speed
    default to ContactStateOptions' (the figures of docs/contact_forces.md are measured with
    those), and the observer's settings bring them to the contact state's Model by name."""
    from ros_dynamics.estimation.cycle_state import ObserverSettings
    from ros_dynamics.ros.dynamics_node.parameters import PARAMETERS
    p = {p.name: p.default for p in PARAMETERS}
    o = ContactStateOptions()
    assert (p['contact_fast_gain'], p['contact_touchdown_height'],
            p['contact_lift_speed']) == (o.fast_gain, o.touchdown_height, o.lift_speed)
    model = rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)
    settings = ObserverSettings(
        model, 30.0, release_ratio=0.4, contact_frames=FEET, contact_force_threshold=6.0,
        contact_state=dataclasses.replace(o, lift_speed=0.2, touchdown_height=0.02))
    m = settings.contact_forces(model).contact_state.model
    assert (m.fast_gain, m.touchdown_height, m.lift_speed) == (o.fast_gain, 0.02, 0.2)
    assert (m.threshold, m.release, m.confirm) == (6.0, 0.4 * 6.0, CONFIRM)
    assert np.all(m.gain == 30.0)


def _frames(model, q):
    est = ContactForceEstimator(model, FEET, threshold=8.0)
    return est.jacobians(q)


def test_touch_down_and_lift_off_rules(quadruped):
    """(3) and (4) on constructed inputs: a low foot touches down on the fast force alone, a
    high one needs the filtered force too and not while rising; a lift-off on the fast force
    waits T_c, on the velocity it needs the foot back up to where it touched down."""
    model = quadruped
    q = standing_q(model)
    A, positions = _frames(model, q)
    positions = positions.copy()
    floor = positions[:, 2].min()
    positions[:, 2] = floor
    cs = FrameContactState(np.full(model.nv, 50.0), (0.0, 0.0, 1.0), 4, (8.0, 4.0),
                      ContactStateOptions(fast_gain=400.0, touchdown_height=0.015,
                                          lift_speed=0.3))
    v = np.zeros(model.nv)
    dt = 1e-3

    def forces(*fz):                                     # the fast forces (k d), normal fz
        f = np.zeros((4, 3))
        f[:, 0], f[:, 2] = 3.0, fz                       # (a tangential part: not counted)
        return f.ravel()

    def update(fz, slow, p=positions, vel=v):
        return cs.update(forces(*fz), np.asarray(slow, dtype=float), A, p, 3, vel, dt)
    loaded, none = [20.0] * 4, [0.0] * 4
    assert update(loaded, none).all()                    # the lowest frame: the ground
    # foot 0 high (3 cm): the fast force alone is no touch-down, with the filtered one it is
    cs.reset()
    update([0.0, 20, 20, 20], loaded)
    high = positions.copy()
    high[0, 2] += 0.03
    assert not update(loaded, [0.0, 20, 20, 20], high)[0]
    assert update(loaded, loaded, high)[0]
    # foot 1 released by its fast force only after T_c below the release level
    steps = 0
    while update([20.0, 1.0, 20, 20], loaded)[1]:
        steps += 1
    assert steps == int(round(CONFIRM / dt)) - 1
    # rising faster than v_l: no touch-down however loaded; sunk below its touch-down height,
    # a rising foot carrying little is not released, back up there it is
    up = np.zeros(model.nv)
    up[2] = 0.5                                          # the base rising at 0.5 m/s
    assert not update(loaded, loaded, vel=up)[1]
    assert update(loaded, loaded)[1]
    sunk = positions.copy()
    sunk[:, 2] -= 0.01
    light = [20.0, 5.0, 20, 20]
    assert update(light, loaded, sunk, up)[1]
    assert not update(light, loaded, vel=up)[1]


def test_a_lifted_foots_force_is_remembered_not_unexplained(quadruped):
    """A foot's force ends (a step to zero): the residual holds it for a while, decaying as the
    observer forgets it.  The estimate releases the foot within a few ms, publishes its force
    through the observer's exact K/(s+K) (legged_metrics.observer_filtered, an independent
    implementation) and leaves nothing of it in the unexplained part."""
    model = quadruped
    q = standing_q(model)
    est = ContactForceEstimator(model, FEET, threshold=8.0, gain=50.0)
    A, _ = est.jacobians(q)
    dt, n, off = 1e-3, 200, 50
    f = np.tile([1.0, -2.0, 20.0], (n, 4, 1))
    f[off:, 0] = 0.0                                     # LF's force ends at sample 50
    F = observer_filtered(f, 50.0, dt)
    tau = np.zeros(model.nv)
    v = np.zeros(model.nv)
    released, worst_u, worst_f = None, 0.0, 0.0
    for k in range(1, n):
        r = A @ F[k].reshape(-1)
        out = est.update(q, r, ObserverUpdate(v=v, tau=tau, dt=dt, bridge=False))
        if k == off - 1:
            assert out.in_contact.all()
        if k >= off and released is None and not out.in_contact[0]:
            released = k
        if k > off:
            worst_u = max(worst_u, np.abs(out.unexplained).max())
            worst_f = max(worst_f, np.abs(out.wrenches[0, :3] - F[k, 0]).max())
    assert released is not None and off < released <= off + 3 + int(round(CONFIRM / dt))
    assert worst_u < 1e-6 * np.abs(F).max()
    assert worst_f < 1e-6 * np.abs(F).max()
    assert out.in_contact[1:].all()


def _q(x):
    return np.median(x), np.percentile(x, 90)


@pytest.mark.parametrize('robot, gait, plant', [
    ('solo12_trot', 'sine', None), ('quadruped_trot', 'smooth',
                                    PlantOptions(link_error=0.25, seed=2))])
def test_trotting_contact_state_on_mujocos_truth(robot, gait, plant):
    """MuJoCo's Solo12 (sine gait, the URDF's plant) and the bundled quadruped (smooth gait,
    every link off by 20-30 %) trotting in place under a controller that is not the project's,
    the realistic odometry (0.03 m/s, 10 ms late, 200 Hz): judged on MuJoCo's contacts, the
    node's contact state agrees in >= 95 % of the samples, touch-down is seen a median <= 10 ms
    (p90 <= 25 ms) and lift-off a median within 15 ms of the truth, no touch-down while a foot
    is 1 cm above the floor.  The filter's state (fast gain 0, no kinematics: the node before)
    on the same run sees lift-off 22-44 ms late (ln(F/F_r)/K): the test fails if the node falls
    back to it.  Measured (benchmarks/results/contact_state.md, draws 1-3, worst): Solo12
    98.20 %, touch-down 2 ms (p90 2 ms), lift-off 5 ms; the quadruped 97.61 %, 3 ms (p90 5 ms),
    -2 to 0 ms; the filter 87.64 % (lift-off 40 ms) and 90.29 % (22-27 ms).  Bounds: 3x the
    worst delays (9 ms, 15 ms, 15 ms; tighter than the requirement's 10, 25, 15 ms), the
    requirement's 95 % (tighter than 3x the worst miss, 2.39 %), 0 false touch-downs."""
    trot = Trot(profile=gait, lift=0.4 if gait == 'sine' else 0.5)
    sensing = dataclasses.replace(REALISTIC_ODOMETRY, seed=2)
    m = state_metrics(run(robot, trot=trot, sensing=sensing, plant_options=plant))
    td, lo = _q(m['touchdown_delay']), _q(np.abs(m['liftoff_delay']))
    assert m['state_accuracy'] >= 0.95
    assert td[0] <= 0.009 and td[1] <= 0.015
    assert abs(np.median(m['liftoff_delay'])) <= 0.015
    assert m['false_touchdowns'] == 0 and m['highest_touchdown'] < 0.01
    assert m['touchdowns'] <= m['true_touchdowns'] + 4     # no chatter
    filt = ContactStateOptions(fast_gain=0.0, touchdown_height=0.0, lift_speed=0.0)
    model = rd.load_urdf(robot_urdf(robot[:-len('_trot')])[0], floating_base=True)
    f = state_metrics(run(robot, trot=trot, sensing=sensing, plant_options=plant,
                          estimator=(model, dict(contact_state=filt))))
    assert np.median(f['liftoff_delay']) > 0.02           # the filter's bound: ln(F/F_r)/K
    assert lo[0] < 0.4 * np.median(f['liftoff_delay'])
    assert m['state_accuracy'] > f['state_accuracy'] + 0.05


def test_push_found_while_trotting():
    """A lateral push of 20 % of the weight on Solo12's trotting trunk, the realistic odometry:
    the unexplained part's change (its mean over the push against its mean over the 0.5 s
    before) is the push's generalized force through K/(s+K) within 11.1 %, the foot forces stay
    within 5.4 % of the weight (measured, benchmarks/results/contact_state.md, draws 1-3:
    3.6-3.7 %, 1.78-1.80 %; bounds 3x the worst, tighter than the requirement's 25 %)."""
    m = metrics(run('solo12_trot', trot=PUSHED_TROT,
                    sensing=dataclasses.replace(REALISTIC_ODOMETRY, seed=2)))
    assert m['push_mean_change_error'] < 0.111
    assert max(m['rms_per_foot']) < 0.054
