"""The trot's pieces without a plant (ros_dynamics.control: swing, foothold, touchdown, trot,
cadence), each against what it must satisfy, computed here independently:

* the swing reference: its velocity and acceleration are the finite differences of its
  position, it starts at rest at its first end point and ends at the second at rest or, with a
  landing speed, moving straight down at that speed; its apex is the step height;
* the foothold: Raibert's neutral point and the capture-point feedback (Bledt et al. 2018,
  eqs. 7-9) written out here for a trunk moving straight and turning, the reach limit;
* the touch-down rules: an estimate's contact taken only from ``arm`` of the swing and only once
  it saw the foot off; a touch-down not seen makes the foot probe with a known force for at most
  ``reach_time``; a stance foot reported off is lost after ``debounce``; no estimate: the plan;
* the gait: diagonal pairs from the feet's layout (whatever their order), refused layouts, the
  phases (four feet, a pair up, four feet while the other pair unloads), the QP's stance set
  and force bounds following them, the CoM reference moving at the commanded velocity;
* the periods a controller owes (control/cadence.py) for a stream faster than its rate."""
import math
from dataclasses import replace

import numpy as np
import pytest

from ros_dynamics.control.cadence import ControlPeriods
from ros_dynamics.control.foothold import Foothold
from ros_dynamics.control.swing import swing_reference
from ros_dynamics.control.touchdown import FootState
from ros_dynamics.control.trot import TrotGait, TrotSettings, diagonal_pairs
from ros_dynamics.control.wbc import StreamState

pytestmark = pytest.mark.core

FEET = ['FL', 'FR', 'HL', 'HR']
OFFSETS = np.array([[0.19, 0.15], [0.19, -0.15], [-0.19, 0.15], [-0.19, -0.15]])
H, G = 0.24, 9.81


@pytest.mark.parametrize('landing', [0.0, 0.9])
def test_swing_reference_derivatives_ends_and_apex(landing):
    p0, p1, h, T = np.array([0.1, 0.2, 0.0]), np.array([0.18, 0.15, -0.004]), 0.05, 0.16
    f = lambda t: swing_reference(p0, p1, h, t / T, T, landing)  # noqa: E731
    e = 1e-6
    for t in np.linspace(0.01, 0.15, 9):
        p, pd, pdd = f(t)
        np.testing.assert_allclose(pd, (f(t + e)[0] - f(t - e)[0]) / (2 * e), atol=1e-7)
        np.testing.assert_allclose(pdd, (f(t + e)[1] - f(t - e)[1]) / (2 * e), atol=1e-5)
    p, pd, pdd = f(0.0)
    np.testing.assert_allclose(p, p0, atol=1e-15)
    assert np.abs(pd).max() < 1e-12 and np.abs(pdd).max() < 1e-12
    p, pd, _ = f(T)
    np.testing.assert_allclose(p, p1, atol=1e-15)
    np.testing.assert_allclose(pd, [0.0, 0.0, -landing], atol=1e-12)
    # the apex: the bump's h at mid-swing, plus the landing term's v T / 16 there
    mid = f(T / 2)[0]
    np.testing.assert_allclose(mid, 0.5 * (p0 + p1) + [0, 0, h + landing * T / 16], atol=1e-12)


def test_foothold_is_raiberts_with_the_capture_point_feedback():
    T_st, reach = 0.2, 0.1
    fh = Foothold(H, T_st, reach)
    k = math.sqrt(H / G)
    com, nominal = np.array([1.0, 2.0, H]), (0.19, 0.15)
    # straight, at the commanded velocity: the hip where the trunk will be, plus v T_st / 2
    v = np.array([0.3, 0.0, 0.0])
    x, y = fh(nominal, com, 0.0, v, v[:2], 0.0, 0.05)
    np.testing.assert_allclose((x, y), (1.0 + 0.19 + 0.3 * 0.05 + 0.3 * T_st / 2, 2.15),
                               atol=1e-12)
    # slower than commanded: the foot lands behind the neutral point by k (v − v_cmd)
    x2, _ = fh(nominal, com, 0.0, np.array([0.2, 0.0]), (0.3, 0.0), 0.0, 0.05)
    np.testing.assert_allclose(x2 - x, k * (0.2 - 0.3), atol=1e-12)
    # turning in place, heading 90 deg: the nominal offset rotated by yaw + ω ahead
    psi, w, ahead = math.pi / 2, 0.6, 0.1
    x3, y3 = fh(nominal, com, psi, np.zeros(2), (0.0, 0.0), w, ahead)
    c, s = math.cos(psi + w * ahead), math.sin(psi + w * ahead)
    np.testing.assert_allclose((x3, y3), (1.0 + c * 0.19 - s * 0.15, 2.0 + s * 0.19 + c * 0.15),
                               atol=1e-12)
    # the centripetal term (h / 2g) v × ω, and the reach limit
    x4, y4 = fh((0.0, 0.0), np.zeros(3), 0.0, np.array([0.3, 0.0]), (0.3, 0.0), w, 0.0)
    np.testing.assert_allclose((x4, y4), (0.3 * T_st / 2, -H / (2 * G) * 0.3 * w), atol=1e-12)
    x5, y5 = fh((0.0, 0.0), np.zeros(3), 0.0, np.array([3.0, 0.0]), (0.0, 0.0), 0.0, 0.0)
    np.testing.assert_allclose(math.hypot(x5, y5), reach, atol=1e-12)


SETTINGS = TrotSettings.for_robot(H)


def _foot():
    foot = FootState(np.zeros(3))
    foot.lift(0.0, np.zeros(3))
    return foot


def _run(foot, contacts, dt=0.002, T=SETTINGS.swing, z=0.0):
    """Step a lifted foot through ``contacts`` (one per cycle); its modes."""
    modes = []
    for i, c in enumerate(contacts):
        t = (i + 1) * dt
        foot.update(t, t / T, np.array([0.0, 0.0, z]), c, SETTINGS)
        modes.append(foot.mode)
    return modes


def test_touchdown_rules():
    T = SETTINGS.swing
    n = math.ceil(T / 0.002)                    # the first cycle with s >= 1 is cycle n
    arm = math.ceil(SETTINGS.arm * T / 0.002) - 1   # ... with s >= arm: index arm
    # no estimate: the plan
    f = _foot()
    modes = _run(f, [None] * (n + 2))
    assert modes.index('stance') == n - 1 and f.touchdowns['planned'] == 1
    # an estimate still on from before the lift-off is not a touch-down; seen off, then on
    # after arm: early
    f = _foot()
    modes = _run(f, [True] * 10 + [False] * (arm - 10) + [True] * 5)
    assert 'stance' not in modes[:arm] and modes[arm] == 'stance' and f.touchdowns['early'] == 1
    # on before arm (seen off first): not yet
    f = _foot()
    modes = _run(f, [False] * 5 + [True] * (arm - 10))
    assert set(modes) == {'swing'}
    # never seen at the planned end: probe, then stance when seen ...
    f = _foot()
    modes = _run(f, [False] * (n + 10) + [True])
    assert modes[n - 1] == 'probe' and modes[-1] == 'stance' and f.touchdowns['late'] == 1
    # ... or after reach_time at most
    f = _foot()
    modes = _run(f, [False] * (n + int(SETTINGS.reach_time / 0.002) + 5))
    probing = modes.count('probe') * 0.002
    assert modes[-1] == 'stance' and f.touchdowns['given_up'] == 1
    assert SETTINGS.reach_time <= probing + 1e-9 <= SETTINGS.reach_time + 0.002
    # an estimate that never saw the lift-off, on at the planned end: on time
    f = _foot()
    modes = _run(f, [True] * (n + 1))
    assert modes.index('stance') == n - 1 and f.touchdowns['on_time'] == 1
    assert f.ground == 0.0


def test_a_stance_foot_reported_off_is_lost_after_the_debounce_and_regained():
    f = FootState(np.array([0.0, 0.0, 0.01]), t=0.0)
    s = SETTINGS
    dt = 0.001
    t = s.settle + 0.01
    f.update(t, 0.0, np.zeros(3), False, s)          # first report off
    while t < s.settle + 0.01 + s.debounce - 2 * dt:
        t += dt
        f.update(t, 0.0, np.zeros(3), False, s)
        assert f.mode == 'stance'
    for _ in range(3):
        t += dt
        f.update(t, 0.0, np.zeros(3), False, s)
    assert f.mode == 'lost' and f.lost == 1
    f.update(t + dt, 0.0, np.array([0.0, 0.0, -0.01]), True, s)
    assert f.mode == 'stance' and f.touchdowns['regained'] == 1 and f.ground == -0.01
    # reports off right after a touch-down (the settle time) are not a loss
    f.update(t + 2 * dt, 0.0, np.zeros(3), False, s)
    f.update(t + 2 * dt + 2 * s.debounce, 0.0, np.zeros(3), False, s)
    assert f.mode == 'stance'


@pytest.mark.parametrize('order', [(0, 1, 2, 3), (3, 1, 0, 2), (2, 0, 3, 1)])
def test_diagonal_pairs_from_the_layout_whatever_the_order(order):
    feet = [FEET[i] for i in order]
    pairs = diagonal_pairs(feet, OFFSETS[list(order)])
    assert {frozenset(p) for p in pairs} == {frozenset(('FL', 'HR')), frozenset(('FR', 'HL'))}
    assert pairs[0][0] == 'FL'


@pytest.mark.parametrize('offsets, feet', [
    (OFFSETS[:3], FEET[:3]),                                                  # three feet
    (np.array([[0.2, 0.15], [0.2, 0.05], [-0.2, 0.15], [-0.2, 0.05]]), FEET),  # all left
    (np.array([[0.2, 0.15], [0.1, -0.15], [0.05, 0.15], [0.15, -0.15]]), FEET),  # none behind
], ids=['three', 'one-side', 'no-hind'])
def test_a_layout_that_is_not_a_quadrupeds_is_refused(offsets, feet):
    with pytest.raises(ValueError, match='four feet|two in front'):
        diagonal_pairs(feet, offsets)


def _state(com=(0.0, 0.0, H), yaw=0.0, com_velocity=(0.0, 0.0, 0.0)):
    """A stream state with only what the gait reads: the feet under the trunk (heading
    ``yaw``), the CoM, its velocity, the base orientation, the weight in g."""
    c, s = math.cos(yaw), math.sin(yaw)
    P = np.array([[com[0] + c * x - s * y, com[1] + s * x + c * y, 0.0] for x, y in OFFSETS])
    q = np.r_[com, 0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2), np.zeros(12)]
    g = np.r_[0.0, 0.0, 24.5, np.zeros(15)]
    return StreamState([], q, np.zeros(18), None, None, g, FEET, P, None, None, 2.5,
                       np.array(com, dtype=float), np.array(com_velocity, dtype=float), None,
                       None)


def test_the_gait_phases_stance_sets_and_force_bounds():
    st = _state()
    gait = TrotGait(FEET, st)
    s = gait.settings
    assert s == TrotSettings.for_robot(H) and abs(s.swing - math.sqrt(H / G)) < 1e-12
    dt, t, seen = 0.002, 0.0, []
    while t < s.stand + 3 * (s.swing + s.double):
        ref = gait(t, st)
        seen.append((t, gait.phase, tuple(sorted(ref.stance)), tuple(sorted(ref.swing)),
                     dict(ref.normal_force_max)))
        t += dt
    stand = [x for x in seen if x[0] < s.stand]
    assert all(x[2] == tuple(sorted(FEET)) and not x[3] for x in stand)
    swings = {x[3] for x in seen if x[1] == 'swing'}
    assert swings == {('FL', 'HR'), ('FR', 'HL')}                      # the diagonal pairs
    for t_, phase, stance, swing, fmax in seen:
        assert set(stance) | set(swing) == set(FEET) and not set(stance) & set(swing)
        if phase == 'double':                   # four feet, the next pair unloading
            assert len(stance) == 4 and len(fmax) == 2
            assert all(0.0 <= f <= gait.share for f in fmax.values())
    # the pair lifts once the unloading is over: the last double-support bound near zero
    doubles = [x for x in seen if x[1] == 'double']
    assert min(min(x[4].values()) for x in doubles) < 0.25 * gait.share


def test_the_com_reference_moves_at_the_commanded_velocity_in_the_heading_frame():
    yaw = math.radians(30)
    st = _state(yaw=yaw)
    gait = TrotGait(FEET, st)
    cmd = (0.2, -0.1, 0.0)
    dt, t = 0.002, 0.0
    com = np.array([0.0, 0.0, H])
    for _ in range(1000):                          # 2 s: the rate limit long passed
        st = replace(_state(com=tuple(com), yaw=yaw), com_velocity=np.zeros(3))
        ref = gait(t, st, cmd)
        com = ref.com.copy()                        # a plant that follows exactly
        t += dt
    c, s = math.cos(yaw), math.sin(yaw)
    want = (c * cmd[0] - s * cmd[1], s * cmd[0] + c * cmd[1])
    np.testing.assert_allclose(ref.com_velocity[:2], want, atol=1e-12)
    np.testing.assert_allclose(ref.com[2], H, atol=1e-12)
    # the reference led the CoM by one step of the commanded velocity, never more than lead
    assert np.linalg.norm(ref.com[:2] - st.com[:2]) <= gait.settings.lead + 1e-12


def test_periods_owed_answered_skipped():
    p = ControlPeriods(500.0)
    stamps = [10**9 + k * 1_000_000 for k in range(20)]   # 1 kHz states for a 500 Hz controller
    for s in stamps[:3]:
        p.receive(s)
    assert p.due(stamps[2])
    p.answer(stamps[2], 0.001, stamps[2] + 3_000_000)   # the newest of periods 0 and 1
    assert not p.due(stamps[3])                 # still period 1
    for s in stamps[3:12]:
        p.receive(s)
    p.answer(stamps[11], 0.002, stamps[11] + 5_000_000)  # period 5: periods 2-4 skipped
    out = p.summary()
    assert (out['owed'], out['answered'], out['skipped'], out['gaps']) == (6, 2, 4, 0)
    assert out['staleness_ms'][2] == 0.0 and out['age_ms'][2] == 5.0
    p.receive(stamps[19])                       # periods 6-8 never received: gaps
    assert p.summary()['gaps'] == 3 and p.summary()['owed'] == 7
    with pytest.raises(ValueError):
        ControlPeriods(0.0)
