"""Shared helpers for the benchmark scripts: robots, Pinocchio pairing, and fair timing.

Timing on a small, shared machine is noisy, so every comparison is *interleaved*: the
candidates are timed in alternating blocks within one process, after a warm-up, and the
per-call time reported is the median over many blocks.  Ratios are always formed from numbers
measured in the same run.
"""

import os
import platform
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
# The runs quoted in docs/ are kept in benchmarks/results/ (tracked); a run writes to
# out/benchmarks/ (git-ignored) or to the folder given with --out-dir, and says where.
REFERENCE = os.path.join(HERE, 'results')
RESULTS = os.path.join(os.path.dirname(HERE), 'out', 'benchmarks')
sys.path.insert(0, os.path.dirname(HERE))  # run from a checkout without installing

import ros_dynamics as rd  # noqa: E402
from ros_dynamics import testing as models  # noqa: E402


def log(*args):
    """Progress output (stderr, flushed), so that stdout stays a clean table."""
    print(*args, file=sys.stderr, flush=True)


def add_out_dir(ap):
    """The --out-dir option of every benchmark (default out/benchmarks/)."""
    ap.add_argument('--out-dir', default=RESULTS,
                    help='folder for the tables and plots (default: out/benchmarks/)')


def output(out_dir, name):
    """Path of an output file in out_dir (created), never a tracked file."""
    os.makedirs(out_dir, exist_ok=True)
    return os.path.join(out_dir, name)


def wrote(*paths):
    """Say where the results went (stderr)."""
    for p in paths:
        log(f'wrote {os.path.relpath(p)}')


def report(path, text):
    """A result file: ``text`` printed (stdout) and written to ``path`` (its folder created),
    then where it went said (stderr)."""
    print(text)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)
    wrote(path)


# -- robots ---------------------------------------------------------------------------------------

def example_robot_data_urdf(relpath='panda_description/urdf/panda.urdf'):
    """Path of a URDF shipped by example-robot-data (the package's one finder,
    ``ros_dynamics.simulation.legged_robots.example_robot_data``); Panda by default."""
    from ros_dynamics.simulation.legged_robots import example_robot_data
    return example_robot_data(relpath)


def robot_sources(quick=False):
    """(label, kind, URDF path or XML) of the robots bench_dynamics.py compares."""
    out = [('chain-7', 'chain', models.chain(7, seed=0)),
           ('chain-20', 'chain', models.chain(20, seed=0)),
           ('tree-20', 'tree', models.binary_tree(20, seed=0)),
           ('panda (9)', 'panda', example_robot_data_urdf())]
    if not quick:
        out.append(('chain-40', 'chain', models.chain(40, seed=0)))
    return out


class Pair:
    """The same URDF loaded by ros_dynamics and by Pinocchio, with the joint map by name.

    ``perm[i]`` is our v index of Pinocchio's DoF i, so ``ours[perm] == pin`` for vectors and
    ``ours[np.ix_(perm, perm)] == pin`` for matrices.  Only 1-DoF joints (nq == nv).
    """

    def __init__(self, label, source):
        import pinocchio as pin
        self.label = label
        self.model = rd.load_urdf(source)
        if source.lstrip().startswith('<'):
            self.pmodel = pin.buildModelFromXML(source)
        else:
            self.pmodel = pin.buildModelFromUrdf(source)
        self.pdata = self.pmodel.createData()
        pm = self.pmodel
        if pm.nq != pm.nv or self.model.nq != self.model.nv or pm.nv != self.model.nv:
            raise ValueError(f'{label}: only 1-DoF joints are supported here')
        self.nv = pm.nv
        perm = np.empty(self.nv, dtype=np.int64)
        for j in range(1, pm.njoints):
            assert pm.joints[j].nv == 1
            perm[pm.joints[j].idx_v] = self.model.joint_v_index(pm.names[j])
        assert sorted(perm) == list(range(self.nv))
        self.perm = perm
        self.ix = np.ix_(perm, perm)

    def states(self, K, seed=0):
        """K random (q, v, a/tau) triples in Pinocchio's order and in ours."""
        rng = np.random.default_rng(seed)
        qp = rng.uniform(-np.pi, np.pi, (K, self.nv))
        lo, hi = self.pmodel.lowerPositionLimit, self.pmodel.upperPositionLimit
        finite = np.isfinite(lo) & np.isfinite(hi) & (hi - lo < 10)
        qp[:, finite] = lo[finite] + (hi - lo)[finite] * rng.uniform(0, 1, (K, finite.sum()))
        vp = rng.uniform(-1.0, 1.0, (K, self.nv))
        ap = rng.uniform(-1.0, 1.0, (K, self.nv))
        return qp, vp, ap, self.to_ours(qp), self.to_ours(vp), self.to_ours(ap)

    def to_ours(self, X):
        X = np.atleast_2d(X)
        out = np.empty_like(X)
        out[:, self.perm] = X
        return out


# -- timing ---------------------------------------------------------------------------------------

def _calls_per_block(f, target_s):
    """How many calls of f fit in about target_s seconds (at least 1)."""
    f()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        dt = time.perf_counter() - t0
        if dt > target_s / 4 or n >= 1 << 20:
            return max(1, int(n * target_s / max(dt, 1e-9)))
        n *= 4


def interleaved(funcs, blocks=31, block_s=0.01, warmup=3, stat='median', clock=time.perf_counter):
    """Median (or ``stat='min'``) per-call seconds of each zero-argument callable in ``funcs``.

    The callables are timed in alternating blocks of ~block_s seconds each (same order every
    round is avoided by rotating the start), after ``warmup`` untimed rounds.  ``clock``:
    ``time.perf_counter`` (wall) or ``time.thread_time`` (this thread's CPU time, which does not
    count the time the thread waits for a core on a shared machine; single-threaded calls only).
    """
    names = list(funcs)
    counts = {k: _calls_per_block(funcs[k], block_s) for k in names}
    samples = {k: [] for k in names}
    pc = clock
    for r in range(warmup + blocks):
        order = names[r % len(names):] + names[:r % len(names)]
        for k in order:
            f, n = funcs[k], counts[k]
            t0 = pc()
            for _ in range(n):
                f()
            dt = (pc() - t0) / n
            if r >= warmup:
                samples[k].append(dt)
    reduce = {'median': np.median, 'min': np.min}[stat]
    return {k: float(reduce(samples[k])) for k in names}


def revision():
    """The code a result measures: ``commit <short hash>`` of this checkout (``git rev-parse
    --short HEAD``), followed by `` with uncommitted changes`` when tracked files differ from it
    (``git status --porcelain``); ``commit unknown`` outside a git checkout."""
    import subprocess
    root = os.path.dirname(HERE)
    try:
        head = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=root, check=True,
                              capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(['git', 'status', '--porcelain', '--untracked-files=no'],
                               cwd=root, check=True, capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return 'commit unknown'
    return f'commit {head}' + (' with uncommitted changes' if dirty else '')


def machine_info():
    """The machine, the libraries and the code (:func:`revision`) a result was measured on:
    every result file's header carries it (test_doc_numbers checks that each names a commit)."""
    import numba
    try:
        import pinocchio as pin
        pv = pin.__version__
    except ImportError:  # pragma: no cover
        pv = 'n/a'
    cpu = platform.processor() or platform.machine()
    try:
        with open('/proc/cpuinfo') as fh:
            for line in fh:
                if line.startswith('model name'):
                    cpu = line.split(':', 1)[1].strip()
                    break
    except OSError:  # pragma: no cover
        pass
    return (f'{cpu}, {os.cpu_count()} cores; Python {platform.python_version()}, '
            f'numpy {np.__version__}, numba {numba.__version__}, pinocchio {pv}; {revision()}')


def us(t):
    """Seconds -> microseconds string."""
    return f'{t * 1e6:.2f}' if t < 1e-4 else f'{t * 1e6:.1f}' if t < 1e-2 else f'{t * 1e6:.0f}'


def provenance():
    """When, how and where a result was made, for the head of its result file: the date (UTC),
    the command line, the machine and the commit (:func:`machine_info`) and the 1-minute load
    average now."""
    import time
    command = ' '.join(['python', os.path.relpath(os.path.abspath(sys.argv[0]),
                                                  os.path.dirname(HERE))] + sys.argv[1:])
    return (f'{time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}; `{command}`; '
            f'{machine_info()}; 1-minute load average {os.getloadavg()[0]:.2f}')


def docstring_report(doc, head, body):
    """A result file's text from a benchmark's docstring: its first line as the title, ``head``
    (:func:`provenance` taken when the run started), the description (the docstring up to its
    usage line) and ``body``."""
    description = doc.split('\n\n', 1)[1].split('\n\n    python')[0]
    return f'# {doc.splitlines()[0]}\n\n{head} at the start.\n\n{description}\n\n{body}\n'
