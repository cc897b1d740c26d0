"""``dynamics_node``: a thin rclpy adapter over the ``ros_dynamics`` core library.

Interface (fixed by CONVENTIONS.md, documented in README "ROS 2 node"):

* subscribes ``joint_states`` (sensor_msgs/JointState), ``odom`` (nav_msgs/Odometry, floating
  base only), ``robot_description`` (std_msgs/String, transient local; used while the
  ``robot_description`` parameter is empty), ``~/commanded_torque`` (sensor_msgs/JointState,
  observer effort source ``commanded_torque``);
* publishes per accepted joint state one ``~/dynamics`` (ros_dynamics_msgs/Dynamics: M, C,
  dM/dt, g with the joint state's stamp), every ``christoffel_decimation``-th one
  ``~/christoffel`` (ros_dynamics_msgs/Christoffel; reliable, transient local, depth 1), and per
  observer update ``~/external_torque`` (sensor_msgs/JointState, effort = residual) and,
  while in contact and once when free, ``~/contact_estimate`` (ros_dynamics_msgs/ContactEstimate);
  ``~/gravity_torque``
  (sensor_msgs/JointState) on request;
* services ``~/get_dynamics`` (GetDynamics), ``~/get_christoffel`` (GetChristoffel) at a
  requested or the latest accepted state, ``~/reset_observer`` (std_srvs/Trigger).

``~/dynamics``, ``~/christoffel`` and the two ``get_*`` services are in the coordinates chosen by
the parameter ``coordinates`` (``joint``, ``mimic_reduced``, ``center_of_mass``): names, state
and terms; the mapping is :class:`ros_dynamics.ros.output_coordinates.OutputCoordinates`. Inputs
and the observer outputs are always in the model's joint coordinates.

Without the interface package ``ros_dynamics_msgs`` the node runs with its standard-type outputs
only (``~/external_torque``, ``~/gravity_torque``) and says once how to build the package.

Input policy (each rejected message is logged, throttled, and produces no output at all):

* no model yet, stamp earlier than the last accepted one, a required joint missing, a required
  joint named twice, ``len(position) != len(name)``, ``velocity`` neither empty nor of
  ``len(name)``, ``effort`` neither empty nor of ``len(name)``, NaN/inf in position, velocity or
  effort of a required joint, empty ``velocity`` (unless ``allow_missing_velocity``: then the
  velocities are taken as zero), floating base without a valid odometry message yet.
* empty ``effort`` (effort source ``joint_state``): the dynamics terms are published, the
  observer is not updated and ``~/external_torque`` / ``~/contact_estimate`` are not published.

Design for speed (1 kHz): every output message is preallocated once per model; its array fields
are ``array.array('d')`` objects shared with numpy views, so a cycle writes the results straight
into the message fields (the joint positions and velocities are gathered directly into the
``~/dynamics`` message) and publishes. All core-library calls of one cycle are in
:meth:`DynamicsNode._core_cycle`. All state belonging to one robot model lives in one ``_Engine``
object, built completely (including a warm-up call of every kernel) before it replaces the
current one.
"""
from __future__ import annotations

import array
import gc
import math
import os
import sys
import time

import numpy as np

from ros_dynamics.ros import compat as ros_compat

if __name__ == '__main__' or os.path.basename(sys.argv[0] if sys.argv else '') == 'dynamics_node':
    # Process entry point with the pip ROS wheels: re-execute once with LD_LIBRARY_PATH set.
    ros_compat.reexec_if_needed()

from rcl_interfaces.msg import FloatingPointRange, IntegerRange  # noqa: E402
from rcl_interfaces.msg import ParameterDescriptor, ParameterType  # noqa: E402
from rcl_interfaces.msg import SetParametersResult  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, QoSProfile,  # noqa: E402
                       ReliabilityPolicy)
from nav_msgs.msg import Odometry  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import String  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

import rclpy.logging  # noqa: E402

# Importing the core loads its compiled kernels, and compiles them on the first start after an
# install or update (cached on disk afterwards): say so before the wait, not after it.
rclpy.logging.get_logger('dynamics').info(
    'loading the dynamics kernels (the first start after an install compiles them: up to a minute)')
import ros_dynamics as rd  # noqa: E402
from ros_dynamics.ros import operational_space, process  # noqa: E402
from ros_dynamics.ros.output_coordinates import COORDINATES, OutputCoordinates  # noqa: E402

try:  # the interface package; optional (see BUILD_HINT)
    from ros_dynamics_msgs.msg import Christoffel, ContactEstimate, Dynamics
    from ros_dynamics_msgs.srv import GetChristoffel, GetDynamics
    HAVE_MSGS = True
except ImportError:  # pragma: no cover - exercised by a test in a separate process
    Christoffel = ContactEstimate = Dynamics = GetChristoffel = GetDynamics = None
    HAVE_MSGS = False

BUILD_HINT = (
    'the interface package ros_dynamics_msgs is not installed: only the standard-type outputs '
    '~/external_torque and ~/gravity_torque (sensor_msgs/JointState) are published; ~/dynamics, '
    '~/christoffel, ~/contact_estimate, ~/get_dynamics and ~/get_christoffel are off. Build it: '
    'in a clone of ros_dynamics run scripts/build_interfaces.sh (scripts/setup_env.sh does it); on '
    'a ROS 2 system `colcon build --paths <repo> <repo>/ros_dynamics_msgs` and source '
    'install/setup.bash (README, "Building")')

#: names of the six floating-base coordinates (v = [v_lin, omega] in the base frame, linear
#: first; in a force vector: force, then torque), first in every ``names`` array.
BASE_DOF_NAMES = ('floating_base/linear_x', 'floating_base/linear_y', 'floating_base/linear_z',
                  'floating_base/angular_x', 'floating_base/angular_y', 'floating_base/angular_z')

#: parameters that change the model (a change rebuilds it, or is rejected if that fails)
MODEL_PARAMS = ('robot_description', 'floating_base', 'gravity', 'coordinates')
OBSERVER_PARAMS = ('observer_enabled', 'observer_gain', 'observer_friction_viscous',
                   'observer_friction_coulomb', 'contact_threshold', 'contact_release_ratio')
EFFORT_SOURCES = ('joint_state', 'commanded_torque')
RELIABILITIES = {'reliable': ReliabilityPolicy.RELIABLE,
                 'best_effort': ReliabilityPolicy.BEST_EFFORT}
EXECUTORS = ('single', 'events')

_DOUBLES = {'type': ParameterType.PARAMETER_DOUBLE_ARRAY}

# (name, default, description, extra descriptor fields). Every parameter has a fixed type (the
# descriptor's or the default's): `ros2 param set observer_gain 20.0` is rejected, write [20.0].
_PARAMS = (
    ('robot_description', '',
     'URDF XML of the robot. Empty: use the latest message on the robot_description topic.', {}),
    ('floating_base', False,
     'Give the URDF root a 6-DoF free joint; base pose/twist come from the odom topic.', {}),
    ('gravity', [0.0, 0.0, -9.81],
     'Gravity vector [gx, gy, gz] in m/s^2 in the world (root) frame.', _DOUBLES),
    ('coordinates', 'joint',
     "Coordinates of ~/dynamics, ~/christoffel, ~/get_dynamics and ~/get_christoffel (names, "
     "position, velocity and every term): 'joint' (the model's), 'mimic_reduced' (independent "
     "joints only; mimic joints dropped) or 'center_of_mass' (floating base: CoM position and "
     'base angular velocity replace the base pose and twist). README "Output coordinates".', {}),
    ('world_frame', '',
     'frame_id of the outputs (the world frame of gravity and of the floating-base pose). '
     "Empty: the URDF root link for a fixed base, 'world' for a floating one.", {}),
    ('publish_dynamics', True, 'Publish ~/dynamics (M, C, dM/dt, g per joint state).', {}),
    ('publish_external_torque', True,
     'Publish ~/external_torque (sensor_msgs/JointState, effort = observer residual).', {}),
    ('publish_contact_estimate', True,
     'Publish ~/contact_estimate (detection, isolated links, wrench): every observer update '
     'while in contact, and once when free (first update, release).', {}),
    ('publish_gravity_torque', False,
     'Also publish ~/gravity_torque (sensor_msgs/JointState, effort = g); always on when '
     'ros_dynamics_msgs is not installed.', {}),
    ('contact_wrench_link', '',
     'Link at which the contact wrench is estimated; empty: the isolated contact link.', {}),
    ('contact_wrench_point', [0.0, 0.0, 0.0],
     'Contact point in the frame of that link (m): where the force is assumed to act.', _DOUBLES),
    ('contact_wrench_force_only', True,
     'Estimate a pure force at the point (J_lin^T f = r, needs >= 3 joints up to the link); '
     'False: a minimum-norm 6-D wrench.', {}),
    ('christoffel_stream', True,
     'Publish ~/christoffel every christoffel_decimation-th accepted joint state. False: only '
     'the ~/get_christoffel service.', {}),
    ('christoffel_decimation', 10, 'Stream Gamma every N-th accepted joint state (N >= 1).',
     {'integer_range': [IntegerRange(from_value=1, to_value=1000000, step=1)]}),
    ('qos_depth', 500,
     'History depth of the output topics (except ~/christoffel: depth 1). Deep enough that a '
     'reliable subscriber that falls behind for a while (ros2 topic echo) loses nothing at 1 kHz.',
     {'read_only': True, 'integer_range': [IntegerRange(from_value=1, to_value=100000, step=1)]}),
    ('qos_reliability', 'reliable',
     "Reliability of the output topics except ~/christoffel: 'reliable' or 'best_effort'.",
     {'read_only': True}),
    ('input_qos_depth', 1000,
     'History depth of the joint_states/odom/commanded_torque inputs (a burst of this many '
     'messages is queued, not dropped).',
     {'read_only': True, 'integer_range': [IntegerRange(from_value=1, to_value=100000, step=1)]}),
    ('input_qos_reliability', 'reliable',
     "Reliability of the inputs: 'reliable' or 'best_effort' (best_effort also receives from "
     'reliable publishers).', {'read_only': True}),
    ('executor', 'events',
     "rclpy executor: 'events' (rclpy's experimental EventsExecutor, about half the CPU per "
     "message; SingleThreadedExecutor where rclpy has none) or 'single' "
     '(SingleThreadedExecutor).', {'read_only': True}),
    ('allow_missing_velocity', False,
     'Accept joint states with an empty velocity array and use zero velocity (otherwise such '
     'messages are rejected).', {}),
    ('observer_enabled', True, 'Run the generalized-momentum contact observer.', {}),
    ('observer_gain', [50.0],
     'Observer gain K in 1/s: one value, one per joint, or one per velocity coordinate.',
     _DOUBLES),
    ('observer_friction_viscous', [0.0],
     'Viscous joint friction in N m s/rad (one value or one per joint) removed from the residual.',
     _DOUBLES),
    ('observer_friction_coulomb', [0.0],
     'Coulomb joint friction in N m (one value or one per joint) removed from the residual.',
     _DOUBLES),
    ('contact_threshold', [5.0],
     'Contact detection threshold on |residual| in N m (one value, one per joint, or one per '
     'velocity coordinate).', _DOUBLES),
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
        if self.coordinates not in COORDINATES:
            raise ValueError(f'coordinates must be one of {COORDINATES}')
        if self.coordinates == 'center_of_mass' and not self.floating_base:
            raise ValueError("coordinates 'center_of_mass' need floating_base: true")
        if self.executor not in EXECUTORS:
            raise ValueError(f'executor must be one of {EXECUTORS}')
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
    return rd.load_urdf(xml, floating_base=bool(floating_base),
                        gravity=np.asarray(gravity, dtype=float))


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


def _finite(x) -> bool:
    """All entries finite (NaN and inf propagate into the sum; no temporary array)."""
    return math.isfinite(x.sum())


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
        self.names = (list(BASE_DOF_NAMES) if self.floating else []) + self.joint_names
        self.frame_id = cfg.world_frame or ('world' if self.floating
                                            else (getattr(model, 'root_link', '') or 'world'))
        q0 = np.zeros(self.nq)
        if self.floating:
            q0[6] = 1.0
        v0 = np.zeros(self.nv)
        # Warm up (JIT) and check every kernel on this model before it is used, so the first
        # joint states are not delayed by a compile (which would overflow queues at 1 kHz).
        # The cycle's workspace: one kinematics pass fills M, C, Mdot, g, p = M v, C^T v (and
        # Gamma every christoffel_decimation-th cycle) without allocating (rd.compute_all_terms).
        self.data = rd.Data(model)
        # (Gamma, nv^3 doubles, is allocated here only when it will stream)
        rd.compute_all_terms(model, q0, v0, self.data,
                             christoffel=bool(HAVE_MSGS and cfg.christoffel_stream))
        # the published coordinates: built, warmed up and checked on the same state
        self.coords = OutputCoordinates(model, cfg.coordinates, BASE_DOF_NAMES)
        out = self.coords.apply(q0, v0, self.data.dynamics, rd.christoffel(model, q0))
        m = self.coords.nv
        if np.shape(out.d.M) != (m, m) or np.shape(out.gamma) != (m, m, m):
            raise ValueError(f'{cfg.coordinates} coordinates: terms of the wrong shape')
        warm = rd.MomentumObserver(model)
        warm.reset_from(self.data)
        warm.update_from(self.data, np.zeros(n), 1e-3)
        rd.ContactDetector(model).update(warm.residual)

        # ---- preallocated outputs; q and v of a cycle are gathered straight into ~/dynamics
        if HAVE_MSGS:
            self.dyn_msg = Dynamics()
            self.dyn_msg.header.frame_id = self.frame_id
            # ~/dynamics and ~/christoffel are in the published coordinates (size m)
            co, m = self.coords, self.coords.nv
            self.dyn_msg.names = list(co.names)
            self.dyn_q = _attach(self.dyn_msg, 'position', co.nq)
            self.dyn_v = _attach(self.dyn_msg, 'velocity', m)
            self.M_view = _attach(self.dyn_msg, 'mass_matrix', m * m).reshape(m, m)
            self.C_view = _attach(self.dyn_msg, 'coriolis_matrix', m * m).reshape(m, m)
            self.Mdot_view = _attach(self.dyn_msg, 'mass_matrix_dot', m * m).reshape(m, m)
            self.g_dyn_view = _attach(self.dyn_msg, 'gravity', m)
            # joint coordinates: the state is gathered straight into the message
            self.q = self.dyn_q if co.identity else np.zeros(self.nq)
            self.v = self.dyn_v if co.identity else np.zeros(self.nv)
            self.gam_msg = Christoffel()
            self.gam_msg.header.frame_id = self.frame_id
            self.gam_msg.names = list(co.names)
            self.gam_q = _attach(self.gam_msg, 'position', co.nq)
            self.G_view = _attach(self.gam_msg, 'christoffel', m * m * m).reshape(m, m, m)
            self.contact_msg = ContactEstimate()
            self.contact_msg.header.frame_id = self.frame_id
            self.contact_msg.names = list(self.names)
            self.contact_r = _attach(self.contact_msg, 'external_torque', n)
        else:
            self.dyn_msg = self.gam_msg = self.contact_msg = None
            self.q = np.zeros(self.nq)
            self.v = np.zeros(self.nv)
        if self.floating:
            self.q[6] = 1.0

        def torque():
            msg = JointState()
            msg.name = list(self.names)
            return msg, _attach(msg, 'effort', n)

        self.g_msg, self.g_view = torque()
        self.ext_msg, self.ext_view = torque()
        self.js_map = None       # _NameMap cache for joint_states
        self.cmd_map = None      # _NameMap cache for ~/commanded_torque
        self.qj = np.zeros(self.nj)   # gather buffers of one joint state
        self.vj = np.zeros(self.nj)
        self.ej = np.zeros(self.nj)
        self.tau = np.zeros(self.nv)  # observer input (base entries stay zero)
        self.latest_q = np.zeros(self.nq)  # the latest accepted state (for the services)
        self.latest_v = np.zeros(self.nv)
        self.latest_stamp = None
        self.free_announced = False  # a ContactEstimate with in_contact=False was published

    def name_map(self, attr, names):
        cached = getattr(self, attr)
        if cached is None or (cached.names is not names and cached.names != names):
            cached = _NameMap(names, self.joint_names)
            setattr(self, attr, cached)
        return cached

    def state_from_request(self, req, with_velocity):
        """(q, v) of a GetDynamics/GetChristoffel request; raises ValueError with the reason."""
        js = req.state
        names = list(js.name)
        nmap = _NameMap(names, self.joint_names)
        if nmap.unknown:
            raise ValueError(f'unknown joint(s) {nmap.unknown}; the model has {self.joint_names}')
        if nmap.error is not None:
            raise ValueError(nmap.error)
        n = len(names)
        if len(js.position) != n:
            raise ValueError(f'{len(js.position)} positions for {n} names')
        if with_velocity and len(js.velocity) not in (0, n):
            raise ValueError(f'{len(js.velocity)} velocities for {n} names (give none for zero '
                             'velocity)')
        q = np.zeros(self.nq)
        v = np.zeros(self.nv)
        q[self.base_q:] = _as_f64(js.position)[nmap.index]
        if with_velocity and len(js.velocity):
            v[self.base_v:] = _as_f64(js.velocity)[nmap.index]
        if self.floating:
            p, o = req.base_pose.position, req.base_pose.orientation
            q[:7] = (p.x, p.y, p.z, o.x, o.y, o.z, o.w)
            if with_velocity:
                t = req.base_twist
                v[:6] = (t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y,
                         t.angular.z)
        if not (np.isfinite(q).all() and np.isfinite(v).all()):
            raise ValueError('NaN or inf in the requested state')
        if self.floating:
            norm = float(np.linalg.norm(q[3:7]))
            if abs(norm - 1.0) > 1e-3:
                raise ValueError(f'base_pose orientation quaternion norm {norm:.6g} is not 1')
            q[3:7] /= norm
        return q, v


class _NameMap:
    """Index map from one name list (a message layout) to the model's joints, cached."""

    __slots__ = ('names', 'index', 'error', 'unknown')

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
        known = set(joint_names)
        self.unknown = [nm for nm in pos if nm not in known]  # ignored in joint_states
        missing = [j for j in joint_names if j not in pos]
        dups = [j for j in joint_names if j in dup]
        if missing:
            self.error = f'missing required joint(s) {missing}'
        elif dups:
            self.error = f'required joint(s) named more than once: {dups}'
        else:
            self.index = np.array([pos[j] for j in joint_names], dtype=np.intp)


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


def _show(name, value):
    """A parameter value for the log (a URDF is summarized)."""
    if name == 'robot_description':
        return f'<URDF, {len(value)} characters>' if value else "''"
    return repr(list(value) if isinstance(value, tuple) else value)


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
        self._cmd = None              # (engine, tau_joints, receipt ns) of the latest command
        self._cycle = 0
        self.stats = {'accepted': 0, 'rejected': 0}
        if not HAVE_MSGS:
            self._log.warning(BUILD_HINT)

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
        self._pub_ext = self.create_publisher(JointState, '~/external_torque', out_qos)
        self._pub_g = self.create_publisher(JointState, '~/gravity_torque', out_qos)
        if HAVE_MSGS:
            self._pub_dyn = self.create_publisher(Dynamics, '~/dynamics', out_qos)
            self._pub_G = self.create_publisher(Christoffel, '~/christoffel', latched)
            self._pub_contact = self.create_publisher(ContactEstimate, '~/contact_estimate',
                                                      out_qos)

        if cfg.robot_description:
            eng = self._build_engine(cfg.robot_description, cfg, 'robot_description parameter')
            if eng is not None:
                self._swap(eng, cfg)
        self._sub_desc = self.create_subscription(String, 'robot_description',
                                                  self._on_description, latched)
        self._sub_js = self.create_subscription(JointState, 'joint_states',
                                                self._on_joint_state, in_qos)
        self._sub_odom = self.create_subscription(Odometry, 'odom', self._on_odom, in_qos)
        self._sub_cmd = self.create_subscription(JointState, '~/commanded_torque',
                                                 self._on_commanded_torque, in_qos)
        if HAVE_MSGS:
            self._srv_dyn = self.create_service(GetDynamics, '~/get_dynamics',
                                                self._srv_get_dynamics)
            self._srv_gam = self.create_service(GetChristoffel, '~/get_christoffel',
                                                self._srv_get_christoffel)
            self._srv_os = operational_space.register(self)
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

    @property
    def executor_kind(self):
        return self._cfg.executor

    def _build_engine(self, xml, cfg, source):
        """A new engine from ``xml``, logged; None (and an error logged) if it fails."""
        self._log.info(f'building the model from the {source} and compiling the kernels '
                       '(the first start after an install compiles for 10-60 s; cached after)')
        t0 = time.monotonic()
        try:
            eng = _Engine(xml, cfg)
        except Exception as exc:  # noqa: BLE001 - any failure of a user description
            self._log.error(f'{source} is not a usable model: {exc!r}')
            return None
        self._log.info(f'model built and kernels ready in {time.monotonic() - t0:.1f} s')
        return eng

    def _make_observer(self, eng, cfg):
        """Observer for (eng, cfg), None if disabled. Raises ValueError if invalid."""
        if eng is None or not cfg.observer_enabled:
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
        wait = self.resolve_topic_name('joint_states')
        if eng.floating:
            wait += f' and {self.resolve_topic_name("odom")}'
        self._log.info(f'model ready: {eng.nj} joints, nq={eng.nq}, nv={eng.nv}, '
                       f'floating_base={eng.floating}; waiting for {wait}')

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
        new = self._build_engine(xml, cfg, 'robot_description topic')
        if new is None:
            self._log.error(f'keeping the {"previous" if eng is not None else "missing"} model')
            return
        self._swap(new, cfg)

    def _on_set_parameters(self, params):
        old = self._cfg
        changes = {p.name: p.value for p in params}
        values = {name: (changes[name] if name in changes else getattr(old, name))
                  for name in _Config.__slots__}
        try:
            cfg = _Config(values)
        except ValueError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        changed = [k for k in _Config.__slots__ if getattr(cfg, k) != getattr(old, k)]
        eng = self._engine
        model_change = [k for k in changed if k in MODEL_PARAMS]
        if eng is not None and 'world_frame' in changed:
            model_change.append('world_frame')
        if model_change:
            xml = cfg.robot_description or self._topic_xml or (eng.xml if eng else '')
            if xml:
                self._log.info(f'rebuilding the model: {", ".join(model_change)} changed')
                try:
                    eng = _Engine(xml, cfg)
                except Exception as exc:  # noqa: BLE001
                    return SetParametersResult(
                        successful=False, reason=f'model rebuild failed: {exc}')
        observer = self._observer
        obs_change = bool(model_change) or any(k in OBSERVER_PARAMS for k in changed)
        if obs_change:
            try:
                observer = self._make_observer(eng, cfg)
            except Exception as exc:  # noqa: BLE001
                return SetParametersResult(successful=False, reason=f'observer: {exc}')
        self._cfg = cfg
        for k in changed:
            self._log.info(f'parameter {k}: {_show(k, getattr(old, k))} -> '
                           f'{_show(k, getattr(cfg, k))}')
        if obs_change:
            self._observer_error = None
            if not model_change and observer is not None:
                self._log.info('observer re-initialized with the new settings')
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
        qj, vj, ej = eng.qj, eng.vj, eng.ej
        np.take(_as_f64(pos), idx, out=qj)
        if len(vel):
            np.take(_as_f64(vel), idx, out=vj)
        else:
            vj[:] = 0.0
        has_effort = len(eff) > 0
        if has_effort:
            np.take(_as_f64(eff), idx, out=ej)
        if not (_finite(qj) and _finite(vj) and (not has_effort or _finite(ej))):
            self._reject('joint_states rejected: NaN or inf in position, velocity or effort '
                         'of a required joint')
            return
        base = None
        if eng.floating:
            base = self._base
            if base is None:
                self._log.warning('joint_states ignored: floating base and no valid odom yet',
                                  throttle_duration_sec=self._throttle)
                return
        # ---- accepted: the state goes straight into the ~/dynamics message
        q, v = eng.q, eng.v
        if base is not None:
            q[:7] = base[0]
            v[:6] = base[1]
        q[eng.base_q:] = qj
        v[eng.base_v:] = vj
        with_gamma = (HAVE_MSGS and cfg.christoffel_stream
                      and self._cycle % cfg.christoffel_decimation == 0)
        step = self._observer_step(eng, cfg, has_effort, stamp_ns)
        try:
            d, out, r, contact, wrench = self._core_cycle(eng, cfg, q, v, with_gamma, step)
        except Exception as exc:  # noqa: BLE001 - nothing is published if any step fails
            self.stats['rejected'] += 1
            self._log.error(f'dynamics failed for this joint state: {exc}',
                            throttle_duration_sec=self._throttle)
            if self._observer is not None:
                self._observer.last_ns = None
            return
        if self._last_stamp_ns is None and self.stats['accepted'] == 0:
            self._log.info('first joint state accepted: publishing')
        self._last_stamp_ns = stamp_ns
        self._cycle += 1
        self.stats['accepted'] += 1
        np.copyto(eng.latest_q, q)
        np.copyto(eng.latest_v, v)
        eng.latest_stamp = stamp
        self._publish(eng, cfg, stamp, d, out, r, contact, wrench)

    def _observer_step(self, eng, cfg, has_effort, stamp_ns):
        """What the observer does with this joint state: None (nothing), ('reset', t_ns) or
        ('update', t_ns, dt); fills ``eng.tau`` for an update."""
        ob = self._observer
        if ob is None:
            return None
        if cfg.effort_source == 'joint_state':
            if not has_effort:
                self._log.info('joint_states without effort: observer not updated',
                               throttle_duration_sec=self._throttle)
                return None
            eng.tau[eng.base_v:] = eng.ej
        else:
            cmd = self._cmd
            if cmd is None or cmd[0] is not eng:
                self._log.info('no ~/commanded_torque yet: observer not updated',
                               throttle_duration_sec=self._throttle)
                return None
            if cfg.commanded_torque_timeout > 0 and (
                    time.monotonic_ns() - cmd[2]) > cfg.commanded_torque_timeout * 1e9:
                self._log.warning('~/commanded_torque is stale: observer not updated',
                                  throttle_duration_sec=self._throttle)
                return None
            eng.tau[eng.base_v:] = cmd[1]
        t_ns = stamp_ns if stamp_ns else self.get_clock().now().nanoseconds
        if ob.last_ns is None:
            return ('reset', t_ns)
        dt = (t_ns - ob.last_ns) * 1e-9
        if dt <= 0.0:
            return None  # duplicate stamp: nothing new to integrate
        if dt > cfg.observer_max_dt:
            self._log.warning(f'joint_states gap of {dt:.3g} s: observer re-initialized',
                              throttle_duration_sec=self._throttle)
            return ('reset', t_ns)
        return ('update', t_ns, dt)

    def _core_cycle(self, eng, cfg, q, v, with_gamma, step):
        """Every core-library call of one cycle: (d, out, residual or None, ContactState or
        None, wrench (6,) or None); d in the model's coordinates, out (qbar, vbar, terms,
        Gammabar or None) in the published ones. Raises on failure, changes nothing then
        except the observer, which the caller re-initializes."""
        model, data = eng.model, eng.data
        rd.compute_all_terms(model, q, v, data, christoffel=with_gamma)   # one kinematics pass
        d = data.dynamics
        gamma = data.Gamma if with_gamma else None
        out = eng.coords.apply(q, v, d, gamma)       # into the published coordinates
        r = contact = wrench = None
        if step is not None:
            ob = self._observer
            if step[0] == 'reset':
                ob.obs.reset_from(data)
            else:
                r = ob.obs.update_from(data, eng.tau, step[2])
                contact = ob.det.update(r)
                link = cfg.contact_wrench_link or contact.link
                if contact.in_contact and link and HAVE_MSGS and cfg.publish_contact_estimate:
                    try:
                        wrench = rd.estimate_contact_wrench(
                            model, q, r, link, cfg.contact_wrench_point,
                            force_only=cfg.contact_wrench_force_only)
                    except ValueError as exc:
                        self._log.warning(f'contact wrench not estimated: {exc}',
                                          throttle_duration_sec=self._throttle)
            ob.last_ns = step[1]
        return d, out, r, contact, wrench

    def _publish(self, eng, cfg, stamp, d, out, r, contact, wrench):
        """Write the results into the preallocated messages and publish them (~/dynamics and
        ~/christoffel from ``out``, in the published coordinates; the rest from ``d``)."""
        if HAVE_MSGS:
            if cfg.publish_dynamics:
                m = eng.dyn_msg
                m.header.stamp = stamp
                if not eng.coords.identity:   # joint: q, v were gathered into the message
                    np.copyto(eng.dyn_q, out.q)
                    np.copyto(eng.dyn_v, out.v)
                np.copyto(eng.M_view, out.d.M)
                np.copyto(eng.C_view, out.d.C)
                np.copyto(eng.Mdot_view, out.d.Mdot)
                np.copyto(eng.g_dyn_view, out.d.g)
                self._pub_dyn.publish(m)
            if out.gamma is not None:
                m = eng.gam_msg
                m.header.stamp = stamp
                np.copyto(eng.gam_q, out.q)
                np.copyto(eng.G_view, out.gamma)
                self._pub_G.publish(m)
            # while in contact every update; when free only the first update and the release
            # (the residual itself streams on ~/external_torque)
            if contact is not None and cfg.publish_contact_estimate and (
                    contact.in_contact or not eng.free_announced):
                self._fill_contact(eng, cfg, stamp, r, contact, wrench)
                self._pub_contact.publish(eng.contact_msg)
                eng.free_announced = not contact.in_contact
        if cfg.publish_gravity_torque or not HAVE_MSGS:
            np.copyto(eng.g_view, d.g)
            eng.g_msg.header.stamp = stamp
            self._pub_g.publish(eng.g_msg)
        if r is not None and cfg.publish_external_torque:
            np.copyto(eng.ext_view, r)
            eng.ext_msg.header.stamp = stamp
            self._pub_ext.publish(eng.ext_msg)

    @staticmethod
    def _fill_contact(eng, cfg, stamp, r, contact, wrench):
        m = eng.contact_msg
        m.header.stamp = stamp
        np.copyto(eng.contact_r, r)
        m.in_contact = bool(contact.in_contact)
        links = contact.links if contact.in_contact else []
        if list(m.isolated_links) != links:
            m.isolated_links = list(links)
        m.wrench_valid = wrench is not None
        if wrench is not None:
            m.wrench_link = cfg.contact_wrench_link or contact.link
            p = cfg.contact_wrench_point
            m.wrench_point.x, m.wrench_point.y, m.wrench_point.z = p
            w = m.wrench
            w.force.x, w.force.y, w.force.z = (float(x) for x in wrench[:3])
            w.torque.x, w.torque.y, w.torque.z = (float(x) for x in wrench[3:])
        elif m.wrench_link:
            m.wrench_link = ''
            m.wrench_point.x = m.wrench_point.y = m.wrench_point.z = 0.0
            w = m.wrench
            w.force.x = w.force.y = w.force.z = 0.0
            w.torque.x = w.torque.y = w.torque.z = 0.0

    # ------------------------------------------------------------------ services
    def _service_state(self, request, with_velocity):
        """(engine, q, v, stamp) for a GetDynamics/GetChristoffel request; raises ValueError."""
        eng = self._engine
        if eng is None:
            raise ValueError('no robot model yet (set robot_description or publish it on the '
                             'robot_description topic)')
        if len(request.state.name) == 0:
            if len(request.state.position) or len(request.state.velocity):
                raise ValueError('positions or velocities without names')
            if eng.latest_stamp is None:
                raise ValueError('no joint state accepted yet: give a state in the request '
                                 '(names and positions) or publish joint_states')
            return eng, eng.latest_q.copy(), eng.latest_v.copy(), eng.latest_stamp
        q, v = eng.state_from_request(request, with_velocity)
        return eng, q, v, self.get_clock().now().to_msg()

    def _srv_get_dynamics(self, request, response):
        try:
            eng, q, v, stamp = self._service_state(request, with_velocity=True)
            out = eng.coords.apply(q, v, rd.dynamics(eng.model, q, v))
            q, v, d = out.q, out.v, out.d
        except Exception as exc:  # noqa: BLE001 - the reason goes back to the caller
            response.success = False
            response.message = str(exc)
            return response
        m = response.dynamics
        m.header.stamp = stamp
        m.header.frame_id = eng.frame_id
        m.names = list(eng.coords.names)
        m.position = array.array('d', q)
        m.velocity = array.array('d', v)
        m.mass_matrix = array.array('d', d.M.ravel())
        m.coriolis_matrix = array.array('d', d.C.ravel())
        m.mass_matrix_dot = array.array('d', d.Mdot.ravel())
        m.gravity = array.array('d', d.g)
        response.success = True
        return response

    def _srv_get_christoffel(self, request, response):
        try:
            eng, q, v, stamp = self._service_state(request, with_velocity=False)
            M = None if eng.coords.identity else rd.mass_matrix(eng.model, q)
            gamma = eng.coords.christoffel(q, rd.christoffel(eng.model, q), M)
            q = eng.coords.state(q, v, M)[0]
        except Exception as exc:  # noqa: BLE001
            response.success = False
            response.message = str(exc)
            return response
        m = response.christoffel
        m.header.stamp = stamp
        m.header.frame_id = eng.frame_id
        m.names = list(eng.coords.names)
        m.position = array.array('d', q)
        m.christoffel = array.array('d', np.ascontiguousarray(gamma).ravel())
        response.success = True
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
                'observer not available (no model yet)')) + '; stamp history cleared'
            return response
        ob.reset()
        if self._engine is not None:
            self._engine.free_announced = False
        response.success = True
        response.message = ('observer will be re-initialized at the next joint state; '
                            'stamp history cleared')
        return response


def main(args=None):
    """Entry point of ``dynamics_node``: spins until SIGINT/SIGTERM, then exits with status 0."""
    def make():
        node = DynamicsNode()
        # Everything built at start-up (modules, compiled kernels, the model) is long-lived:
        # move it out of the collector's reach so that GC pauses in the 1 kHz loop stay short.
        gc.collect()
        gc.freeze()
        return node

    def summary(node):
        node.get_logger().info(f'joint states accepted: {node.stats["accepted"]}, rejected: '
                               f'{node.stats["rejected"]}')

    return process.run(make, args, executor=lambda node: node.executor_kind, on_stop=summary)


if __name__ == '__main__':
    sys.exit(main())
