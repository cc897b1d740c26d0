"""Tests for the URDF generators in ros_dynamics.testing and the bundled robots in urdf/.

Every URDF is parsed by urdf_parser_py and by Pinocchio (an independent URDF reader that also
merges fixed joints), and its counts, masses and inertias are checked against what the
generators and the bundled files document.
"""

import os

import numpy as np
import pinocchio as pin
import pytest
from urdf_parser_py.urdf import URDF

from ros_dynamics import testing as models

pytestmark = pytest.mark.core

URDF_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'urdf')
ARM7 = os.path.join(URDF_DIR, 'arm7.urdf')
QUADRUPED = os.path.join(URDF_DIR, 'quadruped.urdf')

# Expected masses and inertias from the sources the bundled URDFs cite, written here from those
# sources (not from the files), plus the parts the files declare as their own assumptions.
#
# KUKA LBR iiwa 14, as published in RobotLocomotion/drake (manipulation/models/iiwa_description,
# iiwa14_no_collision.sdf): mass [kg] and principal moments about the CoM [kg m^2] of
# iiwa_link_0 (our `base`) and iiwa_link_1..7 (our arm_link_1..7). Our link frames differ from
# drake's by rotations, which leave the principal moments unchanged.
IIWA14 = {
    'base': (5.0, (0.05, 0.06, 0.03)),
    'arm_link_1': (5.76, (0.033, 0.0333, 0.0123)),
    'arm_link_2': (6.35, (0.0305, 0.0304, 0.011)),
    'arm_link_3': (3.5, (0.025, 0.0238, 0.0076)),
    'arm_link_4': (3.5, (0.017, 0.0164, 0.006)),
    'arm_link_5': (3.5, (0.01, 0.0087, 0.00449)),
    'arm_link_6': (1.8, (0.0049, 0.0047, 0.0036)),
    'arm_link_7': (1.2, (0.001, 0.001, 0.001)),
}
TOOL_DISC = (0.1, 0.0315, 0.01)         # assumed flange disc: mass [kg], radius, height [m]
# MIT Mini Cheetah (Katz et al. 2019; mit-biomimetics/Cheetah-Software, MiniCheetah.h, from CAD):
# mass [kg] and rotational inertia about the CoM [1e-6 kg m^2] of the body and of one left leg's
# abad, hip and knee links. The file's one declared deviation: the hip's izz 408 -> 530 (the
# published matrix violates the triangle inequality).
MINI_CHEETAH = {
    'trunk': (3.3, np.diag([11253.0, 36203.0, 42673.0])),
    'LF_hip': (0.54, np.array([[381, 58, 0.45], [58, 560, 0.95], [0.45, 0.95, 444]])),
    'LF_thigh': (0.634, np.array([[1983, 245, 13], [245, 2103, 1.5], [13, 1.5, 530]])),
    'LF_shank': (0.064, np.diag([245.0, 248.0, 6.0])),    # diag(6, 248, 245) turned about y
}
FOOT_SPHERE = (0.02, 0.02)              # assumed rubber foot: mass [kg], radius [m]

ARM7_TOTAL_MASS = sum(m for m, _ in IIWA14.values()) + TOOL_DISC[0]
ARM7_MOVING_MASS = ARM7_TOTAL_MASS - IIWA14['base'][0]              # arm_link_1..7 + tool
QUADRUPED_LEG_MASS = sum(MINI_CHEETAH[k][0] for k in ('LF_hip', 'LF_thigh', 'LF_shank')) \
    + FOOT_SPHERE[0]
QUADRUPED_TOTAL_MASS = MINI_CHEETAH['trunk'][0] + 4 * QUADRUPED_LEG_MASS


def _read(path):
    with open(path) as f:
        return f.read()


def _rpy_matrix(rpy):
    return pin.rpy.rpyToMatrix(*[float(a) for a in rpy])


def _inertia_about_com(inertial):
    """3x3 rotational inertia about the CoM in the link frame, from a urdf_parser_py inertial."""
    i = inertial.inertia
    I_local = np.array([[i.ixx, i.ixy, i.ixz], [i.ixy, i.iyy, i.iyz], [i.ixz, i.iyz, i.izz]])
    rpy = inertial.origin.rpy if inertial.origin is not None and inertial.origin.rpy else (0, 0, 0)
    R = _rpy_matrix(rpy)
    return R @ I_local @ R.T


def _assert_physical(mass, I, what, rtol=1e-9):
    """Mass > 0, inertia symmetric, positive definite and satisfying the triangle inequalities."""
    assert mass > 0, f'{what}: mass {mass} not positive'
    assert np.allclose(I, I.T, atol=1e-12), f'{what}: inertia not symmetric'
    ev = np.sort(np.linalg.eigvalsh(I))
    assert ev[0] > 0, f'{what}: inertia not positive definite, eigenvalues {ev}'
    assert ev[0] + ev[1] >= ev[2] * (1 - rtol), f'{what}: triangle inequality violated, {ev}'


def _check_urdf_inertias(robot):
    for link in robot.links:
        if link.inertial is None:
            continue
        _assert_physical(link.inertial.mass, _inertia_about_com(link.inertial), link.name)


def _check_pin_inertias(model):
    # Lumped (fixed-joint merged) inertias must still be physical; index 0 is the universe.
    for j in range(1, model.njoints):
        Y = model.inertias[j]
        _assert_physical(Y.mass, np.array(Y.inertia), f'pinocchio body {model.names[j]}')


def _total_urdf_mass(robot):
    return sum(l.inertial.mass for l in robot.links if l.inertial is not None)


def _total_pin_mass(model):
    return sum(model.inertias[j].mass for j in range(model.njoints))


def _mass_matrix_ok(model, seed=0, trials=3):
    data = model.createData()
    rng = np.random.default_rng(seed)
    for _ in range(trials):
        q = pin.normalize(model, rng.normal(size=model.nq))   # unit quaternions / (cos, sin)
        M = pin.crba(model, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        assert np.all(np.linalg.eigvalsh(M) > 0), 'mass matrix not positive definite'


# --------------------------------------------------------------------------- generators

CASES = [
    ('chain', dict(n=1)),
    ('chain', dict(n=7, seed=3)),
    ('chain', dict(n=12, seed=5, joint_types=('revolute', 'continuous', 'prismatic'))),
    ('chain', dict(n=10, seed=2, joint_types=('prismatic',))),
    ('chain', dict(n=9, seed=4, fixed_every=2)),
    ('chain', dict(n=6, seed=8, joint_types=('continuous', 'revolute'), fixed_every=1)),
    ('binary_tree', dict(n=1)),
    ('binary_tree', dict(n=15, seed=1)),
    ('binary_tree', dict(n=20, seed=7, joint_types=('revolute', 'continuous', 'prismatic'))),
    ('quadruped_like', dict(seed=3)),
    ('quadruped_like', dict(legs=2, links_per_leg=5, seed=4,
                            joint_types=('revolute', 'prismatic'))),
]


def _n_moving(fn, kw):
    if fn == 'quadruped_like':
        return kw.get('legs', 4) * kw.get('links_per_leg', 3)
    return kw['n']


@pytest.mark.parametrize('fn,kw', CASES)
def test_generated_urdf_parses_with_expected_dimensions(fn, kw):
    s = getattr(models, fn)(**kw)
    n = _n_moving(fn, kw)
    robot = URDF.from_xml_string(s)
    assert robot.get_root() == 'base'
    moving = [j for j in robot.joints if j.type != 'fixed']
    fixed = [j for j in robot.joints if j.type == 'fixed']
    assert [j.name for j in moving] == [f'joint_{i}' for i in range(n)]
    assert {j.type for j in moving} <= set(kw.get('joint_types', ('revolute',)))
    k = kw.get('fixed_every', 0)
    assert len(fixed) == (n // k if k else 0)
    names = [l.name for l in robot.links]
    assert len(names) == len(set(names)) == 1 + n + len(fixed)
    for j in moving:
        assert np.isclose(np.linalg.norm(j.axis), 1.0)
        assert np.all(np.abs(j.origin.xyz) <= 0.3)

    n_cont = sum(j.type == 'continuous' for j in moving)
    model = pin.buildModelFromXML(s)
    assert model.nv == n
    assert model.nq == n + n_cont   # Pinocchio stores a continuous joint as (cos, sin)
    assert model.njoints == n + 1   # fixed joints were merged, not turned into joints
    ff = pin.buildModelFromXML(s, pin.JointModelFreeFlyer())
    assert (ff.nq, ff.nv) == (n + n_cont + 7, n + 6)

    # Mass: nothing lost or double counted by the merge, with or without free flyer.
    total = _total_urdf_mass(robot)
    assert np.isclose(_total_pin_mass(model), total)
    assert np.isclose(_total_pin_mass(ff), total)
    _mass_matrix_ok(model)


@pytest.mark.parametrize('fn,kw', CASES)
def test_generated_inertias_are_physical(fn, kw):
    s = getattr(models, fn)(**kw)
    robot = URDF.from_xml_string(s)
    for link in robot.links:
        assert link.inertial is not None, f'{link.name} has no inertial'
        m = link.inertial.mass
        assert 0.5 <= m <= 3.0
        assert np.linalg.norm(link.inertial.origin.xyz) < 0.2
    _check_urdf_inertias(robot)
    _check_pin_inertias(pin.buildModelFromXML(s))
    _check_pin_inertias(pin.buildModelFromXML(s, pin.JointModelFreeFlyer()))


def test_inertias_are_not_trivially_aligned():
    # The generator promises rotated inertias: some inertial origins carry a rotation, so the
    # link-frame inertia has off-diagonal terms.
    robot = URDF.from_xml_string(models.chain(5, seed=0))
    off_diag = [np.abs(_inertia_about_com(l.inertial) - np.diag(np.diag(
        _inertia_about_com(l.inertial)))).max() for l in robot.links]
    assert max(off_diag) > 1e-4


def test_deterministic_for_seed():
    assert models.chain(8, seed=4, fixed_every=3) == models.chain(8, seed=4, fixed_every=3)
    assert models.binary_tree(9, seed=4) == models.binary_tree(9, seed=4)
    assert models.chain(8, seed=4) != models.chain(8, seed=5)
    assert models.binary_tree(9, seed=4) != models.binary_tree(9, seed=5)


def test_joint_types_are_drawn_from_all_requested():
    s = models.chain(40, seed=0, joint_types=('revolute', 'continuous', 'prismatic'))
    types = {j.type for j in URDF.from_xml_string(s).joints}
    assert types == {'revolute', 'continuous', 'prismatic'}


def test_binary_tree_topology():
    n = 13
    robot = URDF.from_xml_string(models.binary_tree(n, seed=2))
    parent = {j.child: j.parent for j in robot.joints}
    assert parent['link_0'] == 'base'
    for i in range(1, n):
        assert parent[f'link_{i}'] == f'link_{(i - 1) // 2}'
    model = pin.buildModelFromXML(models.binary_tree(n, seed=2))
    for i in range(1, n):
        jid = model.getJointId(f'joint_{i}')
        assert model.names[model.parents[jid]] == f'joint_{(i - 1) // 2}'


def test_chain_fixed_links_are_lumped_into_their_parent():
    # With fixed_every=2, fixed_link_1 hangs off link_1 and link_2 hangs off fixed_link_1:
    # Pinocchio's body of joint_1 must carry link_1 + fixed_link_1.
    s = models.chain(4, seed=6, fixed_every=2)
    robot = URDF.from_xml_string(s)
    mass = {l.name: l.inertial.mass for l in robot.links}
    parent = {j.child: j.parent for j in robot.joints}
    assert parent['fixed_link_1'] == 'link_1' and parent['link_2'] == 'fixed_link_1'
    assert parent['fixed_link_3'] == 'link_3'
    model = pin.buildModelFromXML(s)
    body_mass = {model.names[j]: model.inertias[j].mass for j in range(1, model.njoints)}
    assert np.isclose(body_mass['joint_0'], mass['link_0'])
    assert np.isclose(body_mass['joint_1'], mass['link_1'] + mass['fixed_link_1'])
    assert np.isclose(body_mass['joint_3'], mass['link_3'] + mass['fixed_link_3'])


@pytest.mark.parametrize('call', [
    lambda: models.chain(0),
    lambda: models.chain(3, joint_types=('floating',)),
    lambda: models.chain(3, joint_types=()),
    lambda: models.chain(3, fixed_every=-1),
    lambda: models.binary_tree(0),
    lambda: models.quadruped_like(legs=0),
])
def test_bad_arguments_raise(call):
    with pytest.raises(ValueError):
        call()


# --------------------------------------------------------------------------- bundled robots

def _check_limits(robot):
    for j in robot.joints:
        if j.type == 'fixed':
            continue
        assert j.limit is not None, j.name
        assert j.limit.lower < 0 < j.limit.upper, j.name
        assert j.limit.velocity > 0 and j.limit.effort > 0, j.name


def test_arm7():
    s = _read(ARM7)
    robot = URDF.from_xml_string(s)
    assert robot.get_root() == 'base'
    moving = [j.name for j in robot.joints if j.type != 'fixed']
    assert moving == [f'arm_joint_{i}' for i in range(1, 8)]
    assert [j.type for j in robot.joints if j.type == 'fixed'] == ['fixed']
    _check_limits(robot)
    _check_urdf_inertias(robot)
    assert np.isclose(_total_urdf_mass(robot), ARM7_TOTAL_MASS)
    links = {link.name: link for link in robot.links}
    for name, (mass, moments) in IIWA14.items():      # the published iiwa 14 links
        assert np.isclose(links[name].inertial.mass, mass), name
        principal = np.linalg.eigvalsh(_inertia_about_com(links[name].inertial))
        assert np.allclose(principal, sorted(moments), rtol=1e-9, atol=0), name
    m, r, h = TOOL_DISC                               # solid cylinder about its CoM
    assert np.isclose(links['tool'].inertial.mass, m)
    np.testing.assert_allclose(_inertia_about_com(links['tool'].inertial),
                               np.diag([m * (3 * r * r + h * h) / 12] * 2 + [m * r * r / 2]),
                               rtol=1e-3)

    model = pin.buildModelFromXML(s)
    assert (model.nq, model.nv) == (7, 7)
    assert list(model.names)[1:] == moving
    _check_pin_inertias(model)
    assert np.isclose(_total_pin_mass(model), ARM7_TOTAL_MASS)
    assert np.isclose(sum(model.inertias[j].mass for j in range(1, 8)), ARM7_MOVING_MASS)
    # the tool was merged into arm_link_7
    assert np.isclose(model.inertias[7].mass, IIWA14['arm_link_7'][0] + TOOL_DISC[0])
    # iiwa 14 R820 data sheet: flange 0.36 + 0.42 + 0.40 + 0.126 = 1.306 m above the base at q = 0
    data = model.createData()
    pin.framesForwardKinematics(model, data, np.zeros(7))
    flange = data.oMf[model.getFrameId('tool')].translation
    assert np.allclose(flange, [0, 0, 1.306], atol=1e-9)
    # KUKA specification limits (A1 +-170 deg, A7 +-175 deg; A1 320 N m, A7 40 N m)
    lim = {j.name: j.limit for j in robot.joints if j.limit is not None}
    assert np.isclose(np.degrees(lim['arm_joint_1'].upper), 170, atol=1e-4)
    assert np.isclose(np.degrees(lim['arm_joint_7'].upper), 175, atol=1e-4)
    assert lim['arm_joint_1'].effort == 320 and lim['arm_joint_7'].effort == 40
    _mass_matrix_ok(model)


def test_quadruped():
    s = _read(QUADRUPED)
    robot = URDF.from_xml_string(s)
    assert robot.get_root() == 'trunk'
    legs = ('LF', 'RF', 'LH', 'RH')
    expected = [f'{leg}_{j}' for leg in legs for j in ('HAA', 'HFE', 'KFE')]
    moving = [j.name for j in robot.joints if j.type != 'fixed']
    assert moving == expected
    assert sum(j.type == 'fixed' for j in robot.joints) == 5   # 4 feet + imu
    _check_limits(robot)
    _check_urdf_inertias(robot)
    assert np.isclose(_total_urdf_mass(robot), QUADRUPED_TOTAL_MASS)
    links = {link.name: link for link in robot.links}
    for name, (mass, inertia) in MINI_CHEETAH.items():   # the published Mini Cheetah bodies
        assert np.isclose(links[name].inertial.mass, mass), name
        np.testing.assert_allclose(_inertia_about_com(links[name].inertial), 1e-6 * inertia,
                                   rtol=1e-9, atol=1e-12, err_msg=name)
    m, r = FOOT_SPHERE                                   # solid sphere: 2/5 m r^2
    for leg in legs:
        foot = links[f'{leg}_foot'].inertial
        assert np.isclose(foot.mass, m)
        np.testing.assert_allclose(_inertia_about_com(foot), np.eye(3) * 0.4 * m * r * r,
                                   rtol=1e-9)

    model = pin.buildModelFromXML(s)
    assert (model.nq, model.nv) == (12, 12)
    assert sorted(model.names[1:]) == sorted(expected)
    _check_pin_inertias(model)
    assert np.isclose(_total_pin_mass(model), QUADRUPED_TOTAL_MASS)
    # trunk fixed: 4 branches, each carrying one leg's mass; the trunk is not a moving body
    roots = [j for j in range(1, model.njoints) if model.parents[j] == 0]
    assert sorted(model.names[j] for j in roots) == sorted(f'{leg}_HAA' for leg in legs)
    for leg in legs:
        ids = [model.getJointId(f'{leg}_{j}') for j in ('HAA', 'HFE', 'KFE')]
        assert model.parents[ids[1]] == ids[0] and model.parents[ids[2]] == ids[1]
        assert np.isclose(sum(model.inertias[i].mass for i in ids), QUADRUPED_LEG_MASS)
        assert np.isclose(model.inertias[ids[2]].mass,                 # foot merged into shank
                          MINI_CHEETAH['LF_shank'][0] + FOOT_SPHERE[0])
    _mass_matrix_ok(model)

    ff = pin.buildModelFromXML(s, pin.JointModelFreeFlyer())
    assert (ff.nq, ff.nv) == (19, 18)
    assert np.isclose(ff.inertias[1].mass, MINI_CHEETAH['trunk'][0])   # trunk (+ massless imu)
    assert np.isclose(_total_pin_mass(ff), QUADRUPED_TOTAL_MASS)
    _check_pin_inertias(ff)
    _mass_matrix_ok(ff)

    # Geometry at q = 0 (Mini Cheetah): legs straight down, feet at hip + (0, +-0.062, -0.404)
    data = model.createData()
    pin.framesForwardKinematics(model, data, np.zeros(12))
    for leg, sx, sy in (('LF', 1, 1), ('RF', 1, -1), ('LH', -1, 1), ('RH', -1, -1)):
        foot = data.oMf[model.getFrameId(f'{leg}_foot')].translation
        assert np.allclose(foot, [0.19 * sx, 0.111 * sy, -0.404], atol=1e-9), leg


def test_quadruped_is_left_right_symmetric():
    # Right legs are the y-mirror of left legs: c -> Sc and I -> S I S with S = diag(1, -1, 1).
    model = pin.buildModelFromXML(_read(QUADRUPED))
    Sy = np.diag([1.0, -1.0, 1.0])
    for front in ('F', 'H'):
        for j in ('HAA', 'HFE', 'KFE'):
            left = model.inertias[model.getJointId(f'L{front}_{j}')]
            right = model.inertias[model.getJointId(f'R{front}_{j}')]
            assert np.isclose(left.mass, right.mass)
            assert np.allclose(Sy @ left.lever, right.lever, atol=1e-12)
            assert np.allclose(Sy @ left.inertia @ Sy, right.inertia, atol=1e-12)
            placement_l = model.jointPlacements[model.getJointId(f'L{front}_{j}')].translation
            placement_r = model.jointPlacements[model.getJointId(f'R{front}_{j}')].translation
            assert np.allclose(Sy @ placement_l, placement_r, atol=1e-12)

    # Consequence for the dynamics: the mass matrix at q = 0 matches for the LF and RF blocks.
    data = model.createData()
    M = pin.crba(model, data, np.zeros(12))
    M = np.triu(M) + np.triu(M, 1).T
    idx = {n: model.joints[model.getJointId(n)].idx_v for n in model.names[1:]}
    lf = [idx[f'LF_{j}'] for j in ('HAA', 'HFE', 'KFE')]
    rf = [idx[f'RF_{j}'] for j in ('HAA', 'HFE', 'KFE')]
    S = np.diag([-1.0, 1.0, 1.0])   # a mirrored HAA rotates the other way; HFE/KFE do not
    assert np.allclose(M[np.ix_(lf, lf)], S @ M[np.ix_(rf, rf)] @ S, atol=1e-12)
