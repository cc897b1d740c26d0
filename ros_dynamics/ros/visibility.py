"""What the dynamics node shows beyond its data topics: contacts for RViz and its health.

* ``~/markers`` (visualization_msgs/MarkerArray, world frame): per estimated contact an arrow
  at the contact point along the force, the contact link marked, a label with |F|; deleted on
  release (ros_dynamics.ros.visualization); with contact frames also an arrow per frame in
  contact, at its origin;
* ``~/external_wrench`` (geometry_msgs/WrenchStamped): the estimated contact wrench about the
  contact link's origin in that link's axes (frame_id = the link), as RViz's Wrench display
  draws it with the robot's TF; a zero wrench once on release;
* ``/diagnostics`` (diagnostic_msgs/DiagnosticArray, 1 Hz): input, model, observer status and
  the contact frames' states
  by the rules of ros_dynamics.ros.diagnostics.NodeHealth (docs/diagnostics.md).

The contact outputs are built only while someone subscribes, at onset and release and at most
30 times a second in between (RViz draws no faster; markers live 1 s); the health recorders
only add to counters per cycle.
"""
import time

import numpy as np

from ..core.api import link_placement
from .diagnostics import NodeHealth
from .engine import stamp_msg
from .visualization import ContactView, contact_markers, external_wrench, released_wrench


_EYE = np.eye(3)
DRAW_PERIOD = 1.0 / 30.0      # s: contacts drawn at most at 30 Hz (and at onset and release)


class Visibility:
    """Markers, wrench and diagnostics of one node (module text)."""

    def __init__(self, create_publisher, logger, node_name, qos):
        """``create_publisher``, ``logger``, ``node_name``: the node's."""
        from geometry_msgs.msg import WrenchStamped
        self.pub_markers = self.pub_diag = None
        try:   # message packages a minimal ROS installation may lack: those outputs are off
            from visualization_msgs.msg import MarkerArray
            self.pub_markers = create_publisher(MarkerArray, '~/markers', qos)
        except ImportError:
            logger.warning('visualization_msgs is not installed: ~/markers is off (install '
                           'ros-<distro>-visualization-msgs)')
        try:
            from diagnostic_msgs.msg import DiagnosticArray
            self.pub_diag = create_publisher(DiagnosticArray, '/diagnostics', 10)
        except ImportError:
            logger.warning('diagnostic_msgs is not installed: /diagnostics is off (install '
                           'ros-<distro>-diagnostic-msgs)')
        self.pub_wrench = create_publisher(WrenchStamped, '~/external_wrench', qos)
        self.health = NodeHealth(node_name=node_name)
        self._shown = 0             # markers shown (ids to delete on release)
        self._wrench_link = None    # link of the last published non-zero wrench
        self._next_draw = 0.0       # monotonic time of the next contact drawing

    # ------------------------------------------------------------------ per cycle
    def cycle(self, eng, cfg, stamp, res, q, stamp_ns, latency_s):
        """One accepted cycle: ``stamp`` (sec, nanosec) of its joint state."""
        h = self.health
        h.accepted(stamp_ns, latency_s)
        if res.observer == 'reset':
            h.observer_reset(res.reset_reason)
        elif res.observer == 'bridge':
            h.observer_bridged()
        contact, feet = res.contact, res.forces
        if contact is None:
            return
        # with contact frames the detector judges what they leave unexplained
        h.observer(res.residual if feet is None else feet.unexplained,
                   eng.cycle.settings.threshold, contact.in_contact)
        if feet is not None:
            h.contact_frames(feet)
        loaded = feet is not None and feet.in_contact.any()
        changed = feet is not None and (feet.onset.any() or feet.release.any())
        if contact.onset or contact.release or changed or (
                (contact.in_contact or loaded) and time.monotonic() >= self._next_draw):
            self._next_draw = time.monotonic() + DRAW_PERIOD
            self._contacts(eng, cfg, stamp, res, q)

    def _contacts(self, eng, cfg, stamp, res, q):
        stamp = stamp_msg(stamp)
        views = []
        if res.contact.in_contact:
            links = list(res.contact.links)
            if res.wrench is not None:
                R, p = link_placement(eng.model, q, res.wrench_link)
                views.append(ContactView(res.wrench_link, eng.cycle.settings.wrench_point, R, p,
                                         res.wrench[:3], res.wrench[3:]))
            for link in links:
                if not views or link != views[0].link:
                    R, p = link_placement(eng.model, q, link)
                    views.append(ContactView(link, np.zeros(3), R, p))
        feet = res.forces
        if feet is not None:      # an arrow per loaded contact frame, at its origin
            views += [ContactView(name, np.zeros(3), _EYE, p, w[:3], w[3:]) for name, c, p, w in
                      zip(feet.frames, feet.in_contact, feet.positions, feet.wrenches) if c]
        if (cfg.publish_markers and self.pub_markers is not None
                and self.pub_markers.get_subscription_count()):
            self.pub_markers.publish(contact_markers(views, stamp, eng.frame_id,
                                                     previous=self._shown,
                                                     force_scale=cfg.marker_force_scale))
            self._shown = len(views)
        if cfg.publish_external_wrench and self.pub_wrench.get_subscription_count():
            if views and views[0].force is not None and res.wrench is not None:
                self.pub_wrench.publish(external_wrench(views[0], stamp))
                self._wrench_link = views[0].link
            elif self._wrench_link is not None:
                self.pub_wrench.publish(released_wrench(self._wrench_link, stamp))
                self._wrench_link = None

    # ------------------------------------------------------------------ events, 1 Hz
    def model(self, eng, cfg):
        self.health.model(eng.nv, len(eng.model.warnings), cfg.coordinates,
                          eng.joint_coordinate_names)

    def tick(self, eng, cfg, stamp, hardware_id):
        """Publish /diagnostics stamped ``stamp`` (the node's 1 Hz steady timer; ``eng`` the
        current engine or None, ``cfg`` the parameters, ``hardware_id`` the node's name)."""
        self.health.thread_cpu(time.thread_time())     # the executor thread: this one
        self.health.compiled_cycle(None if eng is None else eng.joint_state_cycle.summary())
        if cfg.publish_diagnostics and self.pub_diag is not None:
            self.pub_diag.publish(self.health.to_msg(stamp, hardware_id=hardware_id,
                                                     now_s=time.monotonic()))
