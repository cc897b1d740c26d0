"""ROS 2 adapters over the core: ``dynamics_node``, ``sim`` and the rclpy helpers.

Importing this package imports no rclpy (``compat`` must work before the ROS libraries are on
the library path); the node modules import rclpy themselves.
"""
