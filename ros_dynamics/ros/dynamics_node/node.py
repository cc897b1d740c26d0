"""``dynamics_node``: the ROS 2 adapter over the per-cycle pipeline.

One joint state: read and run (:meth:`Engine.run
<ros_dynamics.ros.dynamics_node.engine.Engine.run>`: one compiled call) -> published
(:meth:`Outputs.publish <ros_dynamics.ros.dynamics_node.outputs.Outputs.publish>`);
docs/architecture.md walks it.  Fresh when behind: joint states waiting behind the one being
handled are taken in the same callback (:class:`~ros_dynamics.ros.dynamics_node.inbox.Inbox`),
each into the cycle (the observer takes every sample), and only the newest is published
(``catch_up``; the others counted in /diagnostics).  The parameters are the table of
:mod:`ros_dynamics.ros.dynamics_node.parameters`; the model and the cycle of one robot are an
:class:`~ros_dynamics.ros.dynamics_node.engine.Engine`; what is published, and when, is
:class:`~ros_dynamics.ros.dynamics_node.outputs.Outputs`'; the services run on their own
executor thread (:mod:`ros_dynamics.ros.dynamics_node.services`).  Topics, services and
policies: docs/ros_interface.md.
"""
from __future__ import annotations

import gc
import os
import queue
import sys
import threading
import time

from ros_dynamics.ros import compat

if __name__ == '__main__' or os.path.basename(sys.argv[0] if sys.argv else '') in (
        'dynamics_node', 'dynamics_lifecycle_node'):
    compat.start_entry_point()   # quiet signals during imports; the wheels' library path

import numpy as np  # noqa: E402
from rcl_interfaces.msg import SetParametersResult  # noqa: E402
from rclpy.clock import Clock, ClockType, JumpThreshold  # noqa: E402
from rclpy.duration import Duration  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, QoSProfile,  # noqa: E402
                       ReliabilityPolicy)
from rclpy.serialization import deserialize_message  # noqa: E402

from ros_dynamics.core.configuration import (  # noqa: E402
    FREE_QUATERNION, QUATERNION_TOLERANCE)
from ros_dynamics.ros import interfaces as itf, process  # noqa: E402
from ros_dynamics.ros.process import ThrottledLog  # noqa: E402
from ros_dynamics.ros.dynamics_node.engine import build_engine, load_model, model_key  # noqa: E402
from ros_dynamics.ros.dynamics_node.engine import observer_settings  # noqa: E402
from ros_dynamics.ros.dynamics_node.inbox import Inbox  # noqa: E402
from ros_dynamics.ros.dynamics_node.outputs import Outputs  # noqa: E402
from ros_dynamics.ros.dynamics_node.parameters import PARAMETERS, descriptor, validate  # noqa: E402
from ros_dynamics.ros.dynamics_node.services import Host, Services  # noqa: E402
from ros_dynamics.ros.dynamics_node.task_space_output import resolve_task_frames  # noqa: E402
from ros_dynamics.ros.dynamics_node.wire import (  # noqa: E402
    OdometryReader, compile_reader, stamp_ns)

RELIABILITY = {'reliable': ReliabilityPolicy.RELIABLE,
               'best_effort': ReliabilityPolicy.BEST_EFFORT}


def _show(name, value):
    if name == 'robot_description':
        return f'<URDF, {len(value)} characters>' if value else "''"
    return repr(list(value) if isinstance(value, tuple) else value)


class DynamicsNode(Node):
    """Publishes M, C, dM/dt, g, Gamma and the observer outputs per joint state."""

    MANAGED = False   # a lifecycle node (ManagedDynamicsNode) builds at configure, runs if active

    def __init__(self, node_name='dynamics', **kwargs):
        super().__init__(node_name, **kwargs)
        self._log = self.get_logger()
        self.config = validate({p.name: self.declare_parameter(p.name, p.default,
                                                               descriptor(p)).value
                                for p in PARAMETERS})
        cfg = self.config
        self._engine = None
        self._topic_xml = None            # latest description received on the topic
        self._base = None                 # (q7, v6, stamp ns) of the latest valid odometry
        self.stats = {'accepted': 0, 'observer_outputs': 0}
        self.refused = {}                 # reason kind -> count (rejected or ignored inputs)
        self._throttled = ThrottledLog(self._log)
        if not itf.HAVE_MSGS:
            self._log.warning(itf.BUILD_HINT)
        out_qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=cfg.qos_depth,
                             reliability=RELIABILITY[cfg.qos_reliability],
                             durability=DurabilityPolicy.VOLATILE)
        in_qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=cfg.input_qos_depth,
                            reliability=RELIABILITY[cfg.input_qos_reliability],
                            durability=DurabilityPolicy.VOLATILE)
        latched = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                             reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        # the data streams, ~/markers, ~/external_wrench, /diagnostics
        self._outputs = Outputs(self.create_publisher, self._log, self.get_name(), out_qos,
                                latched, self._warn)
        # model builds: one path, a builder thread; installed by a steady-clock timer (runs
        # while simulated time is paused) or at the next joint state.  The timer runs only
        # while a build is pending: its 20 Hz poll cost an idle node ~5 ms of CPU a second
        # (benchmarks/results/vs_pinocchio_idle.md); the EventsExecutor takes no guard condition
        self._build_id = self._handled_id = 0
        self._build_queue = queue.SimpleQueue()
        self._built = queue.SimpleQueue()
        threading.Thread(target=self._builder, name='model_builder', daemon=True).start()
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self._install_timer = self.create_timer(0.05, self._install_built, clock=steady)
        self._install_timer.cancel()                  # (started by each build request)
        self.create_timer(1.0, self._tick, clock=steady)
        self._sim_time = self.get_clock().ros_time_is_active   # else the system clock is read
        self._jump_handle = self.get_clock().create_jump_callback(
            JumpThreshold(min_forward=None, min_backward=Duration(nanoseconds=-1),
                          on_clock_change=True), post_callback=self._on_clock_jump)
        self.create_subscription(itf.String, 'robot_description', self._on_description, latched)
        # joint states and odometry as serialized bytes, read without a Python message object
        # (wire.py); the joint states waiting behind one taken in its callback (inbox.py)
        compile_reader()                          # its kernels compiled (or loaded) now
        self._inbox = Inbox(self.create_subscription(
            itf.JointState, 'joint_states', self._on_joint_state, in_qos, raw=True))
        self._odom_reader = OdometryReader(lambda raw: deserialize_message(raw, itf.Odometry))
        self._odom_inbox = Inbox(self.create_subscription(
            itf.Odometry, 'odom', self._on_odom, in_qos, raw=True))
        self.create_subscription(itf.JointState, '~/commanded_torque', self._on_commanded_torque,
                                 in_qos)
        self.service_host = None
        self.add_on_set_parameters_callback(self._check_parameters)
        self.add_post_set_parameters_callback(self._apply_parameters)
        self.active = not self.MANAGED
        if self.MANAGED:
            self._log.info('managed node: waiting for configure (lifecycle)')
        elif cfg.robot_description:
            # the start-up model through the same builder, waited for: nothing to answer yet
            # (inputs received meanwhile queue up and are answered once it is ready)
            self._request_build(cfg.robot_description, cfg, 'robot_description parameter')
            while self._engine is None and not self._wait_build(0.02):
                pass
        else:
            self._log.info('robot_description parameter empty: waiting for the robot '
                           f'description on {self.resolve_topic_name("robot_description")}')
        self.service_host = Services(Host(   # after the start-up model: no early refusals
            self.context, self.get_name(), self.get_namespace(),
            self.get_fully_qualified_name(), lambda: self._engine, lambda: self.config,
            lambda: self.get_clock().now().to_msg(), self.reset_observer,
            self.set_parameters_atomically))

    @property
    def engine(self):
        """The current :class:`~ros_dynamics.ros.dynamics_node.engine.Engine` (None before the
        first model)."""
        return self._engine

    def destroy_node(self):
        self._build_queue.put(None)
        if self.service_host is not None:
            self.service_host.close()
        return super().destroy_node()

    # ------------------------------------------------------------------ model builds
    def _request_build(self, xml, cfg, source, model=None):
        self._build_id += 1
        self._log.info(f'building the model from the {source} and loading the kernels (the '
                       'first start after an install compiles them; see the README)')
        self._build_queue.put((self._build_id, xml, cfg, source, model, time.monotonic()))
        self._install_timer.reset()

    def _builder(self):
        while True:
            req = self._build_queue.get()
            if req is None:
                return
            if req[0] != self._build_id:
                continue               # superseded by a newer request
            build_id, xml, cfg, source, model, t0 = req
            try:
                self._built.put((req, build_engine(xml, cfg, model), None))
            except Exception as exc:  # noqa: BLE001 - any failure of a user description
                self._built.put((req, None, exc))

    def _install_built(self):
        """Install what the builder finished; returns the reason of a failed build, if any."""
        failed = None
        while not self._built.empty():
            (build_id, xml, cfg, source, _, t0), eng, exc = self._built.get_nowait()
            if exc is not None:
                failed = str(exc) if isinstance(exc, ValueError) else f'{type(exc).__name__}: {exc}'
                if self._engine is None:
                    self._outputs.no_model(f'{source} rejected: {failed}')
                self._log.error(f'{source} rejected: {failed}; keeping the '
                                f'{"previous" if self._engine else "missing"} model; waiting '
                                'for a valid description (parameter robot_description or the '
                                'robot_description topic)')
            elif build_id == self._build_id:
                self._install(eng, time.monotonic() - t0)
            if build_id == self._build_id:
                self._handled_id = build_id
        if self._handled_id == self._build_id:    # nothing pending: the timer stops
            self._install_timer.cancel()
        return failed

    def _wait_build(self, seconds):
        """Wait up to ``seconds`` for the builder, install; the reason of a failure or None."""
        time.sleep(seconds)
        return self._install_built()

    def _install(self, eng, seconds):
        self._engine = eng
        self._outputs.install(eng.messages, self.config, len(eng.model.warnings),
                              eng.cycle.data.observer.free_peak)
        if self._base is not None and eng.floating:
            eng.odometry(*self._base)
        self._log.info(f'model built and kernels ready in {seconds:.1f} s')
        for text in eng.model.warnings:
            self._log.warning(f'URDF: {text}')
        if itf.HAVE_MSGS and self.config.christoffel_stream and not eng.with_gamma:
            self._log.warning(f'~/christoffel and ~/get_christoffel off for this model: nv = '
                              f'{eng.nv} > christoffel_max_nv ({self.config.christoffel_max_nv})')
        wait = self.resolve_topic_name('joint_states') + (
            f' and {self.resolve_topic_name("odom")}' if eng.floating else '')
        self._log.info(f'model ready: {len(eng.joint_names)} joints, nq={eng.nq}, nv={eng.nv}, '
                       f'floating_base={eng.floating}; waiting for {wait}')

    def _on_description(self, msg):
        self._topic_xml = msg.data
        cfg, eng = self.config, self._engine
        if cfg.robot_description:
            self._warn('topic_ignored', 'robot_description topic ignored while the parameter is '
                       'set', 'info')
        elif eng is None or eng.key != model_key(msg.data, cfg):
            self._request_build(msg.data, cfg, 'robot_description topic')

    # ------------------------------------------------------------------ parameters
    def _check_parameters(self, params):
        """Validate a change against the table and the model it applies to (nothing applied
        here; :meth:`_apply_parameters` does it)."""
        old = self.config
        try:
            cfg = old.replace(**{p.name: p.value for p in params})
            changed = cfg.changed(old)
            eng, models = self._engine, None
            target = eng.model if eng is not None else None
            rebuild = any(p.affects == 'model' for p in PARAMETERS if p.name in changed)
            xml = self._wanted_xml(cfg, 'robot_description' in changed)
            if rebuild and xml:
                try:
                    models = load_model(xml, cfg)
                except ValueError as exc:
                    raise ValueError(f'model rebuild failed: {exc}') from None
                target = models[0]
            if target is not None:
                observer_settings(target, cfg)
                resolve_task_frames(target, cfg.task_frames, cfg.coordinates)
        except Exception as exc:  # noqa: BLE001 - the reason goes back to the caller
            return SetParametersResult(successful=False, reason=(
                str(exc) if isinstance(exc, ValueError) else f'{type(exc).__name__}: {exc}'))
        self._pending = (cfg, changed, rebuild and xml, models)
        return SetParametersResult(successful=True)

    def _wanted_xml(self, cfg, description_changed):
        """The description a settings change applies to: a new parameter value (or, cleared,
        the topic's), else the current good model's, so that a refused description never blocks
        other settings."""
        eng = self._engine
        if description_changed or eng is None:
            return cfg.robot_description or self._topic_xml
        return eng.xml

    def _apply_parameters(self, params):
        cfg, changed, rebuild, model = self._pending
        old, self.config = self.config, cfg
        for k in changed:
            self._log.info(f'parameter {k}: {_show(k, getattr(old, k))} -> '
                           f'{_show(k, getattr(cfg, k))}')
        eng = self._engine
        kinds = {p.affects for p in PARAMETERS if p.name in changed}
        if rebuild:
            names = [k for k in changed if k in {p.name for p in PARAMETERS
                                                  if p.affects == 'model'}]
            self._log.info(f'rebuilding the model: {", ".join(names)} changed')
            self._request_build(self._wanted_xml(cfg, 'robot_description' in changed), cfg,
                                'parameters', model)
        if 'output' in kinds:
            self._outputs.configure(cfg)
        if eng is not None and not rebuild:
            if 'observer' in kinds:
                eng.configure_observer(cfg)
                self._log.info('observer re-initialized with the new settings')
            if 'input' in kinds:
                eng.configure_input(cfg)
            if 'wrench' in kinds and 'observer' not in kinds:
                eng.configure_wrench(cfg)

    # ------------------------------------------------------------------ inputs
    def _on_clock_jump(self, jump):
        # a jump back of the node clock of any size, or simulated time switched on or off (on
        # the executor thread, as /clock is received)
        self._sim_time = self.get_clock().ros_time_is_active
        if self._engine is not None:
            self._engine.cycle.clock_reset()

    def _on_odom(self, raw):
        try:
            q, v, sec, nanosec = self._odom_reader.read(raw)
        except Exception as exc:  # noqa: BLE001 - whatever the middleware delivered
            return self._refuse('odom_malformed', 'odom rejected: not a readable Odometry '
                                f'({type(exc).__name__}: {exc})')
        if not (np.isfinite(q).all() and np.isfinite(v).all()):
            return self._refuse('odom_nonfinite', 'odom rejected: non-finite pose or twist')
        norm = float(np.linalg.norm(q[FREE_QUATERNION]))
        if abs(norm * norm - 1.0) > QUATERNION_TOLERANCE:   # the core's rule
            return self._refuse('odom_quaternion', f'odom rejected: orientation quaternion norm '
                                f'{norm:.6g} is not 1')
        q[FREE_QUATERNION] /= norm
        self._base = (q, v, sec * 1_000_000_000 + nanosec)    # (odom_max_age)
        if self._engine is not None and self._engine.floating:
            self._engine.odometry(*self._base)

    def _on_commanded_torque(self, msg):
        eng = self._engine
        if eng is None:
            return self._refuse('no_model', '~/commanded_torque ignored: no robot model yet')
        tau = eng.requests.command(msg.name, msg.effort)
        if isinstance(tau, tuple):
            return self._refuse(*tau)
        eng.command = (tau, time.monotonic_ns())

    def _on_joint_state(self, raw):
        """Read and run the joint state, publish what it made (module text); fresh when behind:
        with joint states waiting behind it for longer than ``catch_up_after``,
        :meth:`_catch_up`."""
        t_in = time.perf_counter()
        if not self._built.empty():
            self._install_built()
        cfg = self.config
        newer, waited = self._inbox.newer(cfg.catch_up)
        odom = self._odometry_waiting() if newer else []
        if newer and waited > cfg.catch_up_after:
            return self._catch_up((raw,) + newer, odom)
        for raw in (raw,) + newer:        # (not behind: each published in turn)
            self._odometry_until(odom, raw)
            out = self._run(raw, christoffel=self._outputs.christoffel_due(cfg))
            if out is not None:
                self._outputs.publish(cfg, out, t_in)
        self._odometry_until(odom, None)

    def _catch_up(self, raws, odom):
        """Joint states that queued up while the node was behind (oldest first): each into the
        cycle (the observer takes every sample; each cycle's health and contacts judged), the
        newest cycle published, the others counted as skipped in /diagnostics; the odometry
        that waited with them (``odom``) taken in stamp order between them."""
        last, gamma = None, self._outputs.christoffel_due(self.config)
        for k, raw in enumerate(raws):
            self._odometry_until(odom, raw)
            out = self._run(raw, christoffel=gamma and k == len(raws) - 1)
            if out is not None:
                self._outputs.judge(out)
                last = out.kept()          # (the next message reuses the outcome)
        self._odometry_until(odom, None)
        if last is not None:
            self._outputs.send(self.config, last)
            self._outputs.health.skipped(len(raws) - 1)

    def _odometry_waiting(self):
        """The odometry messages waiting in their queue while joint states are taken from
        theirs (inbox.py), as [(stamp [ns] or None, serialized)], oldest first: left in the
        queue, each would be read only after every joint state taken, and those judged against
        an older base (odom_max_age)."""
        return [(stamp_ns(raw), raw) for raw in self._odom_inbox.newer()[0]]

    def _odometry_until(self, odom, raw):
        """Apply the waiting odometry stamped up to the joint state ``raw``'s stamp (None: all
        of it), in order; none waiting (the usual case), the stamp is not read."""
        if not odom:
            return
        stamp = None if raw is None else stamp_ns(raw)
        while odom and (stamp is None or odom[0][0] is None or odom[0][0] <= stamp):
            self._on_odom(odom.pop(0)[1])

    def _run(self, raw, christoffel=False):
        """One joint state through the engine's cycle (Gamma with it: ``christoffel``); its
        outcome if it made a cycle (counted and its notes logged), else None (its refusal
        counted and logged)."""
        eng = self._engine
        if eng is None or not self.active:
            return self._refuse(*(('no_model', 'joint_states ignored: no robot model yet')
                                  if self.active else
                                  ('inactive', 'joint_states ignored: the managed node is not '
                                   'active', 'info')))
        now = self.get_clock().now().nanoseconds if self._sim_time else time.time_ns()
        try:
            out = eng.run(raw, now, christoffel)
        except Exception as exc:  # noqa: BLE001 - whatever the middleware delivered
            return self._refuse('malformed', 'joint_states rejected: not a readable JointState '
                                f'({type(exc).__name__}: {exc})')
        if out is None:
            return self._refuse('malformed', 'joint_states rejected: not a readable JointState')
        self._account(out)
        return out if out.verdict == 'cycle' else None

    def _account(self, out):
        """Count and log one outcome of the cycle: its notes; a cycle, a held partial source or
        a refusal (with its reason)."""
        if out.notes:
            for note in out.notes:
                self._warn(*note)
        if out.verdict == 'cycle':
            stats = self.stats
            if not stats['accepted']:
                self._log.info('first joint state accepted: publishing')
            stats['accepted'] += 1
            stats['observer_outputs'] += out.result.residual is not None
        elif out.verdict == 'held':
            self.refused['held (partial source)'] = self.refused.get('held (partial source)',
                                                                     0) + 1
        else:
            self._refuse(*out.refusal)

    def _tick(self):
        """/diagnostics at 1 Hz (the steady timer)."""
        eng = self._engine
        summary, free = eng.cycle_summary() if eng is not None else (None, 0)
        self._outputs.tick(summary, free, self.config, self.get_clock().now().to_msg(),
                           self.get_fully_qualified_name())

    # ------------------------------------------------------------------ logging, requests
    def _warn(self, kind, text, level='warning'):
        self._throttled.log(kind, text, level, self.config.log_throttle_sec)

    def _refuse(self, kind, text, level='warning'):
        """Count an input that produced no output under its reason, and log why (throttled)."""
        self.refused[kind] = self.refused.get(kind, 0) + 1
        self._outputs.rejected(kind)
        self._warn(kind, text, level)

    def reset_observer(self):
        """~/reset_observer: (success, message)."""
        eng = self._engine
        if eng is None:
            return False, 'observer not available (no model yet)'
        self._outputs.observer_reset()
        return eng.reset_observer()

    def summary(self):
        """The shutdown summary: counts of accepted, refused (by reason) and published."""
        rejected = sum(n for k, n in self.refused.items() if not k.startswith('held'))
        by_kind = ', '.join(f'{k} {n}' for k, n in sorted(self.refused.items())) or 'none'
        text = (f'joint states accepted: {self.stats["accepted"]}, rejected: {rejected} '
                f'(by reason: {by_kind}); observer outputs: {self.stats["observer_outputs"]}; '
                f'skipped for a newer one (fresh when behind): '
                f'{self._outputs.health.input.total_skipped}; publications failed: '
                f'{self._outputs.publish_failed}')
        eng = self._engine
        if eng is not None:
            text += '; joint-state sources: ' + eng.sources_summary()
        return text


def main(args=None, node_class=DynamicsNode):
    """Entry point of ``dynamics_node``: spins until SIGINT/SIGTERM, then exits with status 0."""
    def make():
        node = node_class()
        gc.collect()
        gc.freeze()   # the long-lived start-up objects: shorter GC pauses at 1 kHz
        return node

    return process.run(make, args, executor=lambda node: node.config.executor,
                       on_stop=lambda node: node.get_logger().info(node.summary()))


if __name__ == '__main__':
    sys.exit(main())
