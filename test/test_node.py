"""dynamics_node as a real process, talked to over loopback DDS (fixed-base bundled arm).

One node process (namespace /arm) is shared by all tests of this module; every wait is bounded.
Expected values come from the core library in this process for the same joint state.
"""
import itertools
import math
import time

import numpy as np
import pytest

import ros_dynamics as rd

from test_node_support import (ARM7, Probe, assert_dynamics_msg, christoffel_array,
                               dynamics_arrays, read, running_node, set_model_params)

pytestmark = pytest.mark.ros


GAIN = 40.0
THRESHOLD = 3.0
_stamps = itertools.count(1_000_000_000_000, 1_000_000)  # 1000 s, +1 ms per message


def next_stamp():
    return next(_stamps)


@pytest.fixture(scope='module')
def arm(rclpy_context, ros_env, tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp('arm'))
    params = {'robot_description': read(ARM7), 'observer_gain': [GAIN],
              'contact_threshold': [THRESHOLD], 'log_throttle_sec': 0.0,
              'christoffel_decimation': 1}
    with running_node(rclpy_context, ros_env, tmp, 'arm', params) as (proc, probe):
        # a first answer, sent until it arrives: the node's writers may match our readers a
        # little after ours matched theirs, and a test counts every answer after this one
        q = np.zeros(7)
        names = rd.load_urdf(ARM7).joint_names
        assert probe.send_until_answered(lambda: probe.joint_state(names, q, q, q, next_stamp()))
        yield proc, probe


@pytest.fixture(scope='module')
def model():
    return rd.load_urdf(ARM7)


def rand_state(model, seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.5, 1.5, model.nv), rng.uniform(-1, 1, model.nv), \
        rng.uniform(-20, 20, model.nv)


def test_outputs_match_core(arm, model):
    proc, probe = arm
    assert probe.trigger('reset_observer').success
    names = model.joint_names
    q1, v1, e1 = rand_state(model, 1)
    q2, v2, e2 = rand_state(model, 2)
    s1, s2 = next_stamp(), next_stamp()
    before = probe.counts()
    assert probe.send_and_wait(probe.joint_state(names, q1, v1, e1, s1)) is not None
    dyn = probe.send_and_wait(probe.joint_state(names, q2, v2, e2, s2))
    assert dyn is not None, proc.log()
    assert probe.spin_until(lambda: probe.find_stamped('external_torque', s2) is not None)
    ext = probe.find_stamped('external_torque', s2)
    assert probe.wait_counts({'dynamics': before['dynamics'] + 2,
                              'christoffel': before['christoffel'] + 2,
                              'contact_estimate': before['contact_estimate'] + 1})
    # one ~/dynamics per joint state, with its stamp, its state and the core's terms there
    assert list(dyn.names) == list(names)
    assert dyn.header.frame_id == 'base'
    assert_dynamics_msg(dyn, model, q2, v2)
    gam = probe.received['christoffel'][-1]
    assert (gam.header.stamp.sec, gam.header.stamp.nanosec) == divmod(s2, 1_000_000_000)
    np.testing.assert_allclose(christoffel_array(gam), rd.christoffel(model, q2), rtol=0,
                               atol=1e-12)
    np.testing.assert_allclose(np.asarray(gam.position), q2, rtol=0, atol=0)
    assert probe.counts()['gravity_torque'] == before['gravity_torque']  # off by default

    obs = rd.MomentumObserver(model, gain=GAIN)
    obs.reset(q1, v1)
    r = obs.update(q2, v2, e2, (s2 - s1) * 1e-9)
    assert list(ext.name) == list(names)
    np.testing.assert_allclose(np.asarray(ext.effort), r, rtol=0, atol=1e-12)
    assert probe.spin_until(lambda: probe.find_stamped('contact_estimate', s2) is not None)
    ce = probe.find_stamped('contact_estimate', s2)
    assert list(ce.names) == list(names)
    np.testing.assert_allclose(np.asarray(ce.external_torque), r, rtol=0, atol=1e-12)
    det = rd.ContactDetector(model, threshold=THRESHOLD, release_ratio=0.5)
    assert ce.in_contact == det.update(r).in_contact
    assert proc.alive()


def test_name_order_and_extra_names(arm, model):
    proc, probe = arm
    q, v, e = rand_state(model, 3)
    names = list(model.joint_names)
    perm = np.random.default_rng(0).permutation(len(names))
    msg_names = ['gripper_finger'] + [names[i] for i in perm] + ['another_extra']
    s = next_stamp()
    before = probe.counts()
    msg = probe.joint_state(msg_names, np.r_[9.0, q[perm], -9.0], np.r_[1.0, v[perm], 2.0],
                            np.r_[0.0, e[perm], 0.0], s)
    dyn = probe.send_and_wait(msg)
    assert dyn is not None
    assert list(dyn.names) == names
    assert_dynamics_msg(dyn, model, q, v)
    # same layout again: the cached index map is reused and still right
    q2, v2, e2 = rand_state(model, 4)
    s2 = next_stamp()
    msg2 = probe.joint_state(msg_names, np.r_[0.0, q2[perm], 0.0], np.r_[0.0, v2[perm], 0.0],
                             np.r_[0.0, e2[perm], 0.0], s2)
    assert_dynamics_msg(probe.send_and_wait(msg2), model, q2, v2)


def _bad_messages(model, stamp_of):
    names = list(model.joint_names)
    n = len(names)
    q, v, e = rand_state(model, 5)
    nan_q = q.copy()
    nan_q[2] = math.nan
    inf_v = v.copy()
    inf_v[0] = math.inf
    nan_e = e.copy()
    nan_e[-1] = math.nan
    return {
        'missing joint': Probe.joint_state(names[:-1], q[:-1], v[:-1], e[:-1], stamp_of()),
        'duplicate joint': Probe.joint_state(names + [names[0]], np.r_[q, 0.0], np.r_[v, 0.0],
                                             np.r_[e, 0.0], stamp_of()),
        'short position': Probe.joint_state(names, q[:-1], v, e, stamp_of()),
        'long velocity': Probe.joint_state(names, q, np.r_[v, 1.0], e, stamp_of()),
        'missing velocity': Probe.joint_state(names, q, None, e, stamp_of()),
        'wrong effort length': Probe.joint_state(names, q, v, e[:3], stamp_of()),
        'nan position': Probe.joint_state(names, nan_q, v, e, stamp_of()),
        'inf velocity': Probe.joint_state(names, q, inf_v, e, stamp_of()),
        'nan effort': Probe.joint_state(names, q, v, nan_e, stamp_of()),
        'no names': Probe.joint_state([], [], [], [], stamp_of()),
        'no positions': Probe.joint_state(names, None, v, e, stamp_of()),
    }, n


def test_bad_inputs_are_rejected_silently(arm, model):
    proc, probe = arm
    names = list(model.joint_names)
    bad, n = _bad_messages(model, next_stamp)
    # a stamp that goes backwards, relative to a good message sent just before it
    for label, msg in list(bad.items()) + [('stamp backwards', None)]:
        if msg is None:
            s_good = next_stamp()
            q, v, e = rand_state(model, 6)
            assert probe.send_and_wait(probe.joint_state(names, q, v, e, s_good)) is not None
            s_bad = s_good - 500_000
            msg = probe.joint_state(names, q, v, e, s_bad)
        else:
            s_bad = next_stamp()
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(s_bad, 1_000_000_000)
        before = probe.counts()
        t0 = time.monotonic()
        probe.js_pub.publish(msg)
        s_next = next_stamp()
        q, v, e = rand_state(model, 7)
        good = probe.send_and_wait(probe.joint_state(names, q, v, e, s_next))
        assert good is not None, f'node did not answer a good message after: {label}'
        assert probe.spin_until(lambda: probe.find_stamped('christoffel', s_next) is not None)
        probe.spin_for(0.05)
        after = probe.counts()
        st = msg.header.stamp
        bad_ns = st.sec * 1_000_000_000 + st.nanosec
        for topic in ('dynamics', 'external_torque', 'contact_estimate', 'christoffel'):
            assert probe.find_stamped(topic, bad_ns) is None, (label, topic)
        assert after['dynamics'] == before['dynamics'] + 1, label
        assert_dynamics_msg(good, model, q, v)
        assert proc.alive(), label
        print(label, time.monotonic() - t0)
    log = proc.log()
    for text in ('missing required joint', 'named more than once', 'positions for',
                 'velocities for', 'efforts for', 'NaN or inf', 'earlier than the last'):
        assert text in log, (text, log.splitlines())


def test_missing_effort_publishes_dynamics_but_not_observer(arm, model):
    proc, probe = arm
    names = list(model.joint_names)
    q, v, _ = rand_state(model, 8)
    s = next_stamp()
    dyn = probe.send_and_wait(probe.joint_state(names, q, v, None, s))
    assert dyn is not None
    assert_dynamics_msg(dyn, model, q, v)
    probe.spin_for(0.2)
    assert probe.find_stamped('external_torque', s) is None
    assert probe.find_stamped('contact_estimate', s) is None


def test_allow_missing_velocity_parameter(arm, model):
    proc, probe = arm
    names = list(model.joint_names)
    q, _, e = rand_state(model, 9)
    assert probe.set_params(allow_missing_velocity=True).successful
    try:
        dyn = probe.send_and_wait(probe.joint_state(names, q, None, e, next_stamp()))
        assert dyn is not None
        assert_dynamics_msg(dyn, model, q, np.zeros(model.nv))  # zero velocity: C = 0
    finally:
        assert probe.set_params(allow_missing_velocity=False).successful


def test_services_at_requested_and_latest_state(arm, model):
    """~/get_dynamics and ~/get_christoffel return the core's terms at the requested state (any
    joint order), or at the latest accepted joint state for an empty request."""
    proc, probe = arm
    names = list(model.joint_names)
    q, v, _ = rand_state(model, 10)
    perm = np.random.default_rng(1).permutation(len(names))
    resp = probe.get('dynamics', [names[i] for i in perm], q[perm], v[perm])
    assert resp.success, resp.message
    assert list(resp.dynamics.names) == names
    assert_dynamics_msg(resp.dynamics, model, q, v)
    resp = probe.get('christoffel', [names[i] for i in perm], q[perm])
    assert resp.success, resp.message
    gamma = christoffel_array(resp.christoffel)
    np.testing.assert_allclose(gamma, rd.christoffel(model, q), rtol=0, atol=1e-12)
    # C[i, j] = sum_k Gamma[i, j, k] v[k] (an identity the node does not use)
    np.testing.assert_allclose(gamma @ v, rd.coriolis_matrix(model, q, v), atol=1e-10)
    # no velocities: zero velocity
    resp = probe.get('dynamics', names, q)
    assert resp.success and np.all(dynamics_arrays(resp.dynamics)[3] == 0.0)
    # empty request: the latest accepted joint state, with its stamp
    q2, v2, e2 = rand_state(model, 11)
    s = next_stamp()
    assert probe.send_and_wait(probe.joint_state(names, q2, v2, e2, s)) is not None
    for what in ('dynamics', 'christoffel'):
        resp = probe.get(what)
        assert resp.success, resp.message
        m = getattr(resp, what)
        assert (m.header.stamp.sec, m.header.stamp.nanosec) == divmod(s, 1_000_000_000)
    assert_dynamics_msg(probe.get('dynamics').dynamics, model, q2, v2)
    np.testing.assert_allclose(christoffel_array(probe.get('christoffel').christoffel),
                               rd.christoffel(model, q2), rtol=0, atol=1e-12)


def test_services_reject_bad_requests(arm, model):
    proc, probe = arm
    names = list(model.joint_names)
    q, v, _ = rand_state(model, 12)
    nan_q = q.copy()
    nan_q[3] = math.nan
    cases = {
        'unknown joint': ((names + ['elbow_of_nobody'], np.r_[q, 0.0], np.r_[v, 0.0]), 'unknown'),
        'missing joint': ((names[:-1], q[:-1], v[:-1]), 'missing'),
        'duplicate joint': ((names + [names[0]], np.r_[q, 0.0], np.r_[v, 0.0]), 'more than once'),
        'short position': ((names, q[:-1], v), 'positions for'),
        'long velocity': ((names, q, np.r_[v, 0.0]), 'velocities for'),
        'nan position': ((names, nan_q, v), 'NaN'),
        'positions without names': (([], q, None), 'without names'),
    }
    for label, ((n, qq, vv), text) in cases.items():
        for what in ('dynamics', 'christoffel'):
            if what == 'christoffel' and label == 'long velocity':
                continue  # velocities are not used there
            resp = probe.get(what, n, qq, vv)
            assert not resp.success, (label, what)
            assert text in resp.message, (label, what, resp.message)
            assert len(getattr(resp, what).names) == 0, (label, what)
    # the node keeps answering
    resp = probe.get('dynamics', names, q, v)
    assert resp.success
    assert_dynamics_msg(resp.dynamics, model, q, v)
    assert proc.alive()


def test_christoffel_decimation(arm, model):
    proc, probe = arm
    names = list(model.joint_names)
    assert probe.set_params(christoffel_decimation=3).successful
    try:
        before = probe.counts()
        for k in range(6):
            q, v, e = rand_state(model, 20 + k)
            assert probe.send_and_wait(probe.joint_state(names, q, v, e, next_stamp()))
        probe.spin_for(0.2)
        after = probe.counts()
        assert after['dynamics'] - before['dynamics'] == 6
        assert after['christoffel'] - before['christoffel'] == 2
    finally:
        assert probe.set_params(christoffel_decimation=1).successful


def test_publish_rate_sends_the_first_state_of_each_period(arm, model):
    """publish_rate 250 Hz on 1 kHz joint states: ~/dynamics and ~/external_torque carry the
    first joint state of each 4 ms period of the stamps, the others are taken into the
    observer but not sent (fresh when behind off: every state is handled in turn)."""
    proc, probe = arm
    names = list(model.joint_names)
    period = 4_000_000
    start = (next_stamp() // period + 1) * period        # a period's first nanosecond
    while next_stamp() < start + 3 * period:             # (the module's stamps stay increasing)
        pass
    assert probe.set_params(publish_rate=250.0, catch_up=False).successful
    try:
        before = {k: len(v) for k, v in probe.received.items()}
        for k in range(12):                               # 3 periods, 4 states each
            q, v, e = rand_state(model, 40 + k)
            probe.js_pub.publish(probe.joint_state(names, q, v, e, start + k * 1_000_000))
        # a fourth period's first state: once it is answered every earlier one was handled
        q, v, e = rand_state(model, 52)
        sentinel = start + 3 * period
        assert probe.send_and_wait(probe.joint_state(names, q, v, e, sentinel)) is not None
        assert probe.spin_until(lambda: probe.find_stamped('external_torque', sentinel))

        def stamps(topic):
            return [m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec
                    for m in probe.received[topic][before[topic]:]]
        expected = [start + j * period for j in range(4)]
        assert stamps('dynamics') == expected
        assert stamps('external_torque') == expected
    finally:
        assert probe.set_params(publish_rate=0.0, catch_up=True).successful
    # back to every joint state
    q, v, e = rand_state(model, 53)
    stamp = next_stamp()
    assert probe.send_and_wait(probe.joint_state(names, q, v, e, stamp)) is not None
    stamp2 = next_stamp()
    assert probe.send_and_wait(probe.joint_state(names, q, v, e, stamp2)) is not None


def test_output_switches(arm, model):
    proc, probe = arm
    names = list(model.joint_names)
    assert probe.set_params(publish_dynamics=False, publish_gravity_torque=True,
                            christoffel_stream=False).successful
    try:
        before = probe.counts()
        q, v, e = rand_state(model, 30)
        g_msg = probe.send_and_wait(probe.joint_state(names, q, v, e, next_stamp()),
                                    topic='gravity_torque')
        assert g_msg is not None
        np.testing.assert_allclose(np.asarray(g_msg.effort), rd.gravity(model, q), rtol=0,
                                   atol=1e-12)
        probe.spin_for(0.2)
        after = probe.counts()
        assert after['dynamics'] == before['dynamics']
        assert after['christoffel'] == before['christoffel']
    finally:
        assert probe.set_params(publish_dynamics=True, publish_gravity_torque=False,
                                christoffel_stream=True).successful


def test_parameter_validation(arm, model):
    proc, probe = arm
    for params, text in [({'christoffel_decimation': 0}, ''),
                         ({'qos_depth': 3}, 'read'),
                         ({'effort_source': 'telepathy'}, 'effort_source'),
                         ({'gravity': [0.0, -9.81]}, 'gravity'),
                         ({'observer_gain': [-1.0]}, 'observer_gain'),
                         ({'observer_gain': [1.0, 2.0]}, 'observer_gain'),
                         ({'observer_gain': 20.0}, 'type'),   # a double[] keeps its type
                         ({'gravity': 9.81}, 'type'),
                         ({'christoffel_decimation': 2.5}, 'type'),
                         ({'robot_description': '<robot name="x"><oops/></robot'}, 'model')]:
        res = probe.set_params(**params)
        assert not res.successful, params
        assert text in res.reason, (params, res.reason)
    assert proc.alive()
    # the node still works with the old settings
    q, v, e = rand_state(model, 40)
    dyn = probe.send_and_wait(probe.joint_state(model.joint_names, q, v, e, next_stamp()))
    assert_dynamics_msg(dyn, model, q, v)


def test_gravity_parameter_rebuilds_model(arm, model):
    proc, probe = arm
    moon = [0.0, 0.0, -1.62]
    res = set_model_params(proc, probe, gravity=moon)
    assert res.successful, res.reason
    try:
        q, v, e = rand_state(model, 50)
        dyn = probe.send_and_wait(probe.joint_state(model.joint_names, q, v, e, next_stamp()))
        assert_dynamics_msg(dyn, rd.load_urdf(ARM7, gravity=moon), q, v)
    finally:
        res = set_model_params(proc, probe, gravity=[0.0, 0.0, -9.81])
        assert res.successful
    # the change is logged old -> new with the reason for the rebuild
    log = proc.log()
    assert 'rebuilding the model: gravity changed' in log
    assert 'parameter gravity: [0.0, 0.0, -9.81] -> [0.0, 0.0, -1.62]' in log


def test_commanded_torque_effort_source(arm, model):
    proc, probe = arm
    names = list(model.joint_names)
    res = probe.set_params(effort_source='commanded_torque', commanded_torque_timeout=0.0)
    assert res.successful, res.reason
    try:
        assert probe.trigger('reset_observer').success
        q1, v1, _ = rand_state(model, 60)
        q2, v2, tau = rand_state(model, 61)
        cmd = probe.joint_state(list(reversed(names)), None, None, tau[::-1], 0)
        assert probe.spin_until(lambda: probe.cmd_pub.get_subscription_count() >= 1)
        probe.cmd_pub.publish(cmd)
        probe.spin_for(0.3)
        s1, s2 = next_stamp(), next_stamp()
        # efforts in joint_states are ignored with this source (send garbage-free zeros)
        assert probe.send_and_wait(probe.joint_state(names, q1, v1, None, s1))
        assert probe.send_and_wait(probe.joint_state(names, q2, v2, None, s2))
        assert probe.spin_until(lambda: probe.find_stamped('external_torque', s2) is not None)
        obs = rd.MomentumObserver(model, gain=GAIN)
        obs.reset(q1, v1)
        r = obs.update(q2, v2, tau, (s2 - s1) * 1e-9)
        np.testing.assert_allclose(np.asarray(probe.find_stamped('external_torque', s2).effort),
                                   r, rtol=0, atol=1e-12)
    finally:
        res = probe.set_params(effort_source='joint_state')
        assert res.successful


def test_reset_observer_and_contact(arm, model):
    """A constant external torque on joint 2 shows up in the residual and as a contact."""
    proc, probe = arm
    names = list(model.joint_names)
    assert probe.trigger('reset_observer').success
    q = np.array([0.2, 0.7, -0.3, -1.1, 0.4, 0.6, 0.0])
    v = np.zeros(model.nv)
    g = rd.gravity(model, q)
    tau_ext = np.zeros(model.nv)
    tau_ext[1] = 10.0
    # static robot: motor torque = g - tau_ext balances it, so the observer sees tau_ext
    stamps = [next_stamp() for _ in range(40)]
    for s in stamps:
        probe.js_pub.publish(probe.joint_state(names, q, v, g - tau_ext, s))
        probe.spin_for(0.002)
    assert probe.spin_until(lambda: probe.find_stamped('external_torque', stamps[-1]) is not None)
    r = np.asarray(probe.find_stamped('external_torque', stamps[-1]).effort)
    # r = tau_ext (1 - exp(-K t)) over the samples the node integrated (all, unless some were
    # dropped by the KEEP_LAST input queue on a loaded machine)
    full = 10.0 * (1 - math.exp(-GAIN * 0.039))
    assert 0.5 * full < r[1] <= full + 1e-9
    np.testing.assert_allclose(np.delete(r, 1), 0.0, atol=1e-9)
    assert probe.spin_until(lambda: probe.find_stamped('contact_estimate', stamps[-1]) is not None)
    ce = probe.find_stamped('contact_estimate', stamps[-1])
    assert ce.in_contact
    np.testing.assert_allclose(np.asarray(ce.external_torque), r, rtol=0, atol=0)
    # isolation: a torque on joint 2 only -> deepest active joint 2 -> its child link
    assert list(ce.isolated_links) == ['arm_link_2']
    # force estimate at the isolated link: the core library's least squares for the same residual
    assert ce.wrench_valid and ce.wrench_link == 'arm_link_2'
    assert ce.header.frame_id == 'base'
    F = rd.estimate_contact_wrench(model, q, r, 'arm_link_2', [0.0, 0.0, 0.0], force_only=True)
    w = ce.wrench
    got = [w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z]
    np.testing.assert_allclose(got, F, rtol=0, atol=1e-9)
    # the push ends: the residual decays, the release is announced once, then silence
    free = [next_stamp() for _ in range(150)]
    for s in free:
        probe.js_pub.publish(probe.joint_state(names, q, v, g, s))
        probe.spin_for(0.002)
    assert probe.spin_until(lambda: probe.find_stamped('external_torque', free[-1]) is not None)
    probe.spin_for(0.1)
    later = [m for m in probe.received['contact_estimate']
             if m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec >= free[0]]
    assert [m.in_contact for m in later].count(False) == 1
    assert later[-1].in_contact is False and not later[-1].wrench_valid
    assert list(later[-1].isolated_links) == [] and later[-1].wrench_link == ''
    assert probe.find_stamped('contact_estimate', free[-1]) is None


def test_stamp_policy_source_reset_and_reset_observer(arm, model):
    """A small step back in time is out of order (rejected); a jump back by more than
    stamp_reset_jump is a source reset (accepted, observer re-initialized, logged);
    ~/reset_observer clears the stamp history so that a small step back is accepted too."""
    proc, probe = arm
    names = list(model.joint_names)
    q, v, e = rand_state(model, 70)
    s = next_stamp()
    assert probe.send_and_wait(probe.joint_state(names, q, v, e, s))
    assert probe.send_and_wait(probe.joint_state(names, q, v, e, s - 500_000_000),
                               timeout=0.5) is None
    old = 1_000_000  # 1 ms after the epoch: a source reset
    assert probe.send_and_wait(probe.joint_state(names, q, v, e, old)) is not None
    assert probe.spin_until(lambda: 'source reset: stamp jumped back' in proc.log())
    # the observer restarted there: the next update integrates from the reset state only
    q2, v2, e2 = rand_state(model, 71)
    assert probe.send_and_wait(probe.joint_state(names, q2, v2, e2, old + 1_000_000))
    assert probe.spin_until(
        lambda: probe.find_stamped('external_torque', old + 1_000_000) is not None)
    obs = rd.MomentumObserver(model, gain=GAIN)
    obs.reset(q, v)
    r = obs.update(q2, v2, e2, 1e-3)
    np.testing.assert_allclose(
        np.asarray(probe.find_stamped('external_torque', old + 1_000_000).effort), r, rtol=0,
        atol=1e-12)
    resp = probe.trigger('reset_observer')
    assert resp.success and 'stamp history cleared' in resp.message
    assert probe.send_and_wait(probe.joint_state(names, q, v, e, old + 500_000)) is not None
    # stamps continue from there; later tests keep using next_stamp() (larger)
