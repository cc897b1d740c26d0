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

plus a comparison with Echeandia & Wensing's (2021) Table 1, and breakdowns of where the time
of one rd.dynamics call (chain-20) and of one rd.christoffel call (chain-7) goes.

    python benchmarks/bench_dynamics.py --batch    # batches only (~1 min): out/benchmarks/dynamics_batch.md

--batch: the throughput of rd.dynamics_batch (K = 1000 states) on the bundled 7-DoF arm, the
Panda, a 20-DoF chain, a 32-DoF binary tree (Talos-sized) and a 40-DoF chain, against a Python
loop of single rd.dynamics calls (keeping each result, and with one ``data=`` workspace whose
results are overwritten: the cheapest possible loop), on one thread and on all threads, in
interleaved blocks; wall-clock time and the process CPU time (all threads) of each, and the
1-min load average before each robot.  Before timing, every batch row is checked against the
single call (bitwise) and two rows against Pinocchio.
Progress goes to stderr; the tables go to stdout and to out/benchmarks/dynamics.md
(dynamics_batch.md with --batch; or --out).
"""

MEASURES = ('ros_dynamics/core',)

import argparse
import os
import sys
import time

import numpy as np

from common import RESULTS, Pair, interleaved, log, machine_info, report, robot_sources, us

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


def wall_and_cpu(funcs, blocks, warmup=2):
    """Median wall-clock and process CPU seconds (all threads) per call of each zero-argument
    callable, one call per block, blocks interleaved in rotating order."""
    names = list(funcs)
    wall, cpu = {k: [] for k in names}, {k: [] for k in names}
    for r in range(warmup + blocks):
        for k in names[r % len(names):] + names[:r % len(names)]:
            t0, c0 = time.perf_counter(), time.process_time()
            funcs[k]()
            t1, c1 = time.perf_counter(), time.process_time()
            if r >= warmup:
                wall[k].append(t1 - t0)
                cpu[k].append(c1 - c0)
    return ({k: float(np.median(wall[k])) for k in names},
            {k: float(np.median(cpu[k])) for k in names})


def check_batch(pair, Q, V):
    """(rows of rd.dynamics_batch bitwise equal to rd.dynamics, max rel. diff to Pinocchio
    over two rows)."""
    import pinocchio as pin
    m, pm, pd, ix, perm = pair.model, pair.pmodel, pair.pdata, pair.ix, pair.perm
    b = rd.dynamics_batch(m, Q, V)
    equal = sum(all(np.array_equal(getattr(b, f)[k], getattr(d, f)) for f in d._fields)
                for k, d in ((k, rd.dynamics(m, Q[k], V[k])) for k in range(len(Q))))
    rel = 0.0
    for k in (0, len(Q) - 1):
        qp, vp = Q[k][perm], V[k][perm]
        Mp = pin.crba(pm, pd, qp).copy()
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        Cp = pin.computeCoriolisMatrix(pm, pd, qp, vp).copy()
        for ours, ref in ((b.M[k][ix], Mp), (b.C[k][ix], Cp), (b.Mdot[k][ix], Cp + Cp.T),
                          (b.g[k][perm], pin.computeGeneralizedGravity(pm, pd, qp))):
            rel = max(rel, float(np.abs(ours - ref).max() / max(1.0, np.abs(ref).max())))
    return equal, rel


def time_batch(pair, K, blocks):
    """Wall and CPU seconds per batch of K states: a loop of rd.dynamics calls keeping the
    results ('loop'), a loop with one data= workspace ('loop_data'), the same copying each
    result into reused (K, ...) arrays ('loop_copy'), the batch on one thread ('batch1'; into
    a reused out: 'batch1_out'), on all threads ('batch'; 'batch_out');
    plus the threads the batch used, the check, and the load before."""
    import numba
    try:
        from ros_dynamics.core.api import batch_threads
    except ImportError:             # a checkout from before batch_threads: all threads, always
        def batch_threads(K, entries):
            return numba.get_num_threads()
    m, n = pair.model, pair.nv
    _, _, _, Q, V, _ = pair.states(K, seed=11)
    rows = list(zip(Q, V))
    data = rd.Data(m)
    nthreads = numba.get_num_threads()

    def loop():
        return [rd.dynamics(m, q, v) for q, v in rows]

    def loop_data():
        for q, v in rows:
            rd.dynamics(m, q, v, data=data)

    out = rd.dynamics_batch(m, Q, V)
    copy = rd.dynamics_batch(m, Q, V)

    def loop_copy():
        for k, (q, v) in enumerate(rows):
            d = rd.dynamics(m, q, v, data=data)
            copy.M[k], copy.C[k], copy.Mdot[k], copy.g[k] = d

    def batch1(**kw):
        numba.set_num_threads(1)
        try:
            rd.dynamics_batch(m, Q, V, **kw)
        finally:
            numba.set_num_threads(nthreads)

    checked = check_batch(pair, Q, V)
    load = os.getloadavg()[0]
    wall, cpu = wall_and_cpu({'loop': loop, 'loop_data': loop_data, 'loop_copy': loop_copy,
                              'batch1': batch1, 'batch1_out': lambda: batch1(out=out),
                              'batch': lambda: rd.dynamics_batch(m, Q, V),
                              'batch_out': lambda: rd.dynamics_batch(m, Q, V, out=out)}, blocks)
    return dict(wall=wall, cpu=cpu, threads=batch_threads(K, n * (3 * n + 1)), checked=checked,
                load=load, K=K)


def batch_sources():
    """(label, URDF path or XML) of the robots the --batch run times."""
    from common import example_robot_data_urdf, models
    return [('arm7', rd.bundled_urdf('arm7')),
            ('panda (9)', example_robot_data_urdf()),
            ('chain-20', models.chain(20, seed=0)),
            ('tree-32 (Talos-sized)', models.binary_tree(32, seed=0)),
            ('chain-40', models.chain(40, seed=0))]


def batch_main(args):
    """The --batch run: time_batch on batch_sources(), one table."""
    import numba
    K, blocks = 1000, (7 if args.quick else 21)
    load_start = os.getloadavg()[0]
    log(f'machine: {machine_info()}; numba threading layer: {numba.config.THREADING_LAYER} '
        f'({numba.threading_layer() if _launched() else "not started yet"}), '
        f'{numba.get_num_threads()} threads')
    rows = []
    for i, (label, src) in enumerate(batch_sources()):
        log(f'[{i + 1}/5] {label}: checking, then {blocks} interleaved blocks of each variant ...')
        pair = Pair(label, src)
        r = time_batch(pair, K, blocks)
        rows.append((label, pair.nv, r))
        w, c = r['wall'], r['cpu']
        log(f'    load {r["load"]:.2f}; states/s: loop {K / w["loop"]:,.0f}, loop data= '
            f'{K / w["loop_data"]:,.0f}, batch 1 thread {K / w["batch1"]:,.0f}, batch '
            f'{K / w["batch"]:,.0f} ({r["threads"]} threads; CPU {c["batch"] / c["batch1"]:.2f}x '
            f'of 1 thread), into out {K / w["batch_out"]:,.0f}')
    lines = []
    w_ = lines.append
    w_(f'# rd.dynamics_batch against loops of single calls, K = {K} states')
    w_('')
    w_(f'numba threading layer {numba.threading_layer()}, {numba.get_num_threads()} threads; the '
       f'1-min load average was {load_start:.2f} at the start (this benchmark adds about 1, 2 while '
       'a batch runs on both cores; a load above ~1.5 before a robot means another process '
       'competes for the second core).  ')
    w_(f'Mode: {"--quick" if args.quick else "full"}; medians of {blocks} interleaved blocks (one '
       'call each, rotating order) of the wall-clock time and of the process CPU time (all '
       'threads).  Throughput = K / wall time.  Loop = `[rd.dynamics(model, q, v) for q, v in '
       'rows]`; loop `data=` = the same calls into one `rd.Data`.  Every batch row was checked '
       'bitwise against `rd.dynamics`, and two rows against Pinocchio, before timing.')
    w_('')
    w_('## One thread: one compiled call against a loop of single calls')
    w_('')
    w_('| robot | nv | load before | loop (states/s) | loop `data=` (states/s) | loop `data=` + '
       'copy (states/s) | batch, 1 thread (states/s) | batch, 1 thread, reused `out` (states/s) | '
       'batch / loop | batch, reused `out` / loop `data=` + copy | batch / loop `data=` | same, '
       'CPU time | rows bitwise = `rd.dynamics` | rel. diff to Pinocchio |')
    w_('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
    for label, nv, r in rows:
        w, c = r['wall'], r['cpu']
        eq, rel = r['checked']
        w_(f'| {label} | {nv} | {r["load"]:.2f} | {K / w["loop"]:,.0f} | {K / w["loop_data"]:,.0f} '
           f'| {K / w["loop_copy"]:,.0f} | {K / w["batch1"]:,.0f} | {K / w["batch1_out"]:,.0f} '
           f'| {w["loop"] / w["batch1"]:.2f} | {w["loop_copy"] / w["batch1_out"]:.2f} '
           f'| {w["loop_data"] / w["batch1"]:.2f} | {c["loop_data"] / c["batch1"]:.2f} | {eq} / {K} '
           f'| {rel:.1e} |')
    w_('')
    w_('Loop `data=` + copy: the same calls, each result copied into reused (K, ...) arrays (the '
       'cheapest loop that keeps every result, like the batch into a reused `out`).  Loop '
       '`data=` alone keeps nothing (a lower bound for any loop of single calls).')
    w_('')
    w_('## All threads')
    w_('')
    w_('| robot | load before | batch, all threads (states/s) | threads used | parallel speed-up '
       '(wall, vs 1 thread) | CPU time, all threads / 1 thread | batch / loop | batch / loop '
       '`data=` | batch into reused `out` (states/s) | `out` batch / loop `data=` |')
    w_('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
    for label, nv, r in rows:
        w, c = r['wall'], r['cpu']
        w_(f'| {label} | {r["load"]:.2f} | {K / w["batch"]:,.0f} | {r["threads"]} '
           f'| {w["batch1"] / w["batch"]:.2f} | {c["batch"] / c["batch1"]:.2f} '
           f'| {w["loop"] / w["batch"]:.2f} | {w["loop_data"] / w["batch"]:.2f} '
           f'| {K / w["batch_out"]:,.0f} | {w["loop_data"] / w["batch_out"]:.2f} |')
    w_('')
    w_('Ratios are of wall-clock times (> 1: the batch is faster).  "CPU time, all threads / 1 '
       'thread" is the price of the parallel run in CPU (1.00: none; it includes the start of the '
       'second thread and its wait for the first).')
    w_('')
    report(args.out or os.path.join(RESULTS, 'dynamics_batch.md'), '\n'.join(lines) + '\n')
    return 0


def _launched():
    """Whether numba's threading layer has started (numba.threading_layer() raises before)."""
    import numba
    try:
        numba.threading_layer()
        return True
    except ValueError:
        return False


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
    ap.add_argument('--out', default=None, help='markdown output (default: out/benchmarks/'
                    'dynamics.md, with --batch dynamics_batch.md)')
    ap.add_argument('--batch', action='store_true', help='only the batch throughput (rd.dynamics_batch)')
    ap.add_argument('--wall', action='store_true', help='median wall-clock time per block instead '
                    'of the minimum thread CPU time')
    args = ap.parse_args(argv)
    if args.batch:
        return batch_main(args)
    args.out = args.out or os.path.join(RESULTS, 'dynamics.md')
    if args.wall:
        TIMING.update(stat='median', clock=time.perf_counter)
    blocks, block_s = (11, 0.005) if args.quick else (31, 0.01)

    log(f'machine: {machine_info()}')
    log('warming up the JIT caches ...')
    for label, kind, src in robot_sources(quick=True)[:1]:
        p = Pair(label, src)
        q = np.zeros(p.nv)
        rd.dynamics(p.model, q, q), rd.christoffel(p.model, q)

    results, errors, relerr, kernels, nvs = {}, {}, {}, {}, {}
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
    w('This benchmark alone adds ~1 to the load average; above ~1.5 another process competes for '
      'the second core.  Batches: `--batch` (dynamics_batch.md).  ')
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
    report(args.out, '\n'.join(lines) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
