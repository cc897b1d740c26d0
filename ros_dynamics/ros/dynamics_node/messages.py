"""The per-cycle messages of one model, allocated once, and how a cycle fills them.

* :class:`OutputMessage`: one per-cycle message of fixed layout, allocated once per model as a
  serialized message (:class:`~ros_dynamics.ros.dynamics_node.wire.Template`) with numpy views
  onto its arrays, so that a cycle writes its results straight into the bytes that are
  published;
* :class:`ModelMessages`: the messages of one model (built with the engine, off the executor
  thread).  The outputs whose fields the compiled step writes (the ``slots`` of
  :data:`~ros_dynamics.ros.dynamics_node.output_table.OUTPUTS`) lie in one float64 buffer
  (:attr:`ModelMessages.compiled`: the buffer and the
  :data:`~ros_dynamics.estimation.cycle_data.OutputLayout` of the slots and stamps in it; in
  the model's own coordinates).  The others are made from the cycle's result by the table's
  builders, with the methods here.
"""
from __future__ import annotations

import array

import numpy as np
from rclpy.serialization import serialize_message

from ...core.coordinates import BASE_DOF_NAMES
from ...estimation.cycle_data import OutputLayout
from ...estimation.cycle_kernel import (SLOT_C, SLOT_G, SLOT_GRAVITY, SLOT_M, SLOT_MDOT, SLOT_Q,
                                        SLOT_RESIDUAL, SLOT_V, SLOTS)
from .. import interfaces as itf
from . import wire
from .contact_drawing import ContactDrawing
from .contact_forces_output import ContactForcesOutput
from .output_table import OUTPUTS
from .task_space_output import TaskSpaceStream


def _attach(msg, field, n):
    """Give ``msg.<field>`` a zeroed ``array.array('d')`` of length n; return a numpy view of
    the array the message stores (writing the view updates the message in place)."""
    setattr(msg, field, array.array('d', bytes(8 * n)))
    stored = getattr(msg, field)
    return np.frombuffer(stored, dtype=np.float64) if n else np.zeros(0)


def stamp_msg(stamp):
    """builtin_interfaces/Time of (sec, nanosec)."""
    t = itf.Time()
    t.sec, t.nanosec = stamp
    return t


class OutputMessage:
    """One per-cycle output of fixed layout: ``msg`` (frame and names set) with float64
    arrays of the given lengths, and ``arrays[field]``, numpy views to write a cycle's results
    into.  :meth:`message` is what to publish: the serialized message
    (:class:`~ros_dynamics.ros.dynamics_node.wire.Template`, written in place), or ``msg``
    itself where the middleware's serialization is not plain CDR."""

    def __init__(self, msg, frame_id, names_field, names, sizes):
        msg.header.frame_id = frame_id
        setattr(msg, names_field, list(names))
        views = {f: _attach(msg, f, n) for f, n in sizes.items()}
        try:
            self.template = wire.Template(msg, serialize_message)
            self.arrays = self.template.arrays
        except ValueError:
            self.template, self.arrays = None, views
        self.msg = msg

    def message(self, stamp):
        """The message stamped ``stamp`` ((sec, nanosec)) with the arrays as written."""
        return wire.stamped(self.template, self.msg, stamp)


def _slot_values(res):
    """What each slot of the compiled step holds, from a cycle's result (published
    coordinates; the gravity torque and the residual in the model's)."""
    d = res.out.d
    return {SLOT_Q: res.out.q, SLOT_V: res.out.v, SLOT_M: d.M, SLOT_C: d.C, SLOT_MDOT: d.Mdot,
            SLOT_G: d.g, SLOT_GRAVITY: res.terms.g, SLOT_RESIDUAL: res.residual}


class ModelMessages:
    """The per-cycle messages of one model (module text): published coordinates ``coords``,
    frame ``frame_id``, task frames ``task``; ``compiled``: (buffer, OutputLayout) where the
    compiled step writes, or None (it writes into buffers of its own, and the messages are
    filled from the result).  ``workspace``: the
    cycle's core workspace (a ``Data``: the task-space terms continue from its kinematics pass);
    ``geometry_ready``: Gamma can be made now (its kernel is loaded)."""

    def __init__(self, model, coords, frame_id, task):
        self.model, self.coords, self.frame_id, self.task = model, coords, frame_id, task
        self.joint_coordinate_names = (list(BASE_DOF_NAMES) if model.floating_base
                                       else []) + list(model.joint_names)
        self.forces = (ContactForcesOutput(frame_id, serialize_message)
                       if itf.HAVE_CONTACT_FORCES else None)
        self.drawing = ContactDrawing(model, frame_id)
        self.gamma = self.task_out = self.workspace = None
        self.geometry_ready = False
        self.contact_free_said = False    # ~/contact_estimate said "free" since the last contact
        if itf.HAVE_TASK_SPACE and task.enabled:
            self.task_out = TaskSpaceStream(task, itf.TaskSpace(), serialize_message, itf.Pose,
                                            frame_id)
        self.by_topic = self._slotted(model)
        if itf.HAVE_MSGS:
            msg = self.contact_msg = itf.ContactEstimate()
            msg.header.frame_id = frame_id
            msg.names = list(self.joint_coordinate_names)
            self.contact_r = _attach(msg, 'external_torque', int(model.nv))
        # the model's own coordinates: the compiled step writes them (in one buffer)
        direct = 'dynamics' in self.by_topic and coords.identity
        self.compiled = self._buffer() if direct else None

    def _slotted(self, model):
        """The messages of the outputs whose fields are the compiled step's slots."""
        m, n = self.coords.nv, int(model.nv)
        msgs = {}
        for output in OUTPUTS:
            kind = output.message_type() if output.slots else None
            if kind is None:
                continue
            if output.name == 'dynamics':
                sizes = {'position': self.coords.nq, 'velocity': m, 'mass_matrix': m * m,
                         'coriolis_matrix': m * m, 'mass_matrix_dot': m * m, 'gravity': m}
                msgs['dynamics'] = OutputMessage(kind(), self.frame_id, 'names',
                                                 self.coords.names, sizes)
            else:            # a JointState of the model's coordinates: the slots' effort
                msgs[output.name] = OutputMessage(kind(), '', 'name',
                                                  self.joint_coordinate_names,
                                                  {f: n for f, _ in output.slots})
        return msgs

    def _buffer(self):
        """(buffer, OutputLayout): the slotted messages moved into one buffer, where each slot
        and each stamp is; None if one of them is not plain CDR."""
        templates = [(name, msg.template) for name, msg in self.by_topic.items()]
        if any(t is None for _, t in templates):
            return None
        buffer = np.zeros(sum(t.words for _, t in templates))
        slots = np.zeros(len(SLOTS), dtype=np.int64)
        stamps, at = [], 0
        for name, t in templates:
            t.move_to(buffer[at:at + t.words])
            stamps.append(at + 1)                 # the payload's first word: header.stamp
            for field, slot in next(o for o in OUTPUTS if o.name == name).slots:
                slots[slot] = at + 1 + t.offsets[field]
            at += t.words
        for msg in self.by_topic.values():
            msg.arrays = msg.template.arrays
        return buffer, OutputLayout(slots, np.array(stamps, dtype=np.int64))

    # -- the builders' pieces ------------------------------------------------------------------
    def slotted(self, name, out, stamp):
        """``name``'s message of one cycle (``out``): as the compiled step wrote it, or filled
        from the result (the published coordinates' q, v, terms; the residual)."""
        msg = self.by_topic[name]
        if out.written:
            return msg.template.bytes()
        res = out.result
        values = _slot_values(res)
        for field, slot in next(o for o in OUTPUTS if o.name == name).slots:
            np.copyto(msg.arrays[field], values[slot].reshape(-1))
        return msg.message(stamp())

    def task_space(self, stamp):
        """~/task_space of the cycle just computed (its kinematics pass, in the workspace)."""
        self.task_out.write(self.task.after_terms(self.workspace))
        return self.task_out.message(stamp)

    def christoffel(self, stamp, out):
        if self.gamma is None:        # built at the first streamed Gamma
            co, m = self.coords, self.coords.nv
            self.gamma = OutputMessage(itf.Christoffel(), self.frame_id, 'names', co.names,
                                       {'position': co.nq, 'christoffel': m * m * m})
        a = self.gamma.arrays
        np.copyto(a['position'], out.q)
        np.copyto(a['christoffel'], out.gamma.reshape(-1))
        return self.gamma.message(stamp)

    def contact(self, stamp, res):
        """~/contact_estimate of one observer update when due: in contact, or free once (the
        first, after a release or a reset: :attr:`contact_free_said`); else None.  Residual,
        detection, isolated links, the wrench at the contact point (world axes) when
        estimated."""
        contact = res.contact
        if contact is None or not (contact.in_contact or not self.contact_free_said):
            return None
        self.contact_free_said = not contact.in_contact
        m, wrench = self.contact_msg, res.wrench
        m.header.stamp = stamp_msg(stamp())
        np.copyto(self.contact_r, res.residual)
        m.in_contact = bool(contact.in_contact)
        links = contact.links if contact.in_contact else []
        if list(m.isolated_links) != links:
            m.isolated_links = list(links)
        m.wrench_valid = wrench is not None
        f, t, p = m.wrench.force, m.wrench.torque, m.wrench_point
        if wrench is not None:
            m.wrench_link = res.wrench_link
            p.x, p.y, p.z = (float(x) for x in res.wrench_point)
            f.x, f.y, f.z = (float(x) for x in wrench[:3])
            t.x, t.y, t.z = (float(x) for x in wrench[3:])
        elif m.wrench_link:
            m.wrench_link = ''
            p.x = p.y = p.z = f.x = f.y = f.z = t.x = t.y = t.z = 0.0
        return m
