"""Everything the dynamics node publishes, in one owner: the messages, which topic is due, the
publishing, and what it shows beyond its data topics (contacts for RViz, its health).

* :class:`OutputMessage`: one per-cycle message of fixed layout, allocated once per model as a
  serialized message (:class:`~ros_dynamics.ros.dynamics_node.wire.Template`) with numpy views onto its
  arrays, so that a cycle writes its results straight into the bytes that are published;
* :class:`ModelMessages`: the per-cycle messages of one model (built with the
  :class:`~ros_dynamics.ros.dynamics_node.engine.Engine`, off the executor thread: the compiled cycle writes
  into them, :data:`~ros_dynamics.estimation.cycle_kernel.OUTPUT_FIELDS` says where);
* :class:`Outputs`: the node's publishers and, per accepted cycle, :meth:`Outputs.publish`:
  each due topic filled and published; ``~/markers`` (an arrow per estimated contact, the
  contact link marked, deleted on release; with contact frames an arrow per loaded frame) and
  ``~/external_wrench`` (the contact wrench about the contact link's origin in its axes, a
  zero wrench once on release), built only while someone subscribes, at onset and release and
  at most 30 times a second in between; ``/diagnostics`` at 1 Hz (:meth:`Outputs.tick`) by the
  rules of :class:`~ros_dynamics.ros.dynamics_node.diagnostics.NodeHealth` (docs/diagnostics.md).
"""
from __future__ import annotations

import array
import time

import numpy as np
from rclpy.serialization import serialize_message

from ...core.api import link_placement
from ...core.coordinates import BASE_DOF_NAMES
from ...estimation.cycle_kernel import M_NANOSEC, M_SEC, OUTPUT_FIELDS
from .. import interfaces as itf
from . import wire
from .contact_forces_output import ContactForcesOutput
from .diagnostics import NodeHealth
from .rviz_messages import ContactView, contact_markers, external_wrench, released_wrench
from .task_space_output import TaskSpaceStream

_EYE = np.eye(3)
DRAW_PERIOD = 1.0 / 30.0      # s: contacts drawn at most at 30 Hz (and at onset and release)
LISTENED_FOR = 0.05           # s: a topic with a subscriber is asked again after this


def _attach(msg, field, n):
    """Give ``msg.<field>`` a zeroed ``array.array('d')`` of length n; return a numpy view of
    the array the message stores (writing the view updates the message in place)."""
    setattr(msg, field, array.array('d', bytes(8 * n)))
    stored = getattr(msg, field)
    return np.frombuffer(stored, dtype=np.float64) if n else np.zeros(0)


def _stamp(fields):
    """(sec, nanosec) of a message's ``fields`` (ros/wire.py)."""
    return int(fields[M_SEC]), int(fields[M_NANOSEC])


def stamp_msg(stamp):
    """builtin_interfaces/Time of (sec, nanosec)."""
    t = itf.Time()
    t.sec, t.nanosec = stamp
    return t


class OutputMessage:
    """One per-cycle output of fixed layout: ``msg`` (frame and names set) with float64
    arrays of the given lengths, and ``arrays[field]``, numpy views to write a cycle's results
    into.  :meth:`message` is what to publish: the serialized message
    (:class:`~ros_dynamics.ros.dynamics_node.wire.Template`, written in place), or ``msg`` itself where the
    middleware's serialization is not plain CDR."""

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


class ModelMessages:
    """The per-cycle messages of one model (published coordinates ``coords``), and the state
    vectors ``q``, ``v`` the cycles run on (in joint coordinates they are ~/dynamics' own
    position and velocity arrays: the joint state is gathered straight into it).
    ``compiled``: (dyn, grav, ext, offsets) where the compiled cycle writes (the serialized
    messages' float64 words; offsets in the order of ``OUTPUT_FIELDS``), or None."""

    def __init__(self, model, coords, frame_id, task):
        self.coords, self.frame_id, self.task = coords, frame_id, task
        floating = bool(model.floating_base)
        self.joint_coordinate_names = (list(BASE_DOF_NAMES) if floating
                                       else []) + list(model.joint_names)
        m, n = coords.nv, int(model.nv)
        self.forces = (ContactForcesOutput(frame_id, serialize_message)
                       if itf.HAVE_CONTACT_FORCES else None)
        self.by_topic = {}
        self.gamma = self.contact_msg = self.task_out = None
        if itf.HAVE_TASK_SPACE and task.enabled:
            self.task_out = TaskSpaceStream(task, itf.TaskSpace(), serialize_message, itf.Pose,
                                            frame_id)
        if itf.HAVE_MSGS:
            self.by_topic['dynamics'] = OutputMessage(
                itf.Dynamics(), frame_id, 'names', coords.names, {
                    'position': coords.nq, 'velocity': m, 'mass_matrix': m * m,
                    'coriolis_matrix': m * m, 'mass_matrix_dot': m * m, 'gravity': m})
            msg = self.contact_msg = itf.ContactEstimate()
            msg.header.frame_id = frame_id
            msg.names = list(self.joint_coordinate_names)
            self.contact_r = _attach(msg, 'external_torque', n)
        for topic in ('gravity_torque', 'external_torque'):
            self.by_topic[topic] = OutputMessage(itf.JointState(), '', 'name',
                                                 self.joint_coordinate_names, {'effort': n})
        # joint coordinates: the state is gathered straight into ~/dynamics
        direct = itf.HAVE_MSGS and coords.identity
        dyn = self.by_topic.get('dynamics')
        self.q = dyn.arrays['position'] if direct else np.zeros(model.nq)
        self.v = dyn.arrays['velocity'] if direct else np.zeros(n)
        if floating:
            self.q[6] = 1.0
        self.compiled = None
        topics = ('dynamics', 'gravity_torque', 'external_torque')
        templates = {t: self.by_topic[t].template for t in topics} if direct else {}
        if direct and all(t is not None for t in templates.values()):
            self.compiled = tuple(templates[t].payload for t in topics) + (np.array(
                [templates[topic].offsets[field] for topic, field in OUTPUT_FIELDS] + [1],
                dtype=np.int64),)         # (OUT_STAMPED: the cycle stamps them)

    def _write(self, topics, values):
        """Write ``values`` (in the order of OUTPUT_FIELDS; None: not this cycle) into the
        arrays of ``topics``: what the compiled cycle writes, when it did not."""
        for (topic, field), x in zip(OUTPUT_FIELDS, values):
            if topic in topics and x is not None:
                np.copyto(self.by_topic[topic].arrays[field], x.reshape(-1))

    def dynamics(self, stamp, out, written=False):
        """~/dynamics filled with one cycle's results (published coordinates); ``written``:
        the compiled cycle wrote them already, and its stamp."""
        msg = self.by_topic['dynamics']
        if written:
            return msg.template.bytes()
        if not self.coords.identity:   # joint coordinates: q, v were gathered into it
            np.copyto(msg.arrays['position'], out.q)
            np.copyto(msg.arrays['velocity'], out.v)
        d = out.d
        self._write(('dynamics',), (d.M, d.C, d.Mdot, d.g, None, None))
        return msg.message(stamp)

    def torques(self, topic, stamp, values, written=False):
        """``topic`` ('gravity_torque' or 'external_torque', sensor_msgs/JointState) with
        effort = ``values`` (``written``: the compiled cycle wrote them already, and its
        stamp)."""
        if written:
            return self.by_topic[topic].template.bytes()
        self._write((topic,), (None,) * 4 + (values, values))
        return self.by_topic[topic].message(stamp)

    def task_space(self, stamp, data):
        """~/task_space of the cycle just computed (its kinematics pass, in ``data``)."""
        self.task_out.write(self.task.after_terms(data))
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

    def contact(self, stamp, res, wrench_point):
        """~/contact_estimate for one observer update: residual, detection, isolated links,
        the wrench at the contact point (world axes) when estimated."""
        m, contact, wrench = self.contact_msg, res.contact, res.wrench
        m.header.stamp = stamp_msg(stamp)
        np.copyto(self.contact_r, res.residual)
        m.in_contact = bool(contact.in_contact)
        links = contact.links if contact.in_contact else []
        if list(m.isolated_links) != links:
            m.isolated_links = list(links)
        m.wrench_valid = wrench is not None
        f, t, p = m.wrench.force, m.wrench.torque, m.wrench_point
        if wrench is not None:
            m.wrench_link = res.wrench_link
            p.x, p.y, p.z = (float(x) for x in wrench_point)
            f.x, f.y, f.z = (float(x) for x in wrench[:3])
            t.x, t.y, t.z = (float(x) for x in wrench[3:])
        elif m.wrench_link:
            m.wrench_link = ''
            p.x = p.y = p.z = f.x = f.y = f.z = t.x = t.y = t.z = 0.0
        return m


class Outputs:
    """The node's publishers and what is published per cycle (module text).  ``create_publisher``,
    ``logger``, ``node_name``: the node's; ``qos`` of the streams, ``latched`` of
    ~/christoffel; ``warn(kind, text, level)``: the node's throttled log."""

    def __init__(self, create_publisher, logger, node_name, qos, latched, warn):
        from geometry_msgs.msg import WrenchStamped
        self._listeners = {}          # stream -> its matched subscribers (DDS's matched events)
        self._listened = {}           # stream -> monotonic time it counts as listened (polled)

        pub = create_publisher

        def stream(msg_type, topic, profile):
            return self._stream(create_publisher, msg_type, topic, profile)
        self.pubs = {'external_torque': stream(itf.JointState, '~/external_torque', qos),
                     'gravity_torque': stream(itf.JointState, '~/gravity_torque', qos)}
        if itf.HAVE_MSGS:
            self.pubs.update(
                dynamics=stream(itf.Dynamics, '~/dynamics', qos),
                christoffel=stream(itf.Christoffel, '~/christoffel', latched),
                contact_estimate=stream(itf.ContactEstimate, '~/contact_estimate', qos))
        if itf.HAVE_TASK_SPACE:
            self.pubs['task_space'] = stream(itf.TaskSpace, '~/task_space', qos)
        if itf.HAVE_CONTACT_FORCES:
            self.pubs['contact_forces'] = stream(itf.ContactForces, '~/contact_forces', qos)
        self.pub_markers = self.pub_diag = None
        try:   # message packages a minimal ROS installation may lack: those outputs are off
            from visualization_msgs.msg import MarkerArray
            self.pub_markers = pub(MarkerArray, '~/markers', qos)
        except ImportError:
            logger.warning('visualization_msgs is not installed: ~/markers is off (install '
                           'ros-<distro>-visualization-msgs)')
        try:
            from diagnostic_msgs.msg import DiagnosticArray
            self.pub_diag = pub(DiagnosticArray, '/diagnostics', 10)
        except ImportError:
            logger.warning('diagnostic_msgs is not installed: /diagnostics is off (install '
                           'ros-<distro>-diagnostic-msgs)')
        self.pub_wrench = pub(WrenchStamped, '~/external_wrench', qos)
        self.health = NodeHealth(node_name=node_name)
        self.warn = warn
        self.publish_failed = 0       # publications the middleware refused
        self._eng = self._msgs = None
        self._cycles = 0              # cycles of the current model
        self._gamma_next = 0.0        # monotonic time of the next unlistened Gamma
        self._free_announced = False  # ~/contact_estimate said "free" since the last contact
        self._shown = 0               # markers shown (ids to delete on release)
        self._wrench_link = None      # link of the last published non-zero wrench
        self._next_draw = 0.0         # monotonic time of the next contact drawing

    def _stream(self, create_publisher, msg_type, topic, qos):
        """The publisher of one stream, told by DDS when a subscriber matches or leaves (its
        matched event, delivered by the executor like a message: a count kept, nothing asked
        per cycle); where the middleware has no matched event, the stream is polled
        (:meth:`_due`)."""
        from rclpy.event_handler import PublisherEventCallbacks, UnsupportedEventTypeError
        name = topic[2:]

        def matched(info):
            self._listeners[name] = info.current_count
        try:
            publisher = create_publisher(msg_type, topic, qos,
                                         event_callbacks=PublisherEventCallbacks(matched=matched))
        except UnsupportedEventTypeError:
            return create_publisher(msg_type, topic, qos)
        self._listeners.setdefault(name, 0)
        return publisher

    # ------------------------------------------------------------------ events
    def install(self, eng, cfg):
        """A new engine (model): its messages from the next cycle on."""
        self._eng, self._msgs, self._cycles = eng, eng.messages, 0
        self._free_announced = False
        self.health.model(eng.nv, len(eng.model.warnings), cfg.coordinates,
                          self._msgs.joint_coordinate_names)

    def observer_reset(self):
        """The observer restarts on request: ~/contact_estimate says "free" once again."""
        self._free_announced = False

    def rejected(self, kind):
        self.health.rejected(kind)

    def no_model(self, reason):
        self.health.no_model(reason)

    def tick(self, eng, cfg, stamp, hardware_id):
        """Publish /diagnostics stamped ``stamp`` (the node's 1 Hz steady timer; ``eng`` the
        current engine or None, ``cfg`` the parameters, ``hardware_id`` the node's name)."""
        self.health.thread_cpu(time.thread_time())     # the executor thread: this one
        self.health.compiled_cycle(None if eng is None else eng.cycle_summary())
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
        eng = self._eng
        if not (itf.HAVE_MSGS and cfg.christoffel_stream and eng.with_gamma
                and eng.geometry_ready):
            return False
        now = time.monotonic()
        if self._due('christoffel') or now >= self._gamma_next:
            self._gamma_next = now + 1.0
            return True
        return False

    def publish(self, cfg, fields, out, latency_start):
        """Publish what one cycle made (``out``: its outcome) for the message of ``fields`` (its
        stamp: the first two); then the cycle's health and contacts (``latency_start``:
        perf_counter at receipt)."""
        self._cycles += 1
        for topic, msg in self._messages(cfg, fields, out):
            try:
                self.pubs[topic].publish(msg)
            except RuntimeError as exc:   # rclpy's RCLError (seen with Fast DDS while a
                self.publish_failed += 1      # reliable subscriber was stopped): counted, logged
                self.warn('publish', f'{self.pubs[topic].topic_name}: publishing failed: '
                          f'{exc}', 'error')
        self._show(cfg, fields, out.result, out.t_ns, time.perf_counter() - latency_start)

    def _messages(self, cfg, fields, out):
        """(topic, message) pairs due for one cycle: 'dynamics', 'task_space', 'christoffel',
        'contact_estimate', 'contact_forces' (each observer update with contact frames),
        'gravity_torque', 'external_torque', each only while it has a subscriber (a message
        nobody subscribes to is not filled).  ~/contact_estimate: every update in contact,
        once when free (the first, and after a release), to its subscribers.  The messages
        the compiled cycle wrote carry its stamp; the others are stamped here."""
        res, written, msgs = out.result, out.written, self._msgs
        stamp = None if written else _stamp(fields)
        if itf.HAVE_MSGS:
            if cfg.publish_dynamics and self._due('dynamics'):
                yield 'dynamics', msgs.dynamics(stamp, res.out, written)
            if msgs.task_out is not None and self._due('task_space'):
                yield 'task_space', msgs.task_space(_stamp(fields), self._eng.data)
            if res.out.gamma is not None:
                yield 'christoffel', msgs.christoffel(_stamp(fields), res.out)
            contact = res.contact
            if contact is not None and cfg.publish_contact_estimate and (
                    contact.in_contact or not self._free_announced):
                # (volatile: a sample nobody subscribes to reaches no one, now or later)
                if self._due('contact_estimate'):
                    yield 'contact_estimate', msgs.contact(_stamp(fields), res,
                                                           self._eng.wrench_point)
                self._free_announced = not contact.in_contact
            if res.forces is not None and itf.HAVE_CONTACT_FORCES and self._due(
                    'contact_forces'):
                yield 'contact_forces', msgs.forces.message(_stamp(fields), res.forces)
        if (cfg.publish_gravity_torque or not itf.HAVE_MSGS) and self._due('gravity_torque'):
            yield 'gravity_torque', msgs.torques('gravity_torque', stamp, res.terms.g, written)
        if res.residual is not None and cfg.publish_external_torque and self._due(
                'external_torque'):
            yield 'external_torque', msgs.torques('external_torque', stamp, res.residual,
                                                  written)

    def _due(self, topic):
        """Has this stream a subscriber? A message nobody subscribes to is neither filled nor
        published (about 8 us even to nobody).  The count DDS's matched events keep
        (:meth:`_stream`): nothing asked per cycle (asking costs a call into the middleware per
        stream and message, the most of a cycle's bookkeeping in the node); without matched
        events the publisher is asked at every message while nobody listens, at most every
        50 ms while someone does.  DDS delivers a volatile sample only to readers matched at
        that moment (all the node's outputs are volatile).  Used for every stream and
        ~/christoffel (:meth:`christoffel_due`)."""
        count = self._listeners.get(topic)
        if count is not None:
            return count > 0
        now = time.monotonic()
        if now < self._listened.get(topic, 0.0):
            return True
        if self.pubs[topic].get_subscription_count() > 0:
            self._listened[topic] = now + LISTENED_FOR
            return True
        return False

    def _show(self, cfg, fields, res, stamp_ns, latency_s):
        """The cycle's health, and its contacts for RViz (module text)."""
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
        h.observer(res.residual if feet is None else feet.unexplained, self._eng.threshold,
                   contact.in_contact)
        if feet is not None:
            h.contact_frames(feet)
        loaded = feet is not None and feet.in_contact.any()
        changed = feet is not None and (feet.onset.any() or feet.release.any())
        if contact.onset or contact.release or changed or (
                (contact.in_contact or loaded) and time.monotonic() >= self._next_draw):
            self._next_draw = time.monotonic() + DRAW_PERIOD
            self._contacts(cfg, _stamp(fields), res)

    def _contacts(self, cfg, stamp, res):
        eng, stamp = self._eng, stamp_msg(stamp)
        q, model = eng.q, eng.model
        views = []
        if res.contact.in_contact:
            links = list(res.contact.links)
            if res.wrench is not None:
                R, p = link_placement(model, q, res.wrench_link)
                views.append(ContactView(res.wrench_link, eng.wrench_point, R, p,
                                         res.wrench[:3], res.wrench[3:]))
            for link in links:
                if not views or link != views[0].link:
                    R, p = link_placement(model, q, link)
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
