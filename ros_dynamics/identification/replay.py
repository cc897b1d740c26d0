"""Recorded samples replayed through the cycle the node runs (no ROS): the one place where
calibration, identification and ``calibrate check`` meet the node
(:func:`ros_dynamics.estimation.cycle.node_cycle` and
:func:`~ros_dynamics.estimation.cycle.replay`)."""

import numpy as np

from ..estimation.cycle_state import ObserverSettings
from ..estimation.cycle import node_cycle, replay
from .samples import CalibrationError, Samples

__all__ = ['observer_residuals', 'increasing_in_time', 'without_refused']


def _cycle(model, gain, friction_viscous, friction_coulomb, threshold, release_ratio,
           torque_offset=0.0, **settings):
    """The node's own cycle (:func:`ros_dynamics.estimation.cycle.node_cycle`) with
    these observer settings (``settings``: the threshold's growth terms and the contact-force
    ones, e.g. contact_frames: :class:`~ros_dynamics.estimation.cycle_state.ObserverSettings`)."""
    settings = ObserverSettings(model, gain=gain, friction_viscous=friction_viscous,
                                friction_coulomb=friction_coulomb,
                                threshold=threshold if threshold is not None else 1e300,
                                release_ratio=release_ratio, torque_offset=torque_offset,
                                **settings)
    return node_cycle(model, settings)


def observer_residuals(model, samples, gain=50.0, friction_viscous=0.0, friction_coulomb=0.0,
                       threshold=None, release_ratio=0.5, torque_offset=0.0, **settings):
    """Replay ``samples`` through the node's cycle; returns a dict with ``t``, ``r``
    (T, nv; NaN where the observer (re)started or skipped the sample: the first sample,
    repeated stamps, a sample the node refuses), ``restart`` (T,) bool (the observer
    restarted at that sample), ``bridge`` (T,) bool (it bridged a gap there: the residual
    kept), ``skipped`` (T,) bool, ``refused`` {index: kind} (the samples the node refuses, e.g.
    beyond its input bounds; skipped too), ``contact`` (T,) bool and ``link`` (T,)
    list (with a ``threshold``), ``reasons`` (the restarts: (t, why)).  ``settings``: the
    threshold's state-dependent terms (``threshold_velocity``, ``threshold_torque``) and the
    node's contact-force settings
    (:class:`~ros_dynamics.estimation.cycle_state.ObserverSettings`: ``contact_frames``,
    ``contact_force_threshold``, ``odom_twist_noise``, ...); with contact frames also
    ``unexplained`` (T, nv), ``forces`` (T, k, 3) and ``in_contact`` (T, k) of
    ``~/contact_forces`` (NaN, False where the observer did not update)."""
    cyc = _cycle(model, gain, friction_viscous, friction_coulomb, threshold, release_ratio,
                 torque_offset, **settings)
    T, nv = len(samples), int(model.nv)
    k_frames = len(settings.get('contact_frames', ()))
    feet = {'unexplained': np.full((T, nv), np.nan), 'forces': np.full((T, k_frames, 3), np.nan),
            'in_contact': np.zeros((T, k_frames), dtype=bool)} if k_frames else {}
    r = np.full((T, nv), np.nan)
    restart = np.zeros(T, dtype=bool)
    bridge = np.zeros(T, dtype=bool)
    skipped = np.zeros(T, dtype=bool)
    refused = {}
    contact = np.zeros(T, dtype=bool)
    link = [None] * T
    reasons = []
    for k, out in replay(cyc, samples):
        res = out.result
        if out.verdict != 'cycle':
            skipped[k] = True
            if out.verdict == 'refused':
                refused[k] = out.refusal[0]
        elif res.observer in ('update', 'bridge'):
            r[k] = res.residual
            bridge[k] = res.observer == 'bridge'
            if feet and res.forces is not None:
                feet['unexplained'][k] = res.forces.unexplained
                feet['forces'][k] = res.forces.wrenches[:, :3]
                feet['in_contact'][k] = res.forces.in_contact
            if threshold is not None:
                contact[k], link[k] = res.contact.in_contact, res.contact.link
        elif res.observer == 'reset':
            restart[k] = True
            reasons.append((float(samples.t[k]), res.reset_reason))
        else:
            skipped[k] = True
    return {'t': samples.t, 'r': r, 'restart': restart, 'bridge': bridge, 'skipped': skipped,
            'contact': contact, 'link': link, 'reasons': reasons, 'refused': refused, **feet}


def without_refused(model, samples, replayed):
    """The samples without those the node refuses (``replayed['refused']`` of
    :func:`observer_residuals`): the node's observer never sees them, so a fit on the rest sees
    what the node sees.  Returns the samples (the same object when none is refused)."""
    refused = replayed['refused']
    if not refused:
        return samples
    keep = np.ones(len(samples), dtype=bool)
    keep[list(refused)] = False
    kinds = sorted(set(refused.values()))
    t = samples.t[~keep]
    return Samples(samples.t[keep], samples.q[keep], samples.v[keep], samples.tau[keep],
                   samples.names, samples.t0_ns,
                   samples.notes + [f'{len(refused)} samples the node refuses ({", ".join(kinds)}; '
                                    f'{t.min():.2f}-{t.max():.2f} s) left out, as the node leaves '
                                    'them out'])


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
