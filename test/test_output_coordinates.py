"""The node's output-coordinates adapter without ROS: names and sizes per choice, the joint
choice (and mimic_reduced without mimic joints) passing the results through untouched, and the
refusals. The numbers themselves are checked over DDS in test_node_coordinates.py."""
import os

import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics.ros.output_coordinates import OutputCoordinates

pytestmark = pytest.mark.core

BASE = ('floating_base/linear_x', 'floating_base/linear_y', 'floating_base/linear_z',
        'floating_base/angular_x', 'floating_base/angular_y', 'floating_base/angular_z')
GRIPPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures', 'urdf',
                       'gripper_mimic.urdf')


def test_names_and_sizes():
    quad = rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)
    joints = list(quad.joint_names)
    oc = OutputCoordinates(quad, 'joint', BASE)
    assert oc.names == list(BASE) + joints and (oc.nq, oc.nv) == (quad.nq, quad.nv)
    oc = OutputCoordinates(quad, 'center_of_mass', BASE)
    assert oc.names[:3] == ['center_of_mass/x', 'center_of_mass/y', 'center_of_mass/z']
    assert oc.names[3:] == list(BASE[3:]) + joints and (oc.nq, oc.nv) == (quad.nq, quad.nv)
    gripper = rd.load_urdf(GRIPPER, floating_base=True)
    oc = OutputCoordinates(gripper, 'mimic_reduced', BASE)
    assert oc.names == list(BASE) + ['wrist_roll', 'wrist_pitch', 'finger_left']
    assert (oc.nq, oc.nv) == (10, 9) and not oc.identity


def test_identity_choices_pass_the_arrays_through():
    arm = rd.load_urdf(rd.bundled_urdf('arm7'))
    q, v = np.full(7, 0.3), np.full(7, -0.2)
    d = rd.dynamics(arm, q, v)
    G = rd.christoffel(arm, q)
    for kind in ('joint', 'mimic_reduced'):          # arm7 has no mimic joints
        oc = OutputCoordinates(arm, kind, BASE)
        out = oc.apply(q, v, d, G)
        assert oc.identity and out.q is q and out.v is v and out.d is d and out.gamma is G
        assert oc.names == list(arm.joint_names)


def test_refusals():
    arm = rd.load_urdf(rd.bundled_urdf('arm7'))
    with pytest.raises(ValueError, match='floating'):
        OutputCoordinates(arm, 'center_of_mass', BASE)
    with pytest.raises(ValueError, match='mimic_reduced'):
        OutputCoordinates(arm, 'minimal', BASE)


def test_contact_compliance_and_joint_map_per_choice():
    """mimic_reduced: Lambdabar of the constrained system (rd.MimicCoordinates, checked against
    a dense finite-difference computation in test_coordinates.py) and the joint map (q = E qbar +
    offset, written out here from the URDF); joint and center_of_mass: the O(N) Lambda, which an
    invertible change of coordinates leaves as it is (checked here densely: J A (A^T M A)^-1 A^T
    J^T with the centre-of-mass A)."""
    gripper = rd.load_urdf(GRIPPER)
    mc = rd.MimicCoordinates(gripper)
    nodes = [('left_finger', (0, 0.01, 0.05)), ('right_tip', (0, 0, 0.03))]
    q = mc.q(np.array([0.3, -0.4, 0.02]))
    oc = OutputCoordinates(gripper, 'mimic_reduced', BASE)
    np.testing.assert_array_equal(oc.contact_compliance(q, nodes), mc.contact_compliance(q, nodes))
    names, E, offset = oc.joint_map
    assert names == ['wrist_roll', 'wrist_pitch', 'finger_left']
    np.testing.assert_array_equal(E, [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, -1], [0, 0, -2]])
    np.testing.assert_array_equal(offset, [0, 0, 0, 0, 0.1])
    oc = OutputCoordinates(gripper, 'joint', BASE)
    assert oc.joint_map is None
    np.testing.assert_array_equal(oc.contact_compliance(q, nodes),
                                  rd.contact_compliance(gripper, q, nodes))
    quad = rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)
    rng = np.random.default_rng(3)
    q = np.r_[rng.uniform(-1, 1, 3), rng.normal(size=4), rng.uniform(-1, 1, quad.nv - 6)]
    q[3:7] /= np.linalg.norm(q[3:7])
    feet = [(quad.body_names[-1], (0, 0, -0.1)), (quad.body_names[3], (0.02, 0, 0))]
    oc = OutputCoordinates(quad, 'center_of_mass', BASE)
    assert oc.joint_map is None
    lam = oc.contact_compliance(q, feet, spatial=True)
    np.testing.assert_array_equal(lam, rd.contact_compliance(quad, q, feet, spatial=True))
    M = rd.mass_matrix(quad, q)
    A = oc.co.velocity_map(M, oc.co._rotation(q))
    J = np.vstack([rd.link_jacobian(quad, q, link, x) for link, x in feet]) @ A
    dense = J @ np.linalg.solve(A.T @ M @ A, J.T)
    assert np.abs(lam - dense).max() < 1e-10 * np.abs(dense).max()
