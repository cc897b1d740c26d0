"""Fresh when behind: the joint states waiting behind the one a callback handles.

When the node cannot keep up (CPU contention, a service call holding the interpreter), joint
states queue up in its subscription (``input_qos_depth`` of them).  Handled one callback each,
the node would answer each with the state of a moment long past, and the queue would keep it
there.  Consumers need the newest state, the observer needs every sample: so the callback of
one joint state also takes those already waiting behind it (:meth:`Inbox.newer`), and when the
oldest of them has waited longer than ``catch_up_after`` (the node is behind: not a hiccup of
a millisecond or two), runs each through the cycle (the observer takes every sample; nothing of
them is published) and publishes for the newest; /diagnostics counts the others ("skipped for
a newer one").  Otherwise each is run and published in turn.  A floating base's odometry
waiting in its own queue meanwhile is taken too (the same :meth:`Inbox.newer`), and applied in
stamp order between the joint states: left there, it would be read only after all of them.

rclpy's executors take a subscription's messages one at a time and call its callback for each
(``Executor._take_subscription``; the EventsExecutor loops over the events the middleware
reported); a callback may take more itself, with the same call,
``subscription.handle.take_message(msg_type, raw)``, under the handle's context as the
executors do.  The executor then finds nothing for the events of the messages taken here (it
takes None and calls nothing).  Not behind, that is one take that finds nothing: about a
microsecond.  How long a message waited is the middleware's: the time it was received
(``MessageInfo``'s ``received_timestamp``, the system clock) against the system clock now.
"""
from __future__ import annotations

import time


class Inbox:
    """The messages waiting in ``subscription`` (a raw one: serialized bytes), taken in its
    callback: at most ``limit`` (default: its history depth) per call."""

    def __init__(self, subscription, limit=None):
        self.subscription = subscription
        self.limit = limit or max(1, subscription.qos_profile.depth)

    def newer(self, take=True):
        """(the serialized messages waiting behind the one being handled, oldest first (a
        tuple; empty when none waits, or without ``take``), how long the oldest of them has
        waited [s])."""
        if not take:
            return (), 0.0
        sub = self.subscription
        handle = sub.handle
        with handle:
            got = handle.take_message(sub.msg_type, sub.raw)
            if got is None:
                return (), 0.0
            taken, received = [got[0]], got[1]['received_timestamp']
            while len(taken) < self.limit:
                got = handle.take_message(sub.msg_type, sub.raw)
                if got is None:
                    break
                taken.append(got[0])
        return tuple(taken), (time.time_ns() - received) * 1e-9
