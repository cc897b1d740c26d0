"""ros_dynamics vs Pinocchio, same quantities, same process.

    python benchmarks/bench_dynamics.py            # full run (~1-2 min), writes out/benchmarks/dynamics.md
    python benchmarks/bench_dynamics.py --quick    # fewer repeats, no 40-DoF chain (~30 s)

For each robot (7/20/40-DoF random chains, a 20-DoF binary tree, the Franka Panda of
example-robot-data with its two finger joints) it first checks that both libraries agree
(max |ours - Pinocchio| over a few random states, joints matched by name), then times, at the
Python-call level for both libraries:

* dynamics:    rd.dynamics (M, C, dM/dt, g)  vs  pin.crba + pin.computeCoriolisMatrix
               + pin.computeGeneralizedGravity + dM/dt = C + C^T into a preallocated buffer
               (with and without ``data=rd.Data(model)``; Pinocchio always writes into its pin.Data)
* christoffel: rd.christoffel (Gamma)        vs  nv calls pin.computeCoriolisMatrix(q, e_k)
               (with and without ``data=``)
* M:           rd.mass_matrix                vs  pin.crba
* g:           rd.gravity                    vs  pin.computeGeneralizedGravity
* rnea:        rd.inverse_dynamics           vs  pin.rnea
* fd:          rd.forward_dynamics           vs  pin.aba

plus the throughput of rd.dynamics_batch (K = 1000 states, all cores) against a Python loop of
single rd.dynamics calls and against the same batch on one thread, a comparison with Table 1 of
Echeandia & Wensing (2021), and breakdowns of where the time of one rd.dynamics call (chain-20) and of one
rd.christoffel call (chain-7) goes.
Progress goes to stderr; the tables go to stdout and to out/benchmarks/dynamics.md (or --out).
"""

import argparse
import os
import sys
import time

import numpy as np

from common import RESULTS, Pair, interleaved, log, machine_info, robot_sources, us

import ros_dynamics as rd  # noqa: E402  (common puts the checkout on sys.path)

# Per-call timing of single-threaded calls: minimum over interleaved blocks of this thread's CPU
# time (robust on a shared, loaded machine); --wall: median of wall-clock blocks instead.
TIMING = dict(stat='min', clock=time.thread_time)

# Echeandia & Wensing (2021), Table 1, microseconds (their i7 3.2 GHz)
PAPER = {'chain-20': (18.0, 122.0), 'tree-20': (10.0, 33.0)}


def check(pair, nstates=4):
    """Max |ours - Pinocchio| for each quantity over a few random states."""
    import pinocchio as pin
    pm, pd, ix, perm = pair.pmodel, pair.pdata, pair.ix, pair.perm
    n = pair.nv
    Qp, Vp, Ap, Q, V, A = pair.states(nstates, seed=123)
    err = dict.fromkeys(['M', 'C', 'g', 'Mdot', 'Gamma', 'rnea', 'fd'], 0.0)
    scale = dict.fromkeys(err, 0.0)

    def upd(key, ours, ref):
        err[key] = max(err[key], float(np.max(np.abs(ours - ref))))
        scale[key] = max(scale[key], float(np.max(np.abs(ref))))

    E = np.eye(n)
    for qp, vp, ap, q, v, a in zip(Qp, Vp, Ap, Q, V, A):
        d = rd.dynamics(pair.model, q, v)
        Mp = pin.crba(pm, pd, qp).copy()
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        Cp = pin.computeCoriolisMatrix(pm, pd, qp, vp).copy()
        upd('M', d.M[ix], Mp)
        upd('C', d.C[ix], Cp)
        upd('g', d.g[perm], pin.computeGeneralizedGravity(pm, pd, qp))
        upd('Mdot', d.Mdot[ix], Cp + Cp.T)
        G = rd.christoffel(pair.model, q)
        Gp = np.stack([pin.computeCoriolisMatrix(pm, pd, qp, E[k]).copy() for k in range(n)], axis=2)
        upd('Gamma', G[np.ix_(perm, perm, perm)], Gp)
        tau = pin.rnea(pm, pd, qp, vp, ap).copy()
        upd('rnea', rd.inverse_dynamics(pair.model, q, v, a)[perm], tau)
        upd('fd', rd.forward_dynamics(pair.model, q, v, pair.to_ours(tau)[0])[perm],
            pin.aba(pm, pd, qp, vp, tau))
    return err, {k: err[k] / max(scale[k], 1.0) for k in err}


def time_pair(pair, blocks, block_s):
    """{quantity: (ours_s, pin_s)} per call, interleaved."""
    import pinocchio as pin
    pm, pd, m = pair.pmodel, pair.pdata, pair.model
    n = pair.nv
    Qp, Vp, Ap, Q, V, A = pair.states(1, seed=7)
    qp, vp, ap, q, v, a = Qp[0], Vp[0], Ap[0], Q[0], V[0], A[0]
    taup = pin.rnea(pm, pd, qp, vp, ap).copy()
    tau = pair.to_ours(taup)[0]
    E = [np.ascontiguousarray(e) for e in np.eye(n)]
    Mdot = np.empty((n, n))
    data = rd.Data(m)

    def pin_dyn():
        pin.crba(pm, pd, qp)
        C = pin.computeCoriolisMatrix(pm, pd, qp, vp)
        pin.computeGeneralizedGravity(pm, pd, qp)
        np.add(C, C.T, out=Mdot)

    def pin_gamma():
        for e in E:
            pin.computeCoriolisMatrix(pm, pd, qp, e)

    groups = {
        'dynamics': (lambda: rd.dynamics(m, q, v), pin_dyn),
        'dynamics, data=': (lambda: rd.dynamics(m, q, v, data=data), pin_dyn),
        'christoffel': (lambda: rd.christoffel(m, q), pin_gamma),
        'christoffel, data=': (lambda: rd.christoffel(m, q, data=data), pin_gamma),
        'M (crba)': (lambda: rd.mass_matrix(m, q), lambda: pin.crba(pm, pd, qp)),
        'g': (lambda: rd.gravity(m, q), lambda: pin.computeGeneralizedGravity(pm, pd, qp)),
        'rnea': (lambda: rd.inverse_dynamics(m, q, v, a), lambda: pin.rnea(pm, pd, qp, vp, ap)),
        'fd (aba)': (lambda: rd.forward_dynamics(m, q, v, tau), lambda: pin.aba(pm, pd, qp, vp, taup)),
    }
    out = {}
    for name, (ours, theirs) in groups.items():
        r = interleaved({'ours': ours, 'pin': theirs}, blocks=blocks, block_s=block_s, **TIMING)
        out[name] = (r['ours'], r['pin'])
        log(f'    {name:12s} ours {us(r["ours"]):>8s} us   pinocchio {us(r["pin"]):>8s} us   '
            f'ratio {r["ours"] / r["pin"]:.2f}')
    return out


def time_kernels(pair, blocks, block_s):
    """The compiled entry kernels called directly (validation inside, no Python-side checks,
    writing into a Data buffer): kernels.terms(model.packed, data.work, q, v, flags)
    for M, C, Mdot, g and kernels.geometry(model.packed, data.work, q, Gamma, flags,
    point) for Gamma."""
    from ros_dynamics.core import kernels
    from ros_dynamics.core.jit import ready
    m = pair.model
    _, _, _, Q, V, _ = pair.states(1, seed=7)
    q, v = Q[0], V[0]
    data = rd.Data(m)
    G = data.Gamma
    terms, geometry = ready(kernels.terms), ready(kernels.geometry)
    point = np.zeros(3)
    r = interleaved({
        'C': lambda: terms(m.packed, data.work, q, v, 0),
        'Gamma': lambda: geometry(m.packed, data.work, q, G, kernels.CHRISTOFFEL, point),
    }, blocks=blocks, block_s=block_s, **TIMING)
    return r['C'], r['Gamma']


def time_batch(pair, K, repeats):
    """(batch states/s on all cores, API single-call states/s, batch states/s on 1 thread,
    batch states/s on all cores into a reused output buffer, threads)."""
    import numba
    m = pair.model
    _, _, _, Q, V, _ = pair.states(K, seed=11)
    rows = list(zip(Q, V))

    def single():
        for q, v in rows:
            rd.dynamics(m, q, v)

    nthreads = numba.get_num_threads()

    def batch1():
        numba.set_num_threads(1)
        try:
            rd.dynamics_batch(m, Q, V)
        finally:
            numba.set_num_threads(nthreads)

    out = rd.dynamics_batch(m, Q, V)
    r = interleaved({'batch': lambda: rd.dynamics_batch(m, Q, V), 'single': single, 'batch1': batch1,
                     'batch_out': lambda: rd.dynamics_batch(m, Q, V, out=out)},
                    blocks=repeats, block_s=0.0, warmup=2)
    return K / r['batch'], K / r['single'], K / r['batch1'], K / r['batch_out'], nthreads


def profile(pair, blocks, block_s):
    """Where one rd.dynamics(model, q, v, data=data) call goes: per-call seconds of each piece.

    Pieces: the Python-side Data check (in api._run), the numba dispatch of a 6-argument call
    (an empty compiled function of the same argument types), and the compiled entry kernel
    (unpacking of the model and workspace views, validation, Algorithm 1).
    """
    from numba import njit
    from ros_dynamics.core import kernels
    from ros_dynamics.core.jit import ready
    m = pair.model
    _, _, _, Q, V, _ = pair.states(1, seed=7)
    q, v = Q[0], V[0]
    data = rd.Data(m)
    terms = ready(kernels.terms)

    @njit(cache=False)
    def empty(packed, work, q, v, flags):
        return 0

    funcs = {
        'api': lambda: rd.dynamics(m, q, v, data=data),
        'checks': lambda: data.__class__ is rd.Data and data.layout is m.work_offsets,
        'dispatch': lambda: empty(m.packed, data.work, q, v, 0),
        'kernel': lambda: terms(m.packed, data.work, q, v, 0),
    }
    for f in funcs.values():
        f()
    return interleaved(funcs, blocks=blocks, block_s=block_s, **TIMING)


def profile_rows(prof):
    """(piece, seconds) rows that add up to the API call."""
    rows = [('Python-side Data check (in api._run; types are checked by the sealed dispatcher)',
             prof['checks']),
            ('numba dispatch of the 5 arguments (empty compiled function, same types)',
             prof['dispatch']),
            ('compiled entry: model/workspace views, finiteness check, Algorithm 1',
             prof['kernel'] - prof['dispatch'])]
    rows.append(('rest (Python call, attribute lookups, returning data.dynamics)',
                 prof['api'] - sum(t for _, t in rows)))
    return rows


def profile_christoffel(pair, blocks, block_s):
    """Where one rd.christoffel(model, q) call goes (with and without ``data=``): the numba
    dispatch of the kernel's 6 arguments (an empty compiled function of the same types), the
    compiled kernel (views, finiteness check, kinematics, Algorithm 2), what the no-data call
    adds (allocating Gamma in Python; the kernel allocating its own scratch buffer, given an
    empty one) and the Python glue (the rest)."""
    from numba import njit
    from ros_dynamics.core import kernels
    from ros_dynamics.core.jit import ready
    m = pair.model
    _, _, _, Q, _, _ = pair.states(1, seed=7)
    q = Q[0]
    data = rd.Data(m)
    G = data.Gamma
    geometry = ready(kernels.geometry)
    point, flag, shape, no_work = np.zeros(3), kernels.CHRISTOFFEL, m.gamma_shape, np.zeros(0)

    @njit(cache=False)
    def empty(packed, work, q, Gamma, flags, point):
        return 0

    funcs = {
        'api': lambda: rd.christoffel(m, q),
        'api_data': lambda: rd.christoffel(m, q, data=data),
        'dispatch': lambda: empty(m.packed, data.work, q, G, flag, point),
        'kernel': lambda: geometry(m.packed, data.work, q, G, flag, point),
        'kernel_own': lambda: geometry(m.packed, no_work, q, G, flag, point),
        'alloc': lambda: np.empty(shape),
    }
    for f in funcs.values():
        f()
    return interleaved(funcs, blocks=blocks, block_s=block_s, **TIMING)


def christoffel_rows(prof):
    """(piece, seconds with data=, seconds without) rows that add up to the two API calls."""
    glue = prof['api_data'] - prof['kernel']
    own = prof['kernel_own'] - prof['kernel']
    return [('numba dispatch of the 6 arguments (empty compiled function, same types)',
             prof['dispatch'], prof['dispatch']),
            ('compiled kernel: views, finiteness check, kinematics, Algorithm 2',
             prof['kernel'] - prof['dispatch'], prof['kernel'] - prof['dispatch']),
            ('the kernel allocating its scratch buffer (no data=)', 0.0, own),
            ('allocating Gamma in Python (no data=)', 0.0, prof['alloc']),
            ('Python glue (call, data check, attribute lookups)', glue,
             prof['api'] - prof['kernel_own'] - prof['alloc'])]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--quick', action='store_true', help='fewer repeats, skip the 40-DoF chain')
    ap.add_argument('--out', default=os.path.join(RESULTS, 'dynamics.md'), help='markdown output')
    ap.add_argument('--wall', action='store_true', help='median wall-clock time per block instead '
                    'of the minimum thread CPU time')
    args = ap.parse_args(argv)
    if args.wall:
        TIMING.update(stat='median', clock=time.perf_counter)
    blocks, block_s, reps = (11, 0.005, 5) if args.quick else (31, 0.01, 15)
    K = 1000

    t_start = time.perf_counter()
    load_start = os.getloadavg()[0]
    log(f'machine: {machine_info()}')
    log('warming up the JIT caches ...')
    for label, kind, src in robot_sources(quick=True)[:1]:
        p = Pair(label, src)
        q = np.zeros(p.nv)
        rd.dynamics(p.model, q, q), rd.christoffel(p.model, q), rd.dynamics_batch(p.model, q[None], q[None])

    results, errors, relerr, kernels, batches, nvs = {}, {}, {}, {}, {}, {}
    sources = robot_sources(quick=args.quick)
    prof = prof_label = gprof = None
    for i, (label, kind, src) in enumerate(sources):
        log(f'[{i + 1}/{len(sources)}] {label}')
        pair = Pair(label, src)
        nvs[label] = pair.nv
        err, rel = check(pair)
        errors[label] = err
        log('    max |ours - pinocchio|: ' + ', '.join(f'{k} {v:.1e}' for k, v in err.items()))
        log('    relative to max |pinocchio|: ' + ', '.join(f'{k} {v:.1e}' for k, v in rel.items()))
        relerr[label] = rel
        if max(rel.values()) > 1e-9:
            log(f'    WARNING: {label} disagrees with Pinocchio; timings are not comparable')
        results[label] = time_pair(pair, blocks, block_s)
        kernels[label] = time_kernels(pair, blocks, block_s)
        batches[label] = time_batch(pair, K, reps)
        b = batches[label]
        log(f'    batch K={K}: {b[0]:,.0f} states/s ({b[4]} threads), single calls {b[1]:,.0f}/s, '
            f'batch on 1 thread {b[2]:,.0f}/s, into a reused buffer {b[3]:,.0f}/s')
        if label == 'chain-20':
            log('    profiling rd.dynamics ...')
            prof = profile(pair, blocks, block_s)
            prof_label = label
        if label == 'chain-7':
            log('    profiling rd.christoffel ...')
            gprof = profile_christoffel(pair, blocks, block_s)

    lines = []
    w = lines.append
    w('# ros_dynamics vs Pinocchio: dynamics terms from Python')
    w('')
    w(f'{time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}; '
      f'`python benchmarks/bench_dynamics.py {" ".join(sys.argv[1:])}`.  ')
    w(f'Machine: {machine_info()}; 1-min load average {load_start:.2f} at the start, '
      f'{os.getloadavg()[0]:.2f} at the end (this benchmark alone adds ~1; above ~1.5 another process '
      'competes for the second core and the batch / parallel numbers drop).  ')
    timing = ('medians of wall-clock time' if args.wall else
              'minima of the thread CPU time (time.thread_time)')
    w(f'Mode: {"--quick" if args.quick else "full"}; per-call times are {timing} of {blocks} interleaved '
      'blocks (ours and Pinocchio alternate), both called from Python with NumPy arrays.  '
      'Ratio = ours / Pinocchio (< 1: ours faster).  Shared 2-core machine: expect +-10-20 % noise.')
    w('')
    w('## Per-call time (us)')
    w('')
    w('| robot | nv | quantity | ours | Pinocchio | ratio | max abs diff | rel. diff |')
    w('|---|---:|---|---:|---:|---:|---:|---:|')
    errkey = {'dynamics': ('M', 'C', 'g', 'Mdot'), 'christoffel': ('Gamma',), 'M (crba)': ('M',),
              'dynamics, data=': ('M', 'C', 'g', 'Mdot'), 'christoffel, data=': ('Gamma',),
              'g': ('g',), 'rnea': ('rnea',), 'fd (aba)': ('fd',)}
    for label in results:
        for j, (name, (o, p)) in enumerate(results[label].items()):
            e = max(errors[label][k] for k in errkey[name])
            er = max(relerr[label][k] for k in errkey[name])
            first = j == 0
            w(f'| {label if first else ""} | {nvs[label] if first else ""} | {name} | {us(o)} | '
              f'{us(p)} | {o / p:.2f} | {e:.1e} | {er:.1e} |')
    w('')
    bad = [f'{label} (rel. diff {max(relerr[label].values()):.1e})' for label in results
           if not max(relerr[label].values()) <= 1e-9]
    if bad:
        w(f'**Warning: ours disagrees with Pinocchio beyond 1e-9 (relative to max |Pinocchio|, >= 1) for '
          f'{", ".join(bad)}: those timings do not describe a correct result.**')
        w('')
    w('Pinocchio side: `dynamics` = `crba` + `computeCoriolisMatrix` + `computeGeneralizedGravity` '
      '+ dM/dt = C + C^T into a preallocated buffer; `christoffel` = nv calls of '
      '`computeCoriolisMatrix(q, e_k)` (Gamma[:, :, k] = C(q, e_k)); Pinocchio writes into its pin.Data.')
    w('')
    w('## With a workspace (`data=rd.Data(model)`), ratio to Pinocchio')
    w('')
    w('| robot | nv | dynamics, data= | target <= 0.5 (goal 0.33) | christoffel, data= | target <= 0.1 (goal 0.05) |')
    w('|---|---:|---:|---|---:|---|')
    for label in results:
        (do, dp), (go, gp) = results[label]['dynamics, data='], results[label]['christoffel, data=']
        rd_, rg = do / dp, go / gp
        w(f'| {label} | {nvs[label]} | {rd_:.2f} | {"met" if rd_ <= 0.5 else "NOT met"}'
          f'{" (goal met)" if rd_ <= 0.33 else ""} | {rg:.3f} | {"met" if rg <= 0.1 else "NOT met"}'
          f'{" (goal met)" if rg <= 0.05 else ""} |')
    w('')
    w(f'## Batched throughput, rd.dynamics_batch, K = {K} states')
    w('')
    w('| robot | batch, all cores (states/s) | single rd.dynamics calls (states/s) | batch / single | '
      'batch, 1 thread (states/s) | parallel speed-up | batch into reused `out` (states/s) | '
      '`out` batch / single |')
    w('|---|---:|---:|---:|---:|---:|---:|---:|')
    for label in batches:
        b, s, b1, bo, nt = batches[label]
        w(f'| {label} | {b:,.0f} | {s:,.0f} | {b / s:.2f} | {b1:,.0f} | {b / b1:.2f} ({nt} threads) '
          f'| {bo:,.0f} | {bo / s:.2f} |')
    w('')
    w('Target: batch / single >= 1.8 on 2 cores.')
    w('')
    w('## Echeandia & Wensing (2021), Table 1 (i7 3.2 GHz) vs this machine (us)')
    w('')
    w('| robot | C: paper | C: rd.dynamics (API) | C: kernel only | C: Pinocchio | '
      'Gamma: paper | Gamma: rd.christoffel (API) | Gamma: kernel only | Gamma: Pinocchio |')
    w('|---|---:|---:|---:|---:|---:|---:|---:|---:|')
    for label, (pc, pg) in PAPER.items():
        if label not in results:
            continue
        (do, dp), (go, gp) = results[label]['dynamics'], results[label]['christoffel']
        kc, kg = kernels[label]
        w(f'| {label} | {pc:.0f} | {us(do)} | {us(kc)} | {us(dp)} | {pg:.0f} | {us(go)} | {us(kg)} | {us(gp)} |')
    w('')
    w('Ours computes M, C, dM/dt and g in the one call; Pinocchio column = crba + C + g as above. '
      '"Kernel only" = the compiled kernel called directly with preallocated outputs.')
    if prof is not None:
        api_t = prof['api']
        w('')
        w(f'## Where the time of one rd.dynamics(..., data=data) call goes ({prof_label})')
        w('')
        w('| piece | us | share of API call |')
        w('|---|---:|---:|')
        for name, t in profile_rows(prof):
            w(f'| {name} | {us(t)} | {100 * t / api_t:.0f} % |')
        w(f'| **rd.dynamics(..., data=) total** | **{us(api_t)}** | 100 % |')
    if gprof is not None:
        w('')
        w('## Where the time of one rd.christoffel(model, q) call goes (chain-7)')
        w('')
        w('| piece | us, data= | us, no data |')
        w('|---|---:|---:|')
        for name, t_data, t_new in christoffel_rows(gprof):
            w(f'| {name} | {us(t_data)} | {us(t_new)} |')
        w(f'| **rd.christoffel total** | **{us(gprof["api_data"])}** | **{us(gprof["api"])}** |')
    w('')
    w(f'Total benchmark wall time: {time.perf_counter() - t_start:.0f} s.')
    text = '\n'.join(lines) + '\n'
    print(text)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, 'w') as fh:
        fh.write(text)
    log(f'wrote {args.out}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
