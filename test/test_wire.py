"""The node's per-cycle messages as serialized bytes (ros_dynamics.ros.dynamics_node.wire), checked against
the middleware's own serialization (rclpy.serialization, i.e. rmw_fastrtps) and against an
independent CDR writer in this file (struct, both byte orders):

* JointStateReader reads exactly what rclpy deserializes, over random messages (names of any
  length and script, empty and mismatched arrays, any stamp), including messages larger than
  its buffer; bytes in another encapsulation (big endian), truncated or random bytes give None
  (the node then leaves them to rclpy), never an exception or a wrong value;
* OdometryReader reads the pose, twist and stamp rclpy deserializes, and leaves other bytes;
* a Template written in place (stamp and arrays) deserializes to what was written, for the
  node's outputs; the node's engine publishes templates, not message objects.
"""
import random
import struct

import numpy as np
import pytest

pytestmark = pytest.mark.ros

from rclpy import serialization  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from ros_dynamics.estimation import cycle_kernel as ck  # noqa: E402
from ros_dynamics.ros.dynamics_node import wire  # noqa: E402


def cdr_joint_state(order, sec, nanosec, frame, names, arrays):
    """sensor_msgs/JointState in plain CDR, written here from the format's rules."""
    e = '<' if order == 'little' else '>'
    out = bytearray()

    def align(n):
        out.extend(b'\0' * (-len(out) % n))

    def u32(x):
        align(4)
        out.extend(struct.pack(e + 'I', x))

    def string(s):
        b = s.encode() + b'\0'
        u32(len(b))
        out.extend(b)

    out.extend(struct.pack(e + 'iI', sec, nanosec))
    string(frame)
    u32(len(names))
    for n in names:
        string(n)
    for a in arrays:
        u32(len(a))
        if len(a):
            align(8)
            out.extend(struct.pack(e + f'{len(a)}d', *a))
    return bytes([0, 1 if order == 'little' else 0, 0, 0]) + bytes(out)


def random_joint_state(rng):
    m = JointState()
    m.header.stamp.sec = rng.randint(-2**31, 2**31 - 1)
    m.header.stamp.nanosec = rng.randint(0, 2**32 - 1)
    m.header.frame_id = 'f' * rng.randint(0, 9)
    n = rng.randint(0, 9)
    m.name = [''.join(rng.choice('abz_é関') for _ in range(rng.randint(0, 9)))
              for _ in range(n)]
    for field in ('position', 'velocity', 'effort'):
        setattr(m, field, [rng.uniform(-1e3, 1e3) for _ in range(rng.choice((0, n, n + 1)))])
    return m


def assert_read(out, m):
    assert out is not None
    names, words, f = out
    p, v, e = (words[f[at]:f[at] + f[n]] for at, n in ((ck.M_POS, ck.M_N_POS),
                                                          (ck.M_VEL, ck.M_N_VEL),
                                                          (ck.M_EFF, ck.M_N_EFF)))
    sec, nanosec = f[ck.M_SEC], f[ck.M_NANOSEC]
    assert list(names) == list(m.name) and f[ck.M_NAMES] == len(m.name)
    for got, want in ((p, m.position), (v, m.velocity), (e, m.effort)):
        np.testing.assert_array_equal(got, np.asarray(want, dtype=float))
    assert (sec, nanosec) == (m.header.stamp.sec, m.header.stamp.nanosec)


def test_reader_reads_what_rclpy_serializes():
    rng = random.Random(7)
    reader = wire.JointStateReader(size=64)     # small: grows on the way
    for _ in range(1500):
        m = random_joint_state(rng)
        raw = serialization.serialize_message(m)
        names = reader.read(raw)[0]
        assert_read(reader.read(raw), m)     # the same names again: recognized by their bytes
        assert reader.read(raw)[0] is names
        # the format written independently: the same bytes up to the padding
        mine = cdr_joint_state('little', m.header.stamp.sec, m.header.stamp.nanosec,
                               m.header.frame_id, m.name, (m.position, m.velocity, m.effort))
        assert_read(reader.read(mine), m)
    big = JointState(name=[f'joint_{i}' for i in range(1000)])
    big.position = list(np.linspace(-1, 1, 1000))
    big.velocity = list(np.linspace(-2, 2, 1000))
    assert_read(reader.read(serialization.serialize_message(big)), big)


def test_reader_leaves_other_bytes_to_rclpy():
    reader = wire.JointStateReader()
    m = JointState(name=['a', 'bc'], position=[1.0, 2.0], velocity=[3.0, 4.0])
    m.header.stamp.sec = 5
    big_endian = cdr_joint_state('big', 5, 0, '', m.name, (m.position, m.velocity, []))
    assert reader.read(big_endian) is None
    assert_read(wire.JointStateReader().read(serialization.serialize_message(
        serialization.deserialize_message(big_endian, JointState))), m)   # rclpy reads it
    raw = serialization.serialize_message(m)
    for cut in range(len(raw) - 16):       # every truncation that loses a field
        out = reader.read(raw[:cut])
        assert out is None, cut
    rng = np.random.default_rng(3)
    for _ in range(2000):                  # random bytes after a valid header: no exception
        junk = bytes([0, 1, 0, 0]) + rng.integers(0, 256, rng.integers(0, 200),
                                                  dtype=np.uint8).tobytes()
        out = reader.read(junk)
        if out is not None:                # what it read lies inside the bytes
            assert sum(len(a) for a in out[1:4]) * 8 <= len(junk)
    huge = bytearray(raw)
    huge[4 + 16:4 + 20] = struct.pack('<I', 2**31)    # a name count of 2^31
    assert reader.read(bytes(huge)) is None


def test_odometry_reader_reads_what_rclpy_serializes():
    """Random odometry (frame names of every length around the alignments, any stamp, random
    covariances between the fields read): the pose, twist and stamp rclpy deserializes; the
    same message big endian, or cut anywhere before the end of the twist's covariance, is
    left to rclpy (None without it), as is a frame name length beyond the bytes."""
    from nav_msgs.msg import Odometry
    rng = random.Random(11)
    reader = wire.OdometryReader()
    for _ in range(800):
        m = Odometry()
        m.header.stamp.sec = rng.randint(-2**31, 2**31 - 1)
        m.header.stamp.nanosec = rng.randint(0, 2**32 - 1)
        m.header.frame_id = 'w' * rng.randint(0, 11)
        m.child_frame_id = 'b' * rng.randint(0, 11)
        p, o = m.pose.pose.position, m.pose.pose.orientation
        t = m.twist.twist
        p.x, p.y, p.z, o.x, o.y, o.z, o.w = (rng.uniform(-9, 9) for _ in range(7))
        (t.linear.x, t.linear.y, t.linear.z,
         t.angular.x, t.angular.y, t.angular.z) = (rng.uniform(-9, 9) for _ in range(6))
        m.pose.covariance = [rng.uniform(-1, 1) for _ in range(36)]
        m.twist.covariance = [rng.uniform(-1, 1) for _ in range(36)]
        pose, twist, sec, nanosec = reader.read(serialization.serialize_message(m))
        assert pose.tolist() == [p.x, p.y, p.z, o.x, o.y, o.z, o.w]
        assert twist.tolist() == [t.linear.x, t.linear.y, t.linear.z,
                                  t.angular.x, t.angular.y, t.angular.z]
        assert (sec, nanosec) == (m.header.stamp.sec, m.header.stamp.nanosec)
    raw = serialization.serialize_message(m)
    for cut in range(len(raw)):
        assert reader.read(raw[:cut]) is None, cut
    assert reader.read(bytes([0, 0]) + raw[2:]) is None          # big endian
    huge = bytearray(raw)
    huge[4 + 8:4 + 12] = struct.pack('<I', 2**31)                  # frame_id of 2^31 bytes
    assert reader.read(bytes(huge)) is None
    fallback = wire.OdometryReader(lambda b: serialization.deserialize_message(b, Odometry))
    got = fallback.read(raw)
    assert got[0].tolist() == [p.x, p.y, p.z, o.x, o.y, o.z, o.w]


@pytest.mark.parametrize('kind', ['Dynamics', 'Christoffel', 'JointState'])
def test_template_writes_the_message(kind):
    if kind == 'JointState':
        msg, names, sizes = JointState(), 'name', {'effort': 7}
    else:
        import ros_dynamics_msgs.msg as msgs
        msg = getattr(msgs, kind)()
        names = 'names'
        sizes = ({'position': 7, 'christoffel': 343} if kind == 'Christoffel' else
                 {'position': 7, 'velocity': 7, 'mass_matrix': 49, 'coriolis_matrix': 49,
                  'mass_matrix_dot': 49, 'gravity': 7})
    msg.header.frame_id = 'base_link'
    setattr(msg, names, [f'joint_{i}' for i in range(7)])
    for field, n in sizes.items():
        setattr(msg, field, [0.0] * n)
    t = wire.Template(msg, serialization.serialize_message)
    assert {k: a.size for k, a in t.arrays.items() if a.size} == sizes
    rng = np.random.default_rng(1)
    for sec, nanosec in ((1, 2), (-5, 999_999_999), (2**31 - 1, 0)):
        for a in t.arrays.values():
            a[:] = rng.normal(size=a.size)
        t.set_stamp(sec, nanosec)
        back = serialization.deserialize_message(t.bytes(), type(msg))
        assert (back.header.stamp.sec, back.header.stamp.nanosec) == (sec, nanosec)
        assert back.header.frame_id == 'base_link'
        assert list(getattr(back, names)) == [f'joint_{i}' for i in range(7)]
        for field, a in t.arrays.items():
            np.testing.assert_array_equal(np.asarray(getattr(back, field)), a)


def test_engine_publishes_serialized_messages():
    """The engine's per-cycle outputs (~/dynamics, ~/gravity_torque, ~/external_torque) are
    serialized bytes written in place; what the middleware reads back from them is the stamp,
    the frame, the arm's joint names (from the URDF, read here by urdf_parser_py) and the
    numbers written into the output's arrays."""
    import ros_dynamics as rd
    from ros_dynamics_msgs.msg import Dynamics
    from urdf_parser_py.urdf import URDF
    from ros_dynamics.ros.dynamics_node.engine import build_engine
    from ros_dynamics.ros.dynamics_node.parameters import defaults
    with open(rd.bundled_urdf('arm7')) as f:
        xml = f.read()
    urdf = URDF.from_xml_string(xml)
    joints, root = [j.name for j in urdf.joints if j.type != 'fixed'], urdf.get_root()
    eng = build_engine(xml, defaults())
    rng = np.random.default_rng(3)
    msgs = eng.messages.by_topic
    outputs = ((msgs['dynamics'], Dynamics, 'names', root),
               (msgs['gravity_torque'], JointState, 'name', ''),
               (msgs['external_torque'], JointState, 'name', ''))
    for out, kind, names, frame in outputs:
        for a in out.arrays.values():
            a[:] = rng.normal(size=a.size)
        raw = out.message((12, 345))
        assert isinstance(raw, bytes), type(raw)
        back = serialization.deserialize_message(raw, kind)
        assert (back.header.stamp.sec, back.header.stamp.nanosec) == (12, 345)
        assert back.header.frame_id == frame
        assert list(getattr(back, names)) == joints
        for field, a in out.arrays.items():
            np.testing.assert_array_equal(np.asarray(getattr(back, field)), a)
