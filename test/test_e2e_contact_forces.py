"""The outside check of the contact frames, over loopback DDS: the quadruped in MuJoCo (an
independent engine) standing, shifting its weight, lifting a foot and pushed on the trunk,
its joint states and odometry (stamped at 1 kHz) sent to a running dynamics_node, paced by its
answers; every joint state answered on ~/contact_forces (>= 99 %), each foot's force within
1.7 % of the weight (rms, at every sample) of the engine's foot force through the exact
K/(s+K), the contact state right (against MuJoCo's contacts) in >= 99.3 % of the samples, the
push's generalized force in the unexplained part within 15 %."""
import numpy as np
import pytest

from test_node_support import QUADRUPED, read, running_node
from test_node_floating import odom

pytestmark = pytest.mark.system

from ros_dynamics.simulation.contact_force_runs import record  # noqa: E402
from ros_dynamics.simulation.legged_metrics import observer_filtered  # noqa: E402

FEET = ['LF_foot', 'RF_foot', 'LH_foot', 'RH_foot']
GAIN, THRESHOLD = 50.0, 8.0
T0 = 7_000_000_000_000
WINDOW = 20            # samples sent ahead of the answers


def _ns(msg):
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


def test_mujoco_quadruped_over_dds(rclpy_context, ros_env, tmp_path):
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from ros_dynamics_msgs.msg import ContactForces
    plant = record('mujoco')
    n = len(plant['t'])
    stamps = T0 + np.round(plant['t'] * 1e9).astype(np.int64)
    params = {'robot_description': read(QUADRUPED), 'floating_base': True,
              'contact_frames': FEET, 'contact_force_threshold': THRESHOLD,
              'observer_gain': [GAIN], 'log_throttle_sec': 0.0, 'publish_dynamics': False,
              'catch_up': False}       # (an answer per sample: WINDOW of them sent ahead)
    with running_node(rclpy_context, ros_env, str(tmp_path), 'out', params) as (proc, probe):
        got = {}
        sub = probe.node.create_subscription(
            ContactForces, f'{probe.prefix}/contact_forces', lambda m: got.__setitem__(_ns(m), m),
            QoSProfile(depth=10000, reliability=ReliabilityPolicy.RELIABLE))
        assert probe.spin_until(lambda: sub.get_publisher_count() >= 1
                                and probe.odom_pub.get_subscription_count() >= 1)
        names = list(plant['model'].joint_names)
        for k in range(n):
            q, v, tau, s = plant['q'][k], plant['v'][k], plant['tau'][k], int(stamps[k])
            o = odom(q[:3], q[3:7], v[:3], v[3:6])
            o.header.stamp.sec, o.header.stamp.nanosec = divmod(s, 1_000_000_000)
            probe.odom_pub.publish(o)
            probe.js_pub.publish(probe.joint_state(names, q[7:], v[6:], tau[6:], s))
            # paced by the answers: at most WINDOW samples in flight (no fixed rate: the
            # 2-core test machine is shared), a sample not answered within 2 s is given up
            if k > WINDOW:                      # (the first sample only starts the observer)
                probe.spin_until(lambda: int(stamps[k - WINDOW]) in got, timeout=2.0)
        probe.spin_until(lambda: len(got) >= n - 1, timeout=30.0)
    answered = [k for k in range(1, n) if int(stamps[k]) in got]   # the first starts the observer
    assert len(answered) >= 0.99 * (n - 1)
    ref = observer_filtered(plant['feet'], GAIN, plant['dt'])
    push = observer_filtered(plant['push'], GAIN, plant['dt'])
    est = np.array([[[w.force.x, w.force.y, w.force.z] for w in got[int(stamps[k])].wrenches]
                    for k in answered])
    state = np.array([list(got[int(stamps[k])].in_contact) for k in answered])
    unexplained = np.array([got[int(stamps[k])].unexplained for k in answered])
    idx = np.array(answered)
    late = plant['t'][idx] >= 0.5
    err = est - ref[idx]                # at every sample, also where the states disagree
    rms = np.sqrt((err[late] ** 2).sum(axis=2).mean(axis=0)) / plant['weight']
    # in-process on the same samples (test_contact_forces, benchmarks/results/contact_forces.md):
    # rms 0.56 % of the weight, the state right in 99.78 %; asserted at 3x.  The outside
    # requirement is 5 % and 98 %
    assert rms.max() <= 0.017, rms
    truth = plant['touching'][idx]      # MuJoCo's contacts, never the estimate's
    assert (state[late] == truth[late]).mean() >= 1 - 3 * 0.0022
    p = np.linalg.norm(push[idx], axis=1)
    on = p > 0.9 * p.max()
    rel = np.linalg.norm(unexplained[on] - push[idx][on], axis=1).mean() / p[on].mean()
    assert rel <= 0.15, rel
