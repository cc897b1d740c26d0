"""Derivatives of the dynamics vs Pinocchio's Python calls: dtau/dq, dtau/dv, da/dq, da/dv, M^-1 (Carpentier & Mansard 2018) and dtau/dv alone (Algorithm 1 of Echeandia & Wensing 2021).

    python benchmarks/derivatives.py            # writes out/benchmarks/derivatives.md
    python benchmarks/derivatives.py --quick    # fewer timing blocks

Part 1, the analytical derivatives, on the bundled 7-DoF arm, the Franka Panda, the
floating-base ANYmal and the 50-DoF Talos humanoid of example-robot-data (floating base,
joints matched by name): each call first checked against Pinocchio (largest entry difference
relative to the largest entry), then timed, interleaved in one process, at the Python-call
level with reused workspaces on both sides:

* rd.inverse_dynamics_derivatives(model, q, v, a, data=)  vs  pin.computeRNEADerivatives
  (which also returns M, as our data.M);
* rd.forward_dynamics_derivatives(model, q, v, tau, data=)  vs  pin.computeABADerivatives.

Per call: CPU time of this thread (time.thread_time; the shared machine is loaded).  Batches of
K = 256 states: wall time per state of rd.*_batch on one thread and on all of numba's threads
against a Python loop of Pinocchio's calls (Pinocchio's Python API has no batch form; its
results are views of its Data, so a loop that keeps them copies each).

Part 2, dtau/dv alone, on 7/20/40-DoF random chains, a 20-DoF binary tree, the Panda and two
floating quadrupeds: rd.inverse_dynamics_dv (one Algorithm 1 pass and 2C, plus the free-joint
correction -M[:, :6] (nu_0 x)) against pin.computeRNEADerivatives (which also returns dtau/dq
and M: Pinocchio has no call for dtau/dv alone) and pin.computeCoriolisMatrix (the same route
in C++, for scale).
"""

MEASURES = ('ros_dynamics/core',)

import argparse
import sys
import time

import numba

import numpy as np

from common import (add_out_dir, example_robot_data_urdf, interleaved, log, output, report,
                    robot_sources, us)

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


def mpc_robots():
    return [('arm7 (7)', rd.bundled_urdf('arm7'), False),
            ('panda (9)', example_robot_data_urdf(), False),
            ('anymal floating (18)', example_robot_data_urdf('anymal_c_simple_description/urdf/anymal.urdf'), True),
            ('talos floating (50)', example_robot_data_urdf('talos_data/robots/talos_full_v2.urdf'), True)]


def rel(ours, ref):
    return float(np.abs(ours - ref).max() / max(1.0, np.abs(ref).max()))


def analytical_part(pin, quick):
    """Rows (label, nv, errors, per-call times, batch times) of part 1."""
    rows = []
    K = 64 if quick else 256
    for label, src, floating in mpc_robots():
        pair = FloatingPair(label, src, floating)
        model, pm, pd, iv = pair.model, pair.pm, pair.pd, pair.iv
        ix = np.ix_(iv, iv)
        err = np.zeros(2)
        for q, v, qp, vp, ap_ in pair.states(4, seed=1):
            ours = rd.inverse_dynamics_derivatives(model, q, v, v)
            ref = [np.array(x) for x in pin.computeRNEADerivatives(pm, pd, qp, vp, vp)]
            err[0] = max(err[0], rel(ours[0], ref[0][ix]), rel(ours[1], ref[1][ix]))
            ours = rd.forward_dynamics_derivatives(model, q, v, v)
            ref = [np.array(x) for x in pin.computeABADerivatives(pm, pd, qp, vp, vp)]
            ref[2] = np.triu(ref[2]) + np.triu(ref[2], 1).T
            err[1] = max(err[1], *(rel(o, r[ix]) for o, r in zip(ours, ref)))
        q, v, qp, vp, ap_ = next(pair.states(1, seed=2))
        data = rd.Data(model)
        log(f'{label}: nv={model.nv}, max rel |ours - pin| = {err[0]:.1e} / {err[1]:.1e}; timing ...')
        t = interleaved({
            'ours_id': lambda: rd.inverse_dynamics_derivatives(model, q, v, v, data=data),
            'pin_id': lambda: pin.computeRNEADerivatives(pm, pd, qp, vp, vp),
            'ours_fd': lambda: rd.forward_dynamics_derivatives(model, q, v, v, data=data),
            'pin_fd': lambda: pin.computeABADerivatives(pm, pd, qp, vp, vp),
        }, blocks=11 if quick else 41, block_s=0.02, clock=time.thread_time)
        states = list(pair.states(K, seed=3))
        Q, V = np.array([s[0] for s in states]), np.array([s[1] for s in states])
        QP, VP = [s[2] for s in states], [s[3] for s in states]
        team = numba.get_num_threads()

        def batch(f, threads):
            def run():
                numba.set_num_threads(threads)
                try:
                    f(model, Q, V, V)
                finally:
                    numba.set_num_threads(team)
            return run

        def pin_loop(f):
            return lambda: [[np.array(x) for x in f(pm, pd, a, b, b)] for a, b in zip(QP, VP)]
        b = interleaved({
            'ours_id_1': batch(rd.inverse_dynamics_derivatives_batch, 1),
            'pin_id': pin_loop(pin.computeRNEADerivatives),
            'ours_fd_1': batch(rd.forward_dynamics_derivatives_batch, 1),
            'pin_fd': pin_loop(pin.computeABADerivatives),
        }, blocks=5 if quick else 15, block_s=0.05, clock=time.thread_time)
        b.update({k + '_wall': x for k, x in interleaved({
            'ours_id_1': batch(rd.inverse_dynamics_derivatives_batch, 1),
            'ours_id_all': batch(rd.inverse_dynamics_derivatives_batch, team),
            'ours_fd_1': batch(rd.forward_dynamics_derivatives_batch, 1),
            'ours_fd_all': batch(rd.forward_dynamics_derivatives_batch, team),
        }, blocks=5 if quick else 15, block_s=0.05).items()})
        rows.append((label, model.nv, err, t, {k: x / K for k, x in b.items()}))
    return rows, K, numba.get_num_threads()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--quick', action='store_true')
    add_out_dir(ap)
    args = ap.parse_args()
    import pinocchio as pin

    part1, K, threads = analytical_part(pin, args.quick)
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
        '# Derivatives of the dynamics: ros_dynamics vs Pinocchio',
        '',
        '## 1. dtau/dq, dtau/dv (inverse) and da/dq, da/dv, M^-1 (forward), Carpentier & Mansard 2018',
        '',
        'Per call: median CPU time (thread_time) over interleaved blocks, Python-call level, same',
        'process, reused workspaces (data= / Pinocchio Data). "max rel. diff": largest entry',
        'difference to Pinocchio relative to its largest entry, over 4 random states.',
        '',
        '| robot | nv | max rel. diff inverse / forward | ours inverse [us] | pin RNEA derivs [us] | pin / ours | ours forward [us] | pin ABA derivs [us] | pin / ours |',
        '|---|---|---|---|---|---|---|---|---|',
    ]
    for label, nv, err, t, b in part1:
        lines.append(f"| {label} | {nv} | {err[0]:.1e} / {err[1]:.1e} | {us(t['ours_id'])} | {us(t['pin_id'])} | "
                     f"{t['pin_id'] / t['ours_id']:.2f} | {us(t['ours_fd'])} | {us(t['pin_fd'])} | "
                     f"{t['pin_fd'] / t['ours_fd']:.2f} |")
    lines += [
        '',
        f'Batches of K = {K} states, per state [us]: CPU time (thread_time) of rd.*_batch on one thread',
        'against a Python loop of Pinocchio calls that copies each result; then wall time on one thread',
        f'and on all {threads} of numba\'s threads (speed-up = 1 thread / all; wall time on the loaded',
        'machine includes waiting for a core).',
        '',
        '| robot | inverse: ours batch | pin loop | pin / ours | forward: ours batch | pin loop | pin / ours | inverse wall 1 / all threads | speed-up | forward wall 1 / all threads | speed-up |',
        '|---|---|---|---|---|---|---|---|---|---|---|',
    ]
    for label, nv, err, t, b in part1:
        lines.append(f"| {label} | {us(b['ours_id_1'])} | {us(b['pin_id'])} | {b['pin_id'] / b['ours_id_1']:.2f} | "
                     f"{us(b['ours_fd_1'])} | {us(b['pin_fd'])} | {b['pin_fd'] / b['ours_fd_1']:.2f} | "
                     f"{us(b['ours_id_1_wall'])} / {us(b['ours_id_all_wall'])} | "
                     f"{b['ours_id_1_wall'] / b['ours_id_all_wall']:.2f} | "
                     f"{us(b['ours_fd_1_wall'])} / {us(b['ours_fd_all_wall'])} | "
                     f"{b['ours_fd_1_wall'] / b['ours_fd_all_wall']:.2f} |")
    lines += [
        '',
        '## 2. dtau/dv alone: Algorithm 1 (rd.inverse_dynamics_dv) vs Pinocchio computeRNEADerivatives',
        '',
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
