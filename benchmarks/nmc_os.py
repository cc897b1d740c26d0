"""The paper's NMC/OS contact LCP (Jain et al. 2012, Sec. 8), for the pendulum benchmark's Table 2 column.

Non-minimal coordinates: every link is a free body with its 6x6 spatial inertia (block-diagonal,
constant in the body), every pin joint a bilateral constraint of n_b = 5 rows per link,
P_k (V_k - V_p(k)) = 0 with P_k the orthogonal complement of the joint axis S_k.  The NMC/OS LCP
has the form of Eq. 53 with the non-minimal Lam = J M^-1 J^* over the bilateral *and* contact
rows, so its size is 5n + n_u (n_f + 2), and the bilateral rows make it a mixed LCP (eliminated
here by the same Schur complement as the OS solver's mixed rows).

Only the collision (compression) LCP of Eq. 54 is built (Delta_t = 0: no bias forces, q =
[G_b V^- = 0; D^* v_u^-]).  It must give the same contact impulses as the OS compression LCP at
the same state, which the benchmark checks, and it carries the whole set-up and solve cost that
Table 2 compares.  World-frame Plücker coordinates, angular first, as in the core kernels.
"""

import numpy as np

import ros_dynamics as rd
from ros_dynamics.simulation.lcp import solve_lcp, solve_mixed_lcp
from ros_dynamics.simulation.rigid_contact import os_lcp


def _skew(x):
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def body_inertias(model, R, p):
    """(n, 6, 6) world spatial inertias [[Ic + m S(c) S(c)^T, m S(c)], [m S(c)^T, m 1]]."""
    out = np.empty((model.nbodies, 6, 6))
    for k in range(model.nbodies):
        m = model.mass[k]
        c = p[k] + R[k] @ model.com[k]
        S = _skew(c)
        Ic = R[k] @ model.inertia[k] @ R[k].T
        out[k] = np.block([[Ic + m * S @ S.T, m * S], [m * S.T, m * np.eye(3)]])
    return out


def nmc_os_compression(model, q, v, nodes, ia, ib, contacts, nf):
    """Contact impulses F (m, 3) and the LCP size of the NMC/OS compression LCP."""
    n = model.nbodies
    data = rd.Data(model)                  # a link Jacobian leaves the placements in data
    rd.link_jacobian(model, q, model.body_names[0], data=data)
    R, p, Phi = data.R, data.pos, data.Phi
    Minv = np.linalg.inv(body_inertias(model, R, p))              # block-diagonal inverse, O(n)
    # bilateral hinge rows G_b (5n x 6n)
    Gb = np.zeros((5 * n, 6 * n))
    for k in range(n):
        s = Phi[model.v_idx[k]]
        P = np.linalg.svd(s.reshape(1, 6))[2][1:]                 # 5 x 6, orthogonal to S_k
        Gb[5 * k:5 * k + 5, 6 * k:6 * k + 6] = P
        if model.parent[k] >= 0:
            j = model.parent[k]
            Gb[5 * k:5 * k + 5, 6 * j:6 * j + 6] = -P
    # contact rows G_u = Q_u B^* (3m x 6n): node velocity u + w x x of its body
    m = len(contacts)
    Gu = np.zeros((3 * m, 6 * n))
    for i in range(m):
        for idx, sign in ((ia[i], 1.0), (ib[i], -1.0)):
            if idx < 0:
                continue
            link, pt = nodes[idx]
            body, Rl, pl = model.link_frames[link]
            x = R[body] @ (Rl @ pt + pl) + p[body]
            Gu[3 * i:3 * i + 3, 6 * body:6 * body + 3] += sign * _skew(x).T
            Gu[3 * i:3 * i + 3, 6 * body + 3:6 * body + 6] += sign * np.eye(3)
    MinvBlk = np.zeros((6 * n, 6 * n))
    for k in range(n):
        MinvBlk[6 * k:6 * k + 6, 6 * k:6 * k + 6] = Minv[k]
    G = np.vstack([Gb, Gu])
    Lam = G @ MinvBlk @ G.T                                        # the NMC/OS OSCM
    nb = 5 * n
    # body velocities consistent with the joints: V_k = sum of S_s v_s over the ancestors
    V = np.zeros(6 * n)
    for k in range(n):
        V[6 * k:6 * k + 6] = (V[6 * model.parent[k]:6 * model.parent[k] + 6] if model.parent[k] >= 0 else 0.0) \
            + Phi[model.v_idx[k]] * v[model.v_idx[k]]
    Mlcp, qlcp, D = os_lcp(Lam[nb:, nb:], Gu @ V, contacts, nf)    # Eq. 54, unilateral part
    C = np.zeros((nb, len(qlcp)))
    C[:, :m * (nf + 1)] = Lam[:nb, nb:] @ D
    _, z, _, _ = solve_mixed_lcp(Lam[:nb, :nb], np.zeros(nb), C, Mlcp, qlcp)
    return (D @ z[:m * (nf + 1)]).reshape(m, 3), nb + len(qlcp)


def os_compression(model, q, v, nodes, Q, G, contacts, nf):
    """The same collision LCP in the OS formulation (Lam from rd.contact_compliance)."""
    m = len(contacts)
    Lam_u = Q @ rd.contact_compliance(model, q, nodes) @ Q.T
    Mlcp, qlcp, D = os_lcp(Lam_u, G @ v, contacts, nf)
    z, _, _ = solve_lcp(Mlcp, qlcp)
    return (D @ z[:m * (nf + 1)]).reshape(m, 3), len(qlcp)
