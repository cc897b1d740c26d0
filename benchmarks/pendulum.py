"""The Sec. 8 experiment of Jain et al. (2012): an n-link pendulum of spheres hitting a floor, a wall and itself.

    python benchmarks/pendulum.py                 # n = 3, 6, 12, 15, 24, 30; 3 s of motion each
    python benchmarks/pendulum.py --quick         # n = 3, 6, 12; 1 s
    python benchmarks/pendulum.py --duration 5 --n 12

Set-up as in the paper: n identical 1 kg solid spheres on pin joints, 12 m long in total (radius
12 / 2n), base at 10 m, floor z = 0, a wall at x = 4 m, friction 0.5 and restitution 0.5 for
every contact (floor, wall, sphere-sphere of non-adjacent links), 1 ms steps, gravity 9.8,
start at pi/4 (first joint; the chain straight) with 1 rad/s towards the wall, n_f = 4.

Two variants of the same minimal-coordinate OS time stepper are run on the same trajectory:

* "OS":    Lambda from rd.contact_compliance (the O(N) + O(m^2) recursion);
* "dense": Lambda = J M^-1 J^T formed densely through M^-1 (inverse of the CRBA mass matrix).

and, at every contact state of the OS run, the collision LCP (Eq. 54) is also set up and solved
in the paper's NMC/OS formulation (benchmarks/nmc_os.py: links as free bodies, hinges as 5n
bilateral rows), timed against the same LCP in the OS formulation, and checked to give the same
contact velocity changes: the analogue of Table 2's speed-up column.
Reports per n: the OS LCP size n_u (n_f + 2) (with 4 contacts: 24), contacts per step, CPU time
per step of each variant and of the Lambda set-up alone, and the speed-up.  Every step's LCP is
checked (complementarity, friction polyhedron) and the worst violation reported.  Writes
pendulum.md, pendulum_n12.png (height and normal velocity of the last link, like Fig. 6) and
pendulum_snapshots.png (like Fig. 5) to out/benchmarks/ (or --out-dir DIR); the run quoted in
docs/reproduction.md is kept in benchmarks/results/.
"""

MEASURES = ('ros_dynamics/core', 'ros_dynamics/simulation')

import argparse
import time

import numpy as np

from common import add_out_dir, log, output, report, wrote

import ros_dynamics as rd  # noqa: E402
from ros_dynamics import testing  # noqa: E402
from ros_dynamics.simulation.contact_geometry import Plane, Sphere, SphereWorld  # noqa: E402
from ros_dynamics.simulation.rigid_contact import RigidContactStepper  # noqa: E402
from ros_dynamics.simulation.lcp import LCPError  # noqa: E402
from ros_dynamics.simulation.plant import integrate  # noqa: E402

from nmc_os import nmc_os_compression, os_compression  # noqa: E402

LENGTH, BASE, WALL, MU, EPS, DT, NF = 12.0, 10.0, 4.0, 0.5, 0.5, 1e-3, 4


def setup(n):
    model = rd.load_urdf(testing.sphere_pendulum(n, LENGTH, 1.0, BASE))
    model = model.copy(gravity=np.array([0.0, 0.0, -9.8]))
    r = LENGTH / (2 * n)
    spheres = [Sphere(f'link_{k}', (0.0, 0.0, -r), r, f's{k}') for k in range(n)]
    planes = [Plane((0, 0, 0), (0, 0, 1), MU, EPS, 'floor'), Plane((WALL, 0, 0), (-1, 0, 0), MU, EPS, 'wall')]
    world = SphereWorld(model, spheres, planes, self_pairs='all', margin=0.02 * r + 0.01,
                        sphere_mu=MU, sphere_restitution=EPS)
    q0, v0 = np.zeros(n), np.zeros(n)
    q0[0], v0[0] = np.pi / 4, -1.0
    return model, world, q0, v0


class Timed:
    """Wraps the stepper's compliance to accumulate the Lambda set-up CPU time."""

    def __init__(self, stepper):
        self.t, self.calls = 0.0, 0
        inner = stepper._compliance

        def timed(*a):
            t0 = time.perf_counter()
            out = inner(*a)
            self.t += time.perf_counter() - t0
            self.calls += 1
            return out
        stepper._compliance = timed


def lcp_violation(info):
    if info.z is None:
        return 0.0
    z, w = info.z, info.w
    k = len(info.beta) // len(info.contacts)
    cone = max(info.beta[k * i + 1:k * (i + 1)].sum() - c.mu * info.beta[k * i] for i, c in enumerate(info.contacts))
    return max(-z.min(), -w.min(), abs(z @ w), cone, 0.0)


def compare_collision_lcps(model, world, stepper, q, v, acc):
    """Time the NMC/OS and the OS collision LCP (Eq. 54, set-up + solve) at this state and
    compare the contact velocity changes they produce (they must agree)."""
    contacts = world(q)
    if not contacts:
        return
    nodes, ia, ib = stepper._nodes(contacts)
    Q = stepper._Q_u(ia, ib, len(nodes))
    G = Q @ stepper._jacobian(q, nodes)
    t0 = time.perf_counter()
    try:
        Fn, acc['size'] = nmc_os_compression(model, q, v, nodes, ia, ib, contacts, NF)
    except LCPError:
        Fn = None
        acc['fails'] += 1
    t1 = time.perf_counter()
    Fo, _ = os_compression(model, q, v, nodes, Q, G, contacts, NF)
    t2 = time.perf_counter()
    acc['t_nmc'] += t1 - t0
    acc['t_os'] += t2 - t1
    acc['count'] += 1
    if Fn is not None:
        Lu = Q @ rd.contact_compliance(model, q, nodes) @ Q.T
        acc['diffs'].append(np.abs(Lu @ (Fn - Fo).ravel()).max() / max(1e-3, np.abs(G @ v).max()))


def simulate(n, variant, duration, record=False, compare=False):
    model, world, q, v = setup(n)
    stepper = RigidContactStepper(model, world, dt=DT, nf=NF, compliance=variant)
    timer = Timed(stepper)
    tau = np.zeros(n)
    steps = int(round(duration / DT))
    sizes, ncont, worst, trace, snaps = [], [], 0.0, [], []
    step_fn = lambda a, b, h: integrate(model, a, b, h)  # noqa: E731
    t0 = time.process_time()
    t_contact = 0.0
    nmc = dict(t_nmc=0.0, t_os=0.0, count=0, fails=0, diffs=[], size=0)
    for k in range(steps):
        if compare:
            compare_collision_lcps(model, world, stepper, q, v, nmc)
        ts = time.perf_counter()
        q, v, info = stepper.step(q, v, tau, step_fn)
        if info.contacts:
            t_contact += time.perf_counter() - ts
            sizes.append(info.lcp_size)
            ncont.append(len(info.contacts))
            worst = max(worst, lcp_violation(info))
        if record:
            R, p = rd.link_placement(model, q, f'link_{n - 1}')
            c = p + R @ np.array([0.0, 0.0, -LENGTH / (2 * n)])
            J = rd.link_jacobian(model, q, f'link_{n - 1}', (0.0, 0.0, -LENGTH / (2 * n)))
            trace.append((k * DT + DT, c[2], (J[:3] @ v)[2]))
            if k % 250 == 0:
                snaps.append((k * DT, world.poses(q)[0]))
        if (k + 1) % 1000 == 0:
            log(f'  n={n:2d} {variant:5s} t={(k + 1) * DT:.1f} s')
    cpu = time.process_time() - t0
    return dict(nmc=nmc, cpu=cpu / steps, lam=timer.t / max(1, timer.calls), total=cpu,
                contact_step=t_contact / max(1, len(sizes)), sizes=sizes, ncont=ncont, worst=worst,
                trace=np.array(trace), snaps=snaps, q=q, radius=LENGTH / (2 * n))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--quick', action='store_true')
    ap.add_argument('--duration', type=float, default=None)
    ap.add_argument('--n', type=int, nargs='*', default=None)
    add_out_dir(ap)
    args = ap.parse_args()
    ns = args.n or ([3, 6, 12] if args.quick else [3, 6, 12, 15, 24, 30])
    duration = args.duration or (1.0 if args.quick else 3.0)
    simulate(3, 'os', 0.3)           # compile (reaches a contact)
    simulate(3, 'dense', 0.01)
    rows, nmc_rows, fig6 = [], [], None
    for n in ns:
        res = {}
        for variant in ('os', 'dense'):
            log(f'n={n} {variant} ...')
            res[variant] = simulate(n, variant, duration, record=(variant == 'os' and n == 12))
        log(f'n={n} OS run again, with the NMC/OS collision LCP at every contact state ...')
        res['nmc'] = simulate(n, 'os', duration, compare=True)
        o, d = res['os'], res['dense']
        if n == 12:
            fig6 = o
        sizes = np.array(o['sizes']) if o['sizes'] else np.zeros(1)
        rows.append((n, int(sizes.max()), float(np.mean(o['ncont'])) if o['ncont'] else 0.0, len(o['sizes']),
                     o['total'], d['total'], o['contact_step'], d['contact_step'], o['lam'], d['lam'],
                     d['total'] / o['total'], max(o['worst'], d['worst']),
                     float(np.abs(o['q'] - d['q']).max()), 24 in o['sizes']))
        x = res['nmc']['nmc']
        nmc_rows.append((n, 5 * n + 24, x['t_os'] / max(1, x['count']), x['t_nmc'] / max(1, x['count']),
                         x['t_nmc'] / max(1e-12, x['t_os']), x['count'], x['fails'],
                         float(np.median(x['diffs'])) if x['diffs'] else np.nan,
                         float(np.max(x['diffs'])) if x['diffs'] else np.nan))
    lines = [f'# Pendulum of Jain et al. (2012), Sec. 8 ({duration:g} s simulated per run, dt = 1 ms, n_f = 4)', '',
             'CPU time per step (process time), both variants on the same run.', '',
             '| links | OS LCP size (max) | contacts/step (mean, contact steps) | contact steps | OS run [s] | dense run [s] '
             '| OS contact step [ms] | dense contact step [ms] | Lambda OS [us] | Lambda dense [us] | speed-up (run) '
             '| worst LCP residual | max abs q diff OS vs dense |',
             '|---|---|---|---|---|---|---|---|---|---|---|---|---|']
    for n, size, nc, ncs, to, td, co, cd, lo, ld, su, worst, dq, had24 in rows:
        lines.append(f'| {n} | {size}{" (24 seen)" if had24 else ""} | {nc:.2f} | {ncs} | {to:.2f} | {td:.2f} | '
                     f'{co * 1e3:.2f} | {cd * 1e3:.2f} | {lo * 1e6:.0f} | {ld * 1e6:.0f} | {su:.2f} | {worst:.1e} | {dq:.1e} |')
    lines += ['', '## Table 2 analogue: the collision LCP (Eq. 54, set-up + solve) in the OS and the NMC/OS formulation', '',
              'At every contact state of the OS run, the same collision LCP is built and solved both ways: OS '
              '(Lambda by the O(N)+O(m^2) recursion, LCP size n_u(n_f+2)) and NMC/OS (links as free bodies, '
              '5 hinge rows per link as bilateral constraints, Lambda = J M^-1 J^T of the non-minimal '
              'coordinates, mixed LCP of size 5n + n_u(n_f+2) with the bilateral rows eliminated). '
              'The contact velocity changes of the two must agree.', '',
              '| links | LCP size OS (4 contacts) | LCP size NMC/OS (4 contacts) | OS [us] | NMC/OS [us] | speed-up | '
              'states | NMC/OS Lemke failures | velocity diff. median | max |',
              '|---|---|---|---|---|---|---|---|---|---|']
    for n, size_nmc, t_os, t_nmc, su, cnt, fails, dmed, dmax in nmc_rows:
        lines.append(f'| {n} | 24 | {size_nmc} | {t_os * 1e6:.0f} | {t_nmc * 1e6:.0f} | {su:.1f} | {cnt} | {fails} | '
                     f'{dmed:.1e} | {dmax:.1e} |')
    lines += ['', "Paper's Table 2 (OS vs NMC/OS, their whole runs): 3: 0.63 vs 2.20 s (3.5x), 6: 1.0 vs 4.44 (4.4x), "
              '12: 1.88 vs 15.7 (8.4x), 15: 2.91 vs 33.6 (11.5x), 24: 4.76 vs 127.9 (26.9x), 30: 5.13 vs 257.7 (50.3x); '
              'OS LCP size 24 throughout.']
    report(output(args.out_dir, 'pendulum.md'), '\n'.join(lines) + '\n')
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    if fig6 is not None and len(fig6['trace']):
        tr = fig6['trace']
        fig, ax = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
        ax[0].plot(tr[:, 0], tr[:, 1], 'r')
        ax[0].set_ylabel('last link height [m]')
        ax[1].plot(tr[:, 0], tr[:, 2], 'r')
        ax[1].set_ylabel('normal (z) velocity [m/s]')
        ax[1].set_xlabel('time [s]')
        for a in ax:
            a.grid(alpha=0.3)
        ax[0].set_title('12-link pendulum, OS formulation: the last link (cf. Jain et al., Fig. 6)')
        fig.tight_layout()
        path = output(args.out_dir, 'pendulum_n12.png')
        fig.savefig(path, dpi=120)
        wrote(path)
        fig, ax = plt.subplots(figsize=(8, 6))
        cmap = plt.get_cmap('viridis')
        for i, (t, centres) in enumerate(fig6['snaps']):
            col = cmap(i / max(1, len(fig6['snaps']) - 1))
            ax.plot([0] + list(centres[:, 0]), [BASE] + list(centres[:, 2]), '-', color=col, lw=0.8)
            for c in centres:
                ax.add_patch(plt.Circle((c[0], c[2]), fig6['radius'], fill=False, color=col, lw=0.8))
            ax.annotate(f'{t:.2f} s', (centres[-1, 0], centres[-1, 2]), fontsize=7, color=col)
        ax.axhline(0, color='k')
        ax.axvline(WALL, color='k')
        ax.set_aspect('equal')
        ax.set_xlim(-10, 5)
        ax.set_ylim(-0.5, 11)
        ax.set_xlabel('x [m] (wall at x = 4 m)')
        ax.set_ylabel('z [m] (floor at z = 0, pivot at 10 m)')
        ax.set_title('12-link pendulum every 0.25 s, colour = time (cf. Jain et al., Fig. 5)')
        fig.tight_layout()
        path = output(args.out_dir, 'pendulum_snapshots.png')
        fig.savefig(path, dpi=120)
        wrote(path)


if __name__ == '__main__':
    main()
