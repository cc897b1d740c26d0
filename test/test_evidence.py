"""The evidence stays true: every result file a document quotes measured the code as it is now.

* A result file quoted by README.md, benchmarks/README.md or docs/ names the commit it measured
  (``commit measured: <sha>``, a commit of this history), the command that wrote it and, through
  its script's ``MEASURES`` and the script's imports, the code it measures; none of that code
  changed since that commit in more than docstrings and comments (``benchmarks/results.py``:
  the same check ``python -m benchmarks.results`` lists).  The failure lists what to re-run.
* The check is not trivially green: a stale result planted in a temporary git repository (a
  measured module changed, a module the script imports changed, a declared data file changed,
  an uncommitted edit, a file of a declared folder deleted) is caught, while a change to
  docstrings and comments, or to code the result does not measure, is not.
* ``report()`` refuses to write into ``benchmarks/results/`` from a tree with uncommitted
  changes; every script that writes a result declares ``MEASURES`` (paths that exist); every
  result file is quoted by a document, and every other file there belongs to a quoted one.

Needs the git history (CI runs on a clone with history).
"""
import os
import re
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.core

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(REPO_ROOT, 'benchmarks')
sys.path.insert(0, BENCH)

import results  # noqa: E402  (benchmarks/results.py: the freshness of the evidence)


def test_every_quoted_result_measured_the_code_as_it_is():
    found = results.problems(results.assess_all(REPO_ROOT))
    assert not found, ('result files quoted by the documents that do not describe this code '
                       '(benchmarks/README.md, "Evidence"):\n' + '\n'.join(found))


def test_every_result_file_is_quoted_and_every_other_file_belongs_to_one():
    quoted = results.quoted(REPO_ROOT)
    names = results.result_names(REPO_ROOT)
    orphans = [n for n in names if n not in quoted]
    assert not orphans, f'result files no document quotes (retire them: git rm): {orphans}'
    others = sorted(f for f in os.listdir(os.path.join(REPO_ROOT, results.RESULTS))
                    if not f.endswith('.md'))
    loose = [f for f in others if not any(
        f.startswith(n[:-3]) and f[len(n) - 3] in '._' for n in names)]
    assert not loose, f'files in benchmarks/results/ that belong to no result file: {loose}'


def _writers():
    """Scripts of benchmarks/ and scripts/ that write a result file (call report() or are named
    by a result file's header).  A module without an entry point of its own (no ``__main__``) that
    calls report() is part of the script that runs it, whose MEASURES report() takes."""
    out = set()
    for folder in ('benchmarks', 'scripts'):
        for f in os.listdir(os.path.join(REPO_ROOT, folder)):
            path = os.path.join(folder, f)
            if f.endswith('.py') and f not in ('common.py', 'results.py'):
                with open(os.path.join(REPO_ROOT, path), encoding='utf-8') as fh:
                    text = fh.read()
                    if re.search(r'^\s*(?:\w+ = )?report\(', text, re.M) and '__main__' in text:
                        out.add(path)
    for name in results.result_names(REPO_ROOT):
        with open(os.path.join(REPO_ROOT, results.RESULTS, name), encoding='utf-8') as fh:
            script = results.read_header(fh.read()).script
        if script and os.path.isfile(os.path.join(REPO_ROOT, script)):
            out.add(script)
    return sorted(out)


@pytest.mark.parametrize('script', _writers())
def test_a_script_that_writes_a_result_declares_what_it_measures(script):
    measures = results.declared(os.path.join(REPO_ROOT, script))
    assert measures is not None, (f'{script} writes a result file but declares no MEASURES '
                                  "(e.g. MEASURES = ('ros_dynamics/core',))")
    missing = [p for p in measures if not os.path.exists(os.path.join(REPO_ROOT, p))]
    assert not missing, f'{script}: MEASURES names paths that do not exist: {missing}'


# -- a planted stale result -----------------------------------------------------------------------

def _git(root, *args):
    return subprocess.run(['git', '-C', str(root), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def _write(root, path, text):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, 'w') as f:
        f.write(textwrap.dedent(text))


def _commit(root, message):
    _git(root, 'add', '-A')
    _git(root, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', message)
    return _git(root, 'rev-parse', 'HEAD')


@pytest.fixture
def repo(tmp_path):
    """A small checkout: a measured module, a helper it imports (not declared), an unrelated
    module, a declared data file and a declared folder, a benchmark and a document."""
    root = str(tmp_path)
    _git(root, 'init', '-q')
    _write(root, 'ros_dynamics/__init__.py', '')
    _write(root, 'ros_dynamics/kernel.py', '''\
        """The measured kernel."""
        from ros_dynamics import helper


        def f(x):
            return helper.g(x) + 1   # the step
        ''')
    _write(root, 'ros_dynamics/helper.py', 'def g(x):\n    return 2 * x\n')
    _write(root, 'ros_dynamics/other.py', 'def h():\n    return 0\n')
    _write(root, 'ros_dynamics/tables/a.py', 'A = 1\n')
    _write(root, 'ros_dynamics/tables/b.py', 'B = 2\n')
    _write(root, 'urdf/robot.urdf', '<robot name="r"/>\n')
    _write(root, 'benchmarks/bench.py', '''\
        """A benchmark."""
        MEASURES = ('ros_dynamics/kernel.py', 'ros_dynamics/tables', 'urdf/robot.urdf')
        import ros_dynamics.kernel
        ''')
    _write(root, 'README.md', 'It takes 1.5 us ([run](benchmarks/results/bench.md)).\n')
    _commit(root, 'code')
    return root


def _plant_result(root, monkeypatch, name='bench.md'):
    """The result file of benchmarks/bench.py, written by the harness's report(), committed."""
    import common
    monkeypatch.setattr(sys, 'argv', [os.path.join(root, 'benchmarks', 'bench.py')])
    common.report(os.path.join(root, 'benchmarks', 'results', name), '# A result\n\n| a | 1.5 |\n',
                  measures=('ros_dynamics/kernel.py', 'ros_dynamics/tables', 'urdf/robot.urdf'))
    return _commit(root, 'result')


def _state(root, name='bench.md'):
    r = results.assess(name, root)
    return r.state, r.changed


def test_a_planted_stale_result_is_caught(repo, monkeypatch, capsys):
    sha = _plant_result(repo, monkeypatch)
    text = open(os.path.join(repo, 'benchmarks/results/bench.md')).read()
    head = results.read_header(text)
    assert head.harness and head.script == 'benchmarks/bench.py'
    assert sha.startswith(head.commit) or _git(repo, 'rev-parse', 'HEAD~1').startswith(head.commit)
    assert _state(repo) == ('fresh', [])
    assert 'bench.md' in results.quoted(repo)
    # docstrings and comments of measured code, and code it does not measure: still fresh
    src = open(os.path.join(repo, 'ros_dynamics/kernel.py')).read()
    _write(repo, 'ros_dynamics/kernel.py', src.replace('The measured kernel.', 'The kernel.')
           .replace('# the step', '# the one step'))
    _write(repo, 'ros_dynamics/other.py', 'def h():\n    return 1\n')
    _commit(repo, 'words')
    assert _state(repo) == ('fresh', [])
    # a result of a script that declares files only: a file it does not measure deleted
    _write(repo, 'benchmarks/files_only.py', '''MEASURES = ('ros_dynamics/kernel.py',)\n''')
    _commit(repo, 'a second benchmark')
    import common
    monkeypatch.setattr(sys, 'argv', [os.path.join(repo, 'benchmarks', 'files_only.py')])
    common.report(os.path.join(repo, 'benchmarks', 'results', 'files_only.md'), '# R\n',
                  measures=('ros_dynamics/kernel.py',))
    _commit(repo, 'its result')
    os.remove(os.path.join(repo, 'ros_dynamics/other.py'))                  # not measured
    _commit(repo, 'unrelated file deleted')
    assert _state(repo) == ('fresh', []) and _state(repo, 'files_only.md') == ('fresh', [])
    # each of these makes it stale, and names the file
    plants = [
        ('ros_dynamics/helper.py', 'def g(x):\n    return 3 * x\n'),          # imported only
        ('ros_dynamics/kernel.py', src.replace('+ 1', '+ 2')),                # declared
        ('urdf/robot.urdf', '<robot name="r2"/>\n'),                          # declared data
        ('ros_dynamics/tables/a.py', 'A = 2\n'),                              # declared folder
    ]
    for path, new in plants:
        old = open(os.path.join(repo, path)).read()
        _write(repo, path, new)
        assert _state(repo) == ('stale', [path]), path            # uncommitted: caught
        _commit(repo, f'change {path}')
        assert _state(repo) == ('stale', [path]), path            # committed: caught
        _write(repo, path, old)
        _commit(repo, f'restore {path}')
        assert _state(repo) == ('fresh', []), path
    os.remove(os.path.join(repo, 'ros_dynamics/tables/b.py'))               # a file deleted
    _commit(repo, 'delete')
    assert _state(repo) == ('stale', ['ros_dynamics/tables/b.py'])
    # the test's message names the file and the command that renews it
    found = results.problems([results.assess('bench.md', repo)])
    assert 'stale' in found[0] and 'ros_dynamics/tables/b.py' in found[0]
    assert found[-1].startswith('renew them on a clean tree: python -m benchmarks.results '
                                'bench.md')


def test_a_result_of_unknown_code_is_caught(repo, monkeypatch):
    _plant_result(repo, monkeypatch)
    path = os.path.join(repo, 'benchmarks/results/bench.md')
    text = open(path).read()
    m = re.search(r'commit measured: ([0-9a-f]+)', text)
    cases = {'a commit outside the history': text.replace(m.group(1), 'deadbeef1234'),
             'no commit': text.replace(m.group(0), 'commit measured: none'),
             'no script': text.replace('benchmarks/bench.py', 'benchmarks/gone.py')}
    for what, planted in cases.items():
        with open(path, 'w') as f:
            f.write(planted)
        assert results.assess('bench.md', repo).state == 'unknown', what
    # a script without MEASURES
    with open(path, 'w') as f:
        f.write(text)
    _write(repo, 'benchmarks/bench.py', 'import ros_dynamics.kernel\n')
    r = results.assess('bench.md', repo)
    assert r.state == 'unknown' and 'MEASURES' in r.why


def test_report_refuses_to_write_a_result_from_a_dirty_tree(repo, monkeypatch):
    import common
    monkeypatch.setattr(sys, 'argv', [os.path.join(repo, 'benchmarks', 'bench.py')])
    _write(repo, 'ros_dynamics/helper.py', 'def g(x):\n    return 4 * x\n')     # uncommitted
    target = os.path.join(repo, 'benchmarks', 'results', 'bench.md')
    with pytest.raises(SystemExit, match='uncommitted changes'):
        common.report(target, '# A result\n\nx\n', measures=())
    assert not os.path.exists(target)
    # elsewhere it writes, and says that the run is no evidence
    trial = common.report(os.path.join(repo, 'out', 'bench.md'), '# A result\n\nx\n',
                          measures=())
    text = open(trial).read()
    assert 'commit measured: none' in text and not results.read_header(text).commit
    assert 'uncommitted' not in text
    # a script without MEASURES writes nothing
    monkeypatch.setattr(sys.modules['__main__'], 'MEASURES', None, raising=False)
    with pytest.raises(SystemExit, match='MEASURES'):
        common.report(os.path.join(repo, 'out', 'x.md'), '# A result\n')


def test_report_sends_results_to_the_folder_of_a_rerun(repo, monkeypatch, tmp_path_factory):
    """BENCHMARKS_OUT_DIR (what python -m benchmarks.results sets) overrides the script's own
    output folder, for the result file and the files written beside it."""
    import common
    out = str(tmp_path_factory.mktemp('rerun'))
    monkeypatch.setenv(results.OUT_DIR_ENV, out)
    monkeypatch.setattr(sys, 'argv', [os.path.join(repo, 'benchmarks', 'bench.py'),
                                      '--out-dir', 'elsewhere'])
    path = common.report(os.path.join(repo, 'elsewhere', 'bench.md'), '# A result\n', measures=())
    assert path == os.path.join(out, 'bench.md') and os.path.isfile(path)
    assert common.output('elsewhere', 'bench.json') == os.path.join(out, 'bench.json')
    assert '- command: `python benchmarks/bench.py --out-dir elsewhere`' in open(path).read()
