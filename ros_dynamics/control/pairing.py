"""Pairing joint states with the dynamics terms computed for exactly them (plain Python, no ROS).

The dynamics node answers every accepted joint state with one message of terms carrying the
joint state's stamp (docs/conventions.md, ``Dynamics.header.stamp``).  A controller answering the
joint state stamped ``t`` must use the terms stamped ``t`` -- never the newest terms whatever
their stamp, which would mix ``M(q_{k-1})`` with ``q_k``.

Policy of :class:`StampPairer` (documented in the README, "Tracking controller"):

* a cycle is served when both halves with the same stamp are present (whichever arrives
  first waits, up to ``max_pending`` of its kind); with a ``consistent(state, terms)`` check
  (the controller: same joint positions and velocities) same-stamp terms that disagree with
  the joint state are dropped and counted ``mismatched``, and the joint state keeps waiting
  for the right terms;
* serving stamp ``t`` drops every waiting joint state older than ``t``: their terms did not
  arrive before newer ones did, so they are counted ``late`` and get no command -- the
  simulator (and a real drive) holds the last command, which is the safe choice for one missed
  millisecond; a longer gap is the effort receiver's timeout to handle;
* terms that arrive for an already answered or skipped stamp are dropped (``stale_terms``);
  joint states not newer than the last served one likewise (``stale_states``).
"""

from collections import OrderedDict

__all__ = ['StampPairer']


class StampPairer:
    """Pairs items by integer stamp (e.g. nanoseconds); :meth:`add_state` / :meth:`add_terms`
    return the served ``(stamp, state, terms)`` or None."""

    COUNTERS = ('states', 'terms', 'served', 'late', 'mismatched', 'stale_states',
                'stale_terms', 'overflow_terms')

    def __init__(self, max_pending=100, consistent=None):
        if int(max_pending) < 1:
            raise ValueError('max_pending must be >= 1')
        self.max_pending = int(max_pending)
        self.consistent = consistent
        self._states = OrderedDict()     # stamp -> state, increasing stamps
        self._terms = OrderedDict()      # stamp -> terms that came before their state
        self.last_served = None
        self.counts = dict.fromkeys(self.COUNTERS, 0)

    def served_fraction(self):
        """Served cycles / joint states received (1.0 before any)."""
        n = self.counts['states']
        return self.counts['served'] / n if n else 1.0

    def add_state(self, stamp, state):
        self.counts['states'] += 1
        if self.last_served is not None and stamp <= self.last_served:
            self.counts['stale_states'] += 1
            return None
        if self._states and stamp <= next(reversed(self._states)):
            self.counts['stale_states'] += 1     # out of order or repeated: not answered
            return None
        terms = self._terms.pop(stamp, None)
        if terms is not None and self._agree(state, terms):
            return self._serve(stamp, state, terms)
        self._states[stamp] = state
        while len(self._states) > self.max_pending:
            self._states.popitem(last=False)
            self.counts['late'] += 1
        return None

    def add_terms(self, stamp, terms):
        self.counts['terms'] += 1
        if self.last_served is not None and stamp <= self.last_served:
            self.counts['stale_terms'] += 1
            return None
        state = self._states.get(stamp)
        if state is not None:
            if self._agree(state, terms):
                del self._states[stamp]
                return self._serve(stamp, state, terms)
            return None
        self._terms[stamp] = terms
        while len(self._terms) > self.max_pending:
            self._terms.popitem(last=False)
            self.counts['overflow_terms'] += 1
        return None

    def _agree(self, state, terms):
        if self.consistent is None or self.consistent(state, terms):
            return True
        self.counts['mismatched'] += 1
        return False

    def _serve(self, stamp, state, terms):
        self.last_served = stamp
        while self._states and next(iter(self._states)) < stamp:   # increasing stamps
            self._states.popitem(last=False)
            self.counts['late'] += 1
        for old in [k for k in self._terms if k < stamp]:          # arrival order
            del self._terms[old]
            self.counts['stale_terms'] += 1
        self.counts['served'] += 1
        return stamp, state, terms
