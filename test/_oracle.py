"""Shared helpers for the differential tests: example-robot-data paths and Pinocchio models
with the joints mapped to ours by name (Pinocchio orders joints differently on branched URDFs)."""

import glob
import os
import sys

import numpy as np

import ros_dynamics as rd


def erd_urdf(relative):
    """Path of an example-robot-data URDF, e.g. 'panda_description/urdf/panda.urdf'."""
    roots = [sys.prefix] + [os.path.dirname(os.path.dirname(p)) for p in sys.path if p.endswith('site-packages')]
    for root in roots:
        for path in glob.glob(os.path.join(root, '**', 'example-robot-data', 'robots', relative), recursive=True):
            return path
    raise FileNotFoundError(f'example-robot-data file {relative} not found '
                            '(pip install example-robot-data; requirements-dev.txt)')


#: (id, URDF path thunk, floating base) of the real robots the differential tests run on
REAL_ROBOTS = [
    ('panda', lambda: erd_urdf('panda_description/urdf/panda.urdf'), False),
    ('ur5', lambda: erd_urdf('ur_description/urdf/ur5_robot.urdf'), False),
    ('anymal_floating', lambda: erd_urdf('anymal_c_simple_description/urdf/anymal.urdf'), True),
    ('go1_floating', lambda: erd_urdf('go1_description/urdf/go1.urdf'), True),
    ('arm7', lambda: rd.bundled_urdf('arm7'), False),
    ('quadruped_fixed', lambda: rd.bundled_urdf('quadruped'), False),
    ('quadruped_floating', lambda: rd.bundled_urdf('quadruped'), True),
]


class PinocchioOracle:
    """Pinocchio model of the same URDF with index maps from our q/v layout to Pinocchio's."""

    def __init__(self, path, model):
        import pinocchio as pin
        self.pin = pin
        if model.floating_base:
            self.pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
        else:
            self.pm = pin.buildModelFromUrdf(path)
        self.pd = self.pm.createData()
        self.model = model
        first = 2 if model.floating_base else 1          # skip 'universe' (and the free flyer)
        names = list(self.pm.names)[first:]
        fb_q, fb_v = (7, 6) if model.floating_base else (0, 0)
        iq = [self.pm.idx_qs[self.pm.getJointId(n)] for n in model.joint_names]
        iv = [self.pm.idx_vs[self.pm.getJointId(n)] for n in model.joint_names]
        assert sorted(names) == sorted(model.joint_names), (names, model.joint_names)
        self.q_index = np.array(list(range(fb_q)) + iq)
        self.v_index = np.array(list(range(fb_v)) + iv)

    def q(self, q):
        out = np.empty(self.pm.nq)
        out[self.q_index] = q
        return out

    def v(self, v):
        out = np.empty(self.pm.nv)
        out[self.v_index] = v
        return out

    def vec(self, x):                      # Pinocchio vector -> our order
        return np.asarray(x)[self.v_index]

    def mat(self, A):                      # Pinocchio matrix -> our order
        return np.asarray(A)[np.ix_(self.v_index, self.v_index)]

    def mass_matrix(self, q):
        M = self.pin.crba(self.pm, self.pd, self.q(q))
        return self.mat(np.triu(M) + np.triu(M, 1).T)

    def coriolis(self, q, v):
        return self.mat(self.pin.computeCoriolisMatrix(self.pm, self.pd, self.q(q), self.v(v)))

    def gravity(self, q):
        return self.vec(self.pin.computeGeneralizedGravity(self.pm, self.pd, self.q(q)))

    def rnea(self, q, v, a):
        return self.vec(self.pin.rnea(self.pm, self.pd, self.q(q), self.v(v), self.v(a)))

    def aba(self, q, v, tau):
        return self.vec(self.pin.aba(self.pm, self.pd, self.q(q), self.v(v), self.v(tau)))

    def christoffel(self, q):
        """Gamma[:, :, k] = C(q, e_k): C is linear in v (the 'Pinocchio route')."""
        n = self.model.nv
        G = np.empty((n, n, n))
        for k in range(n):
            e = np.zeros(n)
            e[k] = 1.0
            G[:, :, k] = self.coriolis(q, e)
        return G


def random_state(model, rng, scale=1.0):
    q = rng.uniform(-np.pi, np.pi, model.nq)
    if model.floating_base:
        q[0:3] = rng.uniform(-1, 1, 3)
        q[3:7] = rng.normal(size=4)
        q[3:7] /= np.linalg.norm(q[3:7])
    return q, scale * rng.uniform(-2, 2, model.nv), rng.uniform(-3, 3, model.nv)


def rel_err(a, b):
    """max |a - b| / max(1, max |b|): relative to the size of the reference."""
    a, b = np.asarray(a), np.asarray(b)
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))
