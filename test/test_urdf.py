"""URDF loading: sources, fixed-joint merging, mimic joints, payloads, and clear errors."""

import os

import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics import testing as models

pytestmark = pytest.mark.core

LINK = '<link name="{name}"><inertial><origin xyz="{com}" rpy="0 0 0"/><mass value="{m}"/>' \
       '<inertia ixx="{i}" iyy="{i}" izz="{i}" ixy="0" ixz="0" iyz="0"/></inertial></link>'


def robot(*parts, name='t'):
    return f'<robot name="{name}">' + ''.join(parts) + '</robot>'


def link(name, m=1.0, com='0 0 0.1', i=0.01):
    return LINK.format(name=name, m=m, com=com, i=i)


def joint(name, parent, child, jtype='revolute', xyz='0 0 0.3', rpy='0 0 0', axis='0 0 1', extra=''):
    lim = '<limit lower="-3" upper="3" effort="10" velocity="2"/>' if jtype in ('revolute', 'prismatic') else ''
    return (f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>{lim}{extra}</joint>')


TWO_LINK = robot(link('base'), link('l1'), link('l2'), joint('j1', 'base', 'l1', axis='0 1 0'),
                 joint('j2', 'l1', 'l2', axis='1 0 0'))


def test_string_path_and_xacro_sources_agree(tmp_path):
    path = tmp_path / 'two.urdf'
    path.write_text(TWO_LINK)
    xacro_path = tmp_path / 'two.urdf.xacro'
    xacro_path.write_text(
        '<robot name="t" xmlns:xacro="http://www.ros.org/wiki/xacro">'
        '<xacro:macro name="lnk" params="name"><link name="${name}"><inertial>'
        '<origin xyz="0 0 0.1" rpy="0 0 0"/><mass value="1.0"/>'
        '<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link></xacro:macro>'
        '<xacro:lnk name="base"/><xacro:lnk name="l1"/><xacro:lnk name="l2"/>'
        + joint('j1', 'base', 'l1', axis='0 1 0') + joint('j2', 'l1', 'l2', axis='1 0 0') + '</robot>')
    q, v = np.array([0.3, -0.7]), np.array([1.0, 2.0])
    ref = rd.dynamics(rd.load_urdf(TWO_LINK), q, v)
    for source in (str(path), path, str(xacro_path)):
        d = rd.dynamics(rd.load_urdf(source), q, v)
        for name in d._fields:
            assert np.allclose(getattr(d, name), getattr(ref, name), rtol=0, atol=1e-14)


def test_fixed_joint_children_are_lumped_into_the_parent():
    # l1 carries a fixed child 'box' (1 kg at 0.2 m along x of l1, rotated): same dynamics as
    # a single link with the combined inertia written by hand.
    merged = robot(link('base'), link('l1'), link('box', m=2.0, com='0.1 0 0', i=0.02),
                   joint('j1', 'base', 'l1', axis='0 1 0'),
                   joint('fix', 'l1', 'box', jtype='fixed', xyz='0.2 0 0', rpy='0 0 1.5707963267948966'))
    m = rd.load_urdf(merged)
    assert m.nv == 1 and m.link_names == ['l1'] and set(m.link_frames) == {'base', 'l1', 'box'}
    # box CoM in l1: 0.2 + R_z(90deg) [0.1, 0, 0] = [0.2, 0.1, 0]
    assert np.isclose(m.mass[0], 3.0)
    assert np.allclose(m.com[0], (1.0 * np.array([0, 0, 0.1]) + 2.0 * np.array([0.2, 0.1, 0.0])) / 3.0)
    # rotational inertia about the joint axis (y through the origin): sum of m (x^2 + z^2) + I_yy
    q = np.zeros(1)
    M = rd.mass_matrix(m, q)
    expected = 0.01 + 1.0 * 0.1 ** 2 + 0.02 + 2.0 * 0.2 ** 2
    assert np.isclose(M[0, 0], expected, rtol=1e-12)


def test_joint_order_and_names_follow_the_tree():
    m = rd.load_urdf(models.binary_tree(7, seed=1))
    assert m.joint_names == [f'joint_{i}' for i in range(7)] or len(set(m.joint_names)) == 7
    assert all(m.parent[i] < i for i in range(m.nbodies))
    assert m.nq == m.nv == 7 and m.joint_v_index(m.joint_names[3]) == 3


def test_mimic_joints_stay_independent_coordinates():
    urdf = robot(link('base'), link('a'), link('b'), joint('ja', 'base', 'a'),
                 joint('jb', 'a', 'b', extra='<mimic joint="ja" multiplier="-2" offset="0.1"/>'))
    m = rd.load_urdf(urdf)
    assert m.nv == 2 and m.mimic == {'jb': ('ja', -2.0, 0.1)}


def test_floating_base_layout():
    m = rd.load_urdf(TWO_LINK, floating_base=True)
    assert (m.nq, m.nv) == (9, 8) and m.joint_names == ['j1', 'j2']
    assert m.joint_q_index('j1') == 7 and m.joint_v_index('j1') == 6
    assert np.isclose(m.total_mass(), 3.0)           # the root link is a body now


def test_attach_payload_adds_the_point_mass_gravity_torque():
    m = rd.load_urdf(rd.bundled_urdf('arm7'))
    q = np.linspace(-1, 1, m.nv)
    com = np.array([0.0, 0.05, 0.1])
    heavier = rd.attach_payload(m, 'tool', 2.0, com)
    J = rd.link_jacobian(m, q, 'tool', com)
    expected = rd.gravity(m, q) - J[:3].T @ (2.0 * m.gravity)
    assert np.allclose(rd.gravity(heavier, q), expected, rtol=1e-12, atol=1e-12)
    assert np.isclose(heavier.total_mass(), m.total_mass() + 2.0)
    back = rd.attach_payload(heavier, 'tool', -2.0, com)
    assert np.allclose(rd.mass_matrix(back, q), rd.mass_matrix(m, q), atol=1e-12)
    with pytest.raises(ValueError, match='unknown link'):
        rd.attach_payload(m, 'nope', 1.0)


def test_bundled_robots():
    arm = rd.load_urdf(rd.bundled_urdf('arm7'))
    assert arm.nv == 7 and 'tool' in arm.link_frames
    quad = rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)
    assert (quad.nq, quad.nv) == (19, 18)
    assert os.path.isabs(rd.bundled_urdf('quadruped.urdf'))
