"""MuJoCo's contact forces on a legged robot's feet, for the legged plants
(:mod:`.mujoco_quadruped`, :mod:`.mujoco_legged`): what their metrics are judged on."""
import numpy as np

__all__ = ['foot_contact_forces']


def foot_contact_forces(mj, m, d, foot_body):
    """Per foot (``foot_body``: MuJoCo body id -> foot index) the sum of MuJoCo's contact
    forces on it (world axes, (n, 3)) and whether one of its contacts pushes (normal force
    > 0, (n,) bool), from MuJoCo's own contact data after a step (``mj``: the mujoco module).
    The contacts' arrays are read whole (``d.contact.geom1`` ...): Python per contact costs
    more than the step itself on a robot with four feet."""
    n = len(foot_body)
    forces, touching = np.zeros((n, 3)), np.zeros(n, dtype=bool)
    ncon = d.ncon
    if ncon == 0:
        return forces, touching
    con = d.contact
    body1, body2 = m.geom_bodyid[con.geom1], m.geom_bodyid[con.geom2]
    on2 = np.array([b in foot_body for b in body2.tolist()])
    foot = np.array([foot_body.get(b2, foot_body.get(b1, -1))
                     for b1, b2 in zip(body1.tolist(), body2.tolist())])
    mine = foot >= 0
    f6 = np.zeros((ncon, 6))
    for i in np.flatnonzero(mine).tolist():
        mj.mj_contactForce(m, d, i, f6[i])            # the contact frame's axes
    # on geom2, from geom1, world axes: frameᵀ f (frame's rows: normal, tangents)
    fw = np.einsum('kji,kj->ki', con.frame.reshape(-1, 3, 3), f6[:, :3])
    fw[~on2] *= -1.0
    np.add.at(forces, foot[mine], fw[mine])
    touching[foot[mine & (f6[:, 0] > 0.0)]] = True      # a contact of MuJoCo's that pushes
    return forces, touching
