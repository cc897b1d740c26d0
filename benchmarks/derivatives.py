"""dtau/dv of inverse dynamics: Algorithm 1 (Echeandia & Wensing 2021, Remark 3) vs Pinocchio's RNEA derivatives.

    python benchmarks/derivatives.py            # writes out/benchmarks/derivatives.md
    python benchmarks/derivatives.py --quick    # fewer timing blocks

For each robot (7/20/40-DoF random chains, a 20-DoF binary tree, the Franka Panda and the
floating-base ANYmal of example-robot-data) it checks that rd.inverse_dynamics_dv agrees with
pin.computeRNEADerivatives (joints matched by name; free-flyer conventions are identical), then
times, interleaved in one process, at the Python-call level:

* ours:      rd.inverse_dynamics_dv(model, q, v): one Algorithm 1 pass (M, C, dM/dt, g) and
             2C (+ the free-joint correction -M[:, :6] (nu_0 x) for a floating base)
* pin RNEA': pin.computeRNEADerivatives(q, v, a), Pinocchio's dedicated derivative algorithm.
             NOTE: it returns dtau/dq and M (= dtau/da) as well, so it does more work than
             dtau/dv alone; there is no Pinocchio call for dtau/dv only.
* pin C:     pin.computeCoriolisMatrix(q, v), Pinocchio's version of Algorithm 1 (2C is its
             dtau/dv for fixed bases): what the same route costs in C++.

Ratios are formed from numbers measured in the same run; times are CPU time of this thread
(time.thread_time), since the shared 2-core machine is often loaded by other processes.
"""

import argparse
import sys
import time

import numpy as np

from common import (add_out_dir, example_robot_data_urdf, interleaved, log, output, provenance,
                    report, robot_sources, us)

import ros_dynamics as rd  # noqa: E402  (common puts the checkout on sys.path)
from ros_dynamics import testing as models  # noqa: E402


class FloatingPair:
    """A URDF loaded by both libraries (free flyer if floating), v/q maps matched by joint name."""

    def __init__(self, label, source, floating):
        import pinocchio as pin
        self.label = label
        self.model = rd.load_urdf(source, floating_base=floating)
        xml = source.lstrip().startswith('<')
        args = (pin.JointModelFreeFlyer(),) if floating else ()
        self.pm = (pin.buildModelFromXML(source, *args) if xml else pin.buildModelFromUrdf(source, *args))
        self.pd = self.pm.createData()
        fq, fv = (7, 6) if floating else (0, 0)
        names = self.model.joint_names
        self.iq = np.array(list(range(fq)) + [self.pm.idx_qs[self.pm.getJointId(n)] for n in names])
        self.iv = np.array(list(range(fv)) + [self.pm.idx_vs[self.pm.getJointId(n)] for n in names])

    def states(self, K, seed):
        rng = np.random.default_rng(seed)
        m = self.model
        for _ in range(K):
            q = rng.uniform(-1.5, 1.5, m.nq)
            if m.floating_base:
                q[3:7] = rng.normal(size=4)
                q[3:7] /= np.linalg.norm(q[3:7])
            v, a = rng.uniform(-1, 1, m.nv), rng.uniform(-1, 1, m.nv)
            qp, vp, ap = np.empty(m.nq), np.empty(m.nv), np.empty(m.nv)
            qp[self.iq], vp[self.iv], ap[self.iv] = q, v, a
            yield q, v, qp, vp, ap


def robots():
    out = [(label, src, False) for label, _, src in robot_sources(quick=False)]
    order = ['chain-7', 'panda (9)', 'chain-20', 'tree-20', 'chain-40']
    out.sort(key=lambda r: order.index(r[0]))
    out.append(('anymal floating (18)', example_robot_data_urdf('anymal_c_simple_description/urdf/anymal.urdf'), True))
    out.append(('quadruped-like floating (18)', models.quadruped_like(seed=0), True))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--quick', action='store_true')
    add_out_dir(ap)
    args = ap.parse_args()
    import pinocchio as pin

    rows = []
    for label, src, floating in robots():
        pair = FloatingPair(label, src, floating)
        model, pm, pd, iv = pair.model, pair.pm, pair.pd, pair.iv
        worst = 0.0
        for q, v, qp, vp, ap_ in pair.states(4, seed=1):
            ours = rd.inverse_dynamics_dv(model, q, v)
            ref = pin.computeRNEADerivatives(pm, pd, qp, vp, ap_)[1][np.ix_(iv, iv)]
            worst = max(worst, float(np.abs(ours - ref).max() / max(1.0, np.abs(ref).max())))
        q, v, qp, vp, ap_ = next(pair.states(1, seed=2))
        log(f'{label}: nv={model.nv}, max rel |ours - pin| = {worst:.1e}; timing ...')
        t = interleaved({
            'ours': lambda: rd.inverse_dynamics_dv(model, q, v),
            'pin_rnea_d': lambda: pin.computeRNEADerivatives(pm, pd, qp, vp, ap_),
            'pin_C': lambda: pin.computeCoriolisMatrix(pm, pd, qp, vp),
        }, blocks=11 if args.quick else 41, block_s=0.02, clock=time.thread_time)
        rows.append((label, model.nv, worst, t))

    lines = [
        '# dtau/dv: Algorithm 1 (rd.inverse_dynamics_dv) vs Pinocchio computeRNEADerivatives',
        '',
        f'{provenance()} at the end of the run.',
        'Median per-call CPU time (thread_time; the shared machine is loaded) over interleaved blocks,',
        'Python-call level, same process.',
        "Pinocchio's computeRNEADerivatives also returns dtau/dq and M (it cannot return dtau/dv alone),",
        'so the ratio is "our dtau/dv" against "the call a Pinocchio user makes to get dtau/dv".',
        'pin C = pin.computeCoriolisMatrix: the same Algorithm 1 route in C++ (for scale).',
        '',
        '| robot | nv | max rel. diff vs pin | ours [us] | pin RNEA derivs [us] | pin RNEA derivs / ours | pin C [us] |',
        '|---|---|---|---|---|---|---|',
    ]
    for label, nv, worst, t in rows:
        lines.append(f"| {label} | {nv} | {worst:.1e} | {us(t['ours'])} | {us(t['pin_rnea_d'])} | "
                     f"{t['pin_rnea_d'] / t['ours']:.2f} | {us(t['pin_C'])} |")
    report(output(args.out_dir, 'derivatives_quick.md' if args.quick else 'derivatives.md'),
           '\n'.join(lines) + '\n')


if __name__ == '__main__':
    sys.exit(main())
