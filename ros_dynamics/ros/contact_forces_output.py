"""~/contact_forces (ros_dynamics_msgs/ContactForces) of one observer update with contact frames:
the frames, their contact states, the wrench each (world axes, at the frame origin; zero out of
contact) and the residual they leave unexplained (estimation/contact_forces.py).  One message
object, its wrenches allocated at the first update and written in place afterwards."""
from __future__ import annotations

import array

from . import interfaces as itf


class ContactForcesOutput:
    """The message of :class:`~ros_dynamics.estimation.contact_forces.ContactForces` results."""

    def __init__(self, frame_id, message_type=None, wrench_type=None):
        self.msg = (message_type or itf.ContactForces)()
        self.msg.header.frame_id = frame_id
        self._wrench = wrench_type or itf.Wrench
        self._frames = None

    def message(self, stamp, forces):
        """The message for ``forces`` (a ContactForces) at ``stamp`` ((sec, nanosec))."""
        m = self.msg
        if self._frames != forces.frames:
            self._frames = forces.frames
            m.frames = list(forces.frames)
            m.wrenches = [self._wrench() for _ in forces.frames]
        m.header.stamp.sec, m.header.stamp.nanosec = stamp
        m.in_contact = [bool(x) for x in forces.in_contact]
        for w, row in zip(m.wrenches, forces.wrenches):
            f, t = w.force, w.torque
            f.x, f.y, f.z, t.x, t.y, t.z = (float(x) for x in row)
        m.unexplained = array.array('d', forces.unexplained)
        return m
