"""ros_dynamics.ros.dynamics_node.rviz_messages: contact markers and wrench messages, checked against numbers
computed here independently (homogeneous transforms, moment of a force about arbitrary points).
Only message classes are used (no DDS, no node)."""
import math

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from visualization_msgs.msg import Marker

from ros_dynamics.ros.dynamics_node import rviz_messages as V

pytestmark = pytest.mark.core


def _rotation(axis, angle):
    """Rodrigues: exp(angle [axis]x)."""
    k = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K


R = _rotation([0.3, -1.0, 0.5], 1.1)
P = np.array([0.4, -0.2, 0.9])
PL = np.array([0.02, 0.05, 0.11])
F = np.array([3.0, -12.0, 4.0])
TC = np.array([0.2, 0.1, -0.3])
STAMP = Time(sec=12, nanosec=340000000)
CONTACT = V.ContactView('arm_link_7', PL, R, P, F, TC)


def _by(markers, ns, i):
    (m,) = [m for m in markers.markers if m.ns == ns and m.id == i]
    return m


def _xyz(pt):
    return np.array([pt.x, pt.y, pt.z])


def test_arrow_starts_at_contact_point_and_scales_with_force():
    out = V.contact_markers([CONTACT], STAMP, 'world', force_scale=0.02)
    a = _by(out, 'contact_force', 0)
    assert a.type == Marker.ARROW and a.action == Marker.ADD
    assert a.header.frame_id == 'world' and a.header.stamp == STAMP
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, P
    x = (T @ np.append(PL, 1.0))[:3]
    start, end = (_xyz(q) for q in a.points)
    np.testing.assert_allclose(start, x, atol=1e-12)
    d = end - start
    assert np.linalg.norm(d) == pytest.approx(0.02 * 13.0)    # |F| = sqrt(9+144+16) = 13
    np.testing.assert_allclose(d / np.linalg.norm(d), F / 13.0, atol=1e-12)
    assert a.lifetime.sec + a.lifetime.nanosec * 1e-9 == pytest.approx(V.LIFETIME)
    assert a.scale.x > 0 and a.scale.y > a.scale.x and a.scale.z > 0


def test_link_sphere_and_label():
    out = V.contact_markers([CONTACT], STAMP, 'world')
    s = _by(out, 'contact_link', 0)
    assert s.type == Marker.SPHERE and 0 < s.color.a < 1
    np.testing.assert_allclose(_xyz(s.pose.position), P)
    t = _by(out, 'contact_label', 0)
    assert t.type == Marker.TEXT_VIEW_FACING
    assert t.text == 'arm_link_7 13.0 N'
    assert all(m.lifetime.sec + m.lifetime.nanosec > 0 for m in out.markers)


def test_release_deletes_the_same_ids():
    both = [CONTACT, V.ContactView('arm_link_4', np.zeros(3), np.eye(3), np.zeros(3))]
    shown = V.contact_markers(both, STAMP, 'world')
    added = {(m.ns, m.id) for m in shown.markers if m.action == Marker.ADD}
    assert added == {('contact_force', 0), ('contact_link', 0), ('contact_label', 0),
                     ('contact_link', 1), ('contact_label', 1)}
    assert _by(shown, 'contact_label', 1).text == 'arm_link_4'
    gone = V.contact_markers([], STAMP, 'world', previous=2)
    assert all(m.action == Marker.DELETE for m in gone.markers)
    deleted = {(m.ns, m.id) for m in gone.markers}
    assert added <= deleted and {ns for ns, _ in deleted} == set(V.NAMESPACES)
    one = V.contact_markers([CONTACT], STAMP, 'world', previous=2)
    assert {(m.ns, m.id) for m in one.markers if m.action == Marker.DELETE} == {
        (ns, 1) for ns in V.NAMESPACES}


def test_wrench_in_link_frame_about_link_origin():
    w = V.external_wrench(CONTACT, STAMP, frame_prefix='left_')
    assert w.header.frame_id == 'left_arm_link_7' and w.header.stamp == STAMP
    fL = _xyz(w.wrench.force)
    tL = _xyz(w.wrench.torque)
    np.testing.assert_allclose(fL, R.T @ F, atol=1e-12)
    # the same wrench must give the same moment about any world point y as the estimate
    # (force F at x with couple TC): TC + (x - y) x F == R tL + (P - y) x (R fL)
    x = R @ PL + P
    for y in np.random.default_rng(3).normal(size=(5, 3)):
        np.testing.assert_allclose(R @ tL + np.cross(P - y, R @ fL), TC + np.cross(x - y, F),
                                   atol=1e-12)
    zero = V.released_wrench('arm_link_7', STAMP)
    assert zero.header.frame_id == 'arm_link_7' and _xyz(zero.wrench.force).tolist() == [0, 0, 0]


def test_contacts_from_estimate():
    from ros_dynamics_msgs.msg import ContactEstimate
    msg = ContactEstimate()
    assert V.contacts_from_estimate(msg, None) == []
    msg.in_contact = True
    msg.isolated_links = ['arm_link_7', 'arm_link_2']
    msg.wrench_valid = True
    msg.wrench_link = 'arm_link_7'
    msg.wrench_point.x, msg.wrench_point.y, msg.wrench_point.z = PL
    msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = F
    places = {'arm_link_7': (R, P), 'arm_link_2': (np.eye(3), np.ones(3))}
    c7, c2 = V.contacts_from_estimate(msg, places.__getitem__)
    assert c7.link == 'arm_link_7' and c2.link == 'arm_link_2' and c2.force is None
    np.testing.assert_allclose(c7.world_point(), R @ PL + P)
    np.testing.assert_allclose(c7.force, F)


def test_contacts_from_forces():
    """One view per contact frame in contact, at its origin, with its wrench."""
    from geometry_msgs.msg import Wrench
    from ros_dynamics_msgs.msg import ContactForces
    msg = ContactForces()
    msg.frames = ['LF_foot', 'RF_foot', 'LH_foot']
    msg.in_contact = [True, False, True]
    msg.wrenches = [Wrench() for _ in range(3)]
    msg.wrenches[0].force.z, msg.wrenches[2].force.x, msg.wrenches[2].torque.y = 20.0, -1.5, 0.2
    places = {'LF_foot': (R, P), 'LH_foot': (np.eye(3), np.ones(3))}
    lf, lh = V.contacts_from_forces(msg, places.__getitem__)
    assert (lf.link, lh.link) == ('LF_foot', 'LH_foot')
    np.testing.assert_allclose(lf.world_point(), P)
    np.testing.assert_allclose(lf.force, [0.0, 0.0, 20.0])
    np.testing.assert_allclose(lh.force, [-1.5, 0.0, 0.0])
    np.testing.assert_allclose(lh.torque, [0.0, 0.2, 0.0])


def test_bad_parameters_are_named():
    with pytest.raises(ValueError, match='force_scale'):
        V.contact_markers([CONTACT], STAMP, 'world', force_scale=0.0)
    with pytest.raises(ValueError, match='lifetime'):
        V.contact_markers([CONTACT], STAMP, 'world', lifetime=0.0)
    with pytest.raises(ValueError, match='no force'):
        V.external_wrench(V.ContactView('l', PL, R, P), STAMP)
