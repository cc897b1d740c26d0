"""What a cycle keeps between messages and what follows its compiled step (no ROS).

The compiled step (:func:`~ros_dynamics.estimation.cycle_kernel.cycle_step`) makes the cycle:
one kinematics pass for M, C, dM/dt, g, p = M v and C^T v (Echeandia & Wensing 2021,
Algorithm 1), the momentum observer step (De Luca et al. 2006) and the finite check.
:class:`CycleState` holds what it runs on (the workspace :attr:`CycleState.data`, the
observer's state rows, the contact thresholds) and makes, in :meth:`CycleState.finish`, what
follows it: Gamma when asked (Algorithm 2), the change to the published coordinates, with
contact frames the forces at them and the part of the residual they leave unexplained
(contact_forces.py), contact detection with hysteresis and isolation (on that unexplained part
when there are contact frames: a standing robot's weight is its feet's, not a contact), the
contact wrench.

It owns the observer's timing and the reasons of its restarts (:meth:`CycleState.reset`: a source
or clock reset, the time going back, a non-finite result, a request).  A gap in the
stamps longer than the gap limit does not restart it: the observer integrates the momentum
over each period (zero-order hold of the torque), so a gap of many periods would turn the
motion during it into a residual; it bridges the gap instead (the residual keeps its value, the
integral is re-anchored after the gap: ``observer.residual_step``), so that a scheduling
hiccup during a contact costs neither the contact nor its estimate.  Gap limit: ``gap_factor``
times the median sample period of the stream (estimated from the last 64 periods, first after
8), clamped to [``gap_min``, ``gap_max``]; ``gap_max`` until the period is known.  The rules
themselves (the gap, the threshold, the finite check, friction) are those of
:mod:`~ros_dynamics.estimation.rules`.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.api import christoffel_after_terms, compute_all_terms
from ..core.coordinates import output_coordinates
from ..core.data import Data
from .contact_forces import ContactForceEstimator
from .observer import R, TAU, V, ContactDetector, MomentumObserver, estimate_contact_wrench
from .rules import terms_finite
from .stance_residual import StanceResidual

PERIOD_WINDOW = 64


def per_coordinate(name, values, model, fill_base=None):
    """A per-velocity-coordinate vector (nv,) from one value, one per joint or one per
    coordinate; the floating-base entries are ``fill_base(values)`` (default 0)."""
    nv = int(model.nv)
    b = 6 if model.floating_base else 0
    nj = nv - b
    vals = np.asarray(values, dtype=float).ravel()
    out = np.zeros(nv)
    if vals.size == 1:
        out[:] = vals[0]
        if fill_base is None:
            out[:b] = 0.0
    elif vals.size == nv:
        out[:] = vals
    elif vals.size == nj:
        out[b:] = vals
        out[:b] = 0.0 if fill_base is None else fill_base(vals)
    else:
        raise ValueError(f'{name} has {vals.size} elements; expected 1, {nj} (joints) or {nv} '
                         '(velocity coordinates) for this model')
    return out


class ObserverSettings:
    """The observer's configuration for one model (validated; ValueError with the reason)."""

    def __init__(self, model, gain=50.0, friction_viscous=0.0, friction_coulomb=0.0,
                 threshold=5.0, release_ratio=0.5, gap_factor=5.0, gap_min=0.002, gap_max=0.1,
                 wrench_link='', wrench_point=(0.0, 0.0, 0.0), force_only=True,
                 torque_offset=0.0, contact_frames=(), contact_frame_model='point',
                 contact_normal=(0.0, 0.0, 1.0), contact_force_threshold=10.0,
                 threshold_velocity=0.0, threshold_torque=0.0, odom_twist_noise=0.03):
        self.gain = per_coordinate('observer_gain', gain, model, np.max)
        self.threshold = per_coordinate('contact_threshold', threshold, model, np.max)
        self.threshold_velocity = per_coordinate('contact_threshold_velocity',
                                                 threshold_velocity, model)
        self.threshold_torque = per_coordinate('contact_threshold_torque', threshold_torque,
                                               model)
        if (self.threshold_velocity < 0).any() or (self.threshold_torque < 0).any():
            raise ValueError('contact_threshold_velocity and contact_threshold_torque must be '
                             '>= 0')
        self.friction_viscous = per_coordinate('observer_friction_viscous', friction_viscous,
                                               model)
        self.friction_coulomb = per_coordinate('observer_friction_coulomb', friction_coulomb,
                                               model)
        self.torque_offset = per_coordinate('observer_torque_offset', torque_offset, model)
        if not (self.gain > 0).all() or not (self.threshold > 0).all():
            raise ValueError('observer_gain and contact_threshold must be > 0')
        self.release_ratio = float(release_ratio)
        self.gap_factor, self.gap_min, self.gap_max = float(gap_factor), float(gap_min), float(
            gap_max)
        self.set_wrench(model, wrench_link, wrench_point, force_only)
        self.contact_frames = tuple(contact_frames)
        self.contact_frame_model = contact_frame_model
        self.contact_normal = np.asarray(contact_normal, dtype=float)
        self.contact_force_threshold = float(contact_force_threshold)
        self.odom_twist_noise = float(odom_twist_noise)
        if not (math.isfinite(self.odom_twist_noise) and self.odom_twist_noise >= 0):
            raise ValueError(f'odom_twist_noise must be >= 0, got {odom_twist_noise}')
        self.contact_forces(model)           # validated here (the estimator is the CycleState's)

    def contact_forces(self, model):
        """The contact-force estimator of these settings (contact_forces.py), or None without
        contact frames."""
        if not self.contact_frames:
            return None
        stance = None
        if self.odom_twist_noise > 0 and model.floating_base:     # stance_residual.py
            stance = StanceResidual(model, self.odom_twist_noise, dict(
                gain=self.gain, friction_viscous=self.friction_viscous,
                friction_coulomb=self.friction_coulomb, torque_offset=self.torque_offset))
        return ContactForceEstimator(model, self.contact_frames, self.contact_frame_model,
                                     self.contact_normal, self.contact_force_threshold,
                                     self.release_ratio, stance_residual=stance)

    def set_wrench(self, model, link, point, force_only):
        """Where and how the contact wrench is estimated (a link, or '' for the isolated one;
        a point in its frame; a pure force or a 6-D wrench): no part of the observer's model,
        so a change restarts nothing."""
        if link and link not in model.link_frames:
            raise ValueError(f'contact_wrench_link {link!r} is not a link of the model '
                             f'{model.name!r}')
        self.wrench_link = link
        self.wrench_point = np.asarray(point, dtype=float)
        self.force_only = bool(force_only)


class CycleResult:
    """What one cycle produced (:meth:`CycleState.finish`; one object per cycle, reused: read it
    before the next).  ``error`` is None or why nothing may be published."""

    __slots__ = ('error', 'terms', 'out', 'residual', 'contact', 'wrench', 'wrench_link',
                 'observer', 'reset_reason', 'dt', 'forces')

    def __init__(self):
        self.clear()

    def clear(self):
        self.error = None
        self.terms = self.out = self.residual = self.contact = None
        self.wrench = self.wrench_link = None
        self.forces = None          # ContactForces at the contact frames (an update with them)
        self.observer = None        # None, 'reset' (restarted here), 'update' or 'bridge' (an
        self.reset_reason = None    # update across a gap: observer_interval)
        self.dt = 0.0               # the period of the update [s]


class CycleState:
    """What the cycle of one model keeps between messages, and what follows its compiled step
    (see the module text).

    ``coordinates``: 'joint', 'mimic_reduced' or 'center_of_mass' (the published ones);
    ``observer``: :class:`ObserverSettings` or None (no observer)."""

    def __init__(self, model, coordinates='joint', observer=None):
        self.model = model
        self.data = Data(model)
        self.coords = output_coordinates(model, coordinates)
        self.settings = observer
        self.result = CycleResult()
        self.last_reset = None           # (why, t_ns) of the latest observer restart
        self._periods = np.zeros(PERIOD_WINDOW)
        self._n_periods = 0
        self.gap_limit = observer.gap_max if observer is not None else math.inf
        if observer is not None:
            self.observer = MomentumObserver(model, gain=observer.gain,
                                             friction_viscous=observer.friction_viscous,
                                             friction_coulomb=observer.friction_coulomb,
                                             torque_offset=observer.torque_offset)
            self.detector = ContactDetector(model, threshold=observer.threshold,
                                            release_ratio=observer.release_ratio,
                                            threshold_velocity=observer.threshold_velocity,
                                            threshold_torque=observer.threshold_torque)
        else:
            self.observer = self.detector = None
        # forces at the contact frames; the detector then judges what they leave unexplained
        self.contact_forces = observer.contact_forces(model) if observer is not None else None
        self._last_ns = None             # observer time of the last restart or update
        self.bridged = 0                 # gaps bridged (observer_interval: INTERVAL_GAP)
        self._pending = 'start'          # why the observer restarts at the next step

    def reset(self, why):
        """Restart the observer at the next cycle with effort (residual zero, detector
        released), for the reason ``why``."""
        self._pending = why
        self._last_ns = None

    @property
    def observer_time(self):
        """The time [ns] of the observer's last sample, for the compiled step: running (no
        restart due); else -1 (0 without an observer)."""
        if self.observer is None:
            return 0
        if self._last_ns is None or self._pending is not None:
            return -1
        return self._last_ns

    def finish(self, q, v, t_ns, dt, observed, bridged, below, christoffel=False,
               restarted=False):
        """:attr:`result` of a cycle that the compiled step made at (q, v), time ``t_ns``;
        ``observed``: it updated the observer, a period ``dt`` [s] after its last sample
        (``bridged``: across a gap; ``restarted``: it (re)started the observer at this sample,
        as :attr:`observer_time` asked; else the observer was not updated: no efforts).  Its
        terms (checked finite) are in :attr:`data`; with ``christoffel`` Gamma is computed here
        (Algorithm 2 on the composite inertias the cycle left); the residual it left is judged
        here (:meth:`_judge`), unless it is a free-motion sample (``below``: it is below every
        contact threshold, the detector is free, no contact frames)."""
        res = self.result
        res.clear()
        data = self.data
        res.terms = data.dynamics
        if christoffel:
            christoffel_after_terms(self.model, data)
        res.out = self.coords.apply(q, v, res.terms, data.Gamma if christoffel else None)
        judged = False
        if restarted:         # the compiled step (re)started the observer: r = 0, no verdict
            self._restarted(res, self._pending or 'start' if self._last_ns is None else
                            _went_back(dt), t_ns)
            self._last_ns = t_ns
            self._pending = None
        elif observed:
            res.residual = self.observer.state[R]
            self._observed(res, 'bridge' if bridged else 'update', dt)
            self._last_ns = t_ns
            self._pending = None
            judged = not (below and self.contact_forces is None and self.detector.free)
            if not judged:
                res.contact = self.detector.free_sample()      # the usual case: free motion
        if judged or christoffel or res.out.d is not res.terms:   # (other coordinates)
            try:
                if judged:
                    self._judge(q, res, (v, self.observer.state[TAU], dt, bridged))
                res.error = self._nonfinite(res, christoffel)
            except Exception as exc:  # noqa: BLE001 - nothing is published if any step fails
                res.error = _failed(exc)
        if res.error is not None:
            self.reset(f'{res.error} at the previous joint state')
        return res

    def refused_nonfinite(self):
        """Why a cycle whose M, C, dM/dt, g or residual the compiled step found not finite
        publishes nothing; the observer restarts at the next cycle."""
        error = 'non-finite M, C, dM/dt, g or observer residual computed'
        self.reset(f'{error} at the previous joint state')
        return error

    def refused_state(self, q, v):
        """:attr:`result` of a state (q, v) that the compiled step refused (its terms declined
        it, e.g. a floating base's quaternion not a unit one): ``error`` the core's reason for
        it (its validation explains the code), the observer restarts at the next cycle."""
        res = self.result
        res.clear()
        try:
            compute_all_terms(self.model, q, v, self.data)
            res.error = 'the dynamics refused this joint state'   # (not reached: explained)
        except Exception as exc:  # noqa: BLE001 - the core's reason
            res.error = _failed(exc)
        self.reset(f'{res.error} at the previous joint state')
        return res

    def _restarted(self, res, why, t_ns):
        """The observer (re)started at the sample of ``t_ns`` for the reason ``why``: the
        detector and the contact forces released, the restart recorded in ``res``."""
        self.detector.reset()
        if self.contact_forces is not None:
            self.contact_forces.reset()
        self.last_reset = (why, t_ns)
        res.observer, res.reset_reason = 'reset', why

    def _observed(self, res, kind, dt):
        """An observer update ('update' or 'bridge') a period ``dt`` after the last one: the
        period joins the gap limit's median unless it was a gap."""
        res.observer, res.dt = kind, dt
        if kind == 'bridge':
            self.bridged += 1
        else:
            self._record_period(dt)

    def _record_period(self, dt):
        k = self._n_periods
        self._periods[k % PERIOD_WINDOW] = dt
        self._n_periods = k + 1
        n = self._n_periods
        if n in (8, 16, 32) or n % PERIOD_WINDOW == 0:    # refresh the limit
            s = self.settings
            med = float(np.median(self._periods[:min(n, PERIOD_WINDOW)]))
            self.gap_limit = min(s.gap_max, max(s.gap_min, s.gap_factor * med))

    def _judge(self, q, res, state):
        """What the residual of an observer update at ``q`` means, into ``res``: with contact
        frames the forces at them and the part of the residual they leave unexplained; the
        contact state (detection with hysteresis, isolation) of that part, or of the residual;
        the contact wrench.  ``state``: (v, tau, dt, bridge) of the update."""
        judged = res.residual
        if self.contact_forces is not None:
            res.forces = self.contact_forces.update(q, res.residual, state)
            judged = res.forces.unexplained
        obs = self.observer.state         # the sample's v and tau: state-dependent thresholds
        res.contact = self.detector.update(judged, obs[V], obs[TAU])
        self._wrench(q, res, judged)

    def _wrench(self, q, res, judged):
        """The contact wrench from ``judged``: the residual, or with contact frames the part
        of it they leave unexplained (a contact elsewhere)."""
        s, c = self.settings, res.contact
        link = s.wrench_link or c.link
        if c.in_contact and link:
            try:
                res.wrench = estimate_contact_wrench(self.model, q, judged, link,
                                                     s.wrench_point, force_only=s.force_only)
                res.wrench_link = link
            except ValueError:
                res.wrench = None     # e.g. fewer than 3 joints up to the link for a force

    def _nonfinite(self, res, christoffel):
        """Why the cycle's results may not be published (something non-finite), or None (the
        compiled step checked M, C, dM/dt, g and r)."""
        d, out = res.terms, res.out
        if christoffel and not math.isfinite(self.data.Gamma.sum()):
            return 'non-finite Gamma computed'
        if res.wrench is not None and not math.isfinite(res.wrench.sum()):
            return 'non-finite contact wrench computed'
        if out.d is not d:
            if not terms_finite(out.d.M, out.d.C, out.d.Mdot, out.d.g, _EMPTY) or (
                    out.gamma is not None and not math.isfinite(out.gamma.sum())):
                return 'non-finite terms in the published coordinates computed'
        return None


_EMPTY = np.zeros(0)


def _went_back(dt):
    """Why the observer restarts at a sample ``dt`` < 0 s after its last one."""
    return f'the time went back {-dt:.6g} s since the last joint state (a source or clock reset)'


def _failed(exc):
    return f'dynamics failed for this joint state: {type(exc).__name__}: {exc}'
