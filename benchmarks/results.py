"""The evidence: every result file in benchmarks/results/, the commit it measured, the code it
measures, whether that code changed since, and the one command that re-runs what is stale.

    python -m benchmarks.results                # list every result file and its state
    python -m benchmarks.results --stale        # re-run the stale ones (and the unknown ones)
    python -m benchmarks.results --all          # re-run every one
    python -m benchmarks.results dynamics.md    # re-run the named ones
    python -m benchmarks.results --stale --dry-run   # only say what would run, and how long
    python -m benchmarks.results NAME.md --command 'python benchmarks/x.py ...'
                                                # when the recorded command is incomplete

A result file is written by one script through ``benchmarks/common.py``'s ``report()``; its
header names the commit it measured (``commit measured: <sha>``, a clean tree), the command
that wrote it and the code it measures.  The code a result measures is the writing script and
what it imports inside the repository (its import closure: ``ros_dynamics/``, ``benchmarks/``,
``scripts/``), and the paths the script declares at module level in ``MEASURES`` (folders or
files, e.g. the node a benchmark starts as a process, with what those import, or a URDF).
A result is

* **fresh** when none of those files changed since its commit in more than docstrings and
  comments (Python is compared as its syntax tree without docstrings; other files byte for byte);
* **stale** when one did (the listing names the files);
* **unknown** when it names no commit of this history, no script of this checkout, or a script
  that declares no ``MEASURES``.

A re-run executes the command of the file's header from the repository root on a clean tree
(``<checkout of SHA>`` becomes a git worktree of that commit under ``out/ab/``), with
``BENCHMARKS_OUT_DIR`` pointing at a fresh folder under ``out/results-run/``, so that
``report()`` writes there whatever the command's own output options say; the new result file
(and the files of the same stem written beside it: ``.json``, plots) are then copied over the
ones in ``benchmarks/results/``.  Commit them; the test suite (``test/test_evidence.py``)
fails while a result that a document quotes is stale.

This module uses the standard library only, so that the listing and the test are fast.
"""

import argparse
import ast
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = 'benchmarks/results'
#: The documents whose links make a result file "quoted".
DOCS = ('README.md', 'benchmarks/README.md', 'docs')
#: Where the import closure of a script is followed (other imports are libraries).
CODE_ROOTS = ('ros_dynamics', 'benchmarks', 'scripts')
#: The environment variable that sends every result file of a run to one folder.
OUT_DIR_ENV = 'BENCHMARKS_OUT_DIR'

_LINK = re.compile(r'(?<![\w/.-])(?:\.\./)*(?:benchmarks/)?results/([\w.-]+\.md)\b')
_COMMIT = (re.compile(r'commit measured:\s*`?([0-9a-f]{7,40})\b'),
           re.compile(r'\bcommit\s+`?([0-9a-f]{7,40})\b'))
_COMMAND = re.compile(r'`(python3?\s+(?:-m\s+[\w.]+|(?:benchmarks|scripts)/\w+\.py)[^`]*)`'
                      r'|\b(python3?\s+(?:benchmarks|scripts)/\w+\.py)')
_SCRIPT = re.compile(r'\b(?:benchmarks|scripts)/\w+\.py\b')
_RUN_TIME = re.compile(r'^- run: .*?, (\d+) s\b', re.M)
_CHECKOUT = re.compile(r'<checkout of ([0-9a-f]{7,40})>')


# -- git ------------------------------------------------------------------------------------------

class Git:
    """The repository at ``root``: a few git commands, and file contents at a commit read
    through one ``git cat-file --batch`` process (cached)."""

    def __init__(self, root=ROOT):
        self.root = root
        self._blobs = {}
        self._cat = None

    def run(self, *args, check=True):
        res = subprocess.run(['git', '-C', self.root, *args], capture_output=True, text=True)
        if check and res.returncode != 0:
            raise RuntimeError(f'git {" ".join(args)}: {res.stderr.strip()}')
        return res

    def head(self):
        return self.run('rev-parse', 'HEAD').stdout.strip()

    def resolve(self, sha):
        """The full hash of a commit of HEAD's history, or None."""
        res = self.run('rev-parse', '--verify', '--quiet', f'{sha}^{{commit}}', check=False)
        if res.returncode != 0:
            return None
        full = res.stdout.strip()
        ok = self.run('merge-base', '--is-ancestor', full, 'HEAD', check=False).returncode == 0
        return full if ok else None

    def dirty(self):
        """Tracked files that differ from HEAD, and Python files git does not track (a run of
        them would measure code no commit holds); result files (benchmarks/results/) are not
        code: a batch of re-runs copies each new one there while the next runs."""
        tracked = self.run('status', '--porcelain', '--untracked-files=no').stdout.split('\n')
        untracked = self.run('ls-files', '--others', '--exclude-standard').stdout.split()
        files = [line[3:] for line in tracked if line.strip()] + [
            f for f in untracked if f.endswith('.py')]
        return [f for f in files if not f.startswith(RESULTS + '/')]

    def tracked(self, paths=()):
        return set(self.run('ls-files', '--', *paths).stdout.split())

    def files_at(self, sha, paths):
        return set(self.run('ls-tree', '-r', '--name-only', sha, '--', *paths).stdout.split())

    def differing(self, sha, paths):
        """{path: its blob at commit ``sha`` (None: it did not exist)} of those ``paths`` whose
        working-tree content differs from that commit."""
        if not paths:
            return {}
        out = self.run('diff', '--raw', '--no-renames', '--abbrev=40', sha, '--',
                       *sorted(paths)).stdout
        found = {}
        for line in out.splitlines():
            meta, _, path = line.partition('\t')
            old = meta.split()[2]
            found[path] = None if set(old) == {'0'} else old
        return found

    def show(self, obj):
        """The bytes of git object ``obj`` (a blob id, or ``<commit>:<path>``; None when it
        does not exist)."""
        key = obj
        if key not in self._blobs:
            if self._cat is None:
                self._cat = subprocess.Popen(['git', '-C', self.root, 'cat-file', '--batch'],
                                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            self._cat.stdin.write(f'{obj}\n'.encode())
            self._cat.stdin.flush()
            head = self._cat.stdout.readline().split()
            if len(head) < 3 or head[1] == b'missing':
                self._blobs[key] = None
            else:
                size = int(head[2])
                data = self._cat.stdout.read(size)
                self._cat.stdout.read(1)
                self._blobs[key] = data
        return self._blobs[key]

    def semantic(self, blob, path):
        """:func:`_semantic` of ``path`` as git blob ``blob`` holds it (None: as the working
        tree holds it), cached by blob."""
        key = ('semantic', blob or path)
        if key not in self._blobs:
            if blob is None:
                full = os.path.join(self.root, path)
                data = open(full, 'rb').read() if os.path.exists(full) else None
            else:
                data = self.show(blob)
            self._blobs[key] = _semantic(data, path)
        return self._blobs[key]

    def close(self):
        if self._cat is not None:
            self._cat.stdin.close()
            self._cat.wait()
            self._cat = None


def checkout(commit, root=ROOT):
    """A git worktree of ``commit`` at ``out/ab/<commit>`` (created once, kept for later runs):
    the ``--base`` checkout of an A/B benchmark."""
    path = os.path.join(root, 'out', 'ab', commit)
    if not os.path.isdir(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        Git(root).run('worktree', 'add', '--detach', path, commit)
    return path


# -- what a result file says ----------------------------------------------------------------------

@dataclass
class Header:
    """What a result file's header says: the commit measured, the command that wrote it (and
    its script), the run time in seconds (None when not recorded)."""
    commit: str = None
    command: str = None
    script: str = None
    run_time: float = None
    title_time: float = None
    harness: bool = False


def read_header(text):
    """The :class:`Header` of a result file's text: ``commit measured: <sha>`` (older files:
    the first ``commit <sha>``), the first ``python benchmarks/... | scripts/...`` command, and
    whether the harness wrote it (:attr:`Header.harness`: its ``- command:`` line)."""
    h = Header(harness=bool(re.search(r'^- command: `python', text, re.M)))
    m = _COMMIT[0].search(text) or _COMMIT[1].search(text)
    if m:
        h.commit = m.group(1)
    m = _COMMAND.search(text)
    if m:
        h.command = ' '.join((m.group(1) or m.group(2)).split())
        words = h.command.split()
        if words[1] == '-m':
            h.script = words[2].replace('.', '/') + '.py'
        else:
            h.script = words[1]
    elif _SCRIPT.search(text):        # older files: the script named, without a command
        h.script = _SCRIPT.search(text).group(0)
        h.command = f'python {h.script}'
    m = _RUN_TIME.search(text)
    if m:
        h.run_time = float(m.group(1))
    m = re.search(r'\(~(\d+) (s|min)\)', text.partition('\n')[0])
    if m:
        h.title_time = float(m.group(1)) * (60 if m.group(2) == 'min' else 1)
    return h


def declared(path):
    """The ``MEASURES`` a script declares (a tuple of paths), or None when it declares none."""
    try:
        with open(path, encoding='utf-8') as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError):
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == 'MEASURES' for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    return None


# -- the code a result measures -------------------------------------------------------------------

def _module_file(root, dotted):
    """The repository file of module ``dotted`` (a package's __init__.py), or None."""
    parts = dotted.split('.')
    if not parts[0] or parts[0] not in CODE_ROOTS:
        return None
    base = os.path.join(*parts)
    for cand in (base + '.py', os.path.join(base, '__init__.py')):
        if os.path.isfile(os.path.join(root, cand)):
            return cand
    return None


def _imported_names(tree, package):
    """Dotted names a module's syntax tree imports (relative imports resolved against
    ``package``; ``from a import b`` gives ``a`` and ``a.b``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split('.')[:len(package.split('.')) - node.level + 1]
                mod = '.'.join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ''
            names.add(mod)
            names.update(f'{mod}.{a.name}' for a in node.names)
    return names


def imports(root, path):
    """The repository files that the Python file ``path`` imports (cached by its mtime):
    :func:`_imports`."""
    full = os.path.join(root, path)
    key = (root, path, os.stat(full).st_mtime_ns if os.path.exists(full) else None)
    if key not in _IMPORTS:
        _IMPORTS[key] = _imports(root, path)
    return _IMPORTS[key]


_IMPORTS = {}


def _imports(root, path):
    """The repository files that the Python file ``path`` imports: every package on the way to
    each module, and siblings imported by bare name (``from common import ...`` in a script of
    ``benchmarks/``).  In a package's ``__init__.py`` the bodies of functions are left out: a
    lazy ``__getattr__`` is not an import of everything it could load."""
    try:
        with open(os.path.join(root, path), encoding='utf-8') as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, UnicodeDecodeError):
        return set()
    if os.path.basename(path) == '__init__.py':
        tree.body = [n for n in tree.body
                     if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    here = os.path.dirname(path)
    names = _imported_names(tree, here.replace(os.sep, '.'))
    out = set()
    for name in names:
        parts = name.split('.')
        for k in range(1, len(parts) + 1):
            f = _module_file(root, '.'.join(parts[:k]))
            if f:
                out.add(f)
        sibling = os.path.join(here, parts[0] + '.py')
        if parts[0] and os.path.isfile(os.path.join(root, sibling)):
            out.add(sibling)
    return out


def closure(root, paths):
    """``paths`` and every repository file their Python files import, transitively."""
    seen, todo = set(), list(paths)
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        if f.endswith('.py'):
            todo.extend(imports(root, f) - seen)
    return seen


def code_of(root, script, git=None):
    """The files a result written by ``script`` measures: the script, what it imports, the
    paths of its ``MEASURES`` (a folder: its tracked files) and what their Python files import;
    and the declaration itself (None when the script declares no MEASURES)."""
    measures = declared(os.path.join(root, script))
    if measures is None:
        return None, None
    git = git or Git(root)
    files = {script}
    for p in measures:
        if os.path.isdir(os.path.join(root, p)):
            files |= git.tracked([p])
        else:
            files.add(p)
    return closure(root, files), measures


def _semantic(data, path):
    """What counts in a file: a Python file's syntax tree without docstrings (comments are not
    in it), any other file's bytes."""
    if data is None or not path.endswith('.py'):
        return data
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return data
    for node in ast.walk(tree):
        body = getattr(node, 'body', None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, annotate_fields=False)


def changed(git, sha, files, folders=()):
    """Of ``files`` (and the files under ``folders`` at ``sha`` that are gone now), those that
    changed since commit ``sha`` in more than docstrings and comments (sorted)."""
    tracked = git.tracked(files)
    out = {f for f in files if f not in tracked and os.path.exists(os.path.join(git.root, f))}
    if folders:
        out |= {f for f in git.files_at(sha, folders)
                if not os.path.exists(os.path.join(git.root, f))}
    for f, blob in git.differing(sha, tracked).items():
        if blob is None or git.semantic(blob, f) != git.semantic(None, f):
            out.add(f)
    return sorted(out)


# -- every result file ----------------------------------------------------------------------------

@dataclass
class Result:
    """One result file: its header, the code it measures and its state."""
    name: str
    header: Header
    quoted: list = field(default_factory=list)    # doc:line where a document links it
    measures: tuple = None                        # the script's MEASURES
    state: str = 'unknown'                        # fresh, stale or unknown
    why: str = ''                                 # the changed files, or what is unknown
    changed: list = field(default_factory=list)


def quoted(root=ROOT):
    """{result file name: ['doc:line', ...]} for the result files the documents link."""
    docs = []
    for d in DOCS:
        full = os.path.join(root, d)
        if os.path.isdir(full):
            docs += [os.path.join(d, f) for f in sorted(os.listdir(full)) if f.endswith('.md')]
        elif os.path.isfile(full):
            docs.append(d)
    found = {}
    for doc in docs:
        with open(os.path.join(root, doc), encoding='utf-8') as f:
            for no, line in enumerate(f, 1):
                for name in dict.fromkeys(m.group(1) for m in _LINK.finditer(line)):
                    if os.path.isfile(os.path.join(root, RESULTS, name)):
                        found.setdefault(name, []).append(f'{doc}:{no}')
    return found


def result_names(root=ROOT):
    return sorted(f for f in os.listdir(os.path.join(root, RESULTS)) if f.endswith('.md'))


def assess(name, root=ROOT, git=None, quotes=None):
    """The :class:`Result` of ``benchmarks/results/<name>``."""
    git = git or Git(root)
    with open(os.path.join(root, RESULTS, name), encoding='utf-8') as f:
        h = read_header(f.read())
    r = Result(name, h, (quotes if quotes is not None else quoted(root)).get(name, []))
    sha = git.resolve(h.commit) if h.commit else None
    if sha is None:
        r.why = (f'commit {h.commit} is not in the history of HEAD' if h.commit else
                 'names no commit measured')
    elif not h.script or not os.path.isfile(os.path.join(root, h.script)):
        r.why = (f'its script {h.script} is not in this checkout' if h.script else
                 'names no command (python benchmarks/<script>.py ...)')
    else:
        files, r.measures = code_of(root, h.script, git)
        if files is None:
            r.why = f'{h.script} declares no MEASURES'
        else:
            folders = [p for p in r.measures if os.path.isdir(os.path.join(root, p))]
            r.changed = changed(git, sha, files, folders)
            r.state = 'stale' if r.changed else 'fresh'
            r.why = ', '.join(r.changed)
    return r


def problems(results):
    """What keeps each quoted result file from being evidence, as lines, and the one command
    that renews them: stale or unknown, or a header not written by ``report()``."""
    lines, names = [], []
    for r in results:
        if not r.quoted:
            continue
        why = []
        if r.state != 'fresh':
            more = f' and {len(r.changed) - 4} more' if len(r.changed) > 4 else ''
            why.append(f'{r.state}: ' + (f'changed since {r.header.commit}: '
                                         f'{", ".join(r.changed[:4])}{more}'
                                         if r.state == 'stale' else r.why))
        if not r.header.harness:
            why.append('its header was not written by benchmarks/common.py report()')
        if why:
            names.append(r.name)
            lines.append(f'{r.name} (quoted at {r.quoted[0]}): {"; ".join(why)}; '
                         f'written by `{r.header.command or "?"}`')
    if names:
        lines.append(f'renew them on a clean tree: python -m benchmarks.results {" ".join(names)}'
                     ' (or: python -m benchmarks.results --stale), then commit benchmarks/results/')
    return lines


def assess_all(root=ROOT, names=None):
    git = Git(root)
    quotes = quoted(root)
    try:
        return [assess(n, root, git, quotes) for n in (names or result_names(root))]
    finally:
        git.close()


# -- run time estimates ---------------------------------------------------------------------------

def _option(command, name, default):
    """The value(s) of ``--name`` in a command line (a list), or ``default``."""
    words, out = shlex.split(command), None
    for k, w in enumerate(words):
        if w == name:
            out = []
            for v in words[k + 1:]:
                if v.startswith('--'):
                    break
                out.append(v)
    return out if out else default


def _readme_estimate(root, command):
    """Seconds from the run-time column of benchmarks/README.md's row for the command's script
    ("~N s", "~N min", "~N min per repetition and robot", "`--duration` + ~N s"), or None."""
    script = command.split()[1]
    try:
        with open(os.path.join(root, 'benchmarks', 'README.md'), encoding='utf-8') as f:
            rows = [line for line in f if line.startswith(f'| `python {script}')]
    except OSError:
        return None
    for line in rows:
        cell = line.rstrip().rstrip('|').split('|')[-1]
        m = re.search(r'~\s*(\d+(?:\.\d+)?)(?:-(\d+))?\s*(s|min)\b', cell)
        if not m:
            continue
        sec = float(m.group(2) or m.group(1)) * (60 if m.group(3) == 'min' else 1)
        if 'per repetition and robot' in cell:
            sec *= int(_option(command, '--reps', ['5'])[0]) * len(
                _option(command, '--robots', ['panda', 'talos']))
        if '`--duration` +' in cell:
            sec += float(_option(command, '--duration', ['0'])[0])
        return sec
    return None


def estimate(r, root=ROOT):
    """(seconds, where the estimate comes from) for re-running result ``r``: the run time its
    header records, else benchmarks/README.md's table, else its title's "(~N min)"."""
    if r.header.run_time is not None:
        return r.header.run_time, 'its last run'
    if r.header.command:
        s = _readme_estimate(root, r.header.command)
        if s is not None:
            return s, 'benchmarks/README.md'
    if r.header.title_time is not None:
        return r.header.title_time, 'its title'
    return None, 'no estimate'


def _human(seconds):
    if seconds is None:
        return '?'
    return f'{seconds:.0f} s' if seconds < 90 else f'{seconds / 60:.0f} min'


# -- the listing and the re-run -------------------------------------------------------------------

def listing(results, root=ROOT, out=sys.stdout):
    """One block per result file: state, commit, command, declared code, quoted where, estimate."""
    for r in results:
        sec, src = estimate(r, root)
        print(f'{r.state:7} {r.name}: commit {r.header.commit or "?"}, '
              f'`{r.header.command or "?"}` (~{_human(sec)}, {src})', file=out)
        if r.measures is not None:
            print(f'        measures: {", ".join(r.measures) or "(the script alone)"}', file=out)
        if r.state != 'fresh':
            print(f'        {"changed since: " if r.state == "stale" else ""}{r.why}', file=out)
        print(f'        quoted: {", ".join(r.quoted) if r.quoted else "by no document"}',
              file=out)
    states = [r.state for r in results]
    print(f'{states.count("fresh")} fresh, {states.count("stale")} stale, '
          f'{states.count("unknown")} unknown of {len(results)} result files', file=out)


def command_line(command, root=ROOT):
    """The argv of a recorded command: ``python`` is this interpreter, ``<checkout of SHA>``
    a worktree of that commit."""
    words = shlex.split(_CHECKOUT.sub(lambda m: checkout(m.group(1), root), command))
    return [sys.executable] + words[1:]


def rerun(results, root=ROOT, dry_run=False):
    """Re-run ``results`` (one run per distinct command) and copy their new files into
    benchmarks/results/.  Returns the names that were not renewed."""
    git = Git(root)
    if not dry_run and git.dirty():
        raise SystemExit('the tree has uncommitted changes (' + ', '.join(git.dirty()[:5]) +
                         '): commit first, then measure')
    runs = {}
    for r in results:
        if not r.header.command:
            print(f'cannot re-run {r.name}: {r.why}', file=sys.stderr)
            continue
        runs.setdefault(r.header.command, []).append(r)
    total = [estimate(group[0], root)[0] for group in runs.values()]
    known = sum(t for t in total if t is not None)
    print(f'{len(runs)} runs for {sum(map(len, runs.values()))} result files, estimated '
          f'{_human(known)}' + (f' (and {total.count(None)} runs without an estimate)'
                                if None in total else ''), file=sys.stderr, flush=True)
    failed = [r.name for r in results if not r.header.command]
    stamp = time.strftime('%Y%m%d-%H%M%S')
    for k, (command, group) in enumerate(runs.items(), 1):
        names = [r.name for r in group]
        sec, src = estimate(group[0], root)
        print(f'[{k}/{len(runs)}] {", ".join(names)}: {command}  (~{_human(sec)}, {src})',
              file=sys.stderr, flush=True)
        if dry_run:
            continue
        out_dir = os.path.join(root, 'out', 'results-run', stamp, str(k))
        os.makedirs(out_dir)
        t0 = time.monotonic()
        with open(os.path.join(out_dir, 'stdout.log'), 'w') as log:
            rc = subprocess.call(command_line(command, root), cwd=root, stdout=log,
                                 env=dict(os.environ, **{OUT_DIR_ENV: out_dir}))
        took = time.monotonic() - t0
        renewed = _collect(out_dir, names, root) if rc == 0 else []
        failed += [n for n in names if n not in renewed]
        print(f'[{k}/{len(runs)}] {"done" if rc == 0 else f"FAILED (status {rc})"} in '
              f'{_human(took)}; renewed: {", ".join(renewed) or "nothing"} (output: '
              f'{os.path.relpath(out_dir, root)})', file=sys.stderr, flush=True)
    git.close()
    return failed


def _collect(out_dir, names, root):
    """Copy the result files ``names`` and the files of the same stem from ``out_dir`` into
    benchmarks/results/; the names copied (a result file is copied only when its header names
    the commit now checked out)."""
    head = Git(root).head()
    done = []
    for name in names:
        path = os.path.join(out_dir, name)
        if not os.path.isfile(path):
            print(f'    {name} was not written: the script must write it with '
                  'benchmarks/common.py report()', file=sys.stderr)
            continue
        with open(path, encoding='utf-8') as f:
            h = read_header(f.read())
        if not h.commit or not head.startswith(h.commit):
            print(f'    {name} names commit {h.commit}, not {head[:12]}: not copied',
                  file=sys.stderr)
            continue
        stem = name[:-3]
        for f in os.listdir(out_dir):
            if f == name or (f.startswith(stem) and f[len(stem)] in '._' and f != 'stdout.log'):
                shutil.copy(os.path.join(out_dir, f), os.path.join(root, RESULTS, f))
        done.append(name)
    return done


def main(argv=None):
    ap = argparse.ArgumentParser(
        description='List the result files with the commit each measured and whether the '
                    'code it measures changed since; re-run the stale ones.')
    ap.add_argument('names', nargs='*', help='result files to re-run (e.g. dynamics.md)')
    ap.add_argument('--stale', action='store_true',
                    help='re-run every result file that is stale or unknown')
    ap.add_argument('--all', action='store_true', help='re-run every result file')
    ap.add_argument('--dry-run', action='store_true', help='say what would run, run nothing')
    ap.add_argument('--command', help='with one named result file: run this command instead of '
                    "the one its header records (for a file whose header's command is "
                    'incomplete; the new file records the command that ran)')
    args = ap.parse_args(argv)
    if args.command and len(args.names) != 1:
        ap.error('--command goes with exactly one result file name')
    names = [n if n.endswith('.md') else n + '.md' for n in args.names]
    unknown = [n for n in names if not os.path.isfile(os.path.join(ROOT, RESULTS, n))]
    if unknown:
        ap.error(f'no such result file in {RESULTS}: {", ".join(unknown)}')
    results = assess_all(ROOT)
    if not (args.stale or args.all or names):
        listing(results)
        return 0 if all(r.state == 'fresh' for r in results) else 1
    chosen = [r for r in results if args.all or r.name in names or
              (args.stale and r.state != 'fresh')]
    if args.command:
        chosen[0].header.command = ' '.join(args.command.split())
    failed = rerun(chosen, ROOT, args.dry_run)
    if failed and not args.dry_run:
        print(f'not renewed: {", ".join(failed)}', file=sys.stderr)
        return 1
    if not args.dry_run:
        print('commit benchmarks/results/ (git add benchmarks/results && git commit)',
              file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
