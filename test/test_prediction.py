"""The state carried forward over a delay (ros_dynamics.control.prediction) against the stream
computed here at the configuration the robot reaches: the base turned by scipy's rotation
vector (an independent exponential map), the joints moved at their velocities, the CoM and the
feet from the kinematics there.  The prediction is first order, so its error must fall as Δ²
(halving Δ quarters it): a wrong frame, sign or Jacobian row would leave an error linear in Δ."""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from ros_dynamics.control.prediction import predicted
from ros_dynamics.core import load_urdf
from ros_dynamics.simulation.legged_robots import ROBOTS, robot_urdf
from ros_dynamics.simulation.legged_walk import stream_state

pytestmark = pytest.mark.core


def _moved(q, v, dt):
    """q after dt at the constant velocity v (body twist for the base)."""
    out = q.copy()
    R = Rotation.from_quat(q[3:7])
    out[:3] += dt * R.apply(v[:3])
    out[3:7] = (R * Rotation.from_rotvec(dt * v[3:6])).as_quat()
    out[7:] += dt * v[6:]
    return out


@pytest.mark.parametrize('seed', [1, 2, 3])
def test_the_prediction_is_the_motion_to_first_order(seed):
    model = load_urdf(robot_urdf('quadruped')[0], floating_base=True)
    feet = ROBOTS['quadruped']['feet']
    rng = np.random.default_rng(seed)
    q = np.concatenate([[0.1, -0.2, 0.3], Rotation.random(random_state=seed).as_quat(),
                        rng.uniform(-0.8, 0.8, model.nv - 6)])
    v = rng.normal(0.0, 1.0, model.nv)
    state = stream_state(model, feet, feet, q, v)
    assert predicted(state, 0.0) is state
    errors = []
    for dt in (0.02, 0.01):
        p = predicted(state, dt)
        truth = stream_state(model, feet, feet, _moved(q, v, dt), v)
        np.testing.assert_allclose(p.q[:3], truth.q[:3], atol=1e-14)
        np.testing.assert_allclose(abs(p.q[3:7] @ truth.q[3:7]), 1.0, atol=1e-13)
        np.testing.assert_allclose(p.q[7:], truth.q[7:], atol=1e-14)
        err = max(np.abs(p.com - truth.com).max(), np.abs(p.positions - truth.positions).max())
        moved = np.abs(truth.positions - state.positions).max()
        assert err < 0.2 * moved          # most of the motion predicted
        errors.append(err)
    assert 3.0 < errors[0] / errors[1] < 5.0, errors      # second order: Δ² error
    np.testing.assert_array_equal(p.v, state.v)
    np.testing.assert_array_equal(p.M, state.M)
