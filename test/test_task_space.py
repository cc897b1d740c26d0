"""rd.task_space: task-frame poses, Jacobians and dJ/dt v, and the centroidal terms (mass, CoM,
CoM velocity, A_G, dA_G/dt v) against Pinocchio (getFrameJacobian LOCAL_WORLD_ALIGNED,
getFrameClassicalAcceleration, computeCentroidalMap, computeCentroidalMapTimeVariation) and
against finite differences along the motion q(t) = q (+) t v with v held constant (Pinocchio's
integrate: the exact SE(3) exponential for the free joint)."""
import numpy as np
import pinocchio as pin
import pytest

import ros_dynamics as rd
from ros_dynamics.core.api import christoffel_after_terms

from _oracle import PinocchioOracle, erd_urdf, random_state, rel_err

pytestmark = pytest.mark.core

REL = 1e-9

ROBOTS = [   # (id, URDF path thunk, floating base, task frames: None = every frame)
    ('arm7', lambda: rd.bundled_urdf('arm7'), False, None),
    ('quadruped_floating', lambda: rd.bundled_urdf('quadruped'), True, None),
    ('quadruped_fixed', lambda: rd.bundled_urdf('quadruped'), False, None),
    ('panda', lambda: erd_urdf('panda_description/urdf/panda.urdf'), False, None),
    ('solo12_floating', lambda: erd_urdf('solo_description/robots/solo12.urdf'), True, None),
    ('anymal_floating', lambda: erd_urdf('anymal_c_simple_description/urdf/anymal.urdf'), True,
     None),
    ('talos_floating', lambda: erd_urdf('talos_data/robots/talos_reduced.urdf'), True, None),
    ('talos_fixed', lambda: erd_urdf('talos_data/robots/talos_reduced.urdf'), False,
     ['left_sole_link', 'right_sole_link', 'gripper_left_base_link', 'gripper_right_base_link',
      'base_link']),
]


@pytest.fixture(scope='module', params=ROBOTS, ids=[r[0] for r in ROBOTS])
def robot(request):
    _, path, floating, frames = request.param
    path = path()
    with _quiet():
        model = rd.load_urdf(path, floating_base=floating)
    return model, PinocchioOracle(path, model), frames or model.frame_names


def _quiet():
    import warnings
    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.simplefilter('ignore', rd.URDFWarning)

    class _Exit:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            ctx.__exit__(*exc)
    return _Exit()


def _pinocchio(o, q, v, frames):
    """Pinocchio's task space at (q, v) in our coordinate order."""
    pm, pd = o.pm, o.pd
    qp, vp = o.q(q), o.v(v)
    pin.forwardKinematics(pm, pd, qp, vp, np.zeros(pm.nv))
    pin.computeJointJacobians(pm, pd, qp)
    pin.updateFramePlacements(pm, pd)
    out = dict(R=[], p=[], J=[], Jdv=[])
    for name in frames:
        fid = pm.getFrameId(name, pin.BODY)    # the link (a fixed joint may share its name)
        assert fid < pm.nframes, name
        out['R'].append(pd.oMf[fid].rotation.copy())
        out['p'].append(pd.oMf[fid].translation.copy())
        out['J'].append(pin.getFrameJacobian(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED)[:, o.v_index])
        a = pin.getFrameClassicalAcceleration(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED)
        out['Jdv'].append(np.r_[a.linear, a.angular])
    # a fresh Data each: computeCentroidalMapTimeVariation on a Data that centerOfMass(q, v)
    # filled at another state returns wrong numbers (Pinocchio 4.1; seen here)
    out['A_G'] = pin.computeCentroidalMap(pm, pm.createData(), qp)[:, o.v_index].copy()
    out['dA_G'] = pin.computeCentroidalMapTimeVariation(pm, pm.createData(), qp, vp)[:, o.v_index].copy()
    pd = pm.createData()
    out['com'] = pin.centerOfMass(pm, pd, qp, vp).copy()
    out['vcom'] = pd.vcom[0].copy()
    out['mass'] = pin.computeTotalMass(pm)
    return out


def test_against_pinocchio(robot):
    model, o, frames = robot
    rng = np.random.default_rng(7)
    data = rd.Data(model)
    for trial in range(3):
        q, v, _ = random_state(model, rng)
        ts = rd.task_space(model, q, v, frames, data=data if trial % 2 else None)
        ref = _pinocchio(o, q, v, frames)
        assert ts.frames == tuple(frames)
        for k, name in enumerate(frames):
            for ours, key in ((ts.rotations, 'R'), (ts.positions, 'p'), (ts.jacobians, 'J'),
                              (ts.jacobian_dot_v, 'Jdv')):
                assert rel_err(ours[k], ref[key][k]) < REL, (name, key)
        assert ts.mass == pytest.approx(ref['mass'], rel=1e-12)
        assert rel_err(ts.com, ref['com']) < REL
        assert rel_err(ts.com_velocity, ref['vcom']) < REL
        assert rel_err(ts.centroidal_matrix, ref['A_G']) < REL
        assert rel_err(ts.centroidal_bias, ref['dA_G'] @ v) < REL


def _path(o, q, v, t):
    """q (+) t v by Pinocchio's integrate, in our order."""
    return pin.integrate(o.pm, o.q(q), o.v(v) * t)[o.q_index]


def test_finite_differences_along_the_motion(robot):
    """dJ/dt v = (J(q(h)) - J(q(-h))) v / 2h, and the same for A_G; the frame origin's
    classical acceleration also from its positions alone (second difference), the angular
    velocity from the rotations, and the CoM velocity from the CoM."""
    model, o, frames = robot
    rng = np.random.default_rng(3)
    q, v, _ = random_state(model, rng)
    h = 1e-4
    ts = rd.task_space(model, q, v, frames)
    fwd = rd.task_space(model, _path(o, q, v, h), v, frames)
    bwd = rd.task_space(model, _path(o, q, v, -h), v, frames)
    tol = 1e-6
    for k in range(len(frames)):
        Jdv = (fwd.jacobians[k] - bwd.jacobians[k]) @ v / (2 * h)
        assert rel_err(ts.jacobian_dot_v[k], Jdv) < tol
        acc = (fwd.positions[k] - 2 * ts.positions[k] + bwd.positions[k]) / h ** 2
        assert np.abs(ts.jacobian_dot_v[k, :3] - acc).max() < 1e-5 * max(1.0, np.abs(acc).max())
        vel = (fwd.positions[k] - bwd.positions[k]) / (2 * h)
        assert rel_err(ts.jacobians[k, :3] @ v, vel) < tol
        W = (fwd.rotations[k] - bwd.rotations[k]) @ ts.rotations[k].T / (2 * h)   # S(omega)
        assert rel_err(ts.jacobians[k, 3:] @ v, [W[2, 1], W[0, 2], W[1, 0]]) < tol
    dA = (fwd.centroidal_matrix - bwd.centroidal_matrix) @ v / (2 * h)
    assert rel_err(ts.centroidal_bias, dA) < tol
    assert rel_err(ts.com_velocity, (fwd.com - bwd.com) / (2 * h)) < tol
    # h_G = A_G v: its linear part is m cdot, and dh_G/dt's linear part is m cddot
    assert rel_err(ts.centroidal_matrix[:3] @ v, ts.mass * ts.com_velocity) < 1e-12
    cdd = (fwd.com - 2 * ts.com + bwd.com) / h ** 2
    assert np.abs(ts.centroidal_bias[:3] / ts.mass - cdd).max() < 1e-5 * max(1.0, np.abs(cdd).max())


def test_after_terms_equals_a_fresh_pass(robot):
    """After compute_all_terms, task_space_after_terms (no second kinematics pass) gives the
    same numbers, and Gamma after both is still Algorithm 2's."""
    model, o, frames = robot
    rng = np.random.default_rng(5)
    q, v, _ = random_state(model, rng)
    fresh = rd.task_space(model, q, v, frames)
    data = rd.Data(model)
    rd.compute_all_terms(model, q, v, data)
    ts = rd.task_space_after_terms(model, data, frames)
    for name in ('rotations', 'positions', 'jacobians', 'jacobian_dot_v', 'centroidal_matrix',
                 'centroidal_bias', 'com', 'com_velocity'):
        np.testing.assert_allclose(getattr(ts, name), getattr(fresh, name), rtol=0, atol=1e-12)
    if model.nv <= 20:
        np.testing.assert_allclose(christoffel_after_terms(model, data),
                                   rd.christoffel(model, q), rtol=0, atol=1e-10)


def test_workspace_is_reused():
    model = rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)
    frames = rd.task_frames(model, ['LF_foot', 'RF_foot', 'LH_foot', 'RH_foot'])
    data = rd.Data(model)
    rng = np.random.default_rng(1)
    q, v, _ = random_state(model, rng)
    first = rd.task_space(model, q, v, frames, data=data)
    arrays = [first.jacobians, first.jacobian_dot_v, first.centroidal_matrix]
    q2, v2, _ = random_state(model, rng)
    second = rd.task_space(model, q2, v2, frames, data=data)
    assert second is first and data.task_space is first
    assert all(a is b for a, b in zip(arrays, [second.jacobians, second.jacobian_dot_v,
                                               second.centroidal_matrix]))
    alone = rd.task_space(model, q2, v2, ['LF_foot', 'RF_foot', 'LH_foot', 'RH_foot'])
    np.testing.assert_array_equal(second.jacobians, alone.jacobians)
    np.testing.assert_array_equal(second.centroidal_bias, alone.centroidal_bias)


def test_bad_input_is_refused_and_changes_nothing():
    model = rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)
    with pytest.raises(ValueError, match=r"unknown link 'LF_fot'.*closest: 'LF_foot'"):
        rd.task_frames(model, ['LF_fot'])
    with pytest.raises(ValueError, match='list of frame names'):
        rd.task_frames(model, 'LF_foot')
    data = rd.Data(model)
    rng = np.random.default_rng(2)
    q, v, _ = random_state(model, rng)
    ts = rd.task_space(model, q, v, ['LF_foot'], data=data)
    before = (ts.jacobians.copy(), ts.centroidal_matrix.copy(), ts.com.copy())
    bad_q = q.copy()
    bad_q[3:7] *= 2.0
    with pytest.raises(ValueError, match='unit quaternion'):
        rd.task_space(model, bad_q, v, ['LF_foot'], data=data)
    bad_v = v.copy()
    bad_v[4] = np.nan
    with pytest.raises(ValueError, match='v contains NaN'):
        rd.task_space(model, q, bad_v, ['LF_foot'], data=data)
    with pytest.raises(ValueError, match=r'shape \(18,\)'):
        rd.task_space(model, q, v[:-1], ['LF_foot'], data=data)
    with pytest.raises(ValueError, match='unit quaternion'):      # other frames, bad input
        rd.task_space(model, bad_q, v, ['RF_foot'], data=data)
    assert data.task_space is ts
    for a, b in zip(before, (ts.jacobians, ts.centroidal_matrix, ts.com)):
        np.testing.assert_array_equal(a, b)
    other = rd.load_urdf(rd.bundled_urdf('arm7'))
    with pytest.raises(ValueError, match='another model'):
        rd.task_space(other, other.neutral(), np.zeros(other.nv), rd.task_frames(model, ['LF_foot']))


def test_output_coordinates():
    """joint coordinates pass the result through; mimic_reduced is checked in the node's output
    tests; center_of_mass refuses with the reason."""
    model = rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)
    rng = np.random.default_rng(8)
    q, v, _ = random_state(model, rng)
    ts = rd.task_space(model, q, v, ['LF_foot'])
    assert rd.output_coordinates(model, 'joint').task_space(q, v, ['LF_foot'], ts) is ts
    with pytest.raises(ValueError, match='not available in center_of_mass coordinates'):
        rd.output_coordinates(model, 'center_of_mass').task_space(q, v, ['LF_foot'])
    frames = iter(['LF_foot', 'RH_foot'])         # any iterable of names
    assert rd.task_space(model, q, v, frames, data=rd.Data(model)).frames == ('LF_foot', 'RH_foot')
