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
import array
import sys

import numpy as np
import pinocchio as pin
import rclpy
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

from ros_dynamics_msgs.msg import Dynamics


def pin_terms(model, data, q, v):
    """(M, C, dM/dt, g) of Pinocchio at (q, v), Pinocchio's coordinate order."""
    M = pin.crba(model, data, q)
    M = np.triu(M) + np.triu(M, 1).T      # crba fills the upper triangle
    C = pin.computeCoriolisMatrix(model, data, q, v).copy()
    g = pin.computeGeneralizedGravity(model, data, q).copy()
    return M, C, C + C.T, g


class PinocchioDynamics(Node):
    def __init__(self, fill='bytes'):
        super().__init__('dynamics')
        xml = self.declare_parameter('robot_description', '').value
        self.model = pin.buildModelFromXML(xml)          # fixed base
        self.data = self.model.createData()
        self.names = list(self.model.names)[1:]          # joint order of q and v
        self.index = None                                # message index of each joint (cached)
        self.fill = (lambda x: array.array('d', x.tobytes())) if fill == 'bytes' else (
            lambda x: x.ravel().tolist())
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                         reliability=ReliabilityPolicy.RELIABLE)
        self.pub = self.create_publisher(Dynamics, '~/dynamics', qos)
        self.create_subscription(JointState, 'joint_states', self.on_joint_state, qos)

    def on_joint_state(self, js):
        if self.index is None:
            where = {name: i for i, name in enumerate(js.name)}
            self.index = np.array([where[name] for name in self.names])
        q = np.asarray(js.position)[self.index]
        v = np.asarray(js.velocity)[self.index]
        M, C, Mdot, g = pin_terms(self.model, self.data, q, v)
        out = Dynamics()
        out.header = js.header
        out.names = self.names
        f = self.fill
        out.position, out.velocity = f(q), f(v)
        out.mass_matrix, out.coriolis_matrix = f(M), f(C)
        out.mass_matrix_dot, out.gravity = f(Mdot), f(g)
        self.pub.publish(out)


def _option(args, name, default):
    return args[args.index(name) + 1] if name in args else default


def main():
    args = rclpy.utilities.remove_ros_args(sys.argv)
    fill = _option(args, '--fill', 'bytes')
    executor = _option(args, '--executor', 'spin')
    if executor not in ('spin', 'events'):
        raise SystemExit(f"--executor {executor!r}: 'spin' or 'events'")
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
