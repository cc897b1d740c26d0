"""~/contact_forces (ros_dynamics_msgs/ContactForces) of one observer update with contact frames:
the frames, their contact states, the wrench each (world axes, at the frame origin; zero out of
contact) and the residual they leave unexplained (estimation/contact_forces.py).

Like the node's other per-cycle outputs the message is serialized once per set of frames
(:class:`~ros_dynamics.ros.dynamics_node.wire.Template`) and each update written into its bytes: the
unexplained part through the template's float64 view, the wrenches at the words where
sentinel values were found, the contact states at the bytes after the sequence length that was
found once; where the middleware's serialization is not plain CDR (or a mark is not found
exactly once) the message object is filled and published instead."""
from __future__ import annotations

import array
import struct

import numpy as np

from .. import interfaces as itf
from .wire import Template


class ContactForcesOutput:
    """The message of :class:`~ros_dynamics.estimation.contact_forces.ContactForces` results.
    ``serialize``: ``rclpy.serialization.serialize_message`` (None: message objects only)."""

    def __init__(self, frame_id, serialize=None, message_type=None, wrench_type=None):
        self.frame_id, self.serialize = frame_id, serialize
        self._type = message_type or itf.ContactForces
        self._wrench = wrench_type or itf.Wrench
        self._frames = None

    def _layout(self, frames, nv):
        """A message for these frames (and nv), and its template if it can be written in
        place."""
        k = len(frames)
        m = self.msg = self._type()
        m.header.frame_id = self.frame_id
        m.frames = list(frames)
        m.in_contact = [True] * k
        m.unexplained = array.array('d', bytes(8 * nv))
        marks = -np.arange(1, 6 * k + 1, dtype=float) * 1.0e-300
        m.wrenches = [self._wrench() for _ in frames]
        for i, w in enumerate(m.wrenches):
            f, t = w.force, w.torque
            f.x, f.y, f.z, t.x, t.y, t.z = (float(x) for x in marks[6 * i:6 * i + 6])
        self.template = None
        if self.serialize is None:
            return
        try:
            tpl = Template(m, self.serialize)
        except ValueError:
            return
        words = tpl.payload
        found = [np.flatnonzero(words == x) for x in marks]
        raw = words.view(np.uint8)
        pattern = struct.pack('<I', k) + b'\x01' * k
        at = [i for i in range(len(raw) - len(pattern) + 1)
              if raw[i:i + len(pattern)].tobytes() == pattern]
        if any(len(f) != 1 for f in found) or len(at) != 1:
            return
        index = np.array([f[0] for f in found], dtype=np.int64)
        words[index] = 0.0
        self.index = index
        self.states = raw[at[0] + 4:at[0] + 4 + k]
        self.states[:] = 0
        self.template = tpl

    def message(self, stamp, forces):
        """The message for ``forces`` (a ContactForces) at ``stamp`` ((sec, nanosec)):
        serialized bytes, or the message object."""
        if self._frames != forces.frames:
            self._frames = forces.frames
            self._layout(forces.frames, len(forces.unexplained))
        tpl = self.template
        if tpl is not None:
            tpl.payload[self.index] = forces.wrenches.reshape(-1)
            self.states[:] = forces.in_contact
            tpl.arrays['unexplained'][:] = forces.unexplained
            tpl.set_stamp(*stamp)
            return tpl.bytes()
        m = self.msg
        m.header.stamp.sec, m.header.stamp.nanosec = stamp
        m.in_contact = [bool(x) for x in forces.in_contact]
        for w, row in zip(m.wrenches, forces.wrenches):
            f, t = w.force, w.torque
            f.x, f.y, f.z, t.x, t.y, t.z = (float(x) for x in row)
        m.unexplained = array.array('d', forces.unexplained)
        return m
