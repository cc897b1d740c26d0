"""Inputs as a real lab wires them, over loopback DDS against a real dynamics_node process:
an arm driver and a gripper driver on one joint_states topic, a second source whose stamps
trail, simulated time with episode resets, service requests beyond their bounds while the
stream runs, and a refused description that must not block other settings."""
import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics import testing
from test_node_support import (ARM7, accepted_at_exit, next_stamp, read, running_node,
                               wait_answered)

pytestmark = pytest.mark.ros
MS = 1_000_000


@pytest.fixture(scope='module')
def nine():
    xml = testing.chain(9, seed=3)
    return xml, rd.load_urdf_string(xml)


def test_arm_and_gripper_sources(rclpy_context, ros_env, tmp_path, nine):
    xml, model = nine
    names = list(model.joint_names)
    arm_j, grip_j = names[:7], names[7:]
    params = {'robot_description': xml, 'log_throttle_sec': 0.5,
              'catch_up': False}        # (an answer per joint state, however late)
    with running_node(rclpy_context, ros_env, str(tmp_path), 'split', params) as (proc, probe):
        rng = np.random.default_rng(4)
        t0 = next_stamp()
        arm_msgs, grip = [], rng.uniform(-1, 1, 2)
        for k in range(600):
            stamp = t0 + k * MS
            if k % 20 == 0:       # the gripper at 1/20 of the arm's rate, 2 ms behind
                probe.js_pub.publish(probe.joint_state(grip_j, grip, 0 * grip, 0 * grip,
                                                       stamp - 2 * MS))
            q, v, e = rng.uniform(-1, 1, (3, 7))
            msg = probe.joint_state(arm_j, q, v, e, stamp)
            arm_msgs.append((msg, q, v))
            probe.js_pub.publish(msg)
            if k % 2 == 0:
                probe.spin_for(0.001)
        answers = wait_answered(probe, [t0 + k * MS for k in range(600)])
        # the published state is the arm's message plus the held gripper values, in every
        # answer received (the newest at least)
        for stamp, out in answers.items():
            msg, q, v = arm_msgs[(stamp - t0) // MS]
            np.testing.assert_allclose(np.asarray(out.position), np.r_[q, grip], atol=0)
        out = answers[t0 + 599 * MS]
        M = rd.mass_matrix(model, np.r_[arm_msgs[599][1], grip])
        np.testing.assert_allclose(np.asarray(out.mass_matrix).reshape(9, 9), M, atol=1e-12)
        # every arm joint state went through the cycle (the node's own count); the gripper's
        # alone make no cycle: the first incomplete (no arm joints yet), the others held
        accepted, refused = accepted_at_exit(proc)
        assert accepted == 600 and refused == {'incomplete': 1, 'held (partial source)': 29}, (
            accepted, refused, proc.log()[-2000:])


def test_trailing_source_leaves_detection_unchanged(rclpy_context, ros_env, tmp_path):
    """A constant external torque on the arm, with and without a second source (joints the
    model does not have) whose stamps trail the arm's by 1-5 ms: contact in every sample
    after the observer settled, the observer never restarted by the second source."""
    model = rd.load_urdf(ARM7)
    names = list(model.joint_names)
    ext = np.array([0.0, 6.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    params = {'robot_description': read(ARM7), 'catch_up': False, 'observer_gain': [100.0],
              'contact_threshold': [3.0]}
    with running_node(rclpy_context, ros_env, str(tmp_path), 'trail', params) as (proc, probe):
        for trailing in (False, True):
            t0 = next_stamp()
            q = np.array([0.1, 0.5, 0.0, -1.0, 0.0, 0.6, 0.0])
            g = rd.gravity(model, q)
            for k in range(400):      # at rest: tau = g - tau_ext gives residual -> tau_ext
                probe.js_pub.publish(probe.joint_state(names, q, np.zeros(7), g - ext,
                                                       t0 + k * MS))
                if trailing and k % 3 == 0:
                    probe.js_pub.publish(probe.joint_state(
                        ['finger_left', 'finger_right'], [0.01, 0.01], [0.0, 0.0], [0.0, 0.0],
                        t0 + k * MS - (1 + k % 5) * MS))
                if k % 2 == 0:
                    probe.spin_for(0.001)
            last = t0 + 399 * MS
            torques = wait_answered(probe, [t0 + k * MS for k in range(400)], 'external_torque')
            np.testing.assert_allclose(np.asarray(torques[last].effort), ext, atol=0.05)
            # every estimate received once the observer settled (5/K) says contact: the second
            # source never restarted the observer
            settled = [m for m in probe.received['contact_estimate']
                       if t0 + 100 * MS <= m.header.stamp.sec * 10**9 + m.header.stamp.nanosec]
            assert settled and all(m.in_contact for m in settled), trailing
            probe.trigger('reset_observer')
        # every arm joint state of both streams went through the cycle; the trailing source
        # (joints the model does not have) made no cycle and restarted nothing
        accepted, refused = accepted_at_exit(proc)
        assert accepted == 800, (accepted, refused)
        assert 'source reset' not in proc.log()


def test_simulated_time_episodes(rclpy_context, ros_env, tmp_path):
    """use_sim_time with /clock: 0.4 s episodes, the clock jumping back to 0 at each; a paused
    clock still installs a model and applies settings at once.  Each episode's joint states go
    out once the node's clock has jumped (its service answers carry the node's time): /clock
    and joint_states are two topics, and a joint state that overtakes the jump is an earlier
    stamp of its source, refused (docs/input_policy.md)."""
    from rosgraph_msgs.msg import Clock
    from rclpy.qos import QoSProfile
    model = rd.load_urdf(ARM7)
    names = list(model.joint_names)
    params = {'robot_description': read(ARM7), 'use_sim_time': True}
    with running_node(rclpy_context, ros_env, str(tmp_path), 'simt', params) as (proc, probe):
        clock = probe.node.create_publisher(Clock, '/clock', QoSProfile(depth=100))
        assert probe.spin_until(lambda: clock.get_subscription_count() >= 1)
        rng = np.random.default_rng(5)
        sent = 0

        def tick(k):
            c = Clock()
            c.clock.sec, c.clock.nanosec = 0, k * MS
            clock.publish(c)

        def node_time_after_tick(k):
            tick(k)                       # (again: /clock may be best effort, a first one lost)
            stamp = probe.get('dynamics', names, np.zeros(7), np.zeros(7)).dynamics.header.stamp
            return stamp.sec * 10**9 + stamp.nanosec

        for episode in range(4):          # each starts with the clock jumping back
            assert probe.spin_until(lambda: node_time_after_tick(1) == MS)
            for k in range(1, 401):
                if k > 1:
                    tick(k)
                q, v, e = rng.uniform(-1, 1, (3, 7))
                probe.js_pub.publish(probe.joint_state(names, q, v, e, k * MS))
                sent += 1
                if k % 2 == 0:
                    probe.spin_for(0.001)
        wait_answered(probe, [400 * MS])          # the newest, of the last episode
        # the clock is paused now (no /clock): settings still apply at once
        res = probe.set_params(gravity=[0.0, 0.0, -1.62])
        assert res.successful
        assert probe.spin_until(lambda: proc.log().count('model ready') >= 2)
        # every joint state of every episode went through the cycle (the node's own count)
        accepted, refused = accepted_at_exit(proc)
        assert accepted == sent, (accepted, sent, refused, proc.log()[-3000:])
        assert 'the node clock jumped back' in proc.log()


def test_service_bounds_while_streaming(rclpy_context, ros_env, tmp_path):
    from geometry_msgs.msg import Point
    from ros_dynamics_msgs.srv import GetOperationalSpace
    model = rd.load_urdf(ARM7)
    names = list(model.joint_names)
    params = {'robot_description': read(ARM7)}
    with running_node(rclpy_context, ros_env, str(tmp_path), 'srvb', params) as (proc, probe):
        q = np.zeros(7)
        assert probe.send_until_answered(lambda: probe.joint_state(names, q, q, q, next_stamp()))
        srv = f'{probe.prefix}/get_operational_space'
        req = GetOperationalSpace.Request(links=['tool'] * 3000)
        resp = probe.call(GetOperationalSpace, srv, req)
        assert not resp.success and 'max_request_links' in resp.message
        req = GetOperationalSpace.Request(links=['tool'], points=[Point(x=1e308)])
        resp = probe.call(GetOperationalSpace, srv, req)
        assert not resp.success and 'farther than' in resp.message
        resp = probe.get('dynamics', names, np.r_[1e300, np.zeros(6)], np.zeros(7))
        assert not resp.success and 'position bound' in resp.message
        resp = probe.get('dynamics', ['arm_joint_1x'] + names[1:], q, q)
        assert not resp.success and "closest: 'arm_joint_1'" in resp.message
        # the stream goes on between requests
        assert probe.send_and_wait(probe.joint_state(names, q, q, q, next_stamp()))


def test_refused_description_blocks_no_other_setting(rclpy_context, ros_env, tmp_path):
    from std_msgs.msg import String
    params = {'robot_description': ''}
    with running_node(rclpy_context, ros_env, str(tmp_path), 'indep', params) as (proc, probe):
        probe.desc_pub.publish(String(data=read(ARM7)))
        assert probe.spin_until(lambda: 'model ready' in proc.log())
        probe.desc_pub.publish(String(data=read(ARM7)[:-40]))      # truncated
        assert probe.spin_until(lambda: 'keeping the previous model' in proc.log())
        res = probe.set_params(gravity=[0.0, 0.0, -3.71], world_frame='mars')
        assert res.successful, res.reason
        assert probe.spin_until(lambda: proc.log().count('model ready') >= 2)
        model = rd.load_urdf(ARM7, gravity=[0.0, 0.0, -3.71])
        q = np.full(7, 0.3)
        dyn = probe.send_and_wait(probe.joint_state(model.joint_names, q, 0 * q, 0 * q,
                                                    next_stamp()))
        assert dyn.header.frame_id == 'mars'
        np.testing.assert_allclose(np.asarray(dyn.gravity), rd.gravity(model, q), atol=1e-12)
