"""URDF ingestion on small hand-written fixtures (test/fixtures/urdf/): the tolerant ones load
with the expected warning and the dynamics of the robot they describe; the broken ones fail
with a ValueError naming the element.  Plus: descriptions from strings only, a robot without a
moving joint (nv = 0 fixed, nv = 6 floating), and a 2,000-link chain (the walk is iterative)."""

import os
import re
import warnings

import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics import testing as models

pytestmark = pytest.mark.core

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures', 'urdf')


def fixture(name):
    return os.path.join(FIXTURES, name + '.urdf')


def text(name):
    with open(fixture(name), encoding='utf-8') as f:
        return f.read()


def load_quietly(source, **kw):
    """Load, asserting that no URDFWarning is issued."""
    with warnings.catch_warnings():
        warnings.simplefilter('error', rd.URDFWarning)
        model = rd.load_urdf(source, **kw)
    assert model.warnings == ()
    return model


def load_warning(source, match, **kw):
    """Load, asserting exactly one warning, issued once, that matches ``match``."""
    with pytest.warns(rd.URDFWarning) as record:
        model = rd.load_urdf(source, **kw)
    assert len(model.warnings) == 1 and len(record) == 1, model.warnings
    assert str(record[0].message).endswith(model.warnings[0])
    assert re.search(match, model.warnings[0]), model.warnings[0]
    return model


@pytest.fixture(scope='module')
def clean():
    return load_quietly(fixture('clean_arm'))


def configurations(model, n=4, seed=3):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-2, 2, model.nq) for _ in range(n)]


def test_clean_arm_agrees_with_pinocchio(clean):
    import pinocchio as pin  # a test dependency: missing means failing, not skipping
    pm = pin.buildModelFromUrdf(fixture('clean_arm'))
    pd = pm.createData()
    assert list(pm.names)[1:] == clean.joint_names == ['shoulder', 'elbow']
    for q in configurations(clean):
        M = pin.crba(pm, pd, q)
        assert np.allclose(rd.mass_matrix(clean, q), np.triu(M) + np.triu(M, 1).T, rtol=0, atol=1e-14)
        assert np.allclose(rd.gravity(clean, q), pin.computeGeneralizedGravity(pm, pd, q), rtol=0, atol=1e-13)


@pytest.mark.parametrize('name, warning', [
    ('texture_without_filename', None),
    ('transmission_odd_format', None),
    ('scale_four_elements', None),
    ('two_geometries_in_visual', None),
    ('xml_declaration_after_whitespace', None),
    ('unknown_elements', r'unknown elements ignored: <joint>/<hardware_offset>, <link>/<contact>, <vendor_calibration>'),
    ('mimic_missing_target', r"'elbow' \(mimics 'index_q1'\)"),
])
def test_tolerant_fixture_loads_with_the_dynamics_of_the_clean_arm(clean, name, warning):
    for source in (fixture(name), text(name)):
        model = load_quietly(source) if warning is None else load_warning(source, warning)
        assert model.joint_names == clean.joint_names and model.mimic == {}
        for q in configurations(model):
            assert np.array_equal(rd.mass_matrix(model, q), rd.mass_matrix(clean, q))
            assert np.array_equal(rd.gravity(model, q), rd.gravity(clean, q))


def test_massless_finger_loads_singular_and_forward_dynamics_refuses(clean):
    model = load_warning(fixture('massless_finger'), r"moving links that carry no mass.*'finger'")
    assert model.joint_names == ['shoulder', 'elbow', 'finger_joint']
    q, v = np.array([0.3, -0.5, 0.2]), np.array([0.4, 1.0, -2.0])
    d = rd.dynamics(model, q, v)
    assert np.all(d.M[2] == 0.0) and np.all(d.M[:, 2] == 0.0) and d.g[2] == 0.0
    assert np.array_equal(d.M[:2, :2], rd.mass_matrix(clean, q[:2]))
    assert np.array_equal(d.g[:2], rd.gravity(clean, q[:2]))
    with pytest.raises(ValueError, match=r"not positive definite.*'finger'"):
        rd.forward_dynamics(model, q, v, np.zeros(3))
    # A payload on the finger makes M regular again: forward dynamics inverts inverse dynamics.
    loaded = rd.attach_payload(model, 'finger', 0.2, com=(0.05, 0, 0))
    a = np.array([1.0, -2.0, 3.0])
    tau = rd.inverse_dynamics(loaded, q, v, a)
    assert np.allclose(rd.forward_dynamics(loaded, q, v, tau), a, rtol=0, atol=1e-9)


def _drone_parts():
    """(mass, CoM, inertia about the base origin) of the drone, summed by hand from the file."""
    rotors = 0.05 * np.array([[0.2, 0, 0.05], [0, 0.2, 0.05], [-0.2, 0, 0.05], [0, -0.2, 0.05]]) / 0.05
    m = 1.2 + 4 * 0.05
    com = 0.05 * rotors.sum(axis=0) / m
    I_o = np.diag([0.01, 0.01, 0.018]) + sum(0.05 * (r @ r * np.eye(3) - np.outer(r, r)) for r in rotors)
    return m, com, I_o


def test_single_body_fixed_base_has_no_coordinates():
    model = load_warning(fixture('single_body_drone'), 'no moving joint: nv = 0')
    assert (model.nq, model.nv, model.nbodies, model.joint_names) == (0, 0, 0, [])
    q = np.zeros(0)
    assert rd.mass_matrix(model, q).shape == (0, 0) and rd.gravity(model, q).shape == (0,)
    d = rd.dynamics(model, q, q)
    assert [x.shape for x in d] == [(0, 0), (0, 0), (0, 0), (0,)]
    assert rd.christoffel(model, q).shape == (0, 0, 0)
    assert rd.inverse_dynamics(model, q, q, q).shape == (0,)
    assert rd.forward_dynamics(model, q, q, q).shape == (0,)
    assert [x.shape for x in rd.observer_terms(model, q, q)] == [(0,)] * 3
    assert rd.dynamics_batch(model, np.zeros((2, 0)), np.zeros((2, 0))).M.shape == (2, 0, 0)
    R, p = rd.link_placement(model, q, 'rotor_1')
    assert np.array_equal(R, np.eye(3)) and np.allclose(p, [0, 0.2, 0.05])
    assert rd.link_jacobian(model, q, 'rotor_1').shape == (6, 0)
    with pytest.raises(ValueError, match=r'q must have shape \(0,\)'):
        rd.gravity(model, np.zeros(1))


def test_single_body_floating_base_is_one_free_body():
    model = load_warning(fixture('single_body_drone'), 'single free-floating body', floating_base=True)
    assert (model.nq, model.nv, model.joint_names) == (7, 6, [])
    m, c, I_o = _drone_parts()
    cx = np.array([[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]])
    rng = np.random.default_rng(5)
    for _ in range(3):
        quat = rng.normal(size=4)
        quat /= np.linalg.norm(quat)
        q = np.concatenate([rng.uniform(-1, 1, 3), quat])
        # Free joint, base twist in the base frame (linear first): M is the spatial inertia of
        # the body about its origin, whatever q is; g = J^T (weight) in the base frame.
        expected = np.block([[m * np.eye(3), -m * cx], [m * cx, I_o]])
        assert np.allclose(rd.mass_matrix(model, q), expected, rtol=0, atol=1e-14)
        R, _ = rd.link_placement(model, q, 'base_link')
        f = R.T @ np.array([0.0, 0.0, m * 9.81])
        assert np.allclose(rd.gravity(model, q), np.concatenate([f, np.cross(c, f)]), rtol=0, atol=1e-13)
    a = rd.forward_dynamics(model, model.neutral(), np.zeros(6), np.zeros(6))
    assert np.allclose(a[:3], [0, 0, -9.81]) and np.allclose(a[3:], 0, atol=1e-12)    # free fall


@pytest.mark.parametrize('name, message', [
    ('truncated', r'malformed URDF XML inside <robot name="arm"> / <link name="lower"> / <inertial>'),
    ('joint_cycle', r"joint cycle \(the URDF has no root link\): .*'wrap'"),
    ('detached_cycle', r"joint cycle detached from the tree: 'loop_ba' -> 'loop_ab'"),
    ('two_roots', r"2 root links \('base', 'tool'\)"),
    ('joint_to_missing_link', r"joint 'elbow': its child link 'forearm' does not exist"),
    ('duplicate_joint_names', r"two joints are named 'shoulder'"),
    ('nan_origin', r"joint 'elbow' <origin>: <origin xyz=\"0 NaN 0.4\"> is not finite"),
    ('negative_mass', r"link 'lower' has a negative mass"),
    ('negative_inertia', r"link 'lower': <inertia> has a negative moment of inertia"),
])
def test_broken_fixture_fails_naming_the_element(name, message):
    for source in (fixture(name), text(name)):
        with pytest.raises(ValueError, match=message):
            rd.load_urdf(source)
    with pytest.raises(ValueError, match=message):
        rd.load_urdf_string(text(name))


def test_inconsistent_inertia_warns_by_default_and_strict_refuses(clean):
    model = load_warning(fixture('triangle_inequality'), r"triangle inequality.*'lower' \(principal moments")
    assert model.nv == 2
    with pytest.raises(ValueError, match=r"link 'lower': <inertia> is not physically consistent"):
        rd.load_urdf(fixture('triangle_inequality'), strict_inertia=True)
    assert rd.load_urdf(fixture('clean_arm'), strict_inertia=True).nv == 2


def test_string_only_loading_never_reads_files_or_runs_xacro(tmp_path):
    path = tmp_path / 'arm.urdf.xacro'
    path.write_text(text('clean_arm'))
    for source in (str(path), fixture('clean_arm'), 'robot.urdf', ' not xml'):
        with pytest.raises(ValueError, match='not XML'):
            rd.load_urdf_string(source)
        with pytest.raises(ValueError, match='not XML'):
            rd.load_urdf(source, allow_files=False)
    assert rd.load_urdf(str(path)).nv == 2                    # with files allowed, xacro runs
    for empty in ('', '  \n', b''):
        with pytest.raises(ValueError, match='robot description is empty'):
            rd.load_urdf_string(empty)
    with pytest.raises(ValueError, match='must be an XML string$'):
        rd.load_urdf_string(path)                             # a PathLike is not a string
    assert rd.load_urdf_string(text('clean_arm').encode()).joint_names == ['shoulder', 'elbow']
    with pytest.raises(ValueError, match=r'the root element is <html>, not <robot>'):
        rd.load_urdf_string('<html><body/></html>')


def test_warnings_are_reported_once_per_load():
    # Every link of a 30-link chain carries the same unknown element and an inconsistent inertia:
    # one warning for each kind, naming the element and counting it.
    xml = models.chain(30, seed=2)
    xml = xml.replace('<inertial>', '<sensor_mount/><inertial>')
    xml = xml.replace('</robot>', '<link name="x"><inertial><mass value="1"/><inertia ixx="1" ixy="0" '
                      'ixz="0" iyy="1" iyz="0" izz="3"/></inertial></link><joint name="jx" '
                      'type="fixed"><parent link="link_0"/><child link="x"/></joint></robot>')
    with pytest.warns(rd.URDFWarning) as record:
        model = rd.load_urdf(xml)
    assert len(record) == len(model.warnings) == 2, model.warnings
    assert any(w.endswith('<link>/<sensor_mount> (31)') for w in model.warnings)
    assert any("'x' (principal moments 1, 1, 3)" in w for w in model.warnings)


def test_a_2000_link_chain_loads_and_its_gravity_is_the_potential_gradient():
    # (Pinocchio's Data for nv = 2000 does not fit in memory here, so the check is the
    # identity g = dV/dq along random directions, V from the body placements alone.)
    xml = models.chain(2000, seed=4, fixed_every=7)
    model = rd.load_urdf_string(xml)
    assert model.nv == model.nbodies == 2000 and len(model.link_frames) == 2001 + 2000 // 7
    assert model.joint_names == [f'joint_{i}' for i in range(2000)]

    data = rd.Data(model)

    def potential(q):
        rd.link_placement(model, q, model.body_names[0], data=data)   # leaves every body's placement in data
        com = data.pos + np.einsum('bij,bj->bi', data.R, model.com)
        return -float(model.mass @ (com @ model.gravity))

    rng = np.random.default_rng(0)
    q = rng.uniform(-0.3, 0.3, model.nq)
    g = rd.gravity(model, q)
    h = 1e-6
    for _ in range(3):
        d = rng.normal(size=model.nv)
        slope = (potential(q + h * d) - potential(q - h * d)) / (2 * h)
        assert abs(g @ d - slope) <= 1e-7 * abs(slope)


def test_joint_limits_follow_the_urdf_defaults(clean):
    assert clean.joint_limits['shoulder'] == dict(lower=-2.0, upper=2.0, velocity=2.0, effort=40.0)
    xml = text('clean_arm').replace('<limit lower="-2" upper="2" effort="20" velocity="3"/>',
                                    '<limit effort="20" velocity="nan"/>')
    model = load_warning(xml, r"joint 'elbow': <limit velocity=\"nan\"> is not a number: ignored")
    assert model.joint_limits['elbow'] == dict(lower=0.0, upper=0.0, velocity=None, effort=20.0)
    model = load_quietly(xml.replace('type="revolute"', 'type="continuous"').replace('velocity="nan"', ''))
    assert model.joint_limits['elbow'] == dict(lower=None, upper=None, velocity=None, effort=20.0)


def test_a_placeholder_inertia_merged_into_a_real_body_is_not_reported():
    # Go1's 'base' link: mass 1e-6 and every inertia entry 1e-6 (principal moments 0, 0, 3e-6:
    # the triangle inequality fails), fixed to the trunk, whose merged inertia is consistent.
    dummy = ('<link name="dummy"><inertial><mass value="1e-6"/><inertia ixx="1e-6" ixy="1e-6" '
             'ixz="1e-6" iyy="1e-6" iyz="1e-6" izz="1e-6"/></inertial></link>')
    xml = models.chain(3, seed=1).replace('</robot>', dummy + '<joint name="jd" type="fixed">'
                                          '<parent link="link_1"/><child link="dummy"/></joint></robot>')
    model = rd.load_urdf(xml)
    assert not any('triangle' in w for w in model.warnings), model.warnings
    # the same inertia as a moving body of its own reaches the dynamics: reported
    alone = xml.replace('<joint name="jd" type="fixed">', '<joint name="jd" type="revolute">'
                        '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/>')
    with pytest.warns(rd.URDFWarning, match=r"'dummy' \(principal moments"):
        rd.load_urdf(alone)
