"""Change of coordinates (Echeandia & Wensing 2021, Sec. 3.3, Theorem 1) applied to mimic joints, and the
operational-space compliance of the mimic-constrained system."""

import os

import numpy as np

import ros_dynamics as rd
from test_urdf import joint, link, robot
import pytest

pytestmark = pytest.mark.core

GRIPPER = os.path.join(os.path.dirname(__file__), 'fixtures', 'urdf', 'gripper_mimic.urdf')

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
    model = rd.load_urdf(GRIPPER)
    mc = rd.MimicCoordinates(model)
    assert mc.independent == ['wrist_roll', 'wrist_pitch', 'finger_left']
    q = mc.q(np.array([0.3, -0.2, 0.015]))
    fr, kn = q[model.joint_q_index('finger_right')], q[model.joint_q_index('knuckle')]
    assert np.isclose(fr, -0.015) and np.isclose(kn, 2 * fr + 0.1)
    assert np.allclose(mc.A[:, 2], [0, 0, 1, -1, -2])


# -- operational-space compliance of the reduced (mimic-constrained) system --------------------

# nodes on both fingers (coupled by the mimic relation), the palm and the world-fixed mount
GRIPPER_NODES = [('left_finger', (0.0, 0.01, 0.05)), ('right_tip', (0.0, -0.005, 0.03)),
                 ('palm', (0.02, 0.0, 0.08)), ('mount', (0.0, 0.0, 0.0))]


def _gripper_S(model):
    """q = S qbar + offset written out from the URDF's <mimic> tags (not from MimicCoordinates):
    qbar = (wrist_roll, wrist_pitch, finger_left), finger_right = -finger_left,
    knuckle = 2 finger_right + 0.1 = -2 finger_left + 0.1."""
    S = np.zeros((model.nv, 3))
    for i, name in enumerate(['wrist_roll', 'wrist_pitch', 'finger_left']):
        S[model.joint_v_index(name), i] = 1.0
    S[model.joint_v_index('finger_right'), 2] = -1.0
    S[model.joint_v_index('knuckle'), 2] = -2.0
    offset = np.zeros(model.nq)
    offset[model.joint_q_index('knuckle')] = 0.1
    return S, offset


def _gripper_qbars():
    rng = np.random.default_rng(13)
    return [np.r_[rng.uniform(-1.5, 1.5, 2), rng.uniform(0.0, 0.04)] for _ in range(3)]


def test_mimic_contact_compliance_is_that_of_the_constrained_system():
    """Lambdabar = Jbar (S^T M S)^-1 Jbar^T with Jbar the finite-difference Jacobian of the nodes'
    world positions in qbar (through the hand-built S), M from rd.mass_matrix; it differs from
    the free model's J M^-1 J^T and is below it (a constraint only removes mobility)."""
    model = rd.load_urdf(GRIPPER)
    mc = rd.MimicCoordinates(model)
    S, offset = _gripper_S(model)

    def nodes_x(qbar):
        q = S @ qbar + offset
        out = []
        for link, x in GRIPPER_NODES:
            R, p = rd.link_placement(model, q, link)
            out.append(R @ np.asarray(x) + p)
        return np.concatenate(out)

    h = 1e-5
    for qbar in _gripper_qbars():
        q = S @ qbar + offset
        Jbar = np.column_stack([(nodes_x(qbar + h * e) - nodes_x(qbar - h * e)) / (2 * h)
                                for e in np.eye(3)])
        ref = Jbar @ np.linalg.solve(S.T @ rd.mass_matrix(model, q) @ S, Jbar.T)
        lam = mc.contact_compliance(q, GRIPPER_NODES)
        assert lam.shape == (12, 12)
        assert np.abs(lam - ref).max() < 1e-9 * np.abs(ref).max()   # measured 1e-11
        np.testing.assert_array_equal(lam, lam.T)
        np.testing.assert_array_equal(lam[9:], 0.0)                  # the world-fixed mount
        full = rd.contact_compliance(model, q, GRIPPER_NODES)
        assert np.abs(full - lam).max() > 0.1 * np.abs(full).max()   # the constraint matters
        assert np.linalg.eigvalsh(full - lam).min() > -1e-12 * np.abs(full).max()


def test_mimic_contact_compliance_matches_pinocchio_jacobians():
    """6-D nodes: Jbar = J_pin S with Pinocchio's (test-only) Jacobians of the free model."""
    import pinocchio as pin  # a test dependency: missing means failing, not skipping
    from _oracle import PinocchioOracle
    model = rd.load_urdf(GRIPPER)
    oracle = PinocchioOracle(GRIPPER, model)
    pm, pd = oracle.pm, oracle.pd
    mc = rd.MimicCoordinates(model)
    S, offset = _gripper_S(model)
    nodes = GRIPPER_NODES[:3]
    for qbar in _gripper_qbars():
        q = S @ qbar + offset
        qp = oracle.q(q)
        pin.computeJointJacobians(pm, pd, qp)
        pin.framesForwardKinematics(pm, pd, qp)
        rows = []
        for link, x in nodes:
            f = pm.frames[pm.getFrameId(link)]
            Jj = pin.getJointJacobian(pm, pd, f.parentJoint, pin.LOCAL_WORLD_ALIGNED)
            node = f.placement * pin.SE3(np.eye(3), np.asarray(x, dtype=float))
            r = pd.oMi[f.parentJoint].rotation @ node.translation     # joint origin -> node
            Sr = np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]], [-r[1], r[0], 0]])
            rows.append(np.vstack([Jj[:3] - Sr @ Jj[3:], Jj[3:]])[:, oracle.v_index])
        Jbar = np.vstack(rows) @ S
        ref = Jbar @ np.linalg.solve(S.T @ oracle.mass_matrix(q) @ S, Jbar.T)
        lam = mc.contact_compliance(q, nodes, spatial=True)
        assert np.abs(lam - ref).max() < 1e-12 * np.abs(ref).max()


def test_mimic_contact_compliance_bad_input():
    model = rd.load_urdf(GRIPPER)
    mc = rd.MimicCoordinates(model)
    q = mc.q(np.array([0.1, 0.2, 0.01]))
    with pytest.raises(ValueError, match='unknown link'):
        mc.contact_compliance(q, [('nowhere', (0, 0, 0))])
    with pytest.raises(ValueError):
        mc.contact_compliance(np.r_[q[:-1], np.nan], [('palm', (0, 0, 0))])
