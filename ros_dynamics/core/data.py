"""The workspace :class:`Data` (as Pinocchio's ``Data``): one buffer per model, allocated once.

``data = rd.Data(model)`` holds every output and all the algorithms' scratch in one float64
buffer, cut into the fields of ``model.WORK_FIELDS`` (the single definition of the layout; the
kernels see the same fields through ``kinematics.workspace``).  Every compute function accepts
``data=data``; it then writes into ``data`` and returns views of it (``data.M``, ``data.C``,
``data.Mdot``, ``data.g``, ``data.Gamma``, ``data.p``, ``data.ctv``, ``data.tau``, ``data.ddq``,
``data.J``): nothing is allocated per call, and the next call with the same data overwrites
them.  Without ``data=`` a function returns new arrays owned by the caller.  A Data can be used
with any model of the same dimensions, one thread at a time.
"""

from collections import namedtuple
from functools import cached_property

import numpy as np

from .model import WORK_FIELDS, WORK_INDEX

Dynamics = namedtuple('Dynamics', 'M C Mdot g')
Dynamics.__doc__ = 'Result of :func:`dynamics`: mass matrix, Coriolis matrix, dM/dt, gravity.'
new_dynamics = tuple.__new__     # Dynamics(M, C, Mdot, g) without the Python-level __new__

assert [name for name, _ in WORK_FIELDS[:4]] == ['M', 'C', 'Mdot', 'g']   # dynamics() relies on it


class Data:
    """Workspace of one model: outputs and scratch in one buffer, allocated once.

    Output views (overwritten by the next call that computes them): ``M``, ``C``, ``Mdot``
    (nv, nv); ``g``, ``p`` (= M v), ``ctv`` (= C^T v), ``tau`` (inverse dynamics), ``ddq``
    (forward dynamics) (nv,); ``J`` (6, nv) (link Jacobian); ``q``, ``v``: the state
    :func:`compute_all_terms` last computed at; ``Gamma`` (nv, nv, nv), ``dtau_dq``, ``dtau_dv``
    (:func:`inverse_dynamics_derivatives`, :func:`inverse_dynamics_dv`), ``da_dq``, ``da_dv``,
    ``Minv`` (:func:`forward_dynamics_derivatives`) (nv, nv), whose memory is taken when first
    written; ``Lambda`` (the last
    :func:`contact_compliance`; its size follows the number of nodes, None before);
    ``A_G`` (6, nv), ``A_G_dot_v`` (6,), ``centroid`` ([mass, CoM, CoM velocity]) and
    ``task_space`` (the last :func:`task_space` result, None before).
    Kinematics (valid after any call at q): ``R`` (N, 3, 3), ``pos`` (N, 3): world rotation
    and origin of each body; ``Phi`` (nv, 6): world motion subspaces (angular first).
    """

    def __init__(self, model):
        self.dims = (model.nbodies, model.nv, model.nq)
        self.layout = model.work_offsets
        self.nv = model.nv
        self.work = np.zeros(model.work_offsets[-1])
        for name, shape in model.work_shapes.items():
            k = WORK_INDEX[name]
            a, b = model.work_offsets[k], model.work_offsets[k + 1]
            setattr(self, name, self.work[a:b].reshape(shape))
        self.Lambda = None
        self.task_space = None          # the last task_space result (its frames' arrays)
        self.dynamics = new_dynamics(Dynamics, (self.M, self.C, self.Mdot, self.g))
        self.observer_terms = (self.p, self.ctv, self.g)

    # Allocated at first use: a 2000-link chain's Gamma would take 64 GB.  cached_property
    # stores the array in the instance, so later lookups are plain attribute lookups (a
    # __getattr__ on this class would slow every attribute lookup of every call with data=).
    @cached_property
    def Gamma(self):
        return np.zeros((self.nv,) * 3)

    @cached_property
    def derivatives(self):
        """(5, nv, nv): dtau_dq, dtau_dv, da_dq, da_dv, Minv (the views below)."""
        return np.zeros((5, self.nv, self.nv))

    @cached_property
    def dtau_dq(self):
        return self.derivatives[0]

    @cached_property
    def dtau_dv(self):
        return self.derivatives[1]

    @cached_property
    def da_dq(self):
        return self.derivatives[2]

    @cached_property
    def da_dv(self):
        return self.derivatives[3]

    @cached_property
    def Minv(self):
        return self.derivatives[4]

    def __repr__(self):
        N, nv, nq = self.dims
        return f'<ros_dynamics.Data: {N} bodies, nq={nq}, nv={nv}, {self.work.nbytes} bytes>'


def work_buffer(model, data):
    """data's buffer (checked against the model's layout), or a new one for ``data=None``."""
    if data is None:
        return np.empty(model.work_offsets[-1])
    if not isinstance(data, Data):
        raise ValueError(f'data must be a ros_dynamics.Data, got {type(data).__name__}')
    if data.layout is model.work_offsets or data.layout == model.work_offsets:
        return data.work
    raise ValueError(f'data was made for a model with (bodies, nv, nq) = {data.dims}, '
                     f'this model has {(model.nbodies, model.nv, model.nq)}')


def output(model, work, name):
    """The named output view of a buffer (the no-data path returns these)."""
    k = WORK_INDEX[name]
    return work[model.work_offsets[k]:model.work_offsets[k + 1]].reshape(model.work_shapes[name])
