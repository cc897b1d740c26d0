"""Recordings as real robots write them, calibrated with the default options: irregular stamps
(samples missing, an 8.8 ms gap), 6 % repeated samples, garbage rows at the start, a truncated
last message, 100 Hz; and a plant whose friction is not the observer's law (MuJoCo's
sticking dry friction) without sensor noise, where the residual at velocity reversals stands
far out of a near-zero noise level (a joint at rest holds any torque up to its breakaway:
left out of the fit and of the search for contact): none of that is contact, so none of it is
refused."""
import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics.identification import bags
from ros_dynamics.control.trajectories import SineTrajectory
from ros_dynamics.identification.calibration import calibrate
from ros_dynamics.simulation import home_pose
from ros_dynamics.simulation.mujoco_plant import MujocoPlant

pytestmark = pytest.mark.core

MODEL = rd.load_urdf(rd.bundled_urdf('arm7'))
LINK, MASS, COM = 'arm_link_7', 1.5, np.array([0.01, -0.02, 0.08])
FV = np.array([0.8, 0.8, 0.5, 0.5, 0.2, 0.2, 0.1])
FC = np.array([1.0, 1.0, 0.6, 0.6, 0.3, 0.3, 0.2])
EXCITE = SineTrajectory(home_pose(MODEL)[0], np.array([0.5, 0.4, 0.5, 0.4, 0.8, 0.6, 1.0]),
                        0.15 + 0.05 * np.arange(7))


@pytest.fixture(scope='module')
def run():
    truth = rd.attach_payload(MODEL, LINK, MASS, COM, np.diag([4e-3, 5e-3, 3e-3]))
    return MujocoPlant(truth, EXCITE, nominal=MODEL, damping=FV, frictionloss=FC).run(8.0)


def _write_messy_bag(path, out, rng):
    """A bag of JointState messages with what real files have (module docstring)."""
    from rosbags.rosbag2 import Writer
    from rosbags.typesys import Stores, get_typestore
    ts = get_typestore(Stores.LATEST)
    JS, Header, Time = (ts.types[k] for k in ('sensor_msgs/msg/JointState',
                                               'std_msgs/msg/Header',
                                               'builtin_interfaces/msg/Time'))
    T = len(out['t'])
    keep = rng.random(T) > 0.1                      # 10 % of the samples never arrive
    keep[4000:4008] = False                         # an 8.8 ms gap
    rows = np.flatnonzero(keep)
    rows = np.sort(np.concatenate([rows, rng.choice(rows, int(0.06 * rows.size))]))  # repeats
    names = list(MODEL.joint_names)
    with Writer(path, version=9) as writer:
        conn = writer.add_connection('/joint_states', 'sensor_msgs/msg/JointState', typestore=ts)

        def put(ns, q, v, e):
            msg = JS(header=Header(stamp=Time(sec=ns // 10**9, nanosec=ns % 10**9), frame_id=''),
                     name=names, position=np.asarray(q, float), velocity=np.asarray(v, float),
                     effort=np.asarray(e, float))
            writer.write(conn, ns, ts.serialize_cdr(msg, 'sensor_msgs/msg/JointState'))
        t0 = 10**12
        for k in range(5):                          # garbage while the driver starts
            put(t0 - (5 - k) * 10**6, np.full(7, np.nan), np.zeros(7), np.zeros(7))
        for k in rows:
            put(t0 + int(round(out['t'][k] * 1e9)), out['q'][k], out['v'][k], out['tau'][k])
        k = rows[-1]
        put(t0 + int(round(out['t'][k] * 1e9)) + 10**6, out['q'][k], out['v'][k],
            out['tau'][k][:3])                      # truncated last message


def test_messy_recording_is_read_and_calibrated_with_default_options(run, tmp_path):
    path = str(tmp_path / 'messy')
    _write_messy_bag(path, run, np.random.default_rng(4))
    s = bags.read_joint_states(path, joint_names=MODEL.joint_names)
    assert any('6 of' in n and 'skipped' in n for n in s.notes), s.notes
    cal = calibrate(MODEL, s, LINK)                 # default options: no refusal
    assert cal.payload_mass == pytest.approx(MASS, rel=0.02)
    assert np.linalg.norm(cal.payload_com - COM) < 3e-3
    assert any('repeated stamp' in n for n in cal.notes)
    assert any('joints at rest' in n for n in cal.notes)    # the reversals, left out


def test_100_hz_recording(run):
    from ros_dynamics.identification.samples import Samples
    k = slice(None, None, 10)
    cal = calibrate(MODEL, Samples(run['t'][k], run['q'][k], run['v'][k], run['tau'][k]), LINK)
    assert cal.payload_mass == pytest.approx(MASS, rel=0.05)
    np.testing.assert_allclose(cal.friction_coulomb, FC, rtol=0.35)
