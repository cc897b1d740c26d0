"""Each contact frame's state (touch-down, lift-off) from a fast force and the frame's motion.

The forces of the contact-force programme (contact_forces.py, eq. 2) are the plant's through the
observer's ``K/(s+K)``: a foot that leaves the ground still shows its filtered force for
``ln(F/F_r)/K`` (from ``F`` to the release level ``F_r``: 46 ms from 12 N to 1.2 N at
K = 50 1/s), so a state taken from them sees every lift-off about that late, and a higher ``K``
lets the noise of the base twist through (a state estimator's odometry) as touch-downs in
mid-swing.  The state here uses what the robot knows besides the filtered force, as the
contact-estimation literature for legged robots does (Hwangbo et al. 2016, "Probabilistic foot
contact estimation by fusing information from dynamics and differential/forward kinematics";
Bledt et al. 2018, "Contact model fusion for event-based locomotion in unstructured
terrains": the force of a momentum observer, the foot's height and its motion):

1. **The residual's rate.**  The observer's exact discrete step (observer.py)
   ``r_k = a r_{k−1} + (1 − a) w_k``, ``a = e^{−K Δt}``, gives back its input over the period,

       w_k = (r_k − a r_{k−1}) / (1 − a)                 (τ_ext ≈ r + ṙ/K, sampled exactly),   (1)

   the external torque's period mean with the noise of the unfiltered momentum difference, and
   a second filter of it at the gain ``K_f`` (``fast_gain``),

       ρ_k = a_f ρ_{k−1} + (1 − a_f) w_k,   a_f = e^{−K_f Δt},                               (2)

   is the residual of a momentum observer of gain ``K_f`` on the same samples (the
   multi-observer idea, without a second dynamics pass); across a gap the observer holds ``r``
   and (2) holds ``ρ``.  On a floating base the estimator gives it the residual with the stance
   legs' base twist (stance_residual.py), whose rate carries less of the odometry's noise.
2. **Fast forces.**  ``φ_i = n·f_i``, ``f`` the unconstrained minimizer of contact_forces.py's
   (2) for ``ρ`` (its compiled weighted least squares; a leg's joint rows decide its force).
3. **Kinematics** (the frame Jacobians and positions the programme uses): the frame's height
   ``z_i = n·p_i`` against the ground ``g``, the mean over the frames in contact of the height
   ``t_j`` each had when it touched down (feet sinking into soft ground do not lower it; the
   lowest frame's height while none is in contact), and its velocity along the normal
   ``u_i = n·(J_i v)`` (``v`` with the stance legs' base twist when the estimator has it, else
   the odometry's).
4. **The state**, per frame, with the threshold ``F_c`` and the release ``F_r``
   (contact_forces.py's ``threshold`` and ``release_ratio × threshold``):

       touch-down:  φ_i > F_c,  u_i ≤ v_l,  and (N_i > F_c  or  z_i − g < h_c)               (3)
       lift-off:    φ_i < F_r for T_c,  or  u_i > v_l, φ_i < F_c and z_i > t_i − h_c/5      (4)

   ``N_i`` the normal force of the programme on ``r`` (K/(s+K)), ``h_c`` = ``touchdown_height``,
   ``v_l`` = ``lift_speed``, ``T_c`` = :data:`CONFIRM` (3 ms: longer than the fast filter's
   noise correlation 1/K_f, so that one low sample of a lightly loaded stance foot is no
   lift-off; 0 without the fast force).  A touch-down needs the fast force, a frame that is
   not rising, and either the filtered force too (the K/(s+K) delay: wherever the ground is,
   e.g. a step up) or a frame as low as the ground the others stand on (then the fast filter's
   delay only): noise of the fast force in mid-swing, high above the ground, is no touch-down.
   A lift-off is the fast force's fall below the release, or earlier a frame rising faster
   than ``v_l`` with less than ``F_c``, back up to where it touched down (a foot rising out of
   soft ground is still pushed).  Where the stance residual's set of frames changes, its rate
   is held for that sample (stance_residual.py: the base twist steps, not the momentum).

What each delay is made of (docs/contact_forces.md): a touch-down near the ground, the fast
filter's rise to ``F_c``, about ``ln(F/(F − F_c))/K_f`` after the force reaches ``F``, plus the
sample; elsewhere that of ``K`` (``ln(F/(F − F_c))/K``).  A lift-off, the time the frame needs
to rise at ``v_l`` (its swing's acceleration, with the error of ``u_i``), or the plant's own
unloading to ``F_r`` plus ``ln(φ/F_r)/K_f`` and ``T_c``.

Without the observer's state (:meth:`FrameContactState.hysteresis`) the state is the
hysteresis of the given force (contact_forces.py's :meth:`solve` alone).

As the cycle's (cycle_data.py), the state has a Model and a Data, each a named tuple that the
compiled kernels read by name: :data:`ContactStateModel` (constant: F_c, F_r, h_c, v_l, T_c,
K_f, the observer's gain, the normal; from the node's parameters contact_force_threshold,
contact_release_ratio, contact_touchdown_height, contact_lift_speed, contact_fast_gain,
observer_gain, contact_normal) and :data:`ContactStateData` (per frame its state, touch-down
height and time below the release; ρ and the last residual).  The contact state runs after the
cycle's compiled step, in what follows it (cycle_state.py, through contact_forces.py), so its
Model and Data are the estimator's, not fields of the step's structures.
"""
from __future__ import annotations

import math
from collections import namedtuple
from dataclasses import dataclass

import numpy as np
from numba import njit

__all__ = ['CONFIRM', 'ContactStateData', 'ContactStateModel', 'ContactStateOptions',
           'FrameContactState', 'fast_residual', 'frame_states']

#: T_c of (4) [s]: how long the fast force stays below the release before a lift-off
CONFIRM = 0.003


@dataclass(frozen=True)
class ContactStateOptions:
    """The contact state's settings (module docstring): ``fast_gain`` K_f [1/s] of (2) (0: no
    fast force, the state from the filtered force), ``touchdown_height`` h_c [m] of (3) and (4)
    (0: every touch-down needs the filtered force), ``lift_speed`` v_l [m/s] of (3) and (4) (0:
    no velocity rule)."""
    fast_gain: float = 400.0
    touchdown_height: float = 0.015
    lift_speed: float = 0.3

    def __post_init__(self):
        for name in ('fast_gain', 'touchdown_height', 'lift_speed'):
            x = getattr(self, name)
            if not (math.isfinite(x) and x >= 0):
                raise ValueError(f'contact state: {name} must be >= 0, got {x}')


#: the contact state's Model (constant for a model and its settings), as the cycle's
#: (cycle_data.py): F_c and F_r [N], h_c [m], v_l [m/s], T_c [s] of (3) and (4), K_f [1/s] of
#: (2), the observer's gain K per velocity coordinate (nv,), the contact normal n (3,)
ContactStateModel = namedtuple('ContactStateModel', (
    'threshold', 'release', 'touchdown_height', 'lift_speed', 'confirm', 'fast_gain', 'gain',
    'normal'))
#: its Data (the workspace, allocated once): per frame the state (k,) bool, the height t_i at
#: its last touch-down (k,), how long its fast force has been below the release (k,) [s]; per
#: velocity coordinate ρ of (2) and the observer's last residual (nv,)
ContactStateData = namedtuple('ContactStateData', (
    'state', 'touched', 'below', 'rho', 'r_prev'))


@njit(cache=True, nogil=True)
def fast_residual(r, r_prev, gain, dt, fast_gain, rho, bridge):
    """(1) and (2) in place: ``rho`` <- the gain-``fast_gain`` filter of the observer's input
    recovered from its residuals ``r_prev`` -> ``r`` (gains ``gain``, per coordinate) over
    ``dt``; held across a gap (``bridge``); ``r_prev`` <- ``r``."""
    af = math.exp(-fast_gain * dt)
    for i in range(r.shape[0]):
        if not bridge:
            a = math.exp(-gain[i] * dt)
            w = (r[i] - a * r_prev[i]) / (1.0 - a)
            rho[i] = af * rho[i] + (1.0 - af) * w
        r_prev[i] = r[i]


@njit(cache=True, nogil=True)
def _height(normal, positions, i):
    return normal[0] * positions[i, 0] + normal[1] * positions[i, 1] + normal[2] * positions[i, 2]


@njit(cache=True, nogil=True)
def _ground(model, data, positions):
    """g of (3): the mean of the touch-down heights of the frames in contact, or the lowest
    frame's height while none is."""
    total, count, lowest = 0.0, 0, np.inf
    for i in range(data.state.shape[0]):
        lowest = min(lowest, _height(model.normal, positions, i))
        if data.state[i]:
            total += data.touched[i]
            count += 1
    return total / count if count else lowest


@njit(cache=True, nogil=True)
def frame_states(model, data, forces, slow, A, v, positions, d, dt):
    """(3) and (4) in place on ``data`` (a :data:`ContactStateData`; its ``state``,
    ``touched`` and ``below`` written here) with the settings ``model`` (a
    :data:`ContactStateModel`), for the fast forces ``forces`` (k d: φ_i their normal parts),
    the filtered normal forces ``slow`` (k,), the frames' velocity columns ``A`` (nv × k d) and
    origins ``positions`` (k, 3) at the state ``v`` (nv,), ``dt`` after the last update."""
    k, nv, n = data.state.shape[0], A.shape[0], model.normal
    fc, fr, hc, vl = model.threshold, model.release, model.touchdown_height, model.lift_speed
    ground = _ground(model, data, positions)
    for i in range(k):
        z = _height(n, positions, i)
        u, phi = 0.0, 0.0                       # n·(J_i v), n·f_i
        for c in range(3):
            s = 0.0
            for j in range(nv):
                s += A[j, i * d + c] * v[j]
            u += n[c] * s
            phi += n[c] * forces[i * d + c]
        rising = vl > 0.0 and u > vl
        if data.state[i]:                       # (4)
            data.below[i] = data.below[i] + dt if phi < fr else 0.0
            risen = z > data.touched[i] - 0.2 * hc
            unloaded = phi < fr and data.below[i] >= model.confirm - 1e-9
            data.state[i] = not (unloaded or (rising and risen and phi < fc))
        else:                                   # (3)
            low = hc > 0.0 and z - ground < hc
            data.state[i] = phi > fc and not rising and (slow[i] > fc or low)
            if data.state[i]:
                data.touched[i], data.below[i] = z, 0.0


def contact_state_model(gain, normal, limits, options=None):
    """The :data:`ContactStateModel` of the observer's ``gain`` per velocity coordinate, the
    contact ``normal``, ``limits`` = (F_c, F_r) [N] and ``options`` (a
    :class:`ContactStateOptions`; None: its defaults)."""
    o = options or ContactStateOptions()
    threshold, release = limits
    return ContactStateModel(
        threshold=float(threshold), release=float(release),
        touchdown_height=float(o.touchdown_height), lift_speed=float(o.lift_speed),
        confirm=CONFIRM if o.fast_gain > 0 else 0.0, fast_gain=float(o.fast_gain),
        gain=np.ascontiguousarray(gain, dtype=float),
        normal=np.ascontiguousarray(normal, dtype=float))


def contact_state_data(model, k):
    """The :data:`ContactStateData` of ``k`` frames for ``model``: every frame out of
    contact."""
    nv = model.gain.shape[0]
    return ContactStateData(state=np.zeros(k, dtype=np.bool_), touched=np.zeros(k),
                            below=np.zeros(k), rho=np.zeros(nv), r_prev=np.zeros(nv))


class FrameContactState:
    """The contact states of ``k`` frames (module docstring): :attr:`model` (a
    :data:`ContactStateModel`) and :attr:`data` (a :data:`ContactStateData`).  ``gain``: the
    observer's gain per velocity coordinate (nv,), whose residual :meth:`residual` is given;
    ``normal``: the contact normal (unit, world axes); ``limits``: (F_c, F_r)."""

    def __init__(self, gain, normal, k, limits, options=None):
        self.options = options or ContactStateOptions()
        self.model = contact_state_model(gain, normal, limits, self.options)
        self.data = contact_state_data(self.model, k)
        # compiled (or loaded from numba's cache) here, not at a sample
        n, m = self.model.gain.shape[0], self.model
        fast_residual(np.zeros(n), np.zeros(n), np.ones(n), 1e-3, 1.0, np.zeros(n), True)
        frame_states(m, contact_state_data(m, k), np.zeros(3 * k), np.zeros(k),
                     np.zeros((n, 3 * k)), np.zeros(n), np.zeros((k, 3)), 3, 1e-3)

    @property
    def state(self):
        """The frames' states (k,) bool (the data's array itself)."""
        return self.data.state

    @property
    def rho(self):
        """ρ (nv,) of (2) (the data's array itself)."""
        return self.data.rho

    @property
    def fast(self):
        """Whether the state uses the fast residual (K_f > 0)."""
        return self.model.fast_gain > 0

    def reset(self):
        """Every frame out of contact, ρ and the last residual zero (the observer restarted)."""
        d = self.data
        d.r_prev[:] = 0.0
        d.rho[:] = 0.0
        d.state[:] = False
        d.below[:] = 0.0

    def residual(self, r, dt, bridge=False):
        """ρ (nv,) of (2) after the residual ``r`` a period ``dt`` after the last one."""
        m, d = self.model, self.data
        fast_residual(r, d.r_prev, m.gain, float(dt), m.fast_gain, d.rho, bool(bridge))
        return d.rho

    def hysteresis(self, phi):
        """The new states (k,) bool (the array itself) from the normal forces ``phi`` alone:
        in contact above F_c, released below F_r."""
        s = self.data.state
        s[:] = (phi > self.model.threshold) | (s & (phi >= self.model.release))
        return s

    def update(self, forces, slow, A, positions, d, v, dt):
        """The new states (k,) bool (the array itself), (3) and (4): ``forces`` (k d, float64,
        contiguous) the fast forces (or the filtered ones without the fast residual), ``slow``
        (k,) the filtered normal forces, the frames' velocity columns ``A`` (nv × k d) and
        origins ``positions`` (k, 3) at the velocity ``v`` (nv,), ``dt`` after the last
        update."""
        frame_states(self.model, self.data, forces, slow, A, v, positions, d, float(dt))
        return self.data.state
