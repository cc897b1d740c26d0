"""A payload the URDF does not know, over DDS: the payload_* parameters (what `calibrate`
writes) change the node's model; ~/estimate_payload finds a tool from static poses and applies
it; the terms then match the core with the payload attached."""
import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics.identification.payload import apply_payload
from test_node_support import ARM7, next_stamp, read, running_node

pytestmark = pytest.mark.ros
MASS, COM = 1.5, [0.01, -0.02, 0.08]


def test_payload_parameters_and_estimate_service(rclpy_context, ros_env, tmp_path):
    from ros_dynamics_msgs.srv import EstimatePayload
    urdf = rd.load_urdf(ARM7)
    truth = apply_payload(urdf, 'arm_link_7', MASS, COM)
    names = list(urdf.joint_names)
    params = {'robot_description': read(ARM7), 'log_throttle_sec': 0.5}
    with running_node(rclpy_context, ros_env, str(tmp_path), 'pay', params) as (proc, probe):
        srv = f'{probe.prefix}/estimate_payload'
        resp = probe.call(EstimatePayload, srv, EstimatePayload.Request(link='arm_link_7'))
        assert not resp.success and 'no joint states' in resp.message
        # static poses, the wrist turned between them; efforts hold the robot and its tool
        rng = np.random.default_rng(8)
        t = next_stamp(10**10)
        # a first answer, sent until it arrives (the node's writer may match our reader after
        # ours matched it): the robot at rest at zero, holding its tool
        q0 = np.zeros(7)
        stamps = iter(range(t - 10**9, t, 1_000_000))
        assert probe.send_until_answered(lambda: probe.joint_state(
            names, q0, q0, rd.gravity(truth, q0), next(stamps)))
        for pose in range(8):
            q = rng.uniform(-1.2, 1.2, 7)
            tau = rd.gravity(truth, q)
            for k in range(40):            # 40 ms at rest per pose
                t += 1_000_000
                probe.js_pub.publish(probe.joint_state(names, q, np.zeros(7), tau, t))
            assert probe.spin_until(lambda: probe.find_stamped('dynamics', t) is not None)
        resp = probe.call(EstimatePayload, srv, EstimatePayload.Request(
            link='arm_link_7', apply=True))
        assert resp.success, resp.message
        assert abs(resp.mass - MASS) < 1e-6 * MASS
        np.testing.assert_allclose([resp.com.x, resp.com.y, resp.com.z], COM, atol=1e-6)
        assert resp.applied and resp.poses >= 8
        assert probe.spin_until(lambda: 'rebuilding the model: payload' in proc.log())
        assert probe.spin_until(lambda: proc.log().count('model ready') >= 2, timeout=30)
        q = np.full(7, 0.4)
        dyn = probe.send_and_wait(probe.joint_state(names, q, 0 * q, rd.gravity(truth, q),
                                                    t + 10**9))
        np.testing.assert_allclose(np.asarray(dyn.gravity), rd.gravity(truth, q), atol=1e-6)
        # at rest holding the tool the observer now sees nothing (without the payload in the
        # model its gravity torque, several N m, would be the residual)
        s2 = t + 10**9 + 1_000_000
        probe.js_pub.publish(probe.joint_state(names, q, 0 * q, rd.gravity(truth, q), s2))
        assert probe.spin_until(lambda: probe.find_stamped('external_torque', s2) is not None)
        r = np.asarray(probe.find_stamped('external_torque', s2).effort)
        assert np.abs(r).max() < 1e-6
        assert np.abs(rd.gravity(truth, q) - rd.gravity(urdf, q)).max() > 1.0


def test_payload_from_a_parameter_file(rclpy_context, ros_env, tmp_path):
    inertia = [0.004, 0.0, 0.0, 0.005, 0.0, 0.003]
    truth = apply_payload(rd.load_urdf(ARM7), 'arm_link_7', MASS, COM, inertia)
    params = {'robot_description': read(ARM7), 'payload_link': 'arm_link_7',
              'payload_mass': MASS, 'payload_com': COM, 'payload_inertia': inertia}
    with running_node(rclpy_context, ros_env, str(tmp_path), 'payf', params) as (proc, probe):
        rng = np.random.default_rng(9)
        q, v = rng.uniform(-1, 1, (2, 7))
        dyn = probe.send_until_answered(       # the first answer after the start
            lambda: probe.joint_state(truth.joint_names, q, v, None, next_stamp()))
        d = rd.dynamics(truth, q, v)
        np.testing.assert_allclose(np.asarray(dyn.mass_matrix).reshape(7, 7), d.M, atol=1e-12)
        np.testing.assert_allclose(np.asarray(dyn.gravity), d.g, atol=1e-12)
        res = probe.set_params(payload_inertia=[1.0, 0.0, 0.0, 0.0, 0.0, 0.0])
        assert not res.successful and 'triangle' in res.reason
