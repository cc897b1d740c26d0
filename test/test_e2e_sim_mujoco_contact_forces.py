"""The foot forces live over loopback DDS, judged on MuJoCo's truth: ``sim_mujoco`` plays
Solo12 (example-robot-data's URDF, 2.5 kg, held standing by its PD) at 1 kHz, paced at half
real time, its joint states and the odometry of a legged state estimator (0.03 m/s white noise
on the linear twist, 10 ms late, 200 Hz) go over DDS to a running dynamics node, which answers
on ~/contact_forces as the samples arrive (no lock-step, no replay); a lateral push of 25 % of
the weight (6.13 N) for 1 s.  Every figure from the truth record the simulator writes (its
contact forces, its contact states, the push's generalized force), never from the estimate:
each foot within 3.1 % of the weight (rms, every sample, against MuJoCo's foot force through
the exact K/(s+K)), the contact state right in >= 99.9 %, the push in the unexplained part
within 15 % (the outside requirement: 5 %, 98 %, 15 %).  The delay from a joint state reaching the test to its answer reaching it is measured and
printed."""
import numpy as np
import pytest

from test_node_support import NodeProcess, running_node

pytestmark = pytest.mark.system

FEET = ['FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT']
GAIN = 50.0
PUSH_START, PUSH_LENGTH = 1.5, 1.0


def _ns(msg):
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


def test_solo12_foot_forces_over_dds_on_mujocos_truth(rclpy_context, ros_env, tmp_path):
    import time

    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from ros_dynamics_msgs.msg import ContactForces
    from sensor_msgs.msg import JointState

    from ros_dynamics.simulation.contact_force_runs import THRESHOLDS, lateral_push, weight
    from ros_dynamics.simulation.legged_metrics import observer_filtered
    from ros_dynamics.simulation.legged_robots import ROBOTS, robot_urdf
    import ros_dynamics as rd
    _, xml = robot_urdf('solo12')
    model = rd.load_urdf(xml, floating_base=True)
    w = float(weight(model))
    scale = w / float(weight(rd.load_urdf(rd.bundled_urdf("quadruped"), floating_base=True)))
    push = [float(x) for x in lateral_push('solo12')]
    truth_path = str(tmp_path / 'truth.npz')
    params = {'robot_description': xml, 'floating_base': True, 'contact_frames': FEET,
              'contact_force_threshold': THRESHOLDS[0] * scale,
              'contact_threshold': [THRESHOLDS[1] * scale], 'observer_gain': [GAIN],
              'log_throttle_sec': 0.0, 'publish_dynamics': False, 'input_qos_depth': 5000,
              'catch_up': False}      # (every sample judged: an answer to each)
    qos = QoSProfile(depth=10000, reliability=ReliabilityPolicy.RELIABLE)
    with running_node(rclpy_context, ros_env, str(tmp_path), 'live', params) as (proc, probe):
        got, arrived, answered_at = {}, {}, {}

        def on_forces(m):
            got[_ns(m)] = m
            answered_at[_ns(m)] = time.monotonic()
        sub = probe.node.create_subscription(
            ContactForces, f'{probe.prefix}/contact_forces', on_forces, qos)
        probe.node.create_subscription(JointState, '/live/joint_states', lambda m: (
            arrived.__setitem__(_ns(m), time.monotonic())), qos)
        assert probe.spin_until(lambda: sub.get_publisher_count() >= 1)
        sim = NodeProcess(ros_env, str(tmp_path), 'live', dict(
            robot_description=xml, feet=FEET, foot_radius=ROBOTS['solo12']['foot_radius'],
            pose=[f'{j}={a}' for j, a in ROBOTS['solo12']['pose'].items()], duration=3.0,
            real_time_factor=0.5, odom_rate=200.0, odom_delay=0.01, odom_noise_linear=0.03,
            base_push=[PUSH_START, PUSH_LENGTH, *push], wait_for_subscribers=2,
            wait_timeout=60.0, truth_record=truth_path, seed=3),
            node_name='sim', module='ros_dynamics.ros.simulation.mujoco_sim_node')
        try:
            assert probe.spin_until(lambda: not sim.alive(), timeout=120.0), sim.log()
            assert probe.spin_until(lambda: len(got) >= len(arrived) - 1, timeout=30.0)
        finally:
            assert sim.stop() == 0, sim.log()
    truth = np.load(truth_path)
    stamps = truth['stamp_ns']
    first = next(i for i, s in enumerate(stamps) if int(s) in arrived)
    stamps = stamps[first:]                    # the samples the node was sent
    answered = [i for i in range(1, len(stamps)) if int(stamps[i]) in got]
    assert len(answered) >= 0.99 * (len(stamps) - 1), (len(answered), len(stamps))
    dt = 1e-3
    # from zero where the node began
    ref = observer_filtered(truth['foot_forces'][first:], GAIN, dt)
    pref = observer_filtered(truth['push_generalized'][first:], GAIN, dt)
    idx = np.array(answered)
    msgs = [got[int(stamps[i])] for i in answered]
    est = np.array([[[f.force.x, f.force.y, f.force.z] for f in m.wrenches] for m in msgs])
    state = np.array([list(m.in_contact) for m in msgs])
    unexplained = np.array([m.unexplained for m in msgs])
    late = (stamps[idx] - stamps[0]) * 1e-9 >= 0.5
    rms = np.sqrt(((est - ref[idx]) ** 2).sum(axis=2)[late].mean(axis=0)) / w
    accuracy = (state[late] == truth['touching'][first:][idx][late]).mean()
    p = np.linalg.norm(pref[idx], axis=1)
    on = p > 0.9 * p.max()
    rel = np.linalg.norm(unexplained[on] - pref[idx][on], axis=1).mean() / p[on].mean()
    delay = np.array([answered_at[int(s)] - arrived[int(s)] for s in stamps[idx]
                      if int(s) in arrived]) * 1e3
    print(f'Solo12 over DDS: worst foot rms {100 * rms.max():.2f} % of the weight, contact '
          f'state {100 * accuracy:.2f} %, push {100 * rel:.2f} %; answer after the joint state '
          f'(wall, at the test) p50 {np.percentile(delay, 50):.2f} ms, p99 '
          f'{np.percentile(delay, 99):.2f} ms; {len(answered)} answers')
    # measured in three runs (2026-12-02, benchmarks/results/contact_forces_live.md):
    # 1.03 %, 100.00 %, 10.64 % each (the estimate does not depend on the arrival times);
    # answers p50 0.8-159 ms, p99 60-1092 ms after the joint state.  Bounds: 3x 1.03 %; the
    # state at most 3 samples of 2500 wrong (none measured); the requirement's 15 % (tighter
    # than 3x)
    assert rms.max() <= 0.031, rms
    assert accuracy >= 0.999
    assert rel <= 0.15, rel
