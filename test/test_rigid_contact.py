"""Rigid contact and collisions by the OS formulation (Jain et al. 2012, Secs. 2, 6, 7): LCP conditions on
every step, non-penetration, energy through collisions, resting contact, stick/slip on an incline."""
import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics import testing
from ros_dynamics.simulation.contact_geometry import Plane, Sphere, SphereWorld
from ros_dynamics.simulation.rigid_contact import RigidContactStepper
from ros_dynamics.simulation.plant import integrate

pytestmark = pytest.mark.core

G = 9.81
R = 0.05


def _ball(gravity=(0.0, 0.0, -G)):
    model = rd.load_urdf(testing.point_mass(1.0, R))
    return model.copy(gravity=np.asarray(gravity, float))


def _energy(model, q, v):
    """Kinetic + potential energy; the potential from the work of gravity on each body's CoM."""
    M = rd.mass_matrix(model, q)
    pe = 0.0
    for b, name in enumerate(model.body_names):
        Rb, pb = rd.link_placement(model, q, name)
        pe -= model.mass[b] * model.gravity @ (pb + Rb @ model.com[b])
    return 0.5 * v @ M @ v + pe


def _check_lcp(info, tol=1e-7):
    """Complementarity, the friction polyhedron and the normal impulse sign (Eqs. 10-14)."""
    if info.z is None:
        return
    z, w = info.z, info.w
    scale = 1.0 + np.abs(z).max()
    assert np.all(z >= -tol * scale) and np.all(w >= -tol * scale)
    assert abs(z @ w) < tol * scale * (1 + np.abs(w).max())
    k = len(info.beta) // len(info.contacts)
    for i, c in enumerate(info.contacts):
        b = info.beta[k * i:k * (i + 1)]
        assert b[1:].sum() <= c.mu * b[0] + tol * scale          # inside the friction polyhedron
        assert info.impulses[i] @ c.normal >= -tol * scale       # no pulling


def _run(model, world, q, v, steps, dt=1e-3, tau=None, check=True):
    stepper = RigidContactStepper(model, world, dt=dt)
    tau = np.zeros(model.nv) if tau is None else tau
    out = []
    for _ in range(steps):
        q, v, info = stepper.step(q, v, tau, lambda q_, v_, h: integrate(model, q_, v_, h))
        if check:
            _check_lcp(info)
        out.append((q.copy(), v.copy(), info))
    return out


def test_bouncing_ball_loses_energy_at_each_collision_and_never_penetrates():
    model = _ball()
    world = SphereWorld(model, [Sphere('ball', radius=R)], [Plane(restitution=0.5, mu=0.3)])
    q, v = np.array([0.0, 0.0, 1.0]), np.array([0.3, 0.0, 0.0])
    traj = _run(model, world, q, v, steps=2500)
    E = np.array([_energy(model, s[0], s[1]) for s in traj])
    z = np.array([s[0][2] for s in traj])
    assert z.min() >= R - 1e-9                                   # non-penetration
    collisions = [k for k, s in enumerate(traj) if s[2].collision_impulses is not None
                  and np.abs(s[2].collision_impulses).max() > 0]
    assert len(collisions) >= 2
    assert np.all(np.diff(E) <= 1e-9)                            # never gains energy
    # first bounce: normal speed ratio = restitution (Sec. 7's decompression with eps = 0.5)
    k = collisions[0]
    vz_before, vz_after = traj[k - 1][1][2], traj[k][1][2]
    assert vz_after == pytest.approx(-0.5 * vz_before, rel=0.02)


def test_resting_contact_stays_at_rest_for_10_s():
    model = _ball()
    world = SphereWorld(model, [Sphere('ball', radius=R)], [Plane(restitution=0.5)])
    q, v = np.array([0.2, -0.1, R]), np.zeros(3)
    traj = _run(model, world, q, v, steps=10000, dt=1e-3, check=False)
    drift = max(np.abs(s[0] - q).max() for s in traj)
    assert drift < 1e-9                                          # stated tolerance: 1 nm over 10 s
    assert max(np.abs(s[1]).max() for s in traj) < 1e-9
    _check_lcp(traj[-1][2])
    assert traj[-1][2].impulses[0] @ [0, 0, 1] == pytest.approx(G * 1e-3, rel=1e-9)   # m g dt


@pytest.mark.parametrize('angle_deg,sticks', [(20.0, True), (25.0, True), (29.0, False), (35.0, False)])
def test_incline_sticks_below_and_slides_above_the_friction_angle(angle_deg, sticks):
    """A point mass on a plane tilted by `angle` (gravity tilted instead), mu = 0.5: the friction
    angle is atan(0.5) = 26.57 deg; the polyhedron's directions contain the slope direction."""
    a = np.radians(angle_deg)
    model = _ball(gravity=(G * np.sin(a), 0.0, -G * np.cos(a)))
    world = SphereWorld(model, [Sphere('ball', radius=R)], [Plane(mu=0.5)])
    q, v = np.array([0.0, 0.0, R]), np.zeros(3)
    traj = _run(model, world, q, v, steps=500)
    x = np.array([s[0][0] for s in traj])
    if sticks:
        assert np.abs(x).max() < 1e-12
    else:
        t = 1e-3 * np.arange(1, 501)
        acc = G * (np.sin(a) - 0.5 * np.cos(a))
        assert x[-1] == pytest.approx(0.5 * acc * t[-1] ** 2, rel=0.01)
        assert np.all(np.abs([s[0][1] for s in traj]) < 1e-12)       # no sideways drift


def test_os_and_dense_compliance_give_the_same_pendulum_motion():
    model = rd.load_urdf(testing.sphere_pendulum(4))
    r = 12.0 / 8
    spheres = [Sphere(f'link_{k}', (0, 0, -r), r) for k in range(4)]
    world = SphereWorld(model, spheres, [Plane((0, 0, 0), (0, 0, 1), 0.5, 0.5, 'floor'),
                                         Plane((4, 0, 0), (-1, 0, 0), 0.5, 0.5, 'wall')],
                        self_pairs='all', sphere_mu=0.5, sphere_restitution=0.5)
    q0, v0 = np.array([np.pi / 4, 0, 0, 0]), np.array([-1.0, 0, 0, 0])
    runs = {}
    for variant in ('os', 'dense'):
        stepper = RigidContactStepper(model, world, dt=1e-3, compliance=variant)
        q, v = q0.copy(), v0.copy()
        E0, ncontacts = _energy(model, q, v), 0
        for _ in range(1500):
            q, v, info = stepper.step(q, v, np.zeros(4), lambda a, b, h: integrate(model, a, b, h))
            _check_lcp(info)
            ncontacts += len(info.contacts)
        assert _energy(model, q, v) < E0
        runs[variant] = (q, v, ncontacts)
    assert runs['os'][2] > 0                                      # it did hit the floor
    np.testing.assert_allclose(runs['os'][0], runs['dense'][0], atol=1e-6)
