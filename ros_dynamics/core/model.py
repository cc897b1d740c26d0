"""The kinematic tree (constant): what the algorithms read, never write.

A :class:`Model` holds the topology and the constant geometry and inertia of the moving
bodies after fixed joints have been merged (Featherstone's "model" of a rigid-body tree,
Pinocchio's ``Model``).  Per-call scratch lives inside the compiled kernels, so one model can
be used from several threads at once.

Numbering (seed 000, Sec. 2.2): bodies are numbered so that ``parent[i] < i``; ``-1`` is the
fixed world (the URDF root for a fixed base).  Each body has one joint with ``nv_i`` DoF
(1 for revolute/prismatic, 6 for the free joint of a floating base).  Joint velocities are
numbered body by body, so ``v_idx`` is increasing and the DoF tree (``dof_parent``) is the
expanded tree of Featherstone's branch-induced sparsity (seed 003): ``dof_parent[s] < s``.
"""

import numpy as np

# Joint types (``jtype``).
REVOLUTE = 0     # revolute and continuous: q = angle about ``axis``
PRISMATIC = 1    # q = displacement along ``axis``
FREE = 2         # 6-DoF free joint at the root: q = [x y z qx qy qz qw], v = [v_lin, omega] (body frame)

JOINT_NQ = {REVOLUTE: 1, PRISMATIC: 1, FREE: 7}
JOINT_NV = {REVOLUTE: 1, PRISMATIC: 1, FREE: 6}


class Model:
    """Rigid-body tree with flat arrays for the compiled kernels.

    Array attributes (N bodies, nv DoF):

    ``parent`` int64[N]      parent body, -1 for the world
    ``jtype`` int64[N]       REVOLUTE, PRISMATIC or FREE
    ``q_idx``, ``v_idx``     first index of the body's joint in q and v
    ``X_R`` float[N,3,3]     rotation of the joint frame in the parent body frame
    ``X_p`` float[N,3]       origin of the joint frame in the parent body frame
    ``axis`` float[N,3]      joint axis in the joint (= body) frame, unit length
    ``mass`` float[N]; ``com`` float[N,3]; ``inertia`` float[N,3,3] (about the CoM, body frame)
    ``dof_body`` int64[nv]   body of each DoF; ``dof_parent`` int64[nv]: DoF-tree parent (-1: none)
    ``gravity`` float[3]     gravitational acceleration in the world frame

    ``warnings``: what the URDF loader skipped or assumed (a tuple of messages; empty for a
    model made otherwise, e.g. by :meth:`copy`).
    """

    warnings = ()

    def __init__(self, *, name, body_names, joint_names, parent, jtype, X_R, X_p, axis,
                 mass, com, inertia, link_frames, floating_base, gravity=(0.0, 0.0, -9.81),
                 root_link='', mimic=None, joint_limits=None):
        self.name = name
        self.body_names = list(body_names)
        self.floating_base = bool(floating_base)
        self.root_link = root_link
        self.parent = np.ascontiguousarray(parent, dtype=np.int64)
        self.jtype = np.ascontiguousarray(jtype, dtype=np.int64)
        N = len(self.parent)              # 0: a robot without moving joints (fixed base, nv = 0)
        for i in range(N):
            if not -1 <= self.parent[i] < i:
                raise ValueError('bodies must be numbered so that parent[i] < i')
            if self.jtype[i] == FREE and self.parent[i] != -1:
                raise ValueError('a free joint is only supported at the root')
        self.X_R = np.ascontiguousarray(X_R, dtype=np.float64).reshape(N, 3, 3)
        self.X_p = np.ascontiguousarray(X_p, dtype=np.float64).reshape(N, 3)
        self.axis = np.ascontiguousarray(axis, dtype=np.float64).reshape(N, 3)
        self.mass = np.ascontiguousarray(mass, dtype=np.float64).reshape(N)
        self.com = np.ascontiguousarray(com, dtype=np.float64).reshape(N, 3)
        self.inertia = np.ascontiguousarray(inertia, dtype=np.float64).reshape(N, 3, 3)
        self.gravity = np.ascontiguousarray(gravity, dtype=np.float64).reshape(3)

        nq_i = np.array([JOINT_NQ[int(t)] for t in self.jtype], dtype=np.int64)
        nv_i = np.array([JOINT_NV[int(t)] for t in self.jtype], dtype=np.int64)
        self.q_idx = (np.cumsum(nq_i) - nq_i).astype(np.int64)
        self.v_idx = (np.cumsum(nv_i) - nv_i).astype(np.int64)
        self.nq = int(nq_i.sum())
        self.nv = int(nv_i.sum())
        self.nbodies = N

        # DoF tree: within a multi-DoF joint each DoF hangs on the previous one, the first DoF of
        # a joint on the last DoF of the parent body's joint (expanded tree, seed 003).
        self.dof_body = np.repeat(np.arange(N, dtype=np.int64), nv_i)
        self.dof_parent = np.empty(self.nv, dtype=np.int64)
        for i in range(N):
            s0 = self.v_idx[i]
            p = self.parent[i]
            self.dof_parent[s0] = -1 if p < 0 else self.v_idx[p] + nv_i[p] - 1
            for s in range(s0 + 1, s0 + nv_i[i]):
                self.dof_parent[s] = s - 1

        self.joint_names = list(joint_names)          # the named (non-free) joints, in v order
        if len(self.joint_names) != self.nv - (6 if self.floating_base else 0):
            raise ValueError('joint_names does not match the joint layout')
        # link name -> (body index or -1 for the world, R, p of the link frame in the body frame)
        self.link_frames = dict(link_frames)
        self.mimic = dict(mimic or {})                # joint -> (leader joint, multiplier, offset)
        self.joint_limits = dict(joint_limits or {})  # joint -> dict(lower, upper, velocity, effort)

    # -- conveniences -------------------------------------------------------------------------
    @property
    def link_names(self):
        """Names of the moving bodies, in body order (merged fixed links are in ``link_frames``)."""
        return list(self.body_names)

    def joint_v_index(self, name):
        """Index in v (and in the rows of M) of the named joint."""
        return self.joint_names.index(name) + (6 if self.floating_base else 0)

    def joint_q_index(self, name):
        """Index in q of the named joint."""
        return self.joint_names.index(name) + (7 if self.floating_base else 0)

    def neutral(self):
        """The neutral configuration (zeros; identity quaternion for a floating base)."""
        q = np.zeros(self.nq)
        if self.floating_base:
            q[6] = 1.0
        return q

    def total_mass(self):
        return float(self.mass.sum())

    def copy(self, **changes):
        """A new model with some constructor arguments replaced (the model itself is never mutated)."""
        args = dict(name=self.name, body_names=self.body_names, joint_names=self.joint_names,
                    parent=self.parent, jtype=self.jtype, X_R=self.X_R, X_p=self.X_p, axis=self.axis,
                    mass=self.mass, com=self.com, inertia=self.inertia, link_frames=self.link_frames,
                    floating_base=self.floating_base, gravity=self.gravity, root_link=self.root_link,
                    mimic=self.mimic, joint_limits=self.joint_limits)
        args.update(changes)
        return Model(**args)

    def __repr__(self):
        kind = 'floating' if self.floating_base else 'fixed'
        return (f'<ros_dynamics.Model {self.name!r}: {self.nbodies} bodies, nq={self.nq}, '
                f'nv={self.nv}, {kind} base, mass {self.total_mass():.3f} kg>')


def attach_payload(model, link, mass, com=(0.0, 0.0, 0.0), inertia=None):
    """A new model with a rigid payload lumped into ``link``.

    ``com`` is the payload's centre of mass in the link frame, ``inertia`` its 3x3 rotational
    inertia about that CoM in the link frame (default zero: a point mass).  A negative mass
    removes a previously attached payload of the same parameters.
    """
    from .spatial_numpy import lump_inertia
    if link not in model.link_frames:
        raise ValueError(f'unknown link {link!r}')
    body, R, p = model.link_frames[link]
    if body < 0:
        raise ValueError(f'link {link!r} is fixed to the world: a payload there has no effect')
    com = np.asarray(com, dtype=float).reshape(3)
    inertia = np.zeros((3, 3)) if inertia is None else np.asarray(inertia, dtype=float).reshape(3, 3)
    if not (np.isfinite(mass) and np.all(np.isfinite(com)) and np.all(np.isfinite(inertia))):
        raise ValueError('payload parameters must be finite')
    m, c, Ic = lump_inertia(model.mass[body], model.com[body], model.inertia[body],
                            float(mass), R @ com + p, R @ inertia @ R.T)
    if m < 0:
        raise ValueError('payload removal would make the link mass negative')
    masses, coms, inertias = model.mass.copy(), model.com.copy(), model.inertia.copy()
    masses[body], coms[body], inertias[body] = m, c, Ic
    return model.copy(mass=masses, com=coms, inertia=inertias)


def massless_bodies(model):
    """Indices of the moving bodies that carry no mass or inertia and have none below them:
    their rows of M are zero, so M is singular (forward dynamics refuses such a model)."""
    carries = (model.mass > 0.0) | (np.trace(model.inertia, axis1=1, axis2=2) > 0.0)
    for i in range(model.nbodies - 1, 0, -1):
        if model.parent[i] >= 0:
            carries[model.parent[i]] |= carries[i]
    return np.flatnonzero(~carries)
