"""Every number of the documentation is tied to the row of the result file it comes from.

The rule for writers (benchmarks/README.md, "Numbers in the documentation"):

* a paragraph, list item or table row that states a measured number links the result file(s) in
  ``benchmarks/results/`` it comes from; a table or a list also uses the files linked by the
  paragraph just above it (its caption);
* every number of such a block (integers included: "24 of 27", "0 false onsets") is written as
  in the file (same rounding) **in the row its text names**: the text around the number (its
  clause first, then its sentence, its block, its table's header and caption) names a row of the
  cited file by the words of that row's labels (a table row's text cells and its section's
  heading; a line of prose by its words), and the number must be in the row those words name
  best, not in another robot's, variant's or case's row.  A number whose text names no row fails;
* a number that carries no measurement (a setting, a requirement, a count of the set-up) is
  marked as prose: ``<!-- not measured: phrase; phrase -->`` in its block (after a table: in the
  line right below it), each phrase a piece of the block's text; the numbers in those phrases
  are not read.  Not read either: text in `code`, link targets, headings, code blocks, and
  references (Sec. 8, Table 2, Eq. 54, Algorithm 1), years of citations, dates, versions and
  names with digits (3-D, 7-DoF, arm7);
* in the performance documents (README's "Performance", docs/performance.md,
  benchmarks/README.md) a block with a number with a unit and no result file cited is an error;
  everywhere else, a block with a cost (µs, ns, s of CPU) and no result file cited is.

The checks read the committed text and result files only (no benchmark runs);
``test_planted_wrong_figures_are_caught`` plants wrong figures into the real documents (rows
swapped, another row's figure, invented numbers, a count changed) and asserts that every one is
caught.
"""

import functools
import glob
import math
import os
import re

import pytest

pytestmark = pytest.mark.core

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(REPO_ROOT, 'benchmarks', 'results')
DOCS = ['README.md', 'benchmarks/README.md'] + sorted(
    os.path.relpath(p, REPO_ROOT) for p in glob.glob(os.path.join(REPO_ROOT, 'docs', '*.md')))
# Where any number with a unit must cite its result file: the whole file (None) or one section.
PERFORMANCE = {'README.md': '## Performance', 'docs/performance.md': None,
               'benchmarks/README.md': None}

# A number: digits, optional thousands separators, fraction and exponent; not part of a name
# (arm7, chain-20, run10, e-9 of 1e-9).
NUMBER = re.compile(r'(?<![\w.])(?<![A-Za-z]-)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(e[-+]?\d+)?'
                    r'(?![\w-]*[A-Za-z]-)')
UNIT = re.compile(r'\s?(?:µs|us\b|ns\b|ms\b|s of CPU|x(?![\w])|×|%|kB\b|MB\b|GB\b|mm\b|mrad\b'
                  r'|M states/s|times\b)')
COST = re.compile(r'\s?(?:µs|us\b|ns\b|s of CPU)')
LINK = re.compile(r'\[([^\]]*)\]\(([^)\s]+)\)')
CODE = re.compile(r'`[^`]*`')
MARK = re.compile(r'<!--\s*not measured:(.*?)-->', re.S)
# Words that join two figures ("A against B", "A and B"): the name of each is on its side.
JOIN = re.compile(r'\b(?:against|and|than|vs\.?|versus|to|from|while|but|or)\b|[(]')
# Numbers that are names or references, never measurements.
NOT_READ = re.compile(
    r'\b(?:Sec|Section|Sections|Table|Tables|Fig|Figs|Figure|Eq|Eqs|Equation|Algorithm|Algorithms'
    r'|Alg|Lemma|Theorem|Chapter|Part|part|Step|step)\.?\s*\(?\d+(?:\s*(?:-|–|and|,)\s*\d+)*\)?'
    r'|\b\d{4}-\d\d-\d\d\b|\b\d\d:\d\d\b|\b\d+\.\d+\.\d+\b'
    r'|(?:al\.|[A-Z][a-z]+|&)\s*\(?\s*(?:19|20)\d\d[a-z]?\b|\((?:19|20)\d\d\)'
    r'|\b\d+(?:-D|-DoF| DoF|st|nd|rd|th)\b|\b\d+D\b'
    r'|\b[A-Za-z_]\w{0,2}\s*=\s*\d[\d.]*'             # settings that name a case: K = 200, N = 8
    r'|\d[\d.]*\s*k?Hz\b'                                # rates: 1 kHz, 200 Hz
    r'|[<>≤≥]\s*\d[\d.]*')                                 # thresholds: < 1, ≥ 98 %
STOP = set('''a an the of in on at to and or with without for by from as is are was were be been
its it than that this these those per each every one all not no same both into over under up
off out about which what when where while who whose how there here their they them we our
us s so such only also but if then else more less most least much many any some other
another do does done has have had can may might must will would should could just very
like via after before between against through during above below again once'''.split())


def _plain(text):
    """Text as read: links replaced by their text, markers removed, `code` kept as words with its
    digits masked (a number in code is not read, its words name rows)."""
    text = LINK.sub(lambda m: ' ' + m.group(1) + ' ', MARK.sub(' ', text))
    return CODE.sub(lambda m: ' ' + re.sub(r'\d', '#', m.group(0)[1:-1]) + ' ',
                    text).replace('**', '')


def _spans_not_read(text):
    return [m.span() for m in NOT_READ.finditer(text)]


def numbers(text, with_unit=False):
    """[(number as written, start, end, unit)] of a text (already :func:`_plain`), references,
    years, dates, settings and names left out (in a table row: its text cells, which name it)."""
    skip = _spans_not_read(text)
    if text.lstrip().startswith('|'):
        bounds = [i for i, ch in enumerate(text) if ch == '|']
        skip += [(a, b) for a, b in zip(bounds, bounds[1:]) if not _is_value(text[a + 1:b])]
    out = []
    for m in NUMBER.finditer(text):
        if any(a <= m.start() < b for a, b in skip):
            continue
        u = UNIT.match(text, m.end())
        out.append((''.join(g for g in m.groups() if g), m.start(), m.end(),
                    u.group(0).strip() if u else ''))
    return out


def occurs(number, text):
    """Whether ``number`` is written in ``text`` as a whole number (same rounding)."""
    forms = {number, number.replace(',', '')}
    return any(re.search(r'(?<![\d.])' + re.escape(f) + r'(?![\d])(?!\.\d)', text)
               for f in forms)


UNITS = r'(?:s|ms|us|ns|hz|khz|kg|g|mm|cm|m|%|n|nm|rad|m/s|rad/s|deg|x)\b'


def tokens(text):
    """The words of a text that can name a row, normalised (lower case, a plural 's' dropped;
    names with digits kept whole: chain-7, arm7; settings as ``k=50``; a number with its unit as
    one word: ``15s``, ``0.03m/s``), stop words and bare numbers left out."""
    low = text.lower().replace('µ', 'u').replace('%', '% ')
    out = [f'{a}={b}' for a, b in re.findall(r'\b([a-z_]\w*)\s*=\s*(\d[\d.]*)', low)]
    out += [a + b for a, b in re.findall(r'(?<![\w.])(\d+(?:\.\d+)?)\s?(' + UNITS + r')', low)]
    for whole in re.findall(r'[a-z][a-z0-9_]*(?:-[a-z0-9]+)*', low):
        parts = whole.split('-')
        for w in [whole] + (parts if len(parts) > 1 else []):
            if w in STOP or len(w) < 2 or w.isdigit():
                continue
            if len(w) > 3 and w.endswith('s') and not w.endswith('ss'):
                w = w[:-1]
            out.append(w)
    return out


# -- result files: their rows ---------------------------------------------------------------------

class Cell:
    """Where a number of a result file is: a cell of a table (named by its row's text cells and
    its section's heading, and by its column's header) or a sentence of prose (named by its
    words); ``text`` is where the number is looked up, ``row`` the whole table row or sentence."""

    def __init__(self, path, text, label, column='', row=None, col=None, table=None,
                 heading=''):
        self.path, self.text, self.row, self.col, self.table = path, text, row or text, col, table
        self.tokens = set(tokens(label))
        self.heading = set(tokens(heading)) - self.tokens
        self.column = set(tokens(column)) - self.tokens - self.heading

    def weight(self, token):
        """How much a token of the text names this cell: 1 in its row's labels, 0.3 in its
        section's heading, 0.1 in its column's header, else 0."""
        return (1.0 if token in self.tokens else 0.3 if token in self.heading else
                0.1 if token in self.column else 0.0)

    def __repr__(self):
        return f'Cell({os.path.basename(self.path)}: {self.row[:50]!r}, column {self.col})'


def _is_value(cell):
    """A table cell that holds a value, not a label: empty, a dash, or a number first (after a
    qualifier: within, about, up to, <, ~)."""
    text = re.sub(r'^(?:within|about|up to|under|over|at most|at least|[<>~≈≤≥±])\s*', '',
                  cell.strip().replace('*', '').replace('`', ''), flags=re.I)
    return not text or text in ('—', '-', 'n/a', '–') or bool(re.match(r'[-−+]?\.?\d', text))


def _sentences(paragraph):
    return [s for s in re.split(r'(?<=[.;])\s+(?=[A-Z(*`\d])|\n(?=[-*] )', paragraph) if s.strip()]


def _cells(row):
    return [c.strip() for c in row.strip().strip('|').split('|')]


SEPARATOR = re.compile(r'\s*\|[-:| ]+\|\s*$')


@functools.lru_cache(maxsize=None)
def result_cells(path):
    """Every :class:`Cell` of the result file at ``path`` (relative to the repository)."""
    with open(os.path.join(REPO_ROOT, path), encoding='utf-8', errors='replace') as f:
        lines = f.read().replace('**', '').replace('`', '').splitlines()
    out, heading, para, header, last, table = [], '', [], None, '', None

    def flush():
        for s in _sentences('\n'.join(para)):
            out.append(Cell(path, s, s, heading=heading))
        para.clear()

    for k, line in enumerate(lines):
        if line.startswith('#'):
            flush()
            heading, header = line.lstrip('#'), None
        elif line.lstrip().startswith('|'):
            flush()
            cells = _cells(line)
            if k + 1 < len(lines) and SEPARATOR.match(lines[k + 1]):
                header, last, table = cells, '', k
            elif not SEPARATOR.match(line):
                first = cells[0] or last
                last = first
                label = [first] + [c for c in cells[1:] if c and not _is_value(c)]
                if header and re.fullmatch(r'[\d.,\s]+', cells[0] or ''):  # a key: K = 10
                    key = re.sub(r'[\[(].*', '', header[0]).strip()
                    label.append(f'{key} = {cells[0]}')
                for j, c in enumerate(cells):
                    col = header[j] if header and j < len(header) else ''
                    out.append(Cell(path, c, ' '.join(label), col, line, j, table, heading))
        elif not line.strip():
            flush()
        else:
            para.append(line)
    flush()
    return out


# -- the documents: their blocks ------------------------------------------------------------------

class Block:
    """A paragraph, list item or table row of a document: its line, its text, the result files
    it cites (its own and its caption's), the text around it that names rows (table header,
    caption, heading), the phrases marked as prose, whether it is in the performance scope."""

    def __init__(self, doc, line, text, cites, around, marked, scope, header=None):
        self.doc, self.line, self.text, self.cites = doc, line, text, cites
        self.around, self.marked, self.scope, self.header = around, marked, scope, header

    def but(self, text):
        """The same block with another text (a planted fault)."""
        return Block(self.doc, self.line, text, self.cites, self.around, [], self.scope,
                     self.header)


def _cited(text, doc):
    """Result files linked in a text (paths relative to the repository)."""
    out = []
    for m in LINK.finditer(text):
        target = m.group(2).partition('#')[0]
        if re.match(r'^[a-z][a-z0-9+.-]*:', target) or not target:
            continue
        path = os.path.normpath(os.path.join(REPO_ROOT, os.path.dirname(doc), target))
        if os.path.dirname(path) == RESULTS and os.path.isfile(path) and path.endswith('.md'):
            out.append(os.path.relpath(path, REPO_ROOT))
    return out


def _marked(text):
    """The phrases a block marks as not measured (a marker in `code` is an example)."""
    text = CODE.sub(' ', text)
    return [p.strip() for m in MARK.finditer(text) for p in m.group(1).split(';') if p.strip()]


def blocks(doc, text):
    """The :class:`Block` s of a markdown document (code blocks and headings skipped)."""
    scope = PERFORMANCE.get(doc, False)
    in_scope = scope is None
    out, para, caption, fence, heading = [], [], [], False, ''
    lines = text.splitlines()

    def flush(after=''):
        if not para:
            return
        start, body = para[0][0], '\n'.join(t for _, t in para)
        if body.lstrip().startswith('|'):
            rows = [(no, t) for no, t in para if t.lstrip().startswith('|')]
            tail = '\n'.join(t for _, t in para if not t.lstrip().startswith('|'))
            marked = _marked(tail + after)
            header = _cells(_plain(rows[0][1]))
            cites = caption[1] + _cited(body, doc)
            for no, row in rows[2:]:
                out.append(Block(doc, no, row, cites, [(0.25, caption[0]), (0.1, heading)],
                                 marked, in_scope, header))
        elif re.match(r'\s*(?:[-*]|\d+\.)\s', body):
            items = []
            for no, t in para:
                if re.match(r'\s*(?:[-*]|\d+\.)\s', t) or not items:
                    items.append([no, t])
                else:
                    items[-1][1] += '\n' + t
            for no, t in items:
                out.append(Block(doc, no, t, caption[1] + _cited(t, doc),
                                 [(0.25, caption[0]), (0.1, heading)], _marked(t), in_scope))
        else:
            inherited = caption[1] if body.startswith(' ') else []
            cites = _cited(body, doc)
            out.append(Block(doc, start, body, cites + inherited,
                             [(0.25, caption[0]) if inherited else (0.0, ''), (0.1, heading)],
                             _marked(body), in_scope))
            if not body.startswith(' '):
                caption[:] = [body, cites]
        para.clear()

    caption[:] = ['', []]
    for no, line in enumerate(lines, 1):
        if line.startswith('```'):
            flush()
            fence = not fence
            continue
        if fence:
            continue
        if line.startswith('#'):
            flush()
            caption[:] = ['', []]
            heading = line.lstrip('#')
            if scope:
                in_scope = line.strip() == scope or (in_scope and line.startswith('###'))
            continue
        if not line.strip():
            flush()
            continue
        if para and para[-1][1].lstrip().startswith('|') and not line.lstrip().startswith('|'):
            if MARK.search(line):          # a marker right below a table is the table's
                para.append((no, line))
                continue
            flush()
        para.append((no, line))
    flush()
    return out


# -- the check ------------------------------------------------------------------------------------

def _clauses(text):
    """(start, end) of the clauses of a text: split after a sentence, a closing parenthesis, a
    comma, a semicolon, a colon or a dash; a table row is one."""
    if text.lstrip().startswith('|'):
        return [(0, len(text))]
    cuts = [0] + [m.end() for m in re.finditer(
        r'(?<=[.;!?)])\s+|[,;:]\s+|\s+[—–]\s+', text)] + [len(text)]
    return list(zip(cuts[:-1], cuts[1:]))


def _sentence(text, pos):
    starts = [0] + [m.end() for m in re.finditer(r'(?<=[.;!?])\s+(?=[A-Z(])', text)]
    a = max(s for s in starts if s <= pos)
    ends = [m.start() for m in re.finditer(r'(?<=[.;!?])\s+(?=[A-Z(])', text)] + [len(text)]
    return text[a:min(e for e in ends if e >= pos)]


def _context(block, plain, start, end):
    """[{tokens}, ...] of the text that names the row of the number at plain[start:end], nearest
    first: in a table, its row's text cells (and a pivot's numeric column header, as a key),
    its column's header, the other headers and the caption, the heading; in prose, the words
    since the previous number with a parenthesis right after it, its clause, its sentence, its
    block and the caption, the heading.  A token counts at its nearest level only."""
    levels = []

    def add(*texts):
        seen = {t for level in levels for t in level}
        levels.append({t for text in texts for t in tokens(text)} - seen)

    own = plain[start:end]
    around = [_plain(text) for _, text in block.around]
    if block.header is not None:
        col = plain[:start].count('|') - 1
        cells = _cells(plain)
        head = block.header[col] if 0 <= col < len(block.header) else ''
        labels = ' '.join(c for c in cells if c and not _is_value(c))
        if re.fullmatch(r'[\d.]+', head.strip()):   # a pivot (| links | 3 | 6 |): a row's key
            add(labels, f'{block.header[0]} = {head.strip()}')
        else:
            add(labels)
            add(head)
        add(' '.join(block.header), *around[:-1])
    else:
        a, b = next((a, b) for a, b in _clauses(plain) if a <= start < b)
        before = max([a] + [m.end() for m in NUMBER.finditer(plain, a, start)])
        nxt = min([b] + [m.start() for m in NUMBER.finditer(plain, end, b)])
        paren = re.match(r'[^\w(]{0,4}\w{0,6}\s*\(([^)]*)\)', plain[end:b])
        key = ''
        if before == a and plain[:a].rstrip().endswith(':'):    # "key: number"
            prev = [x for x in _clauses(plain) if x[1] <= a]
            key = JOIN.split(plain[prev[-1][0]:a])[-1] if prev else ''
        add(key + ' ' + JOIN.split(plain[before:start])[-1] + ' ' +
            JOIN.split(plain[end:nxt])[0] + ' ' + (paren.group(1) if paren else ''))
        add(plain[a:b].replace(own, ' ', 1))
        add(_sentence(plain, start).replace(own, ' ', 1))
        add(plain.replace(own, ' ', 1), *around[:-1])
    add(*around[-1:])
    return levels


def _idf(cells):
    """Inverse document frequency of each token over the rows (labels) and the columns
    (headers) of the cited files."""
    seen, df = set(), {}
    for c in cells:
        for key, toks in (((c.path, c.row), c.tokens | c.heading),
                          ((c.path, c.table, c.col), c.column)):
            if key in seen:
                continue
            seen.add(key)
            for t in toks:
                df[t] = df.get(t, 0) + 1
    n = len(seen) or 1
    return {t: math.log(1.0 + n / k) for t, k in df.items()}


def where(block, number, start, end, plain):
    """(cells that hold ``number`` among those the text names best, the best cells, the cells
    holding it) for the number at plain[start:end] of ``block``.

    The row the text names best: the one whose labels its nearest text names most (in prose the
    words since the previous number and a parenthesis right after it, then its clause; in a
    table its row's text cells and its column's header), then the one with the fewest labels the
    text does not name at all (the row a shorter name means), then the one the farther text
    names most (sentence, block, caption, heading); a sentence of prose by the share of its
    words the text names.  Within that row, the column the number's column header names."""
    cells = [c for path in block.cites for c in result_cells(path)]
    holding = [c for c in cells if occurs(number, c.text)]
    # a figure of a table competes with the cells of tables, a figure of prose with prose
    tabular = any(c.table is not None for c in holding)
    cells = [c for c in cells if (c.table is not None) == tabular]
    holding = [c for c in holding if (c.table is not None) == tabular]
    idf = _idf(cells)
    levels = _context(block, plain, start, end)
    named = set().union(*levels)
    rows = {}
    for c in cells:
        rows.setdefault((c.path, c.row), []).append(c)
    key = {}
    for r, group in rows.items():
        c = group[0]
        got = [sum(idf.get(t, 0.0) * c.weight(t) for t in level) for level in levels]
        if c.table is None:
            norm = math.sqrt(sum(idf.get(t, 0.0) ** 2 for t in c.tokens) or 1.0)
            key[r] = tuple(round(g / norm, 6) for g in got)
        else:
            unnamed = sum(idf.get(t, 0.0) for t in c.tokens - named)
            key[r] = tuple(round(g, 6) for g in got[:2 if block.header is None else 1]) + (
                -round(unnamed, 6),) + tuple(round(g, 6) for g in
                                             got[2 if block.header is None else 1:])
    best = max(key.values(), default=())
    if not best or not any(x > 0 for x in best):
        return [], [], holding
    top = [c for r, group in rows.items() if key[r] == best for c in group]
    column = set(tokens(block.header[plain[:start].count('|') - 1])) if (
        block.header is not None and 0 <= plain[:start].count('|') - 1 < len(block.header)) else set()
    scored = {id(c): sum(idf.get(t, 0.0) for t in column if t in c.column) for c in top}
    if any(scored.values()):
        most = max(scored.values())
        top = [c for c in top if scored[id(c)] == most]
    return [c for c in top if c in holding], top, holding


def _phrase(phrase):
    """A marked phrase as a pattern (any white space between its words)."""
    return r'\s+'.join(re.escape(w) for w in _plain(phrase).split())


def _exempt(plain, marked):
    return [(m.start(), m.end()) for p in marked for m in re.finditer(_phrase(p), plain)]


def check_block(block):
    """The problems of one block (strings, empty when every number is tied to its row)."""
    plain = _plain(block.text)
    found = []
    marked = _exempt(plain, block.marked)
    missing = [p for p in block.marked if not re.search(_phrase(p), plain)]
    if missing:
        found.append(f'{block.doc}:{block.line}: marked as not measured but not in the text: '
                     f'{"; ".join(missing)}')
    nums = [n for n in numbers(plain) if not any(a <= n[1] < b for a, b in marked)]
    if not block.cites:
        loose = [n for n, _, _, u in nums if (u and block.scope) or COST.match(u and ' ' + u)]
        if loose:
            found.append(f'{block.doc}:{block.line}: {", ".join(loose)} without a result file '
                         'cited')
        return found
    texts = ' '.join(r.text for c in block.cites for r in result_cells(c))
    absent, unnamed, wrong = [], [], []
    for n, start, end, _ in nums:
        if not occurs(n, texts):
            absent.append(n)
            continue
        ok, top, holding = where(block, n, start, end, plain)
        if ok:
            continue
        if not top:
            unnamed.append(n)
        else:
            wrong.append(f'{n} (named: {top[0].row.strip()[:70]!r}'
                         f'{f" and {len(top) - 1} more" if len(top) > 1 else ""}; '
                         f'{n} is in {holding[0].row.strip()[:60]!r})')
    wrong += _ranges(block, plain, nums)
    cites = ', '.join(block.cites)
    if absent:
        found.append(f'{block.doc}:{block.line}: {", ".join(absent)} not in {cites}')
    if unnamed:
        found.append(f'{block.doc}:{block.line}: {", ".join(unnamed)}: the text names no row of '
                     f'{cites}')
    if wrong:
        found.append(f'{block.doc}:{block.line}: not in the row the text names: '
                     + '; '.join(wrong))
    return found


def _values(text):
    return [float(n.replace(',', '')) for n, _, _, _ in numbers(text)]


def _ranges(block, plain, nums):
    """A range of figures of several rows (``0.52-0.57 ms`` over the runs) is the least and the
    greatest of its column over the rows the text names."""
    wrong = []
    for (n1, s1, e1, _), (n2, s2, e2, _) in zip(nums, nums[1:]):
        if not re.fullmatch(r'\s*(?:[%µa-zA-Z]{1,3}\s*)?(?:-|–|to)\s*', plain[e1:s2]):
            continue
        ok, top, _ = where(block, n1, s1, e1, plain)
        pair = re.escape(n1) + r'\s*(?:,|-|–|to)\s*' + re.escape(n2)
        if not ok or any(re.search(pair, c.text) for c in ok):   # a cell [lo, hi]
            continue
        lo, hi = float(n1.replace(',', '')), float(n2.replace(',', ''))
        spans = []
        for c in ok:
            k = _values(c.text).index(lo) if lo in _values(c.text) else 0   # its place in a cell
            vals = [v[k] for x in top if (x.path, x.table, x.col) == (c.path, c.table, c.col)
                    for v in [_values(x.text)] if len(v) > k]
            spans.append((min(vals), max(vals)))
            if (min(vals), max(vals)) == (lo, hi):
                break
        else:
            wrong.append(f'{n1}-{n2} (not the least and greatest of its column over the rows '
                         f'named: {spans[0][0]:g}-{spans[0][1]:g})')
    return wrong


def problems(doc, text):
    """Every number of ``text`` (the markdown of ``doc``) not tied to its row of a cited result
    file (and not marked as prose)."""
    return [p for b in blocks(doc, text) for p in check_block(b)]


def _read(path):
    with open(os.path.join(REPO_ROOT, path), encoding='utf-8', errors='replace') as f:
        return f.read()


@pytest.mark.parametrize('doc', DOCS)
def test_every_number_is_in_the_row_it_names(doc):
    found = problems(doc, _read(doc))
    assert not found, ('numbers not tied to their row of a result file (benchmarks/README.md, '
                       '"Numbers in the documentation"):\n' + '\n'.join(found))


# -- planted faults -------------------------------------------------------------------------------

def _checked():
    """(block, plain text, number, start, end) of every number the check ties to a row."""
    out = []
    for doc in DOCS:
        for b in blocks(doc, _read(doc)):
            if not b.cites:
                continue
            plain = _plain(b.text)
            marked = _exempt(plain, b.marked)
            for n, s, e, _ in numbers(plain):
                if not any(a <= s < z for a, z in marked) and not check_block(b):
                    out.append((b, plain, n, s, e))
    return out


def _invented(number, texts):
    """A number written like ``number`` (same digits and rounding) that no cited file holds."""
    digits = [i for i, ch in enumerate(number) if ch.isdigit()]
    for bump in range(1, 10):
        for i in reversed(digits):
            cand = number[:i] + str((int(number[i]) + bump) % 10) + number[i + 1:]
            if (cand[0] != '0' or cand.startswith('0.') or cand == '0') and \
                    not occurs(cand, texts):
                return cand
    return None


def _same_column(cell, number):
    """The figure of another row in the same column of the same result table (another robot's,
    another variant's, another case's), written like ``number``, that ``cell``'s row does not
    hold; or None."""
    if cell.table is None:
        return None
    shape = re.sub(r'\d', '0', number)
    for other in result_cells(cell.path):
        if other.table != cell.table or other.col != cell.col or other.row == cell.row or \
                other.tokens == cell.tokens:
            continue
        for n, _, _, _ in numbers(other.text):
            if re.sub(r'\d', '0', n) == shape and not occurs(n, cell.row):
                return n
    return None


def _swaps():
    """Pairs of tied numbers in the same column of two rows of a document's table, their values
    different (to swap)."""
    pairs = []
    for doc in DOCS:
        tables = {}
        for b in blocks(doc, _read(doc)):
            if b.cites and b.header is not None and not check_block(b):
                tables.setdefault((tuple(b.header), tuple(b.cites)), []).append(b)
        for rows in tables.values():
            cols = {}
            for b in rows:
                plain = _plain(b.text)
                marked = _exempt(plain, b.marked)
                for n, s, e, _ in numbers(plain):
                    if not any(a <= s < z for a, z in marked):
                        cols.setdefault(plain[:s].count('|'), []).append((b, plain, n, s, e))
            for entries in cols.values():
                pairs += [(x, y) for x, y in zip(entries, entries[1:])
                          if x[2] != y[2] and x[0] is not y[0]]
    return pairs


def plant_faults():
    """{kind: [(block with a wrong figure, what was planted)]}: every tied number replaced by an
    invented one; every integer count changed by one; two rows of a table swapped in a column;
    a figure replaced by the same column's figure of another row of its result table."""
    planted = {'invented number': [], 'count changed': [], 'rows swapped': [],
               "another row's figure": []}
    for b, plain, n, s, e in _checked():
        texts = ' '.join(c.text for path in b.cites for c in result_cells(path))
        ok, _, _ = where(b, n, s, e, plain)
        new = _invented(n, texts)
        if new:
            planted['invented number'].append((b.but(plain[:s] + new + plain[e:]), f'{n} -> {new}'))
        if re.fullmatch(r'\d+', n):
            up = str(int(n) + 1)
            if not any(occurs(up, c.row) for c in ok):
                planted['count changed'].append((b.but(plain[:s] + up + plain[e:]), f'{n} -> {up}'))
        for cell in ok[:1]:
            other = _same_column(cell, n)
            if other is not None:
                planted["another row's figure"].append(
                    (b.but(plain[:s] + other + plain[e:]), f'{n} -> {other}'))
    for (b1, p1, n1, s1, e1), (b2, p2, n2, s2, e2) in _swaps():
        ok, _, _ = where(b1, n1, s1, e1, p1)
        if not any(occurs(n2, c.row) for c in ok):       # not the same row's other figure
            planted['rows swapped'].append((b1.but(p1[:s1] + n2 + p1[e1:]), f'{n1} <-> {n2}'))
    return planted


def test_planted_wrong_figures_are_caught():
    """Wrong figures planted into the real documents, every one caught: invented numbers, integer
    counts changed, rows of a table swapped, another robot's or variant's figure (the same
    column's figure of another row of the result table)."""
    planted = plant_faults()
    counts = {k: len(v) for k, v in planted.items()}
    assert min(counts.values()) >= 10, counts
    missed = [f'{kind}: {b.doc}:{b.line}: {what}: {_plain(b.text).strip()[:140]}'
              for kind, faults in planted.items() for b, what in faults if not check_block(b)]
    assert not missed, (f'{len(missed)} of {sum(counts.values())} planted wrong figures pass the '
                        f'check ({counts}):\n' + '\n'.join(missed[:60]))
