"""The trot in closed loop on MuJoCo plants that are not the model, in one process
(ros_dynamics.simulation.legged_walk: MuJoCo at 1 kHz, a legged robot's sensing, the dynamics
node's own cycle for the stream and the contact estimate, wbc_controller's LeggedController at
500 Hz with the defaults), judged on MuJoCo's truth only: falls, the base's mean velocity in its
heading frame and yaw rate over the last 2 s of the command against the command, where the feet
end, how long the QP loaded feet 1 cm or more above MuJoCo's terrain or touching nothing, the
node's contact state against MuJoCo's contacts while trotting (agreement, touch-down and
lift-off delays).

Every run is deterministic (seeded sensing noise and link errors): the tolerances are 3x the
worst of seeds 1-3 measured (2026-12-02, in the comments), the contact state's the issue's
targets; the test runs seed 1.  Each can fail: a fall, a velocity off the command, a foot
loaded in the air, a touch-down seen late."""
from dataclasses import replace

import numpy as np
import pytest

from ros_dynamics.simulation.legged_metrics import walk_metrics
from ros_dynamics.simulation.legged_walk import NOISY, WalkScenario, walk
from ros_dynamics.simulation.mujoco_legged import LeggedPlantOptions

pytestmark = pytest.mark.core

SEED = 1
FORWARD = ((0.0, (0.0, 0.0, 0.0)), (1.5, (0.3, 0.0, 0.0)))
SIDE_TURN = ((0.0, (0.0, 0.0, 0.0)), (1.5, (0.0, 0.15, 0.5)))
#: name: (robot, commands, plant options, touch-down)
SCENARIOS = {
    'solo12 forward, hidden load': ('solo12', FORWARD, dict(), 'estimate'),
    'quadruped sideways and turning, load off-centre, links off': (
        'quadruped', SIDE_TURN, dict(link_error=0.2, load_offset=(0.03, 0.02, 0.02)),
        'estimate'),
    'solo12 step up, estimate': ('solo12', FORWARD, dict(step_edge=0.45, step_rise=0.02),
                                 'estimate'),
    'solo12 step down, estimate': ('solo12', FORWARD, dict(step_edge=0.45, step_rise=-0.02),
                                   'estimate'),
    'solo12 step down, schedule': ('solo12', FORWARD, dict(step_edge=0.45, step_rise=-0.02),
                                   'schedule'),
}


def run(name, seed=SEED):
    """(walk's output, walk_metrics) of a scenario: a 1 kg hidden trunk load, the sensing of a
    legged robot (odometry 200 Hz, 10 ms late, 0.03 m/s noise; joint noise), 5 s."""
    robot, commands, plant, touchdown = SCENARIOS[name]
    out = walk(WalkScenario(robot=robot, commands=commands, duration=5.0, touchdown=touchdown,
                            plant=LeggedPlantOptions(hidden_load=1.0, seed=seed, **plant),
                            sensing=replace(NOISY, seed=seed)))
    return out, walk_metrics(out, commands)


def figures(out, m):
    """The figures the tests bound: falls, the worst velocity and yaw-rate errors, the time
    feet were loaded while 1 cm or more above the terrain (MuJoCo's foot sphere against the
    ground and the step's corner) [ms], the time they were loaded while MuJoCo had them
    touching nothing [ms], the touch-downs the node reported 1 cm or more above the terrain,
    touch-downs by kind, the node's contact state's agreement with MuJoCo's contacts and its
    touch-down and lift-off delays ((median, p90, max, count) [s])."""
    feet, ms = out['foot_names'], 1e3 * out['dt']
    stance = out['modes'] == 'stance'
    return dict(falls=m['falls'],
                v=max(max(abs(s['error'][0]), abs(s['error'][1])) for s in m['segments']),
                w=max(abs(s['error'][2]) for s in m['segments']),
                air_ms=float((stance & (out['clearance'] >= 0.01)).sum() * ms),
                untouched_ms=float((stance & ~out['touching']).sum() * ms),
                reported_up=m['touchdowns_reported_above_1cm'],
                agreement=m['contact_agreement'], touchdown=m['touchdown_delay_s'],
                liftoff=m['liftoff_delay_s'],
                kinds={k: sum(out['touchdowns'][f][k] for f in feet)
                       for k in out['touchdowns'][feet[0]]})


@pytest.fixture(scope='module')
def results():
    return {}


def _get(results, name):
    if name not in results:
        out, m = run(name)
        results[name] = (out, figures(out, m))
    return results[name]


@pytest.mark.parametrize('name, v_tol, w_tol', [
    # seeds 1-3: 0.0019, 0.0026, 0.0011 m/s; 0.00017, 0.00025, 0.00010 rad/s
    ('solo12 forward, hidden load', 0.0079, 0.00075),
    # seeds 1-3: 0.0067, 0.0069, 0.0094 m/s; 0.00079, 0.00038, 0.0014 rad/s (the target: 0.05
    # m/s, 0.15 rad/s)
    ('quadruped sideways and turning, load off-centre, links off', 0.028, 0.0042),
])
def test_trots_at_the_commanded_velocity_without_a_fall(results, name, v_tol, w_tol):
    out, f = _get(results, name)
    print(name, f)
    assert f['falls'] == 0, f
    assert f['v'] <= v_tol and f['w'] <= w_tol, f
    # touch-downs seen by the node's estimate, none given up
    seen = f['kinds']['early'] + f['kinds']['on_time'] + f['kinds']['late']
    assert f['kinds']['given_up'] == 0 and seen > 20, f


@pytest.mark.parametrize('name', ['solo12 forward, hidden load',
                                  'quadruped sideways and turning, load off-centre, links off'])
def test_the_nodes_contact_state_sees_the_trots_touch_downs(results, name):
    """The node's per-foot state against MuJoCo's contacts while the robot trots under this
    controller, at the issue's targets: >= 95 % of the samples agree, touch-downs seen a median
    <= 10 ms (p90 <= 25 ms) after MuJoCo's, lift-offs <= 15 ms, none reported 1 cm or more up.
    Seeds 1-3: Solo12 98.48, 98.50, 98.45 %, touch-down 2 / 3 ms, lift-off -1, -2, -2 ms;
    the quadruped 95.84, 95.96, 95.19 %, touch-down 4-5 / 6-9 ms, lift-off -4.5, -3, -3 ms.
    Before the swing arrived moving down (control/swing.py) the touch-down was seen 25-35 ms
    late, as the gait's probe loaded the foot (benchmarks/trot_mujoco.py)."""
    _, f = _get(results, name)
    print(name, f)
    assert f['agreement'] >= 0.95, f
    assert f['touchdown'][0] <= 0.010 and f['touchdown'][1] <= 0.025, f
    assert f['liftoff'][0] <= 0.015 and f['reported_up'] == 0, f


def test_the_nodes_unexplained_part_finds_a_push_while_the_robot_trots():
    """A lateral push of 20 % of the weight for 0.1 s while Solo12 trots forward under the
    controller: no fall, and the node's unexplained part, as its change from the 0.5 s before
    the push, finds the push's generalized force through the observer's K/(s+K) (MuJoCo's
    truth) within 20 % on average over the push, and not late.  Exact sensing and no hidden
    load (the seeds draw nothing: one run; measured 10.6 %, lag -3 ms, 2026-12-02); with the
    sensing's noise and lag and the hidden load the figure is 35-52 % over seeds 1-3
    (benchmarks/trot_mujoco.py, the pushed runs): the trunk's acceleration times the load the
    URDF does not know is in the unexplained part too."""
    from ros_dynamics.simulation.mujoco_quadruped import SensingOptions
    sc = WalkScenario(robot='solo12', commands=FORWARD, duration=5.0,
                      plant=LeggedPlantOptions(seed=SEED), sensing=SensingOptions())
    sc.push = (4.0, 0.1, (0.0, 0.2 * 9.81 * 2.5, 0.0))        # Solo12: 2.5 kg
    out = walk(sc)
    m = walk_metrics(out, FORWARD)
    assert m['falls'] == 0
    assert m['push_mean_change_error'] < 0.20, m['push_mean_change_error']
    assert abs(m['push_lag']) <= 0.010, m['push_lag']


def test_an_unseen_step_up_with_touch_downs_from_the_estimate(results):
    out, f = _get(results, 'solo12 step up, estimate')
    print(f)
    assert f['falls'] == 0 and f['v'] <= 0.0059, f       # seeds 1-3: 0.0016, 0.0020, 0.0011
    rise = SCENARIOS['solo12 step up, estimate'][2]['step_rise']
    # all four feet crossed the edge and stand on the step (MuJoCo's foot centres: the foot
    # radius above it)
    assert np.all(out['feet'][-1, :, 0] > 0.45 + 0.016), out['feet'][-1]
    assert np.all(out['feet'][-1, :, 2] > rise), out['feet'][-1]
    assert f['kinds']['given_up'] == 0, f


def test_touch_downs_from_the_estimate_load_no_foot_in_the_air_on_a_step_down(results):
    """A 2 cm step down, the requirement: no foot loaded while 1 cm or more above the terrain
    (MuJoCo's foot sphere against the floor and the step's corner) and no touch-down reported
    there.  With the schedule alone the swing ends in the air and the foot is loaded there
    (180, 182, 187 ms at >= 1 cm; 261, 263, 274 ms touching nothing; seeds 1-3) until it drops
    onto the ground; from the estimate, a foot not seen down probes with a small force and is
    loaded once the node sees it land (0 ms at >= 1 cm, no touch-down reported there; 0 ms
    loaded touching nothing; seeds 1-3).  A foot that lands on the step's corner and slides
    off its edge is touching nothing for a few ms while loaded (seen before the swing arrived
    moving down: 7, 4, 6 ms): physics, not a touch-down reported in the air; that time is
    bounded at 6 ms."""
    out, est = _get(results, 'solo12 step down, estimate')
    _, sched = _get(results, 'solo12 step down, schedule')
    touching_gap = out['clearance'][out['touching']].max()
    print(est, sched, f'largest clearance of a foot MuJoCo has touching: {touching_gap:.5f} m')
    # the clearance is MuJoCo's geometry: a foot it has touching is not off the terrain
    # (seed 1: at most -0.01 mm, the corner's contacts included)
    assert touching_gap <= 0.0005, touching_gap
    assert est['falls'] == sched['falls'] == 0
    assert est['air_ms'] == 0.0 and est['reported_up'] == 0, est
    assert est['untouched_ms'] <= 6.0, est
    # the measures see a foot loaded in the air: the schedule's (half the least of seeds 1-3)
    assert sched['air_ms'] >= 90.0 and sched['untouched_ms'] >= 130.0, sched
    assert sched['kinds']['planned'] > 20 and est['kinds']['planned'] == 0
