"""Bad input gets a clear ValueError naming the problem, and computes nothing."""

import numpy as np
import pytest

import ros_dynamics as rd
from test_urdf import TWO_LINK, joint, link, robot

pytestmark = pytest.mark.core


@pytest.fixture(scope='module')
def arm():
    return rd.load_urdf(rd.bundled_urdf('arm7'))


@pytest.mark.parametrize('source, message', [
    ('<robot name="x"><link name="a"></robot>', 'malformed URDF'),
    ('/no/such/file.urdf', 'not found'),
    (robot(link('base'), link('l1'), joint('j', 'base', 'l1', jtype='planar')), "joint 'j'.*planar"),
    (robot(link('base'), link('l1'), link('l2'), joint('j', 'base', 'l1'), joint('f', 'l1', 'l2', jtype='floating')),
     "joint 'f'.*floating"),
    (robot(link('base'), link('l1'), joint('j', 'base', 'nope')), "joint 'j'.*link 'nope' does not exist"),
    (robot(link('base'), link('l1'), joint('j', 'base', 'l1', axis='0 0 0')), "joint 'j' has an invalid <axis>"),
    (robot(link('a'), link('b')), "2 root links \\('a', 'b'\\)"),
    (robot(link('base'), link('l1', m=-1.0), joint('j', 'base', 'l1')), "link 'l1' has a negative mass"),
    (42, 'XML string or a file path'),
    ('', 'robot description is empty'),
    (b'<robot name="\xff"/>', 'not UTF-8'),
    ('<rob', 'malformed URDF XML'),
    ('<sdf version="1.6"><model name="m"/></sdf>', 'root element is <sdf>, not <robot>'),
    (robot('<link/>'), '<link> number 1 has no name'),
    (robot(link('a'), link('a')), "two links are named 'a'"),
    (robot(link('base'), link('l1'), joint('j', 'base', 'l1', jtype='ball')), "joint 'j': unknown joint type 'ball'"),
    (robot(link('base'), link('l1'), joint('j', 'base', 'l1', xyz='0 0 0.3 1')),
     r"joint 'j' <origin>: <origin xyz=\"0 0 0.3 1\"> must have 3 numbers, found 4"),
    (robot(link('base'), link('l1'), joint('j', 'base', 'l1', rpy='0 x 0')), "joint 'j' <origin>.*not a list of 3 numbers"),
    (robot(link('base'), link('l1'), joint('j', 'base', 'l1', axis='0 inf 1')), "joint 'j' <axis>.*not finite"),
    (robot(link('base'), link('l1', com='0 0 nan'), joint('j', 'base', 'l1')), "link 'l1' <inertial> <origin>.*not finite"),
    (robot(link('base'), link('a'), link('b'), joint('ja', 'base', 'b'), joint('jb', 'a', 'b'), joint('jc', 'base', 'a')),
     "link 'b' is the child of two joints, 'ja' and 'jb'"),
    (robot(link('base'), link('l1'), joint('j', 'l1', 'l1')), "joint 'j' connects link 'l1' to itself"),
    (robot(link('base'), '<link name="l1"><inertial><mass value="1"/></inertial></link>', joint('j', 'base', 'l1')),
     "link 'l1' <inertial> has no <inertia>"),
])
def test_bad_urdf(source, message):
    with pytest.raises(ValueError, match=message):
        rd.load_urdf(source)


@pytest.mark.parametrize('bad, message', [
    (np.zeros(6), r'q must have shape \(7,\)'),
    (np.zeros((7, 1)), r'q must have shape'),
    (np.array([0, 0, np.nan, 0, 0, 0, 0]), 'q contains NaN or inf'),
    (np.array([0, 0, np.inf, 0, 0, 0, 0]), 'q contains NaN or inf'),
    (['a'] * 7, 'q must be a numeric array'),
    (None, 'q must be a numeric array|q must have shape'),
])
def test_bad_configuration(arm, bad, message):
    with pytest.raises(ValueError, match=message):
        rd.dynamics(arm, bad, np.zeros(7))
    with pytest.raises(ValueError, match=message):
        rd.christoffel(arm, bad)


def test_bad_velocity_and_torque(arm):
    q = np.zeros(7)
    with pytest.raises(ValueError, match='v must have shape'):
        rd.coriolis_matrix(arm, q, np.zeros(8))
    with pytest.raises(ValueError, match='v contains NaN'):
        rd.dynamics(arm, q, np.full(7, np.nan))
    with pytest.raises(ValueError, match='a must have shape'):
        rd.inverse_dynamics(arm, q, np.zeros(7), np.zeros(3))
    with pytest.raises(ValueError, match='tau contains NaN'):
        rd.forward_dynamics(arm, q, np.zeros(7), np.array([np.nan] * 7))
    with pytest.raises(ValueError, match='factorization must be one of'):
        rd.dynamics(arm, q, np.zeros(7), factorization='eq11')
    with pytest.raises(ValueError, match=r'Q must have shape \(K, 7\)'):
        rd.dynamics_batch(arm, np.zeros((3, 6)), np.zeros((3, 7)))


def test_non_unit_quaternion():
    m = rd.load_urdf(TWO_LINK, floating_base=True)
    q = m.neutral()
    q[3:7] = [0.0, 0.0, 0.0, 2.0]
    with pytest.raises(ValueError, match='unit quaternion'):
        rd.mass_matrix(m, q)


def test_input_arrays_are_not_modified(arm):
    q, v = np.linspace(0, 1, 7), np.linspace(1, 2, 7)
    q0, v0 = q.copy(), v.copy()
    rd.dynamics(arm, q, v)
    rd.christoffel(arm, q)
    rd.forward_dynamics(arm, q, v, v)
    assert np.array_equal(q, q0) and np.array_equal(v, v0)


def test_unknown_names_list_the_closest_ones(arm):
    q = np.zeros(arm.nq)
    with pytest.raises(ValueError, match=r"unknown link 'arm_link7' \(closest: 'arm_link_7'.*"
                                         r"; 9 frames \(model.frame_names\) in all\)"):
        rd.link_jacobian(arm, q, 'arm_link7')
    with pytest.raises(ValueError, match=r"unknown joint 'arm_joint1' \(closest: 'arm_joint_1'"):
        arm.joint_v_index('arm_joint1')
    with pytest.raises(ValueError, match=r"unknown link 'nothing_like_it' \(9 frames"):
        rd.contact_compliance(arm, q, [('nothing_like_it', (0, 0, 0))])
    with pytest.raises(ValueError, match='closest'):
        rd.attach_payload(arm, 'tool_', 1.0)


def test_merged_fixed_frames_are_accepted_everywhere(arm):
    """'tool' is fixed to the last arm link: not a body (link_names) but a frame (frame_names)."""
    assert 'tool' in arm.frame_names and 'tool' not in arm.link_names
    assert set(arm.link_names) < set(arm.frame_names)
    q = np.full(arm.nq, 0.2)
    body, R, p = arm.link_frames['tool']
    R_last, p_last = rd.link_placement(arm, q, arm.body_names[body])
    R_tool, p_tool = rd.link_placement(arm, q, 'tool')
    np.testing.assert_allclose(R_tool, R_last @ R, atol=1e-14)
    np.testing.assert_allclose(p_tool, R_last @ p + p_last, atol=1e-14)
    J = rd.link_jacobian(arm, q, 'tool')
    np.testing.assert_allclose(J, rd.link_jacobian(arm, q, arm.body_names[body], p), atol=1e-14)


def test_a_wrong_call_signature_is_explained(arm):
    q, v = np.zeros(arm.nq), np.zeros(arm.nv)
    with pytest.raises(ValueError, match=r'data must be a ros_dynamics.Data, got ndarray \(called as '
                                         r'christoffel\(model, q, data=None\): Gamma depends on q '
                                         r'alone and takes no velocity'):
        rd.christoffel(arm, q, v)
    with pytest.raises(ValueError, match=r'call it as compute_all_terms\(model, q, v, data'):
        rd.compute_all_terms(arm, q, v, None)
    with pytest.raises(ValueError, match=r'called as mass_matrix\(model, q, data=None\)'):
        rd.mass_matrix(arm, q, v)
