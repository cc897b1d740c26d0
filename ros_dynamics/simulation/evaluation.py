"""Evaluation of the contact observer against the simulator's ground truth (no ROS): run a
:class:`~ros_dynamics.simulation.plant.Simulator` through an observer and a detector
(:func:`simulate_observer`) and summarize detection delays, isolation and false alarms
(:func:`detection_metrics`)."""

import numpy as np

from ..estimation.observer import estimate_contact_wrench

__all__ = ['simulate_observer', 'detection_metrics', 'runs']


def simulate_observer(sim, observer, detector=None, duration=10.0, estimate_force=False):
    """Run ``sim`` for ``duration`` s feeding every sample to ``observer`` (and ``detector``).

    Returns a dict of arrays: ``t``, ``r`` (residual), ``tau_ext`` (truth), ``contact`` (truth),
    ``detected``, ``link`` (isolated link per sample, None when free), ``true_link`` (first
    true contact link or None), and with ``estimate_force`` ``force_err`` (relative error of the
    force-only estimate at the true link and point, NaN when not applicable).
    """
    n = int(round(duration / sim.dt))
    nv = int(sim.model.nv)
    res = {'t': np.empty(n + 1), 'r': np.zeros((n + 1, nv)), 'tau_ext': np.zeros((n + 1, nv)),
           'contact': np.zeros(n + 1, dtype=bool), 'detected': np.zeros(n + 1, dtype=bool),
           'link': [None] * (n + 1), 'true_link': [None] * (n + 1),
           'force_err': np.full(n + 1, np.nan), 'dt': sim.dt}
    s = sim.initial_sample()
    observer.reset(s.q, s.v)
    res['t'][0] = s.t
    for i in range(1, n + 1):
        s = sim.step()
        r = observer.update(s.q, s.v, s.tau, sim.dt)
        res['t'][i], res['r'][i] = s.t, r
        res['tau_ext'][i], res['contact'][i] = s.tau_ext, s.contact
        if s.contact_links:
            res['true_link'][i] = s.contact_links[0]
        if detector is not None:
            st = detector.update(r)
            res['detected'][i] = st.in_contact
            res['link'][i] = st.link
        if estimate_force and len(s.contact_links) == 1 and not np.any(s.wrenches[0][3:]):
            F = estimate_contact_wrench(sim.model, s.q, r, s.contact_links[0],
                                        s.contact_points[0], force_only=True)
            f_true = s.wrenches[0][:3]
            nf = np.linalg.norm(f_true)
            if nf > 0:
                res['force_err'][i] = np.linalg.norm(F[:3] - f_true) / nf
    return res


def runs(mask):
    """(start, end) index pairs of the maximal runs of True in ``mask`` (end exclusive)."""
    m = np.concatenate([[False], np.asarray(mask, dtype=bool), [False]])
    d = np.flatnonzero(np.diff(m.astype(int)))
    return list(zip(d[0::2], d[1::2]))


def detection_metrics(res, gain=None, settle=None, fp_guard=0.3):
    """Summary of a :func:`simulate_observer` run.

    * per true contact episode: detection delay [s] (from the start of the first sample period
      with contact to the first detector onset; 0 if already detected; NaN if missed), the
      isolated link once settled (at ``settle`` s after the onset, default ``5/gain``, or the
      episode end), the true link, and the mean force error over the settled part;
    * ``false_onsets``: detector onsets with no true contact during the preceding ``fp_guard``
      seconds; ``false_time``: seconds flagged in contact while the truth had been free for
      ``fp_guard`` s.
    """
    t, dt = res['t'], res['dt']
    det, con = res['detected'], res['contact']
    if settle is None:
        settle = 5.0 / float(np.min(gain)) if gain is not None else 0.1
    episodes = []
    for a, b in runs(con):
        onset = [i for i in range(a, min(len(t), b + int(0.5 / dt))) if det[i]]
        delay = np.nan   # from the start of the first contact period (t[a] - dt)
        if onset:
            # by time, not by sample count: the samples may have gaps (a ROS listener's)
            delay = t[onset[0]] - (t[a] - dt) if not (a > 0 and det[a - 1]) else 0.0
        k = min(b - 1, a + int(round(settle / dt)))
        fe = res['force_err'][k:b]
        fe = fe[np.isfinite(fe)]
        episodes.append({'start': float(t[a] - dt), 'end': float(t[b - 1]), 'delay': float(delay),
                         'true_link': res['true_link'][a], 'link': res['link'][k],
                         'force_err': float(np.mean(fe)) if fe.size else np.nan})
    guard = int(round(fp_guard / dt))
    recent = np.convolve(con.astype(float), np.ones(guard + 1))[:len(con)] > 0
    onsets = np.flatnonzero(det[1:] & ~det[:-1]) + 1
    false_onsets = int(np.sum(~recent[onsets]))
    false_time = float(np.sum(det & ~recent) * dt)
    return {'episodes': episodes, 'false_onsets': false_onsets, 'false_time': false_time,
            'duration': float(t[-1] - t[0])}
