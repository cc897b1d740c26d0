"""What RViz and diagnostics tools see, over DDS: on a scripted contact (a known force at a
known link origin, the robot at rest) the marker arrow starts at that point and points along
the force with the documented length, the WrenchStamped in the link's frame is R^T F, markers
and wrench are cleared on release; /diagnostics goes WARN on a burst of bad input and back to
OK, names the model, and reports the cycles made in one compiled call."""
import numpy as np
import pytest

import ros_dynamics as rd
from test_node_support import ARM7, next_stamp, read, running_node

pytestmark = pytest.mark.ros
LINK, F = 'arm_link_6', np.array([8.0, -5.0, 12.0])


def test_contact_markers_wrench_and_diagnostics(rclpy_context, ros_env, tmp_path):
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
    from geometry_msgs.msg import WrenchStamped
    from visualization_msgs.msg import Marker, MarkerArray

    from ros_dynamics_msgs.msg import ContactEstimate
    model = rd.load_urdf(ARM7)
    names = list(model.joint_names)
    params = {'robot_description': read(ARM7), 'observer_gain': [200.0],
              'contact_threshold': [1.0], 'contact_wrench_link': LINK,
              'marker_force_scale': 0.02, 'log_throttle_sec': 0.5}
    with running_node(rclpy_context, ros_env, str(tmp_path), 'vis', params) as (proc, probe):
        got = {'markers': [], 'wrench': [], 'diag': []}
        node = probe.node
        node.create_subscription(MarkerArray, '/vis/dynamics/markers', got['markers'].append, 100)
        node.create_subscription(WrenchStamped, '/vis/dynamics/external_wrench',
                                 got['wrench'].append, 100)
        node.create_subscription(DiagnosticArray, '/diagnostics',
                                 lambda m: got['diag'].append(m) if any(
                                     '/vis/dynamics' in s.hardware_id for s in m.status) else None,
                                 10)
        assert probe.spin_until(lambda: len(got['diag']) >= 1)
        q = np.array([0.3, 0.6, -0.2, -1.1, 0.4, 0.8, 0.1])
        J = rd.link_jacobian(model, q, LINK)
        tau_ext = J[:3].T @ F                  # a force at the link origin
        g = rd.gravity(model, q)
        t = next_stamp(10**10)
        for k in range(300):                   # at rest, pushed: tau = g - tau_ext
            t += 1_000_000
            probe.js_pub.publish(probe.joint_state(names, q, np.zeros(7), g - tau_ext, t))
            if k % 4 == 0:
                probe.spin_for(0.001)
        assert probe.spin_until(lambda: probe.find_stamped('dynamics', t) is not None)
        assert probe.spin_until(lambda: len(got['wrench']) >= 2 and len(got['markers']) >= 2)
        R, p = rd.link_placement(model, q, LINK)
        w = got['wrench'][-1]                  # settled (gain 200/s, 0.3 s: e^-60)
        assert w.header.frame_id == LINK
        fL = [w.wrench.force.x, w.wrench.force.y, w.wrench.force.z]
        np.testing.assert_allclose(fL, R.T @ F, atol=1e-3 * np.linalg.norm(F))
        arrows = [m for m in got['markers'][-1].markers if m.ns == 'contact_force']
        assert arrows and arrows[0].action == Marker.ADD and arrows[0].type == Marker.ARROW
        a, b = (np.array([pt.x, pt.y, pt.z]) for pt in arrows[0].points)
        np.testing.assert_allclose(a, p, atol=1e-9)
        np.testing.assert_allclose(b - a, 0.02 * F, atol=1e-3 * 0.02 * np.linalg.norm(F))
        assert got['markers'][-1].markers[0].header.frame_id == 'base'
        # during the push: a 40 ms hiccup of the stream and a new wrench point; neither
        # restarts the observer (no release, no new onset, the wrench stays the push)
        contacts = []
        node.create_subscription(ContactEstimate, '/vis/dynamics/contact_estimate',
                                 contacts.append, 1000)
        assert probe.set_params(contact_wrench_point=[0.0, 0.0, 0.05]).successful
        for k in range(300):
            t += 41_000_000 if k == 100 else 1_000_000
            probe.js_pub.publish(probe.joint_state(names, q, np.zeros(7), g - tau_ext, t))
            if k % 4 == 0:
                probe.spin_for(0.001)
        assert probe.spin_until(lambda: any(
            c.header.stamp.sec * 10**9 + c.header.stamp.nanosec == t for c in contacts))
        assert contacts and all(c.in_contact for c in contacts), 'released during the push'
        assert probe.spin_until(lambda: any(
            kv.key == 'gaps bridged' and int(kv.value) >= 1 for s in got['diag'][-1].status
            for kv in s.values))
        resets = {kv.key: kv.value for s in got['diag'][-1].status if s.name.endswith('observer')
                  for kv in s.values}['resets']
        assert resets == '1', resets                          # the start only
        arrows = [m for m in got['markers'][-1].markers if m.ns == 'contact_force']
        start = np.array([arrows[0].points[0].x, arrows[0].points[0].y, arrows[0].points[0].z])
        np.testing.assert_allclose(start, p + R @ [0.0, 0.0, 0.05], atol=1e-9)  # the new point
        # release: free at rest; the markers are deleted, the wrench zeroed
        for k in range(300):
            t += 1_000_000
            probe.js_pub.publish(probe.joint_state(names, q, np.zeros(7), g, t))
            if k % 4 == 0:
                probe.spin_for(0.001)
        assert probe.spin_until(lambda: any(
            m.action == Marker.DELETE for m in got['markers'][-1].markers))
        last = got['wrench'][-1]
        assert last.header.frame_id == LINK and last.wrench.force.x == 0.0
        # diagnostics: a burst of bad input turns the input status WARN, then OK again
        ok = DiagnosticStatus.OK
        warn = DiagnosticStatus.WARN

        def level(part):
            m = got['diag'][-1]
            return next(s.level for s in m.status if s.name.endswith(part))
        model_status = next(s for s in got['diag'][-1].status if s.name.endswith('model'))
        assert model_status.level == ok and any(kv.value == '7' for kv in model_status.values)
        for k in range(50):
            t += 1_000_000
            probe.js_pub.publish(probe.joint_state(names, q, np.zeros(7), g, t - 10**9))
        n = len(got['diag'])
        assert probe.spin_until(lambda: len(got['diag']) > n and level('input') == warn)
        back = False                            # good input again: OK after the window
        for k in range(4000):
            t += 1_000_000
            probe.js_pub.publish(probe.joint_state(names, q, np.zeros(7), g, t))
            probe.spin_for(0.004)
            if level('input') == ok:
                back = True
                break
        assert back, [(s.name, s.level, s.message) for s in got['diag'][-1].status]

        # the cycles ran in one compiled call (the node serves none before it is loaded)
        def compiled():
            part = next(s for s in got['diag'][-1].status if s.name.endswith('input'))
            text = dict((kv.key, kv.value) for kv in part.values).get('cycles', '')
            return int(text.split()[0]) if 'in one compiled call' in text else 0
        deadline = 4000
        while compiled() < 100 and deadline:
            t += 1_000_000
            deadline -= 1
            probe.js_pub.publish(probe.joint_state(names, q, np.zeros(7), g, t))
            probe.spin_for(0.02)
        assert compiled() >= 100, [kv for s in got['diag'][-1].status for kv in s.values]
