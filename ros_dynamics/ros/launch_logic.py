"""What ros_dynamics' launch files start, as plain Python (no launch / launch_ros import).

The launch files (dynamics.launch.py, closed_loop.launch.py, trot.launch.py) declare their
arguments from the tables here, call :func:`dynamics_actions` / :func:`closed_loop_actions` /
:func:`trot_actions` with the argument values (strings, as ``LaunchConfiguration.perform``
gives them) and turn the returned
:class:`NodeAction` / :class:`LogAction` records into launch_ros ``Node`` / ``LifecycleNode``
and launch ``LogInfo`` actions. So the decisions (argument validation, which nodes, with which
parameters) can be tested without launch installed, and the launch files stay a thin mapping.

Contradictory arguments raise :class:`LaunchArgumentError` with a message naming them.
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

TRUE = ('true', '1', 'yes', 'on')
FALSE = ('false', '0', 'no', 'off')

# name, default ('' or a path relative to the package share folder, marked by share:), help
DYNAMICS_ARGS = (
    ('urdf', 'share:urdf/arm7.urdf', 'URDF or xacro file of the robot'),
    ('xacro_args', '', "xacro arguments, 'name:=value name2:=value2'"),
    ('params_file', 'share:config/dynamics.yaml', 'Parameter file of dynamics_node'),
    ('namespace', '', 'Namespace of the nodes (topics joint_states, odom, <ns>/dynamics/...)'),
    ('floating_base', 'false', '6-DoF free joint at the URDF root; base state from odom'),
    ('sim', 'false', 'Also start the simulator (publishes joint_states; fixed base only)'),
    ('managed', 'false', 'Run dynamics_node as a lifecycle (managed) node: it waits for '
                         'configure/activate'),
    ('autostart', 'false', 'With managed:=true: configure and activate it at start'),
    ('rviz', 'false', 'Also start robot_state_publisher and rviz2 with config/dynamics.rviz '
                      '(when they are installed)'),
)

CLOSED_LOOP_ARGS = (
    ('urdf', 'share:urdf/arm7.urdf', 'URDF or xacro file of the robot'),
    ('params_file', 'share:config/dynamics.yaml', 'Parameter file of dynamics_node'),
    ('law', 'slotine_li', 'pd_gravity | computed_torque | slotine_li'),
    ('trajectory', 'sine', 'sine | min_jerk'),
    ('amplitude', '0.4', 'trajectory amplitude [rad], all joints'),
    ('frequency', '1.0', 'trajectory frequency [Hz]'),
    ('bandwidth', '30.0', 'feedback bandwidth ω [rad/s] of the default gains'),
    ('real_time_factor', '1.0', 'simulated seconds per wall second (upper bound in lock-step)'),
    ('lockstep_timeout', '1.0', 'sim waits up to this long [s] for each command; 0: free running'),
    ('command_timeout', '0.1', 'sim falls back to gravity compensation + damping after [s]'),
    ('duration', '0.0', 'simulated seconds, then the simulator exits (0: forever)'),
)

TROT_ARGS = (
    ('robot', 'solo12', 'solo12 (example-robot-data) | quadruped (urdf/quadruped.urdf)'),
    ('params_file', 'share:config/dynamics.yaml', 'Parameter file of dynamics_node'),
    ('contact_estimate', 'true', 'touch-downs and lost feet from the dynamics node\'s '
                                 '~/contact_forces (false: from the gait\'s schedule)'),
    ('step_height', '0.0', 'swing height [m] (0: a fifth of the standing height)'),
    ('hidden_load', '0.0', 'kg on the trunk that MuJoCo has and the URDF does not'),
    ('sensing', 'clean', 'clean | noisy (odometry 200 Hz, 10 ms late, 0.03 m/s noise; joint '
                         'noise)'),
    ('duration', '0.0', 'simulated seconds, then the simulator exits (0: until stopped)'),
)
#: the sensing of ``sensing:=noisy`` (a legged robot's state estimator and joint sensors)
NOISY_SENSING = dict(noise_velocity=0.05, noise_effort=0.05, odom_rate=200.0, odom_delay=0.01,
                     odom_noise_linear=0.03, odom_noise_angular=0.01)

RVIZ_CONFIG = 'config/dynamics.rviz'
LIFECYCLE_EXECUTABLE = 'dynamics_lifecycle_node'


class LaunchArgumentError(ValueError):
    """Launch arguments that are invalid or contradict each other."""


@dataclass
class NodeAction:
    """A node to start (launch_ros Node, or LifecycleNode when ``lifecycle``)."""
    package: str
    executable: str
    name: str
    namespace: str = ''
    parameters: list = field(default_factory=list)
    arguments: list = field(default_factory=list)
    lifecycle: bool = False
    autostart: bool = False


@dataclass
class LogAction:
    """A message for the launch log (launch LogInfo)."""
    message: str


def share_dir():
    """share/ros_dynamics when installed, else the source tree (ros2 launch launch/<file>)."""
    try:
        from ament_index_python.packages import get_package_share_directory
        return get_package_share_directory('ros_dynamics')
    except Exception:  # noqa: BLE001 - not installed, or no ament index
        return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def defaults(table, share):
    """{name: default} of an argument table, share: paths resolved against ``share``."""
    return {n: os.path.join(share, d[len('share:'):]) if d.startswith('share:') else d
            for n, d, _ in table}


def parse_bool(name, value):
    v = str(value).strip().lower()
    if v in TRUE:
        return True
    if v in FALSE:
        return False
    raise LaunchArgumentError(f'{name}:={value!r}: expected true or false')


def parse_float(name, value):
    try:
        return float(value)
    except ValueError:
        raise LaunchArgumentError(f'{name}:={value!r}: expected a number') from None


def xacro_mappings(text):
    """'a:=1 b:=x' -> {'a': '1', 'b': 'x'} (the xacro command line's form)."""
    out = {}
    for item in text.split():
        key, sep, value = item.partition(':=')
        if not sep or not key:
            raise LaunchArgumentError(f'xacro_args: expected name:=value, got {item!r}')
        out[key] = value
    return out


def robot_description_from_file(path, xacro_args=''):
    """URDF XML of a .urdf file, or of a .xacro file expanded with the xacro module."""
    if not os.path.isfile(path):
        raise LaunchArgumentError(f'urdf:={path}: no such file')
    if path.endswith('.xacro'):
        import xacro
        return xacro.process_file(path, mappings=xacro_mappings(xacro_args)).toxml()
    if xacro_args.strip():
        raise LaunchArgumentError(f'xacro_args given but urdf:={path} is not a .xacro file')
    with open(path) as f:
        return f.read()


def root_link(xml):
    """The URDF's root link: the one link that is no joint's child."""
    robot = ET.fromstring(xml)
    links = [e.get('name') for e in robot.findall('link')]
    children = {c.get('link') for j in robot.findall('joint') for c in j.findall('child')}
    roots = [n for n in links if n not in children]
    if len(roots) != 1:
        raise LaunchArgumentError(f'the URDF has {len(roots)} root links {roots}; expected one')
    return roots[0]


def has_package(name):
    """Is the ROS package installed (ament index)?"""
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_prefix
    except ImportError:
        return False
    try:
        get_package_prefix(name)
        return True
    except PackageNotFoundError:
        return False


def dynamics_actions(args, share, *, package_available=has_package):
    """Actions of dynamics.launch.py for the argument values ``args`` (all of DYNAMICS_ARGS,
    strings). ``share``: the package share folder (config/dynamics.rviz).
    ``package_available(name)``: whether a ROS package is installed (rviz2,
    robot_state_publisher)."""
    missing = [n for n, _, _ in DYNAMICS_ARGS if n not in args]
    if missing:
        raise LaunchArgumentError(f'missing launch arguments: {missing}')
    floating = parse_bool('floating_base', args['floating_base'])
    sim = parse_bool('sim', args['sim'])
    managed = parse_bool('managed', args['managed'])
    autostart = parse_bool('autostart', args['autostart'])
    rviz = parse_bool('rviz', args['rviz'])
    if autostart and not managed:
        raise LaunchArgumentError(
            'autostart:=true applies to managed:=true only (a plain node starts active); '
            'add managed:=true or drop autostart.')
    if not os.path.isfile(args['params_file']):
        raise LaunchArgumentError(f"params_file:={args['params_file']}: no such file")
    xml = robot_description_from_file(args['urdf'], args['xacro_args'])
    ns = args['namespace']
    out = [NodeAction(
        package='ros_dynamics',
        executable=LIFECYCLE_EXECUTABLE if managed else 'dynamics_node',
        name='dynamics', namespace=ns,
        parameters=[args['params_file'], {'robot_description': xml, 'floating_base': floating}],
        lifecycle=managed, autostart=autostart)]
    if managed and not autostart:
        out.append(LogAction(
            f"dynamics_node is managed: it waits for 'ros2 lifecycle set "
            f"{_fqn(ns, 'dynamics')} configure' then 'activate' (or use autostart:=true)"))
    if sim:
        out.append(NodeAction(package='ros_dynamics', executable='sim', name='sim',
                              namespace=ns, parameters=[{'robot_description': xml,
                                                         'floating_base': floating}]))
    if rviz:
        absent = [p for p in ('robot_state_publisher', 'rviz2') if not package_available(p)]
        if absent:
            out.append(LogAction(
                f"rviz:=true: {' and '.join(absent)} not installed, not started (Debian/Ubuntu: "
                f"apt-get install {' '.join(_apt_name(p) for p in absent)}"
                "); without RViz: python -m ros_dynamics.ros.viewer --urdf <file> (browser)"))
        else:
            fixed = 'world' if floating else root_link(xml)
            out.append(NodeAction(package='robot_state_publisher',
                                  executable='robot_state_publisher',
                                  name='robot_state_publisher', namespace=ns,
                                  parameters=[{'robot_description': xml}]))
            out.append(NodeAction(package='rviz2', executable='rviz2', name='rviz2', namespace=ns,
                                  arguments=['-d', os.path.join(share, RVIZ_CONFIG),
                                             '-f', fixed]))
    return out


def closed_loop_actions(args):
    """Actions of closed_loop.launch.py for the argument values ``args`` (CLOSED_LOOP_ARGS)."""
    missing = [n for n, _, _ in CLOSED_LOOP_ARGS if n not in args]
    if missing:
        raise LaunchArgumentError(f'missing launch arguments: {missing}')
    num = {n: parse_float(n, args[n]) for n in
           ('amplitude', 'frequency', 'bandwidth', 'real_time_factor', 'lockstep_timeout',
            'command_timeout', 'duration')}
    if not os.path.isfile(args['params_file']):
        raise LaunchArgumentError(f"params_file:={args['params_file']}: no such file")
    xml = robot_description_from_file(args['urdf'])
    sim = {'robot_description': xml, 'control': 'external', 'scenario': 'none',
           'real_time_factor': num['real_time_factor'],
           'lockstep_timeout': num['lockstep_timeout'],
           'command_timeout': num['command_timeout'], 'duration': num['duration'],
           'wait_for_subscribers': 2, 'publish_robot_description': False}
    ctl = {'law': args['law'], 'trajectory': args['trajectory'],
           'amplitude': [num['amplitude']], 'frequency': [num['frequency']],
           'bandwidth': num['bandwidth']}
    return [
        NodeAction(package='ros_dynamics', executable='dynamics_node', name='dynamics',
                   parameters=[args['params_file'], {'robot_description': xml}]),
        NodeAction(package='ros_dynamics', executable='tracking_controller',
                   name='tracking_controller', parameters=[ctl]),
        NodeAction(package='ros_dynamics', executable='sim', name='sim', parameters=[sim]),
    ]


def urdf_mass(xml):
    """The sum of the URDF's link masses [kg] (no model built)."""
    return sum(float(m.get('value', 0.0)) for m in ET.fromstring(xml).iter('mass'))


#: The dynamics node's settings in a trot with the plant in real time: a node behind keeps the
#: newest joint states (10), not a backlog; it publishes what the controller reads
#: (``~/dynamics``, ``~/task_space``, ``~/contact_forces``) and the rate-limited markers and
#: wrench, not the outputs of every observer update nobody reads there (``~/external_torque``,
#: ``~/contact_estimate``): the plant, the node and the controller share the cores.  Its
#: streams go out at the controller's rate (``publish_rate``: :func:`trot_rates`).
TROT_NODE = {'christoffel_stream': False, 'input_qos_depth': 10,
             'publish_external_torque': False, 'publish_contact_estimate': False}
#: the whole-body controller's rate in a trot [Hz] (quadruped-reactive-walking's)
TROT_RATE = 500.0


def trot_rates(rate=TROT_RATE):
    """The node's and the controller's parameters for a controller at ``rate`` Hz: the node
    publishes its streams at that rate (``publish_rate``: one state per period, the newest it
    has; every state is still taken into its observer), not for every joint state: half the
    messages the node sends and the controller takes at 500 Hz on 1 kHz joint states."""
    return {'publish_rate': float(rate)}, {'control_rate': float(rate)}


def trot_actions(args):
    """Actions of trot.launch.py for the argument values ``args`` (TROT_ARGS): MuJoCo's plant in
    real time (it never waits for a command), the dynamics node with the feet as task and
    contact frames, wbc_controller trotting on ``cmd_vel``."""
    from ..simulation.legged_robots import ROBOTS, robot_urdf
    missing = [n for n, _, _ in TROT_ARGS if n not in args]
    if missing:
        raise LaunchArgumentError(f'missing launch arguments: {missing}')
    if args['robot'] not in ROBOTS:
        raise LaunchArgumentError(f"robot:={args['robot']!r}: one of {sorted(ROBOTS)}")
    if args['sensing'] not in ('clean', 'noisy'):
        raise LaunchArgumentError(f"sensing:={args['sensing']!r}: clean or noisy")
    if not os.path.isfile(args['params_file']):
        raise LaunchArgumentError(f"params_file:={args['params_file']}: no such file")
    num = {n: parse_float(n, args[n]) for n in ('step_height', 'hidden_load', 'duration')}
    robot, (_, xml) = ROBOTS[args['robot']], robot_urdf(args['robot'])
    feet, weight = list(robot['feet']), 9.81 * urdf_mass(xml)
    estimate = parse_bool('contact_estimate', args['contact_estimate'])
    sim = {'robot_description': xml, 'feet': feet, 'foot_radius': robot['foot_radius'],
           'pose': [f'{j}={a}' for j, a in robot['pose'].items()], 'real_time_factor': 1.0,
           'max_delay': 0.0, 'command_delay': 0.0, 'hidden_load': num['hidden_load'],
           'duration': num['duration'], 'effort_limit': robot.get('actuator_torque', 0.0),
           **(NOISY_SENSING if args['sensing'] == 'noisy' else {})}
    node_rate, ctl_rate = trot_rates()
    dyn = {'robot_description': xml, 'floating_base': True, 'task_frames': feet,
           'contact_frames': feet, 'contact_force_threshold': 0.1 * weight, **TROT_NODE,
           **node_rate}
    ctl = {'robot_description': xml, 'gait': 'trot', 'feet': feet,
           'step_height': num['step_height'], **ctl_rate,
           **({'contact_forces_topic': 'dynamics/contact_forces'} if estimate else {})}
    return [
        NodeAction(package='ros_dynamics', executable='dynamics_node', name='dynamics',
                   parameters=[args['params_file'], dyn]),
        NodeAction(package='ros_dynamics', executable='wbc_controller', name='wbc_controller',
                   parameters=[ctl]),
        NodeAction(package='ros_dynamics', executable='sim_mujoco', name='sim',
                   parameters=[sim]),
    ]


def _apt_name(package):
    return 'ros-$ROS_DISTRO-' + package.replace('_', '-')


def _fqn(ns, name):
    ns = ns.strip('/')
    return f'/{ns}/{name}' if ns else f'/{name}'


def to_launch(actions):
    """The launch / launch_ros actions of the records (imported here, on use only)."""
    from launch.actions import LogInfo
    from launch_ros.actions import LifecycleNode, Node
    out = []
    for a in actions:
        if isinstance(a, LogAction):
            out.append(LogInfo(msg=a.message))
        elif a.lifecycle:   # launch_ros configures and activates it itself with autostart=True
            out.append(LifecycleNode(package=a.package, executable=a.executable, name=a.name,
                                     namespace=a.namespace, parameters=a.parameters,
                                     arguments=a.arguments, output='screen',
                                     autostart=a.autostart))
        else:
            out.append(Node(package=a.package, executable=a.executable, name=a.name,
                            namespace=a.namespace, parameters=a.parameters,
                            arguments=a.arguments, output='screen'))
    return out

