"""``dynamics_node``: a thin rclpy adapter over the ``ros_dynamics`` core library.

Interface (fixed by CONVENTIONS.md, documented in README "ROS 2 node"):

* subscribes ``joint_states`` (sensor_msgs/JointState), ``odom`` (nav_msgs/Odometry, floating
  base only), ``robot_description`` (std_msgs/String, transient local; used while the
  ``robot_description`` parameter is empty), ``~/commanded_torque`` (sensor_msgs/JointState,
  observer effort source ``commanded_torque``);
* publishes ``~/mass_matrix``, ``~/coriolis_matrix``, ``~/mass_matrix_dot``, ``~/christoffel``
  (std_msgs/Float64MultiArray), ``~/gravity_torque``, ``~/external_torque``
  (sensor_msgs/JointState), ``~/contact`` (std_msgs/Bool), ``~/contact_link`` (std_msgs/String,
  isolated link) and, while in contact, ``~/contact_wrench`` (geometry_msgs/WrenchStamped);
* services ``~/compute_christoffel`` and ``~/reset_observer`` (std_srvs/Trigger).

Input policy (each rejected message is logged, throttled, and produces no output at all):

* no model yet, stamp earlier than the last accepted one, a required joint missing, a required
  joint named twice, ``len(position) != len(name)``, ``velocity`` neither empty nor of
  ``len(name)``, ``effort`` neither empty nor of ``len(name)``, NaN/inf in position, velocity or
  effort of a required joint, empty ``velocity`` (unless ``allow_missing_velocity``: then the
  velocities are taken as zero), floating base without a valid odometry message yet.
* empty ``effort`` (effort source ``joint_state``): the dynamics terms are published, the
  observer is not updated and ``~/external_torque`` / ``~/contact*`` are not published.

Design for speed: one preallocated output message per topic whose ``data``/``effort`` field is
an ``array.array('d')`` shared with a numpy view, so a cycle is: map names (cached index array),
one fused ``rd.dynamics`` call, ``numpy.copyto`` into the views and ``publish``.
All state belonging to one robot model lives in one ``_Engine`` object, built completely
(including a warm-up call of every kernel) before it replaces the current one.
"""
from __future__ import annotations

import array
import inspect
import math
import os
import gc
import sys
import time

import numpy as np

from ros_dynamics.ros import compat as ros_compat

if __name__ == '__main__' or os.path.basename(sys.argv[0] if sys.argv else '') == 'dynamics_node':
    # Process entry point with the pip ROS wheels: re-execute once with LD_LIBRARY_PATH set.
    ros_compat.reexec_if_needed()

import rclpy  # noqa: E402
from rcl_interfaces.msg import FloatingPointRange, IntegerRange  # noqa: E402
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult  # noqa: E402
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, QoSProfile,  # noqa: E402
                       ReliabilityPolicy)
from nav_msgs.msg import Odometry  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from geometry_msgs.msg import WrenchStamped  # noqa: E402
from std_msgs.msg import Bool, Float64MultiArray, MultiArrayDimension, String  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

import ros_dynamics as rd  # noqa: E402

#: names of the six floating-base entries in ``~/gravity_torque`` / ``~/external_torque``
#: (the generalized force dual to v = [v_lin, omega] in the base frame: force, then torque).
BASE_DOF_NAMES = ('floating_base/force_x', 'floating_base/force_y', 'floating_base/force_z',
                  'floating_base/torque_x', 'floating_base/torque_y', 'floating_base/torque_z')

OUTPUT_FLAGS = ('publish_mass_matrix', 'publish_coriolis_matrix', 'publish_mass_matrix_dot',
                'publish_gravity_torque', 'publish_external_torque', 'publish_contact',
                'publish_contact_link', 'publish_contact_wrench')

#: parameters that change the model (a change rebuilds it, or is rejected if that fails)
MODEL_PARAMS = ('robot_description', 'floating_base', 'gravity')
OBSERVER_PARAMS = ('observer_enabled', 'observer_gain', 'observer_friction_viscous',
                   'observer_friction_coulomb', 'contact_threshold', 'contact_release_ratio')
EFFORT_SOURCES = ('joint_state', 'commanded_torque')
RELIABILITIES = {'reliable': ReliabilityPolicy.RELIABLE,
                 'best_effort': ReliabilityPolicy.BEST_EFFORT}

# (name, default, description, extra descriptor fields)
_PARAMS = (
    ('robot_description', '',
     'URDF XML of the robot. Empty: use the latest message on the robot_description topic.', {}),
    ('floating_base', False,
     'Give the URDF root a 6-DoF free joint; base pose/twist come from the odom topic.', {}),
    ('gravity', [0.0, 0.0, -9.81],
     'Gravity vector [gx, gy, gz] in m/s^2 in the world (root) frame.', {'dynamic_typing': True}),
    ('publish_mass_matrix', True, 'Publish ~/mass_matrix.', {}),
    ('publish_coriolis_matrix', True, 'Publish ~/coriolis_matrix.', {}),
    ('publish_mass_matrix_dot', True, 'Publish ~/mass_matrix_dot.', {}),
    ('publish_gravity_torque', True, 'Publish ~/gravity_torque.', {}),
    ('publish_external_torque', True, 'Publish ~/external_torque (observer residual).', {}),
    ('publish_contact', True, 'Publish ~/contact (observer detection).', {}),
    ('publish_contact_link', True,
     'Publish ~/contact_link (isolated contact link, empty string when free).', {}),
    ('publish_contact_wrench', True,
     'Publish ~/contact_wrench (least-squares contact force estimate) while in contact.', {}),
    ('contact_wrench_link', '',
     'Link at which ~/contact_wrench is estimated; empty: the isolated contact link.', {}),
    ('contact_wrench_point', [0.0, 0.0, 0.0],
     'Contact point in the frame of that link (m): where the force is assumed to act.',
     {'dynamic_typing': True}),
    ('contact_wrench_force_only', True,
     'Estimate a pure force at the point (J_lin^T f = r, needs >= 3 joints up to the link); '
     'False: a minimum-norm 6-D wrench.', {}),
    ('christoffel_stream', True,
     'Publish ~/christoffel with the other terms (every christoffel_decimation-th accepted '
     'joint state). False: only on the ~/compute_christoffel service.', {}),
    ('christoffel_decimation', 1, 'Stream Gamma every N-th accepted joint state (N >= 1).',
     {'integer_range': [IntegerRange(from_value=1, to_value=1000000, step=1)]}),
    ('qos_depth', 10, 'History depth of the output topics (except ~/christoffel: depth 1).',
     {'read_only': True, 'integer_range': [IntegerRange(from_value=1, to_value=10000, step=1)]}),
    ('qos_reliability', 'reliable',
     "Reliability of the output topics except ~/christoffel: 'reliable' or 'best_effort'.",
     {'read_only': True}),
    ('input_qos_depth', 10, 'History depth of the joint_states/odom/commanded_torque inputs.',
     {'read_only': True, 'integer_range': [IntegerRange(from_value=1, to_value=10000, step=1)]}),
    ('input_qos_reliability', 'reliable',
     "Reliability of the inputs: 'reliable' or 'best_effort' (best_effort also receives from "
     'reliable publishers).', {'read_only': True}),
    ('allow_missing_velocity', False,
     'Accept joint states with an empty velocity array and use zero velocity (otherwise such '
     'messages are rejected).', {}),
    ('observer_enabled', True, 'Run the generalized-momentum contact observer.', {}),
    ('observer_gain', [50.0],
     'Observer gain K in 1/s: one value, one per joint, or one per velocity coordinate.',
     {'dynamic_typing': True}),
    ('observer_friction_viscous', [0.0],
     'Viscous joint friction in N m s/rad (one value or one per joint) removed from the residual.',
     {'dynamic_typing': True}),
    ('observer_friction_coulomb', [0.0],
     'Coulomb joint friction in N m (one value or one per joint) removed from the residual.',
     {'dynamic_typing': True}),
    ('contact_threshold', [5.0],
     'Contact detection threshold on |residual| in N m (one value, one per joint, or one per '
     'velocity coordinate).', {'dynamic_typing': True}),
    ('contact_release_ratio', 0.5,
     'Hysteresis: a detected joint is released below contact_threshold * contact_release_ratio.',
     {'floating_point_range': [FloatingPointRange(from_value=0.0, to_value=1.0, step=0.0)]}),
    ('effort_source', 'joint_state',
     "Applied torque for the observer: 'joint_state' (effort field of joint_states) or "
     "'commanded_torque' (latest message on ~/commanded_torque).", {}),
    ('commanded_torque_timeout', 0.1,
     'Commanded torque older than this (s, node clock at receipt) is not used; 0 disables.',
     {'floating_point_range': [FloatingPointRange(from_value=0.0, to_value=1e9, step=0.0)]}),
    ('observer_max_dt', 0.1,
     'A joint-state stamp gap larger than this (s) re-initializes the observer.',
     {'floating_point_range': [FloatingPointRange(from_value=0.0, to_value=1e9, step=0.0)]}),
    ('log_throttle_sec', 2.0, 'Minimum interval between repeated warnings of one kind (s).',
     {'read_only': True,
      'floating_point_range': [FloatingPointRange(from_value=0.0, to_value=3600.0, step=0.0)]}),
)


class _Config:
    """Validated snapshot of the node parameters."""

    __slots__ = tuple(p[0] for p in _PARAMS)

    def __init__(self, values: dict):
        for name in self.__slots__:
            setattr(self, name, values[name])
        self._validate()

    @staticmethod
    def _floats(name, value, allowed_lengths=None):
        if isinstance(value, (bool, str, bytes)) or value is None:
            raise ValueError(f'{name} must be a number or a list of numbers')
        if isinstance(value, (int, float)):
            value = [value]
        try:
            out = [float(x) for x in value]
        except (TypeError, ValueError):
            raise ValueError(f'{name} must be a number or a list of numbers') from None
        if not out or not all(math.isfinite(x) for x in out):
            raise ValueError(f'{name} must be non-empty and finite')
        if allowed_lengths is not None and len(out) not in allowed_lengths:
            raise ValueError(f'{name} must have {" or ".join(map(str, allowed_lengths))} elements')
        return tuple(out)

    def _validate(self):
        self.gravity = self._floats('gravity', self.gravity, (3,))
        self.observer_gain = self._floats('observer_gain', self.observer_gain)
        if min(self.observer_gain) <= 0.0:
            raise ValueError('observer_gain must be > 0')
        self.observer_friction_viscous = self._floats('observer_friction_viscous',
                                                      self.observer_friction_viscous)
        self.observer_friction_coulomb = self._floats('observer_friction_coulomb',
                                                      self.observer_friction_coulomb)
        if min(self.observer_friction_viscous + self.observer_friction_coulomb) < 0.0:
            raise ValueError('observer friction coefficients must be >= 0')
        self.contact_threshold = self._floats('contact_threshold', self.contact_threshold)
        if min(self.contact_threshold) <= 0.0:
            raise ValueError('contact_threshold must be > 0')
        if self.effort_source not in EFFORT_SOURCES:
            raise ValueError(f'effort_source must be one of {EFFORT_SOURCES}')
        for name in ('qos_reliability', 'input_qos_reliability'):
            if getattr(self, name) not in RELIABILITIES:
                raise ValueError(f'{name} must be one of {tuple(RELIABILITIES)}')
        self.contact_wrench_point = self._floats('contact_wrench_point', self.contact_wrench_point,
                                                 (3,))
        if int(self.christoffel_decimation) < 1:
            raise ValueError('christoffel_decimation must be >= 1')
        self.christoffel_decimation = int(self.christoffel_decimation)


def load_model(xml: str, floating_base: bool, gravity) -> object:
    """Build a core model from URDF XML with the given gravity (raises on any problem)."""
    gravity = np.asarray(gravity, dtype=float)
    try:
        params = inspect.signature(rd.load_urdf).parameters
    except (TypeError, ValueError):
        params = {}
    if 'gravity' in params:
        return rd.load_urdf(xml, floating_base=bool(floating_base), gravity=gravity)
    model = rd.load_urdf(xml, floating_base=bool(floating_base))
    if hasattr(model, 'set_gravity'):
        model.set_gravity(gravity)
    elif hasattr(model, 'gravity'):
        model.gravity = gravity
    elif not np.allclose(gravity, (0.0, 0.0, -9.81)):
        raise ValueError('this core library version does not support a configurable gravity')
    return model


def _fdim(label, size, stride):
    return MultiArrayDimension(label=label, size=size, stride=stride)


def _attach(msg, field, n):
    """Give ``msg.<field>`` a zeroed ``array.array('d')`` of length n; return a numpy view of it.

    The view is taken from the array the message actually stores (the generated setter copies
    unless ROS_PYTHON_CHECK_FIELDS is set), so writing the view updates the message in place.
    """
    setattr(msg, field, array.array('d', bytes(8 * n)))
    stored = getattr(msg, field)
    return np.frombuffer(stored, dtype=np.float64) if n else np.zeros(0)


def _as_f64(seq):
    if isinstance(seq, array.array) and seq.typecode == 'd':
        return np.frombuffer(seq, dtype=np.float64) if len(seq) else np.zeros(0)
    return np.asarray(seq, dtype=np.float64)


class _NameMap:
    """Index map from one name list (a message layout) to the model's joints, cached."""

    __slots__ = ('names', 'index', 'error')

    def __init__(self, names, joint_names):
        self.names = list(names)
        self.index = None
        self.error = None
        pos = {}
        dup = set()
        for i, nm in enumerate(self.names):
            if nm in pos:
                dup.add(nm)
            else:
                pos[nm] = i
        missing = [j for j in joint_names if j not in pos]
        dups = [j for j in joint_names if j in dup]
        if missing:
            self.error = f'missing required joint(s) {missing}'
        elif dups:
            self.error = f'required joint(s) named more than once: {dups}'
        else:
            self.index = np.array([pos[j] for j in joint_names], dtype=np.intp)


class _Engine:
    """Everything that belongs to one robot model: model, buffers, messages, caches."""

    def __init__(self, xml, cfg: _Config):
        model = load_model(xml, cfg.floating_base, cfg.gravity)
        self.xml = xml
        self.model = model
        self.floating = bool(cfg.floating_base)
        self.gravity = cfg.gravity
        self.joint_names = list(model.joint_names)
        self.nj = len(self.joint_names)
        self.nq = int(model.nq)
        self.nv = int(model.nv)
        self.base_q = 7 if self.floating else 0
        self.base_v = 6 if self.floating else 0
        if self.nq != self.base_q + self.nj or self.nv != self.base_v + self.nj:
            raise ValueError(f'unsupported model layout: nq={self.nq}, nv={self.nv} for '
                             f'{self.nj} named joints (floating_base={self.floating})')
        n = self.nv
        self.q = np.zeros(self.nq)
        self.v = np.zeros(self.nv)
        if self.floating:
            self.q[6] = 1.0
        # Warm up (JIT) and check every kernel on this model before it is used.
        d = rd.dynamics(model, self.q, self.v)
        for name in ('M', 'C', 'Mdot'):
            if np.shape(getattr(d, name)) != (n, n):
                raise ValueError(f'core returned {name} of shape {np.shape(getattr(d, name))}')
        if np.shape(d.g) != (n,):
            raise ValueError(f'core returned g of shape {np.shape(d.g)}')
        if np.shape(rd.christoffel(model, self.q)) != (n, n, n):
            raise ValueError('core returned Gamma of the wrong shape')
        # ... and the observer's compiled step, so the first joint states are not delayed by
        # a compile (which would overflow a publisher's history at 1 kHz).
        warm = rd.MomentumObserver(model)
        warm.reset(self.q, self.v)
        warm.update(self.q, self.v, np.zeros(n), 1e-3)
        rd.ContactDetector(model).update(warm.residual)

        def matrix(label0='rows', label1='cols'):
            msg = Float64MultiArray()
            msg.layout.dim = [_fdim(label0, n, n * n), _fdim(label1, n, n)]
            msg.layout.data_offset = 0
            return msg, _attach(msg, 'data', n * n).reshape(n, n)

        self.M_msg, self.M_view = matrix()
        self.C_msg, self.C_view = matrix()
        self.Mdot_msg, self.Mdot_view = matrix()
        self.G_msg = Float64MultiArray()
        self.G_msg.layout.dim = [_fdim('i', n, n * n * n), _fdim('j', n, n * n), _fdim('k', n, n)]
        self.G_msg.layout.data_offset = 0
        self.G_view = _attach(self.G_msg, 'data', n * n * n).reshape(n, n, n)
        names = (list(BASE_DOF_NAMES) if self.floating else []) + self.joint_names

        def torque():
            msg = JointState()
            msg.name = list(names)
            return msg, _attach(msg, 'effort', n)

        self.g_msg, self.g_view = torque()
        self.ext_msg, self.ext_view = torque()
        self.contact_msg = Bool()
        self.link_msg = String()
        self.wrench_msg = WrenchStamped()
        # the Jacobian, hence the force, is in the world frame: the URDF root for a fixed base
        self.wrench_msg.header.frame_id = 'world' if self.floating else (model.root_link or 'world')
        self.js_map = None       # _NameMap cache for joint_states
        self.cmd_map = None      # _NameMap cache for ~/commanded_torque
        self.tau = np.zeros(self.nv)  # observer input (base entries stay zero)
        self.latest = None       # (q copy, stamp) of the latest accepted joint state

    def name_map(self, attr, names):
        cached = getattr(self, attr)
        if cached is None or (cached.names is not names and cached.names != names):
            cached = _NameMap(names, self.joint_names)
            setattr(self, attr, cached)
        return cached


class _Observer:
    """Momentum observer + contact detector for one engine and one observer configuration."""

    def __init__(self, eng: _Engine, cfg: _Config):
        nv, nj, b = eng.nv, eng.nj, eng.base_v

        def per_dof(name, values, base_fill):
            vals = np.asarray(values, dtype=float)
            if vals.size == 1:
                return float(vals[0]) if b == 0 else np.full(nv, vals[0])
            if vals.size == nv:
                return vals.copy()
            if vals.size == nj:
                out = np.empty(nv)
                out[:b] = base_fill(vals)
                out[b:] = vals
                return out
            raise ValueError(f'{name} has {vals.size} elements; expected 1, {nj} (joints) or '
                             f'{nv} (velocity coordinates) for this model')

        def per_joint(name, values):
            vals = np.asarray(values, dtype=float)
            if vals.size == 1 and b == 0:
                return float(vals[0])
            if vals.size not in (1, nj, nv):
                raise ValueError(f'{name} has {vals.size} elements; expected 1 or {nj}')
            out = np.zeros(nv)
            out[b:] = vals if vals.size != nv else vals[b:]
            return out

        gain = per_dof('observer_gain', cfg.observer_gain, np.max)
        threshold = per_dof('contact_threshold', cfg.contact_threshold, np.max)
        fv = per_joint('observer_friction_viscous', cfg.observer_friction_viscous)
        fc = per_joint('observer_friction_coulomb', cfg.observer_friction_coulomb)
        self.obs = rd.MomentumObserver(eng.model, gain=gain, friction_viscous=fv,
                                       friction_coulomb=fc)
        self._det_args = (eng.model, threshold, float(cfg.contact_release_ratio))
        self.det = None
        self.last_ns = None  # observer time of the last reset/update; None: reset needed
        self.reset()

    def reset(self):
        """Re-initialize at the next joint state (residual zero, detector released)."""
        self.last_ns = None
        if hasattr(rd, 'ContactDetector'):
            model, threshold, release = self._det_args
            self.det = rd.ContactDetector(model, threshold=threshold, release_ratio=release)


_UNSET = object()


class DynamicsNode(Node):
    """ROS 2 node publishing M, C, dM/dt, g, Gamma and the observer outputs per joint state."""

    def __init__(self, node_name='dynamics', **kwargs):
        super().__init__(node_name, **kwargs)
        self._log = self.get_logger()
        values = {}
        for name, default, text, extra in _PARAMS:
            desc = ParameterDescriptor(description=text, **extra)
            values[name] = self.declare_parameter(name, default, desc).value
        self._cfg = _Config(values)
        self._throttle = float(self._cfg.log_throttle_sec)
        self._engine = None
        self._observer = None
        self._observer_error = None
        self._topic_xml = None        # latest description received on the topic
        self._last_stamp_ns = None    # stamp of the last accepted joint state
        self._base = None             # (q7, v6) of the latest valid odometry
        self._cmd = None              # (tau_joints, receipt ns) of the latest commanded torque
        self._cycle = 0
        self.stats = {'accepted': 0, 'rejected': 0}

        cfg = self._cfg
        out_qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=int(cfg.qos_depth),
                             reliability=RELIABILITIES[cfg.qos_reliability],
                             durability=DurabilityPolicy.VOLATILE)
        in_qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=int(cfg.input_qos_depth),
                            reliability=RELIABILITIES[cfg.input_qos_reliability],
                            durability=DurabilityPolicy.VOLATILE)
        latched = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                             reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self._pub_M = self.create_publisher(Float64MultiArray, '~/mass_matrix', out_qos)
        self._pub_C = self.create_publisher(Float64MultiArray, '~/coriolis_matrix', out_qos)
        self._pub_Mdot = self.create_publisher(Float64MultiArray, '~/mass_matrix_dot', out_qos)
        self._pub_g = self.create_publisher(JointState, '~/gravity_torque', out_qos)
        self._pub_ext = self.create_publisher(JointState, '~/external_torque', out_qos)
        self._pub_contact = self.create_publisher(Bool, '~/contact', out_qos)
        self._pub_link = self.create_publisher(String, '~/contact_link', out_qos)
        self._pub_wrench = self.create_publisher(WrenchStamped, '~/contact_wrench', out_qos)
        self._pub_G = self.create_publisher(Float64MultiArray, '~/christoffel', latched)

        if cfg.robot_description:
            try:
                self._swap(_Engine(cfg.robot_description, cfg), cfg)
            except Exception as exc:  # noqa: BLE001 - any failure of a user description
                self._log.error(f'robot_description parameter is not a usable model: {exc}')
        self._sub_desc = self.create_subscription(String, 'robot_description',
                                                  self._on_description, latched)
        self._sub_js = self.create_subscription(JointState, 'joint_states',
                                                self._on_joint_state, in_qos)
        self._sub_odom = self.create_subscription(Odometry, 'odom', self._on_odom, in_qos)
        self._sub_cmd = self.create_subscription(JointState, '~/commanded_torque',
                                                 self._on_commanded_torque, in_qos)
        self._srv_gamma = self.create_service(Trigger, '~/compute_christoffel',
                                              self._srv_compute_christoffel)
        self._srv_reset = self.create_service(Trigger, '~/reset_observer',
                                              self._srv_reset_observer)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        if self._engine is None and not cfg.robot_description:
            self._log.info('robot_description parameter empty: waiting for the '
                           f'{self.resolve_topic_name("robot_description")} topic')

    # ------------------------------------------------------------------ model management
    @property
    def engine(self):
        return self._engine

    def _make_observer(self, eng, cfg):
        """Observer for (eng, cfg), None if disabled/unavailable. Raises ValueError if invalid."""
        if eng is None or not cfg.observer_enabled:
            return None
        if not hasattr(rd, 'MomentumObserver'):
            return None
        return _Observer(eng, cfg)

    def _swap(self, eng, cfg, observer=_UNSET):
        """Install a fully built engine (and its observer) in one step."""
        if observer is _UNSET:
            try:
                observer = self._make_observer(eng, cfg)
                self._observer_error = None
            except Exception as exc:  # noqa: BLE001
                observer = None
                self._observer_error = str(exc)
                self._log.error(f'observer disabled for this model: {exc}')
        self._engine = eng
        self._observer = observer
        self._cycle = 0
        if not hasattr(rd, 'MomentumObserver') and cfg.observer_enabled:
            self._log.warning('ros_dynamics.MomentumObserver is not available: '
                              '~/external_torque and ~/contact are not published')
        self._log.info(f'model ready: {eng.nj} joints, nq={eng.nq}, nv={eng.nv}, '
                       f'floating_base={eng.floating}')

    def _on_description(self, msg):
        cfg = self._cfg
        xml = msg.data
        self._topic_xml = xml  # kept: used if the parameter is cleared later
        if cfg.robot_description:
            self._log.info('robot_description topic ignored while the parameter is set',
                           throttle_duration_sec=self._throttle)
            return
        eng = self._engine
        if eng is not None and eng.xml == xml:
            return
        try:
            new = _Engine(xml, cfg)
        except Exception as exc:  # noqa: BLE001
            self._log.error(f'new robot_description from the topic rejected, keeping the '
                            f'{"previous" if eng is not None else "missing"} model: {exc}')
            return
        self._swap(new, cfg)

    def _on_set_parameters(self, params):
        changes = {p.name: p.value for p in params}
        values = {name: (changes[name] if name in changes else getattr(self._cfg, name))
                  for name in _Config.__slots__}
        try:
            cfg = _Config(values)
        except ValueError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        eng = self._engine
        model_change = any(k in changes for k in MODEL_PARAMS) and (
            cfg.robot_description != self._cfg.robot_description
            or cfg.floating_base != self._cfg.floating_base or cfg.gravity != self._cfg.gravity)
        if model_change:
            xml = cfg.robot_description or self._topic_xml or (eng.xml if eng else '')
            if xml:
                try:
                    eng = _Engine(xml, cfg)
                except Exception as exc:  # noqa: BLE001
                    return SetParametersResult(
                        successful=False, reason=f'model rebuild failed: {exc}')
        observer = self._observer
        obs_change = any(k in changes for k in OBSERVER_PARAMS)
        if model_change or obs_change:
            try:
                observer = self._make_observer(eng, cfg)
            except Exception as exc:  # noqa: BLE001
                return SetParametersResult(successful=False, reason=f'observer: {exc}')
        self._cfg = cfg
        if model_change or obs_change:
            self._observer_error = None
        if eng is not self._engine and eng is not None:
            self._swap(eng, cfg, observer)
        else:
            self._observer = observer
        return SetParametersResult(successful=True)

    # ------------------------------------------------------------------ inputs
    def _on_odom(self, msg):
        p, o = msg.pose.pose.position, msg.pose.pose.orientation
        t = msg.twist.twist
        q = np.array((p.x, p.y, p.z, o.x, o.y, o.z, o.w))
        v = np.array((t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z))
        if not (np.isfinite(q).all() and np.isfinite(v).all()):
            self._log.warning('odom rejected: non-finite pose or twist',
                              throttle_duration_sec=self._throttle)
            return
        norm = float(np.linalg.norm(q[3:]))
        if abs(norm - 1.0) > 1e-3:
            self._log.warning(f'odom rejected: orientation quaternion norm {norm:.6g} is not 1',
                              throttle_duration_sec=self._throttle)
            return
        q[3:] /= norm
        self._base = (q, v)

    def _on_commanded_torque(self, msg):
        eng = self._engine
        if eng is None:
            return
        nmap = eng.name_map('cmd_map', msg.name)
        if nmap.error is not None:
            self._log.warning(f'~/commanded_torque rejected: {nmap.error}',
                              throttle_duration_sec=self._throttle)
            return
        if len(msg.effort) != len(msg.name):
            self._log.warning(f'~/commanded_torque rejected: {len(msg.effort)} efforts for '
                              f'{len(msg.name)} names', throttle_duration_sec=self._throttle)
            return
        tau = _as_f64(msg.effort)[nmap.index]
        if not np.isfinite(tau).all():
            self._log.warning('~/commanded_torque rejected: non-finite effort',
                              throttle_duration_sec=self._throttle)
            return
        self._cmd = (eng, tau, time.monotonic_ns())

    def _reject(self, reason):
        """Count a rejected joint state and log why (throttled); nothing is published for it."""
        self.stats['rejected'] += 1
        self._log.warning(reason, throttle_duration_sec=self._throttle)

    def _on_joint_state(self, msg):
        eng = self._engine
        if eng is None:
            self._log.warning('joint_states ignored: no robot model yet',
                              throttle_duration_sec=self._throttle)
            return
        stamp = msg.header.stamp
        stamp_ns = stamp.sec * 1_000_000_000 + stamp.nanosec
        last = self._last_stamp_ns
        if last is not None and stamp_ns < last:
            self._reject(f'joint_states rejected: stamp {stamp.sec}.{stamp.nanosec:09d} is '
                         f'earlier than the last accepted one ({last * 1e-9:.9f})')
            return
        names = msg.name
        nmap = eng.name_map('js_map', names)
        if nmap.error is not None:
            self._reject(f'joint_states rejected: {nmap.error}')
            return
        n = len(names)
        cfg = self._cfg
        pos, vel, eff = msg.position, msg.velocity, msg.effort
        if len(pos) != n:
            self._reject(f'joint_states rejected: {len(pos)} positions for {n} names')
            return
        if len(vel) != n:
            if len(vel) or not cfg.allow_missing_velocity:
                hint = '' if len(vel) else ' (set allow_missing_velocity to use zero velocity)'
                self._reject(f'joint_states rejected: {len(vel)} velocities for {n} names{hint}')
                return
        if len(eff) not in (0, n):
            self._reject(f'joint_states rejected: {len(eff)} efforts for {n} names')
            return
        idx = nmap.index
        qj = _as_f64(pos)[idx]
        vj = _as_f64(vel)[idx] if len(vel) else None
        ej = _as_f64(eff)[idx] if len(eff) else None
        if not (np.isfinite(qj).all() and (vj is None or np.isfinite(vj).all())
                and (ej is None or np.isfinite(ej).all())):
            self._reject('joint_states rejected: NaN or inf in position, velocity or effort '
                         'of a required joint')
            return
        q, v = eng.q, eng.v
        if eng.floating:
            base = self._base
            if base is None:
                self._log.warning('joint_states ignored: floating base and no valid odom yet',
                                  throttle_duration_sec=self._throttle)
                return
            q[:7] = base[0]
            v[:6] = base[1]
        q[eng.base_q:] = qj
        if vj is None:
            v[eng.base_v:] = 0.0
        else:
            v[eng.base_v:] = vj

        # ---- compute everything first: nothing is published if any step fails
        try:
            d = rd.dynamics(eng.model, q, v)
            stream_gamma = cfg.christoffel_stream and self._cycle % cfg.christoffel_decimation == 0
            gamma = rd.christoffel(eng.model, q) if stream_gamma else None
        except Exception as exc:  # noqa: BLE001
            self.stats['rejected'] += 1
            self._log.error(f'dynamics failed for this joint state: {exc}',
                            throttle_duration_sec=self._throttle)
            return
        residual, contact = self._observe(eng, cfg, q, v, ej, stamp_ns)

        self._last_stamp_ns = stamp_ns
        self._cycle += 1
        self.stats['accepted'] += 1
        eng.latest = (q.copy(), stamp)
        # ---- publish (stamped JointState outputs last, external torque very last)
        if cfg.publish_mass_matrix:
            np.copyto(eng.M_view, d.M)
            self._pub_M.publish(eng.M_msg)
        if cfg.publish_coriolis_matrix:
            np.copyto(eng.C_view, d.C)
            self._pub_C.publish(eng.C_msg)
        if cfg.publish_mass_matrix_dot:
            np.copyto(eng.Mdot_view, d.Mdot)
            self._pub_Mdot.publish(eng.Mdot_msg)
        if gamma is not None:
            np.copyto(eng.G_view, gamma)
            self._pub_G.publish(eng.G_msg)
        if contact is not None:
            self._publish_contact(eng, cfg, q, residual, contact, stamp)
        if cfg.publish_gravity_torque:
            np.copyto(eng.g_view, d.g)
            eng.g_msg.header.stamp = stamp
            self._pub_g.publish(eng.g_msg)
        if residual is not None and cfg.publish_external_torque:
            np.copyto(eng.ext_view, residual)
            eng.ext_msg.header.stamp = stamp
            self._pub_ext.publish(eng.ext_msg)

    def _publish_contact(self, eng, cfg, q, residual, state, stamp):
        """~/contact, ~/contact_link and (while in contact) ~/contact_wrench."""
        if cfg.publish_contact:
            eng.contact_msg.data = bool(state.in_contact)
            self._pub_contact.publish(eng.contact_msg)
        if cfg.publish_contact_link:
            eng.link_msg.data = (state.link or '') if state.in_contact else ''
            self._pub_link.publish(eng.link_msg)
        link = cfg.contact_wrench_link or state.link
        if not (cfg.publish_contact_wrench and state.in_contact and link):
            return
        try:
            F = rd.estimate_contact_wrench(eng.model, q, residual, link, cfg.contact_wrench_point,
                                           force_only=cfg.contact_wrench_force_only)
        except ValueError as exc:
            self._log.warning(f'contact wrench not estimated: {exc}',
                              throttle_duration_sec=self._throttle)
            return
        w = eng.wrench_msg
        w.header.stamp = stamp
        w.wrench.force.x, w.wrench.force.y, w.wrench.force.z = (float(x) for x in F[:3])
        w.wrench.torque.x, w.wrench.torque.y, w.wrench.torque.z = (float(x) for x in F[3:])
        self._pub_wrench.publish(w)

    def _observe(self, eng, cfg, q, v, ej, stamp_ns):
        """Update the observer; returns (residual or None, ContactState or None)."""
        ob = self._observer
        if ob is None:
            return None, None
        tau = eng.tau
        if cfg.effort_source == 'joint_state':
            if ej is None:
                self._log.info('joint_states without effort: observer not updated',
                               throttle_duration_sec=self._throttle)
                return None, None
            tau[eng.base_v:] = ej
        else:
            cmd = self._cmd
            if cmd is None or cmd[0] is not eng:
                self._log.info('no ~/commanded_torque yet: observer not updated',
                               throttle_duration_sec=self._throttle)
                return None, None
            if cfg.commanded_torque_timeout > 0 and (
                    time.monotonic_ns() - cmd[2]) > cfg.commanded_torque_timeout * 1e9:
                self._log.warning('~/commanded_torque is stale: observer not updated',
                                  throttle_duration_sec=self._throttle)
                return None, None
            tau[eng.base_v:] = cmd[1]
        t_ns = stamp_ns if stamp_ns else self.get_clock().now().nanoseconds
        try:
            if ob.last_ns is None:
                ob.obs.reset(q, v)
                ob.last_ns = t_ns
                return None, None
            dt = (t_ns - ob.last_ns) * 1e-9
            if dt <= 0.0:
                return None, None  # duplicate stamp: nothing new to integrate
            if dt > cfg.observer_max_dt:
                self._log.warning(f'joint_states gap of {dt:.3g} s: observer re-initialized',
                                  throttle_duration_sec=self._throttle)
                ob.obs.reset(q, v)
                ob.last_ns = t_ns
                return None, None
            r = ob.obs.update(q, v, tau, dt)
            ob.last_ns = t_ns
            contact = None
            if ob.det is not None:
                contact = ob.det.update(r)
            return r, contact
        except Exception as exc:  # noqa: BLE001
            self._log.error(f'observer failed, it will be re-initialized: {exc}',
                            throttle_duration_sec=self._throttle)
            ob.last_ns = None
            return None, None

    # ------------------------------------------------------------------ services
    def _srv_compute_christoffel(self, request, response):
        eng = self._engine
        latest = eng.latest if eng is not None else None
        if latest is None:
            response.success = False
            response.message = ('no robot model yet' if eng is None else
                                'no accepted joint state for the current model yet')
            return response
        q, stamp = latest
        try:
            gamma = rd.christoffel(eng.model, q)
        except Exception as exc:  # noqa: BLE001
            response.success = False
            response.message = f'christoffel failed: {exc}'
            return response
        np.copyto(eng.G_view, gamma)
        self._pub_G.publish(eng.G_msg)
        response.success = True
        response.message = (f'published Gamma [{eng.nv}x{eng.nv}x{eng.nv}] on '
                            f'{self._pub_G.topic_name} for joint_states stamp '
                            f'{stamp.sec}.{stamp.nanosec:09d}')
        return response

    def _srv_reset_observer(self, request, response):
        # also forget the last stamp, so that a source whose clock was reset (simulation reset,
        # bag restarted) is accepted again
        self._last_stamp_ns = None
        ob = self._observer
        if ob is None:
            response.success = False
            response.message = (self._observer_error or (
                'observer disabled' if not self._cfg.observer_enabled else
                'observer not available (no model or no ros_dynamics.MomentumObserver)')
            ) + '; stamp history cleared'
            return response
        ob.reset()
        response.success = True
        response.message = ('observer will be re-initialized at the next joint state; '
                            'stamp history cleared')
        return response


def main(args=None):
    """Entry point of ``dynamics_node``."""
    rclpy.init(args=args)
    node = None
    try:
        node = DynamicsNode()
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        # Everything built at start-up (modules, compiled kernels, the model) is long-lived:
        # move it out of the collector's reach so that GC pauses in the 1 kHz loop stay short.
        gc.collect()
        gc.freeze()
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:  # noqa: BLE001
        if rclpy.ok():
            raise
        # shutdown (SIGINT/SIGTERM) arrived while a callback was publishing: a clean exit
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
