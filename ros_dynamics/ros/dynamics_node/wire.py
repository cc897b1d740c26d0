"""The node's per-cycle messages as the middleware carries them: serialized CDR bytes.

Per message, a Python node spends more in rclpy's conversion between C and Python message
objects than in anything it computes: for a 7-joint arm about 45 us to take a
``sensor_msgs/JointState`` as a Python object and about 25 us to publish a ``Dynamics`` object,
against about 2 us for the dynamics terms (docs/performance.md).  rclpy also takes and
publishes serialized messages (``create_subscription(..., raw=True)``, ``publish(bytes)``).
This module works on those bytes directly:

* :class:`JointStateReader` reads the stamp, the name list and the position, velocity and
  effort arrays of a serialized JointState in one compiled pass; the name list of a layout is
  decoded once and then recognized by its bytes; :func:`read_and_step` reads a message of the
  current layout and makes its cycle in the same compiled call
  (:func:`~ros_dynamics.estimation.cycle_kernel.cycle_step`'s sequence);
* :class:`OdometryReader` reads a floating base's pose, twist and stamp from a serialized
  nav_msgs/Odometry;
* :class:`Template` is one serialized output message of fixed size (the per-cycle outputs of
  one model: fixed names and array lengths), with numpy views onto its stamp and its float64
  arrays: a cycle writes its results there and publishes the bytes.

Format (OMG CDR as in DDS-XTypes 1.3, sec. 7.4.3, "XCDR1", little endian: what rmw_fastrtps
and rmw_cyclonedds send for ROS 2 messages): a 4-byte encapsulation header (0x00 0x01 = plain
CDR, little endian), then the fields in declaration order, each primitive aligned to its size
relative to the end of the header; a string is a uint32 length (with the terminating NUL) and
the bytes; a sequence is a uint32 count and the elements.  Only bytes in this format are
handled here: a template exists only when the middleware's own serialization of the message
is in it and walks to the expected length, and a received message in any other encapsulation
(or malformed) is left to rclpy's deserialization (:meth:`JointStateReader.read` returns
None).  Nothing here imports rclpy.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit, types

from ...core.jit import depends_on_core, entry, ready
from ...estimation import cycle_data, cycle_kernel, observer, rules
from ...estimation.cycle import message_words
from ...estimation.cycle_data import CYCLE_DATA, CYCLE_MODEL
from ...estimation.cycle_kernel import (M_EFF, M_NAMES, M_NANOSEC, M_POS, M_SEC, M_VEL,
                                       MESSAGE_FIELDS, counted, step)

depends_on_core(__file__, cycle_kernel.__file__, cycle_data.__file__, rules.__file__,
                observer.__file__)

HEADER = 4                       # encapsulation header bytes before the CDR payload
CDR_LE = (0x00, 0x01)            # its first two bytes for plain CDR, little endian

OK, FOREIGN, MALFORMED, TOO_LONG, SAME_NAMES = 0, 1, 2, 3, 4

#: a serialized sensor_msgs/JointState with every field empty (stamp 0)
EMPTY_JOINT_STATE = bytes(CDR_LE) + bytes(2 + 32)

# the layout of JointStateReader's ``fields`` (int64): the message fields of the compiled cycle
# (cycle_kernel.M_SEC ...: its stamp, number of names, where the position, velocity and effort
# arrays are, the receiving clock), then the byte range of the name sequence (its count
# included) in the payload
NAMES_START, NAMES_END = MESSAGE_FIELDS, MESSAGE_FIELDS + 1
#: what a JointStateReader reads into: the payload as float64 ``words`` and as bytes
#: (``payload``, the same buffer), the ``fields``, and the bytes of the name sequence of the
#: current layout (``names``: a message with these names is of the current layout)
Reading = namedtuple('Reading', ['words', 'payload', 'fields', 'names'])
READING = types.NamedTuple((types.float64[::1], types.uint8[::1], types.int64[::1],
                            types.uint8[::1]), Reading)
RAW = types.Bytes(types.uint8, 1, 'C', readonly=True)


@njit(cache=True, nogil=True)
def _u32(b, o):
    return np.int64(b[o]) | (np.int64(b[o + 1]) << 8) | (np.int64(b[o + 2]) << 16) | (
        np.int64(b[o + 3]) << 24)


@njit(cache=True, nogil=True)
def _scan_joint_state(src, payload, fields, names):
    """Copy the CDR payload of the serialized sensor_msgs/JointState ``src`` (bytes) into the
    8-byte-aligned ``payload`` (uint8 view of a float64 buffer) and fill ``fields``: the stamp,
    the byte range of the name sequence (its count included) and the float64 index and count
    of the position, velocity and effort sequences in ``payload``.  Returns OK, SAME_NAMES
    (OK, and the name sequence's bytes are ``names``), FOREIGN (not plain little-endian CDR),
    MALFORMED (a length runs past the end) or TOO_LONG (``payload`` is too small)."""
    n = len(src) - HEADER
    if n < 0 or src[0] != CDR_LE[0] or src[1] != CDR_LE[1]:
        return FOREIGN
    if n > payload.shape[0]:
        return TOO_LONG
    for i in range(n):
        payload[i] = src[HEADER + i]
    b = payload
    if n < 16:                                        # stamp and the frame_id length at least
        return MALFORMED
    fields[M_SEC] = _u32(b, 0) - ((_u32(b, 0) >> 31) << 32)       # int32
    fields[M_NANOSEC] = _u32(b, 4)
    o = 12 + _u32(b, 8)                               # header.frame_id
    o = (o + 3) & ~3
    if o + 4 > n:
        return MALFORMED
    count = _u32(b, o)
    fields[NAMES_START] = o
    fields[M_NAMES] = count
    o += 4
    for _ in range(count):                            # name: string[]
        o = (o + 3) & ~3
        if o + 4 > n:
            return MALFORMED
        o += 4 + _u32(b, o)
    if o > n:
        return MALFORMED
    fields[NAMES_END] = o
    for at in (M_POS, M_VEL, M_EFF):                  # position, velocity, effort: float64[]
        o = (o + 3) & ~3
        if o + 4 > n:
            return MALFORMED
        count = _u32(b, o)
        o += 4
        if count > 0:
            o = (o + 7) & ~7
        fields[at] = o >> 3                           # (its length next: M_N_POS ...)
        fields[at + 1] = count
        o += 8 * count
        if o > n:
            return MALFORMED
    start, end = fields[NAMES_START], fields[NAMES_END]
    if end - start != names.shape[0]:
        return OK
    for i in range(names.shape[0]):
        if b[start + i] != names[i]:
            return OK
    return SAME_NAMES


def f64(seq):
    """A float64 array of a message's array field (a view, no copy, of an array.array('d'))."""
    if len(seq) and getattr(seq, 'typecode', None) == 'd':
        return np.frombuffer(seq, dtype=np.float64)
    return np.asarray(seq, dtype=np.float64)


class JointStateReader:
    """Reads serialized sensor_msgs/JointState messages (see the module text).

    :meth:`read` returns ``(names, words, fields)``: ``names`` a tuple (the same object for
    every message of one layout), ``words`` (float64) and ``fields`` (int64) the message as the
    compiled cycle takes it (cycle_kernel.MESSAGE_FIELDS), buffers reused by the next call;
    :attr:`reading` is the same buffers, and the name bytes of the last layout read, for
    :func:`read_and_step`.  Bytes that are not plain little-endian CDR, or malformed, go to
    ``deserialize(raw)`` (rclpy's, returning a JointState; it raises if they are no
    JointState); without it ``read`` returns None for them."""

    def __init__(self, deserialize=None, size=4096):
        self._deserialize = deserialize
        self._fields = np.zeros(MESSAGE_FIELDS + 2, dtype=np.int64)
        self._names = {}              # bytes of a name sequence -> tuple of names
        self._last = (np.zeros(0, dtype=np.uint8), None)   # the last names: bytes, tuple
        self._allocate(size)

    def _allocate(self, size):
        """An aligned payload buffer of at least ``size`` bytes."""
        self._buffer = np.zeros((size + 7) // 8)
        self._payload = self._buffer.view(np.uint8)
        self.reading = Reading(self._buffer, self._payload, self._fields, self._last[0])

    @property
    def names(self):
        """The names of the last layout read (None: none)."""
        return self._last[1]

    def forget(self):
        """No layout is the current one: the next message's names are read and looked up."""
        self._last = (np.zeros(0, dtype=np.uint8), None)
        self.reading = self.reading._replace(names=self._last[0])

    def read(self, raw):
        # (the bytes themselves to the compiled scan: no array made of them)
        status = _scan_joint_state(raw, self._payload, self._fields, self._last[0])
        if status == SAME_NAMES:
            return self._last[1], self._buffer, self._fields
        if status == TOO_LONG:
            self._allocate(2 * len(raw))
            status = _scan_joint_state(raw, self._payload, self._fields, self._last[0])
        if status == FOREIGN or status == MALFORMED:
            if self._deserialize is None:
                return None
            msg = self._deserialize(raw)
            st = msg.header.stamp
            return (tuple(msg.name),) + message_words(
                f64(msg.position), f64(msg.velocity), f64(msg.effort), st.sec, st.nanosec,
                len(msg.name))
        if status == OK:           # names other than the last message's
            f = self._fields
            key = raw[HEADER + f[NAMES_START]:HEADER + f[NAMES_END]]
            names = self._names.get(key)
            if names is None:
                names = self._decode_names(key, int(f[M_NAMES]))
            self._last = (np.frombuffer(key, dtype=np.uint8).copy(), names)
            self.reading = self.reading._replace(names=self._last[0])
        return self._last[1], self._buffer, self._fields

    def _decode_names(self, key, count):
        names, o = [], 4
        for _ in range(count):
            o = (o + 3) & ~3
            length = int.from_bytes(key[o:o + 4], 'little')
            names.append(key[o + 4:o + 4 + length].rstrip(b'\0').decode('utf-8', 'replace'))
            o += 4 + length
        names = tuple(names)
        if len(self._names) >= 64:
            self._names.clear()
        self._names[key] = names
        return names


#: read_and_step's answers when it made no cycle: the message is not of the current layout
#: (or not plain CDR, or malformed): read it with JointStateReader.read, then step it
NOT_READ = -1


@entry(types.int64, CYCLE_MODEL, CYCLE_DATA, RAW, READING, cache=True)
def read_and_step(model, data, raw, reading):
    """One serialized JointState of the current layout (its name bytes ``reading.names``)
    read into ``reading`` and its cycle made (cycle_kernel.step, counted): one compiled call
    per message; returns the answer, or NOT_READ (then :meth:`JointStateReader.read` and
    ``JointStateCycle.step_message``).  ``reading.fields[M_NOW]``: the receiving clock, set
    before the call."""
    if _scan_joint_state(raw, reading.payload, reading.fields, reading.names) != SAME_NAMES:
        return NOT_READ
    return counted(data, step(model, data, reading.words, reading.fields))


def compile_reader():
    """The reader's kernels, loaded (or compiled once into the disk cache)."""
    reader = JointStateReader()
    reader.read(EMPTY_JOINT_STATE)
    cycle_kernel.compile_cycle()
    ready(read_and_step)


def stamp_ns(raw):
    """The ``header.stamp`` [ns] of a serialized message whose first field is its header
    (JointState, Odometry) in plain little-endian CDR; None for other bytes (judged when
    read)."""
    if len(raw) >= HEADER + 8 and raw[0] == CDR_LE[0] and raw[1] == CDR_LE[1]:
        return (int.from_bytes(raw[HEADER:HEADER + 4], 'little', signed=True) * 1_000_000_000
                + int.from_bytes(raw[HEADER + 4:HEADER + 8], 'little'))
    return None


class OdometryReader:
    """Reads serialized nav_msgs/Odometry messages (a floating base's state, once per cycle).

    :meth:`read` returns ``(pose, twist, sec, nanosec)``: the pose's position and orientation
    quaternion (x, y, z, w) as one float64 array (7,), the twist's linear then angular velocity
    (6,), both new arrays.  Layout after the header (stamp, frame_id): child_frame_id (a
    string), pose.pose (7 float64, 8-aligned), its covariance (36 float64), twist.twist (6
    float64), its covariance (36 float64).  Bytes that are not plain little-endian CDR, or
    malformed, go to ``deserialize(raw)`` (rclpy's, returning an Odometry; it raises if they are
    none); without it ``read`` returns None for them."""

    def __init__(self, deserialize=None):
        self._deserialize = deserialize

    def read(self, raw):
        n = len(raw) - HEADER
        o = None
        if n >= 16 and raw[0] == CDR_LE[0] and raw[1] == CDR_LE[1]:
            o = (12 + int.from_bytes(raw[HEADER + 8:HEADER + 12], 'little') + 3) & ~3
            if o + 4 <= n:                                       # child_frame_id
                o = (o + 4 + int.from_bytes(raw[HEADER + o:HEADER + o + 4], 'little') + 7) & ~7
            if o + 8 * (7 + 36 + 6 + 36) > n:
                o = None
        if o is None:
            if self._deserialize is None:
                return None
            msg = self._deserialize(raw)
            p, r, t = msg.pose.pose.position, msg.pose.pose.orientation, msg.twist.twist
            st = msg.header.stamp
            return (np.array((p.x, p.y, p.z, r.x, r.y, r.z, r.w)),
                    np.array((t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y,
                              t.angular.z)), st.sec, st.nanosec)
        pose = np.frombuffer(raw, np.float64, 7, HEADER + o).copy()
        twist = np.frombuffer(raw, np.float64, 6, HEADER + o + 8 * (7 + 36)).copy()
        return (pose, twist, int.from_bytes(raw[HEADER:HEADER + 4], 'little', signed=True),
                int.from_bytes(raw[HEADER + 4:HEADER + 8], 'little'))


# -- output templates -----------------------------------------------------------------------

_SIZE = {'boolean': 1, 'octet': 1, 'char': 1, 'uint8': 1, 'int8': 1, 'int16': 2, 'uint16': 2,
         'int32': 4, 'uint32': 4, 'int64': 8, 'uint64': 8, 'float': 4, 'double': 8}


def _align(o, size):
    return (o + size - 1) & ~(size - 1)


def _walk(msg, payload, o, prefix, arrays):
    """Offset after ``msg``'s fields serialized from payload offset ``o`` (lengths read from
    ``payload``); ``arrays[path] = (offset, count)`` for every float64 sequence."""
    for name, kind in msg.get_fields_and_field_types().items():
        value = getattr(msg, name)
        if kind in _SIZE:
            o = _align(o, _SIZE[kind]) + _SIZE[kind]
        elif kind == 'string':
            o = _align(o, 4)
            o += 4 + int.from_bytes(payload[o:o + 4], 'little')
        elif kind.startswith('sequence<') and ',' not in kind:
            inner = kind[len('sequence<'):-1]
            o = _align(o, 4)
            count = int.from_bytes(payload[o:o + 4], 'little')
            o += 4
            if inner in _SIZE:
                if count:
                    o = _align(o, _SIZE[inner])
                if inner == 'double':
                    arrays[prefix + name] = (o, count)
                o += _SIZE[inner] * count
            elif inner == 'string':
                for _ in range(count):
                    o = _align(o, 4)
                    o += 4 + int.from_bytes(payload[o:o + 4], 'little')
            else:
                for item in value:
                    o = _walk(item, payload, o, f'{prefix}{name}.', arrays)
        elif '/' in kind:                               # a nested message
            o = _walk(value, payload, o, f'{prefix}{name}.', arrays)
        else:
            raise ValueError(f'field {prefix}{name}: type {kind} not handled')
    return o


class Template:
    """One serialized message of fixed layout, written in place (see the module text).

    ``template = Template(msg, serialize)`` with ``msg`` filled with everything that does not
    change per cycle (frame_id, names, float64 arrays of their final length) and ``serialize``
    the middleware's serializer (``rclpy.serialization.serialize_message``).  ``stamp`` is an
    int32 view of header.stamp (sec, nanosec), ``arrays[field]`` a float64 view of each float64
    sequence, ``payload`` the whole payload as float64 words and ``offsets[field]`` where each
    sequence starts in it, ``serialized`` the whole message as a uint8 view; :meth:`bytes` the
    message to publish.  ValueError when the
    serialized message is not plain little-endian CDR or does not walk to its length (then
    publish ``msg`` itself)."""

    def __init__(self, msg, serialize):
        raw = serialize(msg)
        if tuple(raw[:2]) != CDR_LE:
            raise ValueError(f'serialized {type(msg).__name__} is not plain little-endian CDR '
                             f'(encapsulation {raw[:2].hex()})')
        arrays = {}
        end = _walk(msg, raw[HEADER:], 0, '', arrays)
        n = len(raw) - HEADER
        if not end <= n <= _align(end, 8) + 8:      # rmw_fastrtps sends 4-8 bytes of padding
            raise ValueError(f'serialized {type(msg).__name__} has {n} payload bytes, its '
                             f'fields {end}')
        # the payload at an 8-byte boundary: every float64 view is aligned
        self._size, self._layout = len(raw), arrays
        self.offsets = {k: o // 8 for k, (o, _) in arrays.items()}
        self._views(np.zeros(self.words))
        self.serialized[:] = np.frombuffer(raw, dtype=np.uint8)

    @property
    def words(self):
        """The float64 words the message takes: the encapsulation header in the first (its
        last four bytes), the payload from the second on."""
        return 1 + (self._size + 7) // 8

    def move_to(self, buffer):
        """Keep the message in ``buffer`` (float64, :attr:`words` long: e.g. a slice of one
        buffer that holds several messages), its content copied there; every view is then onto
        it."""
        buffer[:] = self._buffer
        self._views(buffer)

    def _views(self, buffer):
        self._buffer = buffer
        self.serialized = buffer.view(np.uint8)[8 - HEADER:8 - HEADER + self._size]
        self.payload = payload = buffer[1:]
        self.stamp = payload[:1].view(np.int32)
        self.arrays = {k: payload[o // 8:o // 8 + c] for k, (o, c) in self._layout.items()}

    def set_stamp(self, sec, nanosec):
        self.stamp[0], self.stamp[1] = sec, nanosec

    def bytes(self):
        return self.serialized.tobytes()


def stamped(template, msg, stamp):
    """What to publish for a per-cycle output stamped ``stamp`` ((sec, nanosec)): the
    serialized bytes of ``template`` (written in place), or, where the middleware's
    serialization is not plain CDR (``template`` None), the message object ``msg``."""
    if template is not None:
        template.set_stamp(*stamp)
        return template.bytes()
    st = msg.header.stamp
    st.sec, st.nanosec = stamp
    return msg
