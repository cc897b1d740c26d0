"""Change of generalized coordinates (seed 000, Sec. 3.3), e.g. to reduce mimic joints.

With q = q(qbar) and A = dq/dqbar (eq. (22)), qd = A qbard and qdd = A qbardd + Adot qbard, so

    Mbar = A^T M A                       (23)
    Cbar = A^T C A + A^T M Adot           (24)
    gbar = A^T g,   taubar = A^T tau      (25), (26)

and, by Theorem 1, the Christoffel-consistent C maps to the Christoffel-consistent Cbar.
For mimic joints q_m = k q_l + offset the map is affine, so A is constant and Adot = 0.
"""

import numpy as np

from .api import Dynamics


def transform_dynamics(d, A, Adot=None):
    """Dynamics in new coordinates from a :class:`Dynamics` (M, C, Mdot, g) and A = dq/dqbar."""
    A = np.asarray(A, dtype=float)
    n = d.M.shape[0]
    if A.ndim != 2 or A.shape[0] != n:
        raise ValueError(f'A must have shape ({n}, m), got {A.shape}')
    M = A.T @ d.M @ A
    C = A.T @ d.C @ A
    if Adot is not None:
        Adot = np.asarray(Adot, dtype=float)
        if Adot.shape != A.shape:
            raise ValueError(f'Adot must have the shape of A {A.shape}, got {Adot.shape}')
        C = C + A.T @ d.M @ Adot
    return Dynamics(M, C, C + C.T, A.T @ d.g)


def transform_christoffel(Gamma, A):
    """Gamma in new coordinates for a constant A (affine map, e.g. mimic joints):

    Gammabar_ijk = sum A_ai A_bj A_ck Gamma_abc (the proof of Theorem 1 with d2q/dqbar2 = 0).
    """
    A = np.asarray(A, dtype=float)
    return np.einsum('ai,bj,ck,abc->ijk', A, A, A, Gamma, optimize=True)


class MimicCoordinates:
    """The independent coordinates of a model whose URDF has mimic joints.

    ``A`` (nv x nv_independent) maps independent rates to all joint rates; ``q(qbar)`` expands
    a configuration, ``reduce(d)`` applies eqs. (23)-(25) to a :func:`ros_dynamics.dynamics`
    result.  Chains of mimics (a mimic of a mimic) are resolved; floating-base DoFs stay.
    """

    def __init__(self, model):
        self.model = model
        base = 6 if model.floating_base else 0
        leader = {}
        for name in model.joint_names:
            k, off, cur = 1.0, 0.0, name
            seen = set()
            while cur in model.mimic:
                if cur in seen:
                    raise ValueError(f'mimic joints form a cycle through {cur!r}')
                seen.add(cur)
                lead, mult, offset = model.mimic[cur]
                k, off, cur = k * mult, off * mult + offset, lead
            leader[name] = (cur, k, off)
        self.independent = [n for n in model.joint_names if leader[n][0] == n]
        col = {n: base + i for i, n in enumerate(self.independent)}           # column of A
        qcol = {n: (7 if base else 0) + i for i, n in enumerate(self.independent)}  # index in qbar
        self.A = np.zeros((model.nv, base + len(self.independent)))
        self.A[:base, :base] = np.eye(base)
        self.offset = np.zeros(model.nq)
        self._q_map = []
        for name in model.joint_names:
            lead, k, off = leader[name]
            self.A[model.joint_v_index(name), col[lead]] = k
            self.offset[model.joint_q_index(name)] = off
            self._q_map.append((model.joint_q_index(name), qcol[lead], k))

    @property
    def nv(self):
        return self.A.shape[1]

    def q(self, qbar):
        """Full configuration from the independent one (floating-base block copied)."""
        base = 7 if self.model.floating_base else 0
        qbar = np.asarray(qbar, dtype=float)
        if qbar.shape != (base + len(self.independent),):
            raise ValueError(f'qbar must have shape ({base + len(self.independent)},), got {qbar.shape}')
        q = self.offset.copy()
        q[:base] = qbar[:base]
        for iq, ibar, k in self._q_map:
            q[iq] += k * qbar[ibar]
        return q

    def v(self, vbar):
        return self.A @ np.asarray(vbar, dtype=float)

    def reduce(self, d):
        """Mbar, Cbar (Christoffel-consistent), Mbar_dot, gbar from the full-coordinate result."""
        return transform_dynamics(d, self.A)
