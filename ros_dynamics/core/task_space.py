"""What a whole-body controller writes its tasks with: the task frames, resolved once, and the
result of :func:`ros_dynamics.task_space` (frame_kinematics.py and centroidal.py compute it).

``frames = rd.task_frames(model, ['LF_FOOT', 'RF_FOOT'])`` resolves the names once (any of
``model.frame_names``: the links, and the links that fixed joints merged into a body or into the
world); ``ts = rd.task_space(model, q, v, frames, data=data)`` fills a :class:`TaskSpace`:

    ts.rotations (k, 3, 3), ts.positions (k, 3)   world pose of each frame
    ts.jacobians (k, 6, nv)                       rows: origin linear velocity, then angular
                                                  velocity, world axes (LOCAL_WORLD_ALIGNED)
    ts.jacobian_dot_v (k, 6)                      dJ/dt v: the origin's classical acceleration
                                                  and the angular acceleration at dv/dt = 0
    ts.mass, ts.com (3), ts.com_velocity (3)      total mass, centre of mass and its velocity
    ts.centroidal_matrix (6, nv)                  A_G: linear momentum rows, then angular
                                                  momentum about the CoM, world axes (h_G = A_G v)
    ts.centroidal_bias (6)                        dA_G/dt v (dh_G/dt = A_G dv/dt + dA_G/dt v)

With a fixed base, mass, CoM and A_G count the moving bodies only.
"""

import numpy as np

from .data import output


class TaskFrames:
    """Task frames of a model, resolved once (constant): ``names`` (tuple), ``body`` (int64[k]:
    the body each frame is fixed in, -1 for the world) and ``local`` ((k, 12): the frame's
    rotation, row-major, then its origin, in that body's frame).  Not to be modified (left
    writeable: the compiled kernel takes writeable arrays, dispatched faster)."""

    def __init__(self, names, resolved, nbodies):
        self.names = tuple(names)
        self.nbodies = nbodies
        body = np.array([b for b, _, _ in resolved], dtype=np.int64).reshape(-1)
        local = np.array([np.concatenate([np.ravel(R), p]) for _, R, p in resolved],
                         dtype=np.float64).reshape(-1, 12)
        self.body, self.local = body, np.ascontiguousarray(local)

    def __len__(self):
        return len(self.names)

    def __repr__(self):
        return f'<ros_dynamics.TaskFrames: {list(self.names)}>'


class TaskSpace:
    """Task-frame and centroidal terms at one state (module docstring).  The frame arrays are
    this object's; the centroidal ones are views of the buffer it was made with (a Data's:
    overwritten by the next call with that Data)."""

    def __init__(self, model, frames, work):
        k, nv = len(frames), model.nv
        self.task_frames = frames
        self.frames = frames.names
        self.work = work                                     # the buffer its centroidal arrays view
        self.rotations = np.zeros((k, 3, 3))
        self.positions = np.zeros((k, 3))
        self.jacobians = np.zeros((k, 6, nv))
        self.jacobian_dot_v = np.zeros((k, 6))
        self.centroidal_matrix = output(model, work, 'A_G')
        self.centroidal_bias = output(model, work, 'A_G_dot_v')
        self.centroid = output(model, work, 'centroid')      # [mass, com, com_velocity]
        self.com = self.centroid[1:4]
        self.com_velocity = self.centroid[4:7]

    @property
    def mass(self):
        """Total mass [kg] (the moving bodies' with a fixed base)."""
        return float(self.centroid[0])

    def __repr__(self):
        return f'<ros_dynamics.TaskSpace: frames {list(self.frames)}, mass {self.mass:.6g} kg>'
