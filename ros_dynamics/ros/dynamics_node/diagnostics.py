"""Health of dynamics_node for ``/diagnostics``: Python bookkeeping, message building last.

The node calls the cheap recorders per cycle and publishes :meth:`NodeHealth.to_msg` at 1 Hz::

    health = NodeHealth(expected_rate=None)          # None: estimated from the stream
    health.accepted(stamp_ns, latency_s)             # per accepted joint state
    health.rejected('stamp_in_future')               # per rejected one, by reason
    health.model(nv=7, warnings=0, coordinates='joint', names=[...])   # on each new model
    health.no_model('waiting for robot_description')
    health.observer(residual, threshold, in_contact) # per observer update (arrays, not copied)
    health.observer_reset('stamp jumped back')
    health.skipped(3)                                # taken into the cycle, not published
    health.thread_cpu(time.thread_time())            # at 1 Hz, on the thread of the cycles
    pub.publish(health.to_msg(node.get_clock().now().to_msg(), hardware_id=robot_name))

Levels (diagnostic_msgs/DiagnosticStatus; the array's worst part is the node's level):

* ``<node>: input``: STALE before the first accepted joint state; ERROR when none was accepted
  for more than ``input_timeout`` (1 s) since the last one; WARN when more than
  ``max_reject_ratio`` (1 %) of the joint states of the last ``window`` (5 s) were rejected, or
  when the input rate of that window is below ``min_rate_ratio`` (1/2) of the expected rate;
  else OK.
* ``<node>: model``: ERROR without a model (before :meth:`model` or after :meth:`no_model`);
  else OK (the count of URDF warnings is a value, not a level).
* ``<node>: observer``: WARN when, since the previous status, a joint's |residual| rose above
  ``near_ratio`` (80 %) of its threshold while no contact was detected (a threshold too tight
  for the model error, or a contact about to be missed); OK otherwise, also when the observer
  never ran (effort source without efforts: said in the message).

Rates are measured on the stamps (intervals between increasing stamps over the window's stamp
span), so a simulator running slower or faster than real time is not a rate drop; the expected
rate is, unless given, the highest window rate seen so far (a source does not run faster than
its nominal rate in its own time). ``stamp_ns``: the message stamp, or the node's receipt time
for a source that sends no stamps.

Cost: the per-cycle calls only add to counters and keep the residual's peak (one compiled loop:
two numpy calls cost more in the running node, benchmarks/results/vs_pinocchio_profile.md;
measured in the tests' module docstring and in docs/diagnostics.md); windows, rates and levels
are computed in :meth:`status`, at 1 Hz.
"""
from __future__ import annotations

import time
from collections import deque

import numpy as np
from numba import njit

OK, WARN, ERROR, STALE = 0, 1, 2, 3
LEVEL_NAMES = ('OK', 'WARN', 'ERROR', 'STALE')


class InputHealth:
    """The ``input`` part (module text): accepted and rejected joint states, their rate on the
    stamps, the latency, the cycles' thread CPU per joint state, how the cycles ran."""

    def __init__(self, expected_rate, window, input_timeout, max_reject_ratio, min_rate_ratio,
                 clock):
        self.expected_rate, self.window = expected_rate, float(window)
        self.input_timeout = float(input_timeout)
        self.max_reject_ratio, self.min_rate_ratio = float(max_reject_ratio), float(min_rate_ratio)
        self._clock = clock
        self._estimated_rate = None
        # per-period accumulators (a period ends at each status() call)
        self._n = self._rej = self._intervals = self._span_ns = 0
        self._lat_sum = self._lat_max = 0.0
        self._cpu = None             # (CPU time of the cycles' thread, accepted) at the last tick
        self._cpu_per_cycle = None
        self._compiled = None
        self._last_stamp = None
        self._last_input = None      # clock time of the last accepted joint state
        self.total_accepted = self.total_rejected = self.total_skipped = 0
        self.rejections = {}         # reason -> count since start
        self._periods = deque()      # (end_time, accepted, rejected, intervals, span_ns)
        self._last = {}              # latency of the last period, for the message

    def accepted(self, stamp_ns, latency_s):
        self._n += 1
        last = self._last_stamp
        if last is not None and stamp_ns > last:
            self._intervals += 1
            self._span_ns += stamp_ns - last
        self._last_stamp = stamp_ns
        self._lat_sum += latency_s
        if latency_s > self._lat_max:
            self._lat_max = latency_s
        self._last_input = self._clock()

    def thread_cpu(self, seconds):
        total = self.total_accepted + self._n
        if self._cpu is not None and total > self._cpu[1]:
            self._cpu_per_cycle = (seconds - self._cpu[0]) / (total - self._cpu[1])
        self._cpu = (seconds, total)

    def rejected(self, reason):
        self._rej += 1
        r = self.rejections
        r[reason] = r.get(reason, 0) + 1

    def close_period(self, now):
        """End the current period at ``now``; the windows' sums."""
        self._periods.append((now, self._n, self._rej, self._intervals, self._span_ns))
        self._last = {'n': self._n, 'lat_sum': self._lat_sum, 'lat_max': self._lat_max}
        self.total_accepted += self._n
        self.total_rejected += self._rej
        self._n = self._rej = self._intervals = self._span_ns = 0
        self._lat_sum = self._lat_max = 0.0
        while self._periods and self._periods[0][0] <= now - self.window:
            self._periods.popleft()

    def _window_rate(self):
        intervals = sum(p[3] for p in self._periods)
        span = sum(p[4] for p in self._periods)
        return intervals / (span * 1e-9) if intervals >= 2 and span > 0 else None

    def status(self, name, now):
        acc = sum(p[1] for p in self._periods)
        rej = sum(p[2] for p in self._periods)
        rate = self._window_rate()
        if rate is not None and self.expected_rate is None and acc >= 10:
            self._estimated_rate = max(rate, self._estimated_rate or 0.0)
        expected = self.expected_rate or self._estimated_rate
        values = self._values(acc, rej, rate, expected)
        if self._last_input is None:
            return name, STALE, 'no joint state accepted yet', values
        quiet = now - self._last_input
        values.append(('since last input [s]', _num(quiet)))
        if quiet > self.input_timeout:
            return name, ERROR, f'no joint state for {quiet:.1f} s', values
        msgs = []
        if acc + rej and rej > self.max_reject_ratio * (acc + rej):
            msgs.append(f'{100.0 * rej / (acc + rej):.1f} % of joint states rejected '
                        f'(last {self.window:g} s)')
        if rate is not None and expected and rate < self.min_rate_ratio * expected:
            msgs.append(f'input rate {rate:.1f} Hz below {self.min_rate_ratio:g} x the expected '
                        f'{expected:.1f} Hz')
        if msgs:
            return name, WARN, '; '.join(msgs), values
        return name, OK, f'{_num(rate)} Hz' if rate is not None else 'receiving', values

    def _values(self, acc, rej, rate, expected):
        last = self._last
        n = last.get('n', 0)
        values = [
            ('accepted (total)', str(self.total_accepted)),
            ('rejected (total)', str(self.total_rejected)),
            ('skipped for a newer one (total)', str(self.total_skipped)),
            (f'accepted (last {self.window:g} s)', str(acc)),
            (f'rejected (last {self.window:g} s)', str(rej)),
            ('input rate [Hz]', _num(rate)),
            ('expected rate [Hz]', _num(expected) + ('' if self.expected_rate else ' (estimated)')),
            ('latency mean [ms]', _num(last['lat_sum'] / n * 1e3 if n else None)),
            ('latency max [ms]', _num(last['lat_max'] * 1e3 if n else None)),
            ('thread cpu per joint state [ms]', _num(
                self._cpu_per_cycle * 1e3 if self._cpu_per_cycle is not None else None)),
        ] + [(f'rejected: {k}', str(v)) for k, v in sorted(self.rejections.items())]
        if self._compiled is not None:
            values.append(('cycles', self._compiled))
        return values


class ObserverHealth:
    """The ``observer`` part (module text) and, with contact frames, the ``contact frames``
    part."""

    def __init__(self, near_ratio, clock):
        self.near_ratio, self._clock = float(near_ratio), clock
        self.residual = self.threshold = None
        self.in_contact = False
        self.updates = 0
        self.free_updates = 0         # the compiled cycle's free-motion updates (FREE answers)
        self.peak = None              # max |r_i| while not in contact, this period
        self.reset = None             # (clock time, why)
        self.resets = self.bridged = 0
        self.feet = None              # the last ContactForces (contact frames), or None

    def observer(self, residual, threshold, in_contact):
        self.residual, self.threshold, self.in_contact = residual, threshold, in_contact
        self.updates += 1
        if not in_contact:
            peak = self.peak
            if peak is None or peak.shape != residual.shape:
                peak = self.peak = np.zeros(residual.shape)
            _peak_into(peak, residual)

    def observer_reset(self, why):
        self.reset = (self._clock(), str(why))
        self.resets += 1

    def status(self, name, now, names):
        values = [('updates', str(self.updates + self.free_updates)),
                  ('resets', str(self.resets)), ('gaps bridged', str(self.bridged))]
        if self.reset is not None:
            values += [('last reset [s ago]', _num(now - self.reset[0])),
                       ('last reset reason', self.reset[1])]
        if self.residual is None:
            return (name, OK, 'no observer update (observer off, or no efforts in joint_states)',
                    values)
        r = np.abs(np.asarray(self.residual, float))
        thr = np.broadcast_to(np.asarray(self.threshold, float), r.shape)
        if not names or len(names) != r.size:
            names = [str(i) for i in range(r.size)]
        values.append(('in contact', str(bool(self.in_contact))))
        for k, n in enumerate(names):
            values.append((f'|r|/threshold {n}',
                           f'{r[k] / thr[k]:.2f} ({r[k]:.3g} / {thr[k]:.3g})'))
        near = []
        if self.peak is not None and self.peak.shape == r.shape:
            near = [names[k] for k in np.flatnonzero(self.peak > self.near_ratio * thr)]
        if self.peak is not None:
            self.peak[:] = 0.0
        if near:
            return name, WARN, (f"|residual| above {100 * self.near_ratio:.0f} % of the threshold "
                                f"without contact: {', '.join(near)}"), values
        return name, OK, 'in contact' if self.in_contact else 'no contact', values

    def contact_frames_status(self, name):
        """Per contact frame: in contact or not, and its normal force [N]."""
        f = self.feet
        loaded = [n for n, c in zip(f.frames, f.in_contact) if c]
        values = [(n, f'{"in contact" if c else "free"} ({fn:.1f} N)')
                  for n, c, fn in zip(f.frames, f.in_contact, f.normal_forces)]
        return name, OK, f'in contact: {", ".join(loaded) or "none"}', values


class NodeHealth:
    """Counters of one dynamics_node and the rules that turn them into levels (module doc)."""

    def __init__(self, expected_rate=None, *, node_name='dynamics', window=5.0,
                 input_timeout=1.0, max_reject_ratio=0.01, min_rate_ratio=0.5, near_ratio=0.8,
                 clock=time.monotonic):
        if expected_rate is not None and not expected_rate > 0:
            raise ValueError(f'expected_rate must be > 0 [Hz] or None, got {expected_rate!r}')
        if not window > 0 or not input_timeout > 0:
            raise ValueError('window and input_timeout must be > 0 [s]')
        self.node_name = node_name
        self._clock = clock
        self.input = InputHealth(expected_rate, window, input_timeout, max_reject_ratio,
                                 min_rate_ratio, clock)
        self.obs = ObserverHealth(near_ratio, clock)
        self._model = None
        self._no_model = 'no model yet'
        # the per-cycle recorders, bound once (the node calls them per joint state)
        self.accepted, self.rejected = self.input.accepted, self.input.rejected
        self.observer = self.obs.observer

    @property
    def total_accepted(self):
        return self.input.total_accepted

    @property
    def rejections(self):
        return self.input.rejections

    # recorders -------------------------------------------------------------------------------
    def thread_cpu(self, seconds):
        """The CPU time [s] the thread that runs the cycles has used so far (``time.thread_time()``
        read on it, once per status period: a thread-CPU read costs a system call, too much per
        cycle).  The status reports that thread's CPU per accepted joint state since the last
        call: receiving the message included, which a per-callback measurement would miss."""
        self.input.thread_cpu(seconds)

    def compiled_cycle(self, text, free_updates=0):
        """How the cycles ran since the model was installed (a short text, e.g. '998 in one
        compiled call; no cycle: held 2'; None: not reported) and how many free-motion
        observer updates it made without Python (whose residual peaks the compiled cycle
        writes into the array of :meth:`free_peak`)."""
        self.input._compiled = text
        self.obs.free_updates = free_updates

    def free_peak(self, peak):
        """The array (nv) into which the compiled cycle writes the largest |r_i| of its
        free-motion updates (the same as :meth:`observer`'s: cleared at each status)."""
        self.obs.peak = peak

    def skipped(self, n):
        """``n`` joint states were taken into the cycle but not published: a newer one was
        pending (the node was behind)."""
        self.input.total_skipped += n

    def contact_frames(self, forces):
        """One update of the forces at the contact frames (a ContactForces, kept by
        reference: a new one per update)."""
        self.obs.feet = forces

    def model(self, nv, warnings=0, coordinates='joint', names=None):
        """A model is in use: nv, the count of URDF warnings, the output coordinates, and the
        coordinate names (for the observer's per-joint values)."""
        self._model = {'nv': int(nv), 'warnings': int(warnings), 'coordinates': str(coordinates),
                       'names': list(names) if names is not None else None}
        self._no_model = None
        self.obs.peak = None

    def no_model(self, reason):
        """No model (yet, or the description failed): ERROR, with the reason."""
        self._model = None
        self._no_model = str(reason)

    def observer_reset(self, why):
        """The observer re-initialized (service call, stamp jump back, non-finite result...)."""
        self.obs.observer_reset(why)

    def observer_bridged(self):
        """The observer bridged a gap in the stamps (residual kept, no restart)."""
        self.obs.bridged += 1

    # 1 Hz -----------------------------------------------------------------------------------
    def status(self, now_s=None):
        """(level, parts): the worst level, and per part (name, level, message, values) with
        values a list of (key, text) pairs. Closes the current period."""
        now = self._clock() if now_s is None else now_s
        self.input.close_period(now)
        names = (self._model or {}).get('names')
        parts = [self.input.status(f'{self.node_name}: input', now), self._model_status(),
                 self.obs.status(f'{self.node_name}: observer', now, names)]
        if self.obs.feet is not None:
            parts.append(self.obs.contact_frames_status(f'{self.node_name}: contact frames'))
        return max(p[1] for p in parts), parts

    def _model_status(self):
        name = f'{self.node_name}: model'
        if self._model is None:
            return name, ERROR, f'no model: {self._no_model}', [('nv', '0')]
        m = self._model
        values = [('nv', str(m['nv'])), ('URDF warnings', str(m['warnings'])),
                  ('coordinates', m['coordinates'])]
        return name, OK, f"nv = {m['nv']}, {m['coordinates']} coordinates", values

    def to_msg(self, now_stamp, hardware_id='', now_s=None):
        """diagnostic_msgs/DiagnosticArray with one DiagnosticStatus per part (header.stamp =
        ``now_stamp``, a builtin_interfaces/Time)."""
        from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
        _, parts = self.status(now_s)
        out = DiagnosticArray()
        out.header.stamp = now_stamp
        for name, level, message, values in parts:
            s = DiagnosticStatus(level=bytes([level]), name=name, message=message,
                                 hardware_id=hardware_id)
            s.values = [KeyValue(key=k, value=v) for k, v in values]
            out.status.append(s)
        return out


def _num(x):
    return '-' if x is None else f'{x:.4g}'


@njit('void(float64[::1], float64[:])', cache=True, nogil=True)
def _peak_into(peak, r):
    """peak_i = max(peak_i, |r_i|), per observer update without contact."""
    for i in range(r.shape[0]):
        a = abs(r[i])
        if a > peak[i]:
            peak[i] = a
