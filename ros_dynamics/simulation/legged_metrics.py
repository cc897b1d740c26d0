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

__all__ = ['closed_loop_metrics']


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
