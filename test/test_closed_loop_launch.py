"""launch/closed_loop.launch.py: its decisions (launch/launch_logic.closed_loop_actions, plain
Python) tested directly: three nodes, the simulator in external mode, one URDF for simulator and
dynamics node, the controller's parameters are names the controller declares, numeric
arguments checked. With launch / launch_ros importable the launch file also runs through the
real launch API (skipped otherwise). Not proven here: that `ros2 launch` starts and connects
the three processes (test_e2e_closed_loop.py runs the loop itself, without launch)."""
import os

import pytest

from test_launch import REPO_ROOT, L, _run_launch_file

pytestmark = pytest.mark.core

LAUNCH = os.path.join(REPO_ROOT, 'launch', 'closed_loop.launch.py')


def _plan(**overrides):
    args = L.defaults(L.CLOSED_LOOP_ARGS, REPO_ROOT)
    args.update(overrides)
    return {a.name: a for a in L.closed_loop_actions(args)}


def test_closed_loop_nodes_and_parameters():
    from ros_dynamics.ros.simulation.sim_node import PARAMETERS as SIM
    from ros_dynamics.ros.control.tracking_controller import PARAMETERS
    nodes = _plan(law='computed_torque', lockstep_timeout='0')
    assert set(nodes) == {'sim', 'dynamics', 'tracking_controller'}
    assert {n.executable for n in nodes.values()} == {'sim', 'dynamics_node', 'tracking_controller'}
    with open(os.path.join(REPO_ROOT, 'urdf', 'arm7.urdf')) as f:
        xml = f.read()
    (sim,) = nodes['sim'].parameters
    assert sim['control'] == 'external' and sim['robot_description'] == xml
    assert sim['lockstep_timeout'] == 0.0 and sim['real_time_factor'] == 1.0
    params_file, overrides = nodes['dynamics'].parameters
    assert os.path.isfile(params_file) and overrides == {'robot_description': xml}
    (ctl,) = nodes['tracking_controller'].parameters
    assert ctl['law'] == 'computed_torque' and ctl['amplitude'] == [0.4]
    assert set(ctl) <= {p.name for p in PARAMETERS}
    # and the values the launch file gives pass the controller's and the simulator's rules
    PARAMETERS.validate({**{p.name: p.default for p in PARAMETERS}, **ctl})
    assert set(sim) <= {p.name for p in SIM}
    SIM.validate({**{p.name: p.default for p in SIM}, **sim})


def test_closed_loop_bad_arguments():
    with pytest.raises(L.LaunchArgumentError, match=r"frequency:='fast': expected a number"):
        _plan(frequency='fast')
    with pytest.raises(L.LaunchArgumentError, match='no such file'):
        _plan(urdf='/nonexistent.urdf')


def test_closed_loop_real_launch_api():
    pytest.importorskip('launch_ros', reason='launch / launch_ros not installed (no PyPI wheels)')
    from launch_ros.actions import Node
    declared, actions = _run_launch_file(LAUNCH, {'law': 'pd_gravity'})
    assert declared == {n for n, _, _ in L.CLOSED_LOOP_ARGS}
    assert all(type(a) is Node for a in actions)
    assert sorted(a.node_executable for a in actions) == ['dynamics_node', 'sim',
                                                          'tracking_controller']


TROT = os.path.join(REPO_ROOT, 'launch', 'trot.launch.py')


def _trot(**overrides):
    args = L.defaults(L.TROT_ARGS, REPO_ROOT)
    args.update(overrides)
    return {a.name: a for a in L.trot_actions(args)}


@pytest.mark.parametrize('robot', ['solo12', 'quadruped'])
def test_trot_nodes_and_parameters(robot):
    """trot.launch.py: MuJoCo's plant in real time (never waiting), the dynamics node with the
    feet as task and contact frames (its contact threshold 20 % of a foot's trot share of the
    URDF's weight), wbc_controller trotting with touch-downs from the node; every parameter one
    the node declares and within its rules."""
    from ros_dynamics.ros.control.wbc_node import PARAMETERS as CTL
    from ros_dynamics.ros.dynamics_node.parameters import TABLE as DYN
    from ros_dynamics.ros.simulation.mujoco_sim_node import PARAMETERS as SIM
    from ros_dynamics.simulation.legged_robots import ROBOTS, robot_urdf
    import ros_dynamics as rd
    nodes = _trot(robot=robot, hidden_load='1.0', sensing='noisy')
    assert {n.executable for n in nodes.values()} == {'sim_mujoco', 'dynamics_node',
                                                      'wbc_controller'}
    path, xml = robot_urdf(robot)
    feet = ROBOTS[robot]['feet']
    (sim,) = nodes['sim'].parameters
    assert sim['robot_description'] == xml and sim['max_delay'] == 0.0
    assert sim['real_time_factor'] == 1.0 and sim['hidden_load'] == 1.0
    assert sim['odom_delay'] == 0.01 and sim['odom_noise_linear'] == 0.03
    params_file, dyn = nodes['dynamics'].parameters
    assert os.path.isfile(params_file) and dyn['task_frames'] == dyn['contact_frames'] == feet
    mass = rd.load_urdf(path, floating_base=True).total_mass()     # the model's, independently
    assert abs(dyn['contact_force_threshold'] - 0.2 * 9.81 * mass / 2) < 1e-6 * mass
    (ctl,) = nodes['wbc_controller'].parameters
    assert ctl['gait'] == 'trot' and ctl['feet'] == feet
    assert ctl['contact_forces_topic'] == 'dynamics/contact_forces'
    for table, given in ((SIM, sim), (DYN, dyn), (CTL, ctl)):
        assert set(given) <= {p.name for p in table}
        table.validate({**{p.name: p.default for p in table}, **given})
    assert 'contact_forces_topic' not in _trot(contact_estimate='false')['wbc_controller'] \
        .parameters[0]


def test_trot_bad_arguments():
    with pytest.raises(L.LaunchArgumentError, match="robot:='anymal'"):
        _trot(robot='anymal')
    with pytest.raises(L.LaunchArgumentError, match='sensing'):
        _trot(sensing='perfect')
    with pytest.raises(L.LaunchArgumentError, match="hidden_load:='heavy': expected a number"):
        _trot(hidden_load='heavy')


def test_trot_real_launch_api():
    pytest.importorskip('launch_ros', reason='launch / launch_ros not installed (no PyPI wheels)')
    declared, actions = _run_launch_file(TROT, {'robot': 'quadruped'})
    assert declared == {n for n, _, _ in L.TROT_ARGS}
    assert sorted(a.node_executable for a in actions) == ['dynamics_node', 'sim_mujoco',
                                                          'wbc_controller']
