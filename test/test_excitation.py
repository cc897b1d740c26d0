"""`calibrate excite`: an optimised Fourier series (Swevers et al. 1997) within the joint limits,
written as JointTrajectory points.  Checked independently: the limits at the written points
(a denser grid than the optimiser's), velocities and accelerations against finite differences
of the positions, periodicity; the condition number it reports recomputed from the written
points with Pinocchio's joint-torque regressor (computeJointTorqueRegressor: not our columns),
and an improvement over the start that the optimiser can fail to reach; the exact gradient
against central differences of the cost."""
import numpy as np
import pytest
import yaml

import ros_dynamics as rd
from ros_dynamics.identification import calibrate as cli
from ros_dynamics.identification.excitation import ExcitationProblem
from ros_dynamics.identification.inertial_parameters import (BASE_TOLERANCE,
                                                             inertial_parameters,
                                                             parameter_scales)
from ros_dynamics.estimation.observer import friction_torque

from _oracle import PinocchioOracle

pytestmark = pytest.mark.core

URDF = rd.bundled_urdf('arm7')
DURATION, HARMONICS, ITERATIONS = 10.0, 2, 15
# The condition number of the identifiable part drops by 5.82-7.89x for this problem (arm7,
# 10 s, 2 harmonics, 15 SLSQP iterations, start seeds 0-4, measured 2026-11-28 on the 2-core
# EPYC; seed 0, what the command uses: 824 -> 137, 6.03x).  Asserted: at least 3x, about half
# the worst seen (a plain series or a broken gradient stays near 1x).
MIN_IMPROVEMENT = 3.0


def _pinocchio_condition(model, q, v, a, rank=None):
    """Condition number of the top ``rank`` singular values (default: those above the base
    tolerance) of the regressor built by Pinocchio (10 inertial parameters per joint) plus the
    friction and armature columns, scaled as the identification scales them."""
    oracle = PinocchioOracle(URDF, model)
    pin, pm, pd = oracle.pin, oracle.pm, oracle.pd
    nj = model.nv
    rows = []
    for qk, vk, ak in zip(q, v, a):
        Yp = pin.computeJointTorqueRegressor(pm, pd, oracle.q(qk), oracle.v(vk), oracle.v(ak))
        Y = np.asarray(Yp)[oracle.v_index]      # rows in our order; columns per Pinocchio joint
        cols = []
        for name in model.joint_names:           # Pinocchio's 10 columns of each joint's body
            j = pm.getJointId(name) - 1
            cols.append(Y[:, 10 * j:10 * j + 10])
        joint = np.hstack([np.diag(friction_torque(vk, 1.0, 0.0)),
                           np.diag(friction_torque(vk, 0.0, 1.0)), np.diag(ak)])
        rows.append(np.hstack(cols + [joint]))
    # the scales: mass, first moment, inertia (the six inertia entries share one scale, so
    # Pinocchio's order of them does not matter)
    scale = np.concatenate([parameter_scales(model, inertial_parameters(model)), np.ones(3 * nj)])
    sv = np.linalg.svd(np.vstack(rows) * scale, compute_uv=False)
    r = int(np.sum(sv > BASE_TOLERANCE * sv[0])) if rank is None else rank
    return sv[0] / sv[r - 1], r


def test_excite_writes_a_trajectory_within_the_limits_and_better_conditioned(tmp_path):
    out = tmp_path / 'excite.yaml'
    # 12 points per second: the first 120 points are the optimiser's sample times
    assert cli.main(['excite', '--urdf', URDF, '--out', str(out), '--duration', str(DURATION),
                     '--harmonics', str(HARMONICS), '--iterations', str(ITERATIONS),
                     '--rate', '12']) == 0
    doc = yaml.safe_load(out.read_text())
    model = rd.load_urdf(URDF)
    assert doc['joint_names'] == model.joint_names
    pts = doc['points']
    t = np.array([p['time_from_start']['sec'] + 1e-9 * p['time_from_start']['nanosec']
                  for p in pts])
    q, v, a = (np.array([p[k] for p in pts]) for k in ('positions', 'velocities',
                                                       'accelerations'))
    c = doc['condition_number']
    # the reported numbers, recomputed from the written points by Pinocchio's regressor
    start = ExcitationProblem(model, DURATION, HARMONICS)
    np.testing.assert_allclose(start.t, t[:120], atol=1e-9)
    c0, rank = _pinocchio_condition(model, *start.trajectory(start.x0)(start.t))
    assert rank == start.rank
    c1, _ = _pinocchio_condition(model, q[:120], v[:120], a[:120], rank)
    np.testing.assert_allclose([c['start'], c['optimised']], [c0, c1], rtol=1e-6)
    assert c0 / c1 >= MIN_IMPROVEMENT, (c0, c1)
    # the limits on a denser grid
    tt = np.linspace(0.0, DURATION, 2001)
    traj_doc = doc['fourier']
    from ros_dynamics.identification.excitation import FourierTrajectory
    qd, vd, ad = FourierTrajectory(traj_doc['q0'], traj_doc['a'], traj_doc['b'],
                                   traj_doc['period'])(tt)
    np.testing.assert_allclose(qd[::200], q[::12][:11], atol=1e-9)   # the file's own points
    for j, name in enumerate(model.joint_names):
        lim = model.joint_limits[name]
        assert lim['lower'] <= qd[:, j].min() and qd[:, j].max() <= lim['upper'], name
        assert np.abs(vd[:, j]).max() <= lim['velocity'], name
    assert np.abs(ad).max() <= 3.0 + 1e-6
    dt = tt[1] - tt[0]
    np.testing.assert_allclose((qd[2:] - qd[:-2]) / (2 * dt), vd[1:-1], atol=1e-3)
    np.testing.assert_allclose((vd[2:] - vd[:-2]) / (2 * dt), ad[1:-1], atol=1e-2)
    np.testing.assert_allclose(q[-1], q[0], atol=1e-9)           # one full period
    assert np.ptp(q, axis=0).min() > 0.1                          # every joint moves


def test_the_gradient_is_exact():
    """cost_and_gradient against central differences of the cost along random directions:
    relative differences 2.4e-8 to 2.0e-7 measured (the differences' own rounding, h = 1e-5);
    asserted below 1e-6."""
    model = rd.load_urdf(URDF)
    p = ExcitationProblem(model, DURATION, HARMONICS)
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = p.x0 + 0.02 * rng.standard_normal(p.x0.size)
        cost, grad = p.cost_and_gradient(x)
        assert cost == pytest.approx(p.cost(x), rel=1e-9)
        d = rng.standard_normal(x.size)
        d /= np.linalg.norm(d)
        h = 1e-5
        fd = (p.cost(x + h * d) - p.cost(x - h * d)) / (2 * h)
        assert abs(grad @ d - fd) <= 1e-6 * abs(fd), (grad @ d, fd)
