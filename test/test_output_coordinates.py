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
