"""MuJoCo's contact forces on a legged robot's feet, for the legged plants
(:mod:`.mujoco_quadruped`, :mod:`.mujoco_legged`): what their metrics are judged on."""
import numpy as np

__all__ = ['foot_contact_forces']


def foot_contact_forces(mj, m, d, foot_body):
    """Per foot (``foot_body``: MuJoCo body id -> foot index) the sum of MuJoCo's contact
    forces on it (world axes, (n, 3)) and whether one of its contacts pushes (normal force
    > 0, (n,) bool), from MuJoCo's own contact data after a step (``mj``: the mujoco module)."""
    n = len(foot_body)
    forces, touching, f6 = np.zeros((n, 3)), np.zeros(n, dtype=bool), np.zeros(6)
    for i in range(d.ncon):
        c = d.contact[i]
        b1, b2 = m.geom_bodyid[c.geom1], m.geom_bodyid[c.geom2]
        foot = foot_body.get(b2, foot_body.get(b1))
        if foot is None:
            continue
        mj.mj_contactForce(m, d, i, f6)
        fw = c.frame.reshape(3, 3).T @ f6[:3]     # on geom2, from geom1, world axes
        forces[foot] += fw if b2 in foot_body else -fw
        touching[foot] |= f6[0] > 0.0             # a contact of MuJoCo's that pushes
    return forces, touching
