#!/usr/bin/env python3
"""An empty relay node: what rclpy and DDS cost a node like dynamics_node with no computation.

The floor of vs_pinocchio.py.  It subscribes to ``joint_states`` (and, with a floating base,
``odom``) as serialized bytes, as dynamics_node does, and for every joint state publishes on
``~/dynamics`` a ros_dynamics_msgs/Dynamics serialized once at start-up with the size of the
node's (the same names, frame and float64 arrays of nv, nv^2: zeros), into which it copies the
joint state's stamp (the 8 bytes after the CDR encapsulation header, header.stamp first in both
messages), so that the subscriber process counts it as an answer.  With ``task_frames`` it
publishes a pre-built ros_dynamics_msgs/TaskSpace of the node's size on ``~/task_space`` the
same way.  The same QoS as dynamics_node's defaults (inputs reliable, depth 1000; outputs
reliable, depth 500) and the same executor, spun the same way (``ros_dynamics.ros.process.run``
with rclpy's EventsExecutor, ``executor: events``).  Nothing is read from the joint state but
its stamp: no check, no model evaluation.

With ``--cycle`` (vs_pinocchio.py's ``relay-cycle``) it is the floor of a node that computes:
each joint state is read and run through the node's compiled cycle (``Engine.run``: one
compiled call reads the serialized message, applies the stamp policy, gathers and bounds the
joints, computes M, C, dM/dt, g and the observer, and writes the node's serialized ~/dynamics),
whose ~/dynamics is published; nothing else of the node (no accounting, health, outputs policy,
diagnostics, services, parameters).

    python benchmarks/relay_node.py [--cycle] --ros-args -r __ns:=/x --params-file p.yaml
        (parameters robot_description, floating_base, task_frames: the node's names and sizes)
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

#: where header.stamp (int32 sec, uint32 nanosec) lies in a serialized message that starts
#: with a std_msgs/Header, after the 4-byte CDR encapsulation header
STAMP = slice(4, 12)


def prebuilt_messages(xml, floating, frames):
    """(serialized Dynamics, serialized TaskSpace or None) of the node's size for this URDF."""
    from geometry_msgs.msg import Pose
    from rclpy.serialization import serialize_message
    from ros_dynamics_msgs.msg import Dynamics, TaskSpace

    import ros_dynamics as rd
    from ros_dynamics.core.coordinates import BASE_DOF_NAMES

    model = rd.load_urdf(xml, floating_base=floating)
    nv = int(model.nv)
    names = (list(BASE_DOF_NAMES) if floating else []) + list(model.joint_names)
    frame_id = 'world' if floating else model.link_names[0]
    dyn = Dynamics()
    dyn.header.frame_id = frame_id
    dyn.names = names
    dyn.position = [0.0] * int(model.nq)
    dyn.velocity = dyn.gravity = [0.0] * nv
    dyn.mass_matrix = dyn.coriolis_matrix = dyn.mass_matrix_dot = [0.0] * (nv * nv)
    ts = None
    if frames:
        msg = TaskSpace()
        msg.header.frame_id = frame_id
        msg.names, msg.frames = names, list(frames)
        msg.poses = [Pose() for _ in frames]
        msg.jacobians = [0.0] * (6 * nv * len(frames))
        msg.jacobian_dot_v = [0.0] * (6 * len(frames))
        msg.centroidal_matrix = [0.0] * (6 * nv)
        msg.centroidal_bias = [0.0] * 6
        ts = serialize_message(msg)
    return serialize_message(dyn), ts


def make_relay(cycle=False):
    from rclpy.node import Node
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import JointState
    from ros_dynamics_msgs.msg import Dynamics, TaskSpace

    class Relay(Node):
        def __init__(self):
            super().__init__('dynamics')
            xml = self.declare_parameter('robot_description', '').value
            floating = self.declare_parameter('floating_base', False).value
            frames = [f for f in self.declare_parameter('task_frames', ['']).value if f]
            dyn, ts = prebuilt_messages(xml, floating, frames)
            self.dyn, self.ts = bytearray(dyn), None if ts is None else bytearray(ts)
            rel = ReliabilityPolicy.RELIABLE
            out_qos, in_qos = QoSProfile(depth=500, reliability=rel), QoSProfile(
                depth=1000, reliability=rel)
            self.pub = self.create_publisher(Dynamics, '~/dynamics', out_qos)
            self.ts_pub = (self.create_publisher(TaskSpace, '~/task_space', out_qos)
                           if ts is not None else None)
            if cycle:
                self.cycle_engine(xml, floating, frames)
            self.create_subscription(JointState, 'joint_states', self.on_cycle if cycle else
                                     self.on_joint_state, in_qos, raw=True)
            if floating:
                self.create_subscription(Odometry, 'odom', self.on_odom if cycle else
                                         lambda raw: None, in_qos, raw=True)

        def cycle_engine(self, xml, floating, frames):
            """The node's engine, built as the node builds it (``--cycle``)."""
            from ros_dynamics.ros.dynamics_node.engine import build_engine
            from ros_dynamics.ros.dynamics_node.parameters import defaults
            from ros_dynamics.ros.dynamics_node.wire import OdometryReader
            cfg = defaults().replace(robot_description=xml, floating_base=floating,
                                     task_frames=frames)
            self.eng, self.odom_reader = build_engine(xml, cfg), OdometryReader()

        def on_odom(self, raw):
            q, v, sec, nanosec = self.odom_reader.read(raw)
            self.eng.odometry(q, v, sec * 1_000_000_000 + nanosec)

        def on_cycle(self, raw):
            out = self.eng.run(raw, time.time_ns(), False)
            if out is not None and out.verdict == 'cycle':
                self.pub.publish(self.eng.messages.slotted('dynamics', out, None))
            if self.ts_pub is not None:
                self.ts[STAMP] = raw[STAMP]
                self.ts_pub.publish(bytes(self.ts))

        def on_joint_state(self, raw):
            self.dyn[STAMP] = raw[STAMP]
            self.pub.publish(bytes(self.dyn))
            if self.ts_pub is not None:
                self.ts[STAMP] = raw[STAMP]
                self.ts_pub.publish(bytes(self.ts))

    return Relay()


def main():
    import rclpy.utilities
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--cycle', action='store_true', help='also read each joint state and run '
                    "the node's compiled cycle, publishing its ~/dynamics (the floor of a node "
                    'that computes)')
    args = ap.parse_args(rclpy.utilities.remove_ros_args(sys.argv)[1:])
    from ros_dynamics.ros import process
    return process.run(lambda: make_relay(args.cycle), executor='events')


if __name__ == '__main__':
    sys.exit(main())
