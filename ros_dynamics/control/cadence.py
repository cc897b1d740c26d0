"""The periods a controller owes and how it answered them (plain Python, no ROS).

A controller that runs at ``rate`` Hz on a stream of states stamped in the stream's time owes
one answer per period ``T = 1 / rate`` of that time (periods counted from the first state it
received; the stream may be faster, e.g. 1 kHz joint states for a 500 Hz controller, as
quadruped-reactive-walking runs).  It answers a period with the newest state it holds when it
is free, never with an older one: states that arrived while it was busy are not worked through
one after the other (their answers would be late by the backlog), they are skipped.  So:

* **owed**: the periods in which at least one state was received (a period the stream never
  delivered a state for is counted apart, ``gaps``: the controller could not answer it);
* **answered**: the periods a command was published for, **skipped** = owed − answered;
* **staleness** of an answer: the newest stamp received when the command went out minus the
  stamp it answers (0 when it answers the newest state; one state period when a newer one came
  during its computation);
* **latency**: wall seconds from the answered state's arrival (both halves of its pair) to
  the command's publication;
* **age**: the controller's clock at the command minus the stamp it answers: the whole delay
  since the joint state was measured (sensing, the dynamics node, transport, this computation),
  when the stamps are on the controller's clock (a robot's wall-clock stamps, a simulator in
  real time).

:class:`ControlPeriods` keeps these counts; :meth:`due` says whether a state still opens an
unanswered period.
"""
import numpy as np

__all__ = ['ControlPeriods']


class ControlPeriods:
    """Counts of the module docstring for a controller at ``rate`` Hz (the last ``keep``
    staleness and latency samples are kept for their percentiles)."""

    def __init__(self, rate, keep=100_000):
        if not rate > 0:
            raise ValueError(f'rate must be > 0, not {rate}')
        self.period_ns = int(round(1e9 / float(rate)))
        self.keep = int(keep)
        self.t0 = None
        self.newest = None               # the newest stamp received
        self.received = 0                # periods with a state received
        self.answered = 0
        self.last_answered = None        # the period index of the last answer
        self.staleness_ns, self.latency_s, self.age_ns = [], [], []

    def period(self, stamp_ns):
        """The index of the period a stamp falls in (from the first state received)."""
        return (stamp_ns - self.t0) // self.period_ns

    def receive(self, stamp_ns):
        """A state stamped ``stamp_ns`` arrived (call in arrival order)."""
        if self.t0 is None:
            self.t0 = stamp_ns
        if self.newest is None or stamp_ns > self.newest:
            if self.newest is None or self.period(stamp_ns) > self.period(self.newest):
                self.received += 1
            self.newest = stamp_ns

    def due(self, stamp_ns):
        """Whether the period of ``stamp_ns`` is still to be answered (a later period than the
        last answer's)."""
        return self.t0 is not None and (self.last_answered is None
                                        or self.period(stamp_ns) > self.last_answered)

    def answer(self, stamp_ns, latency_s, now_ns):
        """A command answering ``stamp_ns`` went out at ``now_ns`` (the controller's clock),
        ``latency_s`` wall seconds after that state arrived."""
        self.answered += 1
        self.last_answered = self.period(stamp_ns)
        self.staleness_ns.append(self.newest - stamp_ns)
        self.latency_s.append(latency_s)
        self.age_ns.append(now_ns - stamp_ns)
        if len(self.latency_s) > 2 * self.keep:
            del self.staleness_ns[:-self.keep], self.latency_s[:-self.keep]
            del self.age_ns[:-self.keep]

    @property
    def gaps(self):
        """Periods up to the newest state in which no state was received."""
        return 0 if self.newest is None else self.period(self.newest) + 1 - self.received

    def summary(self):
        """A dict: owed, answered, skipped, answered_fraction, gaps, staleness_ms, latency_ms
        and age_ms (p50, p99, max; None before an answer)."""
        out = dict(owed=self.received, answered=self.answered,
                   skipped=self.received - self.answered, gaps=self.gaps,
                   answered_fraction=self.answered / self.received if self.received else 1.0)
        for key, xs, scale in (('staleness_ms', self.staleness_ns, 1e-6),
                               ('latency_ms', self.latency_s, 1e3),
                               ('age_ms', self.age_ns, 1e-6)):
            x = np.asarray(xs, dtype=float) * scale
            out[key] = [float(np.percentile(x, 50)), float(np.percentile(x, 99)),
                        float(x.max())] if x.size else None
        return out
