"""The node's contact state live over loopback DDS on a trotting robot, judged on MuJoCo's
truth: ``sim_mujoco`` plays Solo12 (example-robot-data's URDF, 2.5 kg) at 1 kHz, its joint
states and the odometry of a legged state estimator (0.03 m/s white noise on the linear twist,
10 ms late, 200 Hz) go over DDS to a running dynamics node (the four feet as contact frames,
the threshold 20 % of a foot's share of the weight in a trot); a controller that is not the
project's, in this test process, trots the robot in place (simulation/scripted_trot.py: a
joint-space PD trot on the joint states, 0.4 s period) by ``sim_mujoco``'s effort command,
each command acting 1 ms after the state it answers (the plant waits for it: ``max_delay``;
the PD of the light legs is not stable with a few ms more).  From the truth record the
simulator writes (its contact states and foot positions), never from the estimate: while
trotting, the node's per-foot
``in_contact`` agrees with MuJoCo's in >= 95 % of the samples, touch-down is seen a median
<= 10 ms (p90 <= 25 ms) and lift-off a median within 15 ms of MuJoCo's, and no touch-down is
reported while a foot is 1 cm or more above the floor (the issue's outside check)."""
import numpy as np
import pytest

from test_node_support import NodeProcess, running_node

pytestmark = pytest.mark.system

PERIOD, START, RAMP, DURATION = 0.4, 0.5, 1.0, 4.0


def _ns(msg):
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


def test_trotting_solo12_contact_state_over_dds(rclpy_context, ros_env, tmp_path):
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from ros_dynamics_msgs.msg import ContactForces
    from sensor_msgs.msg import JointState

    import ros_dynamics as rd
    from ros_dynamics.simulation.contact_force_runs import (FLICKER, TROT_THRESHOLD,
                                                            state_metrics, weight)
    from ros_dynamics.simulation.legged_robots import ROBOTS, robot_urdf, stance_pose
    from ros_dynamics.simulation.mujoco_legged import LeggedPlantOptions, MujocoLegged
    from ros_dynamics.simulation.scripted_trot import JointTrot, ScriptedTrot
    _, xml = robot_urdf('solo12')
    model = rd.load_urdf(xml, floating_base=True)
    robot = ROBOTS['solo12']
    feet = list(robot['feet'])
    pose = stance_pose('solo12', model.joint_names, 0.15)
    # the controller: its own MuJoCo model of the robot for its gains (never stepped)
    ctrl = ScriptedTrot(MujocoLegged(xml, feet, model.joint_names, pose,
                                     options=LeggedPlantOptions(foot_radius=robot['foot_radius'])),
                        JointTrot(model.joint_names, [pose[j] for j in model.joint_names],
                                  PERIOD, 0.4, start=START, ramp=RAMP))
    threshold = TROT_THRESHOLD * 0.5 * float(weight(model))
    truth_path = str(tmp_path / 'truth.npz')
    params = {'robot_description': xml, 'floating_base': True, 'contact_frames': feet,
              'contact_force_threshold': threshold, 'observer_gain': [50.0],
              'log_throttle_sec': 0.0, 'publish_dynamics': False, 'input_qos_depth': 5000,
              'catch_up': False}      # (every sample judged: an answer to each)
    qos = QoSProfile(depth=10000, reliability=ReliabilityPolicy.RELIABLE)
    with running_node(rclpy_context, ros_env, str(tmp_path), 'live', params) as (proc, probe):
        got, first = {}, []
        sub = probe.node.create_subscription(
            ContactForces, f'{probe.prefix}/contact_forces', lambda m: got.__setitem__(_ns(m), m),
            qos)
        cmd = probe.node.create_publisher(JointState, '/live/sim/effort_command', qos)

        names = list(model.joint_names)

        def on_state(m):                       # the trot on the joint states, stamped alike
            first[:1] = first[:1] or [_ns(m)]
            order = [list(m.name).index(n) for n in names]
            tau = ctrl.torques((_ns(m) - first[0]) * 1e-9, np.array(m.position)[order],
                               np.array(m.velocity)[order])
            cmd.publish(JointState(header=m.header, name=names,
                                   effort=[float(x) for x in tau]))
        probe.node.create_subscription(JointState, '/live/joint_states', on_state, qos)
        assert probe.spin_until(lambda: sub.get_publisher_count() >= 1)
        sim = NodeProcess(ros_env, str(tmp_path), 'live', dict(
            robot_description=xml, feet=feet, foot_radius=robot['foot_radius'],
            pose=[f'{j}={a}' for j, a in pose.items()], duration=DURATION,
            real_time_factor=0.5, odom_rate=200.0, odom_delay=0.01, odom_noise_linear=0.03,
            command_delay=0.001, max_delay=0.001, command_wait=5.0, wait_for_subscribers=2,
            wait_timeout=60.0,
            truth_record=truth_path, seed=3),
            node_name='sim', module='ros_dynamics.ros.simulation.mujoco_sim_node')
        try:
            assert probe.spin_until(lambda: not sim.alive(), timeout=300.0), sim.log()
            stamps = np.load(truth_path)['stamp_ns']
            assert probe.spin_until(lambda: len(got) >= len(stamps) - 20, timeout=60.0)
        finally:
            assert sim.stop() == 0, sim.log()
    truth = np.load(truth_path)
    stamps = truth['stamp_ns']
    idx = np.array([i for i, s in enumerate(stamps) if int(s) in got])
    assert len(idx) >= 0.99 * len(stamps), (len(idx), len(stamps))
    t = (stamps[idx] - first[0]) * 1e-9
    out = dict(t=t, dt=1e-3, touching=truth['touching'][idx],
               in_contact=np.array([list(got[int(stamps[i])].in_contact) for i in idx]),
               height=truth['feet'][idx][:, :, 2] - robot['foot_radius'],
               phase=np.where(t >= START + RAMP, 'trot', 'stand'))
    m = state_metrics(out)
    td, lo = m['touchdown_delay'], m['liftoff_delay']
    print(f'Solo12 trotting over DDS: contact state {100 * m["state_accuracy"]:.2f} %, '
          f'touch-down median {1e3 * np.median(td):.0f} ms p90 '
          f'{1e3 * np.percentile(td, 90):.0f} ms, lift-off median {1e3 * np.median(lo):.0f} ms '
          f'p90 |.| {1e3 * np.percentile(np.abs(lo), 90):.0f} ms, false touch-downs '
          f'{m["false_touchdowns"]} (highest foot {1e3 * m["highest_touchdown"]:.1f} mm), '
          f'{m["touchdowns"]} touch-downs against MuJoCo\'s {m["true_touchdowns"]} (flicker up '
          f'to {1e3 * FLICKER:.0f} ms not counted), {len(idx)} answers')
    assert m['true_touchdowns'] >= 4 * 4                 # it trotted: every foot, 2.5 s
    assert m['state_accuracy'] >= 0.95
    assert np.median(td) <= 0.010 and np.percentile(td, 90) <= 0.025
    assert abs(np.median(lo)) <= 0.015
    assert m['false_touchdowns'] == 0
