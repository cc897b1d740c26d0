"""What the dynamics node publishes: a publisher per row of the output table, and per cycle the
rows that are due (:class:`Outputs`); its health on ``/diagnostics`` at 1 Hz.

:data:`~ros_dynamics.ros.dynamics_node.output_table.OUTPUTS` declares each output once; this
module creates its publisher (told by DDS when a subscriber matches or leaves) and keeps the
list of the outputs that are *live*: switched on by their parameter and listened to.  Per cycle
:meth:`Outputs.publish` asks each live output's builder for its message (None: not due this
cycle) and publishes it: a message nobody subscribes to is neither made nor published, and
every live output is made from the cycle that was just made, so none goes stale.  Then the
cycle's health (:class:`~ros_dynamics.ros.dynamics_node.diagnostics.NodeHealth`, published by
:meth:`Outputs.tick`; docs/diagnostics.md) and, when a contact is being judged and someone
subscribes to ``~/markers`` or ``~/external_wrench``, its drawing
(:mod:`~ros_dynamics.ros.dynamics_node.contact_drawing`).  Outputs holds the current model's
messages (:class:`~ros_dynamics.ros.dynamics_node.messages.ModelMessages`), not its engine.
"""
from __future__ import annotations

import time

from ...estimation.cycle_kernel import M_NANOSEC, M_SEC
from ...estimation.rules import FREE, NS
from .diagnostics import NodeHealth
from .messages import stamp_msg
from .output_table import OUTPUTS

ASK_EVERY = 0.05              # s: the publishers without a subscriber are asked again after this
ASK_FOR = 5.0                 # s after a model's install while they are asked (matched events)
DRAWN = ('markers', 'external_wrench')     # the outputs made from the contacts' drawing


class Stream:
    """One output of the table and its publisher: ``listeners``, its subscribers as DDS's
    matched events count them (None: no such events) or as the publisher last said."""

    __slots__ = ('output', 'publisher', 'listeners', 'events', 'written')

    def __init__(self, output, publisher, events):
        self.output, self.publisher, self.events = output, publisher, events
        self.listeners = 0
        self.written = None     # the message's bytes where the compiled step writes it

    def listened(self):
        """Has it a subscriber (the last count)?"""
        return self.listeners > 0

    def ask(self):
        """The publisher's count of subscribers, asked now."""
        self.listeners = max(self.listeners, self.publisher.get_subscription_count())


class Outputs:
    """The node's publishers and what is published per cycle (module text).
    ``create_publisher``, ``logger``, ``node_name``: the node's; ``qos`` of the streams,
    ``latched`` of the latched ones; ``warn(kind, text, level)``: the node's throttled log;
    ``outputs``: the table (default :data:`OUTPUTS`)."""

    def __init__(self, create_publisher, logger, node_name, qos, latched, warn,
                 outputs=OUTPUTS):
        self.streams = {}
        for output in outputs:
            kind = output.message_type()
            if kind is None:
                package = output.type.split('.')[0]
                if package != 'ros_dynamics_msgs':     # (the node says how to build it once)
                    logger.warning(f'{package} is not installed: ~/{output.name} is off '
                                   f'(install ros-<distro>-{package.replace("_", "-")})')
                continue
            self.streams[output.name] = self._stream(create_publisher, output, kind,
                                                     latched if output.latched else qos)
        self.pub_diag = None
        try:
            from diagnostic_msgs.msg import DiagnosticArray
            self.pub_diag = create_publisher(DiagnosticArray, '/diagnostics', 10)
        except ImportError:
            logger.warning('diagnostic_msgs is not installed: /diagnostics is off (install '
                           'ros-<distro>-diagnostic-msgs)')
        self.health = NodeHealth(node_name=node_name)
        self.warn = warn
        self.publish_failed = 0       # publications the middleware refused
        self._msgs = None             # the current model's messages
        self._switched = ()           # the outputs switched on (their parameters)
        self._live = []               # the streams switched on and listened to
        self._drawn = False           # one of them is a drawing of the contacts (DRAWN)
        self._cycles = 0              # cycles of the current model
        self._period = None           # publish_rate's period [ns] of the last paced cycle sent
        self._gamma_next = 0.0        # monotonic time of the next unlistened Gamma
        self._force_scale = 0.01      # marker_force_scale of the last published cycle
        self._ask_at = self._ask_until = 0.0   # when to ask the publishers again, until when
        self._asking = False                   # (_ask)

    def _stream(self, create_publisher, output, kind, qos):
        """The :class:`Stream` of one output, its subscribers counted by DDS's matched events
        (delivered by the executor like a message: nothing asked per cycle); where the
        middleware has none, or before its first event, the publisher is asked
        (:meth:`_ask`)."""
        from rclpy.event_handler import PublisherEventCallbacks, UnsupportedEventTypeError

        def matched(info):
            stream.listeners = info.current_count
            self._relist()
        try:
            publisher = create_publisher(kind, f'~/{output.name}', qos,
                                         event_callbacks=PublisherEventCallbacks(matched=matched))
            stream = Stream(output, publisher, True)
        except UnsupportedEventTypeError:
            stream = Stream(output, create_publisher(kind, f'~/{output.name}', qos), False)
        return stream

    # ------------------------------------------------------------------ events
    def install(self, messages, cfg, warnings, free_peak):
        """A new model's messages (:class:`ModelMessages`), from the next cycle on; its
        URDF ``warnings``; ``free_peak``: where its compiled cycle writes the residual's peak
        of free-motion updates (NodeHealth.free_peak)."""
        self._msgs, self._cycles = messages, 0
        self._asking, self._ask_at, self._ask_until = True, 0.0, time.monotonic() + ASK_FOR
        for stream in self.streams.values():
            slotted = messages.by_topic.get(stream.output.name)
            stream.written = (slotted.template.serialized if messages.compiled is not None
                              and slotted is not None else None)
        self.health.model(messages.model.nv, warnings, cfg.coordinates,
                          messages.joint_coordinate_names)
        self.health.free_peak(free_peak)
        self.configure(cfg)

    def configure(self, cfg):
        """The switches of ``cfg`` (its output parameters) from now on."""
        self._switched = tuple(s for s in self.streams.values() if not s.output.switch
                               or getattr(cfg, s.output.switch)
                               or (s.output.stands_in and 'dynamics' not in self.streams))
        self._relist()

    def _relist(self):
        self._live = [s for s in self._switched if s.listeners > 0]
        # the contacts are drawn only for someone who looks (~/markers, ~/external_wrench)
        self._drawn = any(s.output.name in DRAWN for s in self._live)

    def _ask(self, now):
        """The publishers of the switched outputs without a subscriber asked for one, every
        ASK_EVERY s for ASK_FOR s after an install (a matched event may come after the first
        messages), and, where the middleware has no matched events, always, those with one
        asked again whether they still have it."""
        self._ask_at = now + ASK_EVERY
        self._asking = now < self._ask_until or any(not s.events for s in self.streams.values())
        for s in self._switched:
            if not s.events:
                s.listeners = 0
            if s.listeners == 0:
                s.ask()
        self._relist()

    def observer_reset(self):
        """The observer restarts on request: ~/contact_estimate says "free" once again."""
        if self._msgs is not None:
            self._msgs.contact_free_said = False

    def rejected(self, kind):
        self.health.rejected(kind)

    def no_model(self, reason):
        self.health.no_model(reason)

    def tick(self, summary, free_updates, cfg, stamp, hardware_id):
        """Publish /diagnostics stamped ``stamp`` (the node's 1 Hz steady timer): ``summary``
        (how the cycles ran, or None) and ``free_updates`` of the current model, ``cfg`` the
        parameters, ``hardware_id`` the node's name."""
        self.health.thread_cpu(time.thread_time())     # the executor thread: this one
        self.health.compiled_cycle(summary, free_updates)
        if cfg.publish_diagnostics and self.pub_diag is not None:
            self.pub_diag.publish(self.health.to_msg(stamp, hardware_id=hardware_id,
                                                     now_s=time.monotonic()))

    # ------------------------------------------------------------------ per cycle
    def christoffel_due(self, cfg):
        """Gamma in this cycle: every christoffel_decimation-th one while someone subscribes
        to ~/christoffel, else once a second (the latched sample a subscriber gets at once
        stays at most 1 s old; Gamma of a humanoid is ~0.7 MB)."""
        if self._cycles % cfg.christoffel_decimation:      # (first: most cycles stop here)
            return False
        msgs, stream = self._msgs, self.streams.get('christoffel')
        if not (stream is not None and msgs is not None and cfg.christoffel_stream
                and msgs.with_gamma and msgs.geometry_ready):
            return False
        now = time.monotonic()
        if stream.listeners > 0 or now >= self._gamma_next:
            self._gamma_next = now + 1.0
            return True
        return False

    def publish(self, cfg, out, latency_start):
        """Publish what one cycle made (``out``: its outcome; ``out.fields``: its message's,
        the stamp at cycle_kernel.M_SEC, M_NANOSEC) and judge its health (``latency_start``:
        perf_counter at receipt)."""
        if self._drawn and out.answer != FREE and out.result.contact is not None:
            self._draw(out, cfg.marker_force_scale)
        self.send(cfg, out)
        self.health.accepted(_stamp_ns(out), time.perf_counter() - latency_start)
        if out.answer != FREE:
            self._judged(out.result)

    def judge(self, out):
        """The health and the contacts of a cycle that may not be published (fresh when behind:
        a newer one was waiting); its drawing goes with the next cycle sent."""
        self.health.accepted(_stamp_ns(out), 0.0)
        if out.answer != FREE:
            if self._drawn and out.result.contact is not None:
                self._draw(out, self._force_scale)
            self._judged(out.result)

    def send(self, cfg, out):
        """Publish the messages of one cycle (``out``) that are live and due."""
        self._cycles += 1
        msgs, fields = self._msgs, out.fields
        if self._asking:
            now = time.monotonic()
            if now >= self._ask_at:
                self._ask(now)
        self._force_scale = cfg.marker_force_scale

        def stamp():
            return int(fields[M_SEC]), int(fields[M_NANOSEC])
        paced = True                  # the per-joint-state streams are due in this cycle
        if cfg.publish_rate > 0:      # the first cycle of each 1/publish_rate period of stamps
            period = int(_stamp_ns(out)) // max(1, round(NS / cfg.publish_rate))
            paced, self._period = period != self._period, period
        for stream in self._live:
            if stream.output.paced and not paced:
                continue
            if stream.written is not None and out.written and not (
                    stream.output.updates and out.result.residual is None):
                msg = stream.written.tobytes()       # as the compiled step wrote it
            else:
                msg = stream.output.build(msgs, out, stamp)
            if msg is not None:
                self._send(stream, msg)
        if msgs.drawing.views is not None:
            msgs.drawing.published()

    def _draw(self, out, force_scale):
        fields = out.fields
        self._msgs.drawing.update(out.result, lambda: stamp_msg(
            (int(fields[M_SEC]), int(fields[M_NANOSEC]))), force_scale)

    def _send(self, stream, msg):
        try:
            stream.publisher.publish(msg)
        except RuntimeError as exc:   # rclpy's RCLError (seen with Fast DDS while a reliable
            self.publish_failed += 1  # subscriber was stopped): counted, logged
            self.warn('publish', f'{stream.publisher.topic_name}: publishing failed: {exc}',
                      'error')

    def _judged(self, res):
        """The health of a cycle whose follow-up ran: the observer's restart, bridge, residual
        and contact state."""
        h = self.health
        if res.observer == 'reset':
            h.observer_reset(res.reset_reason)
        elif res.observer == 'bridge':
            h.observer_bridged()
        contact, feet = res.contact, res.forces
        if contact is None:
            return
        # with contact frames the detector judges what they leave unexplained
        h.observer(res.residual if feet is None else feet.unexplained, res.threshold,
                   contact.in_contact)
        if feet is not None:
            h.contact_frames(feet)


def _stamp_ns(out):
    """A cycle's time [ns]: its message's stamp, or the receiving clock for an unstamped one."""
    fields = out.fields
    return fields[M_SEC] * NS + fields[M_NANOSEC] or out.t_ns
