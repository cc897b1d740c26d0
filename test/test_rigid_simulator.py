"""Rigid-contact mode of the simulator: the quadruped stands on rigid feet; the arm's wall scenario
runs with a rigid wall and the momentum observer recovers the LCP's contact torque."""
import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics import MomentumObserver
from ros_dynamics import simulation as S
from ros_dynamics.simulation.rigid_simulator import rigid_scenario, standing_quadruped, urdf_spheres

pytestmark = pytest.mark.core


def test_floating_quadruped_stands_on_rigid_feet():
    path = rd.bundled_urdf('quadruped')
    model = rd.load_urdf(path, floating_base=True)
    feet = urdf_spheres(path, model)
    assert sorted(s.link for s in feet) == ['LF_foot', 'LH_foot', 'RF_foot', 'RH_foot']
    sim = standing_quadruped(model, path)
    z0 = sim.q[2]
    for _ in range(1500):
        s = sim.step()
    info = sim.last_info
    assert len(info.contacts) == 4 and all(c.gap > -1e-4 for c in info.contacts)
    weight = -model.total_mass() * model.gravity[2]
    assert info.impulses[:, 2].sum() / sim.dt == pytest.approx(weight, rel=1e-3)
    assert np.all(info.impulses[:, 2] > 0.2 * weight * sim.dt)        # every foot carries load
    assert abs(s.q_true[2] - z0) < 0.02                               # sags under the PD, stays up
    assert np.abs(s.v_true).max() < 5e-3                              # and settles (PD, kd = 2)
    quat = s.q_true[3:7]
    assert abs(quat[3]) > 0.999                                        # level


def _settled_errors(res, K, dt):
    c = res['contact']
    mask = np.zeros(len(c), bool)
    for a, b in S.runs(c):
        mask[a + int(5 / K / dt):b] = True
    err = np.linalg.norm(res['r'][mask] - res['tau_ext'][mask], axis=1)
    return err / np.linalg.norm(res['tau_ext'][mask], axis=1), res['force_err'][mask]


def test_wall_scenario_rigid_and_observer_against_lcp_impulses():
    model = rd.load_urdf(rd.bundled_urdf('arm7'))
    K = 50.0
    out = {}
    for mode, make in (('spring', S.make_scenario), ('rigid', rigid_scenario)):
        sim, desc = make(model, 'wall')
        res = S.simulate_observer(sim, MomentumObserver(model, K), None, 5.0, estimate_force=True)
        out[mode] = res, _settled_errors(res, K, sim.dt)
    res_r, (rel_r, force_r) = out['rigid']
    res_s, (rel_s, force_s) = out['spring']
    # contact in both, starting at about the same time (the rigid wall is touched, not entered)
    t_r = res_r['t'][np.argmax(res_r['contact'])]
    t_s = res_s['t'][np.argmax(res_s['contact'])]
    assert abs(t_r - t_s) < 0.05 and res_r['contact'].sum() > 2000
    # the observer's residual equals the LCP's J^T F / dt once the contact has settled
    assert np.median(rel_r) < 1e-3 and np.median(rel_s) < 1e-3
    assert np.nanmedian(force_r) < 0.02


def test_floating_quadruped_trots_forward_on_rigid_feet():
    from ros_dynamics.simulation.rigid_simulator import trotting_quadruped
    path = rd.bundled_urdf('quadruped')
    model = rd.load_urdf(path, floating_base=True)
    sim = trotting_quadruped(model, path)
    feet_down = set()
    x0 = sim.q[0]
    for k in range(2500):
        s = sim.step()
        info = sim.last_info
        assert all(c.gap > -1e-4 for c in info.contacts)
        if k > 1000:
            feet_down.add(tuple(sorted(c.link_a for c, F in zip(info.contacts, info.impulses) if F[2] > 0)))
    assert s.q_true[0] - x0 > 0.15                         # walked forward (+x)
    assert abs(s.q_true[3:7][3]) > 0.99                      # upright
    assert 0.25 < s.q_true[2] < 0.35
    # the diagonal pairs took turns: both two-foot stances occurred
    assert ('LF_foot', 'RH_foot') in feet_down and ('LH_foot', 'RF_foot') in feet_down
