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
and the observer outputs are always in the model's joint coordinates; with ``mimic_reduced`` the
inputs may carry the independent joints alone (followers from the mimic relation, see
:class:`_NameMap`), and ``~/get_operational_space`` answers the constrained system's Lambda.

Without the interface package ``ros_dynamics_msgs`` the node runs with its standard-type outputs
only (``~/external_torque``, ``~/gravity_torque``) and says once how to build the package.

Input policy (each rejected message is logged, throttled per kind of rejection, and produces
no output at all; README "Input policy"):

* no model yet; a stamp that is not normalized (nanosec >= 1e9), zero from a source that sends
  stamps, more than ``stamp_max_lead`` ahead of the node clock, or earlier than the last
  accepted one by at most ``stamp_reset_jump`` (a larger jump back is a source reset: accepted,
  the observer re-initializes); a required joint missing or named twice,
  ``len(position) != len(name)``, ``velocity`` neither empty nor of ``len(name)``, ``effort``
  neither empty nor of ``len(name)``; NaN/inf or a value beyond its bound in position
  (``max_abs_position``), velocity or effort (``input_limit_factor`` x the URDF limit) of a
  required joint; empty ``velocity`` (unless ``allow_missing_velocity``: then the velocities
  are taken as zero); floating base without a valid odometry message yet.
* results that are not finite are not published (the observer re-initializes).
* empty ``effort`` (effort source ``joint_state``): the dynamics terms are published, the
  observer is not updated and ``~/external_torque`` / ``~/contact_estimate`` are not published.

Robot descriptions are read as URDF text only (never as a file path, never through xacro) and
built into a new engine on a builder thread; the executor keeps answering with the current
engine and installs the new one when it is ready.

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
import queue
import sys
import threading
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
MODEL_PARAMS = ('robot_description', 'floating_base', 'gravity', 'coordinates',
                'christoffel_max_nv')
OBSERVER_PARAMS = ('observer_enabled', 'observer_gain', 'observer_friction_viscous',
                   'observer_friction_coulomb', 'contact_threshold', 'contact_release_ratio')
EFFORT_SOURCES = ('joint_state', 'commanded_torque')
RELIABILITIES = {'reliable': ReliabilityPolicy.RELIABLE,
                 'best_effort': ReliabilityPolicy.BEST_EFFORT}
EXECUTORS = ('single', 'events')

_DOUBLES = {'type': ParameterType.PARAMETER_DOUBLE_ARRAY}

# Bounds of physically meaningful parameter values (README, "Input policy"): beyond them a value
# is a typo or an attack, and would overflow the observer or the outputs.
MAX_COEFFICIENT = 1e6       # observer gain (1/s), friction coefficients (N m s/rad, N m)
MAX_GRAVITY = 1e3           # m/s^2
MAX_POINT_DISTANCE = 1e3    # m, contact point from its link

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
     'A joint-state stamp gap larger than this (s, > 0) re-initializes the observer.',
     {'floating_point_range': [FloatingPointRange(from_value=0.0, to_value=1e9, step=0.0)]}),
    ('stamp_max_lead', 1.0,
     'Joint states stamped more than this (s, > 0) ahead of the node clock are rejected.',
     {'floating_point_range': [FloatingPointRange(from_value=0.0, to_value=1e9, step=0.0)]}),
    ('stamp_reset_jump', 1.0,
     'A stamp earlier than the last accepted one by more than this (s, > 0) is a source reset '
     '(simulation or bag restarted): accepted, the observer re-initializes. Smaller steps back '
     'are out of order and rejected.',
     {'floating_point_range': [FloatingPointRange(from_value=0.0, to_value=1e9, step=0.0)]}),
    ('input_limit_factor', 2.0,
     'Velocities and efforts are accepted up to this multiple (>= 1) of the joint limits of the '
     'URDF (<limit velocity= effort=>).',
     {'floating_point_range': [FloatingPointRange(from_value=1.0, to_value=1e6, step=0.0)]}),
    ('default_velocity_limit', 100.0,
     'Velocity limit (rad/s or m/s) of a joint whose URDF gives none.',
     {'floating_point_range': [FloatingPointRange(from_value=0.0, to_value=1e9, step=0.0)]}),
    ('default_effort_limit', 10000.0,
     'Effort limit (N m or N) of a joint whose URDF gives none.',
     {'floating_point_range': [FloatingPointRange(from_value=0.0, to_value=1e12, step=0.0)]}),
    ('max_abs_position', 1e6,
     'Joint positions (rad or m) beyond +-this are rejected.',
     {'floating_point_range': [FloatingPointRange(from_value=0.0, to_value=1e12, step=0.0)]}),
    ('max_nv', 500,
     'Descriptions with more velocity coordinates than this are refused (M alone is nv^2).',
     {'integer_range': [IntegerRange(from_value=1, to_value=100000, step=1)]}),
    ('christoffel_max_nv', 100,
     'Gamma (nv^3 values) is computed, streamed and served only for models up to this size.',
     {'integer_range': [IntegerRange(from_value=0, to_value=100000, step=1)]}),
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
        if math.hypot(*self.gravity) > MAX_GRAVITY:
            raise ValueError(f'gravity must be at most {MAX_GRAVITY:g} m/s^2 in norm')
        self.observer_gain = self._floats('observer_gain', self.observer_gain)
        if min(self.observer_gain) <= 0.0:
            raise ValueError('observer_gain must be > 0')
        for name in ('observer_gain', 'observer_friction_viscous', 'observer_friction_coulomb'):
            if max(self._floats(name, getattr(self, name))) > MAX_COEFFICIENT:
                raise ValueError(f'{name} must be at most {MAX_COEFFICIENT:g}')
        for name in ('observer_max_dt', 'stamp_max_lead', 'stamp_reset_jump',
                     'default_velocity_limit', 'default_effort_limit', 'max_abs_position'):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                    math.isfinite(value) and value > 0.0):
                raise ValueError(f'{name} must be a finite number > 0')
        if not (isinstance(self.input_limit_factor, float)
                and 1.0 <= self.input_limit_factor < math.inf):
            raise ValueError('input_limit_factor must be a finite number >= 1')
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
        if math.hypot(*self.contact_wrench_point) > MAX_POINT_DISTANCE:
            raise ValueError(f'contact_wrench_point must be within {MAX_POINT_DISTANCE:g} m of '
                             'the link origin')
        if int(self.christoffel_decimation) < 1:
            raise ValueError('christoffel_decimation must be >= 1')
        self.christoffel_decimation = int(self.christoffel_decimation)


def load_model(xml: str, floating_base: bool, gravity, max_nv=None) -> object:
    """Build a core model from URDF XML text (raises ValueError with the reason on any problem).

    The description is only ever read as XML text (``rd.load_urdf_string``): a file path or a
    xacro file name given on the topic or as the parameter is refused, never opened or run.
    """
    if not isinstance(xml, str) or not xml.strip():
        raise ValueError('the robot description is empty')
    if max_nv is not None and xml.count('<joint') > 2 * max_nv + 100:
        # cheap early refusal of a huge description, before parsing it
        raise ValueError(f'the description has {xml.count("<joint")} <joint> elements; more '
                         f'than max_nv ({max_nv}) velocity coordinates are refused')
    model = rd.load_urdf_string(xml, floating_base=bool(floating_base),
                                gravity=np.asarray(gravity, dtype=float))
    if max_nv is not None and model.nv > max_nv:
        raise ValueError(f'the model has {model.nv} velocity coordinates, more than max_nv '
                         f'({max_nv})')
    return model


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


def _within(x, bound) -> bool:
    """|x| <= bound elementwise (False for NaN)."""
    return bool((np.abs(x) <= bound).all())


def _nonfinite_output(d, gamma, r, wrench):
    """Why the results of a cycle must not be published (None if all are finite)."""
    for name, x in (('M', d.M), ('C', d.C), ('dM/dt', d.Mdot), ('g', d.g), ('Gamma', gamma),
                    ('the observer residual', r), ('the contact wrench', wrench)):
        if x is not None and not _finite(x):
            return f'non-finite {name} computed'
    return None


def _finite(x) -> bool:
    """All entries finite (NaN and inf propagate into the sum; no temporary array)."""
    return math.isfinite(x.sum())


def _model_key(xml, cfg):
    """What an engine is built from: a change of any of these needs a new engine."""
    return (xml, bool(cfg.floating_base), tuple(cfg.gravity), cfg.world_frame,
            int(cfg.christoffel_max_nv), cfg.coordinates)


def _link_error(model, cfg):
    """Why contact_wrench_link does not fit ``model`` (None if it does)."""
    link = cfg.contact_wrench_link
    if link and link not in getattr(model, 'link_frames', {}):
        return f'contact_wrench_link {link!r} is not a link of the model {model.name!r}'
    return None


class _Engine:
    """Everything that belongs to one robot model: model, buffers, messages, caches."""

    def __init__(self, model, xml, cfg: _Config):
        self.xml = xml
        self.model = model
        self.floating = bool(cfg.floating_base)
        self.gravity = cfg.gravity
        self.key = _model_key(xml, cfg)
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
        self.with_gamma = n <= cfg.christoffel_max_nv  # Gamma has n^3 entries
        self.names = (list(BASE_DOF_NAMES) if self.floating else []) + self.joint_names
        self.frame_id = cfg.world_frame or ('world' if self.floating
                                            else (getattr(model, 'root_link', '') or 'world'))
        q0 = np.zeros(self.nq)
        if self.floating:
            q0[6] = 1.0
        v0 = np.zeros(self.nv)
        # Warm up (JIT) and check every kernel on this model before it is used, so the first
        # joint states (and the first contact) are not delayed by a compile, which would
        # overflow queues at 1 kHz and re-initialize the observer in the middle of a contact.
        # The cycle's workspace: one kinematics pass fills M, C, Mdot, g, p = M v, C^T v (and
        # Gamma every christoffel_decimation-th cycle) without allocating (rd.compute_all_terms).
        self.data = rd.Data(model)
        # (Gamma, nv^3 doubles, is allocated here only when it will stream)
        rd.compute_all_terms(model, q0, v0, self.data, christoffel=bool(
            HAVE_MSGS and cfg.christoffel_stream and self.with_gamma))
        # the published coordinates: built, warmed up and checked on the same state
        self.coords = OutputCoordinates(model, cfg.coordinates, BASE_DOF_NAMES)
        # inputs: every joint, or (mimic_reduced) the independent joints alone (_NameMap)
        self.mimic = self.coords.joint_map
        self.missing_hint = ('' if self.mimic is not None or not getattr(model, 'mimic', None)
                             else " (with coordinates 'mimic_reduced' the independent joints "
                             'alone are accepted)')
        out = self.coords.apply(q0, v0, self.data.dynamics,
                                rd.christoffel(model, q0) if self.with_gamma else None)
        m = self.coords.nv
        if np.shape(out.d.M) != (m, m) or (out.gamma is not None
                                           and np.shape(out.gamma) != (m, m, m)):
            raise ValueError(f'{cfg.coordinates} coordinates: terms of the wrong shape')
        warm = rd.MomentumObserver(model)
        warm.reset_from(self.data)
        warm.update_from(self.data, np.zeros(n), 1e-3)
        rd.ContactDetector(model).update(warm.residual)
        if model.body_names:
            for force_only in (True, False):
                try:
                    rd.estimate_contact_wrench(model, q0, np.ones(n), model.body_names[-1],
                                               np.zeros(3), force_only=force_only)
                except ValueError:
                    pass  # e.g. fewer than 3 joints for a pure force: compiled all the same
        self.set_limits(cfg)

        # ---- preallocated outputs; q and v of a cycle are gathered straight into ~/dynamics
        self.gam_msg = None  # ~/christoffel: allocated at its first use (n^3 values)
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
            self.contact_msg = ContactEstimate()
            self.contact_msg.header.frame_id = self.frame_id
            self.contact_msg.names = list(self.names)
            self.contact_r = _attach(self.contact_msg, 'external_torque', n)
        else:
            self.dyn_msg = self.contact_msg = None
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

    def gamma_message(self):
        """The preallocated ~/christoffel message (built at the first streamed Gamma)."""
        if self.gam_msg is None:   # in the published coordinates (size m)
            co, m = self.coords, self.coords.nv
            self.gam_msg = Christoffel()
            self.gam_msg.header.frame_id = self.frame_id
            self.gam_msg.names = list(co.names)
            self.gam_q = _attach(self.gam_msg, 'position', co.nq)
            self.G_view = _attach(self.gam_msg, 'christoffel', m * m * m).reshape(m, m, m)
        return self.gam_msg

    def set_limits(self, cfg):
        """Bounds of accepted inputs: input_limit_factor times the URDF velocity and effort
        limits (default_*_limit where the URDF gives none or 0), max_abs_position."""
        limits = getattr(self.model, 'joint_limits', {}) or {}

        def bound(key, default):
            out = np.empty(self.nj)
            for i, j in enumerate(self.joint_names):
                value = (limits.get(j) or {}).get(key)
                out[i] = value if value is not None and math.isfinite(value) and value > 0 \
                    else default
            return out * cfg.input_limit_factor

        self.vel_bound = bound('velocity', cfg.default_velocity_limit)
        self.eff_bound = bound('effort', cfg.default_effort_limit)
        self.pos_bound = float(cfg.max_abs_position)

    def name_map(self, attr, names):
        cached = getattr(self, attr)
        if cached is None or (cached.names is not names and cached.names != names):
            cached = _NameMap(names, self.joint_names, self.mimic, self.missing_hint)
            setattr(self, attr, cached)
        return cached

    def state_from_request(self, req, with_velocity):
        """(q, v) of a GetDynamics/GetChristoffel request; raises ValueError with the reason."""
        js = req.state
        names = list(js.name)
        nmap = _NameMap(names, self.joint_names, self.mimic, self.missing_hint)
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
        nmap.positions(_as_f64(js.position), q[self.base_q:])
        if with_velocity and len(js.velocity):
            nmap.rates(_as_f64(js.velocity), v[self.base_v:])
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
    """Index map from one name list (a message layout) to the model's joints, cached.

    ``mimic`` (coordinates ``mimic_reduced`` with mimic joints: OutputCoordinates.joint_map)
    also accepts a layout with the independent joints only: the followers are then computed
    from the mimic relation, q_joints = E q_independent + offset, v_joints = E v_independent;
    efforts go to the independent joints and the followers get zero, so that A^T tau is the
    given independent efforts (tau_bar = A^T tau, seed 000 eq. (26)).  Follower entries that
    are in the message without all the others are then ignored.  ``hint`` is appended to the
    "missing" error.
    """

    __slots__ = ('names', 'index', 'error', 'unknown', 'expand')

    def __init__(self, names, joint_names, mimic=None, hint=''):
        self.names = list(names)
        self.index = None
        self.error = None
        self.expand = None     # (E, offset, indices of the independent joints in joint_names)
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
        required = joint_names
        if missing and mimic is not None:
            independent, E, offset = mimic
            missing = [j for j in independent if j not in pos]
            if missing:
                hint = ' (the independent joints; the mimic joints may be left out)'
            else:           # independent joints only: the followers from the mimic relation
                required = independent
                self.expand = (E, offset, np.array([joint_names.index(j) for j in independent],
                                                   dtype=np.intp))
        dups = [j for j in required if j in dup]
        if missing:
            self.error = f'missing required joint(s) {missing}{hint}'
        elif dups:
            self.error = f'required joint(s) named more than once: {dups}'
        else:
            self.index = np.array([pos[j] for j in required], dtype=np.intp)

    def positions(self, x, out):
        """The model's joint positions from a message's ``x`` (float64 array) into ``out``."""
        if self.expand is None:
            np.take(x, self.index, out=out)
        else:
            E, offset, _ = self.expand
            np.dot(E, x[self.index], out=out)
            out += offset

    def rates(self, x, out):
        """The model's joint rates (velocities) from a message's ``x`` into ``out``."""
        if self.expand is None:
            np.take(x, self.index, out=out)
        else:
            np.dot(self.expand[0], x[self.index], out=out)

    def efforts(self, x, out):
        """The model's joint efforts from a message's ``x`` into ``out`` (followers 0 when
        only the independent joints are given: A^T out = their efforts)."""
        if self.expand is None:
            np.take(x, self.index, out=out)
        else:
            out[:] = 0.0
            out[self.expand[2]] = x[self.index]


class _Observer:
    """Momentum observer + contact detector for one engine and one observer configuration."""

    def __init__(self, model, cfg: _Config):
        nv, b = int(model.nv), (6 if model.floating_base else 0)
        nj = nv - b

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
        self.obs = rd.MomentumObserver(model, gain=gain, friction_viscous=fv,
                                       friction_coulomb=fc)
        self._det_args = (model, threshold, float(cfg.contact_release_ratio))
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


def _reason(exc):
    """The message of an exception for a log line or a SetParametersResult."""
    if isinstance(exc, ValueError) and str(exc):
        return str(exc)
    return f'{type(exc).__name__}: {exc}'


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
        self.stats = {'accepted': 0, 'rejected': 0, 'observer_outputs': 0, 'publish_failed': 0}
        self._throttle_state = {}     # rejection kind -> (last log time, count since)
        self._stamp_trouble = False   # a joint state was refused for its stamp (observer resets)
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
            # at start-up there is nothing to answer yet: built here, before spinning
            source = 'robot_description parameter'
            self._log.info(f'building the model from the {source} and compiling the kernels '
                           '(the first start after an install compiles for 10-60 s; cached '
                           'after)')
            t0 = time.monotonic()
            try:
                eng = self._build_engine(cfg.robot_description, cfg, source)
            except Exception as exc:  # noqa: BLE001 - any failure of a user description
                self._log.error(f'{source} rejected: {_reason(exc)}')
            else:
                self._log.info(f'model built and kernels ready in {time.monotonic() - t0:.1f} s')
                self._swap(eng, cfg)
        self._build_req = None
        self._build_queue = queue.SimpleQueue()   # requests for the builder thread
        self._built = queue.SimpleQueue()         # its results, installed by the executor
        self._build_thread = threading.Thread(target=self._builder, name='model_builder',
                                              daemon=True)
        self._build_thread.start()
        self._install_timer = self.create_timer(0.05, self._install_built)
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

    def destroy_node(self):
        self._build_queue.put(None)  # ends the builder thread
        return super().destroy_node()

    # ------------------------------------------------------------------ model management
    @property
    def engine(self):
        return self._engine

    @property
    def executor_kind(self):
        return self._cfg.executor

    def _build_engine(self, xml, cfg, source, model=None):
        """A new engine from ``xml`` (or its already parsed ``model``); raises ValueError."""
        if model is None:
            model = load_model(xml, cfg.floating_base, cfg.gravity, cfg.max_nv)
        return _Engine(model, xml, cfg)

    def _request_build(self, xml, cfg, source, model=None):
        """Build an engine on the builder thread; the executor installs it when it is ready
        (:meth:`_install_built`) and keeps answering with the current one meanwhile."""
        self._log.info(f'building the model from the {source} and compiling the kernels '
                       '(the first start after an install compiles for 10-60 s; cached after)')
        req = (_model_key(xml, cfg), xml, cfg, source, model, time.monotonic())
        self._build_req = req
        self._build_queue.put(req)

    def _builder(self):
        """Builder thread: builds the latest requested engine, hands it to the executor."""
        while True:
            req = self._build_queue.get()
            if req is None:
                return
            if req is not self._build_req:
                continue  # superseded by a newer request
            key, xml, cfg, source, model, t0 = req
            try:
                eng = self._build_engine(xml, cfg, source, model)
            except Exception as exc:  # noqa: BLE001 - any failure of a user description
                self._built.put((req, None, exc))
            else:
                self._built.put((req, eng, None))

    def _wanted_key(self):
        cfg = self._cfg
        eng = self._engine
        xml = cfg.robot_description or self._topic_xml or (eng.xml if eng is not None else None)
        return None if xml is None else _model_key(xml, cfg)

    def _install_built(self):
        """Install engines finished by the builder thread (runs on the executor)."""
        while not self._built.empty():
            req, eng, exc = self._built.get_nowait()
            key, xml, cfg, source, model, t0 = req
            if exc is not None:
                self._log.error(f'{source} rejected: {_reason(exc)}; keeping the '
                                f'{"previous" if self._engine is not None else "missing"} '
                                'model')
                continue
            if key != self._wanted_key():
                continue  # a newer description or setting is being built
            self._log.info(f'model built and kernels ready in {time.monotonic() - t0:.1f} s')
            self._swap(eng, self._cfg)

    def _make_observer(self, model, cfg):
        """Observer for (model, cfg), None if disabled. Raises ValueError if invalid."""
        if model is None or not cfg.observer_enabled:
            return None
        return _Observer(model, cfg)

    def _swap(self, eng, cfg, observer=_UNSET):
        """Install a fully built engine (and its observer) in one step."""
        if observer is _UNSET:
            try:
                observer = self._make_observer(eng.model, cfg)
                self._observer_error = None
            except Exception as exc:  # noqa: BLE001
                observer = None
                self._observer_error = str(exc)
                self._log.error(f'observer disabled for this model: {exc}')
        eng.set_limits(cfg)
        self._engine = eng
        self._observer = observer
        self._cycle = 0
        for text in getattr(eng.model, 'warnings', ()):
            self._log.warning(f'URDF: {text}')
        link_error = _link_error(eng.model, cfg)
        if link_error:
            self._log.warning(f'{link_error}: the contact wrench is not estimated')
        if HAVE_MSGS and cfg.christoffel_stream and not eng.with_gamma:
            self._log.warning(f'~/christoffel and ~/get_christoffel off for this model: nv = '
                              f'{eng.nv} > christoffel_max_nv ({cfg.christoffel_max_nv})')
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
        if eng is not None and eng.key == _model_key(xml, cfg):
            return
        self._request_build(xml, cfg, 'robot_description topic')

    def _on_set_parameters(self, params):
        """Validate a parameter change against the settings and the model it applies to; a
        model change is parsed here (its errors are the reason of the refusal) and built on the
        builder thread, installed when ready."""
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
        target = eng.model if eng is not None else None  # the model the settings apply to
        build = None
        if model_change:
            xml = cfg.robot_description or self._topic_xml or (eng.xml if eng else '')
            if xml:
                try:
                    target = load_model(xml, cfg.floating_base, cfg.gravity, cfg.max_nv)
                except Exception as exc:  # noqa: BLE001 - the reason goes back to the caller
                    return SetParametersResult(
                        successful=False, reason=f'model rebuild failed: {_reason(exc)}')
                build = (xml, target)
        if target is not None and _link_error(target, cfg):
            return SetParametersResult(successful=False, reason=_link_error(target, cfg))
        observer = self._observer
        obs_change = bool(model_change) or any(k in OBSERVER_PARAMS for k in changed)
        if obs_change:
            try:
                observer = self._make_observer(target, cfg)
            except Exception as exc:  # noqa: BLE001
                return SetParametersResult(successful=False, reason=f'observer: {exc}')
        self._cfg = cfg
        for k in changed:
            self._log.info(f'parameter {k}: {_show(k, getattr(old, k))} -> '
                           f'{_show(k, getattr(cfg, k))}')
        if build is not None:
            self._log.info(f'rebuilding the model: {", ".join(model_change)} changed')
            self._request_build(build[0], cfg, 'parameters', build[1])
            return SetParametersResult(successful=True)  # the observer comes with the engine
        if obs_change:
            self._observer_error = None
            if observer is not None:
                self._log.info('observer re-initialized with the new settings')
        self._observer = observer
        if eng is not None:
            eng.set_limits(cfg)
        return SetParametersResult(successful=True)

    # ------------------------------------------------------------------ inputs
    def _on_odom(self, msg):
        p, o = msg.pose.pose.position, msg.pose.pose.orientation
        t = msg.twist.twist
        q = np.array((p.x, p.y, p.z, o.x, o.y, o.z, o.w))
        v = np.array((t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z))
        if not (np.isfinite(q).all() and np.isfinite(v).all()):
            self._warn('odom_nonfinite', 'odom rejected: non-finite pose or twist')
            return
        norm = float(np.linalg.norm(q[3:]))
        if abs(norm - 1.0) > 1e-3:
            self._warn('odom_quaternion',
                       f'odom rejected: orientation quaternion norm {norm:.6g} is not 1')
            return
        q[3:] /= norm
        self._base = (q, v)

    def _on_commanded_torque(self, msg):
        eng = self._engine
        if eng is None:
            return
        nmap = eng.name_map('cmd_map', msg.name)
        if nmap.error is not None:
            self._warn('cmd_names', f'~/commanded_torque rejected: {nmap.error}')
            return
        if len(msg.effort) != len(msg.name):
            self._warn('cmd_length', f'~/commanded_torque rejected: {len(msg.effort)} efforts '
                       f'for {len(msg.name)} names')
            return
        tau = np.empty(eng.nj)
        nmap.efforts(_as_f64(msg.effort), tau)
        if not (np.abs(tau) <= eng.eff_bound).all():
            self._warn('cmd_bound', '~/commanded_torque rejected: non-finite effort or beyond '
                       'the effort limit (input_limit_factor x URDF limit)')
            return
        self._cmd = (eng, tau, time.monotonic_ns())

    def _warn(self, kind, text, level='warning'):
        """Log ``text`` at most once per log_throttle_sec for each ``kind`` of problem (one
        throttle per kind, so that a frequent kind does not hide the others), with the number
        of repeats that were not logged."""
        now = time.monotonic()
        last, skipped = self._throttle_state.get(kind, (None, 0))
        if last is not None and now - last < self._throttle:
            self._throttle_state[kind] = (last, skipped + 1)
            return
        self._throttle_state[kind] = (now, 0)
        if skipped:
            text += f' ({skipped} more of this kind not logged)'
        # one call site per severity: rclpy refuses a severity change at one call site
        if level == 'error':
            self._log.error(text)
        elif level == 'info':
            self._log.info(text)
        else:
            self._log.warning(text)

    def _reject(self, kind, reason):
        """Count a rejected joint state and log why (throttled per kind); nothing is published
        for it."""
        self.stats['rejected'] += 1
        self._warn(kind, 'joint_states rejected: ' + reason)

    def _check_stamp(self, stamp):
        """Stamp policy (README, "Input policy"): (stamp_ns, source_reset) or None (rejected)."""
        sec, nsec = stamp.sec, stamp.nanosec
        if nsec >= 1_000_000_000:
            self._stamp_trouble = True
            self._reject('nanosec', f'stamp nanosec {nsec} is not normalized (< 1e9)')
            return None
        stamp_ns = sec * 1_000_000_000 + nsec
        last = self._last_stamp_ns
        cfg = self._cfg
        if stamp_ns == 0:
            if last:  # unstamped messages are accepted only from an unstamped source
                self._stamp_trouble = True
                self._reject('zero_stamp', 'zero stamp (header not set) from a source that '
                             'sends stamps')
                return None
            return 0, False
        now = self.get_clock().now().nanoseconds
        if now > 0 and stamp_ns - now > cfg.stamp_max_lead * 1e9:
            self._stamp_trouble = True
            self._reject('future', f'stamp {sec}.{nsec:09d} is {(stamp_ns - now) * 1e-9:.6g} s '
                         f'ahead of the node clock (stamp_max_lead {cfg.stamp_max_lead:g} s)')
            return None
        if last is not None and stamp_ns < last:
            if (last - stamp_ns) * 1e-9 > cfg.stamp_reset_jump:
                return stamp_ns, True  # logged once the message is otherwise accepted
            self._stamp_trouble = True
            self._reject('backwards', f'stamp {sec}.{nsec:09d} is earlier than the last '
                         f'accepted one ({last * 1e-9:.9f})')
            return None
        return stamp_ns, False

    @staticmethod
    def _bound_violation(eng, qj, vj, ej):
        """(kind, reason) of the first input beyond its bound."""
        for kind, what, x, bound, name in (
                ('position', 'position', qj, eng.pos_bound, 'the position bound max_abs_position'),
                ('velocity', 'velocity', vj, eng.vel_bound,
                 'the velocity limit (input_limit_factor x URDF limit)'),
                ('effort', 'effort', ej, eng.eff_bound,
                 'the effort limit (input_limit_factor x URDF limit)')):
            if x is None:
                continue
            over = np.flatnonzero(~(np.abs(x) <= bound))
            if over.size:
                i = int(over[0])
                b = bound if np.ndim(bound) == 0 else bound[i]
                return kind, (f'{what} {x[i]:.6g} of joint {eng.joint_names[i]!r} is beyond '
                              f'{name}, {b:.6g}')
        return 'bound', 'input beyond its bound'

    def _on_joint_state(self, msg):
        if not self._built.empty():
            self._install_built()
        eng = self._engine
        if eng is None:
            self._warn('no_model', 'joint_states ignored: no robot model yet')
            return
        checked = self._check_stamp(msg.header.stamp)
        if checked is None:
            return
        stamp_ns, source_reset = checked
        stamp = msg.header.stamp
        names = msg.name
        nmap = eng.name_map('js_map', names)
        if nmap.error is not None:
            self._reject('missing' if nmap.error.startswith('missing') else 'duplicate',
                         nmap.error)
            return
        n = len(names)
        cfg = self._cfg
        pos, vel, eff = msg.position, msg.velocity, msg.effort
        if len(pos) != n:
            self._reject('positions', f'{len(pos)} positions for {n} names')
            return
        if len(vel) != n:
            if len(vel) or not cfg.allow_missing_velocity:
                hint = '' if len(vel) else ' (set allow_missing_velocity to use zero velocity)'
                self._reject('velocities', f'{len(vel)} velocities for {n} names{hint}')
                return
        if len(eff) not in (0, n):
            self._reject('efforts', f'{len(eff)} efforts for {n} names')
            return
        qj, vj, ej = eng.qj, eng.vj, eng.ej
        nmap.positions(_as_f64(pos), qj)
        if len(vel):
            nmap.rates(_as_f64(vel), vj)
        else:
            vj[:] = 0.0
        has_effort = len(eff) > 0
        if has_effort:
            nmap.efforts(_as_f64(eff), ej)
        if not (_finite(qj) and _finite(vj) and (not has_effort or _finite(ej))):
            self._reject('nonfinite', 'NaN or inf in position, velocity or effort of a required '
                         'joint')
            return
        if not (_within(qj, eng.pos_bound) and _within(vj, eng.vel_bound)
                and (not has_effort or _within(ej, eng.eff_bound))):
            self._reject(*self._bound_violation(eng, qj, vj, ej if has_effort else None))
            return
        base = None
        if eng.floating:
            base = self._base
            if base is None:
                self._warn('no_odom', 'joint_states ignored: floating base and no valid odom yet')
                return
        if source_reset or self._stamp_trouble:
            # the source's clock was reset (stamps jumped back) or stamps were refused since
            # the last update: the time since the last observer step is unknown
            if source_reset:
                self._warn('source_reset', f'source reset: stamp jumped back '
                           f'{(self._last_stamp_ns - stamp_ns) * 1e-9:.6g} s (more than '
                           f'stamp_reset_jump {cfg.stamp_reset_jump:g} s); observer '
                           're-initialized')
            self._stamp_trouble = False
            if self._observer is not None:
                self._observer.last_ns = None
        # ---- accepted: the state goes straight into the ~/dynamics message
        q, v = eng.q, eng.v
        if base is not None:
            q[:7] = base[0]
            v[:6] = base[1]
        q[eng.base_q:] = qj
        v[eng.base_v:] = vj
        with_gamma = (HAVE_MSGS and cfg.christoffel_stream and eng.with_gamma
                      and self._cycle % cfg.christoffel_decimation == 0)
        step = self._observer_step(eng, cfg, has_effort, stamp_ns)
        try:
            d, out, r, contact, wrench = self._core_cycle(eng, cfg, q, v, with_gamma, step)
            bad = (_nonfinite_output(d, out.gamma, r, wrench)
                   or (None if out.d is d else _nonfinite_output(out.d, None, None, None)))
        except Exception as exc:  # noqa: BLE001 - nothing is published if any step fails
            bad = f'dynamics failed for this joint state: {_reason(exc)}'
        if bad:
            self.stats['rejected'] += 1
            self._warn('output', f'{bad}: nothing published, observer re-initialized', 'error')
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
                self._warn('no_effort', 'joint_states without effort: observer not updated',
                           'info')
                return None
            eng.tau[eng.base_v:] = eng.ej
        else:
            cmd = self._cmd
            if cmd is None or cmd[0] is not eng:
                self._warn('no_cmd', 'no ~/commanded_torque yet: observer not updated', 'info')
                return None
            if cfg.commanded_torque_timeout > 0 and (
                    time.monotonic_ns() - cmd[2]) > cfg.commanded_torque_timeout * 1e9:
                self._warn('stale_cmd', '~/commanded_torque is stale: observer not updated')
                return None
            eng.tau[eng.base_v:] = cmd[1]
        t_ns = stamp_ns if stamp_ns else self.get_clock().now().nanoseconds
        if ob.last_ns is None:
            return ('reset', t_ns)
        dt = (t_ns - ob.last_ns) * 1e-9
        if dt <= 0.0:
            return None  # duplicate stamp: nothing new to integrate
        if dt > cfg.observer_max_dt:
            self._warn('gap', f'joint_states gap of {dt:.3g} s (more than observer_max_dt): '
                       'observer re-initialized')
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
                        self._warn('wrench', f'contact wrench not estimated: {exc}')
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
                self._send(self._pub_dyn, m)
            if out.gamma is not None:
                m = eng.gamma_message()
                m.header.stamp = stamp
                np.copyto(eng.gam_q, out.q)
                np.copyto(eng.G_view, out.gamma)
                self._send(self._pub_G, m)
            # while in contact every update; when free only the first update and the release
            # (the residual itself streams on ~/external_torque)
            if contact is not None and cfg.publish_contact_estimate and (
                    contact.in_contact or not eng.free_announced):
                self._fill_contact(eng, cfg, stamp, r, contact, wrench)
                self._send(self._pub_contact, eng.contact_msg)
                eng.free_announced = not contact.in_contact
        if cfg.publish_gravity_torque or not HAVE_MSGS:
            np.copyto(eng.g_view, d.g)
            eng.g_msg.header.stamp = stamp
            self._send(self._pub_g, eng.g_msg)
        if r is not None:
            self.stats['observer_outputs'] += 1
        if r is not None and cfg.publish_external_torque:
            np.copyto(eng.ext_view, r)
            eng.ext_msg.header.stamp = stamp
            self._send(self._pub_ext, eng.ext_msg)

    def _send(self, pub, msg):
        """Publish one output; a sample the middleware refuses is counted and logged (kind
        'publish'), and the node goes on. Seen with Fast DDS in the soak benchmark while a
        reliable subscriber of ~/dynamics was stalled (SIGSTOP): the DataWriter's write()
        failed ("cannot publish data"), which used to end the node."""
        try:
            pub.publish(msg)
        except RuntimeError as exc:   # rclpy's RCLError
            self.stats['publish_failed'] += 1
            self._warn('publish', f'{pub.topic_name}: publishing failed: {_reason(exc)}',
                       'error')

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

    def _serve(self, response, field, compute):
        """The path every data service shares: ``compute()`` returns (engine, stamp, {field of
        the response's ``field`` message: value}) or raises; a failure goes back as
        success=false with the reason in ``message`` and nothing filled."""
        try:
            eng, stamp, values = compute()
        except Exception as exc:  # noqa: BLE001 - the reason goes back to the caller
            response.success = False
            response.message = str(exc)
            return response
        m = getattr(response, field)
        m.header.stamp = stamp
        m.header.frame_id = eng.frame_id
        for name, value in values.items():
            setattr(m, name, value)
        response.success = True
        return response

    def _srv_get_dynamics(self, request, response):
        def compute():
            eng, q, v, stamp = self._service_state(request, with_velocity=True)
            out = eng.coords.apply(q, v, rd.dynamics(eng.model, q, v))
            d = out.d
            return eng, stamp, {
                'names': list(eng.coords.names),
                'position': array.array('d', out.q),
                'velocity': array.array('d', out.v),
                'mass_matrix': array.array('d', d.M.ravel()),
                'coriolis_matrix': array.array('d', d.C.ravel()),
                'mass_matrix_dot': array.array('d', d.Mdot.ravel()),
                'gravity': array.array('d', d.g)}
        return self._serve(response, 'dynamics', compute)

    def _srv_get_christoffel(self, request, response):
        def compute():
            eng, q, v, stamp = self._service_state(request, with_velocity=False)
            if not eng.with_gamma:
                raise ValueError(f'Gamma is not computed for this model: nv = {eng.nv} > '
                                 f'christoffel_max_nv ({self._cfg.christoffel_max_nv})')
            M = None if eng.coords.identity else rd.mass_matrix(eng.model, q)
            gamma = eng.coords.christoffel(q, rd.christoffel(eng.model, q), M)
            return eng, stamp, {
                'names': list(eng.coords.names),
                'position': array.array('d', eng.coords.state(q, v, M)[0]),
                'christoffel': array.array('d', np.ascontiguousarray(gamma).ravel())}
        return self._serve(response, 'christoffel', compute)

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
                               f'{node.stats["rejected"]}; observer outputs: '
                               f'{node.stats["observer_outputs"]}; publications failed: '
                               f'{node.stats["publish_failed"]}')

    return process.run(make, args, executor=lambda node: node.executor_kind, on_stop=summary)


if __name__ == '__main__':
    sys.exit(main())
