"""The answers of the cycle, as one table: each code once, with its verdict, kind, log level
and reason text (no ROS).

A rule of :mod:`~ros_dynamics.estimation.rules` declares its answers beside itself with
:meth:`Answers.add`, which returns the code the compiled step returns (a plain ``int``: numba
reads it as a constant).  Python turns a code into what the node says with a lookup:
``ANSWERS[code]`` is its :class:`Answer`, and :meth:`Answers.reason` fills its text from the
values the compiled step left about the message (a mapping, read by name: ``{joint!r}``,
``{value:.6g}``; :class:`~ros_dynamics.estimation.cycle.Why`).  Nothing re-applies a rule to
find out what went wrong: the step writes what its text needs.

Verdicts: :data:`CYCLE` (a cycle was made, published), :data:`HELD` (a partial source's values
were kept for the cycles of the driving source), :data:`REFUSED` (nothing published, nothing
changed), :data:`NOTE` (said beside another answer: an accepted source or clock reset).  The
compiled step returns one answer and, in the bits from :data:`NOTE_SHIFT` on, a note
(:func:`split`).
"""
from __future__ import annotations

from typing import NamedTuple

CYCLE, HELD, REFUSED, NOTE = 'cycle', 'held', 'refused', 'note'
VERDICTS = (CYCLE, HELD, REFUSED, NOTE)
LEVELS = ('', 'debug', 'info', 'warning', 'error')
#: a code returned by the compiled step: answer | note << NOTE_SHIFT
NOTE_SHIFT = 8


class Answer(NamedTuple):
    """One answer of the cycle: ``code`` (what the compiled step returns), ``kind`` (what it
    is counted and logged under: refusals by kind in ``/diagnostics`` and the shutdown
    summary, throttled logs per kind), ``verdict``, ``level`` (of its log line; '' for none),
    ``text`` (its reason or note, a ``str.format`` template over the values of the message it
    answers; '' for none) and ``about`` (what its log line says it of, e.g. 'joint_states
    rejected'; '' for none)."""
    code: int
    kind: str
    verdict: str
    level: str
    text: str
    about: str

    def says(self, why):
        """The reason (or note) filled from ``why`` (a mapping of the names its text uses)."""
        return self.text.format_map(why)

    def line(self, why):
        """The log line: what it is about, then the reason."""
        text = self.says(why)
        return f'{self.about}: {text}' if self.about else text


class Answers:
    """The table of every answer (module text)."""

    def __init__(self):
        self.rows = []

    def add(self, kind, verdict, level='', text='', about=''):
        """Declare an answer; returns its code (the next free one below ``1 << NOTE_SHIFT``)."""
        if verdict not in VERDICTS or level not in LEVELS:
            raise ValueError(f'answer {kind!r}: verdict {verdict!r} or level {level!r} unknown')
        if bool(text) != bool(level):
            raise ValueError(f'answer {kind!r}: a text is logged at a level, both or neither')
        code = len(self.rows)
        if code >= 1 << NOTE_SHIFT:
            raise ValueError('too many answers')
        self.rows.append(Answer(code, kind, verdict, level, text, about))
        return code

    def __getitem__(self, code):
        return self.rows[code]

    def __iter__(self):
        return iter(self.rows)

    def __len__(self):
        return len(self.rows)

    def codes(self, verdict):
        """The codes of one verdict (a frozenset)."""
        return frozenset(a.code for a in self.rows if a.verdict == verdict)


def split(code):
    """(answer, note) of what the compiled step returned (note 0: none)."""
    return code & ((1 << NOTE_SHIFT) - 1), code >> NOTE_SHIFT


#: the table; the rules add to it at import (rules.py first: code 0 is its first answer)
ANSWERS = Answers()
