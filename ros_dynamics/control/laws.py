"""Joint-space tracking laws over the dynamics terms M(q), C(q, q̇), g(q) (plain numpy, no ROS).

Plant: ``M(q) q̈ + C(q, q̇) q̇ + g(q) = τ`` (docs/conventions.md, fixed base, joint coordinates).
Reference ``(q_d, q̇_d, q̈_d)``; tracking error ``q̃ = q − q_d`` (so ``e = −q̃`` in the
textbooks that write ``e = q_d − q``).  Gains are diagonal (one value per joint).

* :class:`PDGravity` (baseline): ``τ = g(q) − K_p q̃ − K_d q̃̇``.  PD control with gravity
  compensation (Takegaki & Arimoto 1981, ASME J. Dyn. Syst. Meas. Control 103(2); Siciliano et
  al. 2009, *Robotics: Modelling, Planning and Control*, Sec. 8.5.1), used here as a tracking
  controller with ``q̇_d``: it ignores ``M q̈_d`` and ``C q̇``, so its error grows with the speed
  of the reference.
* :class:`ComputedTorque`: ``τ = M(q)(q̈_d − K_d' q̃̇ − K_p' q̃) + C(q, q̇) q̇ + g(q)``
  (inverse dynamics control, Siciliano et al. 2009, Sec. 8.5.2).  With exact terms the closed
  loop is the decoupled linear error dynamics ``q̃̈ + K_d' q̃̇ + K_p' q̃ = 0`` (gains in 1/s²,
  1/s: acceleration gains).
* :class:`SlotineLi`: ``q̇_r = q̇_d − Λ q̃``, ``s = q̇ − q̇_r = q̃̇ + Λ q̃``,
  ``τ = M(q) q̈_r + C(q, q̇) q̇_r + g(q) − K_D s`` (Slotine & Li 1987, IJRR 6(3):49-59, their law
  with the parameters known).  Closed loop: ``M ṡ + (C + K_D) s = 0``.  Lyapunov function
  ``V = ½ sᵀ M s + q̃ᵀ Λ K_D q̃`` with
  ``V̇ = ½ sᵀ (Ṁ − 2C) s − q̃̇ᵀ K_D q̃̇ − q̃ᵀ Λ K_D Λ q̃ = − q̃̇ᵀ K_D q̃̇ − q̃ᵀ Λ K_D Λ q̃ ≤ 0``:
  the first term vanishes only because ``Ṁ − 2C`` is skew-symmetric (Echeandia & Wensing 2021, eq. (2)), i.e.
  for a C like the Christoffel-consistent one -- ``C q̇_r`` with ``q̇_r ≠ q̇`` is where the
  factorization matters.

"Same feedback gains": expanded, Slotine–Li's feedback is ``−K_D q̃̇ − K_D Λ q̃``, so with
``K_D = K_d`` and ``Λ = K_p / K_d`` it has exactly the PD law's gains and adds only the model
terms; :func:`make_law` builds all three laws from one ``(K_p, K_d)`` pair that way (computed
torque: ``K_p' = K_p / m``, ``K_d' = K_d / m`` with ``m`` = the diagonal of M at a reference
configuration, the same linearized gains there).

Every law returns the torque and fills :attr:`components` (``M q̈_r``, ``C q̇_r``, ``g`` and
``feedback``, with ``q̈_r``/``q̇_r`` the law's own reference acceleration/velocity: for PD + g
``M q̈_r`` and ``C q̇_r`` are zero), which the closed-loop demo plots.
"""

import numpy as np

__all__ = ['PDGravity', 'ComputedTorque', 'SlotineLi', 'make_law', 'LAWS',
           'slotine_li_lyapunov']

LAWS = ('pd_gravity', 'computed_torque', 'slotine_li')


def _gain(x, name):
    g = np.atleast_1d(np.asarray(x, dtype=float)).copy()
    if g.ndim != 1 or not np.all(np.isfinite(g)) or np.any(g < 0):
        raise ValueError(f'{name} must be finite and >= 0 (one value or one per joint)')
    return g


class _Law:
    """Gains: one value for all joints or one per joint (checked against the state's size)."""
    name = ''
    gains = ()

    def __init__(self):
        self.components = {}

    def _prepare(self, q, v, g):
        n = np.shape(q)[0]
        if np.shape(v) != (n,) or np.shape(g) != (n,):
            raise ValueError(f'q, v and g must have one entry per joint ({n})')
        for k in self.gains:
            if getattr(self, k).size not in (1, n):
                raise ValueError(f'{k} has {getattr(self, k).size} values for {n} joints')
        c = self.components
        if c.get('g') is None or c['g'].shape != (n,):
            self.components = c = {k: np.zeros(n) for k in ('M_qdd_r', 'C_qd_r', 'g', 'feedback')}
        c['g'][:] = g
        return c


class _PDGains(_Law):
    gains = ('kp', 'kd')

    def __init__(self, kp, kd):
        super().__init__()
        self.kp, self.kd = _gain(kp, 'kp'), _gain(kd, 'kd')


class PDGravity(_PDGains):
    """``τ = g(q) − K_p q̃ − K_d q̃̇`` (M and C unused)."""
    name = 'pd_gravity'

    def __call__(self, q, v, qd, vd, ad, M, C, g):
        c = self._prepare(q, v, g)
        fb = -self.kp * (q - qd) - self.kd * (v - vd)
        c['M_qdd_r'][:] = 0.0
        c['C_qd_r'][:] = 0.0
        c['feedback'][:] = fb
        return g + fb


class ComputedTorque(_PDGains):
    """``τ = M (q̈_d − K_d' q̃̇ − K_p' q̃) + C q̇ + g``; gains in 1/s² and 1/s."""
    name = 'computed_torque'

    def __call__(self, q, v, qd, vd, ad, M, C, g):
        c = self._prepare(q, v, g)
        fb_acc = -self.kp * (q - qd) - self.kd * (v - vd)
        c['M_qdd_r'][:] = M @ ad             # q̈_r = q̈_d
        c['C_qd_r'][:] = C @ v               # q̇_r = q̇ (exact cancellation of C q̇)
        c['feedback'][:] = M @ fb_acc
        return c['M_qdd_r'] + c['C_qd_r'] + g + c['feedback']


class SlotineLi(_Law):
    """``τ = M q̈_r + C q̇_r + g − K_D s`` with ``q̇_r = q̇_d − Λ q̃``, ``s = q̃̇ + Λ q̃``."""
    name = 'slotine_li'
    gains = ('kd', 'lam')

    def __init__(self, kd, lam):
        super().__init__()
        self.kd, self.lam = _gain(kd, 'K_D'), _gain(lam, 'Lambda')

    def reference(self, q, v, qd, vd, ad):
        """``(q̇_r, q̈_r, s)``."""
        e, ed = q - qd, v - vd
        vr = vd - self.lam * e
        ar = ad - self.lam * ed
        return vr, ar, ed + self.lam * e

    def __call__(self, q, v, qd, vd, ad, M, C, g):
        c = self._prepare(q, v, g)
        vr, ar, s = self.reference(q, v, qd, vd, ad)
        c['M_qdd_r'][:] = M @ ar
        c['C_qd_r'][:] = C @ vr
        c['feedback'][:] = -self.kd * s
        return c['M_qdd_r'] + c['C_qd_r'] + g + c['feedback']


def slotine_li_lyapunov(law, q, v, qd, vd, M):
    """``V = ½ sᵀ M s + q̃ᵀ Λ K_D q̃`` of :class:`SlotineLi` ``law`` at one state."""
    e = q - qd
    s = (v - vd) + law.lam * e
    return 0.5 * s @ M @ s + e @ (law.lam * law.kd * e)


def make_law(name, kp, kd, m_ref=None):
    """One of :data:`LAWS` with the feedback gains of a PD pair ``(K_p, K_d)`` [N m/rad,
    N m s/rad] (see the module docstring); ``m_ref`` (the diagonal of M at a reference
    configuration) is needed for ``computed_torque``."""
    kp = np.atleast_1d(np.asarray(kp, dtype=float))
    kd = np.atleast_1d(np.asarray(kd, dtype=float))
    if name == 'pd_gravity':
        return PDGravity(kp, kd)
    if name == 'slotine_li':
        if np.any(kd <= 0):
            raise ValueError('slotine_li needs kd > 0 (Lambda = kp / kd)')
        return SlotineLi(kd, kp / kd)
    if name == 'computed_torque':
        if m_ref is None:
            raise ValueError('computed_torque needs m_ref (diagonal of M) to convert the gains')
        m = np.asarray(m_ref, dtype=float)
        if not np.all(m > 0):
            raise ValueError('m_ref must be > 0')
        return ComputedTorque(kp / m, kd / m)
    raise ValueError(f'unknown law {name!r}; one of {LAWS}')
