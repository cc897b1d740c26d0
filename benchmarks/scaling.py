"""Run time vs number of bodies N for serial chains and binary trees (Echeandia & Wensing 2021, Figs. 2-3).

    python benchmarks/scaling.py            # N = 5, 10, 20, ..., 100  (~1 min)
    python benchmarks/scaling.py --quick    # N = 5, 10, 20, 40, 60, 100, fewer repeats

Times Algorithm 1 (rd.dynamics: M, C, dM/dt, g) and Algorithm 2 (rd.christoffel: Gamma) on
random revolute chains (models.chain) and binary trees (models.binary_tree), both

* "kernel": the compiled kernel with preallocated outputs (the algorithm itself), and
* "API":    the public call (validation + allocating and zeroing the outputs + kernel),

after checking the results against Pinocchio (M, C, g and Gamma; "rel. diff" column).

Writes scaling.md (the slopes and the times), scaling_chain.png, scaling_tree.png (log-log, fitted slopes of the kernel times over
N >= 20 in the legends, dashed reference curves N^2, N^3 for chains and N log N, N log^2 N for
trees) and scaling.csv to out/benchmarks/ (or --out-dir DIR).  Echeandia & Wensing predict O(N^2) / O(N^3)
for chains and O(N log N) / O(N log^2 N) for binary trees (depth ~ log2 N).
"""

MEASURES = ('ros_dynamics/core',)

import argparse
import csv
import sys
import time

import numpy as np

from common import RESULTS, interleaved, log, machine_info, output, report, wrote

import ros_dynamics as rd  # noqa: E402
from ros_dynamics import testing as models
from ros_dynamics.core import kernels  # noqa: E402
from ros_dynamics.core.jit import ready  # noqa: E402


FIT_FROM = 20


def accuracy(xml, m, q, v):
    """Max relative difference |ours - Pinocchio| / max(1, |Pinocchio|) over M, C, g and Gamma
    (None without Pinocchio), so that a fast but wrong kernel cannot look good."""
    try:
        import pinocchio as pin
    except ImportError:  # pragma: no cover
        return None
    pm = pin.buildModelFromXML(xml)
    pd = pm.createData()
    perm = np.array([m.joint_v_index(pm.names[j]) for j in range(1, pm.njoints)])
    qp, vp = q[perm], v[perm]
    ix = np.ix_(perm, perm)
    d = rd.dynamics(m, q, v)
    G = rd.christoffel(m, q)[np.ix_(perm, perm, perm)]
    E = np.eye(m.nv)
    Gp = np.stack([pin.computeCoriolisMatrix(pm, pd, qp, E[k]).copy() for k in range(m.nv)], axis=2)
    pairs = [(d.M[ix], pin.crba(pm, pd, qp)), (d.C[ix], pin.computeCoriolisMatrix(pm, pd, qp, vp)),
             (d.g[perm], pin.computeGeneralizedGravity(pm, pd, qp)), (G, Gp)]
    rel = [np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))) for a, b in pairs]
    return float(np.nanmax(rel)) if np.all(np.isfinite(rel)) else float('nan')


def time_model(xml, blocks, block_s, seed=0):
    m = rd.load_urdf(xml)
    n = m.nv
    rng = np.random.default_rng(seed)
    q, v = rng.uniform(-np.pi, np.pi, n), rng.uniform(-1, 1, n)
    err = accuracy(xml, m, q, v)
    data = rd.Data(m)
    G = data.Gamma
    terms, geometry = ready(kernels.terms), ready(kernels.geometry)
    point = np.zeros(3)
    r = interleaved({
        'dyn_kernel': lambda: terms(m.packed, data.work, q, v, 0),
        'dyn_api': lambda: rd.dynamics(m, q, v),
        'gam_kernel': lambda: geometry(m.packed, data.work, q, G, kernels.CHRISTOFFEL, point),
        'gam_api': lambda: rd.christoffel(m, q),
    }, blocks=blocks, block_s=block_s, stat='min', clock=time.thread_time)
    r['rel_diff'] = err
    return r


def slope(N, t):
    N, t = np.asarray(N, float), np.asarray(t, float)
    sel = N >= FIT_FROM
    return float(np.polyfit(np.log(N[sel]), np.log(t[sel]), 1)[0])


def local_slope(N, t):
    """Log-log slope between the two largest N (closest to the asymptotic order)."""
    return float(np.log(t[-1] / t[-2]) / np.log(N[-1] / N[-2]))


def plot(kind, N, rows, path):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    N = np.asarray(N, float)
    fig, ax = plt.subplots(figsize=(6.4, 4.8), dpi=100)
    if kind == 'chain':
        refs = {'dyn': (N ** 2, r'$N^2$'), 'gam': (N ** 3, r'$N^3$')}
    else:
        refs = {'dyn': (N * np.log2(N), r'$N\log N$'), 'gam': (N * np.log2(N) ** 2, r'$N\log^2 N$')}
    styles = {'dyn': ('C0', 'o', 'Alg. 1: M, C, dM/dt, g'), 'gam': ('C3', 's', r'Alg. 2: $\Gamma$')}
    for key, (color, marker, label) in styles.items():
        tk = np.array([r[f'{key}_kernel'] for r in rows]) * 1e6
        ta = np.array([r[f'{key}_api'] for r in rows]) * 1e6
        ref, rlabel = refs[key]
        sk, sa, sr = slope(N, tk), slope(N, ta), slope(N, ref)
        ax.loglog(N, tk, marker=marker, color=color, label=f'{label}, kernel (slope {sk:.2f})')
        ax.loglog(N, ta, marker=marker, color=color, ls=':', mfc='none', alpha=0.7,
                  label=f'{label}, API call (slope {sa:.2f})')
        ax.loglog(N, ref * tk[-1] / ref[-1], color='gray', ls='--', lw=1,
                  label=f'{rlabel} (slope {sr:.2f} here)')
    ax.set_xlabel('number of bodies / DoF N')
    ax.set_ylabel('time per call (us)')
    ax.set_title(f'{"Serial chains" if kind == "chain" else "Binary trees"} (revolute): '
                 f'Echeandia & Wensing Algs. 1-2')
    ax.grid(True, which='both', alpha=0.3)
    ax.legend(fontsize=7.5, loc='upper left')
    fig.text(0.99, 0.01, f'slopes fitted for N >= {FIT_FROM}', ha='right', fontsize=7, color='gray')
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--quick', action='store_true')
    ap.add_argument('--out-dir', '--outdir', dest='outdir', default=RESULTS,
                    help='folder for the plots and the CSV (default: out/benchmarks/)')
    args = ap.parse_args(argv)
    Ns = [5, 10, 20, 40, 60, 100] if args.quick else [5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
    blocks, block_s = (9, 0.005) if args.quick else (21, 0.01)
    t0 = time.perf_counter()
    log(f'machine: {machine_info()}')
    m = rd.load_urdf(models.chain(3))
    rd.dynamics(m, np.zeros(3), np.zeros(3)), rd.christoffel(m, np.zeros(3))  # load the JIT cache

    table = []
    slopes = {}
    for kind, gen in (('chain', models.chain), ('tree', models.binary_tree)):
        rows = []
        for i, n in enumerate(Ns):
            r = time_model(gen(n, seed=0), blocks, block_s)
            rows.append(r)
            log(f'[{kind} {i + 1}/{len(Ns)}] N={n:3d}  dynamics kernel {r["dyn_kernel"] * 1e6:9.2f} us '
                f'(API {r["dyn_api"] * 1e6:9.2f})   christoffel kernel {r["gam_kernel"] * 1e6:9.2f} us '
                f'(API {r["gam_api"] * 1e6:9.2f})   rel. diff vs Pinocchio {r["rel_diff"]:.1e}')
            if not r['rel_diff'] <= 1e-9:
                log(f'    WARNING: {kind} N={n} disagrees with Pinocchio (rel. diff {r["rel_diff"]:.1e})')
            table.append((kind, n, r['dyn_kernel'], r['dyn_api'], r['gam_kernel'], r['gam_api'], r['rel_diff']))
        path = output(args.outdir, f'scaling_{kind}.png')
        plot(kind, Ns, rows, path)
        wrote(path)
        for key in ('dyn_kernel', 'dyn_api', 'gam_kernel', 'gam_api'):
            slopes[kind, key] = slope(Ns, [r[key] for r in rows])
        for key in ('dyn', 'gam'):
            tk = np.array([r[key + '_kernel'] for r in rows])
            slopes[kind, key + '_local'] = local_slope(np.array(Ns, float), tk)

    csv_path = output(args.outdir, 'scaling.csv')
    with open(csv_path, 'w', newline='') as fh:
        w = csv.writer(fh)
        w.writerow(['topology', 'N', 'dynamics_kernel_us', 'dynamics_api_us', 'christoffel_kernel_us',
                    'christoffel_api_us', 'max_rel_diff_vs_pinocchio'])
        for kind, n, *ts, e in table:
            w.writerow([kind, n] + [f'{t * 1e6:.3f}' for t in ts] + [f'{e:.1e}'])
    wrote(csv_path)

    Nf = np.array(Ns, float)
    ref = {('chain', 'dyn'): slope(Nf, Nf ** 2), ('chain', 'gam'): slope(Nf, Nf ** 3),
           ('tree', 'dyn'): slope(Nf, Nf * np.log2(Nf)), ('tree', 'gam'): slope(Nf, Nf * np.log2(Nf) ** 2)}
    lines = [f'# Scaling with N (N = {Ns[0]}..{Ns[-1]}; log-log slopes fitted over N >= {FIT_FROM})',
             '', 'Minimum thread CPU time per call over interleaved blocks; the plots '
             '(scaling_chain.png, scaling_tree.png) and scaling.csv of the same run beside this file.',
             '', '| topology | algorithm | slope, kernel | slope, API call | expected | expected '
             f'slope on this range | local kernel slope, N={Ns[-2]}..{Ns[-1]} |',
             '|---|---|---:|---:|---|---:|---:|']
    exp = {('chain', 'dyn'): 'O(N^2)', ('chain', 'gam'): 'O(N^3)',
           ('tree', 'dyn'): 'O(N log N)', ('tree', 'gam'): 'O(N log^2 N)'}
    for kind in ('chain', 'tree'):
        for key, name in (('dyn', 'Alg. 1 dynamics'), ('gam', 'Alg. 2 christoffel')):
            lines.append(f'| {kind} | {name} | {slopes[kind, key + "_kernel"]:.2f} | '
                         f'{slopes[kind, key + "_api"]:.2f} | {exp[kind, key]} | '
                         f'{ref[kind, key]:.2f} | {slopes[kind, key + "_local"]:.2f} |')
    lines += ['', '| topology | N | dynamics kernel (us) | dynamics API (us) | christoffel kernel '
              '(us) | christoffel API (us) | max rel. diff vs Pinocchio (M, C, g, Gamma) |',
              '|---|---:|---:|---:|---:|---:|---:|']
    bad = []
    for kind, n, *ts, e in table:
        flag = '' if e <= 1e-9 else ' **(wrong)**'
        if flag:
            bad.append(f'{kind} N={n}')
        lines.append(f'| {kind} | {n} | ' + ' | '.join(f'{t * 1e6:.1f}' for t in ts) +
                     f' | {e:.1e}{flag} |')
    if bad:
        lines += ['', f'**Warning:** results disagree with Pinocchio (rel. diff > 1e-9) for '
                  f'{", ".join(bad)}; their timings do not describe a correct computation.']
    report(output(args.outdir, 'scaling.md'), '\n'.join(lines) + '\n')
    log(f'done in {time.perf_counter() - t0:.0f} s')
    return 0


if __name__ == '__main__':
    sys.exit(main())
