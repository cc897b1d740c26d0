"""A legged robot's closed loop judged on the plant's truth (no ROS): the plant's own CoM, base
pose and feet (:class:`~ros_dynamics.simulation.mujoco_legged.TruthRecord`) against what the
controller aimed at, never against the stream or an estimate.

* CoM error: |c_plant(t) − c_ref(t)| at each stamp the controller answered (rms, max);
* falls: episodes with the base below half its start height or tilted more than 45°;
* lifted foot: the largest rise of the lifted foot over its start height in the swing window;
* stance slide: the largest horizontal distance of a foot that stays in stance from where it
  stood when the controller started (the whole run: a robot that creeps counts);
* the lifted foot's normal force in mid-swing (it should be in the air: 0).
"""

import numpy as np

__all__ = ['closed_loop_metrics', 'walk_metrics', 'heading_velocity', 'count_falls',
           'contact_delays']


def closed_loop_metrics(truth, references, lift, swing):
    """``truth``: the record's arrays (``stamp_ns``, ``com``, ``base``, ``feet``,
    ``foot_forces``); ``references`` {stamp ns: c_ref (3,)};
    ``lift``: the lifted foot's index; ``swing`` (t_up, t_down): seconds after the first
    reference.  Returns a dict of figures and the time series (keys starting with ``_``)."""
    stamps = np.asarray(truth['stamp_ns'])
    if not references:
        raise ValueError('no CoM reference recorded')
    t0 = min(references)
    row = {int(s): i for i, s in enumerate(stamps)}
    ks = sorted(k for k in references if k in row)
    if not ks:
        raise ValueError('no reference stamp is a plant stamp')
    idx = np.array([row[k] for k in ks])
    t = (np.array(ks) - t0) * 1e-9
    com = np.asarray(truth['com'])[idx]
    ref = np.array([references[k] for k in ks])
    err = np.linalg.norm(com - ref, axis=1)
    after = stamps >= t0
    base = np.asarray(truth['base'])[after]
    z, quat = base[:, 2], base[:, 3:7]
    tilt = np.degrees(np.arccos(np.clip(1 - 2 * (quat[:, 0] ** 2 + quat[:, 1] ** 2), -1, 1)))
    down = (z < 0.5 * z[0]) | (tilt > 45.0)
    falls = int(np.sum(down[1:] & ~down[:-1]) + (1 if down[0] else 0))
    feet = np.asarray(truth['feet'])[after]
    ta = (stamps[after] - t0) * 1e-9
    stance = [f for f in range(feet.shape[1]) if f != lift]
    slide = np.linalg.norm(feet[:, stance, :2] - feet[0, stance, :2], axis=2)
    in_air = (ta >= swing[0]) & (ta < swing[1])
    rise = feet[:, lift, 2] - feet[0, lift, 2]
    forces = np.asarray(truth['foot_forces'])[after]
    mid = (ta >= swing[0] + 0.25 * (swing[1] - swing[0])) & (ta < swing[1] - 0.25 * (
        swing[1] - swing[0]))
    return {'com_rms_m': float(np.sqrt(np.mean(err ** 2))), 'com_max_m': float(err.max()),
            'falls': falls, 'max_tilt_deg': float(tilt.max()),
            'lift_foot_height_m': float(rise[in_air].max()) if in_air.any() else None,
            'stance_slide_max_m': float(slide.max()),
            'lift_foot_max_normal_force_mid_swing_N': (float(np.abs(forces[mid, lift, 2]).max())
                                                       if mid.any() else None),
            'samples': len(ks), '_stamps': ks, '_t': t, '_com': com, '_ref': ref, '_ta': ta,
            '_rise': rise,
            '_slide': slide.max(axis=1), '_fz': forces[:, :, 2]}


def _quat_matrix(quat):
    """Rotation matrices (T, 3, 3) of quaternions (T, 4) (x, y, z, w)."""
    x, y, z, w = (np.asarray(quat, dtype=float).T / np.linalg.norm(quat, axis=1))
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w),
                               2 * (x * z + y * w)], -1),
                     np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z),
                               2 * (y * z - x * w)], -1),
                     np.stack([2 * (x * z - y * w), 2 * (y * z + x * w),
                               1 - 2 * (x * x + y * y)], -1)], -2)


def heading_velocity(base, twist):
    """(T, 3): the base's linear velocity in its heading frame (x forward, y left, yaw only)
    and its yaw rate [rad/s], from the plant's base pose (T, 7) and twist (T, 6, base frame)."""
    R = _quat_matrix(np.asarray(base)[:, 3:7])
    v = np.einsum('tij,tj->ti', R, np.asarray(twist)[:, :3])
    w = np.einsum('tij,tj->ti', R, np.asarray(twist)[:, 3:6])
    yaw = np.arctan2(R[:, 1, 0], R[:, 0, 0])
    c, s = np.cos(yaw), np.sin(yaw)
    return np.stack([c * v[:, 0] + s * v[:, 1], -s * v[:, 0] + c * v[:, 1], w[:, 2]], -1)


def count_falls(base, ground):
    """Episodes with the base below half its start height above the ground under it, or
    tilted more than 45°, and the largest tilt [deg]."""
    base = np.asarray(base)
    h = base[:, 2] - ground
    quat = base[:, 3:7]
    tilt = np.degrees(np.arccos(np.clip(1 - 2 * (quat[:, 0] ** 2 + quat[:, 1] ** 2), -1, 1)))
    down = (h < 0.5 * h[0]) | (tilt > 45.0)
    return int(np.sum(down[1:] & ~down[:-1]) + (1 if down[0] else 0)), float(tilt.max())


def _debounced_on(x, hold):
    """Indices where ``x`` turns on, and where it turns off, after at least ``hold`` samples
    in the other state (a bouncing contact counts once)."""
    on, off, run = [], [], 1
    for k in range(1, len(x)):
        if x[k] != x[k - 1]:
            if run >= hold:
                (on if x[k] else off).append(k)
            run = 1
        else:
            run += 1
    return np.array(on, dtype=int), np.array(off, dtype=int)


def contact_delays(estimate, truth, dt, hold=10, window=0.1):
    """Touch-down and lift-off delays [s] of ``estimate`` (T, n) against ``truth`` (T, n):
    for each transition of the truth (after ``hold`` samples in the other state), the time to
    the estimate's nearest such transition within ``window`` s (missed ones are counted)."""
    out = {'touchdown': [], 'liftoff': [], 'missed': 0}
    for i in range(truth.shape[1]):
        t_on, t_off = _debounced_on(truth[:, i], hold)
        e_on, e_off = _debounced_on(estimate[:, i], 1)
        for ref, mine, key in ((t_on, e_on, 'touchdown'), (t_off, e_off, 'liftoff')):
            for j in ref:
                near = mine[np.abs(mine - j) * dt <= window] if mine.size else mine
                if near.size:
                    out[key].append(float((near[np.argmin(np.abs(near - j))] - j) * dt))
                else:
                    out['missed'] += 1
    return out


def walk_metrics(out, commands, settle=0.5, window=2.0):
    """The figures of a walk (:func:`~ros_dynamics.simulation.legged_walk.walk` or the
    simulator node's truth record with the node's contact states): falls, the base's mean
    velocity in its heading frame and yaw rate over the last ``window`` s of each command
    (``commands``: (t, (vx, vy, wz)) ..., held until the next or the end) against it, the
    contact estimate against MuJoCo's contacts after ``settle`` s (agreement, delays, touch-downs
    reported while the foot is >= 1 cm above the ground: its ``clearance`` to the terrain when
    the walk has it, a foot on a step's corner being on the ground) and, where the walk has
    the node's unexplained part, how it finds a push on the trunk (:func:`push_in_unexplained`
    against the push's generalized force through the observer's K/(s+K))."""
    t = (np.asarray(out['stamp_ns']) - out['stamp_ns'][0]) * 1e-9
    base = np.asarray(out['base'])
    falls, tilt = count_falls(base, _ground_under(base, out))
    vel = heading_velocity(base, out['twist'])
    segments = []
    ends = [c[0] for c in commands[1:]] + [t[-1] + out.get('dt', 1e-3)]
    for (start, cmd), end in zip(commands, ends):
        sel = (t >= max(start, end - window)) & (t < end)
        mean = vel[sel].mean(axis=0) if sel.any() else np.full(3, np.nan)
        segments.append({'command': list(cmd), 'from_s': float(max(start, end - window)),
                         'to_s': float(end), 'mean': mean.tolist(),
                         'error': (mean - np.asarray(cmd, dtype=float)).tolist()})
    res = {'falls': falls, 'max_tilt_deg': tilt, 'segments': segments}
    if 'estimate' in out:
        m = t >= settle
        est, truth = np.asarray(out['estimate'])[m], np.asarray(out['touching'])[m]
        height = (np.asarray(out['clearance'])[m] if 'clearance' in out else
                  np.asarray(out['feet'])[m, :, 2] - np.asarray(out['ground'])[m]
                  - out.get('foot_radius', 0.0))
        on = np.zeros_like(est)
        on[1:] = est[1:] & ~est[:-1]
        d = contact_delays(est, truth, out.get('dt', 1e-3))
        res.update(contact_agreement=float((est == truth).mean()),
                   touchdown_delay_s=_spread(d['touchdown']), liftoff_delay_s=_spread(
                       d['liftoff']), transitions_missed=d['missed'],
                   touchdowns_reported_above_1cm=int(np.sum(on & (height >= 0.01))))
    if 'unexplained' in out and 'push_generalized' in out:
        res.update(push_in_unexplained(t, out['unexplained'], observer_filtered(
            out['push_generalized'], out['observer_gain'], out.get('dt', 1e-3)),
            out.get('dt', 1e-3)))
    return res


def observer_filtered(x, gain, dt):
    """``x`` (T, ...) through the momentum observer's K/(s+K) at ``gain`` [1/s], discretized
    at ``dt`` as the node's observer sees it: r_0 = 0 (the observer's first sample has no
    momentum before it), r_k = a r_{k-1} + (1 - a) x_k, a = exp(-K dt) (observer.py; what the
    residual of a force ``x`` is, the reference the foot forces and the unexplained part are
    judged against)."""
    x = np.asarray(x, dtype=float)
    a, out = float(np.exp(-gain * dt)), np.zeros_like(x)
    for k in range(1, len(x)):
        out[k] = a * out[k - 1] + (1.0 - a) * x[k]
    return out


def push_in_unexplained(t, unexplained, push, dt):
    """How the unexplained part ``unexplained`` (T, nv) finds a push whose generalized force
    through K/(s+K) is ``push`` (T, nv, :func:`observer_filtered`; the plant's truth), over
    the samples where that exceeds 90 % of its peak: its relative error per sample
    (``push_relative_error``), the same for the change of the unexplained part from its mean
    over the 0.5 s before the push (``push_change_error``: what a constant model error, a
    hidden load, leaves is removed), that change of the mean over the push
    (``push_mean_change_error``: a trot's own ripple averaged out) and the lag of the
    unexplained part behind the push (``push_lag`` [s], the shift within ±0.1 s that fits it
    best over the push and 0.2 s around it).  Each None without a push."""
    t, u, p = np.asarray(t), np.asarray(unexplained), np.asarray(push)
    norm = np.linalg.norm(p, axis=1)
    none = dict(push_relative_error=None, push_change_error=None, push_mean_change_error=None,
                push_lag=None)
    if not norm.max() > 0:
        return none
    sel = norm > 0.9 * norm.max()
    size = norm[sel].mean()
    idx = np.flatnonzero(norm > 0)                # the samples the push reaches
    before = (t >= t[idx[0]] - 0.5) & (t < t[idx[0]])
    change = u - u[before].mean(axis=0)
    win = np.arange(max(idx[0] - 200, 100), min(idx[-1] + 200, len(t) - 100))
    shifts = np.arange(-100, 101)
    cost = [np.linalg.norm(u[win + s] - p[win], axis=1).mean() for s in shifts]
    return dict(
        push_relative_error=float(np.linalg.norm(u[sel] - p[sel], axis=1).mean() / size),
        push_change_error=float(np.linalg.norm(change[sel] - p[sel], axis=1).mean() / size),
        push_mean_change_error=float(np.linalg.norm(change[sel].mean(axis=0)
                                                    - p[sel].mean(axis=0)) / size),
        push_lag=float(shifts[int(np.argmin(cost))] * dt))


def _ground_under(base, out):
    """The ground's height under the base (the terrain of the plant's options, if any)."""
    ground = out.get('ground_fn')
    return ground(np.asarray(base)[:, 0]) if ground is not None else 0.0


def _spread(x):
    """(median, p90, max, count) of a list (None when empty)."""
    if not x:
        return None
    x = np.asarray(x)
    return [float(np.median(x)), float(np.percentile(x, 90)), float(x.max()), int(x.size)]
