"""ROS 2 bags of ``sensor_msgs/JointState`` without ROS: read and write with ``rosbags``.

``rosbags`` (pure Python) reads and writes rosbag2 folders in both storage formats, ``sqlite3``
and ``mcap``, with its own CDR (de)serializer and message type store, so calibration and
replay run on a machine without a ROS installation.

* :func:`read_joint_states` -> :class:`ros_dynamics.identification.samples.Samples`, columns
  in the model's joint order (matched by name per message), time = ``header.stamp`` (the
  bag's receive time when the stamps are zero) in seconds from the first one (``t0_ns``).
* :func:`write_joint_states` writes samples (e.g. from the simulator) as a bag.
* :func:`read_odometry` reads ``nav_msgs/Odometry`` (a floating base's pose and twist, the twist
  in the base frame as the node reads it); :func:`read_floating_base` joins it to the joint
  states (the base state interpolated at each joint-state stamp) as floating-base samples;
  :func:`write_floating_base` writes such samples as both topics.

Bad bags get a :class:`BagError` that names the problem: not a bag folder, missing topic (with
the topics present), wrong message type, no messages, no efforts or velocities, joints missing.
"""

import os
from pathlib import Path

import numpy as np

from .samples import Samples
from ..estimation.joint_input import JointNameMap

__all__ = ['BagError', 'read_joint_states', 'write_joint_states', 'bag_topics', 'STORAGES',
           'read_odometry', 'read_floating_base', 'write_floating_base']

JOINT_STATE = 'sensor_msgs/msg/JointState'
ODOMETRY = 'nav_msgs/msg/Odometry'
STORAGES = ('sqlite3', 'mcap')


class BagError(ValueError):
    """The bag cannot give joint-state samples (the message says why)."""


def _typestore():
    from rosbags.typesys import Stores, get_typestore
    return get_typestore(Stores.LATEST)


def _open(path):
    from rosbags.highlevel import AnyReader, AnyReaderError
    p = Path(path)
    if not p.exists():
        raise BagError(f'{path}: no such bag folder')
    if not p.is_dir() or not (p / 'metadata.yaml').exists():
        raise BagError(f'{path} is not a ROS 2 bag folder (a directory with metadata.yaml and '
                       'a .db3 or .mcap file)')
    try:
        reader = AnyReader([p], default_typestore=_typestore())
        reader.open()
    except (AnyReaderError, Exception) as exc:   # rosbags raises several reader errors
        raise BagError(f'{path}: cannot read the bag: {exc}') from None
    return reader


def _connections(reader, path, topic, msgtype):
    """The reader's connections of ``topic``, which must be there with type ``msgtype``."""
    topics = {name: info.msgtype for name, info in reader.topics.items()}
    if topic not in topics:
        present = ', '.join(f'{n} ({t})' for n, t in sorted(topics.items())) or 'none'
        raise BagError(f'{path}: no topic {topic!r} in the bag; topics present: {present}')
    if topics[topic] != msgtype:
        raise BagError(f'{path}: topic {topic!r} has type {topics[topic]}, not {msgtype}')
    return [c for c in reader.connections if c.topic == topic]


def bag_topics(path):
    """{topic: message type} of a bag."""
    reader = _open(path)
    try:
        return {name: info.msgtype for name, info in reader.topics.items()}
    finally:
        reader.close()


def read_joint_states(path, topic='/joint_states', joint_names=None):
    """Samples of the ``sensor_msgs/JointState`` messages on ``topic`` of the bag at ``path``.

    ``joint_names``: the model's joints (column order); every message must carry all of them
    with position, velocity and effort (extra names are ignored).  Default: the names of the
    first message.  The effort of a message is taken as the torque that acted during the
    period ending at its stamp (what the simulator and most drivers publish).
    """
    reader = _open(path)
    try:
        conns = _connections(reader, path, topic, JOINT_STATE)
        names = list(joint_names) if joint_names is not None else None
        maps = {}   # one name map per message layout
        t, t_rx, q, v, tau = [], [], [], [], []
        n_msgs = no_effort = no_velocity = not_finite = 0
        for conn, ts, raw in reader.messages(connections=conns):
            msg = reader.deserialize(raw, conn.msgtype)
            n_msgs += 1
            mnames = tuple(msg.name)
            if names is None:
                names = list(mnames)
            nmap = maps.get(mnames)
            if nmap is None:
                nmap = maps[mnames] = JointNameMap(mnames, names)
                if nmap.error:
                    raise BagError(f'{path}: {topic} message {n_msgs}: {nmap.error} of the model '
                                   f'(the message has {list(mnames)})')
            n = len(mnames)
            if len(msg.effort) != n:
                no_effort += 1
                continue
            if len(msg.velocity) != n or len(msg.position) != n:
                no_velocity += 1
                continue
            qk, vk, ek = np.empty(len(names)), np.empty(len(names)), np.empty(len(names))
            nmap.positions(np.asarray(msg.position, dtype=float), qk)
            nmap.rates(np.asarray(msg.velocity, dtype=float), vk)
            nmap.efforts(np.asarray(msg.effort, dtype=float), ek)
            if not (np.all(np.isfinite(qk)) and np.all(np.isfinite(vk))
                    and np.all(np.isfinite(ek))):
                not_finite += 1                  # a garbage row (e.g. while a driver starts)
                continue
            st = msg.header.stamp
            t.append(st.sec * 1_000_000_000 + st.nanosec)
            t_rx.append(ts)
            q.append(qk)
            v.append(vk)
            tau.append(ek)
    finally:
        reader.close()
    if n_msgs == 0:
        raise BagError(f'{path}: topic {topic!r} has no messages')
    if not t:
        what = 'efforts' if no_effort else 'velocities and positions'
        raise BagError(f'{path}: the {n_msgs} JointState messages on {topic!r} carry no {what} '
                       '(one per name is needed: the calibration uses the applied joint '
                       'torques)')
    dropped = no_effort + no_velocity + not_finite
    if dropped > 0.2 * n_msgs:
        raise BagError(f'{path}: {no_effort} of {n_msgs} messages on {topic!r} have no efforts, '
                       f'{no_velocity} no velocities/positions and {not_finite} non-finite '
                       'values (every message needs all three, finite)')
    notes = []
    if dropped:   # real recordings: a driver's first rows, a truncated last message
        notes.append(f'{dropped} of {n_msgs} messages skipped ({no_effort} without efforts, '
                     f'{no_velocity} without velocities or positions, {not_finite} with '
                     'non-finite values)')
    t = np.array(t, dtype=np.int64)
    if not np.any(t):
        t = np.array(t_rx, dtype=np.int64)
    order = np.argsort(t, kind='stable')
    t0 = int(t[order[0]])
    try:   # seconds from the first stamp, from integer nanoseconds (no float rounding of 1e9 s)
        return Samples((t[order] - t0) * 1e-9, np.array(q)[order], np.array(v)[order],
                       np.array(tau)[order], names, t0_ns=t0, notes=notes)
    except ValueError as exc:
        raise BagError(f'{path}: {exc}') from None


def write_joint_states(path, samples, topic='/joint_states', storage='sqlite3', names=None,
                       t0_ns=1_000_000_000_000, effort=True):
    """Write ``samples`` (:class:`Samples` or the simulator's ``run`` dict with ``t, q, v,
    tau``) as ``sensor_msgs/JointState`` on ``topic`` into a new bag folder ``path``.

    ``storage``: ``'sqlite3'`` or ``'mcap'``.  Stamps and bag times are ``t0_ns + t``.  Only the
    joint part of ``q``/``v``/``tau`` is written (the last ``len(names)`` entries).
    ``effort=False`` writes messages without efforts (to test the reader's error).
    """
    from rosbags.rosbag2 import StoragePlugin, Writer
    if storage not in STORAGES:
        raise ValueError(f'storage must be one of {STORAGES}, got {storage!r}')
    if isinstance(samples, dict):
        samples = Samples(samples['t'], samples['q'], samples['v'], samples['tau'],
                          names or [])
    names = list(names or samples.names)
    if not names:
        raise ValueError('joint names are needed (names=... or samples.names)')
    nj = len(names)
    ts = _typestore()
    JointState = ts.types[JOINT_STATE]
    Header = ts.types['std_msgs/msg/Header']
    Time = ts.types['builtin_interfaces/msg/Time']
    plugin = StoragePlugin.SQLITE3 if storage == 'sqlite3' else StoragePlugin.MCAP
    if os.path.exists(path):
        raise ValueError(f'{path} exists already (a bag is written into a new folder)')
    with Writer(path, version=9, storage_plugin=plugin) as writer:
        conn = writer.add_connection(topic, JOINT_STATE, typestore=ts)
        for k in range(len(samples)):
            ns = int(t0_ns + round(samples.t[k] * 1e9))
            msg = JointState(
                header=Header(stamp=Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000),
                              frame_id=''),
                name=names,
                position=np.ascontiguousarray(samples.q[k, -nj:], dtype=np.float64),
                velocity=np.ascontiguousarray(samples.v[k, -nj:], dtype=np.float64),
                effort=(np.ascontiguousarray(samples.tau[k, -nj:], dtype=np.float64) if effort
                        else np.zeros(0)))
            writer.write(conn, ns, ts.serialize_cdr(msg, JOINT_STATE))
    return path


def read_odometry(path, topic='/odom'):
    """(stamps (n,) int ns, pose (n, 7) ``[x y z qx qy qz qw]``, twist (n, 6) ``[linear,
    angular]``) of the ``nav_msgs/Odometry`` messages on ``topic``, sorted by stamp (the bag's
    receive time when the stamps are zero).  The twist is taken as the node takes it: in the
    base frame (``child_frame_id``), REP 105."""
    reader = _open(path)
    try:
        conns = _connections(reader, path, topic, ODOMETRY)
        t, t_rx, pose, twist = [], [], [], []
        for conn, ts, raw in reader.messages(connections=conns):
            m = reader.deserialize(raw, conn.msgtype)
            p, r, w = m.pose.pose.position, m.pose.pose.orientation, m.twist.twist
            row = np.array((p.x, p.y, p.z, r.x, r.y, r.z, r.w))
            tw = np.array((w.linear.x, w.linear.y, w.linear.z, w.angular.x, w.angular.y,
                           w.angular.z))
            if not (np.all(np.isfinite(row)) and np.all(np.isfinite(tw))
                    and np.linalg.norm(row[3:]) > 0.5):
                continue
            t.append(m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec)
            t_rx.append(ts)
            pose.append(row)
            twist.append(tw)
    finally:
        reader.close()
    if not t:
        raise BagError(f'{path}: topic {topic!r} has no usable Odometry messages')
    t = np.array(t, dtype=np.int64)
    if not np.any(t):
        t = np.array(t_rx, dtype=np.int64)
    order = np.argsort(t, kind='stable')
    pose = np.array(pose)[order]
    pose[:, 3:] /= np.linalg.norm(pose[:, 3:], axis=1, keepdims=True)
    return t[order], pose, np.array(twist)[order]


def read_floating_base(path, joint_names, topic='/joint_states', odom_topic='/odom',
                       max_gap=0.05):
    """Floating-base samples: the joint states of :func:`read_joint_states` with the base pose
    and twist of :func:`read_odometry` interpolated at each joint-state stamp (linear; the
    quaternion normalised after a sign-aligned linear interpolation), ``q = [x y z qx qy qz qw,
    joints]``, ``v = [base twist, joint rates]``, ``tau`` zero on the base rows.  Joint states
    outside the odometry's time span, or farther than ``max_gap`` s from an odometry message,
    are dropped (said in the samples' notes)."""
    js = read_joint_states(path, topic, joint_names)
    ts, pose, twist = read_odometry(path, odom_topic)
    tj = js.t0_ns + np.round(js.t * 1e9).astype(np.int64)
    i = np.searchsorted(ts, tj)
    inside = (i > 0) & (i < len(ts)) | (ts[np.clip(i, 0, len(ts) - 1)] == tj)
    i = np.clip(i, 1, len(ts) - 1)
    t0, t1 = ts[i - 1], ts[i]
    near = np.minimum(np.abs(tj - t0), np.abs(t1 - tj)) <= max_gap * 1e9
    ok = inside & near
    if not ok.any():
        raise BagError(f'{path}: no joint state on {topic!r} within the odometry on '
                       f'{odom_topic!r} (stamps of the two topics do not overlap)')
    i, t0, t1, tj = i[ok], t0[ok], t1[ok], tj[ok]
    s = np.clip((tj - t0) / np.maximum(t1 - t0, 1), 0.0, 1.0)[:, None]
    qa, qb = pose[i - 1, 3:], pose[i, 3:]
    qb = np.where(np.sum(qa * qb, axis=1, keepdims=True) < 0, -qb, qb)
    quat = (1 - s) * qa + s * qb
    quat /= np.linalg.norm(quat, axis=1, keepdims=True)
    near_q = np.where(s < 0.5, qa, pose[i, 3:])            # the nearer message's sign
    quat = np.where(np.sum(quat * near_q, axis=1, keepdims=True) < 0, -quat, quat)
    pos = (1 - s) * pose[i - 1, :3] + s * pose[i, :3]
    tw = (1 - s) * twist[i - 1] + s * twist[i]
    nj = len(js.names)
    q = np.hstack([pos, quat, js.q[ok]])
    v = np.hstack([tw, js.v[ok]])
    tau = np.hstack([np.zeros((int(ok.sum()), 6)), js.tau[ok]])
    notes = list(js.notes)
    if not ok.all():
        notes.append(f'{int((~ok).sum())} of {ok.size} joint states without odometry around '
                     f'their stamp (outside its span or > {max_gap:g} s away) dropped')
    t0_ns = int(tj[0])
    return Samples((tj - t0_ns) * 1e-9, q, v, tau, js.names[:nj], t0_ns=t0_ns, notes=notes)


def write_floating_base(path, samples, names, topic='/joint_states', odom_topic='/odom',
                        storage='sqlite3', t0_ns=1_000_000_000_000, frame_id='odom',
                        child_frame_id='base_link'):
    """Write floating-base samples (``q = [x y z qx qy qz qw, joints]``, ``v = [twist, joint
    rates]``; :class:`Samples` or a dict with ``t, q, v, tau``) into a new bag folder as joint
    states on ``topic`` and ``nav_msgs/Odometry`` on ``odom_topic`` (same stamps)."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    if isinstance(samples, dict):
        samples = Samples(samples['t'], samples['q'], samples['v'], samples['tau'], names)
    if os.path.exists(path):
        raise ValueError(f'{path} exists already (a bag is written into a new folder)')
    ts = _typestore()
    T = ts.types
    Header, Time = T['std_msgs/msg/Header'], T['builtin_interfaces/msg/Time']
    Point, Quat, Vec = (T['geometry_msgs/msg/Point'], T['geometry_msgs/msg/Quaternion'],
                        T['geometry_msgs/msg/Vector3'])
    cov = np.zeros(36)
    nj = len(names)
    plugin = StoragePlugin.SQLITE3 if storage == 'sqlite3' else StoragePlugin.MCAP
    with Writer(path, version=9, storage_plugin=plugin) as writer:
        cj = writer.add_connection(topic, JOINT_STATE, typestore=ts)
        co = writer.add_connection(odom_topic, ODOMETRY, typestore=ts)
        for k in range(len(samples)):
            ns = int(t0_ns + round(samples.t[k] * 1e9))
            head = lambda f: Header(stamp=Time(sec=ns // 1_000_000_000,  # noqa: E731
                                               nanosec=ns % 1_000_000_000), frame_id=f)
            q, v = samples.q[k], samples.v[k]
            odom = T[ODOMETRY](
                header=head(frame_id), child_frame_id=child_frame_id,
                pose=T['geometry_msgs/msg/PoseWithCovariance'](
                    pose=T['geometry_msgs/msg/Pose'](position=Point(x=q[0], y=q[1], z=q[2]),
                                                     orientation=Quat(x=q[3], y=q[4], z=q[5],
                                                                      w=q[6])), covariance=cov),
                twist=T['geometry_msgs/msg/TwistWithCovariance'](
                    twist=T['geometry_msgs/msg/Twist'](linear=Vec(x=v[0], y=v[1], z=v[2]),
                                                       angular=Vec(x=v[3], y=v[4], z=v[5])),
                    covariance=cov))
            writer.write(co, ns, ts.serialize_cdr(odom, ODOMETRY))
            js = T[JOINT_STATE](header=head(''), name=list(names),
                                position=np.ascontiguousarray(q[-nj:], dtype=np.float64),
                                velocity=np.ascontiguousarray(v[-nj:], dtype=np.float64),
                                effort=np.ascontiguousarray(samples.tau[k, -nj:], dtype=np.float64))
            writer.write(cj, ns, ts.serialize_cdr(js, JOINT_STATE))
    return path
