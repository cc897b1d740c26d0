"""The CoM offset from the stance forces' centre of pressure (control/com_offset.py), on foot
forces built independently: the vertical forces that hold a body of weight W at a CoM c_true
accelerating by a (linear inverted pendulum of height h: Σ f = W, Σ f (p − c)_xy = −(h/g) W
a_xy, the least-norm solution by numpy's lstsq)."""
import numpy as np
import pytest

from ros_dynamics.control.com_offset import CoMOffset, centre_of_pressure
from ros_dynamics.control.wbc import WBCReference

pytestmark = pytest.mark.core

FEET = np.array([[0.19, 0.15, 0.0], [0.19, -0.15, 0.0], [-0.19, 0.15, 0.0], [-0.19, -0.15, 0.0]])
W, H, G = 24.5, 0.22, 9.81


def forces(c_true, acc=np.zeros(3), feet=FEET):
    """Vertical foot forces (k, 3) holding weight W at c_true with CoM acceleration acc."""
    A = np.vstack([np.ones(len(feet)), (feet[:, :2] - c_true[:2]).T])
    b = np.r_[W, -(H / G) * W * acc[:2]]
    fz = np.linalg.lstsq(A, b, rcond=None)[0]
    assert np.all(fz > 0)
    out = np.zeros((len(feet), 3))
    out[:, 2] = fz
    return out


def test_centre_of_pressure_is_the_cop():
    f = forces(np.array([0.02, -0.01, H]))
    p, total = centre_of_pressure(FEET, f)
    np.testing.assert_allclose(p, [0.02, -0.01], atol=1e-12)
    assert total == pytest.approx(W)
    assert centre_of_pressure(FEET, np.zeros((4, 3))) == (None, 0.0)


def test_offset_converges_to_the_true_com_minus_the_models():
    """The true CoM 8.6 mm, 5.7 mm from the model's (a 1 kg load at (30, 20) mm on 2.5 kg),
    moving with an acceleration: after 10 time constants the estimate is the offset (the LIPM
    term removes the acceleration's CoP shift); z stays 0; a sample with too little load is
    ignored."""
    d = np.array([0.0086, 0.0057, 0.004])
    est = CoMOffset(tau=0.5)
    dt = 1e-3
    for k in range(5000):
        c_model = np.array([0.01 * np.sin(k * dt), 0.0, H])
        acc = np.array([-0.01 * np.sin(k * dt), 0.3, 0.0])
        est.update(dt, FEET, forces(c_model + d, acc), c_model, acc, W)
    np.testing.assert_allclose(est.offset, [d[0], d[1], 0.0], atol=1e-6)
    before = est.offset.copy()
    est.update(dt, FEET, 0.5 * forces(c_model), c_model, acc, W)     # half the weight: ignored
    np.testing.assert_array_equal(est.offset, before)


def test_moving_reference_is_not_measured_and_the_reference_is_shifted():
    """While the reference moves faster than max_speed nothing is learnt; the shifted reference
    is ref.com − offset, the schedule's own untouched."""
    est = CoMOffset(tau=0.5)
    c = np.array([0.0, 0.0, H])
    est.update(1e-3, FEET, forces(c + 0.01), c, np.zeros(3), W, com_velocity=(0.01, 0, 0))
    np.testing.assert_array_equal(est.offset, 0.0)
    est.offset[:] = [0.01, -0.02, 0.0]
    ref = WBCReference(com=c.copy(), com_velocity=np.zeros(3), com_acceleration=np.zeros(3),
                       stance=(0, 1, 2, 3))
    np.testing.assert_allclose(est.reference(ref).com, [-0.01, 0.02, H])
    np.testing.assert_array_equal(ref.com, c)
