"""What follows the compiled step of a cycle, and the observer's settings (no ROS).

The compiled step (:func:`~ros_dynamics.estimation.cycle_kernel.cycle_step`) makes the cycle on
the cycle's data (:class:`~ros_dynamics.estimation.cycle_data.CycleData`): one kinematics pass
for M, C, dM/dt, g, p = M v and C^T v (Echeandia & Wensing 2021, Algorithm 1), the momentum
observer step (De Luca et al. 2006), the finite check, the outputs, what a cycle keeps.
:class:`CycleState` holds what follows it and makes it, in :meth:`CycleState.finish`: Gamma
when asked (Algorithm 2), the change to the published coordinates, with contact frames the
forces at them and the part of the residual they leave unexplained (contact_forces.py),
contact detection with hysteresis and isolation (on that unexplained part when there are
contact frames: a standing robot's weight is its feet's, not a contact), the contact wrench
(estimated when first read, :attr:`CycleResult.wrench`: most cycles in contact publish none;
one that is not finite is none); and the reasons of the observer's restarts
(:meth:`CycleState.reset`: a source or clock reset, the time going back, a non-finite result,
a request).

The free-motion flag (``CycleData``'s ``usual``, rules.FREE): after a cycle whose follow-up
made nothing a next free-motion sample would change (an observer update below every
threshold, the detector free, no contact frames, the model's own coordinates, no Gamma; or no
observer at all), :meth:`CycleState.finish` sets it and keeps that cycle's result as
:attr:`CycleState.free` (its arrays are the ones the compiled step writes in place); the next
free-motion cycles are answered FREE by the compiled step and nothing follows them.  Anything
else clears it.

A gap in the stamps longer than the gap limit does not restart the observer: it integrates the
momentum over each period (zero-order hold of the torque), so a gap of many periods would turn
the motion during it into a residual; it bridges the gap instead (the residual keeps its value,
the integral is re-anchored after the gap: ``observer.residual_step``), so that a scheduling
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
from ..core.coordinates import Output, output_coordinates
from ..core.data import Data
from .answers import ANSWERS, REFUSED
from .contact_forces import ContactForceEstimator, ObserverUpdate
from .cycle_data import restart_observer, set_usual, timing
from .observer import ContactDetector, estimate_contact_wrench
from .rules import ABOVE, BRIDGED, FREE, OK, RESTARTED, terms_finite
from .stance_residual import StanceResidual

#: what follows the compiled step failed (a non-finite Gamma or published terms, or an
#: exception of the follow-up): nothing published, the observer restarts
FOLLOW_UP = ANSWERS.add('output', REFUSED, 'error', '{error}: nothing published, observer '
                        're-initialized')
#: the answers of a cycle that updated the observer
UPDATES = frozenset((OK, FREE, ABOVE, BRIDGED))


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
                 threshold_velocity=0.0, threshold_torque=0.0, odom_twist_noise=0.03,
                 contact_state=None):
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
        self.contact_state = contact_state        # ContactStateOptions or None (its defaults)
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
                                     self.release_ratio, stance_residual=stance,
                                     gain=self.gain, state_options=self.contact_state)

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
    """What one cycle produced (:meth:`CycleState.finish`; one object, reused: read it before
    the next).  ``error`` is None or why nothing may be published."""

    __slots__ = ('error', 'q', 'terms', 'out', 'residual', 'contact', '_wrench', '_wrench_of',
                 'wrench_link', 'wrench_point', 'threshold', 'observer', 'reset_reason', 'dt',
                 'forces')

    def __init__(self):
        self.clear()

    def clear(self):
        self.error = None
        self.q = None               # the model's state the cycle ran at (its vector, reused)
        self.terms = self.out = self.residual = self.contact = None
        self.wrench = self.wrench_link = self.wrench_point = None
        self.threshold = None       # the contact thresholds' base level (nv,), with a residual
        self.forces = None          # ContactForces at the contact frames (an update with them)
        self.observer = None        # None, 'reset' (restarted here), 'update' or 'bridge' (an
        self.reset_reason = None    # update across a gap: observer_interval)
        self.dt = 0.0               # the period of the update [s]

    def copy_from(self, other):
        for name in self.__slots__:
            setattr(self, name, getattr(other, name))

    @property
    def wrench(self):
        """The contact wrench (6,) [force; torque], world axes, at ``wrench_point`` of
        ``wrench_link``, or None: estimated from the cycle's judged residual when first read
        (:func:`~.observer.estimate_contact_wrench`; a least-squares solve most cycles in contact
        do not need: the node publishes it at most 30 times a second), None if not finite."""
        if self._wrench_of is not None:
            args, self._wrench_of = self._wrench_of, None
            try:
                w = estimate_contact_wrench(*args[:5], force_only=args[5])
                self._wrench = w if math.isfinite(w.sum()) else None
            except ValueError:
                self._wrench = None   # e.g. fewer than 3 joints up to the link for a force
        return self._wrench

    @wrench.setter
    def wrench(self, value):
        self._wrench, self._wrench_of = value, None

    def wrench_of(self, model, q, judged, link, point, force_only):
        """The wrench is estimated, when first read, from ``judged`` (nv,) at ``q`` (both
        copied: the cycle's buffers are reused)."""
        self._wrench, self.wrench_link, self.wrench_point = None, link, point
        self._wrench_of = (model, q.copy(), judged.copy(), link, point, force_only)


class CycleState:
    """What follows the compiled step of one model's cycles (module text).

    ``coordinates``: 'joint', 'mimic_reduced' or 'center_of_mass' (the published ones);
    ``observer``: :class:`ObserverSettings` or None (no observer).  :attr:`data` is the core's
    workspace of the cycles (``workspace``, a ``Data``; the compiled step writes the terms
    there)."""

    def __init__(self, model, coordinates='joint', observer=None, workspace=None):
        self.model = model
        self.data = Data(model) if workspace is None else workspace
        self.coords = output_coordinates(model, coordinates)
        self.settings = observer
        self.result, self.free = CycleResult(), CycleResult()
        self.last_reset = None           # (why, t_ns) of the latest observer restart
        self.detector = None if observer is None else ContactDetector(
            model, threshold=observer.threshold, release_ratio=observer.release_ratio,
            threshold_velocity=observer.threshold_velocity,
            threshold_torque=observer.threshold_torque)
        # forces at the contact frames; the detector then judges what they leave unexplained
        self.contact_forces = observer.contact_forces(model) if observer is not None else None
        self.bridged = 0                 # gaps bridged (rules.BRIDGED)
        self._pending = 'start'          # why the observer restarts at the next step
        self._usual = False              # the free-motion flag as last set in the cycle's data

    def reset(self, data, why):
        """Restart the observer at the next cycle with effort (residual zero, detector
        released), for the reason ``why``."""
        restart_observer(data.struct)
        self.stepped_reset(why)

    def stepped_reset(self, why):
        """The compiled step found a source or clock reset (``why``) and restarted the
        observer at its cycle, or will at the next cycle with effort (it keeps which); the
        free-motion flag is off."""
        self._pending = why
        self._usual = False

    def finish(self, data, answer, christoffel=False):
        """:attr:`result` of a cycle that the compiled step made on ``data``
        (:class:`~ros_dynamics.estimation.cycle_data.CycleData`) with ``answer``.  Its terms
        (checked finite) are in :attr:`data`; with ``christoffel`` Gamma is computed here
        (Algorithm 2 on the composite inertias the cycle left); the residual it left is judged
        here (:meth:`_judge`), unless it is a free-motion sample (OK or FREE: below every
        contact threshold, the detector is free, no contact frames)."""
        if answer == FREE:             # (only with christoffel: else nothing follows FREE)
            return self._free_with_gamma(data)
        res = self.result
        res.clear()
        dt, _, t_ns = timing(data.struct)
        res.q, res.terms = data.state.q, self.data.dynamics
        if christoffel:
            christoffel_after_terms(self.model, self.data)
        res.out = self.coords.apply(data.state.q, data.state.v, res.terms,
                                    self.data.Gamma if christoffel else None)
        judged = False
        if answer == RESTARTED:   # the compiled step (re)started the observer: r = 0
            self._restarted(res, self._pending or _went_back(dt), t_ns)
            self._pending = None
        elif answer in UPDATES and self.detector is not None:
            bridged = answer == BRIDGED
            res.residual, res.threshold = data.observer.r, self.detector.threshold
            res.observer, res.dt = 'bridge' if bridged else 'update', dt
            self.bridged += bridged
            self._pending = None
            judged = answer != OK or self.contact_forces is not None or \
                not self.detector.free
            if not judged:
                res.contact = self.detector.free_sample()      # the usual case: free motion
        plain = not (judged or christoffel or res.out.d is not res.terms)  # (coordinates)
        if not plain:
            try:
                if judged:
                    self._judge(data, res, ObserverUpdate(
                        v=data.observer.v, tau=data.observer.tau, dt=dt,
                        bridge=res.observer == 'bridge'))
                res.error = self._nonfinite(res, christoffel)
            except Exception as exc:  # noqa: BLE001 - nothing is published if any step fails
                res.error = _failed(exc)
        self._free(data, res, plain and answer in (OK, FREE) and (
            res.contact is not None or self.detector is None))
        if res.error is not None:
            self.reset(data, f'{res.error} at the previous joint state')
        return res

    def _free(self, data, res, usual):
        """The free-motion flag after ``res`` (module text)."""
        if usual and not self._usual:
            self.free.copy_from(res)
        if usual != self._usual:
            set_usual(data.struct, usual)
            self._usual = usual

    def _free_with_gamma(self, data):
        """:attr:`result` of a free-motion cycle that asks for Gamma: the free result, and
        Gamma in the model's own coordinates (a free result's)."""
        res = self.result
        res.copy_from(self.free)
        christoffel_after_terms(self.model, self.data)
        res.out = Output(data.state.q, data.state.v, res.terms, self.data.Gamma)
        if not math.isfinite(self.data.Gamma.sum()):
            res.error = 'non-finite Gamma computed'
            self.reset(data, f'{res.error} at the previous joint state')
        return res

    def refused_nonfinite(self, data):
        """Why a cycle whose M, C, dM/dt, g or residual the compiled step found not finite
        publishes nothing; the observer restarts at the next cycle."""
        error = 'non-finite M, C, dM/dt, g or observer residual computed'
        self.reset(data, f'{error} at the previous joint state')
        return error

    def refused_state(self, data):
        """The core's reason for a state that the compiled step refused (its terms declined
        it, e.g. a floating base's quaternion not a unit one: the core's validation explains
        the code); the observer restarts at the next cycle."""
        self.result.clear()
        try:
            compute_all_terms(self.model, data.state.q, data.state.v, self.data)
            error = 'the dynamics refused this joint state'   # (not reached: explained)
        except Exception as exc:  # noqa: BLE001 - the core's reason
            error = _failed(exc)
        self.reset(data, f'{error} at the previous joint state')
        return error

    def _restarted(self, res, why, t_ns):
        """The observer (re)started at the sample of ``t_ns`` for the reason ``why``: the
        detector and the contact forces released, the restart recorded in ``res``."""
        self.detector.reset()
        if self.contact_forces is not None:
            self.contact_forces.reset()
        self.last_reset = (why, t_ns)
        res.observer, res.reset_reason = 'reset', why

    def _judge(self, data, res, state):
        """What the residual of an observer update means, into ``res``: with contact frames
        the forces at them and the part of the residual they leave unexplained; the contact
        state (detection with hysteresis, isolation) of that part, or of the residual; the
        contact wrench.  ``state``: the update (an ``ObserverUpdate``)."""
        q, judged = data.state.q, res.residual
        if self.contact_forces is not None:
            res.forces = self.contact_forces.update(q, res.residual, state)
            judged = res.forces.unexplained
        res.contact = self.detector.update(judged, state.v, state.tau)
        self._wrench(q, res, judged)

    def _wrench(self, q, res, judged):
        """The contact wrench from ``judged``: the residual, or with contact frames the part
        of it they leave unexplained (a contact elsewhere)."""
        s, c = self.settings, res.contact
        link = s.wrench_link or c.link
        if c.in_contact and link:
            res.wrench_of(self.model, q, judged, link, s.wrench_point, s.force_only)

    def _nonfinite(self, res, christoffel):
        """Why the cycle's results may not be published (something non-finite), or None (the
        compiled step checked M, C, dM/dt, g and r)."""
        d, out = res.terms, res.out
        if christoffel and not math.isfinite(self.data.Gamma.sum()):
            return 'non-finite Gamma computed'
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
