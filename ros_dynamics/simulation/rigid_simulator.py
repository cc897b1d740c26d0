"""Rigid-contact mode of the simulator: the plant's contacts by the OS LCP (Jain et al. 2012) instead of springs.

:class:`RigidContactSimulator` is a :class:`~ros_dynamics.simulation.plant.Simulator` whose
step integrates with :class:`~ros_dynamics.simulation.rigid_contact.RigidContactStepper`:
controller torques and the known-wrench contacts (pushes) enter as applied joint torques, the
sphere contacts of a :class:`~ros_dynamics.simulation.contact_geometry.SphereWorld` as LCP
impulses.  The ground-truth external torque of a sample is then the LCP's contact impulse
divided by the period, J^T F / dt (plus the pushes), which is exactly what the momentum
observer estimates (its residual integrates the same momentum balance).

Contact points of the bundled robots (:func:`urdf_spheres`): the sphere geometries of the URDF
(``<collision>``, else ``<visual>``: the quadruped's four feet, r = 2 cm).  The arm's wall scenario (:func:`rigid_scenario`)
uses a 1 cm sphere centred on the scenario's contact point (the rim of the tool flange) and
the scenario's wall plane moved back by that radius, so contact starts where the spring wall's
did.
"""

import xml.etree.ElementTree as ET

import numpy as np

from .contact_geometry import Plane, Sphere, SphereWorld
from .rigid_contact import RigidContactStepper
from .plant import PDGravityController, Simulator, WallContact, integrate
from .scenarios import make_scenario


class RigidContactSimulator(Simulator):
    """:class:`Simulator` with rigid contacts: ``world`` (a SphereWorld) handled by the OS LCP.

    Extra keywords: ``nf`` (friction directions), ``erp``; other arguments as Simulator.
    ``last_info`` holds the :class:`StepInfo` of the latest step (contacts, impulses, LCP).
    """

    def __init__(self, model, trajectory, controller=None, contacts=(), world=None, nf=4,
                 erp=0.2, **kwargs):
        super().__init__(model, trajectory, controller, contacts, **kwargs)
        self.world = world if world is not None else SphereWorld(model, [])
        self.stepper = RigidContactStepper(self.plant, self.world, dt=self.dt, nf=nf, erp=erp)
        self.last_info = None

    def _plant_step(self, q, v, tau, external):
        """OS-LCP step (Jain et al. 2012, Sec. 6-7) instead of the free forward dynamics; the contact
        impulses join the external forces as tau_ext += J^T F / dt and one wrench per active
        contact (the observer's ground truth)."""
        q1, v1, info = self.stepper.step(q, v, tau, lambda a, b, h: integrate(self.model, a, b, h))
        self.last_info = info
        tau_push, links, wrenches, points = external
        total = _total_impulses(info)
        active = [c for c, F in zip(info.contacts, total) if np.any(F)]
        links = tuple(links) + tuple(c.link_a for c in active)
        wrenches = tuple(wrenches) + tuple(np.concatenate([F / self.dt, np.zeros(3)])
                                           for F in total if np.any(F))
        points = tuple(points) + tuple(c.point_a for c in active)
        return q1, v1, (tau_push + info.tau_contact, links, wrenches, points)


def _total_impulses(info):
    """(m, 3) contact impulses of a step: collision (Sec. 7) plus contact (Sec. 6)."""
    if info.collision_impulses is None:
        return info.impulses
    return info.impulses + info.collision_impulses


def urdf_spheres(urdf, model):
    """The spheres of a URDF (path or XML) as :class:`Sphere` on the model's links: each link's
    ``<collision>`` spheres, or its ``<visual>`` spheres if it has no collision element."""
    text = urdf
    if not urdf.lstrip().startswith('<'):
        with open(urdf) as f:
            text = f.read()
    root = ET.fromstring(text)
    out = []
    for link in root.iter('link'):
        name = link.get('name')
        if name not in model.link_frames:
            continue
        shapes = link.findall('collision') or link.findall('visual')    # visual if no collision
        for col in shapes:
            sph = col.find('geometry/sphere')
            if sph is None:
                continue
            org = col.find('origin')
            xyz = [float(x) for x in org.get('xyz', '0 0 0').split()] if org is not None else [0.0] * 3
            out.append(Sphere(name, tuple(xyz), float(sph.get('radius')), name))
    return out


def rigid_scenario(model, scenario='wall', sphere_radius=0.01, mu=0.5, restitution=0.0, **kwargs):
    """:func:`make_scenario` in rigid mode: each spring-damper wall becomes a rigid plane touched
    by a sphere at the wall's contact point; pushes are kept.  Returns (sim, desc)."""
    sim, desc = make_scenario(model, scenario, **kwargs)
    spheres, planes, others = [], [], []
    for c in sim.contacts:
        if isinstance(c, WallContact):
            point = np.zeros(3) if c.point is None else c.point
            spheres.append(Sphere(c.link, tuple(point), sphere_radius, 'contact_point'))
            planes.append(Plane(tuple(c.p0 - sphere_radius * c.n), tuple(c.n), mu, restitution, 'wall'))
        else:
            others.append(c)
    world = SphereWorld(model, spheres, planes, margin=0.005)
    rsim = RigidContactSimulator(model, sim.trajectory, sim.controller, others, world=world,
                                 dt=sim.dt, q0=sim.q, v0=sim.v, noise_position=sim.noise[0],
                                 noise_velocity=sim.noise[1], noise_effort=sim.noise[2],
                                 friction_viscous=sim.fv, friction_coulomb=sim.fc)
    desc = dict(desc, mode='rigid', sphere_radius=sphere_radius)
    return rsim, desc


class _Hold:
    """A constant joint target (the trajectory interface of the simulator)."""

    def __init__(self, q):
        self.q = np.asarray(q, dtype=float)

    def __call__(self, t):
        return self.q.copy(), np.zeros_like(self.q), np.zeros_like(self.q)


class TrotTrajectory:
    """Open-loop trot of the bundled quadruped's joint targets around a standing ``pose``.

    After ``start`` s the diagonal pairs (LF, RH) and (RF, LH) alternate every half ``period``:
    the swing pair bends its knees by ``lift`` * sin (foot clearance, hips flexed by
    ``hip_lift`` times that) and swings its feet forward by 2 ``stride`` [rad of HFE], the stance
    pair sweeps them back (cosine profiles, the amplitude ramped in over 1 s).  Positive stride
    walks towards the trunk's +x.  No feedback: the rigid feet and the PD joints do the rest.
    """

    def __init__(self, model, pose_q, period=0.4, lift=0.3, stride=0.1, start=0.5, hip_lift=0.5):
        self.hip_lift = hip_lift
        self.q0 = np.asarray(pose_q, dtype=float)
        self.period, self.lift, self.stride, self.start = period, lift, stride, start
        self.legs = [n.split('_') for n in model.joint_names]

    def __call__(self, t):
        q, zero = self.q0.copy(), np.zeros_like(self.q0)
        if t < self.start:
            return q, zero, zero
        ramp = min(1.0, (t - self.start) / 1.0)
        phase = ((t - self.start) % self.period) / self.period
        s = (phase % 0.5) * 2.0                              # 0..1 within the half period
        for i, (leg, joint) in enumerate(self.legs):
            swing = (phase < 0.5) == (leg in ('LF', 'RH'))
            if swing and joint == 'KFE':
                q[i] -= ramp * self.lift * np.sin(np.pi * s)
            elif joint == 'HFE':
                # HFE > 0 moves the foot back (-x): the swing foot goes back to front and the
                # hip flexes to clear the ground; the stance feet sweep front to back
                sweep = self.stride * np.cos(np.pi * s)
                q[i] += ramp * ((sweep - self.hip_lift * self.lift * np.sin(np.pi * s)) if swing else -sweep)
        return q, zero, zero


def standing_quadruped(model, urdf, pose=(0.0, 0.7, -1.4), kp=60.0, kd=2.0, mu=0.8, dt=1e-3):
    """The floating-base quadruped standing on a floor with rigid feet, joints held by PD.

    ``pose`` = (HAA, HFE, KFE) angles for every leg; the base starts level with the feet just
    touching the floor z = 0.  Returns the :class:`RigidContactSimulator`.
    """
    if not model.floating_base:
        raise ValueError('standing_quadruped needs the floating-base model')
    nj = len(model.joint_names)
    qj = np.array([pose[['HAA', 'HFE', 'KFE'].index(n.split('_')[1])] for n in model.joint_names]) \
        if all('_' in n and n.split('_')[1] in ('HAA', 'HFE', 'KFE') for n in model.joint_names) \
        else np.zeros(nj)
    feet = [s for s in urdf_spheres(urdf, model)]
    q0 = model.neutral()
    q0[7:] = qj
    world = SphereWorld(model, feet, [Plane((0, 0, 0), (0, 0, 1), mu, 0.0, 'floor')], margin=0.01)
    centres, _ = world.poses(q0)
    q0[2] = -min(c[2] - s.radius for c, s in zip(centres, feet))
    return RigidContactSimulator(model, _Hold(qj), PDGravityController(model, kp, kd), (),
                                 world=world, dt=dt, q0=q0)


def trotting_quadruped(model, urdf, kp=40.0, kd=1.5, **trot):
    """The standing quadruped (:func:`standing_quadruped`) with a :class:`TrotTrajectory`."""
    sim = standing_quadruped(model, urdf, kp=kp, kd=kd)
    sim.trajectory = TrotTrajectory(model, sim.trajectory.q, **trot)
    return sim


def main(argv=None):
    """``python -m ros_dynamics.simulation.rigid_simulator [wall|push|mixed|quadruped|trot]
    [--duration s] [--out PNG]``: run a rigid-contact scenario (no ROS), print what the contacts
    did and a verdict, and save a plot (default ``out/<robot>_<scenario>.png``)."""
    import argparse
    import os
    from ..core import bundled_urdf, gravity, load_urdf
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument('scenario', nargs='?', default='wall', choices=['wall', 'push', 'mixed', 'quadruped', 'trot'])
    ap.add_argument('--duration', type=float, default=6.0)
    ap.add_argument('--out', default=None, help='plot file (default out/<robot>_<scenario>.png)')
    args = ap.parse_args(argv)
    legged = args.scenario in ('quadruped', 'trot')
    if legged:
        path = bundled_urdf('quadruped')
        model = load_urdf(path, floating_base=True)
        sim = (standing_quadruped if args.scenario == 'quadruped' else trotting_quadruped)(model, path)
    else:
        model = load_urdf(bundled_urdf('arm7'))
        sim, _ = rigid_scenario(model, args.scenario)
    steps = int(round(args.duration / sim.dt))
    was = ()
    t, base, forces, names = [], [], [], []     # per step: time, base pose, {contact: F [N]}
    for k in range(steps):
        s = sim.step()
        info = sim.last_info
        total = _total_impulses(info)
        now = tuple(c.name for c, F in zip(info.contacts, total) if np.any(F))
        f = {c.name: F / sim.dt for c, F in zip(info.contacts, total) if np.any(F)}
        names += [n for n in f if n not in names]
        t.append(s.t)
        base.append(np.array(s.q_true[:7]))
        forces.append(f)
        if now != was or (k + 1) % 1000 == 0:
            txt = ', '.join(f'{n}: F = {np.round(F, 2).tolist()} N' for n, F in f.items())
            print(f't = {s.t:6.3f} s  LCP size {info.lcp_size:3d}  {txt or "no contact"}')
            was = now
    t, base = np.array(t), np.array(base)
    F = np.array([[forces[i].get(n, np.zeros(3)) for n in names] for i in range(len(t))]) \
        if names else np.zeros((len(t), 0, 3))
    last = t >= t[-1] - 1.0                       # the last second
    if legged:
        weight = float(np.linalg.norm(gravity(model, s.q_true)[:3]))     # m |gravity|
        fz = F[:, :, 2].sum(axis=1) if names else np.zeros(len(t))
        feet = sum(1 for n in names if np.all(F[last, names.index(n), 2] > 0))
        tilt = np.degrees(2 * np.arcsin(np.clip(np.linalg.norm(base[:, 3:5], axis=1), 0, 1)))
        k1 = min(int(np.searchsorted(t, 1.0)), len(t) - 1)      # settled after 1 s
        settle, drift = (base[k1, 2] - base[0, 2]) * 1e3, (base[-1, 2] - base[k1, 2]) * 1e3
        print(f'verdict ({args.scenario}, {t[-1]:.1f} s): trunk height {base[0, 2]:.4f} m at the '
              f'start, {base[k1, 2]:.4f} m at {t[k1]:.1f} s (settling {settle:+.1f} mm as the PD '
              f'joints take the load), {base[-1, 2]:.4f} m at the end (drift {drift:+.2f} mm); '
              f'tilt at most {tilt.max():.1f} deg; '
              f'feet in contact through the last second: {feet} of {len(names)}; vertical '
              f'contact force over the last second {fz[last].mean():.1f} N against the weight '
              f'{weight:.1f} N (ratio {fz[last].mean() / weight:.4f}); base moved '
              f'{base[-1, 0] - base[0, 0]:+.3f} m in x')
        if args.scenario == 'quadruped':
            ok = abs(drift) < 1.0 and feet == 4 and abs(fz[last].mean() / weight - 1) < 0.01
            print('  -> ' + ('standing: all four feet carry the weight, the trunk holds its height'
                             if ok else 'NOT standing as expected'))
    else:
        mag = np.linalg.norm(F, axis=2).sum(axis=1) if names else np.zeros(len(t))
        on = mag > 0
        episodes = int(np.sum(on[1:] & ~on[:-1]) + (1 if on[0] else 0))
        print(f'verdict ({args.scenario}, {t[-1]:.1f} s): {episodes} contact episode(s), in '
              f'contact {on.mean() * 100:.0f} % of the time, peak contact force {mag.max():.1f} N, '
              f'median while in contact {np.median(mag[on]) if on.any() else 0.0:.1f} N')
    print(f'final q = {np.round(s.q_true, 4).tolist()}')
    out = args.out or os.path.join('out', {'quadruped': 'quadruped_standing', 'trot': 'quadruped_trot'}
                                   .get(args.scenario, f'arm7_rigid_{args.scenario}') + '.png')
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, axs = plt.subplots(2 if legged else 1, 1, figsize=(9, 6.5 if legged else 4), sharex=True,
                            squeeze=False)
    ax = axs[0, 0]
    for j, n in enumerate(names):
        ax.plot(t, F[:, j, 2] if legged else np.linalg.norm(F[:, j], axis=1), lw=0.8, label=n)
    if legged:
        ax.plot(t, fz, 'k', lw=1.2, label='sum')
        ax.axhline(weight, color='C3', ls='--', lw=1.0, label=f'weight m g = {weight:.1f} N')
        ax.set_ylabel('vertical contact force [N]')
        what = 'standing' if args.scenario == 'quadruped' else 'trotting'
        ax.set_title(f'floating-base quadruped {what} on rigid feet: the feet carry the weight')
        ah = axs[1, 0]
        ah.plot(t, base[:, 2] * 1e3, 'k', lw=1.0)
        ah.set_ylabel('trunk height [mm]')
        ah.set_xlabel('time [s]')
        ah.grid(alpha=0.3)
    else:
        ax.set_ylabel('contact force |F| [N]')
        ax.set_xlabel('time [s]')
        ax.set_title(f'arm7 against a rigid wall (LCP contacts), scenario {args.scenario}')
    ax.grid(alpha=0.3)
    if names:
        ax.legend(fontsize=8, ncol=3)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    print(f'plot saved to {os.path.abspath(out)}')


if __name__ == '__main__':
    main()
