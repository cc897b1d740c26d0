"""Joint-space reference trajectories ``t -> (q_d, q̇_d, q̈_d)`` (plain numpy, no ROS).

Both classes are used by the simulator's built-in loop and by the tracking controller.

* :class:`SineTrajectory`: ``q_d = q0 + A (1 − cos ω t)``, a smooth periodic motion that starts
  at rest at ``q0`` (so a robot resting at ``q0`` starts on the reference).
* :class:`MinJerkTrajectory`: rest-to-rest minimum-jerk segments through waypoints
  (Flash & Hogan 1985, J. Neurosci. 5(7), eq. (2): ``x(s) = x0 + (xf − x0)(10 s³ − 15 s⁴ + 6 s⁵)``,
  ``s = (t − t0)/T``), optionally periodic; :func:`min_jerk_cycle` builds the periodic
  out-and-back cycle ``q0 → q0 + A → q0`` the controller node uses.
"""

import numpy as np

__all__ = ['MinJerkTrajectory', 'SineTrajectory', 'min_jerk_cycle', 'make_trajectory',
           'TRAJECTORIES']

TRAJECTORIES = ('sine', 'min_jerk')


class MinJerkTrajectory:
    """Rest-to-rest minimum-jerk segments through ``waypoints`` at ``times`` (held after the
    last one); with ``period`` the whole schedule repeats (the last waypoint should then equal
    the first)."""

    def __init__(self, times, waypoints, period=None):
        self.times = np.asarray(times, dtype=float)
        self.waypoints = np.asarray(waypoints, dtype=float)
        if self.times.ndim != 1 or self.waypoints.shape[0] != self.times.shape[0]:
            raise ValueError('one waypoint per time')
        if np.any(np.diff(self.times) <= 0):
            raise ValueError('times must increase')
        if not np.all(np.isfinite(self.waypoints)) or not np.all(np.isfinite(self.times)):
            raise ValueError('times and waypoints must be finite')
        if period is not None and not period > 0:
            raise ValueError('period must be > 0')
        self.period = period

    def __call__(self, t):
        if self.period:
            t = t % self.period
        T, W = self.times, self.waypoints
        if t <= T[0]:
            return W[0].copy(), np.zeros_like(W[0]), np.zeros_like(W[0])
        if t >= T[-1]:
            return W[-1].copy(), np.zeros_like(W[-1]), np.zeros_like(W[-1])
        k = int(np.searchsorted(T, t, side='right')) - 1
        h = T[k + 1] - T[k]
        s = (t - T[k]) / h
        d = W[k + 1] - W[k]
        # Flash & Hogan (1985) eq. (2) and its first two derivatives
        pos = 10 * s**3 - 15 * s**4 + 6 * s**5
        vel = (30 * s**2 - 60 * s**3 + 30 * s**4) / h
        acc = (60 * s - 180 * s**2 + 120 * s**3) / h**2
        return W[k] + pos * d, vel * d, acc * d


class SineTrajectory:
    """``q_d = q0 + A (1 − cos ω t)`` per joint, ``ω = 2π f`` (starts at rest at ``q0``)."""

    def __init__(self, q0, amplitude, frequency):
        self.q0 = np.asarray(q0, dtype=float)
        self.A = np.broadcast_to(np.asarray(amplitude, dtype=float), self.q0.shape).copy()
        self.w = 2 * np.pi * np.broadcast_to(np.asarray(frequency, dtype=float),
                                             self.q0.shape).copy()
        if not (np.all(np.isfinite(self.q0)) and np.all(np.isfinite(self.A))
                and np.all(np.isfinite(self.w))):
            raise ValueError('q0, amplitude and frequency must be finite')

    def __call__(self, t):
        c, s = np.cos(self.w * t), np.sin(self.w * t)
        return self.q0 + self.A * (1 - c), self.A * self.w * s, self.A * self.w**2 * c


def min_jerk_cycle(q0, amplitude, segment_time):
    """Periodic out-and-back minimum-jerk motion ``q0 → q0 + A → q0``, each leg taking
    ``segment_time`` seconds (period ``2 segment_time``)."""
    q0 = np.asarray(q0, dtype=float)
    A = np.broadcast_to(np.asarray(amplitude, dtype=float), q0.shape)
    T = float(segment_time)
    if not T > 0:
        raise ValueError('segment_time must be > 0')
    return MinJerkTrajectory([0.0, T, 2 * T], [q0, q0 + A, q0], period=2 * T)


def make_trajectory(kind, q0, amplitude, frequency):
    """``kind`` = ``'sine'`` (:class:`SineTrajectory`, ``frequency`` [Hz] per joint) or
    ``'min_jerk'`` (:func:`min_jerk_cycle` with each leg lasting ``1 / (2 f)`` seconds, so both
    kinds have period ``1/f``; one ``frequency`` for all joints: the smallest given)."""
    if kind == 'sine':
        return SineTrajectory(q0, amplitude, frequency)
    if kind == 'min_jerk':
        f = float(np.min(np.asarray(frequency, dtype=float)))
        if not f > 0:
            raise ValueError('frequency must be > 0')
        return min_jerk_cycle(q0, amplitude, 0.5 / f)
    raise ValueError(f'unknown trajectory {kind!r}; one of {TRAJECTORIES}')
