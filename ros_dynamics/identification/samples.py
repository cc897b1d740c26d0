"""Recorded joint states for offline tools (calibration, replay): :class:`Samples`, and the
error offline estimation raises when the data cannot give what was asked (no ROS)."""

from dataclasses import dataclass, field

import numpy as np

__all__ = ['Samples', 'CalibrationError']


class CalibrationError(ValueError):
    """The data cannot give the requested calibration (the message says why)."""


@dataclass
class Samples:
    """Recorded joint states: ``t`` (T,) [s], ``q`` (T, nq), ``v`` (T, nv), ``tau`` (T, nv) (the
    motor torque that acted during the period ending at each sample), ``names`` (joint names
    in column order, optional), ``t0_ns`` (the absolute stamp of ``t = 0``, if known)."""
    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    tau: np.ndarray
    names: list = field(default_factory=list)
    t0_ns: int = 0
    notes: list = field(default_factory=list)    # what reading them skipped or repaired

    def __post_init__(self):
        self.t = np.asarray(self.t, dtype=float).reshape(-1)
        T = self.t.size
        for k in ('q', 'v', 'tau'):
            a = np.asarray(getattr(self, k), dtype=float)
            if a.ndim != 2 or a.shape[0] != T:
                raise ValueError(f'samples: {k} must be a ({T}, n) array, got shape {a.shape}')
            if not np.all(np.isfinite(a)):
                raise ValueError(f'samples: {k} has non-finite values')
            setattr(self, k, a)
        if self.v.shape != self.tau.shape:
            raise ValueError('samples: v and tau must have the same shape')
        self.names = list(self.names)

    def __len__(self):
        return self.t.size

    def slice(self, start=None, stop=None):
        """The samples with ``start <= t - t[0] < stop`` (seconds from the first sample)."""
        rel = self.t - (self.t[0] if len(self) else 0.0)
        m = np.ones(len(self), dtype=bool)
        if start is not None:
            m &= rel >= start
        if stop is not None:
            m &= rel < stop
        return Samples(self.t[m], self.q[m], self.v[m], self.tau[m], self.names, self.t0_ns,
                       self.notes)
