"""Everything the dynamics node builds for one robot model: the model, the per-cycle pipeline,
the joint-input assembler, and the preallocated output messages.

An :class:`Engine` is built completely (model, every kernel warmed up on it, messages) before
it replaces the current one, off the executor thread; :func:`build_engine` is the one build
path, at start-up and at run time.  The per-cycle output messages are allocated once per model
as serialized messages (:class:`Output`, :mod:`ros_dynamics.ros.wire`) with numpy views onto
their arrays, so a cycle writes its results straight into the bytes that are published.
"""
from __future__ import annotations

import array
import threading

import numpy as np
from rclpy.serialization import serialize_message

from ..core.api import christoffel, link_jacobian
from ..core.jit import cached
from ..core.kernels import geometry as geometry_kernel
from ..core.validation import close_names
from ..core.urdf import load_urdf_string
from ..estimation.cycle import Cycle, ObserverSettings
from ..estimation.fused_cycle import fused_step
from ..estimation.joint_state_cycle import JointStateCycle
from ..core.coordinates import BASE_DOF_NAMES
from ..estimation.joint_input import (InputBounds, JointNameMap, JointStateAssembler,
                                      NameMaps)
from ..core.model import with_armature
from ..identification.payload import apply_payload
from ..identification.samples import Samples
from . import interfaces as itf, wire
from .parameters import PARAMETERS
from .contact_forces_output import ContactForcesOutput
from .task_space_output import TaskSpaceOutput, TaskSpaceStream


def load_model(xml, cfg):
    """(model with the payload of ``cfg``, model without it) of URDF text ``xml``; ValueError
    with the reason.  The text is only ever parsed as XML (never opened as a file,
    never run through xacro)."""
    if not isinstance(xml, str) or not xml.strip():
        raise ValueError('the robot description is empty')
    text = xml.lstrip()
    if not text.startswith('<'):
        raise ValueError(
            f'the robot description is not URDF XML but starts with {text[:60]!r}: give the XML '
            'text itself (a file path or xacro file is never opened): use the launch file\'s '
            'urdf:=<file> argument, a parameter file, or publish the XML on robot_description '
            '(e.g. ros2 run xacro xacro robot.urdf.xacro)')
    if xml.count('<joint') > 2 * cfg.max_nv + 100:   # cheap refusal before parsing
        raise ValueError(f'the description has {xml.count("<joint")} <joint> elements; more '
                         f'than max_nv ({cfg.max_nv}) velocity coordinates are refused')
    model = load_urdf_string(xml, floating_base=cfg.floating_base,
                             gravity=np.asarray(cfg.gravity, dtype=float))
    if model.nv > cfg.max_nv:
        raise ValueError(f'the model has {model.nv} velocity coordinates, more than max_nv '
                         f'({cfg.max_nv})')
    if any(cfg.joint_armature):
        model = with_armature(model, cfg.joint_armature)
    if cfg.payload_link and cfg.payload_mass > 0.0:
        return apply_payload(model, cfg.payload_link, cfg.payload_mass, cfg.payload_com,
                             cfg.payload_inertia), model
    return model, model


def model_key(xml, cfg):
    """What an engine is built from: a change of any of these needs a new engine."""
    return (xml,) + tuple(getattr(cfg, p.name) for p in _MODEL_PARAMS)


def observer_settings(model, cfg):
    """ObserverSettings of ``cfg`` for ``model`` (None when disabled); ValueError if invalid."""
    if not cfg.observer_enabled:
        return None
    return ObserverSettings(
        model, cfg.observer_gain, cfg.observer_friction_viscous, cfg.observer_friction_coulomb,
        cfg.contact_threshold, cfg.contact_release_ratio, gap_factor=cfg.observer_gap_factor,
        gap_max=cfg.observer_max_dt, wrench_link=cfg.contact_wrench_link,
        wrench_point=cfg.contact_wrench_point, force_only=cfg.contact_wrench_force_only,
        torque_offset=cfg.observer_torque_offset,
        contact_frames=cfg.contact_frames, contact_frame_model=cfg.contact_frame_model,
        contact_normal=cfg.contact_normal, contact_force_threshold=cfg.contact_force_threshold,
        odom_twist_noise=cfg.odom_twist_noise)


def _attach(msg, field, n):
    """Give ``msg.<field>`` a zeroed ``array.array('d')`` of length n; return a numpy view of
    the array the message stores (writing the view updates the message in place)."""
    setattr(msg, field, array.array('d', bytes(8 * n)))
    stored = getattr(msg, field)
    return np.frombuffer(stored, dtype=np.float64) if n else np.zeros(0)


class Output:
    """One per-cycle output of fixed layout: ``msg`` (frame and names set) with float64
    arrays of the given lengths, and ``arrays[field]``, numpy views to write a cycle's results
    into.  :meth:`message` is what to publish: the serialized message
    (:class:`~ros_dynamics.ros.wire.Template`, written in place), or ``msg`` itself where the
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


def stamp_msg(stamp):
    """builtin_interfaces/Time of (sec, nanosec)."""
    t = itf.Time()
    t.sec, t.nanosec = stamp
    return t


class Engine:
    """One model, its pipeline, its input assembler and its messages (module text)."""

    RECORD_PERIOD_NS = 10_000_000     # joint states kept for ~/estimate_payload: 100 Hz,
    RECORD_LENGTH = 2000               # the last 20 s

    def __init__(self, models, xml, cfg):
        model, self.urdf_model = models    # with the payload parameters' payload, without
        self.model, self.xml, self.key = model, xml, model_key(xml, cfg)
        self.floating = bool(model.floating_base)
        self.nq, self.nv = int(model.nq), int(model.nv)
        self.joint_names = list(model.joint_names)
        self.base_q, self.base_v = (7, 6) if self.floating else (0, 0)
        self.with_gamma = self.nv <= cfg.christoffel_max_nv
        self.frame_id = cfg.world_frame or ('world' if self.floating else model.root_link)
        self.cycle = Cycle(model, cfg.coordinates, observer_settings(model, cfg))
        self.coords = self.cycle.coords
        # task frames and centroidal terms (ValueError with the reason for a bad task_frames)
        self.task = TaskSpaceOutput(model, self.coords, cfg.task_frames)
        self.forces_out = (ContactForcesOutput(self.frame_id, serialize_message)
                           if itf.HAVE_CONTACT_FORCES else None)
        self.joint_coordinate_names = (list(BASE_DOF_NAMES) if self.floating
                                       else []) + self.joint_names
        self.fused_outputs = None
        self.fused_ready = False
        self._lock = threading.Lock()
        self.tau = np.zeros(self.nv)
        self._messages()
        self.configure_input(cfg)
        self._warm_up(cfg)
        self.latest = None                 # (q, v, stamp) of the latest cycle, for services
        self._free_announced = False      # ~/contact_estimate said "free" since the last contact
        n = self.RECORD_LENGTH
        self._rec = (np.zeros(n), np.zeros((n, self.nq)), np.zeros((n, self.nv)),
                     np.zeros((n, self.nv)))
        self._rec_count, self._rec_next = 0, 0

    def configure_input(self, cfg):
        """The joint-input assembler for the input settings of ``cfg`` (cheap; no rebuild)."""
        co = self.coords
        mimic = co.joint_map
        hint = ('' if mimic is not None or not self.model.mimic else
                " (with coordinates 'mimic_reduced' the independent joints alone are accepted)")
        self.missing_hint = hint
        self.command_maps = NameMaps(self.joint_names, mimic, hint)   # ~/commanded_torque
        self.bounds = InputBounds(self.model, cfg.input_limit_factor, cfg.default_velocity_limit,
                                  cfg.default_effort_limit, cfg.max_abs_position)
        self.assembler = JointStateAssembler(
            self.joint_names, self.bounds, mimic, hint, max_age=cfg.joint_hold_max_age,
            max_lead=cfg.stamp_max_lead, reset_jump=cfg.stamp_reset_jump,
            allow_missing_velocity=cfg.allow_missing_velocity)
        self._restep(cfg)

    def configure_observer(self, cfg):
        """A new pipeline with the observer settings of ``cfg`` (ValueError if invalid)."""
        self.cycle = Cycle(self.model, cfg.coordinates, observer_settings(self.model, cfg))
        self.coords = self.cycle.coords
        self._warm_cycle()
        self._restep(cfg)

    def configure_wrench(self, cfg):
        """The contact wrench's link, point and model of ``cfg``: no restart of the observer
        (they do not change its model)."""
        if self.cycle.settings is not None:
            self.cycle.settings.set_wrench(self.model, cfg.contact_wrench_link,
                                           cfg.contact_wrench_point,
                                           cfg.contact_wrench_force_only)

    def _restep(self, cfg):
        """:attr:`step` on the current assembler and pipeline (the compiled call writing into
        the serialized messages once its kernel is ready)."""
        with self._lock:          # (the warm-up thread and a parameter change)
            self.joint_state_cycle = JointStateCycle(
                self.assembler, self.cycle, self.q, self.v, self.tau, self.fused_outputs,
                cfg.effort_source, cfg.commanded_torque_timeout, cfg.odom_max_age)
            if self.fused_ready:
                self.joint_state_cycle.compile()

    def step(self, names, position, velocity, effort, sec, nanosec, now_ns, base, command,
             christoffel):
        """One joint-state message through the cycle
        (:meth:`~ros_dynamics.estimation.joint_state_cycle.JointStateCycle.step`); a cycle's
        state is kept for the services and, with its torque, for ~/estimate_payload."""
        out = self.joint_state_cycle.step(names, position, velocity, effort, sec, nanosec,
                                          now_ns, base, command, christoffel)
        if out.verdict == 'cycle':
            self.remember(self.q, self.v, (sec, nanosec))
            if out.tau is not None:
                self.record(out.t_ns, self.q, self.v, out.tau)
        return out

    def outputs(self, stamp, out, cfg, wanted):
        """(topic, message) pairs to publish for one cycle (``out``: its outcome) at
        ``stamp`` ((sec, nanosec)); topics: 'dynamics', 'task_space', 'christoffel',
        'contact_estimate', 'contact_forces' (each observer update with contact frames),
        'gravity_torque', 'external_torque'; ``wanted(topic)``: has the stream a subscriber (a
        message nobody subscribes to is not filled).  ~/contact_estimate: every update in
        contact, once when free (the first, and after a release), to its subscribers."""
        res, written = out.result, out.written
        if itf.HAVE_MSGS:
            if cfg.publish_dynamics and wanted('dynamics'):
                yield 'dynamics', self.dynamics_message(stamp, res.out, written)
            if self.task_out is not None and wanted('task_space'):
                yield 'task_space', self.task_space_message(stamp)
            if res.out.gamma is not None:
                yield 'christoffel', self.christoffel_message(stamp, res.out)
            contact = res.contact
            if contact is not None and cfg.publish_contact_estimate and (
                    contact.in_contact or not self._free_announced):
                # (volatile: a sample nobody subscribes to reaches no one, now or later)
                if wanted('contact_estimate'):
                    yield 'contact_estimate', self.contact_message(stamp, res)
                self._free_announced = not contact.in_contact
            if res.forces is not None and itf.HAVE_CONTACT_FORCES and wanted('contact_forces'):
                yield 'contact_forces', self.forces_out.message(stamp, res.forces)
        if (cfg.publish_gravity_torque or not itf.HAVE_MSGS) and wanted('gravity_torque'):
            yield 'gravity_torque', self.torque_message(self.g_out, stamp, res.terms.g, written)
        if res.residual is not None and cfg.publish_external_torque and wanted(
                'external_torque'):
            yield 'external_torque', self.torque_message(self.ext_out, stamp, res.residual,
                                                         written)

    def reset_observer(self):
        """~/reset_observer: (success, message); also forgets the stamp histories, so that a
        source whose clock was reset is accepted again."""
        self.assembler.forget_stamps()
        if self.cycle.observer is None:
            return False, 'observer disabled; stamp history cleared'
        self.cycle.reset('requested (~/reset_observer)')
        self._free_announced = False
        return True, ('observer will be re-initialized at the next joint state; stamp history '
                      'cleared')

    def sources_summary(self):
        """The joint-state sources seen, for the shutdown summary."""
        return '; '.join(f'{names} ({n} messages)' for names, n, _ in self.assembler.sources)

    def _warm_cycle(self):
        q0 = np.zeros(self.nq)
        if self.floating:
            q0[6] = 1.0
        v0 = np.zeros(self.nv)
        for k in range(2):
            self.cycle.step(q0, v0, np.zeros(self.nv), 10**9 + k * 10**6, christoffel=False)
        self.cycle.reset('start')
        return q0, v0

    def _warm_up(self, cfg):
        """Compile (or load) and check the kernels of a cycle before the model is used, so that
        the first joint states are not delayed by a compile.  The ``geometry`` kernel (Γ, link
        placements and Jacobians: the Γ stream, the contact wrench, markers) and the compiled
        cycle's are loaded too if the disk cache or this process has them; else
        :meth:`warm_later` compiles them once the first ~/dynamics is out (the first start
        after an install: ~/dynamics does not wait ≈ 5 s of CPU for compiles it does not need;
        ~/christoffel starts, and the compiled cycle takes over, when they are done)."""
        q0, v0 = self._warm_cycle()
        res = self.cycle.step(q0, v0, None, 0)
        if res.error:
            raise ValueError(res.error)
        z = np.zeros(len(self.joint_names))       # the joint-input kernel, on a scratch copy
        scratch = JointStateAssembler(self.joint_names, self.bounds)
        scratch.add(self.joint_names, z, z, z, 0, 0, 0)
        self.geometry_ready = False
        self._warm_thread = None
        if cached(geometry_kernel):
            self.warm_geometry()
        if cached(fused_step):
            self.warm_fused()
        if self.task.enabled:        # the task-space kernel (≈ 5.5 s of CPU when not cached)
            self.task.after_terms(self.cycle.data)

    def warm_fused(self):
        """Compile (or load) the compiled cycle's kernel (any thread); then ``fused_ready``
        and, from the next joint state on, the compiled call serves the usual cycles."""
        with self._lock:
            self.joint_state_cycle.compile()
            self.fused_ready = True

    def warm_geometry(self):
        """Compile (or load) the geometry kernel on this model (any thread: it uses a
        workspace of its own); then ``geometry_ready``."""
        q0 = np.zeros(self.nq)
        if self.floating:
            q0[6] = 1.0
        if self.with_gamma:
            christoffel(self.model, q0)
        if self.model.body_names:
            link_jacobian(self.model, q0, self.model.body_names[-1])
        self.geometry_ready = True

    def warm_later(self):
        """Start :meth:`warm_geometry` and :meth:`warm_fused` on a thread, once, for those not
        ready; True if it started now."""
        if (self.geometry_ready and self.fused_ready) or self._warm_thread is not None:
            return False

        def warm():
            if not self.geometry_ready:
                self.warm_geometry()
            if not self.fused_ready:
                self.warm_fused()

        self._warm_thread = threading.Thread(target=warm, name='kernel_warmup',
                                                 daemon=True)
        self._warm_thread.start()
        return True

    def _messages(self):
        co, m, n = self.coords, self.coords.nv, self.nv
        self.gam_out = self.dyn_out = self.contact_msg = self.task_out = None
        if itf.HAVE_TASK_SPACE and self.task.enabled:
            self.task_out = TaskSpaceStream(self.task, itf.TaskSpace(), serialize_message,
                                            itf.Pose, self.frame_id)
        if itf.HAVE_MSGS:
            self.dyn_out = Output(itf.Dynamics(), self.frame_id, 'names', co.names, {
                'position': co.nq, 'velocity': m, 'mass_matrix': m * m,
                'coriolis_matrix': m * m, 'mass_matrix_dot': m * m, 'gravity': m})
            a = self.dyn_out.arrays
            self.dyn_q, self.dyn_v, self.g_dyn_view = a['position'], a['velocity'], a['gravity']
            self.M_view, self.C_view, self.Mdot_view = (
                a[f].reshape(m, m) for f in ('mass_matrix', 'coriolis_matrix',
                                             'mass_matrix_dot'))
            msg = self.contact_msg = itf.ContactEstimate()
            msg.header.frame_id = self.frame_id
            msg.names = list(self.joint_coordinate_names)
            self.contact_r = _attach(msg, 'external_torque', n)
        # joint coordinates: the state is gathered straight into ~/dynamics
        direct = itf.HAVE_MSGS and co.identity
        self.q = self.dyn_q if direct else np.zeros(self.nq)
        self.v = self.dyn_v if direct else np.zeros(self.nv)
        if self.floating:
            self.q[6] = 1.0
        self.g_out = Output(itf.JointState(), '', 'name', self.joint_coordinate_names,
                            {'effort': self.nv})
        self.ext_out = Output(itf.JointState(), '', 'name', self.joint_coordinate_names,
                              {'effort': self.nv})
        # where the compiled cycle writes: M, C, dM/dt, g of ~/dynamics, ~/gravity_torque's and
        # ~/external_torque's efforts (in the serialized messages' float64 words)
        self.fused_outputs = None
        templates = (self.dyn_out and self.dyn_out.template, self.g_out.template,
                     self.ext_out.template)
        if direct and all(t is not None for t in templates):
            dyn, grav, ext = templates
            o = dyn.offsets
            self.fused_outputs = (dyn.payload, grav.payload, ext.payload, np.array(
                [o['mass_matrix'], o['coriolis_matrix'], o['mass_matrix_dot'], o['gravity'],
                 grav.offsets['effort'], ext.offsets['effort']], dtype=np.int64))

    def dynamics_message(self, stamp, out, written=False):
        """~/dynamics filled with one cycle's results (published coordinates); ``written``:
        the compiled cycle wrote them already."""
        if written:
            return self.dyn_out.message(stamp)
        if not self.coords.identity:   # joint coordinates: q, v were gathered into it
            np.copyto(self.dyn_q, out.q)
            np.copyto(self.dyn_v, out.v)
        np.copyto(self.M_view, out.d.M)
        np.copyto(self.C_view, out.d.C)
        np.copyto(self.Mdot_view, out.d.Mdot)
        np.copyto(self.g_dyn_view, out.d.g)
        return self.dyn_out.message(stamp)

    def task_space_message(self, stamp):
        """~/task_space of the cycle just computed (its kinematics pass, in cycle.data)."""
        self.task_out.write(self.task.after_terms(self.cycle.data))
        return self.task_out.message(stamp)

    def christoffel_message(self, stamp, out):
        if self.gam_out is None:        # built at the first streamed Gamma
            co, m = self.coords, self.coords.nv
            self.gam_out = Output(itf.Christoffel(), self.frame_id, 'names', co.names,
                                  {'position': co.nq, 'christoffel': m * m * m})
        a = self.gam_out.arrays
        np.copyto(a['position'], out.q)
        np.copyto(a['christoffel'], out.gamma.reshape(-1))
        return self.gam_out.message(stamp)

    def torque_message(self, output, stamp, values, written=False):
        """``output`` (g_out or ext_out, sensor_msgs/JointState) with effort = ``values``
        (``written``: the compiled cycle wrote them already)."""
        if not written:
            np.copyto(output.arrays['effort'], values)
        return output.message(stamp)

    def contact_message(self, stamp, res):
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
            p.x, p.y, p.z = (float(x) for x in self.cycle.settings.wrench_point)
            f.x, f.y, f.z = (float(x) for x in wrench[:3])
            t.x, t.y, t.z = (float(x) for x in wrench[3:])
        elif m.wrench_link:
            m.wrench_link = ''
            p.x = p.y = p.z = f.x = f.y = f.z = t.x = t.y = t.z = 0.0
        return m

    def record(self, t_ns, q, v, tau):
        """Keep (t, q, v, tau) at 100 Hz for ~/estimate_payload (a copy every 10 ms)."""
        if t_ns >= self._rec_next or t_ns < self._rec_next - 2 * self.RECORD_PERIOD_NS:
            self._rec_next = t_ns + self.RECORD_PERIOD_NS
            k = self._rec_count % self.RECORD_LENGTH
            t, Q, V, T = self._rec
            t[k] = t_ns * 1e-9
            Q[k], V[k], T[k] = q, v, tau
            self._rec_count += 1

    def recorded(self, window=0.0):
        """The recorded joint states of the last ``window`` s (0: all), oldest first."""
        n = min(self._rec_count, self.RECORD_LENGTH)
        start = self._rec_count - n
        order = np.arange(start, start + n) % self.RECORD_LENGTH
        t, Q, V, T = (a[order].copy() for a in self._rec)
        keep = t >= t[-1] - window if (window > 0 and n) else np.ones(n, dtype=bool)
        return Samples(t[keep], Q[keep], V[keep], T[keep], self.joint_coordinate_names)

    def remember(self, q, v, stamp):
        """Keep the cycle's state and stamp ((sec, nanosec)) for the services (copied: the
        buffers are reused)."""
        latest = (q.copy(), v.copy(), stamp)
        self.latest = latest

    # ------------------------------------------------------------------ requests
    def request_state(self, names, position, velocity, base_pose=None, base_twist=None,
                      with_velocity=True):
        """(q, v) of a service request's state under the input policy of joint_states;
        ValueError with the reason."""
        nmap = JointNameMap(names, self.joint_names, self.coords.joint_map, self.missing_hint)
        if nmap.unknown:
            raise ValueError('unknown joint(s) ' + ', '.join(
                f'{j!r}{close_names(j, self.joint_names, "joints")}' for j in nmap.unknown))
        if nmap.error is not None:
            raise ValueError(nmap.error)
        n = len(names)
        if len(position) != n:
            raise ValueError(f'{len(position)} positions for {n} names')
        if with_velocity and len(velocity) not in (0, n):
            raise ValueError(f'{len(velocity)} velocities for {n} names (give none for zero '
                             'velocity)')
        q, v = np.zeros(self.nq), np.zeros(self.nv)
        qj, vj = q[self.base_q:], v[self.base_v:]
        nmap.positions(np.asarray(position, dtype=float), qj)
        if with_velocity and len(velocity):
            nmap.rates(np.asarray(velocity, dtype=float), vj)
        bad = self.bounds.violation(qj, vj)
        if bad is not None:
            raise ValueError(bad[1])
        if self.floating:
            p, o = base_pose.position, base_pose.orientation
            q[:7] = (p.x, p.y, p.z, o.x, o.y, o.z, o.w)
            if with_velocity:
                t = base_twist
                v[:6] = (t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y,
                         t.angular.z)
            if not (np.abs(q[:3]) <= self.bounds.position).all() or not np.isfinite(v[:6]).all():
                raise ValueError('NaN, inf or out-of-bounds value in the base pose or twist')
            from ..core.configuration import is_normalized, normalize
            if not is_normalized(self.model, q):   # the core's tolerance, as for odom
                raise ValueError('base_pose orientation is not a unit quaternion')
            q = normalize(self.model, q)
        return q, v


_MODEL_PARAMS = tuple(p for p in PARAMETERS if p.affects == 'model'
                      and p.name != 'robot_description')


def build_engine(xml, cfg, model=None):
    """The one build path (start-up and run time): the models (unless given, as
    :func:`load_model` returns them for ``cfg``) and the engine; ValueError with the reason."""
    return Engine(model if model is not None else load_model(xml, cfg), xml, cfg)
