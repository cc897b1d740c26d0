"""Shared helpers for the benchmark scripts: robots, Pinocchio pairing, and fair timing.

Timing on a small, shared machine is noisy, so every comparison is *interleaved*: the
candidates are timed in alternating blocks within one process, after a warm-up, and the
per-call time reported is the median over many blocks.  Ratios are always formed from numbers
measured in the same run.
"""

import os
import platform
import shlex
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
# The runs quoted in docs/ are kept in benchmarks/results/ (tracked); a run writes to
# out/benchmarks/ (git-ignored) or to the folder given with --out-dir, and says where.
REFERENCE = os.path.join(HERE, 'results')
RESULTS = os.path.join(os.path.dirname(HERE), 'out', 'benchmarks')
sys.path.insert(0, os.path.dirname(HERE))  # run from a checkout without installing
if HERE not in sys.path:
    sys.path.insert(1, HERE)                   # the sibling modules (results.py)

import ros_dynamics as rd  # noqa: E402
from ros_dynamics import testing as models  # noqa: E402
from results import OUT_DIR_ENV, Git  # noqa: E402  (the evidence's freshness, stdlib only)


def log(*args):
    """Progress output (stderr, flushed), so that stdout stays a clean table."""
    print(*args, file=sys.stderr, flush=True)


def add_out_dir(ap):
    """The --out-dir option of every benchmark (default out/benchmarks/)."""
    ap.add_argument('--out-dir', default=RESULTS,
                    help='folder for the tables and plots (default: out/benchmarks/)')


def output(out_dir, name):
    """Path of an output file (its folder created): ``out_dir/name``, or in the folder that
    ``BENCHMARKS_OUT_DIR`` names when it is set (``python -m benchmarks.results`` sets it)."""
    out_dir = os.environ.get(OUT_DIR_ENV) or out_dir
    os.makedirs(out_dir, exist_ok=True)
    return os.path.join(out_dir, name)


def wrote(*paths):
    """Say where the results went (stderr)."""
    for p in paths:
        log(f'wrote {os.path.relpath(p)}')


# -- result files ---------------------------------------------------------------------------------

_T0, _LOAD0 = time.monotonic(), os.getloadavg()[0]
_STARTED = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())
_START = {}                          # root -> (HEAD, dirty files) when this process started


def _state(root):
    """(HEAD, files that differ from it) of the checkout at ``root``; (None, []) outside git."""
    try:
        git = Git(root)
        return git.head(), git.dirty()
    except (OSError, RuntimeError):
        return None, []


_START[os.path.dirname(HERE)] = _state(os.path.dirname(HERE))


def _results_root(path):
    """The checkout whose ``benchmarks/results/`` folder ``path`` is in, or None."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.basename(folder) == 'results' and \
            os.path.basename(os.path.dirname(folder)) == 'benchmarks':
        return os.path.dirname(os.path.dirname(folder))
    return None


def _checkout(path):
    """The root of the checkout that holds ``path`` (the running script), or None."""
    folder = os.path.dirname(os.path.abspath(path))
    while folder != os.path.dirname(folder):
        if os.path.exists(os.path.join(folder, '.git')):
            return folder
        folder = os.path.dirname(folder)
    return None


def _command(root):
    """The command line of this run as it can be run again from the checkout's root: the script
    relative to it; an argument that is another checkout becomes ``<checkout of SHA>``."""
    words = ['python', os.path.relpath(os.path.abspath(sys.argv[0]), root)]
    for arg in sys.argv[1:]:
        if os.path.isdir(arg) and os.path.exists(os.path.join(arg, '.git')) and \
                os.path.realpath(arg) != os.path.realpath(root):
            head, _ = _state(arg)
            arg = f'<checkout of {head[:12]}>' if head else arg
        words.append(shlex.quote(arg) if arg != shlex.quote(arg) and not arg.startswith('<')
                     else arg)
    return ' '.join(words)


def _measures(measures):
    """The MEASURES of the running script (``__main__``), or the given ones."""
    if measures is None:
        measures = getattr(sys.modules.get('__main__'), 'MEASURES', None)
    if measures is None:
        raise SystemExit(f'{sys.argv[0]} declares no MEASURES: a benchmark names the code it '
                         "measures at module level, e.g. MEASURES = ('ros_dynamics/core',)")
    return tuple(measures)


def header(root, measures, draws=None):
    """The head of a result file (markdown list): the commit measured, the command, the code
    measured, the machine, the load, the date and run time, the draws behind any spread."""
    head, dirty = _START.get(root) or _state(root)
    now_head, now_dirty = _state(root)
    if head and not dirty and not now_dirty and now_head == head:
        commit = f'commit measured: {head[:12]}'
    else:
        commit = (f'commit measured: none (the tree differed from {(head or "?")[:12]} or moved '
                  'during the run: a trial, not evidence)')
    code = ', '.join(f'`{m}`' for m in measures) or 'the script alone'
    lines = [f'- {commit}',
             f'- command: `{_command(root)}`',
             f'- code measured: {code}, and what the script and they import '
             '(`python -m benchmarks.results` lists it)',
             f'- machine: {machine_info()}',
             f'- load: 1-minute load average {_LOAD0:.2f} at the start, '
             f'{os.getloadavg()[0]:.2f} at the end',
             f'- run: {_STARTED}, {time.monotonic() - _T0:.0f} s']
    if draws:
        lines.append(f'- draws: {draws}')
    return '\n'.join(lines)


def report(path, text, *, draws=None, measures=None):
    """Write a result file: ``text`` (markdown, its first line the ``# title``) with the harness's
    header after the title (:func:`header`), printed (stdout) and written to ``path`` (or to
    ``BENCHMARKS_OUT_DIR``), then where it went said (stderr).

    ``draws``: the independent seeds or draws behind a spread or a "worst of N" in the file
    (:func:`worst_of`).  ``measures``: the code measured, by default the running script's
    ``MEASURES``.  Refuses (SystemExit) to write into ``benchmarks/results/`` unless the tree
    was clean and at the same commit from the start of the run to now: commit first, then
    measure."""
    measures = _measures(measures)
    path = output(os.path.dirname(os.path.abspath(path)), os.path.basename(path))
    target = _results_root(path)
    root = _checkout(sys.argv[0]) or os.path.dirname(HERE)
    if target is not None:
        start = _START.get(target) or _state(target)
        head, dirty = _state(target)
        if dirty or start[1] or head != start[0] or head is None:
            raise SystemExit(f'not writing {os.path.relpath(path)}: the tree has uncommitted '
                             f'changes ({", ".join((dirty or start[1])[:5])}) or moved during '
                             'the run; commit first, then measure')
    title, _, body = text.partition('\n')
    if not title.startswith('# '):
        raise ValueError('a result file starts with its "# title" line')
    text = f'{title}\n\n{header(root, measures, draws)}\n\n{body.lstrip(chr(10))}'
    print(text)
    with open(path, 'w') as f:
        f.write(text if text.endswith('\n') else text + '\n')
    wrote(path)
    return path


def worst_of(values, seeds, worst=max):
    """The worst of N outcomes of independent draws, and the note that names the draws for
    :func:`report`'s ``draws``.  Refuses repeated seeds; outcomes that are all identical are
    one measurement (a deterministic rerun), and the note says so."""
    seeds = list(seeds)
    if len(set(map(repr, seeds))) != len(seeds):
        raise ValueError(f'repeated seeds {seeds}: a repeat of one draw is not another draw')
    values = list(values)
    note = f'{len(seeds)} independent draws, seeds {", ".join(map(str, seeds))}'
    if len(values) > 1 and all(v == values[0] for v in values):
        note += ' (all outcomes identical: one measurement, not a spread)'
    return worst(values), note


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
    """The commit a run measures, for a script that writes its own header (a result file written
    with :func:`report` has it in its header): ``commit measured: <sha>`` on a clean tree, else
    ``commit measured: none (...)``, which no result file in benchmarks/results/ may say."""
    head, dirty = _state(os.path.dirname(HERE))
    if head and not dirty:
        return f'commit measured: {head[:12]}'
    return f'commit measured: none (the tree differs from {(head or "?")[:12]}: a trial)'


def machine_info():
    """The machine and the libraries a result was measured on (:func:`header` carries it)."""
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
            f'numpy {np.__version__}, numba {numba.__version__}, pinocchio {pv}')


def us(t):
    """Seconds -> microseconds string."""
    return f'{t * 1e6:.2f}' if t < 1e-4 else f'{t * 1e6:.1f}' if t < 1e-2 else f'{t * 1e6:.0f}'


def provenance():
    """The date (UTC), the command line, the machine and the load now, in one line: for the
    scripts that still write them into their text (:func:`report`'s header has them all)."""
    command = ' '.join(['python', os.path.relpath(os.path.abspath(sys.argv[0]),
                                                  os.path.dirname(HERE))] + sys.argv[1:])
    return (f'{time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}; `{command}`; '
            f'{machine_info()}; 1-minute load average {os.getloadavg()[0]:.2f}')


def docstring_report(doc, head=None, body=''):
    """A result file's text from a benchmark's docstring: its first line as the title, the
    description (the docstring up to its usage line) and ``body``; :func:`report` adds the
    header (``head`` is no longer written: the header says when, how and where)."""
    description = doc.split('\n\n', 1)[1].split('\n\n    python')[0]
    return f'# {doc.splitlines()[0]}\n\n{description}\n\n{body}\n'


def live_runs(test, line, runs):
    """Run the system test ``test`` ``runs`` times (``pytest -s``) and return, per run, the groups
    of the regular expression ``line`` in what it printed (its figures); SystemExit with the
    run's output when a run fails or does not print the line."""
    import re
    import subprocess
    root = os.path.dirname(HERE)
    found = []
    for i in range(runs):
        log(f'live run {i + 1}/{runs} ...')
        proc = subprocess.run([sys.executable, '-m', 'pytest', test, '-q', '-s', '-p',
                               'no:cacheprovider'], cwd=root, text=True, capture_output=True)
        match = re.search(line, proc.stdout)
        if proc.returncode != 0 or not match:
            raise SystemExit(f'the live run failed:\n{proc.stdout[-3000:]}')
        found.append(match.groups())
    return found
