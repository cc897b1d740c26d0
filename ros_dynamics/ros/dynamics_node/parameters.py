"""The dynamics node's parameters: its table (:class:`~ros_dynamics.ros.parameter_table.ParameterTable`).

Each entry gives the type (from the default), the default, the description, the range, the
allowed lengths of an array, the choices, whether it is read-only, and what a change affects
(``model``: the model is rebuilt; ``observer``: the observer restarts with the new settings;
``input``: the joint-input policy; ``output``: takes effect at the next cycle; ``start-up``:
read-only).  The machinery (validation, ROS descriptors, generated files) is
:mod:`ros_dynamics.ros.parameter_table`, shared by every node; the other nodes' tables are in
their modules (``sim_node``, ``tracking_controller``, ``wbc_node``, ``mujoco_sim_node``).
``python -m ros_dynamics.ros.parameter_files --write`` writes ``config/dynamics.yaml`` and
``docs/parameters.md`` (a section per node); a test checks that both are up to date.  No rclpy
is needed except for :func:`descriptor`.
"""
from __future__ import annotations

from ..parameter_table import BIG, Param, ParameterTable, descriptor  # noqa: F401

COORDINATES = ('joint', 'mimic_reduced', 'center_of_mass')
RELIABILITIES = ('reliable', 'best_effort')
EXECUTORS = ('events', 'single')
EFFORT_SOURCES = ('joint_state', 'commanded_torque')


P = Param
_ENTRIES = (
    # --- model: a change rebuilds the model (a description that fails is refused)
    P('robot_description', '', 'URDF XML of the robot (not a file path: use the launch file\'s '
      'urdf:=, a parameter file or the robot_description topic). Empty: the latest '
      'std_msgs/String on the robot_description topic.', 'model'),
    P('floating_base', False, 'Give the URDF root a 6-DoF free joint; the base pose and twist '
      'come from nav_msgs/Odometry on odom.', 'model'),
    P('gravity', [0.0, 0.0, -9.81], 'Gravity [gx, gy, gz] in m/s^2, world (root) frame.', 'model',
      lengths=(3,), norm_max=1e3),
    P('coordinates', 'joint', 'Coordinates of ~/dynamics, ~/christoffel and the data services: '
      'joint (the model\'s), mimic_reduced (independent joints only) or center_of_mass '
      '(floating base: CoM position and base angular velocity replace the base pose and twist).',
      'model', choices=COORDINATES),
    P('world_frame', '', 'frame_id of the outputs. Empty: the URDF root link (fixed base) or '
      '"world" (floating base).', 'model'),
    P('max_nv', 500, 'Descriptions with more velocity coordinates are refused.', 'model',
      1, 100000),
    P('christoffel_max_nv', 100, 'Gamma (nv^3 values) is computed, streamed and served only for '
      'models up to this size.', 'model', 0, 100000),
    P('payload_link', '', 'Link carrying a payload the URDF does not know (a tool); empty: none.',
      'model'),
    P('payload_mass', 0.0, 'Payload mass in kg (0: none).', 'model', 0.0, 1e4),
    P('payload_com', [0.0, 0.0, 0.0], 'Payload centre of mass in the payload link\'s frame (m).',
      'model', lengths=(3,), norm_max=1e3),
    P('payload_inertia', [0.0, 0.0, 0.0, 0.0, 0.0, 0.0], 'Payload inertia about its centre of '
      'mass in link axes [ixx, ixy, ixz, iyy, iyz, izz] (kg m^2).', 'model', -1e4, 1e4,
      lengths=(6,)),
    P('joint_armature', [0.0], 'Reflected rotor inertia per joint (kg m^2; kg for prismatic), '
      'added to the diagonal of M: one value or one per joint (e.g. from calibrate --links all).',
      'model', 0.0, 1e4),
    # --- outputs
    P('publish_dynamics', True, 'Publish ~/dynamics (M, C, dM/dt, g per joint state).'),
    P('publish_external_torque', True, 'Publish ~/external_torque (sensor_msgs/JointState, '
      'effort = observer residual).'),
    P('publish_contact_estimate', True, 'Publish ~/contact_estimate: every observer update while '
      'in contact, once when free.'),
    P('publish_gravity_torque', False, 'Also publish ~/gravity_torque (sensor_msgs/JointState, '
      'effort = g); always on without ros_dynamics_msgs.'),
    P('publish_markers', True, 'Publish ~/markers (visualization_msgs/MarkerArray, world frame): '
      'per estimated contact a force arrow, the contact link, |F|; deleted on release.'),
    P('marker_force_scale', 0.01, 'Length of the force arrow per newton (m/N).', 'output',
      0.0, 10.0, True),
    P('publish_external_wrench', True, 'Publish ~/external_wrench (geometry_msgs/WrenchStamped): '
      'the contact wrench about the contact link\'s origin, in its frame; zero on release.'),
    P('publish_diagnostics', True, 'Publish the node\'s health on /diagnostics at 1 Hz '
      '(docs/diagnostics.md).'),
    P('catch_up', True, 'Fresh when behind: when joint states have waited longer than '
      'catch_up_after behind the one being handled (the node fell behind), they are taken into '
      'the cycle too, each (the observer gets every sample), and only the newest is published; '
      'the others are counted in /diagnostics. false: each joint state is published, however '
      'late.', 'output'),
    P('catch_up_after', 0.01, 'How long (s) joint states may wait in the queue before the node '
      'counts as behind (catch_up); below it each is published in turn.', 'output', 0.0,
      60.0),
    P('publish_rate', 0.0, 'Rate (Hz) of the per-joint-state streams (~/dynamics, ~/task_space, '
      '~/contact_forces, ~/external_torque, ~/gravity_torque): the first cycle in each '
      '1/publish_rate period of the joint states\' stamps is published, the others are '
      'computed (observer, contact state) but not sent; 0: every joint state. For a '
      'controller at a divisor of the joint-state rate.', 'output', 0.0, 1e6),
    P('christoffel_stream', True, 'Publish ~/christoffel every christoffel_decimation-th cycle '
      'while someone subscribes, else once a second.'),
    P('christoffel_decimation', 10, 'Stream Gamma every N-th accepted joint state.', 'output',
      1, 1000000),
    P('contact_wrench_link', '', 'Link at which the contact wrench is estimated; empty: the '
      'isolated contact link.', 'wrench'),
    P('contact_wrench_point', [0.0, 0.0, 0.0], 'Contact point in that link\'s frame (m).',
      'wrench', lengths=(3,), norm_max=1e3),
    P('contact_wrench_force_only', True, 'Estimate a pure force at the point (needs >= 3 joints '
      'up to the link); false: a minimum-norm 6-D wrench.', 'wrench'),
    # --- quality of service and executor: read at start-up
    P('qos_depth', 500, 'History depth of the output topics (~/christoffel: 1).', 'start-up',
      1, 100000),
    P('qos_reliability', 'reliable', 'Reliability of the output topics.', 'start-up',
      choices=RELIABILITIES),
    P('input_qos_depth', 1000, 'History depth of joint_states, odom and ~/commanded_torque.',
      'start-up', 1, 100000),
    P('input_qos_reliability', 'reliable', 'Reliability of the inputs (best_effort also receives '
      'from reliable publishers).', 'start-up', choices=RELIABILITIES),
    P('executor', 'events', 'rclpy executor of the input path: events (about half the CPU per '
      'message) or single.', 'start-up', choices=EXECUTORS),
    P('task_frames', [], 'Task frames of ~/task_space (links, or frames that fixed joints of the '
      'URDF define, e.g. feet or a tool flange): per frame its pose, Jacobian and dJ/dt v, '
      'published with the centroidal terms once per accepted joint state (also with an empty '
      'list on a floating base). An unknown frame is refused with the closest names.', 'model',
      item='string'),
    P('max_request_links', 64, 'Largest number of links (nodes) one ~/get_operational_space '
      'request may ask for.', 'output', 1, 1000),
    P('log_throttle_sec', 2.0, 'Minimum interval between repeated warnings of one kind (s).',
      'start-up', 0.0, 3600.0),
    # --- joint input
    P('allow_missing_velocity', False, 'Accept joint states without velocities (zero velocity).',
      'input'),
    P('joint_hold_max_age', 0.5, 'Joints not in the driving source\'s message are taken from '
      'their own source if their stamp is within this many seconds of the cycle\'s stamp.',
      'input', 0.0, 3600.0),
    P('stamp_max_lead', 1.0, 'Joint states stamped more than this (s) ahead of the node clock '
      'are rejected.', 'input', 0.0, BIG, True),
    P('stamp_reset_jump', 1.0, 'A stamp earlier than its source\'s last one by more than this '
      '(s) is a source reset (accepted, observer restarted); smaller steps back are rejected. '
      'A jump back of the node\'s clock (simulated time) is always a reset.', 'input',
      0.0, BIG, True),
    P('input_limit_factor', 2.0, 'Velocities and efforts are accepted up to this multiple of the '
      'URDF joint limits.', 'input', 1.0, 1e6),
    P('default_velocity_limit', 100.0, 'Velocity limit of a joint whose URDF gives none '
      '(rad/s or m/s).', 'input', 0.0, BIG, True),
    P('default_effort_limit', 10000.0, 'Effort limit of a joint whose URDF gives none (N m or N).',
      'input', 0.0, BIG, True),
    P('max_abs_position', 1e6, 'Joint positions beyond +-this (rad or m) are rejected.', 'input',
      0.0, BIG, True),
    P('effort_source', 'joint_state', 'Applied torque for the observer: the effort field of '
      'joint_states, or the latest ~/commanded_torque.', 'input', choices=EFFORT_SOURCES),
    P('commanded_torque_timeout', 0.1, 'A commanded torque older than this (s) is not used; '
      '0 disables the check.', 'input', 0.0, BIG),
    # --- observer: a change restarts it
    P('observer_enabled', True, 'Run the generalized-momentum contact observer.', 'observer'),
    P('observer_gain', [50.0], 'Observer gain K (1/s): one value, one per joint or one per '
      'velocity coordinate.', 'observer', 0.0, 1e6, True),
    P('observer_friction_viscous', [0.0], 'Viscous joint friction (N m s/rad): one value or one '
      'per joint.', 'observer', 0.0, 1e6),
    P('observer_friction_coulomb', [0.0], 'Coulomb joint friction (N m): one value or one per '
      'joint.', 'observer', 0.0, 1e6),
    P('observer_torque_offset', [0.0], 'Constant offset of the measured joint torques (N m; '
      'measured = applied + offset, as calibrate --links all identifies it): one value or one '
      'per joint.', 'observer', -1e6, 1e6),
    P('contact_threshold', [5.0], 'Detection threshold on |residual| (N m): one value, one per '
      'joint or one per velocity coordinate.', 'observer', 0.0, 1e9, True),
    P('contact_threshold_velocity', [0.0], 'State-dependent threshold: contact_threshold grows '
      'by this x |joint velocity| (N m s/rad; what friction leaves grows with speed): one value, '
      'one per joint or one per velocity coordinate; 0: a constant threshold. calibrate fits it '
      'where held-out data ask for it.', 'observer', 0.0, 1e9),
    P('contact_threshold_torque', [0.0], 'State-dependent threshold: contact_threshold grows by '
      'this x |measured joint torque| (N m per N m; load-dependent friction, torque-constant '
      'errors): one value, one per joint or one per velocity coordinate; 0: a constant '
      'threshold. calibrate fits it where held-out data ask for it.', 'observer', 0.0, 1e9),
    P('contact_release_ratio', 0.5, 'A detected joint is released below threshold x this ratio.',
      'observer', 0.0, 1.0, True),
    P('observer_gap_factor', 5.0, 'A stamp gap longer than this many median sample periods of '
      'the stream (at least 2 ms, at most observer_max_dt) is bridged: the residual is kept and '
      'the momentum integral restarts after the gap (no observer restart).',
      'observer', 1.0, 1000.0),
    P('observer_max_dt', 0.1, 'Longest stamp gap the observer ever integrates across (s); '
      'longer ones are bridged.', 'observer', 0.0, BIG, True),
    P('contact_frames', [], 'Known contact frames (feet, fingertips: links or frames of fixed '
      'joints): per observer update the force at each from the residual, its contact state and '
      'what they leave unexplained, on ~/contact_forces; contact detection (~/contact_estimate) '
      'then judges the unexplained part (docs/contact_forces.md). Empty: off.', 'observer',
      item='string'),
    P('contact_frame_model', 'point', 'point: a 3-D force at each contact frame origin; wrench: '
      'a 6-D wrench (flat feet, grippers).', 'observer', choices=('point', 'wrench')),
    P('contact_normal', [0.0, 0.0, 1.0], 'Contact normal in world axes (the unilateral and '
      'friction-cone constraints, the normal force of the contact state).', 'observer',
      lengths=(3,), norm_max=1e3),
    P('contact_force_threshold', 10.0, 'Normal force (N) above which a contact frame is in '
      'contact; released below contact_release_ratio x this.', 'observer', 0.0, 1e9, True),
    P('contact_fast_gain', 400.0, 'Contact state: gain (1/s) of the fast force it takes from the '
      'residual\'s rate (a second K/(s+K) of the observer\'s input; touch-down and lift-off '
      'within a few ms instead of ln(F/F_release)/observer_gain). 0: the state from the '
      'filtered force (docs/contact_forces.md).', 'observer', 0.0, 1e5),
    P('contact_touchdown_height', 0.015, 'Contact state: a frame lower than this (m, along '
      'contact_normal) above the frames in contact may touch down on the fast force alone; '
      'higher (a step up, a swing leg\'s noise) it needs the filtered force too. 0: always.',
      'observer', 0.0, 10.0),
    P('contact_lift_speed', 0.3, 'Contact state: a frame in contact rising faster than this '
      '(m/s, along contact_normal) with less than contact_force_threshold has lifted off; no '
      'touch-down while rising faster. 0: no velocity rule.', 'observer', 0.0, 100.0),
    P('odom_twist_noise', 0.03, 'Floating base with contact_frames: the noise (1 sigma, m/s '
      'and rad/s) of the odom base twist. > 0: the unexplained part comes from a residual whose '
      'base twist is taken from the contact frames in contact (at rest) and the joint '
      'velocities, fused with odom weighted by this (docs/contact_forces.md); 0: odom as is.',
      'observer', 0.0, 1e3),
    P('odom_max_age', 0.05, 'Floating base: a joint state whose latest odom is older than this '
      '(s, by stamps) is refused, so that nothing is computed from an old base state; 0: no '
      'check.', 'input', 0.0, 3600.0),
)


def _rules(checked):
    if checked['coordinates'] == 'center_of_mass' and not checked['floating_base']:
        raise ValueError("coordinates 'center_of_mass' need floating_base: true")
    if checked['payload_mass'] > 0.0 and not checked['payload_link']:
        raise ValueError('payload_mass > 0 needs payload_link (the link carrying it)')


ABOUT = ('"Affects" says what a change does at run time: `model` rebuilds the model (refused '
         'with the reason if the result would not build; other settings stay independent of '
         'a refused description), `observer` restarts the observer, `wrench` changes where '
         'the contact wrench is estimated (no restart), `input` changes the joint-input '
         'policy, `output` applies at the next cycle, `start-up` is read-only. Lists are '
         'double arrays (`ros2 param set /dynamics observer_gain "[20.0]"`). Defaults: '
         '`config/dynamics.yaml`.')
TABLE = ParameterTable('dynamics_node', _ENTRIES, rules=(_rules,), about=ABOUT)
PARAMETERS = TABLE.params
BY_NAME = TABLE.by_name
validate = TABLE.validate
defaults = TABLE.defaults
