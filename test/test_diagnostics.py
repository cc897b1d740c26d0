"""ros_dynamics.ros.dynamics_node.diagnostics.NodeHealth: levels driven by injected faults on a fake clock
(rejection burst -> WARN -> OK once the burst left the window; silence -> ERROR; rate drop ->
WARN; no model -> ERROR; residual near its threshold without contact -> WARN), and the
DiagnosticArray it builds. The logic is plain Python; only to_msg imports diagnostic_msgs."""
import numpy as np
import pytest

from ros_dynamics.ros.dynamics_node.diagnostics import ERROR, OK, STALE, WARN, NodeHealth

pytestmark = pytest.mark.core


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def _feed(h, clock, seconds, rate, *, stamp0=None, reject_every=0, status_every=1.0):
    """Accepted joint states at `rate` (stamps and clock advance together), a rejection every
    `reject_every` messages, status() each `status_every` s; returns the last stamp and the
    levels seen."""
    stamp = stamp0 if stamp0 is not None else int(clock.t * 1e9)
    dt = 1.0 / rate
    levels = []
    next_status = clock.t + status_every
    for k in range(int(round(seconds * rate))):
        clock.t += dt
        stamp += int(dt * 1e9)
        h.accepted(stamp, 1e-4)
        if reject_every and k % reject_every == 0:
            h.rejected('stamp_in_future')
        if clock.t >= next_status - 1e-9:
            levels.append(h.status()[0])
            next_status += status_every
    return stamp, levels


def _part(h, suffix):
    _, parts = h.status()
    (p,) = [p for p in parts if p[0].endswith(suffix)]
    return p


def _healthy():
    clock = Clock()
    h = NodeHealth(clock=clock)
    h.model(nv=2, warnings=1, coordinates='joint', names=['j1', 'j2'])
    return h, clock


def test_stale_before_input_then_ok():
    h, clock = _healthy()
    name, level, message, _ = _part(h, 'input')
    assert (name, level) == ('dynamics: input', STALE) and 'no joint state' in message
    _, levels = _feed(h, clock, 3.0, 200.0)
    assert levels[-1] == OK


def test_rejection_burst_warns_then_recovers_after_the_window():
    h, clock = _healthy()
    stamp, _ = _feed(h, clock, 6.0, 200.0)
    assert h.status()[0] == OK
    # 10 % rejected during 1 s: 20 of 1020 in the 5 s window, above the 1 % limit
    stamp, levels = _feed(h, clock, 1.0, 200.0, stamp0=stamp, reject_every=10)
    assert levels == [WARN]
    _, level, message, values = _part(h, 'input')
    assert level == WARN and '% of joint states rejected' in message
    assert ('rejected: stamp_in_future', '20') in values
    # clean input: WARN while the burst is within the 5 s window, OK after
    stamp, levels = _feed(h, clock, 7.0, 200.0, stamp0=stamp)
    assert levels[:3] == [WARN] * 3 and levels[-1] == OK
    # 0.5 % is under the limit
    _, levels = _feed(h, clock, 6.0, 200.0, stamp0=stamp, reject_every=200)
    assert levels[-1] == OK


def test_silence_is_an_error_after_one_second():
    h, clock = _healthy()
    _feed(h, clock, 2.0, 100.0)
    clock.t += 0.9
    assert h.status()[0] == OK
    clock.t += 0.2
    _, level, message, _ = _part(h, 'input')
    assert level == ERROR and 'no joint state for 1.1 s' in message


def test_rate_drop_warns():
    h, clock = _healthy()
    stamp, _ = _feed(h, clock, 6.0, 1000.0)
    (_, values) = _part(h, 'input')[2:]
    assert ('expected rate [Hz]', '1000 (estimated)') in values
    stamp, levels = _feed(h, clock, 10.0, 400.0, stamp0=stamp)
    assert levels[-1] == WARN
    _, _, message, _ = _part(h, 'input')
    assert 'below 0.5 x the expected 1000.0 Hz' in message
    # a given expected rate replaces the estimate
    h2 = NodeHealth(expected_rate=300.0, clock=clock)
    h2.model(nv=1)
    _, levels = _feed(h2, clock, 6.0, 400.0)
    assert levels[-1] == OK


def test_simulated_time_is_not_a_rate_drop():
    """Stamps advance 1 ms per message while the wall clock advances 4 ms (a simulator at
    real-time factor 0.25): the rate is measured on the stamps."""
    h, clock = _healthy()
    stamp = 0
    for k in range(5000):
        clock.t += 0.004
        stamp += 1_000_000
        h.accepted(stamp, 0.0)
        if k % 250 == 249:
            level, _ = h.status()
    assert level == OK
    assert ('input rate [Hz]', '1000') in _part(h, 'input')[3]


def test_no_model_is_an_error():
    clock = Clock()
    h = NodeHealth(clock=clock, node_name='arm/dynamics')
    name, level, message, _ = _part(h, 'model')
    assert name == 'arm/dynamics: model' and level == ERROR and 'no model' in message
    h.model(nv=7, warnings=3, coordinates='mimic_reduced')
    name, level, message, values = _part(h, 'model')
    assert level == OK and ('URDF warnings', '3') in values and 'mimic_reduced' in message
    h.no_model('robot_description failed: no root link')
    assert _part(h, 'model')[1] == ERROR and 'no root link' in _part(h, 'model')[2]


def test_observer_near_threshold_without_contact_warns():
    h, clock = _healthy()
    _feed(h, clock, 1.0, 100.0)
    thr = np.array([5.0, 2.0])
    r = np.zeros(2)
    assert _part(h, 'observer')[1] == OK   # no update yet
    for value in (0.5, -1.7, 0.2):        # |r_2| = 1.7 > 0.8 * 2 at one sample, then small
        r[1] = value
        h.observer(r, thr, False)
    name, level, message, values = _part(h, 'observer')
    assert (name, level) == ('dynamics: observer', WARN) and 'j2' in message and 'j1' not in message
    assert ('|r|/threshold j2', '0.10 (0.2 / 2)') in values   # the latest sample
    # the peak is per status period: next period clean -> OK
    h.observer(r, thr, False)
    assert _part(h, 'observer')[1] == OK
    # large residual while in contact is not a warning
    r[:] = [9.0, 3.0]
    h.observer(r, thr, True)
    h.observer_reset('reset_observer service')
    _, level, message, values = _part(h, 'observer')
    assert level == OK and message == 'in contact'
    assert ('last reset reason', 'reset_observer service') in values


def test_to_msg():
    from builtin_interfaces.msg import Time
    from diagnostic_msgs.msg import DiagnosticStatus
    h, clock = _healthy()
    _feed(h, clock, 2.0, 100.0)
    h.rejected('missing_joint')
    msg = h.to_msg(Time(sec=5), hardware_id='arm7')
    assert msg.header.stamp.sec == 5
    assert [s.name for s in msg.status] == ['dynamics: input', 'dynamics: model',
                                            'dynamics: observer']
    assert [s.level for s in msg.status] == [DiagnosticStatus.OK] * 3
    assert all(s.hardware_id == 'arm7' for s in msg.status)
    keys = {kv.key: kv.value for kv in msg.status[0].values}
    assert keys['rejected: missing_joint'] == '1' and keys['accepted (total)'] == '200'


def test_bad_arguments():
    with pytest.raises(ValueError, match='expected_rate'):
        NodeHealth(expected_rate=0.0)


def test_thread_cpu_per_joint_state():
    """The cycles' thread CPU between two 1 Hz reads, per joint state accepted in between:
    0.3 s of CPU over 1200 joint states = 0.25 ms; unknown before the second read."""
    h, clock = _healthy()
    h.thread_cpu(10.0)
    stamp, _ = _feed(h, clock, 0.5, 1000.0)
    assert dict(_part(h, 'input')[3])['thread cpu per joint state [ms]'] == '-'
    _feed(h, clock, 0.7, 1000.0, stamp0=stamp)
    h.thread_cpu(10.3)
    values = dict(_part(h, 'input')[3])
    assert float(values['thread cpu per joint state [ms]']) == pytest.approx(0.25, rel=1e-3)
