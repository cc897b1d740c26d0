"""rd.Data workspace: data= gives the same numbers as the allocating calls, allocates nothing,
compute_all_terms equals the separate calls, the observer can take its products from it; the
frozen Model; the numba cache stamp; configuration-space helpers."""

import tracemalloc

import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics import testing as models
from _oracle import random_state, rel_err

pytestmark = pytest.mark.core

CASES = {
    'tree11': lambda: rd.load_urdf(models.binary_tree(11, seed=3, joint_types=('revolute', 'prismatic'))),
    'chain6_floating': lambda: rd.load_urdf(models.chain(6, seed=4), floating_base=True),
}


@pytest.fixture(scope='module', params=sorted(CASES))
def model(request):
    return CASES[request.param]()


def _calls(model, q, v, a, data=None):
    """name -> result of every public compute function (copied: data= results are views)."""
    link = model.link_names[-1]
    out = {
        'mass_matrix': rd.mass_matrix(model, q, data=data),
        'gravity': rd.gravity(model, q, data=data),
        'inverse_dynamics': rd.inverse_dynamics(model, q, v, a, data=data),
        'forward_dynamics': rd.forward_dynamics(model, q, v, a, data=data),
        'coriolis_matrix': rd.coriolis_matrix(model, q, v, data=data),
        'mass_matrix_derivative': rd.mass_matrix_derivative(model, q, v, data=data),
        'christoffel': rd.christoffel(model, q, data=data),
        'momentum': rd.momentum(model, q, v, data=data),
        'coriolis_transpose_times_v': rd.coriolis_transpose_times_v(model, q, v, data=data),
        'link_jacobian': rd.link_jacobian(model, q, link, (0.1, 0.0, -0.2), data=data),
        'link_placement': rd.link_placement(model, q, link, data=data),
    }
    for name, x in rd.dynamics(model, q, v, data=data)._asdict().items():
        out['dynamics.' + name] = x
    for name, x in zip(('p', 'ctv', 'g'), rd.observer_terms(model, q, v, data=data)):
        out['observer_terms.' + name] = x
    return {k: tuple(np.array(y) for y in x) if isinstance(x, tuple) else np.array(x)
            for k, x in out.items()}


def test_data_results_identical_to_allocating_results(model):
    rng = np.random.default_rng(0)
    data = rd.Data(model)
    for _ in range(2):                      # the second round reuses dirty buffers
        q, v, a = random_state(model, rng)
        fresh, reused = _calls(model, q, v, a), _calls(model, q, v, a, data)
        for name in fresh:
            x, y = fresh[name], reused[name]
            pairs = zip(x, y) if isinstance(x, tuple) else [(x, y)]
            assert all(np.array_equal(a_, b_) for a_, b_ in pairs), name


def test_data_views_are_returned_and_overwritten(model):
    q, v, _ = random_state(model, np.random.default_rng(1))
    data = rd.Data(model)
    d = rd.dynamics(model, q, v, data=data)
    assert d.M is data.M and d.C is data.C and d.Mdot is data.Mdot and d.g is data.g
    assert rd.christoffel(model, q, data=data) is data.Gamma
    assert rd.mass_matrix(model, q, data=data) is data.M
    M1 = data.M.copy()
    q2, v2, _ = random_state(model, np.random.default_rng(2))
    rd.dynamics(model, q2, v2, data=data)
    assert not np.array_equal(M1, data.M)


@pytest.mark.parametrize('make', [lambda: models.chain(6, seed=5),
                                  lambda: models.binary_tree(7, seed=6)], ids=['chain', 'tree'])
def test_christoffel_overwrites_a_dirty_gamma(make):
    """Algorithm 2 into a data.Gamma full of NaN gives the new array's result: every entry is
    written (a chain: all triples of DoFs are related) or zeroed first (a tree: the triples not
    on one root path are exactly zero, Echeandia & Wensing 2021, Sec. 4)."""
    model = rd.load_urdf(make())
    q, _, _ = random_state(model, np.random.default_rng(8))
    data = rd.Data(model)
    data.Gamma[:] = np.nan
    fresh = rd.christoffel(model, q)
    assert np.array_equal(rd.christoffel(model, q, data=data), fresh)
    ancestors = []
    for s in range(model.nv):
        a, p = {s}, model.dof_parent[s]
        while p >= 0:
            a.add(p)
            p = model.dof_parent[p]
        ancestors.append(a)
    related = lambda i, j: i in ancestors[j] or j in ancestors[i]      # noqa: E731
    n = model.nv
    unrelated = [(i, j, k) for i in range(n) for j in range(n) for k in range(n)
                 if not (related(i, j) and related(j, k) and related(i, k))]
    chain = all(model.dof_parent[s] == s - 1 for s in range(1, n))
    assert bool(unrelated) != chain          # a tree has unrelated triples, a chain none
    assert all(fresh[t] == 0.0 for t in unrelated)
    assert np.abs(fresh).max() > 0.0


def _peak_bytes(f, repeat=20):
    """Largest transient memory of one call (numpy buffers and Python objects, by tracemalloc)."""
    f()
    f()
    tracemalloc.start()
    try:
        peak = 0
        for _ in range(repeat):
            base = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            f()
            peak = max(peak, tracemalloc.get_traced_memory()[1] - base)
        return peak
    finally:
        tracemalloc.stop()


def test_no_allocation_in_the_data_path():
    """The per-cycle calls with data= allocate no array: their transient memory (a few hundred
    bytes of Python call overhead) stays below the size of the smallest output, one (nv,) vector
    of a 60-DoF chain; without data= the same call allocates its outputs (the test can see it)."""
    model = rd.load_urdf(models.chain(60, seed=0))
    q, v, _ = random_state(model, np.random.default_rng(3))
    data = rd.Data(model)
    smallest = 8 * model.nv                  # one (nv,) float64 buffer
    per_cycle = {
        'dynamics': lambda: rd.dynamics(model, q, v, data=data),
        'christoffel': lambda: rd.christoffel(model, q, data=data),
        'compute_all_terms': lambda: rd.compute_all_terms(model, q, v, data, christoffel=True),
        'observer_terms': lambda: rd.observer_terms(model, q, v, data=data),
        'gravity': lambda: rd.gravity(model, q, data=data),
    }
    for name, f in per_cycle.items():
        assert _peak_bytes(f) < smallest, name
    assert _peak_bytes(lambda: rd.dynamics(model, q, v)) > 3 * 8 * model.nv ** 2


def test_compute_all_terms_equals_separate_calls(model):
    rng = np.random.default_rng(4)
    data = rd.Data(model)
    for christoffel in (True, False, True):
        q, v, _ = random_state(model, rng)
        out = rd.compute_all_terms(model, q, v, data, christoffel=christoffel)
        assert out is data
        d = rd.dynamics(model, q, v)
        for name in d._fields:   # (another compiled kernel: fastmath may round differently)
            assert rel_err(getattr(data, name), getattr(d, name)) < 1e-14, name
        p, ctv, g = rd.observer_terms(model, q, v)     # the O(N) algorithm, independent of M, C
        assert rel_err(data.p, p) < 1e-13 and rel_err(data.ctv, ctv) < 1e-12
        assert np.array_equal(data.q, q) and np.array_equal(data.v, v)
        if christoffel:   # Algorithm 2 on Algorithm 1's composite inertias = the separate call
            assert rel_err(data.Gamma, rd.christoffel(model, q)) < 1e-14
        # the unchecked variant computes the same numbers
        other = rd.Data(model)
        rd.compute_all_terms_unchecked(model, q, v, other, christoffel=christoffel)
        for name in ('M', 'C', 'Mdot', 'g', 'p', 'ctv') + (('Gamma',) if christoffel else ()):
            assert np.array_equal(getattr(other, name), getattr(data, name)), name


def test_bad_input_changes_nothing_in_data(model):
    q, v, _ = random_state(model, np.random.default_rng(5))
    data = rd.Data(model)
    rd.compute_all_terms(model, q, v, data, christoffel=True)
    before = data.work.copy(), data.Gamma.copy()
    bad = q.copy()
    bad[-1] = np.nan
    for call in (lambda: rd.compute_all_terms(model, bad, v, data, christoffel=True),
                 lambda: rd.dynamics(model, bad, v, data=data),
                 lambda: rd.christoffel(model, bad, data=data),
                 lambda: rd.dynamics(model, q, v[:-1], data=data)):
        with pytest.raises(ValueError, match='q contains NaN|v must have shape'):
            call()
    assert np.array_equal(data.work, before[0]) and np.array_equal(data.Gamma, before[1])


def test_data_of_another_layout_is_rejected(model):
    other = rd.Data(rd.load_urdf(models.chain(3, seed=0)))
    q, v, _ = random_state(model, np.random.default_rng(6))
    with pytest.raises(ValueError, match='data was made for a model'):
        rd.dynamics(model, q, v, data=other)
    with pytest.raises(ValueError, match='must be a ros_dynamics.Data'):
        rd.dynamics(model, q, v, data=object())


def test_observer_update_from_data_equals_update(model):
    rng = np.random.default_rng(7)
    states = [random_state(model, rng) for _ in range(6)]
    a = rd.MomentumObserver(model, gain=30.0, friction_viscous=0.2, tau_average=True)
    b = rd.MomentumObserver(model, gain=30.0, friction_viscous=0.2, tau_average=True)
    data = rd.Data(model)
    for q, v, tau in states:
        ra = a.update(q, v, tau, 1e-3)
        rd.compute_all_terms(model, q, v, data)
        rb = b.update_from(data, tau, 1e-3)
        assert rel_err(ra, rb) < 1e-9
    assert np.abs(ra).max() > 0.0        # a residual was actually produced


# -- the frozen model -----------------------------------------------------------------------------

def test_model_is_frozen_and_owns_its_arrays():
    parent = np.array([-1, 0])
    m = rd.Model(name='two', body_names=['a', 'b'], joint_names=['j1', 'j2'], parent=parent,
                 jtype=[0, 0], X_R=np.tile(np.eye(3), (2, 1, 1)), X_p=np.zeros((2, 3)),
                 axis=[[0, 0, 1], [0, 1, 0]], mass=[1.0, 2.0], com=np.zeros((2, 3)),
                 inertia=np.tile(np.eye(3), (2, 1, 1)), link_frames={}, floating_base=False)
    parent[1] = -1                             # the caller's array is not the model's
    assert m.parent[1] == 0
    with pytest.raises(AttributeError, match='frozen'):
        m.gravity = np.zeros(3)
    for name in ('parent', 'mass', 'X_R', 'ints', 'reals', 'dof_parent'):
        with pytest.raises(ValueError):
            getattr(m, name)[0] = 0
    with pytest.raises(ValueError, match='free joint is only supported at the root'):
        m.copy(jtype=[0, 2])
    heavier = rd.attach_payload(m, 'b', 1.0) if 'b' in m.link_frames else m.copy(mass=[1.0, 3.0])
    assert heavier.reals is not m.reals and m.mass[1] == 2.0


# -- numba's disk cache is keyed on all core sources ----------------------------------------------

def test_core_kernels_are_stamped_with_all_core_sources():
    from ros_dynamics.core import api, jit, kernels, kinematics
    for kernel in (kernels.terms, kernels.observer_terms, kernels.dynamics_batch, kinematics.placements):
        locator = kernel._cache._impl.locator
        assert isinstance(locator, jit.CoreSourcesLocator)
        assert locator.get_source_stamp() == jit.sources_digest()
        # what else numba asks of a locator is the usual locator's (e.g. its warning when it
        # declines to cache a function names the source file)
        assert locator._py_file == kernel.py_func.__code__.co_filename
    # the stamp covers every core source: it differs from the one file numba would hash
    import hashlib
    with open(api.__file__, 'rb') as f:
        assert hashlib.sha256(f.read()).digest() != jit.sources_digest()


# -- configuration space ----------------------------------------------------------------------------

def test_configuration_helpers():
    fm = rd.load_urdf(models.chain(4, seed=1), floating_base=True)
    cfg = rd.configuration
    assert (cfg.base_nq(fm), cfg.base_nv(fm)) == (7, 6) and fm.joint_q_index(fm.joint_names[0]) == 7
    q = cfg.neutral(fm)
    assert cfg.is_normalized(fm, q) and q[6] == 1.0
    q[3:7] = [1.0, 2.0, 3.0, 4.0]
    assert not cfg.is_normalized(fm, q)
    qn = cfg.normalize(fm, q)
    assert abs(np.linalg.norm(qn[3:7]) - 1.0) < 1e-15 and np.allclose(qn[3:7] * np.sqrt(30), q[3:7])
    with pytest.raises(ValueError, match='unit quaternion'):
        rd.check_configuration(fm, q)
    # integrate: a pure base rotation about z by pi/2 in one step, joints move by v dt
    v = np.zeros(fm.nv)
    v[5], v[6] = np.pi / 2, 0.5
    q1 = cfg.integrate(fm, cfg.neutral(fm), v, 1.0)
    assert np.allclose(q1[3:7], [0, 0, np.sin(np.pi / 4), np.cos(np.pi / 4)]) and q1[7] == 0.5
