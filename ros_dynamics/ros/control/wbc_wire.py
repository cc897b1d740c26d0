"""The whole-body controller's inputs as the middleware carries them: serialized CDR bytes, read
into numpy without building rclpy's message objects (no rclpy import).

rclpy's deserialization builds a Python object per nested message (a TaskSpace's poses, a
ContactForces' wrenches): for the stream of a 12-joint quadruped it costs more than the arrays
it yields are worth to the controller.  The controller's subscriptions keep the messages
serialized (``raw=True``) and read here, for the pairs it answers only, the fields it uses:
float64 sequences as numpy views of the bytes, the name lists decoded once per layout.

Format (OMG CDR, "XCDR1", little endian: what rmw_fastrtps and rmw_cyclonedds send; the
dynamics node's ros/dynamics_node/wire.py reads its joint states the same way): a 4-byte
encapsulation header (``0x00 0x01``), then the fields in declaration order, each primitive
aligned to its size from the end of the header; a string is a uint32 length (with its NUL) and
the bytes; a sequence a uint32 count and the elements; a nested message its fields in place.
Bytes in another encapsulation, or that do not walk to their end, are left to rclpy
(:func:`read` returns None).
"""
import struct
from collections import namedtuple

import numpy as np

__all__ = ['DynamicsArrays', 'TaskSpaceArrays', 'ContactArrays', 'read']

HEADER = 4                                  # the encapsulation header before the payload
CDR_LE = (0x00, 0x01)

#: the Dynamics message's fields the controller uses (the names of the message's fields)
DynamicsArrays = namedtuple('DynamicsArrays', 'names position velocity mass_matrix '
                            'coriolis_matrix gravity')
#: a TaskSpace's fields, the poses' origins as positions (k, 3)
TaskSpaceArrays = namedtuple('TaskSpaceArrays', 'names frames positions jacobians '
                             'jacobian_dot_v mass com com_velocity centroidal_matrix '
                             'centroidal_bias')
#: a ContactForces' frames, in_contact (k,) and the forces of its wrenches (k, 3)
ContactArrays = namedtuple('ContactArrays', 'frames in_contact forces')


class _Cdr:
    """A walk through one little-endian CDR buffer; names decoded once per byte pattern."""

    _names = {}                             # bytes of a string sequence -> its list

    def __init__(self, data):
        self.b, self.o = memoryview(data), HEADER

    def _align(self, n):
        self.o += -(self.o - HEADER) % n

    def u32(self):
        self._align(4)
        (x,) = struct.unpack_from('<I', self.b, self.o)
        self.o += 4
        return x

    def string(self):
        n = self.u32()
        self.o += n
        return bytes(self.b[self.o - n:self.o - 1]).decode()

    def strings(self):
        start = self.o
        for _ in range(self.u32()):
            self.o += -(self.o - HEADER) % 4
            self.o += 4 + struct.unpack_from('<I', self.b, self.o)[0]
        key = bytes(self.b[start:self.o])
        names = self._names.get(key)
        if names is None:
            self.o = start
            names = self._names[key] = [self.string() for _ in range(self.u32())]
            if len(self._names) > 64:
                self._names.clear()
        return names

    def f64(self, count=None):
        """``count`` float64 in place (a sequence's count first when None)."""
        n = self.u32() if count is None else count
        self._align(8)
        a = np.frombuffer(self.b, '<f8', n, self.o)
        self.o += 8 * n
        return a

    def skip_header(self):
        self.o += 8                         # stamp: int32 sec, uint32 nanosec
        self.string()                       # frame_id

    def end(self):
        if self.o > len(self.b):
            raise ValueError('past its end')
        return self


def _dynamics(c):
    c.skip_header()
    names = c.strings()
    pos, vel, M, C = c.f64(), c.f64(), c.f64(), c.f64()
    c.f64()                                 # mass_matrix_dot: not used
    return DynamicsArrays(names, pos, vel, M, C, c.f64())


def _task_space(c):
    c.skip_header()
    names, frames = c.strings(), c.strings()
    k = c.u32()
    poses = c.f64(7 * k).reshape(k, 7)      # Pose: Point (3), Quaternion (4)
    J, Jdv = c.f64(), c.f64()
    mass = float(c.f64(1)[0])
    com, com_velocity = c.f64(3), c.f64(3)
    return TaskSpaceArrays(names, frames, poses[:, :3], J, Jdv, mass, com, com_velocity,
                           c.f64(), c.f64())


def _contact_forces(c):
    c.skip_header()
    frames = c.strings()
    k = c.u32()
    in_contact = np.frombuffer(c.b, np.uint8, k, c.o).astype(bool)
    c.o += k
    n = c.u32()
    wrenches = c.f64(6 * n).reshape(n, 6)   # Wrench: force (3), torque (3)
    c.f64()                                  # unexplained: not used
    return ContactArrays(frames, in_contact, wrenches[:, :3])


_READERS = {'Dynamics': _dynamics, 'TaskSpace': _task_space, 'ContactForces': _contact_forces}


def read(kind, data):
    """The arrays of a serialized ``kind`` message ('Dynamics', 'TaskSpace', 'ContactForces'),
    or None when the bytes are not little-endian CDR or do not walk to their length (rclpy's
    deserialization is then the way)."""
    if len(data) < HEADER or tuple(data[:2]) != CDR_LE:
        return None
    try:
        c = _Cdr(data)
        out = _READERS[kind](c)
        c.end()
    except (struct.error, ValueError, UnicodeDecodeError):
        return None
    return out
