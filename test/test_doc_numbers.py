"""Every measured number in the documentation is in the result file it cites.

The rule for writers (benchmarks/README.md, "Numbers in the documentation"):

* a paragraph, table row or list item that states a measured number links the result file(s)
  in ``benchmarks/results/`` that contain it; a table or a list also uses the result files linked
  in the paragraph just above it (its caption);
* each number of such a block (a decimal number, or a number with a unit of time, a ratio, a
  share or a size: µs, ms, s of CPU, x, %, MB, ...) occurs in one of the files it cites,
  written the same way (same rounding); text in `code` and link targets is not read;
* in its row: when the clause of a number (its sentence up to a comma, semicolon, colon or
  dash, or after a closing parenthesis; a table row is one) names rows of a cited table (by
  their label, the first cell, e.g. the robot: in full, else its first word; rows with an
  empty first cell continue the row above; when the clause also names a second-column label,
  e.g. the coordinates or the variant, that one too), a number found in the tables only must
  be in a row its clause names, not in another robot's or case's row; a clause that names no
  row is checked against the whole file;
* in the performance documents (README's "Performance" section, docs/performance.md,
  benchmarks/README.md) a block with such a number and no link to a result file is an error;
  everywhere else a cost (µs, ns, s of CPU) without a link to a result file is an error, and
  every block that links a result file is checked the same way;
* every result file cited this way says when (a date), where (the machine and its load) and how
  (the script that wrote it), and every result file names the commit it measured.

The checks run on the committed text and files only (no benchmark is run), so they are fast and
cannot pass by timing luck; ``test_an_injected_wrong_number_is_caught`` shows the check fails on
a number that is not in its file.
"""

import glob
import os
import re

import pytest

pytestmark = pytest.mark.core

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(REPO_ROOT, 'benchmarks', 'results')
DOCS = ['README.md', 'benchmarks/README.md'] + sorted(
    os.path.relpath(p, REPO_ROOT) for p in glob.glob(os.path.join(REPO_ROOT, 'docs', '*.md')))
# Where a measured number must cite its result file: the whole file (None) or one section.
PERFORMANCE = {'README.md': '## Performance', 'docs/performance.md': None,
               'benchmarks/README.md': None}

# A number: digits, optional thousands separators, fraction and exponent; not part of a name
# (arm7, chain-20, run10, e-9 of 1e-9).
NUMBER = r'(?<![\w.])(?<![A-Za-z]-)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(e[-+]?\d+)?'
UNIT = (r'\s?(?:µs|us\b|ns\b|ms\b|s of CPU|x(?![\w])|×|%|kB\b|MB\b|GB\b|M states/s'
        r'|times\b|mrad\b)')
TOKEN = re.compile(NUMBER + '(?P<unit>' + UNIT + ')?')
COST = re.compile(NUMBER + r'\s?(?:µs|us\b|ns\b|s of CPU)')
LINK = re.compile(r'\[([^\]]*)\]\(([^)\s]+)\)')
CODE = re.compile(r'`[^`]*`')


def _numbers(text):
    """The measured numbers of a text, as written (without their unit)."""
    text = CODE.sub(' ', LINK.sub(lambda m: ' ' + m.group(1) + ' ', text))
    out = []
    for m in TOKEN.finditer(text.replace('**', '')):
        if m.group(2) or m.group('unit'):
            out.append(''.join(g for g in m.groups()[:3] if g))
    return out


def _costs(text):
    """Whether a text states a cost (a time per call or of CPU)."""
    text = CODE.sub(' ', LINK.sub(lambda m: ' ' + m.group(1) + ' ', text))
    return bool(COST.search(text.replace('**', '')))


def _cited(text, doc):
    """Result files linked in a text (paths relative to the repository)."""
    out = []
    for m in LINK.finditer(text):
        target = m.group(2).partition('#')[0]
        if re.match(r'^[a-z][a-z0-9+.-]*:', target) or not target:
            continue
        path = os.path.normpath(os.path.join(REPO_ROOT, os.path.dirname(doc), target))
        if os.path.dirname(path) == RESULTS and os.path.isfile(path):
            out.append(os.path.relpath(path, REPO_ROOT))
    return out


def _blocks(doc, text):
    """(first line number, text, inherited citations, in the performance scope) per paragraph,
    table row and list item of a markdown text (code blocks and headings skipped)."""
    scope = PERFORMANCE.get(doc, False)
    in_scope = scope is None
    blocks, para, caption, fence = [], [], [], False
    lines = text.splitlines()

    def flush():
        if para:
            start, body = para[0][0], '\n'.join(t for _, t in para)
            kind = ('table' if body.lstrip().startswith('|') else
                    'list' if re.match(r'\s*(?:[-*]|\d+\.)\s', body) else 'para')
            if kind == 'para' and body.startswith(' '):   # a list item's next paragraph
                blocks.append((start, body, list(caption), in_scope))
            elif kind == 'para':
                blocks.append((start, body, [], in_scope))
                caption[:] = _cited(body, doc)
            elif kind == 'table':
                table_cites = _cited(body, doc)
                # a column headed by a unit (| µs per call |): its cells carry that unit
                header = [c.strip() for c in para[0][1].strip().strip('|').split('|')]
                unit = [re.search(r'(µs|\bus\b|\bms\b)', c) for c in header]
                for no, row in para:
                    cells = row.strip().strip('|').split('|')
                    if len(cells) == len(unit):
                        row = '|' + '|'.join(
                            f' {c.strip()} {u.group(1)} ' if u and re.fullmatch(
                                r'\s*\d[\d.,]*\s*', c) else c
                            for c, u in zip(cells, unit)) + '|'
                    blocks.append((no, row, caption + table_cites, in_scope))
            else:
                items = []
                for no, t in para:
                    if re.match(r'(?:[-*]|\d+\.)\s', t) or not items:
                        items.append([no, t])
                    else:
                        items[-1][1] += '\n' + t
                for no, t in items:
                    blocks.append((no, t, list(caption), in_scope))
            para.clear()

    for no, line in enumerate(lines, 1):
        if line.startswith('```'):
            flush()
            fence = not fence
            continue
        if fence:
            continue
        if line.startswith('#'):
            flush()
            caption.clear()
            if scope:
                in_scope = line.strip() == scope or (
                    in_scope and line.startswith('###'))
            continue
        if not line.strip():
            flush()
            continue
        para.append((no, line))
    flush()
    return blocks


def _occurs(number, text):
    """Whether ``number`` is written in ``text`` as a whole number (same rounding)."""
    forms = {number, number.replace(',', '')}
    return any(re.search(r'(?<![\d.])' + re.escape(f) + r'(?![\d])(?!\.\d)', text)
               for f in forms)


def _read(path):
    with open(os.path.join(REPO_ROOT, path), encoding='utf-8', errors='replace') as f:
        return f.read().replace('**', '')


def _label(cell):
    """A table cell as a row label: lower case, without parentheses and markup; '' when it is
    not a label (empty, or a number)."""
    text = re.sub(r'\([^)]*\)', ' ', cell.replace('`', '')).strip().lower()
    return '' if not re.search(r'[a-z]{2}', text) or len(text) < 3 else text


def _tables(text):
    """The markdown tables of a result file, each a list of its body rows (labels, row text),
    labels the first and, when it is a label too, the second cell (:func:`_label`); an empty
    first cell continues the row above."""
    tables, lines = [], text.splitlines()
    for k, line in enumerate(lines):
        if not re.match(r'\s*\|[-:| ]+\|\s*$', line):
            continue                                  # a table starts at its separator line
        rows, last = [], ''
        for row in lines[k + 1:]:
            if not row.lstrip().startswith('|'):
                break
            cells = [c.strip() for c in row.strip().strip('|').split('|')]
            first = _label(cells[0]) if cells[0] else last
            last = first
            rows.append(((first, _label(cells[1]) if len(cells) > 1 else ''), row))
        tables.append(rows)
    return tables


def _named(labels, text):
    """The labels a text names: those written in it in full (the longest: ``3x demo``, not
    ``demo``), else those whose first word (the robot, the case) starts a word of the text or
    is started by one (arm: arm7; standing: stand), case-insensitive."""
    low = text.lower()
    full = {a for a in labels if a and re.search(r'(?<![\w-])' + re.escape(a) + r'(?![\w-])', low)}
    full = {a for a in full if not any(a != b and a in b for b in full)}
    if full:
        return full
    words = re.findall(r'[a-z][\w-]{2,}', low)
    return {a for a in labels if a and len(a.split()[0]) >= 3 and any(
        w.startswith(a.split()[0]) or a.split()[0].startswith(w) for w in words)}


def _clauses(body):
    """The clauses of a block (split after a sentence, a closing parenthesis, a comma, a
    semicolon, a colon or a dash; a table row is one): a number belongs to the row its clause
    names."""
    body = re.sub(r'\[[^\]]*\]', lambda m: m.group(0).replace(',', ' '), body)  # [lo, hi]
    return re.split(r'(?<=[.;!?)])\s+|[,;:]\s+|\s+[—–]\s+', body)


def _outside_tables(text):
    return '\n'.join(line for line in text.splitlines() if not line.lstrip().startswith('|'))


def problems(doc, text):
    """Every number of ``text`` (the markdown of ``doc``) not backed by a cited result file,
    or backed only by a row of another robot or case than the one the block names."""
    found = []
    for no, body, inherited, in_scope in _blocks(doc, text):
        numbers = _numbers(body)
        cites = _cited(body, doc) + inherited
        if not numbers or not (cites or in_scope or _costs(body)):
            continue
        if not cites:
            found.append(f'{doc}:{no}: {", ".join(numbers)} without a result file cited')
            continue
        texts = [_read(c) for c in cites if not c.endswith('.png')]
        files = ' '.join(texts)
        missing = [n for n in numbers if not _occurs(n, files)]
        if missing:
            found.append(f'{doc}:{no}: {", ".join(missing)} not in {", ".join(cites)}')
        tables = [tab for t in texts for tab in _tables(t)]
        prose = ' '.join(_outside_tables(t) for t in texts)
        for sentence in _clauses(body):
            wrong, about = [], set()
            for n in _numbers(sentence):
                if n in missing or _occurs(n, prose):
                    continue
                ok = False
                for rows in tables:
                    firsts = _named({a for (a, _), _ in rows}, sentence)
                    seconds = _named({b for (_, b), _ in rows}, sentence)
                    about |= firsts | seconds
                    named = [line for (a, b), line in rows if (not firsts or a in firsts)
                             and (not seconds or b in seconds or not b)]
                    ok = ok or any(_occurs(n, line) for line in named)
                if not ok:
                    wrong.append(n)
            if wrong:
                found.append(f'{doc}:{no}: {", ".join(wrong)} not in the row(s) of '
                             f'{", ".join(sorted(about))} in {", ".join(cites)}')
    return found


@pytest.mark.parametrize('doc', DOCS)
def test_every_number_is_in_the_file_it_cites(doc):
    found = problems(doc, _read(doc))
    assert not found, ('numbers not backed by their result files (see benchmarks/README.md, '
                       '"Numbers in the documentation"):\n' + '\n'.join(found))


def _cited_files():
    return sorted({c for doc in DOCS for _, body, inh, _ in _blocks(doc, _read(doc))
                   for c in _cited(body, doc) + inh if not c.endswith(('.png', '.csv'))})


@pytest.mark.parametrize('result', _cited_files())
def test_a_cited_result_file_says_when_where_and_how(result):
    text = _read(result)
    assert re.search(r'20\d\d-\d\d-\d\d', text), f'{result}: no date'
    assert re.search(r'(?i)load', text), f'{result}: no load average'
    assert re.search(r'(?i)cores|EPYC|x86_64', text), f'{result}: no machine'
    assert re.search(r'(?:benchmarks|scripts)/\w+\.py', text), f'{result}: no script named'


def test_an_injected_wrong_number_is_caught():
    """The check fails on a number its cited file does not hold (and passes on the right one)."""
    doc = 'docs/performance.md'
    cited = 'benchmarks/results/dynamics.md'
    assert cited in _cited_files()
    text = _read(cited)
    right = next(n for n in _numbers(text) if '.' in n and _occurs(n, text))
    link = os.path.relpath(os.path.join(REPO_ROOT, cited), os.path.join(REPO_ROOT, 'docs'))
    good = f'# Performance\n\nIt took {right} µs ([run]({link})).\n'
    wrong = right[:-1] + str((int(right[-1]) + 1) % 10)
    assert problems(doc, good) == []
    assert problems(doc, good.replace(right, wrong)) != []
    # ... in a table row whose caption cites the file, and without any citation at all
    table = f'Measured ([run]({link})):\n\n| a | b |\n|---|---|\n| x | {wrong} µs |\n'
    assert problems(doc, '# P\n\n' + table) != []
    assert problems(doc, f'# P\n\nIt took {right} µs.\n') != []
    assert problems('docs/other.md', f'# P\n\nIt took {right} µs.\n') != []
    # a column headed by a unit makes its cells costs
    assert problems('docs/other.md', '# P\n\n| call | µs per call |\n|---|---|\n| f | 0.28 |\n')
    # a ratio written with other rounding is not the same number
    assert not _occurs('0.5', 'ratio 0.55') and _occurs('0.55', 'ratio 0.55,')


def test_a_number_from_another_row_is_caught():
    """A number that is in the cited table, but in another robot's row than the one its clause
    names, fails; in its own row, or with no row named, it passes."""
    cited = 'benchmarks/results/dynamics.md'
    text = _read(cited)
    rows = _tables(text)[0]
    labels = sorted({a for (a, _), _ in rows})
    prose = _outside_tables(text)
    number, own = next((n, a) for (a, _), line in rows for n in _numbers(line) if '.' in n
                       and not _occurs(n, prose)
                       and sum(_occurs(n, other) for _, other in rows) == 1)
    other = next(b for b in labels if b.split()[0] != own.split()[0])
    link = os.path.relpath(os.path.join(REPO_ROOT, cited), os.path.join(REPO_ROOT, 'docs'))
    say = '# P\n\nOn {} it takes {} µs ([run](' + link + ')).\n'
    assert problems('docs/performance.md', say.format(own, number)) == []
    assert problems('docs/performance.md', say.format(other, number)) != []
    assert problems('docs/performance.md', say.format('average', number)) == []


@pytest.mark.parametrize('result', sorted(os.path.basename(p)
                                    for p in glob.glob(os.path.join(RESULTS, '*.md'))))
def test_every_result_file_names_the_commit_it_measured(result):
    """Each result file names the commit whose code it measured (``commit <hash>``, written by
    benchmarks/common.py's machine_info from ``git rev-parse --short HEAD``), and that commit
    is in this repository's history."""
    import subprocess
    m = re.search(r'commit(?: measured)?\W{0,4}([0-9a-f]{7,40})\b', _read(os.path.join('benchmarks', 'results',
                                                                      result)))
    assert m, f'{result}: names no commit'
    known = subprocess.run(['git', 'cat-file', '-e', m.group(1) + '^{commit}'], cwd=REPO_ROOT,
                           capture_output=True)
    assert known.returncode == 0, f'{result}: commit {m.group(1)} is not in the history'
