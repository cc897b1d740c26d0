"""Rigid contact and collision dynamics in minimal coordinates: the OS formulation (Jain et al. 2012).

One time step of Jain's operational-space (OS) formulation, Sec. 6 and 7:

1. Collisions (Sec. 7) for the contacts that close within the step while approaching: the
   compression LCP (Eq. 54: Eq. 53 with Delta_t = 0) and its impulse (Eq. 55), then the
   decompression LCP with the recovered impulse theta = eps (n^* p_c) n (Eqs. 56-58).
2. Contact (Sec. 6): assemble and solve the OS LCP of Eq. 53,

       [ D^* Q_u Lam Q_u^* D   E_hat ] [beta ]   [ D^* (v_u^- + delta_u^f Delta_t) ]
       [ E_bar                 0     ] [sigma] + [ 0                               ]  _|_  z >= 0,

   Lam = J M^-1 J^* the OSCM of the contact nodes from :func:`ros_dynamics.contact_compliance`
   (O(N) + O(m^2), no M^-1), then step 2 of Sec. 6: the contact impulses p_u = G_u^* D beta
   (Eq. 35) enter the generalized acceleration of Eq. 31 as the average force p_u / Delta_t
   and are integrated (semi-implicit Euler: v+ = v + Delta_t qdd, q+ = q (+) Delta_t v+).
   Bilateral (loop-closure) rows are the mixed part of Eq. 53 and are eliminated by
   :func:`ros_dynamics.simulation.lcp.solve_mixed_lcp`.

Contact bookkeeping (Sec. 2): a :class:`Contact` is a node pair (A, B) with the normal n
pointing from B to A, friction coefficient mu and restitution eps; v_u is the relative linear
velocity of A's node with respect to B's (Eq. 22); D(i) = [n, d_1 .. d_nf] (Eq. 7) with n_f
tangent directions at equal angles (each with its opposite for even n_f).

The velocity-level conditions hold only at zero gap (Sec. 2.2).  As in Anitescu & Potra's
time stepping, the normal row is shifted by the gap, n^* v_u^+ >= -phi / Delta_t, so a contact
that is still open may close but not pass through within the step; a penetration left by the
linearization is removed at the rate ``erp`` per step (no energy is added by a full push-out).
"""

from dataclasses import dataclass, field

import numpy as np

from ..core import api as _api
from .lcp import solve_lcp, solve_mixed_lcp


@dataclass
class Contact:
    """One unilateral contact: node a on link_a (None: the world) and node b on link_b.

    ``normal`` (world, unit) points from B towards A; ``gap`` is the signed distance (< 0:
    penetration).  Points are in the link frames (for the world: world coordinates).
    """
    link_a: object
    point_a: np.ndarray
    link_b: object
    point_b: np.ndarray
    normal: np.ndarray
    gap: float
    mu: float = 0.5
    restitution: float = 0.0
    name: str = ''


@dataclass
class StepInfo:
    """What one step did: the contacts, their LCP, impulses and sizes (for tests and benchmarks)."""
    contacts: list = field(default_factory=list)
    lcp_size: int = 0
    impulses: np.ndarray = None           # (m, 3) contact impulses F_u (world) of the contact LCP
    collision_impulses: np.ndarray = None  # (m, 3) compression + decompression impulses, if any
    beta: np.ndarray = None
    sigma: np.ndarray = None
    w: np.ndarray = None
    z: np.ndarray = None
    v_normal: np.ndarray = None          # n^* v_u^+ after the step
    pivots: int = 0
    tau_contact: np.ndarray = None        # J^T F / Delta_t: the generalized contact force of the step


def friction_directions(normal, nf):
    """D(i) = [n, d_1 .. d_nf] (3, nf + 1): the normal and nf unit tangents (Eq. 6-7)."""
    n = np.asarray(normal, dtype=float)
    t1 = np.cross(n, [1.0, 0.0, 0.0] if abs(n[0]) < 0.9 else [0.0, 1.0, 0.0])
    t1 /= np.linalg.norm(t1)
    t2 = np.cross(n, t1)
    ang = 2.0 * np.pi * np.arange(nf) / nf
    return np.column_stack([n] + [np.cos(a) * t1 + np.sin(a) * t2 for a in ang])


def os_lcp(Lam_u, v_free, contacts, nf, gap_rate=None):
    """(M, q) of the OS LCP, Eq. 53 (no bilateral rows), and the stacked D (3m, m(nf+1)).

    ``Lam_u`` = Q_u Lam Q_u^* (3m, 3m), ``v_free`` the relative velocities the contacts would
    have without contact impulses (3m,), ``gap_rate`` (m,) added to the normal rows.
    """
    m = len(contacts)
    k = nf + 1
    D = np.zeros((3 * m, m * k))
    E_hat = np.zeros((m * k, m))
    E_bar = np.zeros((m, m * k))
    for i, c in enumerate(contacts):
        D[3 * i:3 * i + 3, k * i:k * i + k] = friction_directions(c.normal, nf)
        E_hat[k * i + 1:k * i + k, i] = 1.0                  # E_hat(i) = [0; E], Eq. 13
        E_bar[i, k * i] = c.mu                               # E_bar(i) = [mu, -E^*]
        E_bar[i, k * i + 1:k * i + k] = -1.0
    M = np.zeros((m * (k + 1), m * (k + 1)))
    M[:m * k, :m * k] = D.T @ Lam_u @ D
    M[:m * k, m * k:] = E_hat
    M[m * k:, :m * k] = E_bar
    q = np.zeros(m * (k + 1))
    q[:m * k] = D.T @ v_free
    if gap_rate is not None:
        q[0:m * k:k] += gap_rate
    return M, q, D


class RigidContactStepper:
    """Time stepping with rigid contacts and collisions by the OS formulation (module doc).

    ``contact_fn(q) -> [Contact, ...]`` returns the candidate contacts (gap below ``margin``)
    at a configuration.  ``compliance`` = ``'os'`` (the O(N) + O(m^2) OSCM, default) or
    ``'dense'`` (J M^-1 J^T through M^-1, the reference the benchmark compares with).
    """

    def __init__(self, model, contact_fn, dt=1e-3, nf=4, erp=0.2, collision_speed=1e-3,
                 compliance='os'):
        if compliance not in ('os', 'dense'):
            raise ValueError("compliance must be 'os' or 'dense'")
        if nf < 3:
            raise ValueError('nf must be >= 3 (a polyhedral cone needs at least 3 directions)')
        self.model, self.contact_fn, self.dt, self.nf = model, contact_fn, float(dt), int(nf)
        self.erp, self.collision_speed, self.compliance = float(erp), float(collision_speed), compliance

    # -- kinematics of the contact nodes --------------------------------------------------------
    def _nodes(self, contacts):
        """Distinct moving nodes [(link, point)] and, per contact, the indices of a and b (-1: world)."""
        nodes, ia, ib = [], [], []
        for c in contacts:
            for link, pt, out in ((c.link_a, c.point_a, ia), (c.link_b, c.point_b, ib)):
                if link is None or self.model.link_frames[link][0] < 0:
                    out.append(-1)
                else:
                    out.append(len(nodes))
                    nodes.append((link, np.asarray(pt, dtype=float)))
        return nodes, np.array(ia, dtype=int), np.array(ib, dtype=int)

    def _Q_u(self, ia, ib, n_nodes):
        """Q_u (3m, 3 n_nodes): v_u = v_a - v_b (Eq. 48)."""
        m = len(ia)
        Q = np.zeros((3 * m, 3 * n_nodes))
        eye = np.eye(3)
        for i in range(m):
            if ia[i] >= 0:
                Q[3 * i:3 * i + 3, 3 * ia[i]:3 * ia[i] + 3] += eye
            if ib[i] >= 0:
                Q[3 * i:3 * i + 3, 3 * ib[i]:3 * ib[i] + 3] -= eye
        return Q

    def _jacobian(self, q, nodes):
        return np.vstack([_api.link_jacobian(self.model, q, link, pt)[:3] for link, pt in nodes]) \
            if nodes else np.zeros((0, self.model.nv))

    def _compliance(self, q, nodes, J):
        if self.compliance == 'os':
            return _api.contact_compliance(self.model, q, nodes)
        Minv = np.linalg.inv(_api.mass_matrix(self.model, q))
        return J @ Minv @ J.T

    # -- one step -----------------------------------------------------------------------------
    def step(self, q, v, tau, integrate):
        """(q+, v+, StepInfo) after one step of length dt under joint torques ``tau``.

        ``integrate(q, v, dt)`` maps a velocity to the next configuration (handles quaternions).
        """
        model, dt, nf = self.model, self.dt, self.nf
        contacts = self.contact_fn(q)
        info = StepInfo(contacts=contacts)
        qdd_free = _api.forward_dynamics(model, q, v, tau)
        if not contacts:
            v_new = v + dt * qdd_free
            info.impulses = np.zeros((0, 3))
            info.tau_contact = np.zeros(model.nv)
            return integrate(q, v_new, dt), v_new, info
        nodes, ia, ib = self._nodes(contacts)
        J = self._jacobian(q, nodes)
        Q = self._Q_u(ia, ib, len(nodes))
        G = Q @ J                                              # G_u = Q_u J (Eq. 50)
        Lam_u = Q @ self._compliance(q, nodes, J) @ Q.T
        normals = np.array([c.normal for c in contacts])
        gaps = np.array([c.gap for c in contacts])
        m = len(contacts)

        def apply(v0, F):                                      # v0 + M^-1 G_u^* F (Eq. 55)
            return v0 + _api.forward_dynamics(model, q, np.zeros_like(v), G.T @ F.ravel()) \
                - _api.forward_dynamics(model, q, np.zeros_like(v), np.zeros_like(v))

        # 1. collisions (Sec. 7): contacts that close within this step while approaching
        vn = np.einsum('ij,ij->i', normals, (G @ v).reshape(m, 3))
        colliding = (vn < -self.collision_speed) & (gaps + dt * vn <= 0.0)
        F_coll = np.zeros((m, 3))
        if np.any(colliding):
            Mc, qc, D = os_lcp(Lam_u, G @ v, contacts, nf)            # Eq. 54
            z, _, _ = solve_lcp(Mc, qc)
            F_c = (D @ z[:m * (nf + 1)]).reshape(m, 3)
            v_c = apply(v, F_c)                                         # Eq. 55
            eps = np.array([c.restitution for c in contacts])
            theta = (eps * np.einsum('ij,ij->i', normals, F_c))[:, None] * normals   # Eq. 56
            F_coll = F_c + theta
            if np.any(theta):
                Md, qd, D = os_lcp(Lam_u, G @ v_c + Lam_u @ theta.ravel(), contacts, nf)  # Eq. 57
                z, _, _ = solve_lcp(Md, qd)
                F_d = (D @ z[:m * (nf + 1)]).reshape(m, 3)
                F_coll += F_d
                v = apply(v_c, theta + F_d)                             # Eq. 58
            else:
                v = v_c
        info.collision_impulses = F_coll

        # 2. contact (Sec. 6): the OS LCP of Eq. 53 over the step, then step 2
        v_free = G @ (v + dt * qdd_free)                      # v_u^- + delta_u^f dt
        gap_rate = np.where(gaps > 0.0, gaps, self.erp * gaps) / dt
        Mo, qo, D = os_lcp(Lam_u, v_free, contacts, nf, gap_rate)
        z, w, pivots = solve_lcp(Mo, qo)
        k = m * (nf + 1)
        F = (D @ z[:k]).reshape(m, 3)                          # F_u = D beta (Eq. 16)
        tau_c = G.T @ F.ravel() / dt                           # p_u / dt (Eq. 35 into Eq. 31)
        qdd = _api.forward_dynamics(model, q, v, tau + tau_c)
        v_new = v + dt * qdd
        info.lcp_size, info.impulses, info.z, info.w, info.pivots = len(qo), F, z, w, pivots
        info.beta, info.sigma = z[:k], z[k:]
        info.v_normal = np.einsum('ij,ij->i', normals, (G @ v_new).reshape(m, 3))
        info.tau_contact = tau_c + G.T @ F_coll.ravel() / dt
        return integrate(q, v_new, dt), v_new, info
