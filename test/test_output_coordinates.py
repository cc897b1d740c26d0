"""Output coordinates through one interface (rd.output_coordinates): names and sizes per
choice, the identity choices passing the results through untouched, the refusals, and the
numbers of every choice checked independently: Mbar = A^T M A with A from finite differences
of the configuration map, the kinetic energy unchanged, Mbar_dot = Cbar + Cbar^T by finite
differences along the motion, Cbar = Gammabar vbar, the CoM against Pinocchio."""
import os

import numpy as np
import pytest

import ros_dynamics as rd
from _oracle import PinocchioOracle, random_state, rel_err

pytestmark = pytest.mark.core

BASE = ('floating_base/linear_x', 'floating_base/linear_y', 'floating_base/linear_z',
        'floating_base/angular_x', 'floating_base/angular_y', 'floating_base/angular_z')
GRIPPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures', 'urdf',
                       'gripper_mimic.urdf')


def test_names_and_sizes():
    assert rd.BASE_DOF_NAMES == BASE and rd.COORDINATES == ('joint', 'mimic_reduced', 'center_of_mass')
    quad = rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)
    joints = list(quad.joint_names)
    oc = rd.output_coordinates(quad, 'joint')
    assert oc.names == list(BASE) + joints and (oc.nq, oc.nv) == (quad.nq, quad.nv)
    assert oc.joint_names == joints and oc.identity and oc.kind == 'joint'
    oc = rd.output_coordinates(quad, 'center_of_mass')
    assert oc.names[:3] == ['center_of_mass/x', 'center_of_mass/y', 'center_of_mass/z']
    assert oc.names[3:] == list(BASE[3:]) + joints and (oc.nq, oc.nv) == (quad.nq, quad.nv)
    assert not oc.identity and oc.kind == 'center_of_mass'
    gripper = rd.load_urdf(GRIPPER, floating_base=True)
    oc = rd.output_coordinates(gripper, 'mimic_reduced')
    assert oc.names == list(BASE) + ['wrist_roll', 'wrist_pitch', 'finger_left']
    assert (oc.nq, oc.nv) == (10, 9) and not oc.identity
    fixed = rd.load_urdf(GRIPPER)
    oc = rd.output_coordinates(fixed, 'mimic_reduced')
    assert oc.names == ['wrist_roll', 'wrist_pitch', 'finger_left'] and (oc.nq, oc.nv) == (3, 3)


def test_identity_choices_pass_the_arrays_through():
    arm = rd.load_urdf(rd.bundled_urdf('arm7'))
    q, v = np.full(7, 0.3), np.full(7, -0.2)
    d = rd.dynamics(arm, q, v)
    G = rd.christoffel(arm, q)
    for kind in ('joint', 'mimic_reduced'):          # arm7 has no mimic joints
        oc = rd.output_coordinates(arm, kind)
        out = oc.apply(q, v, d, G)
        assert oc.identity and out.q is q and out.v is v and out.d is d and out.gamma is G
        assert oc.apply(q, v, d).gamma is None
        assert oc.names == list(arm.joint_names) and oc.joint_map is None
        # the same calls without precomputed terms compute them
        qb, vb = oc.state(q, v)
        assert np.array_equal(qb, q) and np.array_equal(vb, v)
        assert np.array_equal(oc.dynamics(q, v).M, d.M)
        assert np.array_equal(oc.christoffel(q), G)
        qf, vf = oc.full_state(q, v)
        assert np.array_equal(qf, q) and np.array_equal(vf, v)


def test_refusals():
    arm = rd.load_urdf(rd.bundled_urdf('arm7'))
    with pytest.raises(ValueError, match='floating'):
        rd.output_coordinates(arm, 'center_of_mass')
    with pytest.raises(ValueError, match="'joint', 'mimic_reduced', 'center_of_mass'.*'minimal'"):
        rd.output_coordinates(arm, 'minimal')


def _fd_configuration_map(oc, qbar, vbar, eps=1e-6):
    """A = dq/dqbar from central differences of full_state's configuration (the rates of the
    free joint from the quaternion's change: omega = 2 quat^-1 dquat in the base frame)."""
    model = oc.model
    cols = []
    for k in range(oc.nv):
        # step qbar along the k-th velocity coordinate (quaternion: a body rotation)
        dv = np.zeros(oc.nv)
        dv[k] = eps
        qp = rd.configuration.integrate(model, qbar, dv) if model.floating_base else qbar + dv
        qm = rd.configuration.integrate(model, qbar, -dv) if model.floating_base else qbar - dv
        (q1, _), (q0, _) = oc.full_state(qp, vbar), oc.full_state(qm, vbar)
        cols.append(_difference(model, q1, q0) / (2 * eps))
    return np.array(cols).T


def _difference(model, q1, q0):
    """The velocity that moves q0 to q1 in unit time (first order): linear part in the base
    frame of q0, angular from the quaternion difference."""
    if not model.floating_base:
        return q1 - q0
    R0 = rd.configuration.quaternion_matrix(*q0[3:7])
    R1 = rd.configuration.quaternion_matrix(*q1[3:7])
    W = R0.T @ R1
    omega = 0.5 * np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]])
    return np.r_[R0.T @ (q1[0:3] - q0[0:3]), omega, q1[7:] - q0[7:]]


@pytest.mark.parametrize('kind, path, floating', [
    ('mimic_reduced', GRIPPER, False), ('mimic_reduced', GRIPPER, True),
    ('center_of_mass', rd.bundled_urdf('quadruped'), True), ('joint', rd.bundled_urdf('arm7'), False)])
def test_terms_in_output_coordinates_are_checked_independently(kind, path, floating):
    model = rd.load_urdf(path, floating_base=floating)
    oc = rd.output_coordinates(model, kind)
    rng = np.random.default_rng(11)
    q, v, _ = random_state(model, rng)
    if kind == 'mimic_reduced':                     # a state on the mimic constraint
        q, v = oc.full_state(*oc.state(q, v))
    qbar, vbar = oc.state(q, v)
    d = rd.dynamics(model, q, v)
    out = oc.apply(q, v, d, rd.christoffel(model, q))
    np.testing.assert_array_equal(out.q, qbar)
    np.testing.assert_array_equal(out.v, vbar)
    # the full state back from the output one
    q2, v2 = oc.full_state(qbar, vbar)
    assert rel_err(q2, q) < 1e-12 and rel_err(v2, v) < 1e-12
    # Mbar = A^T M A, A from finite differences of the configuration map (CoM: v = A vbar at q
    # holds for the rates, and the map of positions has the same derivative, Remark 5)
    A = _fd_configuration_map(oc, qbar, vbar) if kind != 'center_of_mass' else None
    if A is not None:
        assert rel_err(out.d.M, A.T @ d.M @ A) < 1e-7
        assert rel_err(out.d.g, A.T @ d.g) < 1e-7
    # the kinetic energy does not depend on the coordinates
    assert abs(vbar @ out.d.M @ vbar - v @ d.M @ v) < 1e-10 * (v @ d.M @ v)
    # Mbar_dot = Cbar + Cbar^T (admissible), and both equal d/dt Mbar along the motion
    np.testing.assert_allclose(out.d.Mdot, out.d.C + out.d.C.T, rtol=0, atol=1e-10)
    h = 1e-6
    step = lambda s: rd.configuration.integrate(model, q, s * v) if floating else q + s * v
    Mb = lambda qq: oc.dynamics(qq, v).M
    dMdt = (Mb(step(h)) - Mb(step(-h))) / (2 * h)
    assert rel_err(out.d.Mdot, dMdt) < 1e-6
    # C = Gamma v in the output coordinates: Algorithm 2 mapped agrees with Algorithm 1 mapped
    assert rel_err(np.einsum('ijk,k->ij', out.gamma, vbar), out.d.C) < 1e-10
    if kind != 'mimic_reduced':                     # an invertible map: Lambda is invariant
        return
    nodes = [('left_finger', (0, 0.01, 0.05)), ('right_tip', (0, 0, 0.03))]
    J = np.vstack([rd.link_jacobian(model, q, link, x)[:3] for link, x in nodes]) @ A
    dense = J @ np.linalg.solve(A.T @ d.M @ A, J.T)
    assert rel_err(oc.contact_compliance(q, nodes), dense) < 1e-7


def test_center_of_mass_state_matches_pinocchio():
    import pinocchio  # noqa: F401 - a test dependency: missing fails
    path = rd.bundled_urdf('quadruped')
    model = rd.load_urdf(path, floating_base=True)
    oc = rd.output_coordinates(model, 'center_of_mass')
    pin = PinocchioOracle(path, model)
    q, v, _ = random_state(model, np.random.default_rng(4))
    qbar, vbar = oc.state(q, v)
    pin.pin.centerOfMass(pin.pm, pin.pd, pin.q(q), pin.v(v))
    np.testing.assert_allclose(qbar[0:3], pin.pd.com[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(vbar[0:3], pin.pd.vcom[0], rtol=0, atol=1e-12)
    # M block-diagonal with m 1_3, g's CoM entries -m gravity
    Mbar = oc.dynamics(q, v).M
    m = model.total_mass()
    np.testing.assert_allclose(Mbar[0:3, 0:3], m * np.eye(3), rtol=0, atol=1e-10)
    np.testing.assert_allclose(Mbar[0:3, 3:], 0.0, rtol=0, atol=1e-10)
    np.testing.assert_allclose(oc.dynamics(q, v).g[0:3], -m * model.gravity, rtol=0, atol=1e-10)


def test_contact_compliance_and_joint_map_per_choice():
    """mimic_reduced: Lambdabar of the constrained system (checked against a dense computation
    in test_coordinates.py) and the joint map (q = E qbar + offset, written out here from the
    URDF); joint and center_of_mass: the O(N) Lambda, which an invertible change of
    coordinates leaves as it is (checked here densely: J A (A^T M A)^-1 A^T J^T with the
    centre-of-mass A)."""
    gripper = rd.load_urdf(GRIPPER)
    mc = rd.MimicCoordinates(gripper)
    nodes = [('left_finger', (0, 0.01, 0.05)), ('right_tip', (0, 0, 0.03))]
    q = mc.q(np.array([0.3, -0.4, 0.02]))
    oc = rd.output_coordinates(gripper, 'mimic_reduced')
    np.testing.assert_array_equal(oc.contact_compliance(q, nodes), mc.contact_compliance(q, nodes))
    names, E, offset = oc.joint_map
    assert names == ['wrist_roll', 'wrist_pitch', 'finger_left']
    np.testing.assert_array_equal(E, [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, -1], [0, 0, -2]])
    np.testing.assert_array_equal(offset, [0, 0, 0, 0, 0.1])
    oc = rd.output_coordinates(gripper, 'joint')
    assert oc.joint_map is None
    np.testing.assert_array_equal(oc.contact_compliance(q, nodes),
                                  rd.contact_compliance(gripper, q, nodes))
    quad = rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)
    rng = np.random.default_rng(3)
    q = np.r_[rng.uniform(-1, 1, 3), rng.normal(size=4), rng.uniform(-1, 1, quad.nv - 6)]
    q[3:7] /= np.linalg.norm(q[3:7])
    feet = [(quad.body_names[-1], (0, 0, -0.1)), (quad.body_names[3], (0.02, 0, 0))]
    oc = rd.output_coordinates(quad, 'center_of_mass')
    assert oc.joint_map is None
    lam = oc.contact_compliance(q, feet, spatial=True)
    np.testing.assert_array_equal(lam, rd.contact_compliance(quad, q, feet, spatial=True))
    M = rd.mass_matrix(quad, q)
    A = oc.velocity_map(M, rd.link_placement(quad, q, quad.root_link)[0])
    J = np.vstack([rd.link_jacobian(quad, q, link, x) for link, x in feet]) @ A
    dense = J @ np.linalg.solve(A.T @ M @ A, J.T)
    assert np.abs(lam - dense).max() < 1e-10 * np.abs(dense).max()
