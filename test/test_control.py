"""Control core (ros_dynamics.control): trajectories, the three laws with exact terms from the
core library, and the stamp pairing.  Checks use quantities the laws do not compute themselves:
accelerations from forward dynamics (CRBA + LTDL), finite differences, closed-form solutions of
the designed error dynamics."""
import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics import testing
from ros_dynamics.control import (ComputedTorque, MinJerkTrajectory, PDGravity, SineTrajectory,
                                  SlotineLi, StampPairer, make_law, make_trajectory,
                                  min_jerk_cycle, slotine_li_lyapunov)
from ros_dynamics.simulation.plant import Simulator
from ros_dynamics.simulation.scenarios import bundled_urdf

pytestmark = pytest.mark.core


@pytest.fixture(scope='module')
def chain6():
    return rd.load_urdf(testing.chain(6, seed=3))


@pytest.fixture(scope='module')
def arm():
    return rd.load_urdf(bundled_urdf('arm7'))


@pytest.mark.parametrize('traj', [
    SineTrajectory([0.1, -0.2, 0.3], [0.4, 0.2, -0.3], [0.7, 1.1, 0.5]),
    min_jerk_cycle([0.1, -0.2, 0.3], [0.4, 0.2, -0.3], 0.6),
    make_trajectory('min_jerk', [0.0, 1.0], [0.5, -0.5], [0.8, 0.9]),
])
def test_trajectory_derivatives_match_finite_differences(traj):
    h = 1e-6
    for t in np.linspace(0.013, 2.9, 37):
        q, v, a = traj(t)
        qp, vp, _ = traj(t + h)
        qm, vm, _ = traj(t - h)
        assert np.allclose((qp - qm) / (2 * h), v, atol=1e-6)
        assert np.allclose((vp - vm) / (2 * h), a, atol=1e-4)


def test_trajectories_start_at_rest_and_repeat():
    for traj, period in ((SineTrajectory([0.2, 0.1], 0.3, 0.5), 2.0),
                         (min_jerk_cycle([0.2, 0.1], 0.3, 1.0), 2.0)):
        q, v, a = traj(0.0)
        assert np.allclose(q, [0.2, 0.1]) and np.allclose(v, 0)
        assert np.allclose(traj(0.37)[0], traj(0.37 + 3 * period)[0])
    q, v, a = min_jerk_cycle([0.0], [0.5], 1.0)(1.0)      # end of the first leg: at rest
    assert np.allclose(q, 0.5) and np.allclose(v, 0) and np.allclose(a, 0)
    with pytest.raises(ValueError):
        make_trajectory('square', [0.0], 0.1, 1.0)
    with pytest.raises(ValueError):
        MinJerkTrajectory([0.0, 0.0], [[0.0], [1.0]])


def _random_state(model, rng):
    n = model.nv
    return (rng.uniform(-1, 1, n), rng.uniform(-2, 2, n), rng.uniform(-1, 1, n),
            rng.uniform(-2, 2, n), rng.uniform(-5, 5, n))


def test_computed_torque_gives_the_designed_linear_error_dynamics(chain6):
    """Plant acceleration from forward dynamics under the law: q̃̈ = −K_d' q̃̇ − K_p' q̃."""
    rng = np.random.default_rng(0)
    kp, kd = rng.uniform(50, 400, 6), rng.uniform(5, 40, 6)
    law = ComputedTorque(kp, kd)
    for _ in range(20):
        q, v, qd, vd, ad = _random_state(chain6, rng)
        d = rd.dynamics(chain6, q, v)
        tau = law(q, v, qd, vd, ad, d.M, d.C, d.g)
        a = rd.forward_dynamics(chain6, q, v, tau)
        assert np.allclose(a - ad, -kd * (v - vd) - kp * (q - qd), rtol=1e-9, atol=1e-9)


def test_slotine_li_lyapunov_derivative_is_the_closed_form(chain6):
    """dV/dt along the true dynamics (forward dynamics, dM/dt from the core) equals
    −q̃̇ᵀ K_D q̃̇ − q̃ᵀ Λ K_D Λ q̃ at random states: the ½ sᵀ(Ṁ − 2C)s term vanishes."""
    rng = np.random.default_rng(1)
    law = SlotineLi(rng.uniform(5, 40, 6), rng.uniform(2, 20, 6))
    K, L = law.kd, law.lam
    for _ in range(20):
        q, v, qd, vd, ad = _random_state(chain6, rng)
        d = rd.dynamics(chain6, q, v)
        tau = law(q, v, qd, vd, ad, d.M, d.C, d.g)
        a = rd.forward_dynamics(chain6, q, v, tau)
        e, ed, edd = q - qd, v - vd, a - ad
        s, sd = ed + L * e, edd + L * ed
        Vdot = s @ d.M @ sd + 0.5 * s @ d.Mdot @ s + 2 * e @ (L * K * ed)
        expected = -ed @ (K * ed) - e @ (L * K * L * e)
        assert Vdot == pytest.approx(expected, rel=1e-8, abs=1e-8)
        assert expected < 0


def test_slotine_li_lyapunov_fails_with_a_non_passive_factorization(chain6):
    """Control of the previous test: with C' = C + S, S q̇ = 0 (still C' q̇ = C q̇, so a valid
    factorization for the equations of motion) but Ṁ − 2C' not skew, V̇ differs."""
    rng = np.random.default_rng(2)
    law = SlotineLi(np.full(6, 10.0), np.full(6, 5.0))
    q, v, qd, vd, ad = _random_state(chain6, rng)
    d = rd.dynamics(chain6, q, v)
    w, u = rng.normal(size=6), rng.normal(size=6)
    S = np.outer(w, u - (u @ v) / (v @ v) * v)     # rank one, S v = 0, not skew
    assert np.allclose((d.C + S) @ v, d.C @ v)
    tau = law(q, v, qd, vd, ad, d.M, d.C + S, d.g)
    a = rd.forward_dynamics(chain6, q, v, tau)
    e, ed = q - qd, v - vd
    s, sd = ed + law.lam * e, (a - ad) + law.lam * ed
    Vdot = s @ d.M @ sd + 0.5 * s @ d.Mdot @ s + 2 * e @ (law.lam * law.kd * ed)
    expected = -ed @ (law.kd * ed) - e @ (law.lam * law.kd * law.lam * e)
    assert abs(Vdot - expected) > 1e-3


class _Exact:
    """Simulator controller: the law with exact terms of the plant at the measured state."""

    def __init__(self, model, law, log=None):
        self.model, self.law, self.log = model, law, log

    def __call__(self, t, q, v, qd, vd):
        d = rd.dynamics(self.model, q, v)
        qd_, vd_, ad_ = self.traj(t)
        if self.log is not None:
            self.log.append((t, q.copy(), v.copy(), qd_, vd_, d.M.copy()))
        return self.law(q, v, qd_, vd_, ad_, d.M, d.C, d.g)


def _run(model, law, traj, duration, dt, q0=None, v0=None, log=None):
    ctrl = _Exact(model, law, log)
    ctrl.traj = traj
    sim = Simulator(model, traj, ctrl, dt=dt, q0=q0, v0=v0)
    return sim.run(duration)


def test_slotine_li_in_the_simulator_V_is_non_increasing(arm):
    """Free motion, exact terms, 10 kHz: V = ½ sᵀ M s + q̃ᵀ Λ K_D q̃ from an initial error
    decreases at every step (within the integrator's O(dt²) error) and by orders of magnitude."""
    q0 = np.array([0.0, 0.3, 0.0, -1.6, 0.0, 1.2416, 0.0])
    traj = SineTrajectory(q0, 0.4, 0.8)
    m = np.diag(rd.mass_matrix(arm, q0))
    law = make_law('slotine_li', 100.0 * m, 20.0 * m)   # ω = 10 rad/s
    log = []
    _run(arm, law, traj, 1.0, 1e-4, q0=q0 + 0.05, v0=np.full(7, -0.3), log=log)
    V = np.array([slotine_li_lyapunov(law, q, v, qd, vd, M) for _, q, v, qd, vd, M in log])
    assert V[-1] < 1e-3 * V[0]
    assert np.all(np.diff(V) <= 1e-6 * V[0]), np.max(np.diff(V) / V[0])


def test_computed_torque_in_the_simulator_follows_the_closed_form_error(arm):
    """Critically damped design (K_p' = ω², K_d' = 2ω): q̃(t) = (q̃0 + (q̃̇0 + ω q̃0) t) e^{−ωt}."""
    q0 = np.array([0.0, 0.3, 0.0, -1.6, 0.0, 1.2416, 0.0])
    traj = SineTrajectory(q0, 0.4, 0.8)
    w = 15.0
    law = ComputedTorque(w**2, 2 * w)
    e0, ed0 = np.linspace(-0.05, 0.05, 7), np.full(7, 0.2)
    out = _run(arm, law, traj, 0.6, 1e-4, q0=q0 + e0, v0=ed0)   # q̇_d(0) = 0
    t = out['t']
    e_ref = (e0 + np.outer(t, ed0 + w * e0)) * np.exp(-w * t)[:, None]
    qd = np.array([traj(ti)[0] for ti in t])
    assert np.max(np.abs(out['q'] - qd - e_ref)) < 2e-3 * np.max(np.abs(e0))


def test_model_based_laws_track_far_better_than_pd_gravity_at_the_same_gains(arm):
    """The claim the end-to-end test makes over ROS, here without transport: 1 kHz, a 1 Hz
    sine of 0.4 rad on every joint."""
    q0 = np.array([0.0, 0.3, 0.0, -1.6, 0.0, 1.2416, 0.0])
    traj = SineTrajectory(q0, 0.4, 1.0)
    m = np.diag(rd.mass_matrix(arm, q0))
    kp, kd = 900.0 * m, 60.0 * m
    rms = {}
    for name in ('pd_gravity', 'computed_torque', 'slotine_li'):
        out = _run(arm, make_law(name, kp, kd, m_ref=m), traj, 2.0, 1e-3, q0=q0)
        qd = np.array([traj(ti)[0] for ti in out['t']])
        rms[name] = np.sqrt(np.mean((out['q'] - qd) ** 2))
    assert rms['slotine_li'] < rms['pd_gravity'] / 5, rms
    assert rms['computed_torque'] < rms['pd_gravity'] / 5, rms


def test_pd_gravity_matches_the_simulator_builtin_controller(arm):
    from ros_dynamics.simulation.plant import PDGravityController
    rng = np.random.default_rng(4)
    kp, kd = rng.uniform(10, 100, 7), rng.uniform(1, 10, 7)
    builtin, law = PDGravityController(arm, kp, kd), PDGravity(kp, kd)
    q, v, qd, vd, ad = _random_state(arm, rng)
    d = rd.dynamics(arm, q, v)
    assert np.allclose(law(q, v, qd, vd, ad, d.M, d.C, d.g), builtin(0.0, q, v, qd, vd))


def test_make_law_rejects_bad_gains():
    with pytest.raises(ValueError):
        make_law('slotine_li', [1.0, 2.0], [1.0, 0.0])
    with pytest.raises(ValueError):
        make_law('computed_torque', 1.0, 1.0)
    with pytest.raises(ValueError):
        make_law('lqr', 1.0, 1.0)
    with pytest.raises(ValueError):
        PDGravity([1.0, np.nan], 1.0)


def test_pairer_serves_only_same_stamp_pairs_and_counts_the_rest():
    p = StampPairer(max_pending=3)
    assert p.add_state(1, 's1') is None
    assert p.add_terms(1, 't1') == (1, 's1', 't1')          # terms after state
    assert p.add_terms(2, 't2') is None
    assert p.add_state(2, 's2') == (2, 's2', 't2')          # terms before state
    assert p.add_state(3, 's3') is None
    assert p.add_state(4, 's4') is None
    assert p.add_terms(4, 't4') == (4, 's4', 't4')          # 3 never got terms: late
    assert p.add_terms(3, 't3') is None                     # too late: stale
    for k in range(5, 10):                                  # terms never come
        assert p.add_state(k, k) is None
    assert p.add_terms(10, 't10') is None
    assert p.add_state(10, 's10') == (10, 's10', 't10')
    assert p.add_state(10, 'again') is None
    c = p.counts
    assert (c['served'], c['late'], c['stale_terms'], c['stale_states']) == (4, 6, 1, 1), c
    assert p.served_fraction() == 4 / 11


def test_pairer_drops_same_stamp_terms_that_disagree_and_waits_for_the_right_ones():
    p = StampPairer(consistent=lambda s, t: s == t)
    assert p.add_state(1, 'a') is None
    assert p.add_terms(1, 'b') is None
    assert p.counts['mismatched'] == 1 and p.last_served is None
    assert p.add_terms(1, 'a') == (1, 'a', 'a')
    assert p.add_terms(2, 'x') is None          # before its state, disagrees
    assert p.add_state(2, 'c') is None
    assert p.add_terms(2, 'c') == (2, 'c', 'c')
    assert p.counts['mismatched'] == 2


def test_pairer_terms_out_of_order_do_not_block():
    p = StampPairer()
    assert p.add_terms(6, 't6') is None
    assert p.add_terms(5, 't5') is None
    assert p.add_state(5, 's5') == (5, 's5', 't5')
    assert p.add_state(6, 's6') == (6, 's6', 't6')
