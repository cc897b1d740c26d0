"""Change of coordinates (seed 000, Sec. 3.3, Theorem 1) applied to mimic joints."""

import numpy as np

import ros_dynamics as rd
from test_urdf import joint, link, robot
import pytest

pytestmark = pytest.mark.core

# a 3-joint arm whose third joint mimics the second (q3 = -0.5 q2 + 0.2)
URDF = robot(link('base'), link('a'), link('b', com='0.1 0 0.1'), link('c', com='0 0.1 0.1'),
             joint('j1', 'base', 'a', axis='0 0 1'), joint('j2', 'a', 'b', axis='0 1 0'),
             joint('j3', 'b', 'c', axis='1 0 0', extra='<mimic joint="j2" multiplier="-0.5" offset="0.2"/>'))


def test_reduced_coriolis_is_christoffel_consistent_in_the_new_coordinates():
    model = rd.load_urdf(URDF)
    mc = rd.MimicCoordinates(model)
    assert mc.independent == ['j1', 'j2'] and mc.nv == 2
    assert np.allclose(mc.A, [[1, 0], [0, 1], [0, -0.5]])
    qbar, vbar = np.array([0.4, -0.3]), np.array([1.2, -0.7])
    q, v = mc.q(qbar), mc.v(vbar)
    assert np.isclose(q[2], -0.5 * qbar[1] + 0.2)
    red = mc.reduce(rd.dynamics(model, q, v))
    # Mbar as a function of qbar, differentiated numerically: Gammabar from eq. (4)
    Mbar = lambda x: mc.A.T @ rd.mass_matrix(model, mc.q(x)) @ mc.A
    eps, n = 1e-6, 2
    dM = [(Mbar(qbar + eps * e) - Mbar(qbar - eps * e)) / (2 * eps) for e in np.eye(n)]
    G = np.array([[[0.5 * (dM[k][i, j] + dM[j][i, k] - dM[i][j, k]) for k in range(n)]
                   for j in range(n)] for i in range(n)])
    assert np.allclose(np.einsum('ijk,k->ij', G, vbar), red.C, atol=1e-8)          # Theorem 1
    assert np.allclose(rd.transform_christoffel(rd.christoffel(model, q), mc.A), G, atol=1e-8)
    assert np.allclose(red.Mdot, red.C + red.C.T)
    # reduced equations of motion reproduce the full ones along the constraint
    abar = np.array([0.3, 0.9])
    tau = rd.inverse_dynamics(model, q, v, mc.A @ abar)
    assert np.allclose(red.M @ abar + red.C @ vbar + red.g, mc.A.T @ tau, atol=1e-10)


def test_model_without_mimic_is_unchanged():
    model = rd.load_urdf(rd.bundled_urdf('arm7'))
    mc = rd.MimicCoordinates(model)
    assert np.array_equal(mc.A, np.eye(7)) and mc.independent == model.joint_names


def test_chain_of_mimics_composes_offsets_as_the_urdf_defines_them():
    """q = multiplier * q_leader + offset at every link of a chain (gripper fixture:
    knuckle = 2 finger_right + 0.1, finger_right = -finger_left => knuckle = -2 finger_left + 0.1)."""
    import os
    path = os.path.join(os.path.dirname(__file__), 'fixtures', 'urdf', 'gripper_mimic.urdf')
    model = rd.load_urdf(path)
    mc = rd.MimicCoordinates(model)
    assert mc.independent == ['wrist_roll', 'wrist_pitch', 'finger_left']
    q = mc.q(np.array([0.3, -0.2, 0.015]))
    fr, kn = q[model.joint_q_index('finger_right')], q[model.joint_q_index('knuckle')]
    assert np.isclose(fr, -0.015) and np.isclose(kn, 2 * fr + 0.1)
    assert np.allclose(mc.A[:, 2], [0, 0, 1, -1, -2])
