#!/usr/bin/env python3
"""The plain rclpy node a user would write with Pinocchio: the baseline of vs_pinocchio.py.

Subscribes sensor_msgs/JointState on ``joint_states`` (reliable, KEEP_LAST 1000, as
dynamics_node) and publishes ros_dynamics_msgs/Dynamics on ``~/dynamics`` for every joint
state: M (pin.crba, upper triangle mirrored), C (pin.computeCoriolisMatrix), g
(pin.computeGeneralizedGravity) and dM/dt = C + C^T, which holds because Pinocchio's C is the
Christoffel-consistent one (Mdot - 2C skew-symmetric) -- no extra algorithm for dM/dt.  Names,
position and velocity are in Pinocchio's joint order, the header is the joint state's.  The
model is built from the ``robot_description`` parameter (URDF XML, fixed base).  No input
checks, no observer, no Christoffel stream: the least a node publishing this message does.

``floating_base: true`` puts Pinocchio's free-flyer at the root; the base state comes from
nav_msgs/Odometry on ``odom`` (the latest one: pose in the world frame, twist in the base frame),
q = [x y z qx qy qz qw, joints], v = [base linear, base angular (base frame), joints], and the
names start with the six base coordinates (docs/conventions.md).  ``task_frames`` (frame names)
adds ros_dynamics_msgs/TaskSpace on ``~/task_space`` per joint state (:func:`pin_task_space`):
per frame the placement, the LOCAL_WORLD_ALIGNED Jacobian (getFrameJacobian) and the classical
acceleration at dv/dt = 0 (getFrameClassicalAcceleration after forwardKinematics(q, v, 0));
the total mass (computed once), the CoM and A_G, dA_G/dt (computeCentroidalMapTimeVariation),
dA_G/dt v and the CoM velocity (the linear rows of A_G v over the mass).

The arrays go into the message as ``array.array('d', ndarray.tobytes())`` (one copy, no
per-element check in the generated setter); ``--fill list`` uses ``ndarray.ravel().tolist()``
instead (what many users write; slower).  The joint state arrives as a message object and
``~/dynamics`` leaves as one (what a user writes; dynamics_node reads and writes the serialized
bytes itself).

Executor: ``--executor spin`` (default) spins with ``rclpy.spin(node)``, rclpy's default
SingleThreadedExecutor; ``--executor events`` spins rclpy's EventsExecutor
(``rclpy.experimental``, implemented in C++; ``spin_once`` in a loop, as dynamics_node spins
it), the executor dynamics_node uses by default, so that the two nodes can be compared with
the same executor.

    python benchmarks/pinocchio_node.py [--fill list] [--executor events] \
        --ros-args -r __ns:=/x --params-file p.yaml
"""
import argparse
import array
import sys

import numpy as np
import pinocchio as pin
import rclpy
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from geometry_msgs.msg import Pose
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState

from ros_dynamics_msgs.msg import Dynamics, TaskSpace

#: the free-flyer's six velocity coordinates (docs/conventions.md)
BASE_NAMES = ['floating_base/linear_x', 'floating_base/linear_y', 'floating_base/linear_z',
              'floating_base/angular_x', 'floating_base/angular_y', 'floating_base/angular_z']


def pin_terms(model, data, q, v):
    """(M, C, dM/dt, g) of Pinocchio at (q, v), Pinocchio's coordinate order."""
    M = pin.crba(model, data, q)
    M = np.triu(M) + np.triu(M, 1).T      # crba fills the upper triangle
    C = pin.computeCoriolisMatrix(model, data, q, v).copy()
    g = pin.computeGeneralizedGravity(model, data, q).copy()
    return M, C, C + C.T, g


class PinTaskSpace:
    """The task-space quantities of ~/task_space with Pinocchio, Pinocchio's coordinate order.
    Two Data: computeCentroidalMapTimeVariation gets a Data of its own (on a Data that other
    algorithms filled at another state it returns wrong numbers, Pinocchio 4.1)."""

    def __init__(self, model, frames):
        self.model, self.data, self.cdata = model, model.createData(), model.createData()
        self.ids = [model.getFrameId(f) for f in frames]
        missing = [f for f, i in zip(frames, self.ids) if i >= model.nframes]
        if missing:
            raise ValueError(f'no frame {missing} in the model')
        self.mass = pin.computeTotalMass(model)
        self.zero = np.zeros(model.nv)

    def __call__(self, q, v):
        """([(R, p, J 6 x nv, dJ/dt v 6)] per frame, mass, com, com velocity, A_G, dA_G/dt v)."""
        m, d = self.model, self.data
        pin.forwardKinematics(m, d, q, v, self.zero)
        pin.computeJointJacobians(m, d)
        pin.updateFramePlacements(m, d)
        frames = []
        for fid in self.ids:
            a = pin.getFrameClassicalAcceleration(m, d, fid, pin.LOCAL_WORLD_ALIGNED)
            oMf = d.oMf[fid]
            frames.append((oMf.rotation, oMf.translation,
                           pin.getFrameJacobian(m, d, fid, pin.LOCAL_WORLD_ALIGNED),
                           np.r_[a.linear, a.angular]))
        dAg = pin.computeCentroidalMapTimeVariation(m, self.cdata, q, v)
        Ag = self.cdata.Ag
        return (frames, self.mass, self.cdata.com[0].copy(), Ag[:3] @ v / self.mass, Ag.copy(),
                dAg @ v)


class PinocchioDynamics(Node):
    def __init__(self, fill='bytes'):
        super().__init__('dynamics')
        xml = self.declare_parameter('robot_description', '').value
        floating = self.declare_parameter('floating_base', False).value
        frames = self.declare_parameter('task_frames', ['']).value
        frames = [f for f in frames if f]
        self.model = (pin.buildModelFromXML(xml, pin.JointModelFreeFlyer()) if floating
                      else pin.buildModelFromXML(xml))
        self.data = self.model.createData()
        self.joints = list(self.model.names)[2 if floating else 1:]   # joint order of q and v
        self.names = (BASE_NAMES if floating else []) + self.joints
        self.floating = floating
        self.base = None                                 # floating: (q, v) of the latest odom
        self.task_space = PinTaskSpace(self.model, frames) if frames else None
        self.frames = frames
        self.index = None                                # message index of each joint (cached)
        self.fill = (lambda x: array.array('d', x.tobytes())) if fill == 'bytes' else (
            lambda x: x.ravel().tolist())
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                         reliability=ReliabilityPolicy.RELIABLE)
        self.pub = self.create_publisher(Dynamics, '~/dynamics', qos)
        self.ts_pub = (self.create_publisher(TaskSpace, '~/task_space', qos) if frames
                       else None)
        self.create_subscription(JointState, 'joint_states', self.on_joint_state, qos)
        if floating:
            self.create_subscription(Odometry, 'odom', self.on_odom, qos)

    def on_odom(self, msg):
        p, o, t = msg.pose.pose.position, msg.pose.pose.orientation, msg.twist.twist
        self.base = (np.array([p.x, p.y, p.z, o.x, o.y, o.z, o.w]),
                     np.array([t.linear.x, t.linear.y, t.linear.z,
                               t.angular.x, t.angular.y, t.angular.z]))

    def on_joint_state(self, js):
        if self.index is None:
            where = {name: i for i, name in enumerate(js.name)}
            self.index = np.array([where[name] for name in self.joints])
        q = np.asarray(js.position)[self.index]
        v = np.asarray(js.velocity)[self.index]
        if self.floating:
            if self.base is None:                        # no odom yet
                return
            q, v = np.r_[self.base[0], q], np.r_[self.base[1], v]
        M, C, Mdot, g = pin_terms(self.model, self.data, q, v)
        out = Dynamics()
        out.header = js.header
        out.names = self.names
        f = self.fill
        out.position, out.velocity = f(q), f(v)
        out.mass_matrix, out.coriolis_matrix = f(M), f(C)
        out.mass_matrix_dot, out.gravity = f(Mdot), f(g)
        self.pub.publish(out)
        if self.task_space is not None:
            self.publish_task_space(js.header, q, v)

    def publish_task_space(self, header, q, v):
        frames, mass, com, vcom, Ag, bias = self.task_space(q, v)
        out = TaskSpace()
        out.header = header
        out.names, out.frames = self.names, self.frames
        poses = []
        for R, p, _, _ in frames:
            x = pin.Quaternion(R)
            pose = Pose()
            pose.position.x, pose.position.y, pose.position.z = p.tolist()
            o = pose.orientation
            o.x, o.y, o.z, o.w = x.x, x.y, x.z, x.w
            poses.append(pose)
        out.poses = poses
        f = self.fill
        out.jacobians = f(np.stack([J for _, _, J, _ in frames]))
        out.jacobian_dot_v = f(np.stack([a for _, _, _, a in frames]))
        out.mass = float(mass)
        out.com.x, out.com.y, out.com.z = com.tolist()
        out.com_velocity.x, out.com_velocity.y, out.com_velocity.z = vcom.tolist()
        out.centroidal_matrix, out.centroidal_bias = f(Ag), f(bias)
        self.ts_pub.publish(out)


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0],
        epilog='ROS arguments follow --ros-args (a namespace, a parameter file with '
               'robot_description, floating_base, task_frames).')
    ap.add_argument('--fill', choices=('bytes', 'list'), default='bytes',
                    help='how the arrays go into the message (default: bytes)')
    ap.add_argument('--executor', choices=('spin', 'events'), default='spin',
                    help='rclpy.spin (default) or the EventsExecutor')
    args = ap.parse_args(rclpy.utilities.remove_ros_args(sys.argv)[1:])
    fill, executor = args.fill, args.executor
    rclpy.init()
    node = PinocchioDynamics(fill)
    try:
        if executor == 'events':
            from rclpy.experimental import EventsExecutor
            executor = EventsExecutor()
            executor.add_node(node)
            while rclpy.ok():     # as dynamics_node spins (its spin() delivered nothing here)
                executor.spin_once(timeout_sec=0.2)
        else:
            rclpy.spin(node)
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == '__main__':
    main()
