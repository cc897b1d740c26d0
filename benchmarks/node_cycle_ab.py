"""benchmarks/node_cycle.py of two commits, run alternately: is the node's cycle slower now?

    python benchmarks/node_cycle_ab.py --base COMMIT [--runs 3] [--out out/node_cycle_ab.md]

The base commit is checked out into out/ab/<commit> (a git worktree, kept for later runs), and
its own benchmarks/node_cycle.py runs on its own code, alternately with this checkout's, in
separate processes (each with its own numba cache).  Per run the row "what the node runs" and
the bare core calls of the same process are kept, so that a run slowed by the machine's load
shows in both; the file gives each run and the ranges.
"""
import argparse
import os
import re
import subprocess
import sys
import time

from common import log, machine_info, report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, 'out')


def _worktree(commit):
    path = os.path.join(OUT, 'ab', commit)
    if not os.path.isdir(path):
        log(f'checking out {commit} into {path}')
        subprocess.run(['git', '-C', ROOT, 'worktree', 'add', '--detach', path, commit],
                       check=True, capture_output=True)
    return path


def _run(tree, out):
    env = dict(os.environ, PYTHONPATH=tree)
    subprocess.run([sys.executable, os.path.join(tree, 'benchmarks', 'node_cycle.py'), '--out',
                    out], cwd=tree, env=env, check=True, capture_output=True, timeout=1800)
    text = open(out).read()
    node = re.search(r'\| [^|]*what the node runs[^|]* \| ([0-9.]+) \|', text)
    core = re.search(r'\| core calls \| ([0-9.]+) \|', text)
    load = re.search(r'load average ([0-9.]+)', text)
    return float(node.group(1)), float(core.group(1)), float(load.group(1).rstrip('.'))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--base', required=True, help='the commit to compare with')
    ap.add_argument('--runs', type=int, default=3)
    ap.add_argument('--out', default=os.path.join(OUT, 'node_cycle_ab.md'))
    args = ap.parse_args(argv)
    base = _worktree(args.base)
    head = subprocess.run(['git', '-C', ROOT, 'rev-parse', '--short', 'HEAD'], check=True,
                          capture_output=True, text=True).stdout.strip()
    rows = []
    for k in range(args.runs):
        for label, tree in ((args.base, base), (head, ROOT)):
            log(f'run {k + 1}/{args.runs}: {label} ...')
            rows.append((k + 1, label) + _run(tree, os.path.join(OUT, f'node_cycle_{label}.md')))
    lines = ['# The node\'s cycle without ROS, two commits alternated (bundled arm)', '',
             f'`python benchmarks/node_cycle_ab.py --base {args.base} --runs {args.runs}` at '
             f'{head}, {time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}; machine: '
             f'{machine_info()}; 1-min load average per run in the last column. Each run is one process of that commit\'s '
             '`benchmarks/node_cycle.py` (minimum thread CPU over interleaved blocks); "what '
             'the node runs" is its row for the joint-state cycle the node makes per message, '
             '"core calls" the bare core work in the same process.', '',
             '| run | commit | what the node runs [us] | core calls [us] | load |',
             '|---:|---|---:|---:|---:|']
    lines += [f'| {k} | {c} | {n:.2f} | {b:.2f} | {ld:.2f} |' for k, c, n, b, ld in rows]
    for label in (args.base, head):
        n = [r[2] for r in rows if r[1] == label]
        lines.append(f'\n{label}: {min(n):.2f}-{max(n):.2f} us per cycle '
                     f'(median {sorted(n)[len(n) // 2]:.2f})')
    report(args.out, '\n'.join(lines) + '\n')


if __name__ == '__main__':
    main()
