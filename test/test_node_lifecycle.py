"""The managed node over DDS: a lifecycle client drives configure -> activate -> deactivate ->
activate -> shutdown; outputs come only while active, the model survives deactivation."""
import numpy as np
import pytest

from test_node_support import ARM7, TIMEOUT, NodeProcess, Probe, next_stamp, read

pytestmark = pytest.mark.ros


def test_lifecycle_transitions(rclpy_context, ros_env, tmp_path):
    from lifecycle_msgs.msg import Transition
    from lifecycle_msgs.srv import ChangeState, GetState
    import ros_dynamics as rd
    model = rd.load_urdf(ARM7)
    names = list(model.joint_names)
    proc = NodeProcess(ros_env, str(tmp_path), 'life', {'robot_description': read(ARM7)},
                       module='ros_dynamics.ros.dynamics_node.managed_node')
    probe = Probe(rclpy_context, 'life')
    try:
        probe.wait_connected(proc)

        def change(transition_id):
            req = ChangeState.Request()
            req.transition.id = transition_id
            return probe.call(ChangeState, '/life/dynamics/change_state', req, timeout=120).success

        def state():
            return probe.call(GetState, '/life/dynamics/get_state', GetState.Request()
                              ).current_state.label

        def answered(timeout=TIMEOUT):
            """A joint state answered by the deadline (a short window for 'not answered')."""
            q = np.full(7, 0.2)
            return probe.send_and_wait(probe.joint_state(names, q, q, q, next_stamp(10**6)),
                                       timeout=timeout) is not None

        assert state() == 'unconfigured' and not answered(1.5)
        assert change(Transition.TRANSITION_CONFIGURE) and state() == 'inactive'
        assert 'model ready' in proc.log() and not answered(1.5)
        assert change(Transition.TRANSITION_ACTIVATE) and state() == 'active' and answered()
        assert change(Transition.TRANSITION_DEACTIVATE) and state() == 'inactive'
        assert not answered(1.5)
        builds = proc.log().count('model built')
        assert change(Transition.TRANSITION_ACTIVATE) and answered()
        assert proc.log().count('model built') == builds        # the model was kept
        assert change(Transition.TRANSITION_ACTIVE_SHUTDOWN) and state() == 'finalized'
        assert not answered(1.5)
    finally:
        probe.destroy()
        rc = proc.stop()
        print(proc.log())
    assert rc == 0 and 'Traceback' not in proc.log()
