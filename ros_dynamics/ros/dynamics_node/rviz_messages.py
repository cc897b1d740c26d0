"""RViz messages for the contact observer's estimate: pure functions, messages in, messages out.

No node, no TF: the caller (dynamics_node) gives the placement of the contact link, which it
has from the core (``rd.link_placement(model, q, link)`` -> ``(R, p)``: rotation and origin of
the link frame in the world frame).

``contact_markers`` -> visualization_msgs/MarkerArray for ``~/markers``, in the world frame:

* namespace ``contact_force``, id i: an ARROW from the contact point x = R p_local + p along the
  force f, of length ``force_scale`` * |f| (``force_scale`` in metres per newton, default
  :data:`FORCE_SCALE` = 0.01 m/N: 10 N draws 10 cm);
* namespace ``contact_link``, id i: a translucent SPHERE at the origin p of the isolated link;
* namespace ``contact_label``, id i: a TEXT_VIEW_FACING above the contact point, ``"<link>
  <|f>| N"`` (the link name alone when no wrench is estimated);
* ids i = 0..n-1 for the n contacts of this call; with ``previous`` = the number of contacts of
  the previous call, ids n..previous-1 of the three namespaces get a DELETE, so a release
  (``contacts=[]``) removes exactly what was drawn;
* every ADD marker has ``lifetime`` (default :data:`LIFETIME` = 1 s): if the node dies or stops
  publishing, RViz drops the markers by itself (publish markers faster than 1/lifetime, e.g. at
  10-30 Hz; RViz does not need the observer's 1 kHz).

``external_wrench`` -> geometry_msgs/WrenchStamped for ``~/external_wrench``, in the contact
link's frame (``header.frame_id`` = ``frame_prefix`` + link, the TF frame robot_state_publisher
broadcasts). Reference point: **the link frame's origin**, axes: **the link's axes**, because
that is what a WrenchStamped in frame L means and where RViz's Wrench display draws it. From the
estimate (force f and torque t_c about the contact point, both in world axes, as in
ros_dynamics_msgs/ContactEstimate):

    f_L = R^T f
    t_L = R^T (t_c + (x - p) x f) = R^T t_c + p_local x f_L        (x - p = R p_local)

so a point-force estimate (t_c = 0) shows the moment p_local x f_L of the force about the link
origin (Featherstone 2008, Sec. 2.8: moving a force's reference point).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

FORCE_SCALE = 0.01     # [m/N] arrow length per newton of contact force
LIFETIME = 1.0         # [s] marker lifetime: markers of a dead publisher vanish after this
LINK_SPHERE_DIAMETER = 0.08   # [m]
TEXT_HEIGHT = 0.05     # [m] height of an upper-case letter of the label
TEXT_OFFSET = 0.06     # [m] label above the contact point (world z)
NAMESPACES = ('contact_force', 'contact_link', 'contact_label')

FORCE_COLOR = (1.0, 0.15, 0.1, 1.0)    # RGBA: red arrow
LINK_COLOR = (1.0, 0.6, 0.0, 0.35)     # translucent orange sphere
TEXT_COLOR = (1.0, 1.0, 1.0, 1.0)


@dataclass(frozen=True)
class ContactView:
    """One estimated contact, as the node knows it.

    link: the contact link (URDF name). point: contact point in the link frame [m].
    R, p: the link's rotation (3x3) and origin (3) in the world frame (``rd.link_placement``).
    force, torque: the estimated contact force [N] and torque about the point [N m], world
    axes; ``force=None`` when only the link is isolated (no wrench estimate).
    """
    link: str
    point: np.ndarray
    R: np.ndarray
    p: np.ndarray
    force: Optional[np.ndarray] = None
    torque: Optional[np.ndarray] = None

    def world_point(self):
        """x = R p_local + p [m], world frame."""
        return np.asarray(self.R, float) @ np.asarray(self.point, float) + np.asarray(self.p, float)


def contacts_from_estimate(msg, placement):
    """ContactViews of a ros_dynamics_msgs/ContactEstimate.

    ``placement(link) -> (R, p)`` gives a link's world placement at the estimate's state (the
    node: ``lambda l: rd.link_placement(model, q, l)``). The wrench link (when ``wrench_valid``)
    carries the force; every other isolated link is shown as a link only. Empty when the
    estimate says no contact.
    """
    if not msg.in_contact:
        return []
    out = []
    if msg.wrench_valid and msg.wrench_link:
        R, p = placement(msg.wrench_link)
        w = msg.wrench
        out.append(ContactView(
            msg.wrench_link, np.array([msg.wrench_point.x, msg.wrench_point.y, msg.wrench_point.z]),
            R, p, np.array([w.force.x, w.force.y, w.force.z]),
            np.array([w.torque.x, w.torque.y, w.torque.z])))
    for link in msg.isolated_links:
        if not out or link != out[0].link:
            R, p = placement(link)
            out.append(ContactView(link, np.zeros(3), R, p))
    return out


def contacts_from_forces(msg, placement):
    """ContactViews of a ros_dynamics_msgs/ContactForces: one per frame in contact, at the
    frame's origin (``placement(frame) -> (R, p)``), with its force and torque."""
    out = []
    for name, on, w in zip(msg.frames, msg.in_contact, msg.wrenches):
        if on:
            R, p = placement(name)
            out.append(ContactView(name, np.zeros(3), R, p,
                                   np.array([w.force.x, w.force.y, w.force.z]),
                                   np.array([w.torque.x, w.torque.y, w.torque.z])))
    return out


def _duration(seconds):
    from builtin_interfaces.msg import Duration
    sec = int(math.floor(seconds))
    return Duration(sec=sec, nanosec=int(round((seconds - sec) * 1e9)))


def _color(rgba):
    from std_msgs.msg import ColorRGBA
    return ColorRGBA(r=rgba[0], g=rgba[1], b=rgba[2], a=rgba[3])


def _point(x):
    from geometry_msgs.msg import Point
    return Point(x=float(x[0]), y=float(x[1]), z=float(x[2]))


def _marker(ns, i, kind, stamp, frame_id, lifetime):
    from visualization_msgs.msg import Marker
    m = Marker()
    m.header.stamp = stamp
    m.header.frame_id = frame_id
    m.ns = ns
    m.id = i
    m.type = kind
    m.action = Marker.ADD
    m.pose.orientation.w = 1.0
    m.lifetime = _duration(lifetime)
    return m


def contact_markers(contacts: Sequence[ContactView], stamp, frame_id, *, previous=0,
                    force_scale=FORCE_SCALE, lifetime=LIFETIME):
    """MarkerArray for ``~/markers`` (see the module docstring): arrow, link sphere and label
    for each contact, DELETE for ids len(contacts)..previous-1. ``stamp``: a
    builtin_interfaces/Time (the joint state's); ``frame_id``: the world frame."""
    from visualization_msgs.msg import Marker, MarkerArray
    if not force_scale > 0.0:
        raise ValueError(f'force_scale must be > 0 [m/N], got {force_scale!r}')
    if not lifetime > 0.0:
        raise ValueError(f'lifetime must be > 0 [s] (0 would keep markers forever), '
                         f'got {lifetime!r}')
    out = MarkerArray()
    for i, c in enumerate(contacts):
        x = c.world_point()
        fnorm = None
        if c.force is not None:
            f = np.asarray(c.force, float)
            fnorm = float(np.linalg.norm(f))
            a = _marker('contact_force', i, Marker.ARROW, stamp, frame_id, lifetime)
            a.points = [_point(x), _point(x + force_scale * f)]
            # with two points: scale.x shaft diameter, scale.y head diameter, scale.z head length
            length = force_scale * fnorm
            a.scale.x = max(0.004, 0.06 * length)
            a.scale.y = 2.0 * a.scale.x
            a.scale.z = min(0.3 * length, 0.05) if length > 0 else 0.0
            a.color = _color(FORCE_COLOR)
            out.markers.append(a)
        s = _marker('contact_link', i, Marker.SPHERE, stamp, frame_id, lifetime)
        s.pose.position = _point(c.p)
        s.scale.x = s.scale.y = s.scale.z = LINK_SPHERE_DIAMETER
        s.color = _color(LINK_COLOR)
        out.markers.append(s)
        t = _marker('contact_label', i, Marker.TEXT_VIEW_FACING, stamp, frame_id, lifetime)
        t.pose.position = _point(x + np.array([0.0, 0.0, TEXT_OFFSET]))
        t.scale.z = TEXT_HEIGHT
        t.color = _color(TEXT_COLOR)
        t.text = c.link if fnorm is None else f'{c.link} {fnorm:.1f} N'
        out.markers.append(t)
        if fnorm is None:   # this id may have carried an arrow before: remove it
            out.markers.append(_delete('contact_force', i, stamp, frame_id))
    for i in range(len(contacts), previous):
        for ns in NAMESPACES:
            out.markers.append(_delete(ns, i, stamp, frame_id))
    return out


def _delete(ns, i, stamp, frame_id):
    from visualization_msgs.msg import Marker
    m = Marker()
    m.header.stamp = stamp
    m.header.frame_id = frame_id
    m.ns = ns
    m.id = i
    m.action = Marker.DELETE
    return m


def link_wrench(contact: ContactView):
    """(f_L, t_L): the contact wrench about the link origin in link axes (module docstring)."""
    if contact.force is None:
        raise ValueError(f'contact on {contact.link!r} has no force estimate')
    R = np.asarray(contact.R, float)
    fL = R.T @ np.asarray(contact.force, float)
    tc = np.zeros(3) if contact.torque is None else np.asarray(contact.torque, float)
    tL = R.T @ tc + np.cross(np.asarray(contact.point, float), fL)
    return fL, tL


def external_wrench(contact: ContactView, stamp, *, frame_prefix=''):
    """geometry_msgs/WrenchStamped for ``~/external_wrench``: the contact wrench about the
    origin of the contact link's frame, in that frame's axes (frame_id = frame_prefix + link)."""
    from geometry_msgs.msg import WrenchStamped
    fL, tL = link_wrench(contact)
    m = WrenchStamped()
    m.header.stamp = stamp
    m.header.frame_id = frame_prefix + contact.link
    m.wrench.force.x, m.wrench.force.y, m.wrench.force.z = (float(v) for v in fL)
    m.wrench.torque.x, m.wrench.torque.y, m.wrench.torque.z = (float(v) for v in tL)
    return m


def released_wrench(link, stamp, *, frame_prefix=''):
    """A zero WrenchStamped on ``link``: publish it once on release, since RViz's Wrench display
    keeps showing the last message it received."""
    from geometry_msgs.msg import WrenchStamped
    m = WrenchStamped()
    m.header.stamp = stamp
    m.header.frame_id = frame_prefix + link
    return m
