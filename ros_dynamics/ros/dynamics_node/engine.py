"""What the dynamics node builds for one robot model, and its cycle: the model, its messages,
the cycle (:class:`~ros_dynamics.estimation.cycle.JointStateCycle`) and the joint-state reader
behind one call (:meth:`Engine.run`), and their warm-up.

An :class:`Engine` is built completely (model, every kernel warmed up on it, its messages)
before it replaces the current one, off the executor thread; :func:`build_engine` is the one
build path, at start-up and at run time.  Its messages
(:class:`~ros_dynamics.ros.dynamics_node.messages.ModelMessages`) are built here: the compiled
cycle writes into them, what is published and when is
:mod:`ros_dynamics.ros.dynamics_node.outputs`'; what the services read of the cycle,
:mod:`ros_dynamics.ros.dynamics_node.requests`'.
"""
from __future__ import annotations

import threading

import numpy as np

from rclpy.serialization import deserialize_message

from ...core.api import christoffel, link_jacobian
from ...core.configuration import base_nq, base_nv, neutral
from ...core.coordinates import output_coordinates
from ...core.jit import cached
from ...core.kernels import geometry as geometry_kernel
from ...core.model import with_armature
from ...core.urdf import load_urdf_string
from ...estimation.contact_state import ContactStateOptions
from ...estimation.cycle import JointStateCycle, node_cycle
from ...estimation.cycle_kernel import M_NOW, entry_point
from ...estimation.cycle_state import ObserverSettings
from ...estimation.joint_input import InputBounds
from ...estimation.rules import FREE
from ...identification.payload import apply_payload
from .. import interfaces as itf
from .messages import ModelMessages
from .parameters import PARAMETERS
from .requests import Requests
from .task_space_output import TaskSpaceOutput
from .wire import NOT_READ, JointStateReader, compile_reader, read_and_step


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
        threshold_velocity=cfg.contact_threshold_velocity,
        threshold_torque=cfg.contact_threshold_torque, odom_twist_noise=cfg.odom_twist_noise,
        contact_state=ContactStateOptions(fast_gain=cfg.contact_fast_gain,
                                          touchdown_height=cfg.contact_touchdown_height,
                                          lift_speed=cfg.contact_lift_speed))


class Engine:
    """One model, its cycle behind :meth:`run`, and its messages (module text)."""

    def __init__(self, models, xml, cfg):
        model, self.urdf_model = models    # with the payload parameters' payload, without
        self.model, self.xml, self.key = model, xml, model_key(xml, cfg)
        self.floating = bool(model.floating_base)
        self.nq, self.nv = int(model.nq), int(model.nv)
        self.joint_names = list(model.joint_names)
        self.with_gamma = self.nv <= cfg.christoffel_max_nv
        self.frame_id = cfg.world_frame or ('world' if self.floating else model.root_link)
        self.coords = coords = output_coordinates(model, cfg.coordinates)
        # task frames and centroidal terms (ValueError with the reason for a bad task_frames)
        self.task = TaskSpaceOutput(model, coords, cfg.task_frames)
        self.messages = ModelMessages(model, coords, self.frame_id, self.task)
        self.messages.with_gamma = self.with_gamma
        # the cycle, writing into the messages (joint coordinates)
        self.cycle = JointStateCycle(
            model, cfg.coordinates, observer_settings(model, cfg), self.input_bounds(cfg),
            self.messages.compiled, cfg.effort_source, cfg.commanded_torque_timeout,
            cfg.odom_max_age, **_input_settings(cfg))
        self.messages.workspace = self.cycle.state.data
        self.reader = JointStateReader(lambda raw: deserialize_message(raw, itf.JointState))
        self._step = entry_point(read_and_step)   # (wire.read_and_step without numba's dispatch)
        self.requests = Requests(model, self.messages.joint_coordinate_names, self.cycle)
        self.requests.configure(self.cycle.bounds, self.cycle.state.coords.joint_map,
                                self.cycle.assembler.hint)
        self.command = None           # (joint torques, receipt ns) of the latest command
        self._warm_up(cfg)
        self._cycles = 0

    def input_bounds(self, cfg):
        return InputBounds(self.model, cfg.input_limit_factor, cfg.default_velocity_limit,
                           cfg.default_effort_limit, cfg.max_abs_position)

    def configure_input(self, cfg):
        """The input settings of ``cfg`` (cheap; no rebuild): the sources forgotten."""
        self.cycle.configure_inputs(self.input_bounds(cfg), effort_source=cfg.effort_source,
                                    commanded_timeout=cfg.commanded_torque_timeout,
                                    odom_max_age=cfg.odom_max_age, **_input_settings(cfg))
        self.requests.configure(self.cycle.bounds, self.cycle.state.coords.joint_map,
                                self.cycle.assembler.hint)
        self.reader.forget()

    def configure_observer(self, cfg):
        """The observer settings of ``cfg`` (ValueError if invalid): the observer restarts."""
        settings = observer_settings(self.model, cfg)
        self._warm_cycle(cfg)
        self.cycle.configure_observer(settings)

    def configure_wrench(self, cfg):
        """The contact wrench's link, point and model of ``cfg``: no restart of the observer
        (they do not change its model)."""
        settings = self.cycle.state.settings
        if settings is not None:
            settings.set_wrench(self.model, cfg.contact_wrench_link, cfg.contact_wrench_point,
                                cfg.contact_wrench_force_only)

    # ------------------------------------------------------------------ the cycle
    def run(self, raw, now_ns, christoffel):
        """One serialized joint state through the cycle: read and stepped in one compiled call
        when it is of the current layout (wire.read_and_step), else read
        (:class:`~ros_dynamics.ros.dynamics_node.wire.JointStateReader`) and stepped
        (:meth:`~ros_dynamics.estimation.cycle.JointStateCycle.step_message`); returns its
        outcome, None if it cannot be read (then :meth:`unreadable` says why).  After the first
        cycles (their outputs are out) the kernels not loaded at the build are compiled in the
        background (:meth:`warm_later`, noted once)."""
        js, reading = self.cycle, self.reader.reading
        if type(raw) is not bytes:           # (the entry point takes bytes only)
            raw = bytes(raw)
        if js.commanded:
            js.torque(self.command)
        reading.fields[M_NOW] = now_ns
        code = self._step(js.cycle_model.struct, js.data.struct, raw, reading)
        if code != NOT_READ:
            out = js.answered(code, reading.fields, christoffel)
        else:
            out = self._read_and_step(raw, now_ns, christoffel)
        if self._warm_due and out is not None and out.verdict == 'cycle':
            self._cycles += 1
            if self._cycles >= 2 and self.warm_later():
                out.note('warm_up', 'compiling the Christoffel/Jacobian kernel in the '
                         'background (~2 s of CPU, once after an install): ~/christoffel starts '
                         'then', 'info')
        return out

    def _read_and_step(self, raw, now_ns, christoffel):
        """A message not of the current layout: read, its layout made the current one, stepped;
        its names kept by the reader for the next messages when they need no Python before the
        step (a joint named twice, the independent joints of mimic_reduced coordinates do)."""
        message = self.reader.read(raw)
        if message is None:
            return None
        js = self.cycle
        out = js.step_message(*message, now_ns, None, self.command, christoffel)
        if not js.fusable() or message[0] is not self.reader.names:
            self.reader.forget()
        return out

    def odometry(self, q7, v6, stamp_ns):
        """A floating base's latest odometry (validated by the node)."""
        self.cycle.odometry(q7, v6, stamp_ns)

    def reset_observer(self):
        """~/reset_observer: (success, message); also forgets the stamp histories, so that a
        source whose clock was reset is accepted again."""
        self.cycle.assembler.forget_stamps()
        if self.cycle.state.settings is None:
            return False, 'observer disabled; stamp history cleared'
        self.cycle.reset('requested (~/reset_observer)')
        return True, ('observer will be re-initialized at the next joint state; stamp history '
                      'cleared')

    def cycle_summary(self):
        """How the cycles ran (for /diagnostics) and the free-motion observer updates."""
        return self.cycle.summary(), int(self.cycle.counts[FREE])

    def sources_summary(self):
        """The joint-state sources seen, for the shutdown summary."""
        return '; '.join(f'{names} ({n} messages)'
                         for names, n, _ in self.cycle.assembler.sources)

    def _warm_cycle(self, cfg):
        """The node's cycle, with this model and these settings, on two messages at the neutral
        configuration (a scratch copy: nothing of this engine's state changes): its compiled
        step and what follows it compiled (or loaded), the model checked (ValueError with the
        reason); returns the scratch's cycle."""
        model = self.model
        js = node_cycle(model, observer_settings(model, cfg), cfg.coordinates,
                        self.input_bounds(cfg))
        q0, bq, bv = neutral(model), base_nq(model), base_nv(model)
        z = np.zeros(self.nv - bv)
        base = (q0[:bq], np.zeros(bv)) if self.floating else None
        for k in range(2):
            out = js.step(tuple(self.joint_names), q0[bq:], z, z, 1, k * 10**6, 0, base)
            if out.verdict != 'cycle':
                raise ValueError(out.refusal[1])
        return js

    def _warm_up(self, cfg):
        """Compile (or load) and check the kernels of a cycle before the model is used, so that
        the first joint states are not delayed by a compile: the node serves no joint state
        before its compiled step is ready (the set-up, scripts/setup_env.sh, compiles it into
        the disk cache; else it is compiled here, once).  The ``geometry`` kernel (Γ, link
        placements and Jacobians: the Γ stream, the contact wrench, markers) is loaded too if
        the disk cache or this process has it; else :meth:`warm_later` compiles it once the
        first ~/dynamics is out (~/christoffel starts when it is done)."""
        compile_reader()
        js = self._warm_cycle(cfg)
        self._warm_thread = None
        self._warm_due = True             # the geometry kernel still to load (warm_later)
        if cached(geometry_kernel):
            self.warm_geometry()
        if self.task.enabled:        # the task-space kernel (≈ 5.5 s of CPU when not cached)
            self.task.after_terms(js.state.data)

    @property
    def geometry_ready(self):
        return self.messages.geometry_ready

    def warm_geometry(self):
        """Compile (or load) the geometry kernel on this model (any thread: it uses a
        workspace of its own); then Gamma can be made (``messages.geometry_ready``)."""
        q0 = neutral(self.model)
        if self.with_gamma:
            christoffel(self.model, q0)
        if self.model.body_names:
            link_jacobian(self.model, q0, self.model.body_names[-1])
        self.messages.geometry_ready = True

    def warm_later(self):
        """Start :meth:`warm_geometry` on a thread, once, if it is not ready; True if it
        started now."""
        self._warm_due = False
        if self.geometry_ready or self._warm_thread is not None:
            return False
        self._warm_thread = threading.Thread(target=self.warm_geometry, name='kernel_warmup',
                                             daemon=True)
        self._warm_thread.start()
        return True


def _input_settings(cfg):
    """The joint-input assembler's settings of ``cfg``."""
    return dict(max_age=cfg.joint_hold_max_age, max_lead=cfg.stamp_max_lead,
                reset_jump=cfg.stamp_reset_jump,
                allow_missing_velocity=cfg.allow_missing_velocity)


_MODEL_PARAMS = tuple(p for p in PARAMETERS if p.affects == 'model'
                      and p.name != 'robot_description')


def build_engine(xml, cfg, model=None):
    """The one build path (start-up and run time): the models (unless given, as
    :func:`load_model` returns them for ``cfg``) and the engine; ValueError with the reason."""
    return Engine(model if model is not None else load_model(xml, cfg), xml, cfg)
