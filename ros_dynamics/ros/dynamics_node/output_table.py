"""Every output of the dynamics node, declared once: :data:`OUTPUTS`.

A row says the topic (``~/<name>``), the message type, the parameter that switches it off, when
it is due, and how a cycle makes it: the fields the compiled step writes (``slots``: message
field -> :data:`~ros_dynamics.estimation.cycle_kernel.SLOTS` index; the node's per-model
messages lay those out in one buffer the step writes into,
:class:`~ros_dynamics.ros.dynamics_node.messages.ModelMessages`) or a builder that makes it from
the cycle's outcome.  :class:`~ros_dynamics.ros.dynamics_node.outputs.Outputs` creates a
publisher per row and, per cycle, publishes each row that has a subscriber, is switched on and
is due; the per-joint-state streams (``paced``) only in the first cycle of each
``1/publish_rate`` period of the joint states' stamps when that parameter is set.
``/diagnostics`` (1 Hz, its own timer) is not a per-cycle output.

A builder ``build(messages, out, stamp)`` takes the model's messages, the cycle's outcome
(``out.result``: :class:`~ros_dynamics.estimation.cycle_state.CycleResult`; ``out.written``:
the compiled step wrote the slots) and ``stamp()`` (the message's (sec, nanosec), read when
called); it returns the message to publish, or None when the output is not due this cycle.
Where the compiled step wrote an output's slots (and stamp), Outputs publishes its bytes as
they are, without the builder (the usual cycle's path).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

from ...estimation.cycle_kernel import (SLOT_C, SLOT_G, SLOT_GRAVITY, SLOT_M, SLOT_MDOT,
                                        SLOT_Q, SLOT_RESIDUAL, SLOT_V)


@dataclass(frozen=True)
class Output:
    """One output (module text)."""
    name: str                 # the topic: ~/<name>
    type: str                 # the message type, 'package.msg.Type' (optional packages: off)
    due: str                  # when it is published, in words (docs/ros_interface.md)
    build: Callable           # (messages, outcome, stamp) -> the message, or None: not due
    switch: str = ''          # the bool parameter that turns it off ('': always on)
    slots: tuple = ()         # ((message field, cycle_kernel slot), ...) the compiled step writes
    latched: bool = False     # transient local, depth 1 (a late subscriber gets the last one)
    updates: bool = False     # due only for a cycle that updated the observer (a residual)
    stands_in: bool = False   # published whatever its switch where ~/dynamics cannot be
    paced: bool = False       # a per-joint-state stream: at most once per 1/publish_rate

    def message_type(self):
        """The message class, or None when its package is not installed (the output is off)."""
        module, _, name = self.type.rpartition('.')
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            return None


def written_or_filled(output):
    """The builder of an output whose fields are slots: the message the compiled step wrote
    (stamped by it), or, where it did not (published coordinates other than the model's, a
    middleware that does not send plain CDR), the message filled from the cycle's result."""
    def build(messages, out, stamp):
        return messages.slotted(output, out, stamp)
    return build


def _residual(build):
    """``build`` when the cycle updated the observer (a residual to publish)."""
    def due(messages, out, stamp):
        return None if out.result.residual is None else build(messages, out, stamp)
    return due


def _christoffel(messages, out, stamp):
    gamma = out.result.out
    return None if gamma.gamma is None else messages.christoffel(stamp(), gamma)


def _contact_estimate(messages, out, stamp):
    return messages.contact(stamp, out.result)


def _contact_forces(messages, out, stamp):
    forces = out.result.forces
    return None if forces is None else messages.forces.message(stamp(), forces)


def _task_space(messages, out, stamp):
    return messages.task_space(stamp())


def _markers(messages, out, stamp):
    return messages.drawing.markers()


def _external_wrench(messages, out, stamp):
    return messages.drawing.wrench()


_DYNAMICS = (('position', SLOT_Q), ('velocity', SLOT_V), ('mass_matrix', SLOT_M),
             ('coriolis_matrix', SLOT_C), ('mass_matrix_dot', SLOT_MDOT), ('gravity', SLOT_G))

#: the node's per-cycle outputs (module text), in the order they are published
OUTPUTS = (
    Output('dynamics', 'ros_dynamics_msgs.msg.Dynamics', 'every cycle',
           written_or_filled('dynamics'), 'publish_dynamics', _DYNAMICS, paced=True),
    Output('task_space', 'ros_dynamics_msgs.msg.TaskSpace', 'every cycle, with task_frames',
           _task_space, paced=True),
    Output('christoffel', 'ros_dynamics_msgs.msg.Christoffel', 'a cycle that made Gamma '
           '(every christoffel_decimation-th while subscribed, else once a second)',
           _christoffel, 'christoffel_stream', latched=True),
    Output('contact_estimate', 'ros_dynamics_msgs.msg.ContactEstimate', 'every observer '
           'update in contact; once when free (the first, after a release or a reset)',
           _contact_estimate, 'publish_contact_estimate'),
    Output('contact_forces', 'ros_dynamics_msgs.msg.ContactForces', 'every observer update, '
           'with contact_frames', _contact_forces, paced=True),
    Output('gravity_torque', 'sensor_msgs.msg.JointState', 'every cycle',
           written_or_filled('gravity_torque'), 'publish_gravity_torque',
           (('effort', SLOT_GRAVITY),), stands_in=True, paced=True),
    Output('external_torque', 'sensor_msgs.msg.JointState', 'every observer update',
           _residual(written_or_filled('external_torque')), 'publish_external_torque',
           (('effort', SLOT_RESIDUAL),), updates=True, paced=True),
    Output('markers', 'visualization_msgs.msg.MarkerArray', 'at a contact onset and release, '
           'at most 30 times a second in between', _markers, 'publish_markers'),
    Output('external_wrench', 'geometry_msgs.msg.WrenchStamped', 'at a contact onset, at most '
           '30 times a second in contact, once (zero) at the release', _external_wrench,
           'publish_external_wrench'),
)


def row(name):
    """The row of the output ``name``."""
    return next(o for o in OUTPUTS if o.name == name)
