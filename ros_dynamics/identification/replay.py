"""Recorded samples replayed through the node's own per-sample pipeline (no ROS): the one place
where replay, calibration, identification and ``calibrate check`` meet the node
(:class:`ros_dynamics.estimation.cycle.Cycle`, the object the node runs per joint state)."""

import numpy as np

from ..estimation.cycle import Cycle, ObserverSettings
from .samples import CalibrationError, Samples

__all__ = ['observer_residuals', 'increasing_in_time']


def _cycle(model, gain, friction_viscous, friction_coulomb, threshold, release_ratio,
           torque_offset=0.0, threshold_velocity=0.0, threshold_torque=0.0):
    """The node's own per-sample pipeline (:class:`ros_dynamics.estimation.cycle.Cycle`) with
    these observer settings: the one place where replay and calibration meet the node."""
    settings = ObserverSettings(model, gain=gain, friction_viscous=friction_viscous,
                                friction_coulomb=friction_coulomb,
                                threshold=threshold if threshold is not None else 1e300,
                                release_ratio=release_ratio, torque_offset=torque_offset,
                                threshold_velocity=threshold_velocity,
                                threshold_torque=threshold_torque)
    return Cycle(model, observer=settings)


def observer_residuals(model, samples, gain=50.0, friction_viscous=0.0, friction_coulomb=0.0,
                       threshold=None, release_ratio=0.5, torque_offset=0.0,
                       threshold_velocity=0.0, threshold_torque=0.0):
    """Replay ``samples`` through the node's pipeline; returns a dict with ``t``, ``r``
    (T, nv; NaN where the observer (re)started or skipped the sample: the first sample, gaps
    beyond the pipeline's gap limit, repeated stamps), ``restart`` (T,) bool (the observer
    restarted at that sample), ``bridge`` (T,) bool (it bridged a gap there: the residual
    kept), ``skipped`` (T,) bool, ``contact`` (T,) bool and ``link`` (T,)
    list (with a ``threshold``; ``threshold_velocity``, ``threshold_torque``: its state-dependent
    terms), ``reasons`` (the restarts: (t, why))."""
    cyc = _cycle(model, gain, friction_viscous, friction_coulomb, threshold, release_ratio,
                 torque_offset, threshold_velocity, threshold_torque)
    T, nv = len(samples), int(model.nv)
    r = np.full((T, nv), np.nan)
    restart = np.zeros(T, dtype=bool)
    bridge = np.zeros(T, dtype=bool)
    skipped = np.zeros(T, dtype=bool)
    contact = np.zeros(T, dtype=bool)
    link = [None] * T
    reasons = []
    t0 = int(samples.t0_ns)
    for k in range(T):
        res = cyc.step(samples.q[k], samples.v[k], samples.tau[k],
                       t0 + int(round(samples.t[k] * 1e9)))
        if res.observer in ('update', 'bridge'):
            r[k] = res.residual
            bridge[k] = res.observer == 'bridge'
            if threshold is not None:
                contact[k], link[k] = res.contact.in_contact, res.contact.link
        elif res.observer == 'reset':
            restart[k] = True
            reasons.append((float(samples.t[k]), res.reset_reason))
        else:
            skipped[k] = True
    return {'t': samples.t, 'r': r, 'restart': restart, 'bridge': bridge, 'skipped': skipped,
            'contact': contact, 'link': link, 'reasons': reasons}


def increasing_in_time(samples):
    """The samples with strictly increasing time (repeated stamps dropped: the pipeline skips
    them too)."""
    keep = np.concatenate([[True], np.diff(samples.t) > 0]) if len(samples) else np.zeros(0, bool)
    if keep.all():
        return samples
    if np.any(np.diff(samples.t) < 0):
        raise CalibrationError('sample times must not decrease (sort the samples by stamp)')
    return Samples(samples.t[keep], samples.q[keep], samples.v[keep], samples.tau[keep],
                   samples.names, samples.t0_ns,
                   samples.notes + [f'{int((~keep).sum())} samples with a repeated stamp '
                                    'dropped'])
