"""The kinematic tree (constant): what the algorithms read, never write.

A :class:`Model` holds the topology and the constant geometry and inertia of the moving
bodies after fixed joints have been merged (Featherstone's "model" of a rigid-body tree,
Pinocchio's ``Model``).  It is frozen: built once, its arrays read-only, never mutated
(``model.copy(**changes)`` and ``attach_payload`` make new models).  Per-call scratch lives in
a :class:`ros_dynamics.Data` workspace, so one model can be used from several threads at once
(one Data per thread).

Numbering (Echeandia & Wensing 2021, Sec. 2.2): bodies are numbered so that ``parent[i] < i``; ``-1`` is the
fixed world (the URDF root for a fixed base).  Each body has one joint with ``nv_i`` DoF
(1 for revolute/prismatic, 6 for the free joint of a floating base, which is always body 0).
Joint velocities are numbered body by body, so ``v_idx`` is increasing and the DoF tree
(``dof_parent``) is the expanded tree of Featherstone's branch-induced sparsity (Featherstone 2008):
``dof_parent[s] < s``.

Kernel arrays (packed once here, read by every compiled algorithm)
------------------------------------------------------------------
The compiled kernels take the model as one flat read-only float64 array, ``model.packed``,
because every argument of a compiled call costs dispatch time (a read-only array ~70 ns: numba
types it on a slower path).  It holds two arrays: ``model.ints`` (int64: its first
``n_ints(N, nv)`` elements, seen as int64) and ``model.reals`` (float64: the rest), both
read-only views of it.
Inside a kernel ``kinematics.tree(packed)`` unpacks them into named views (``m.parent``,
``m.jtype``, ``m.q_idx``, ``m.v_idx``, ``m.dof_body``, ``m.dof_parent``, ``m.X_R``, ``m.X_p``,
``m.axis``, ``m.com``, ``m.inertia``, ``m.mass``, ``m.gravity``, ``m.work``: the offsets of
the workspace fields).  ``ints`` = [N, nv, nq, parent(N), jtype(N), q_idx(N), v_idx(N),
dof_body(nv), dof_parent(nv), work offsets(len(WORK_FIELDS) + 1)];
``reals`` = [gravity(3), X_R(9N), X_p(3N), axis(3N), com(3N), inertia(9N), mass(N),
armature(nv)].

Workspace layout (``WORK_FIELDS``): one float64 buffer per :class:`Data`, cut into the
outputs (M, C, Mdot, g, the observer's p and C^T v, tau, ddq, a link Jacobian J, the state q, v
the outputs were computed at, the centroidal A_G, dA_G/dt v and [mass, CoM, CoM velocity]) and the algorithms' scratch (world placements R, pos, the
revolute joints' cos q and sin q, motion subspaces Phi, Phid, world inertias I, body
velocities vel, per-body 6x6 rows W, an nv x nv matrix H and an nv vector tmp; the
operational-space compliance's articulated-body P, U, D and path products seg; the task
space's bias accelerations acc and body inertias Ib; the RNEA derivatives' body forces force and
per-DoF vectors dcols).
``WORK_FIELDS`` is the single definition of that layout: Python's Data views and the kernels'
``kinematics.workspace`` read the same offsets.
"""

import numpy as np

from .configuration import FREE, JOINT_NQ, JOINT_NV, base_nq, base_nv, neutral
from .jit import helper
from .spatial import NI
from .spatial_numpy import lump_inertia
from .validation import close_names

# (name, shape in terms of N bodies, nv, nq); the order is the order in the buffer.
WORK_FIELDS = (
    ('M', ('nv', 'nv')), ('C', ('nv', 'nv')), ('Mdot', ('nv', 'nv')), ('g', ('nv',)),
    ('p', ('nv',)), ('ctv', ('nv',)), ('tau', ('nv',)), ('ddq', ('nv',)), ('J', (6, 'nv')),
    ('q', ('nq',)), ('v', ('nv',)),
    # centroidal momentum (centroidal.py): A_G, dA_G/dt v, [mass, CoM, CoM velocity]
    ('A_G', (6, 'nv')), ('A_G_dot_v', (6,)), ('centroid', (7,)),
    ('R', ('N', 3, 3)), ('pos', ('N', 3)), ('cos_sin', ('N', 2)), ('Phi', ('nv', 6)),
    ('Phid', ('nv', 6)),
    ('I', ('N', NI)), ('vel', ('N', 6)), ('W', (6, 'N', 6)), ('H', ('nv', 'nv')), ('tmp', ('nv',)),
    # operational-space compliance (contact_compliance.py): articulated inertias P (reused for
    # Upsilon), U = P H^*, D = H U, and the psi products along the paths between key nodes
    ('P', ('nv', 6, 6)), ('U', ('nv', 6)), ('D', ('nv',)), ('seg', ('nv', 6, 6)),
    # task space (frame_kinematics.py, centroidal.py): bias accelerations, body inertias
    ('acc', ('N', 6)), ('Ib', ('N', NI)),
    # RNEA derivatives (rnea_derivatives.py): body forces (composite after the backward pass),
    # per DoF the 6-vectors u_k, D_k, e_k of the forward pass
    ('force', ('N', 6)), ('dcols', ('nv', 3, 6)),
)
WORK_INDEX = {name: k for k, (name, _) in enumerate(WORK_FIELDS)}
N_HEADER = 3          # ints[0:3] = N, nv, nq
N_OFFSETS = len(WORK_FIELDS) + 1     # the workspace offsets at the end of ints


@helper
def n_ints(N, nv):
    """Length of ``model.ints`` (module docstring): where ``reals`` starts in ``model.packed``."""
    return N_HEADER + 4 * N + 2 * nv + N_OFFSETS


def _readonly(a, dtype):
    a = np.array(a, dtype=dtype)       # a private copy: the caller's array can't change the model
    a.flags.writeable = False
    return a


class Model:
    """Rigid-body tree; frozen (read-only arrays, no attribute assignment after construction).

    Array attributes (N bodies, nv DoF):

    ``parent`` int64[N]      parent body, -1 for the world
    ``jtype`` int64[N]       REVOLUTE, PRISMATIC or FREE (FREE only for body 0)
    ``q_idx``, ``v_idx``     first index of the body's joint in q and v
    ``X_R`` float[N,3,3]     rotation of the joint frame in the parent body frame
    ``X_p`` float[N,3]       origin of the joint frame in the parent body frame
    ``axis`` float[N,3]      joint axis in the joint (= body) frame, unit length
    ``mass`` float[N]; ``com`` float[N,3]; ``inertia`` float[N,3,3] (about the CoM, body frame)
    ``dof_body`` int64[nv]   body of each DoF; ``dof_parent`` int64[nv]: DoF-tree parent (-1: none)
    ``gravity`` float[3]     gravitational acceleration in the world frame
    ``armature`` float[nv]   reflected rotor inertia per DoF, added to the diagonal of M
                             (``M + diag(armature)``: a geared motor's rotor inertia seen
                             through its gear, N² I_rotor); zero on a floating base's six DoF
    ``packed``               the same, packed for the compiled kernels (module docstring),
                             with its views ``ints`` (int64) and ``reals`` (float64)

    ``warnings``: what the URDF loader skipped or assumed (a tuple of messages; empty for a
    model made otherwise; :meth:`copy` keeps them).
    """

    def __init__(self, *, name, body_names, joint_names, parent, jtype, X_R, X_p, axis,
                 mass, com, inertia, link_frames, floating_base, gravity=(0.0, 0.0, -9.81),
                 root_link='', mimic=None, joint_limits=None, warnings=(), armature=None):
        set_ = object.__setattr__
        set_(self, 'name', name)
        set_(self, 'warnings', tuple(warnings))
        set_(self, 'body_names', list(body_names))
        set_(self, 'floating_base', bool(floating_base))
        set_(self, 'root_link', root_link)
        parent = np.asarray(parent, dtype=np.int64).reshape(-1)
        jtype = np.asarray(jtype, dtype=np.int64).reshape(-1)
        N = len(parent)
        if len(jtype) != N:
            raise ValueError('parent and jtype must have one entry per body')
        for i in range(N):
            if not -1 <= parent[i] < i:
                raise ValueError('bodies must be numbered so that parent[i] < i')
            if int(jtype[i]) not in JOINT_NV:
                raise ValueError(f'unknown joint type {int(jtype[i])} of body {i}')
            if jtype[i] == FREE and i != 0:
                raise ValueError('a free joint is only supported at the root (body 0)')
        if (N > 0 and jtype[0] == FREE) != self.floating_base:
            raise ValueError('floating_base must be True exactly when body 0 has a free joint')
        fields = dict(
            parent=_readonly(parent, np.int64), jtype=_readonly(jtype, np.int64),
            X_R=_readonly(np.reshape(X_R, (N, 3, 3)), np.float64),
            X_p=_readonly(np.reshape(X_p, (N, 3)), np.float64),
            axis=_readonly(np.reshape(axis, (N, 3)), np.float64),
            mass=_readonly(np.reshape(mass, (N,)), np.float64),
            com=_readonly(np.reshape(com, (N, 3)), np.float64),
            inertia=_readonly(np.reshape(inertia, (N, 3, 3)), np.float64),
            gravity=_readonly(np.reshape(gravity, (3,)), np.float64))

        nq_i = np.array([JOINT_NQ[int(t)] for t in jtype], dtype=np.int64)
        nv_i = np.array([JOINT_NV[int(t)] for t in jtype], dtype=np.int64)
        q_idx = (np.cumsum(nq_i) - nq_i).astype(np.int64)   # first index of each joint (empty if N = 0)
        v_idx = (np.cumsum(nv_i) - nv_i).astype(np.int64)
        nq, nv = int(nq_i.sum()), int(nv_i.sum())
        # DoF tree: within a multi-DoF joint each DoF hangs on the previous one, the first DoF of
        # a joint on the last DoF of the parent body's joint (expanded tree, Featherstone 2008).
        dof_body = np.repeat(np.arange(N, dtype=np.int64), nv_i)
        dof_parent = np.empty(nv, dtype=np.int64)
        for i in range(N):
            s0, p = v_idx[i], parent[i]
            dof_parent[s0] = -1 if p < 0 else v_idx[p] + nv_i[p] - 1
            for s in range(s0 + 1, s0 + nv_i[i]):
                dof_parent[s] = s - 1
        armature = np.zeros(nv) if armature is None else np.asarray(armature, dtype=float)
        if armature.shape != (nv,) or not np.all(np.isfinite(armature)) or np.any(armature < 0):
            raise ValueError(f'armature must be {nv} finite values >= 0 (one per velocity '
                             'coordinate)')
        if self.floating_base and np.any(armature[:6]):
            raise ValueError('armature of the floating base must be zero')
        fields['armature'] = _readonly(armature, np.float64)
        fields.update(q_idx=_readonly(q_idx, np.int64), v_idx=_readonly(v_idx, np.int64),
                      dof_body=_readonly(dof_body, np.int64),
                      dof_parent=_readonly(dof_parent, np.int64))
        for key, value in fields.items():
            set_(self, key, value)
        set_(self, 'nq', nq)
        set_(self, 'nv', nv)
        set_(self, 'q_shape', (nq,))
        set_(self, 'v_shape', (nv,))
        set_(self, 'gamma_shape', (nv, nv, nv))
        set_(self, 'nbodies', N)

        joint_names = list(joint_names)               # the named (non-free) joints, in v order
        if len(joint_names) != nv - base_nv(self):
            raise ValueError('joint_names does not match the joint layout')
        set_(self, 'joint_names', joint_names)
        # link name -> (body index or -1 for the world, R, p of the link frame in the body frame)
        set_(self, 'link_frames', dict(link_frames))
        set_(self, 'mimic', dict(mimic or {}))                # joint -> (leader, multiplier, offset)
        set_(self, 'joint_limits', dict(joint_limits or {}))  # joint -> dict(lower, upper, ...)

        # -- the kernel arrays and the workspace layout (module docstring)
        dims = {'N': N, 'nv': nv, 'nq': nq}
        shapes, offsets = {}, [0]
        for wname, shape in WORK_FIELDS:
            shapes[wname] = tuple(dims[d] if isinstance(d, str) else d for d in shape)
            offsets.append(offsets[-1] + int(np.prod(shapes[wname])))
        set_(self, 'work_shapes', shapes)
        set_(self, 'work_offsets', tuple(offsets))
        ints = np.concatenate([[N, nv, nq], parent, jtype, q_idx, v_idx, dof_body, dof_parent,
                               offsets]).astype(np.int64)
        assert len(ints) == n_ints(N, nv)
        f = fields
        reals = np.concatenate([f['gravity'], f['X_R'].ravel(), f['X_p'].ravel(),
                                f['axis'].ravel(), f['com'].ravel(), f['inertia'].ravel(),
                                f['mass'], f['armature']])
        packed = np.empty(len(ints) + len(reals))
        packed[:len(ints)].view(np.int64)[:] = ints
        packed[len(ints):] = reals
        packed.flags.writeable = False
        set_(self, 'packed', packed)
        set_(self, 'ints', packed[:len(ints)].view(np.int64))    # read-only views of it
        set_(self, 'reals', packed[len(ints):])

    def __setattr__(self, key, value):
        raise AttributeError(f'ros_dynamics.Model is frozen (cannot set {key!r}); '
                             'use model.copy(**changes) for a modified model')

    # -- conveniences -------------------------------------------------------------------------
    @property
    def link_names(self):
        """Names of the moving bodies, in body order (merged fixed links: :attr:`frame_names`)."""
        return list(self.body_names)

    @property
    def frame_names(self):
        """Every link name the functions that take a link accept: the moving bodies
        (:attr:`link_names`) and the links merged into them, or into the world, by fixed joints
        (e.g. ``tool0``, a camera frame); ``link_frames[name]`` = (body index or -1 for the
        world, R, p of the frame in the body frame)."""
        return list(self.link_frames)

    def _joint(self, name):
        try:
            return self.joint_names.index(name)
        except ValueError:
            raise ValueError(f'unknown joint {name!r}'
                             + close_names(name, self.joint_names, 'joints (model.joint_names)')) from None

    def joint_v_index(self, name):
        """Index in v (and in the rows of M) of the named joint."""
        return self._joint(name) + base_nv(self)

    def joint_q_index(self, name):
        """Index in q of the named joint."""
        return self._joint(name) + base_nq(self)

    def neutral(self):
        """The neutral configuration (zeros; identity quaternion for a floating base)."""
        return neutral(self)

    def total_mass(self):
        return float(self.mass.sum())

    def copy(self, **changes):
        """A new model with some constructor arguments replaced (the model itself is never mutated)."""
        args = dict(name=self.name, body_names=self.body_names, joint_names=self.joint_names,
                    parent=self.parent, jtype=self.jtype, X_R=self.X_R, X_p=self.X_p, axis=self.axis,
                    mass=self.mass, com=self.com, inertia=self.inertia, link_frames=self.link_frames,
                    floating_base=self.floating_base, gravity=self.gravity, root_link=self.root_link,
                    mimic=self.mimic, joint_limits=self.joint_limits, warnings=self.warnings,
                    armature=self.armature)
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
    if link not in model.link_frames:
        raise ValueError(f'unknown link {link!r}'
                         + close_names(link, model.link_frames, 'frames (model.frame_names)'))
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


def with_armature(model, armature):
    """A new model with reflected rotor inertia ``armature`` [kg m² or kg] on its joints: one
    value for every joint or one per joint (``model.joint_names`` order), finite and >= 0;
    ValueError naming the problem.  (The node's ``joint_armature`` parameter.)"""
    a = np.asarray(armature, dtype=float).reshape(-1)
    nj = len(model.joint_names)
    if a.size == 1:
        a = np.full(nj, float(a[0]))
    if a.size != nj:
        raise ValueError(f'joint_armature needs one value or one per joint ({nj}), got {a.size}')
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError('joint_armature values must be finite and >= 0')
    full = np.zeros(int(model.nv))
    full[int(model.nv) - nj:] = a
    return model.copy(armature=full)


def massless_bodies(model):
    """Indices of the moving bodies that carry no mass or inertia and have none below them:
    their rows of M are zero, so M is singular (forward dynamics refuses such a model)."""
    carries = (model.mass > 0.0) | (np.trace(model.inertia, axis1=1, axis2=2) > 0.0)
    for i in range(model.nbodies - 1, 0, -1):
        if model.parent[i] >= 0:
            carries[model.parent[i]] |= carries[i]
    return np.flatnonzero(~carries)
