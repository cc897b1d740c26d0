"""Joint efforts from outside the simulator (no ROS): the plant side of ``control: external``.

:class:`HeldEffort` is a :class:`~ros_dynamics.simulation.plant.Simulator` controller that
applies the last received effort command, held (zero-order hold) until the next one.  When no
command has arrived for more than ``timeout`` seconds of *simulated* time (or none yet), it
applies the safe behaviour instead:

    τ = g(q) − D q̇     (gravity compensation + joint damping, D = ``damping``)

which holds a resting robot where it is and brings a moving one to rest without a jump to zero
torque (a real drive would brake; zero torque would let the arm fall).  Commands resume the
external mode at once.  With a floating base the command holds the joints' efforts (the base rows
get none) and the safe behaviour is ``fallback`` (e.g. the scenario's own standing PD: joint
gravity compensation alone would let a standing robot sag).  :attr:`mode` is ``'waiting'`` (no command yet), ``'external'`` or
``'fallback'``; :attr:`transitions` counts the switches into fallback.
"""

import threading

import numpy as np

from ..core.api import gravity

__all__ = ['HeldEffort']


class HeldEffort:
    """``command(tau, t)`` (any thread) stores an effort received at simulated time ``t``;
    ``__call__(t, q, v, qd, vd)`` is the simulator's controller (``qd, vd`` unused)."""

    def __init__(self, model, timeout=0.1, damping=0.0, fallback=None):
        self.model = model
        nj = len(model.joint_names)
        self.nbase = int(model.nv) - nj
        self.fallback = fallback
        if self.nbase and fallback is None:
            raise ValueError('external efforts on a floating base need a fallback controller')
        self.timeout = float(timeout)
        if not self.timeout > 0:
            raise ValueError('timeout must be > 0')
        self.damping = np.broadcast_to(np.asarray(damping, dtype=float), (nj,)).copy()
        if not np.all(np.isfinite(self.damping)) or np.any(self.damping < 0):
            raise ValueError('damping must be finite and >= 0')
        self._lock = threading.Lock()
        self._cmd = None            # (tau, t_received)
        self.mode = 'waiting'
        self.transitions = 0
        self.applied = 0            # steps with an external command applied
        self.fallback_steps = 0

    def command(self, tau, t):
        tau = np.array(tau, dtype=float)
        if tau.shape != self.damping.shape or not np.all(np.isfinite(tau)):
            raise ValueError(f'effort must be {self.damping.size} finite values')
        with self._lock:
            self._cmd = (tau, float(t))

    def __call__(self, t, q, v, qd=None, vd=None):
        with self._lock:
            cmd = self._cmd
        if cmd is not None and t - cmd[1] <= self.timeout:
            self.mode = 'external'
            self.applied += 1
            return np.concatenate([np.zeros(self.nbase), cmd[0]]) if self.nbase else cmd[0]
        if self.mode == 'external':
            self.transitions += 1
        if cmd is not None:
            self.mode = 'fallback'
        self.fallback_steps += 1
        if self.fallback is not None:
            return self.fallback(t, q, v, qd, vd)
        return np.asarray(gravity(self.model, q), dtype=float) - self.damping * v
