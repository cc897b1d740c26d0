"""Cost of the OSCM Lambda = J M^-1 J^T vs the number of bodies N at fixed m (Jain et al. 2012, appendix).

    python benchmarks/contact_compliance_scaling.py [--quick]

Random revolute chains (ros_dynamics.testing.chain) with m = 4 contact nodes (on the last link
and at 1/4, 1/2, 3/4 of the chain).  Compares, interleaved in one process:

* "os":    rd.contact_compliance(..., data=data), the O(N) + O(m^2) articulated-body recursion
           (public call into a reused rd.Data);
* "dense": J M^-1 J^T from rd.link_jacobian, rd.mass_matrix and a dense Cholesky solve.

Times are the minimum per-call CPU time of this thread (time.thread_time) over interleaved
blocks, with BLAS on one thread, so the load of a shared machine does not count.

Fits the log-log slope of each over N >= 32 (expected ~1 for "os", ~2-3 for "dense") and
writes contact_compliance_scaling.csv and .png to out/benchmarks/ (or --out-dir DIR).
"""

MEASURES = ('ros_dynamics/core',)

import argparse
import csv
import os

for _var in ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_var, '1')     # dense on one thread: its CPU time is thread_time

import time  # noqa: E402

import numpy as np  # noqa: E402

from common import add_out_dir, interleaved, log, output, report, wrote

import ros_dynamics as rd  # noqa: E402
from ros_dynamics import testing as models  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--quick', action='store_true')
    add_out_dir(ap)
    args = ap.parse_args()
    Ns = [8, 16, 32, 64, 128] if args.quick else [8, 16, 32, 64, 128, 256, 512]
    rows = []
    for N in Ns:
        model = rd.load_urdf(models.chain(N, seed=1))
        q = np.random.default_rng(N).uniform(-1, 1, model.nq)
        points = [(f'link_{k}', (0.05, 0.0, 0.02)) for k in (N // 4, N // 2, 3 * N // 4, N - 1)]

        def dense():
            J = np.vstack([rd.link_jacobian(model, q, link, x)[:3] for link, x in points])
            Mq = rd.mass_matrix(model, q)
            c = np.linalg.cholesky(Mq)
            Y = np.linalg.solve(c, J.T)
            return Y.T @ Y

        data = rd.Data(model)
        L = rd.contact_compliance(model, q, points)
        err = np.abs(L - dense()).max() / np.abs(L).max()
        t = interleaved({'os': lambda: rd.contact_compliance(model, q, points, data=data),
                         'dense': dense},
                        blocks=11 if args.quick else 21, clock=time.thread_time, stat='min')
        rows.append((N, t['os'], t['dense'], err))
        log(f'N={N:4d}  os {t["os"] * 1e6:9.1f} us  dense {t["dense"] * 1e6:9.1f} us  rel.diff {err:.1e}')
    Nv = np.array([r[0] for r in rows], float)
    fit = Nv >= 32
    slopes = {k: np.polyfit(np.log(Nv[fit]), np.log([r[i] for r, f in zip(rows, fit) if f]), 1)[0]
              for k, i in (('os', 1), ('dense', 2))}
    lines = ['# Contact compliance against N', '',
             'Chains of N bodies with m = 4 contact nodes; minimum thread CPU time per call over '
             'interleaved blocks; rel. diff = max |recursion - dense| / max |dense|.', '',
             '| N | os [us] | dense J M^-1 J^T [us] | dense/os | rel. diff |', '|---|---|---|---|---|']
    lines += [f'| {N} | {to * 1e6:.1f} | {td * 1e6:.1f} | {td / to:.1f} | {err:.1e} |'
              for N, to, td, err in rows]
    lines += ['', f'log-log slope over N >= 32: os {slopes["os"]:.2f}, dense {slopes["dense"]:.2f}']
    report(output(args.out_dir, 'contact_compliance_scaling.md'), '\n'.join(lines) + '\n')
    csv_path = output(args.out_dir, 'contact_compliance_scaling.csv')
    png_path = output(args.out_dir, 'contact_compliance_scaling.png')
    with open(csv_path, 'w', newline='') as f:
        w = csv.writer(f)
        w.writerow(['N', 'os_s', 'dense_s', 'rel_diff'])
        w.writerows(rows)
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.loglog(Nv, [r[1] * 1e6 for r in rows], 'o-', label=f'O(N)+O(m²) recursion (slope {slopes["os"]:.2f})')
    ax.loglog(Nv, [r[2] * 1e6 for r in rows], 's-', label=f'dense J M⁻¹ Jᵀ (slope {slopes["dense"]:.2f})')
    ax.set_xlabel('bodies N (chain), m = 4 contact nodes')
    ax.set_ylabel('time per call [µs]')
    ax.grid(True, which='both', alpha=0.3)
    ax.legend()
    fig.tight_layout()
    ax.set_title('$\\Lambda$ of 4 contact nodes: recursion vs dense')
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)
    wrote(csv_path, png_path)


if __name__ == '__main__':
    main()
