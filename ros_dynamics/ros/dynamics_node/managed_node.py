"""``dynamics_node`` as a managed (lifecycle) node, for bring-up systems that start, pause and
stop nodes deterministically (``ros2 launch ros_dynamics dynamics.launch.py managed:=true``).

configure: build the model and warm the kernels (returns when ready, or FAILURE with the
reason); activate: process joint states and publish; deactivate: stop processing and
publishing, keep the model; cleanup: drop the model; shutdown: as cleanup.  Parameters and
services are those of the plain node.
"""
import sys
import time

from ros_dynamics.ros.dynamics_node import node as dynamics_node
from ros_dynamics.ros.dynamics_node.node import DynamicsNode

from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn  # noqa: E402

CONFIGURE_TIMEOUT = 600.0   # s: a first start compiles the kernels


class ManagedDynamicsNode(DynamicsNode, LifecycleNode):
    """The dynamics node with the lifecycle state machine (module text)."""

    MANAGED = True

    def on_configure(self, state):
        xml = self._wanted_xml(self.config, True)
        if not xml:
            self._log.error('configure failed: no robot description (parameter or topic)')
            return TransitionCallbackReturn.FAILURE
        self._request_build(xml, self.config, 'robot_description (configure)')
        end = time.monotonic() + CONFIGURE_TIMEOUT
        while self._engine is None and time.monotonic() < end:
            failed = self._wait_build(0.05)
            if failed:
                self._log.error(f'configure failed: {failed}')
                return TransitionCallbackReturn.FAILURE
        return (TransitionCallbackReturn.SUCCESS if self._engine is not None
                else TransitionCallbackReturn.FAILURE)

    def on_activate(self, state):
        self.active = True
        self._log.info('activated: processing joint states')
        return super().on_activate(state)

    def on_deactivate(self, state):
        self.active = False
        self._log.info('deactivated: joint states ignored, the model kept')
        return super().on_deactivate(state)

    def on_cleanup(self, state):
        self.active = False
        self._engine = None
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state):
        return self.on_cleanup(state)


def main(args=None):
    return dynamics_node.main(args, node_class=ManagedDynamicsNode)


if __name__ == '__main__':
    sys.exit(main())
