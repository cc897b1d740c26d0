"""The documentation says what is true and stays readable.

(a) every ```python block of README.md runs as written (in a fresh interpreter, from a
    directory outside the repository); (b) README.md stays short (at most 250 lines);
(c) no internal labels (planning-note numbers, file names of the team's notes) in the user
    documentation, the scripts and the benchmarks, and no words about how the work was done
    (temporary paths, who ran what) in README.md, docs/ and the benchmarks' Markdown (their
    result files included); (d) every relative link in README.md and
    docs/ points to an existing file, and every #anchor to a heading of that file.
"""

import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.core

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(REPO_ROOT, 'README.md')
MAX_README_LINES = 250

# Files and folders searched for internal labels (relative to the repository root).
LABEL_SCAN = ('README.md', 'docs', 'scripts', 'benchmarks', 'ros_dynamics')
# 'seed 0..' and 'issue-N' in any case; the team's notes file in capitals (docs/conventions.md,
# the project's own conventions document, is a proper link).
LABEL_PATTERNS = (r'(?i:seed 0)', r'CONVENTIONS\.md', r'(?i:issue-)')
LABEL_SUFFIXES = ('.md', '.py', '.sh', '.yaml', '.txt', '.cfg', '.xml')
# Words about the making rather than the product, in what users read: README.md, docs/ and
# benchmarks/**/*.md (a result file names a commit, not the temporary path of a checkout).
WORK_SCAN = ('README.md', 'docs', 'benchmarks')
WORK_PATTERNS = (r'/tmp/', r'(?i:\bagents?\b)', r"(?i:\bhelper session)", r"(?i:\bthe session\b)",
                 r"(?i:\bsession's)", r'(?i:\bseed paper)')


def _markdown_files():
    files = [README]
    for dirpath, _, names in os.walk(os.path.join(REPO_ROOT, 'docs')):
        files += [os.path.join(dirpath, n) for n in sorted(names) if n.endswith('.md')]
    return files


def _rel(path):
    return os.path.relpath(path, REPO_ROOT)


def _readme_python_blocks():
    with open(README) as f:
        text = f.read()
    return re.findall(r'^```python\n(.*?)^```', text, re.S | re.M)


def test_readme_has_python_blocks():
    assert _readme_python_blocks(), 'README.md should show the Python API'


@pytest.mark.parametrize('index', range(len(_readme_python_blocks())))
def test_readme_python_block_runs_as_written(index, tmp_path):
    code = _readme_python_blocks()[index]
    env = dict(os.environ)
    env['PYTHONPATH'] = REPO_ROOT + (os.pathsep + env['PYTHONPATH'] if env.get('PYTHONPATH')
                                     else '')
    env.setdefault('MPLBACKEND', 'Agg')
    res = subprocess.run([sys.executable, '-c', code], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, f'README python block {index + 1} failed:\n{res.stderr}'


def test_readme_is_short():
    with open(README) as f:
        n = len(f.read().splitlines())
    assert n <= MAX_README_LINES, f'README.md has {n} lines (at most {MAX_README_LINES})'


def _label_hits(roots, patterns=LABEL_PATTERNS, suffixes=LABEL_SUFFIXES):
    rx = re.compile('|'.join(patterns))
    hits = []
    for root in roots:
        path = os.path.join(REPO_ROOT, root)
        files = [path] if os.path.isfile(path) else [
            os.path.join(d, n) for d, dirs, names in os.walk(path)
            if '__pycache__' not in d for n in sorted(names) if n.endswith(suffixes)]
        for fp in files:
            with open(fp, encoding='utf-8', errors='replace') as f:
                for no, line in enumerate(f, 1):
                    if rx.search(line):
                        hits.append(f'{_rel(fp)}:{no}: {line.strip()}')
    return hits


def test_no_internal_labels():
    hits = _label_hits(LABEL_SCAN)
    assert not hits, ('internal labels a reader cannot resolve (cite papers by authors and '
                      'year instead):\n' + '\n'.join(hits))


def test_no_words_about_the_making():
    hits = _label_hits(WORK_SCAN, WORK_PATTERNS + LABEL_PATTERNS, ('.md',))
    assert not hits, ('words about how the work was done, not about the product (name a '
                      'commit, the machine and its load instead):\n' + '\n'.join(hits))


LINK = re.compile(r'(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)')


def _slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    s = heading.strip().lower()
    s = re.sub(r'[^\w\- ]', '', s, flags=re.UNICODE)
    return s.replace(' ', '-')


def _anchors(path):
    with open(path) as f:
        text = f.read()
    text = re.sub(r'^```.*?^```', '', text, flags=re.S | re.M)     # no headings in code
    return {_slug(m) for m in re.findall(r'^#{1,6}\s+(.*)$', text, re.M)}


@pytest.mark.parametrize('md', _markdown_files(), ids=_rel)
def test_relative_links_resolve(md):
    with open(md) as f:
        text = f.read()
    text = re.sub(r'^```.*?^```', '', text, flags=re.S | re.M)     # links in code are examples
    bad = []
    for m in LINK.finditer(text):
        target = m.group(1) or m.group(2)
        if re.match(r'^[a-z][a-z0-9+.-]*:', target):                 # http:, https:, mailto:
            continue
        path, _, anchor = target.partition('#')
        full = os.path.normpath(os.path.join(os.path.dirname(md), path)) if path else md
        if not os.path.exists(full):
            bad.append(f'{target}: no file {_rel(full)}')
        elif anchor and full.endswith('.md') and anchor not in _anchors(full):
            bad.append(f'{target}: no heading #{anchor} in {_rel(full)}')
        elif os.path.commonpath([full, REPO_ROOT]) != REPO_ROOT:
            bad.append(f'{target}: outside the repository')
    assert not bad, f'{_rel(md)}: broken links:\n' + '\n'.join(bad)
