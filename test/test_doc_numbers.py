"""Every measured number in the documentation is in the result file it cites.

The rule for writers (benchmarks/README.md, "Numbers in the documentation"):

* a paragraph, table row or list item that states a measured number links the result file(s)
  in ``benchmarks/results/`` that contain it; a table or a list also uses the result files linked
  in the paragraph just above it (its caption);
* each number of such a block (a decimal number, or a number with a unit of time, a ratio, a
  share or a size: µs, ms, s of CPU, x, %, MB, ...) occurs in one of the files it cites,
  written the same way (same rounding); text in `code` and link targets is not read;
* in the performance documents (README's "Performance" section, docs/performance.md,
  benchmarks/README.md) a block with such a number and no link to a result file is an error;
  everywhere else a cost (µs, ns, s of CPU) without a link to a result file is an error, and
  every block that links a result file is checked the same way;
* every result file cited this way says when (a date), where (the machine and its load) and how
  (the script that wrote it).

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


def problems(doc, text):
    """Every number of ``text`` (the markdown of ``doc``) not backed by a cited result file."""
    found = []
    for no, body, inherited, in_scope in _blocks(doc, text):
        numbers = _numbers(body)
        cites = _cited(body, doc) + inherited
        if not numbers or not (cites or in_scope or _costs(body)):
            continue
        if not cites:
            found.append(f'{doc}:{no}: {", ".join(numbers)} without a result file cited')
            continue
        files = ' '.join(_read(c) for c in cites if not c.endswith('.png'))
        missing = [n for n in numbers if not _occurs(n, files)]
        if missing:
            found.append(f'{doc}:{no}: {", ".join(missing)} not in {", ".join(cites)}')
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
