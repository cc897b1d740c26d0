"""dynamics_node as a real process, talked to over loopback DDS (fixed-base bundled arm).

One node process (namespace /arm) is shared by all tests of this module; every wait is bounded.
Expected values come from the core library in this process for the same joint state.
"""
import itertools
import math
import time

import numpy as np
import pytest

from test_node_support import ARM7, Probe, assert_matrix_msg, flat, read, running_node

pytestmark = pytest.mark.ros

rd = pytest.importorskip('ros_dynamics')

GAIN = 40.0
THRESHOLD = 3.0
_stamps = itertools.count(1_000_000_000_000, 1_000_000)  # 1000 s, +1 ms per message


def next_stamp():
    return next(_stamps)


@pytest.fixture(scope='module')
def arm(rclpy_context, ros_env, tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp('arm'))
    params = {'robot_description': read(ARM7), 'observer_gain': GAIN,
              'contact_threshold': THRESHOLD, 'log_throttle_sec': 0.0}
    with running_node(rclpy_context, ros_env, tmp, 'arm', params) as (proc, probe):
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
    g_msg = probe.send_and_wait(probe.joint_state(names, q2, v2, e2, s2))
    assert g_msg is not None, proc.log()
    assert probe.spin_until(lambda: probe.find_stamped('external_torque', s2) is not None)
    ext = probe.find_stamped('external_torque', s2)
    exp_counts = {k: before[k] + 2 for k in ('mass_matrix', 'coriolis_matrix',
                                             'mass_matrix_dot', 'christoffel')}
    exp_counts['contact'] = before['contact'] + 1
    assert probe.wait_counts(exp_counts)

    d = rd.dynamics(model, q2, v2)
    assert_matrix_msg(probe.received['mass_matrix'][-1], d.M)
    assert_matrix_msg(probe.received['coriolis_matrix'][-1], d.C)
    assert_matrix_msg(probe.received['mass_matrix_dot'][-1], d.Mdot)
    assert_matrix_msg(probe.received['christoffel'][-1], rd.christoffel(model, q2))
    assert [d.label for d in probe.received['mass_matrix'][-1].layout.dim] == ['rows', 'cols']

    assert list(g_msg.name) == list(names)
    np.testing.assert_allclose(np.asarray(g_msg.effort), d.g, rtol=0, atol=1e-12)
    assert len(g_msg.position) == 0 and len(g_msg.velocity) == 0

    obs = rd.MomentumObserver(model, gain=GAIN)
    obs.reset(q1, v1)
    r = obs.update(q2, v2, e2, (s2 - s1) * 1e-9)
    assert list(ext.name) == list(names)
    np.testing.assert_allclose(np.asarray(ext.effort), r, rtol=0, atol=1e-12)
    det = rd.ContactDetector(model, threshold=THRESHOLD, release_ratio=0.5)
    assert probe.received['contact'][-1].data == det.update(r).in_contact
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
    g_msg = probe.send_and_wait(msg)
    assert g_msg is not None
    assert probe.wait_counts({'mass_matrix': before['mass_matrix'] + 1,
                              'coriolis_matrix': before['coriolis_matrix'] + 1})
    d = rd.dynamics(model, q, v)
    assert list(g_msg.name) == names
    np.testing.assert_allclose(np.asarray(g_msg.effort), d.g, rtol=0, atol=1e-12)
    assert_matrix_msg(probe.received['mass_matrix'][-1], d.M)
    assert_matrix_msg(probe.received['coriolis_matrix'][-1], d.C)
    # same layout again: the cached index map is reused and still right
    q2, v2, e2 = rand_state(model, 4)
    s2 = next_stamp()
    msg2 = probe.joint_state(msg_names, np.r_[0.0, q2[perm], 0.0], np.r_[0.0, v2[perm], 0.0],
                             np.r_[0.0, e2[perm], 0.0], s2)
    g2 = probe.send_and_wait(msg2)
    np.testing.assert_allclose(np.asarray(g2.effort), rd.gravity(model, q2), rtol=0, atol=1e-12)


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
        assert probe.wait_counts({'mass_matrix': before['mass_matrix'] + 1})
        probe.spin_for(0.05)
        after = probe.counts()
        st = msg.header.stamp
        bad_ns = st.sec * 1_000_000_000 + st.nanosec
        assert probe.find_stamped('gravity_torque', bad_ns) is None, label
        assert probe.find_stamped('external_torque', bad_ns) is None, label
        for topic in ('mass_matrix', 'coriolis_matrix', 'mass_matrix_dot', 'christoffel',
                      'gravity_torque'):
            assert after[topic] == before[topic] + 1, (label, topic)
        np.testing.assert_allclose(np.asarray(good.effort), rd.gravity(model, q),
                                   rtol=0, atol=1e-12)
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
    g_msg = probe.send_and_wait(probe.joint_state(names, q, v, None, s))
    assert g_msg is not None
    np.testing.assert_allclose(np.asarray(g_msg.effort), rd.gravity(model, q), rtol=0,
                               atol=1e-12)
    probe.spin_for(0.2)
    assert probe.find_stamped('external_torque', s) is None


def test_allow_missing_velocity_parameter(arm, model):
    proc, probe = arm
    names = list(model.joint_names)
    q, _, e = rand_state(model, 9)
    assert probe.set_params(allow_missing_velocity=True).successful
    try:
        before = probe.counts()
        g_msg = probe.send_and_wait(probe.joint_state(names, q, None, e, next_stamp()))
        assert g_msg is not None
        assert probe.wait_counts({'coriolis_matrix': before['coriolis_matrix'] + 1})
        d = rd.dynamics(model, q, np.zeros(model.nv))
        assert_matrix_msg(probe.received['coriolis_matrix'][-1], d.C)  # zero velocity: C = 0
        np.testing.assert_allclose(np.asarray(g_msg.effort), d.g, rtol=0, atol=1e-12)
    finally:
        assert probe.set_params(allow_missing_velocity=False).successful


def test_compute_christoffel_service(arm, model):
    proc, probe = arm
    names = list(model.joint_names)
    assert probe.set_params(christoffel_stream=False).successful
    try:
        q, v, e = rand_state(model, 10)
        s = next_stamp()
        before = probe.counts()
        assert probe.send_and_wait(probe.joint_state(names, q, v, e, s)) is not None
        probe.spin_for(0.2)
        assert probe.counts()['christoffel'] == before['christoffel']  # stream is off
        resp = probe.trigger('compute_christoffel')
        assert resp.success, resp.message
        assert f'{s // 1_000_000_000}.{s % 1_000_000_000:09d}' in resp.message
        assert probe.wait_counts({'christoffel': before['christoffel'] + 1})
        gamma = rd.christoffel(model, q)
        msg = probe.received['christoffel'][-1]
        assert_matrix_msg(msg, gamma)
        assert [d.label for d in msg.layout.dim] == ['i', 'j', 'k']
        # C[i, j] = sum_k Gamma[i, j, k] v[k]
        np.testing.assert_allclose(flat(msg).reshape(gamma.shape) @ v,
                                   rd.dynamics(model, q, v).C, atol=1e-9)
    finally:
        assert probe.set_params(christoffel_stream=True).successful


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
        assert after['gravity_torque'] - before['gravity_torque'] == 6
        assert after['christoffel'] - before['christoffel'] == 2
    finally:
        assert probe.set_params(christoffel_decimation=1).successful


def test_output_switches(arm, model):
    proc, probe = arm
    names = list(model.joint_names)
    assert probe.set_params(publish_mass_matrix=False, publish_mass_matrix_dot=False).successful
    try:
        before = probe.counts()
        q, v, e = rand_state(model, 30)
        assert probe.send_and_wait(probe.joint_state(names, q, v, e, next_stamp()))
        assert probe.wait_counts({'coriolis_matrix': before['coriolis_matrix'] + 1})
        probe.spin_for(0.2)
        after = probe.counts()
        assert after['mass_matrix'] == before['mass_matrix']
        assert after['mass_matrix_dot'] == before['mass_matrix_dot']
    finally:
        assert probe.set_params(publish_mass_matrix=True,
                                publish_mass_matrix_dot=True).successful


def test_parameter_validation(arm, model):
    proc, probe = arm
    for params, text in [({'christoffel_decimation': 0}, ''),
                         ({'qos_depth': 3}, 'read'),
                         ({'effort_source': 'telepathy'}, 'effort_source'),
                         ({'gravity': [0.0, -9.81]}, 'gravity'),
                         ({'observer_gain': [-1.0]}, 'observer_gain'),
                         ({'observer_gain': [1.0, 2.0]}, 'observer_gain'),
                         ({'robot_description': '<robot name="x"><oops/></robot'}, 'model')]:
        res = probe.set_params(**params)
        assert not res.successful, params
        assert text in res.reason, (params, res.reason)
    assert proc.alive()
    # the node still works with the old settings
    q, v, e = rand_state(model, 40)
    g_msg = probe.send_and_wait(probe.joint_state(model.joint_names, q, v, e, next_stamp()))
    np.testing.assert_allclose(np.asarray(g_msg.effort), rd.gravity(model, q), rtol=0,
                               atol=1e-12)


def test_gravity_parameter_rebuilds_model(arm, model):
    proc, probe = arm
    moon = [0.0, 0.0, -1.62]
    res = probe.set_params(gravity=moon)
    assert res.successful, res.reason
    try:
        q, v, e = rand_state(model, 50)
        g_msg = probe.send_and_wait(probe.joint_state(model.joint_names, q, v, e, next_stamp()))
        expected = rd.gravity(rd.load_urdf(ARM7, gravity=moon), q)
        np.testing.assert_allclose(np.asarray(g_msg.effort), expected, rtol=0, atol=1e-12)
    finally:
        res = probe.set_params(gravity=[0.0, 0.0, -9.81])
        assert res.successful


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
    assert probe.wait_counts({'contact': 1})
    assert probe.received['contact'][-1].data is True
    # isolation: a torque on joint 2 only -> deepest active joint 2 -> its child link
    assert probe.spin_until(lambda: any(m.data == 'arm_link_2' for m in probe.received['contact_link']))
    # force estimate at the isolated link: the core library's least squares for the same residual
    assert probe.spin_until(lambda: probe.find_stamped('contact_wrench', stamps[-1]) is not None)
    w = probe.find_stamped('contact_wrench', stamps[-1])
    assert w.header.frame_id == 'base'
    F = rd.estimate_contact_wrench(model, q, r, 'arm_link_2', [0.0, 0.0, 0.0], force_only=True)
    got = [w.wrench.force.x, w.wrench.force.y, w.wrench.force.z,
           w.wrench.torque.x, w.wrench.torque.y, w.wrench.torque.z]
    np.testing.assert_allclose(got, F, rtol=0, atol=1e-9)


def test_reset_observer_clears_stamp_history(arm, model):
    """After a clock reset of the source, ~/reset_observer makes older stamps acceptable."""
    proc, probe = arm
    names = list(model.joint_names)
    q, v, e = rand_state(model, 70)
    assert probe.send_and_wait(probe.joint_state(names, q, v, e, next_stamp()))
    old = 1_000_000  # 1 ms after the epoch: far behind
    assert probe.send_and_wait(probe.joint_state(names, q, v, e, old), timeout=0.5) is None
    resp = probe.trigger('reset_observer')
    assert resp.success and 'stamp history cleared' in resp.message
    assert probe.send_and_wait(probe.joint_state(names, q, v, e, old + 1000)) is not None
    # stamps continue from there; later tests keep using next_stamp() (larger)
