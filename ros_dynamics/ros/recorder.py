"""``calibrate record``: joint states into a ROS 2 bag with rclpy + rosbags (no rosbag2).

Subscribes to ``sensor_msgs/JointState`` on ``topic`` (reliable, depth 1000) and writes every
message as received, still CDR-serialized (a raw subscription: no deserialization), with the
receive time as the bag time; the message stamps are kept inside the messages, which is what
:func:`ros_dynamics.identification.bags.read_joint_states` uses.  Ends on SIGINT/SIGTERM, after ``duration``
seconds or after ``count`` messages, then closes the bag (metadata written).

Run as ``calibrate record BAG ...`` (which runs ``python -m ros_dynamics.ros.recorder BAG ...``).
"""

import argparse
import os
import sys
import time

from ros_dynamics.ros import compat

if __name__ == '__main__':
    compat.reexec_if_needed()          # the pip ROS wheels need their library path, before rclpy

from rclpy.node import Node  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

from ros_dynamics.identification.bags import JOINT_STATE, STORAGES
from ros_dynamics.ros import process


class JointStateRecorder(Node):
    """Writes the joint states of ``topic`` into a new bag folder ``path``."""

    def __init__(self, path, topic='/joint_states', storage='sqlite3', duration=0.0, count=0):
        super().__init__('joint_state_recorder')
        from rosbags.rosbag2 import StoragePlugin, Writer
        from rosbags.typesys import Stores, get_typestore
        if storage not in STORAGES:
            raise ValueError(f'storage must be one of {STORAGES}')
        plugin = StoragePlugin.SQLITE3 if storage == 'sqlite3' else StoragePlugin.MCAP
        self.writer = Writer(path, version=9, storage_plugin=plugin)
        self.writer.open()
        self.conn = self.writer.add_connection(topic, JOINT_STATE,
                                               typestore=get_typestore(Stores.LATEST))
        self.path, self.topic = path, topic
        self.count, self.limit = 0, int(count)
        self.deadline = time.monotonic() + duration if duration > 0 else None
        self.create_subscription(JointState, topic, self._on_message,
                                 QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE),
                                 raw=True)
        self.get_logger().info(f'recording {self.resolve_topic_name(topic)} into {path}')

    def _on_message(self, raw):
        if self.limit and self.count >= self.limit:
            return
        self.writer.write(self.conn, self.get_clock().now().nanoseconds, raw)
        self.count += 1

    def keep_going(self):
        if self.limit and self.count >= self.limit:
            return False
        return self.deadline is None or time.monotonic() < self.deadline

    def close(self):
        self.writer.close()
        self.get_logger().info(f'wrote {self.count} joint states to {self.path}')


def record(path, topic='/joint_states', duration=0.0, storage='sqlite3', count=0, args=None):
    """Record until a signal, ``duration`` s or ``count`` messages; exit status 0."""
    return process.run(lambda: JointStateRecorder(path, topic, storage, duration, count), args,
                       keep_going=lambda node: node.keep_going(),
                       on_stop=lambda node: node.close())


def main(argv=None):
    ap = argparse.ArgumentParser(prog='calibrate record', description='Record joint states into '
                                 'a ROS 2 bag (rclpy + rosbags, no rosbag2); Ctrl-C ends it.')
    ap.add_argument('bag', help='new bag folder')
    ap.add_argument('--topic', default='/joint_states')
    ap.add_argument('--duration', type=float, default=0.0, help='seconds (0: until Ctrl-C)')
    ap.add_argument('--count', type=int, default=0, help='messages (0: no limit)')
    ap.add_argument('--storage', choices=STORAGES, default='sqlite3')
    args = ap.parse_args(argv)
    if os.path.exists(args.bag):
        raise SystemExit(f'calibrate record: {args.bag} exists already (a bag is a new folder)')
    rc = record(args.bag, args.topic, args.duration, args.storage, args.count)
    print(f'record: wrote {args.bag}')
    return rc


if __name__ == '__main__':
    sys.exit(main())
