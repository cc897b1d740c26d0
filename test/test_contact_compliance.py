"""rd.contact_compliance (Jain et al. 2012, App. 10): the O(N) + O(m^2) OSCM against J M^-1 J^T formed
densely (project Jacobians and mass matrix, and Pinocchio's Jacobians, CRBA and Delassus matrix)."""
import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics import testing

from _oracle import PinocchioOracle

pytestmark = pytest.mark.core

REL = 1e-10


def _random_q(model, rng):
    q = model.neutral()
    off = rd.configuration.base_nq(model)
    q[off:] = rng.uniform(-1.2, 1.2, model.nq - off)
    if model.floating_base:
        quat = rng.normal(size=4)
        q[:3], q[3:7] = rng.normal(size=3), quat / np.linalg.norm(quat)
    return q


def _random_points(model, rng, m):
    links = sorted(model.link_frames)
    return [(links[rng.integers(len(links))], rng.uniform(-0.2, 0.2, 3)) for _ in range(m)]


def _dense(model, q, points, rows=3):
    J = np.vstack([rd.link_jacobian(model, q, link, x)[:rows] for link, x in points])
    return J @ np.linalg.solve(rd.mass_matrix(model, q), J.T)


def _rel(A, B):
    return np.abs(A - B).max() / np.abs(B).max()


MODELS = [
    ('chain', lambda: rd.load_urdf(testing.chain(12, seed=4, joint_types=testing.JOINT_TYPES, fixed_every=3))),
    ('tree', lambda: rd.load_urdf(testing.binary_tree(20, seed=5, joint_types=('revolute', 'prismatic')))),
    ('legs', lambda: rd.load_urdf(testing.quadruped_like(4, 3, seed=6))),
    ('legs_floating', lambda: rd.load_urdf(testing.quadruped_like(4, 3, seed=7), floating_base=True)),
    ('arm7', lambda: rd.load_urdf(rd.bundled_urdf('arm7'))),
    ('quadruped', lambda: rd.load_urdf(rd.bundled_urdf('quadruped'))),
    ('quadruped_floating', lambda: rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)),
]


@pytest.mark.parametrize('name,make', MODELS, ids=[m[0] for m in MODELS])
@pytest.mark.parametrize('spatial', [False, True])
def test_matches_dense_J_Minv_JT(name, make, spatial):
    model = make()
    rng = np.random.default_rng(11)
    for trial in range(4):
        q = _random_q(model, rng)
        points = _random_points(model, rng, m=1 + 2 * trial)
        points.append(points[0])                      # a repeated node: singular Lambda, still exact
        L = rd.contact_compliance(model, q, points, spatial=spatial)
        Ld = _dense(model, q, points, rows=6 if spatial else 3)
        assert L.shape == Ld.shape
        assert _rel(L, Ld) < REL, (name, trial, _rel(L, Ld))
        np.testing.assert_array_equal(L, L.T)


def test_feet_of_floating_quadruped_and_world_fixed_link():
    model = rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)
    feet = [link for link in model.link_frames if 'foot' in link] or sorted(model.link_frames)[-4:]
    q = _random_q(model, np.random.default_rng(3))
    points = [(f, (0.0, 0.0, -0.02)) for f in feet]
    L = rd.contact_compliance(model, q, points)
    assert _rel(L, _dense(model, q, points)) < REL
    assert np.all(np.linalg.eigvalsh(L) > 0)           # 4 feet, 3 rows each, 18 DoF: full rank
    # a link fixed to the world (arm7's root) gives zero rows and columns
    arm = rd.load_urdf(rd.bundled_urdf('arm7'))
    root = arm.root_link
    q = np.linspace(-0.9, 0.9, arm.nq)
    points = [(root, (0.1, 0, 0)), ('tool', (0, 0, 0.05))]
    L = rd.contact_compliance(arm, q, points)
    assert np.all(L[:3] == 0) and np.all(L[:, :3] == 0) and np.all(np.diag(L)[3:] > 0)
    assert _rel(L, _dense(arm, q, points)) < REL


def test_data_path_equals_allocating_path():
    model = rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)
    data = rd.Data(model)
    rng = np.random.default_rng(8)
    feet = sorted(link for link in model.link_frames if 'foot' in link)
    for spatial in (False, True):
        q = _random_q(model, rng)
        points = [(f, rng.uniform(-0.02, 0.02, 3)) for f in feet]
        L = rd.contact_compliance(model, q, points, spatial=spatial, data=data)
        assert L is data.Lambda
        np.testing.assert_array_equal(L, rd.contact_compliance(model, q, points, spatial=spatial))
        again = rd.contact_compliance(model, q, points[::-1], spatial=spatial, data=data)
        assert again is L                                  # same size: the buffer is reused
        # the placements left in data are those at q
        R, p = rd.link_placement(model, q, model.body_names[0])
        np.testing.assert_allclose(data.R[0], R, atol=1e-15)
        np.testing.assert_allclose(data.pos[0], p, atol=1e-15)
    smaller = rd.contact_compliance(model, q, points[:2], data=data)
    assert smaller.shape == (6, 6) and smaller is data.Lambda
    np.testing.assert_array_equal(smaller, rd.contact_compliance(model, q, points[:2]))


def test_bad_input():
    model = rd.load_urdf(rd.bundled_urdf('arm7'))
    q = model.neutral()
    with pytest.raises(ValueError, match='unknown link'):
        rd.contact_compliance(model, q, [('nope', (0, 0, 0))])
    with pytest.raises(ValueError, match='points'):
        rd.contact_compliance(model, q, [('tool', (0, 0))])
    with pytest.raises(ValueError, match='NaN'):
        rd.contact_compliance(model, q, [('tool', (0, np.nan, 0))])
    with pytest.raises(ValueError):
        rd.contact_compliance(model, q[:-1], [('tool', (0, 0, 0))])
    bad = q.copy()
    bad[0] = np.inf
    with pytest.raises(ValueError, match='NaN or inf'):
        rd.contact_compliance(model, bad, [('tool', (0, 0, 0))])
    assert rd.contact_compliance(model, q, []).shape == (0, 0)


# -- Pinocchio (test-only oracle) ------------------------------------------------------------------

PIN_CASES = [('arm7', False), ('quadruped', False), ('quadruped', True)]


def _pin_nodes(oracle, model, points):
    """(joint id, placement in the joint frame) of each node in Pinocchio's model."""
    pin = oracle.pin
    nodes = []
    for link, x in points:
        f = oracle.pm.frames[oracle.pm.getFrameId(link)]
        nodes.append((f.parentJoint, f.placement * pin.SE3(np.eye(3), np.asarray(x, float))))
    return nodes


@pytest.mark.parametrize('robot,floating', PIN_CASES)
def test_matches_pinocchio_jacobians_and_delassus(robot, floating):
    import pinocchio as pin  # a test dependency: missing means failing, not skipping
    path = rd.bundled_urdf(robot)
    model = rd.load_urdf(path, floating_base=floating)
    oracle = PinocchioOracle(path, model)
    pm, pd = oracle.pm, oracle.pd
    rng = np.random.default_rng(21)
    movable = [l for l in sorted(model.link_frames) if model.link_frames[l][0] >= 0]
    for _ in range(3):
        q = _random_q(model, rng)
        points = [(movable[rng.integers(len(movable))], rng.uniform(-0.1, 0.1, 3)) for _ in range(4)]
        L = rd.contact_compliance(model, q, points)
        qp = oracle.q(q)
        # J M^-1 J^T from Pinocchio's Jacobians and CRBA (columns mapped to our v order)
        pin.computeJointJacobians(pm, pd, qp)
        pin.framesForwardKinematics(pm, pd, qp)
        rows = []
        for jid, placement in _pin_nodes(oracle, model, points):
            Jj = pin.getJointJacobian(pm, pd, jid, pin.LOCAL_WORLD_ALIGNED)
            r = pd.oMi[jid].rotation @ placement.translation            # joint origin -> node
            S = np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]], [-r[1], r[0], 0]])
            rows.append((Jj[:3] - S @ Jj[3:])[:, oracle.v_index])
        J = np.vstack(rows)
        Lp = J @ np.linalg.solve(oracle.mass_matrix(q), J.T)
        assert _rel(L, Lp) < REL
        # Pinocchio's Delassus matrix of 3-D point contacts at the same nodes; Pinocchio 3-4
        # expresses it in each contact frame whatever the reference frame, so rotate ours there
        cms, cds = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
        Rc = np.zeros((3 * len(points), 3 * len(points)))
        for i, (jid, placement) in enumerate(_pin_nodes(oracle, model, points)):
            cms.append(pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm, jid, placement,
                                                pin.LOCAL_WORLD_ALIGNED))
            cds.append(cms[-1].createData())
            Rc[3 * i:3 * i + 3, 3 * i:3 * i + 3] = (pd.oMi[jid] * placement).rotation
        pin.initConstraintDynamics(pm, pd, cms, cds)
        Ldel = pin.computeDelassusMatrix(pm, pd, qp, cms, cds, 0.0)
        assert _rel(Rc.T @ L @ Rc, Ldel) < REL
