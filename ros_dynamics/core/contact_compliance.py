"""Operational-space compliance matrix (OSCM) of contact nodes in O(N) + O(m^2).

Jain, "Contact Dynamics Formulation Using Minimal Coordinates" (Jain et al. 2012), Eq. 51 and App. 10:

    Lambda = J M^-1 J^*  =  B^* Omega B,        Omega = psi^* H^* D^-1 H psi        (Eqs. 62-64)

with the articulated-body (AB) quantities of the mass-matrix factorization Eq. 59.  Omega, the
*extended* compliance, is never formed: only the blocks Omega(i, j) of the links that carry
contact nodes are needed, and they follow from the block-diagonal kernel Upsilon (Lemma 1):

    Upsilon(k) = psi^*(p(k), k) Upsilon(p(k)) psi(p(k), k) + H^*(k) D^-1(k) H(k)      (Eq. 67-68)
    Omega(i, j) = psi^*(c, i) Upsilon(c) psi(c, j),   c = the nearest common ancestor   (Eq. 69)

Here everything is written in the world frame at the world origin (Plücker coordinates,
angular first, as the other kernels of this package), so the rigid-body transformation phi is
the identity and Jain's articulated propagator psi(p(k), k) = phi(p(k), k) tau_bar(k) reduces
to the projector of the articulated-body algorithm (Featherstone, ABA pass 2):

    P(k) = articulated inertia,  U(k) = P(k) H^*(k),  D(k) = H(k) U(k),
    psi(p(k), k) = 1 - U(k) D^-1(k) H(k)        (acts on spatial forces, tip to base),
    P(p(k)) += psi(p(k), k) P(k)                 (= P - U D^-1 U^*).

Multi-DoF joints (the free joint of a floating base) are chains of one-DoF nodes of the DoF
tree (Featherstone (2008)'s expanded tree); a body's inertia sits on its last DoF node.

Scratch: the kinematics views of the workspace (R, pos, Phi, I) and its fields P (articulated
inertias, then Upsilon), U, D and seg (model.py, WORK_FIELDS); integer bookkeeping of O(nv) and
the contacts' O(m) blocks are allocated per call (their size depends on m).

Cost: the AB sweep and the Upsilon sweep are O(N).  For the m contact nodes, psi(c, i) is never
walked per contact (that would cost O(m N)): the nodes that carry contacts and the branch points
between them ("key" nodes, at most 2m - 1) split the tree into disjoint paths, the products of
psi along each path are formed once (O(N) in all), and each contact's 6 x w pick-off block is
carried from key node to key node (O(m) per contact).  At every key node c the blocks of the
contacts in different sub-branches meet, and their Lambda blocks are formed there (Eq. 69)
exactly once per pair: O(m^2).

Pick-off B (Eq. 61): a force F at world point x on link k is the spatial force [x x F; F], so
B = [S(x); 1] and B^* V = u + w x x is the point's linear velocity (``width`` 3).  With
``width`` 6 the node also carries a moment: B^* V = [u + w x x; w] (linear first, as
``link_jacobian``), the 6-D OSCM of full-wrench nodes.
"""

import numpy as np

from .jit import JIT, helper
from .kinematics import forward_kinematics
from .spatial import I_H, I_J


@helper
def _spatial_inertia(I, b, out):
    """6x6 world spatial inertia [[J, S(h)], [S(h)^T, m 1]] of body b, added into ``out``."""
    m = I[b, 0]
    h0, h1, h2 = I[b, I_H], I[b, I_H + 1], I[b, I_H + 2]
    Jxx, Jxy, Jxz, Jyy, Jyz, Jzz = I[b, I_J], I[b, I_J + 1], I[b, I_J + 2], I[b, I_J + 3], I[b, I_J + 4], I[b, I_J + 5]
    out[0, 0] += Jxx
    out[0, 1] += Jxy
    out[0, 2] += Jxz
    out[1, 0] += Jxy
    out[1, 1] += Jyy
    out[1, 2] += Jyz
    out[2, 0] += Jxz
    out[2, 1] += Jyz
    out[2, 2] += Jzz
    # S(h) in the upper right, S(h)^T = -S(h) in the lower left
    out[0, 4] += -h2
    out[0, 5] += h1
    out[1, 3] += h2
    out[1, 5] += -h0
    out[2, 3] += -h1
    out[2, 4] += h0
    out[4, 0] += -h2
    out[5, 0] += h1
    out[3, 1] += h2
    out[5, 1] += -h0
    out[3, 2] += -h1
    out[4, 2] += h0
    for r in range(3, 6):
        out[r, r] += m


@helper
def last_dof(m, b):
    """The last DoF node of body b's joint (where the body's inertia sits in the DoF tree)."""
    return m.v_idx[b + 1] - 1 if b + 1 < m.N else m.nv - 1


@helper
def articulated_body_inertias(m, Phi, I, P, U, D):
    """Tip-to-base AB sweep over the DoF tree: P(k), U(k) = P(k) H^*(k), D(k) = H(k) U(k).

    Returns False if some D(k) is not positive (the mass matrix is then not positive definite).
    """
    nv = m.nv
    P[:] = 0.0
    for b in range(m.N):
        _spatial_inertia(I, b, P[last_dof(m, b)])
    for k in range(nv - 1, -1, -1):
        d = 0.0
        for r in range(6):
            u = 0.0
            for c in range(6):
                u += P[k, r, c] * Phi[k, c]
            U[k, r] = u
            d += Phi[k, r] * u
        d += m.armature[k]                             # + the reflected rotor inertia
        if not d > 0.0:
            return False
        D[k] = d
        par = m.dof_parent[k]
        if par >= 0:                                   # P(p(k)) += P(k) - U D^-1 U^*
            for r in range(6):
                for c in range(6):
                    P[par, r, c] += P[k, r, c] - U[k, r] * U[k, c] / d
    return True


@helper
def compliance_kernel(m, Phi, U, D, Ups):
    """Base-to-tip sweep of Eq. 68: Upsilon(k) = psi^* Upsilon(p(k)) psi + H^* D^-1 H.

    With psi = 1 - g H, g = U / D:  psi^* Y psi = Y - H^* (g^* Y) - (Y g) H + H^* H (g^* Y g).
    """
    Yg = np.empty(6)
    for k in range(m.nv):
        par = m.dof_parent[k]
        d = D[k]
        if par < 0:
            for r in range(6):
                for c in range(6):
                    Ups[k, r, c] = Phi[k, r] * Phi[k, c] / d
            continue
        gYg = 0.0
        for r in range(6):
            y = 0.0
            for c in range(6):
                y += Ups[par, r, c] * U[k, c]
            Yg[r] = y / d
            gYg += U[k, r] * Yg[r] / d
        for r in range(6):
            for c in range(6):
                Ups[k, r, c] = (Ups[par, r, c] - Phi[k, r] * Yg[c] - Yg[r] * Phi[k, c]
                                + Phi[k, r] * Phi[k, c] * (gYg + 1.0 / d))


@helper
def _apply_psi(Phi, U, D, k, X):
    """X <- psi(p(k), k) X = X - U(k) D^-1(k) (H(k) X), column by column."""
    for c in range(X.shape[1]):
        s = 0.0
        for r in range(6):
            s += Phi[k, r] * X[r, c]
        s /= D[k]
        for r in range(6):
            X[r, c] -= U[k, r] * s


@helper
def _pick_off(R, p, body, local, width, B):
    """B (6 x width) of the node at ``local`` (body frame) of ``body``; see the module doc."""
    x0 = p[body, 0] + R[body, 0, 0] * local[0] + R[body, 0, 1] * local[1] + R[body, 0, 2] * local[2]
    x1 = p[body, 1] + R[body, 1, 0] * local[0] + R[body, 1, 1] * local[1] + R[body, 1, 2] * local[2]
    x2 = p[body, 2] + R[body, 2, 0] * local[0] + R[body, 2, 1] * local[1] + R[body, 2, 2] * local[2]
    B[:] = 0.0
    # force columns: [x x e_c; e_c]
    B[0, 1], B[0, 2] = -x2, x1
    B[1, 0], B[1, 2] = x2, -x0
    B[2, 0], B[2, 1] = -x1, x0
    B[3, 0], B[4, 1], B[5, 2] = 1.0, 1.0, 1.0
    if width == 6:                         # moment columns: [e_c; 0]
        B[0, 3], B[1, 4], B[2, 5] = 1.0, 1.0, 1.0


@helper
def contact_compliance(m, q, cbody, clocal, width, Lam, ws):
    """Lambda (nc*width square, nc = len(cbody), zeroed here) for contact nodes (cbody[i], clocal[i]).

    ``cbody[i]`` is the body index (-1: a link fixed to the world, whose rows stay zero) and
    ``clocal[i]`` the node in that body's frame; ``ws`` the workspace views (scratch; leaves
    the placements ws.R, ws.pos, ws.Phi at q).  Returns False if M is not positive definite.
    """
    nv, nc = m.nv, cbody.shape[0]
    w = width
    Lam[:] = 0.0
    forward_kinematics(m, q, ws)
    R, p, Phi = ws.R, ws.pos, ws.Phi
    U, D = ws.U, ws.D
    if not articulated_body_inertias(m, Phi, ws.I, ws.P, U, D):
        return False
    Ups = ws.P                                # P is no longer needed: reuse its storage
    compliance_kernel(m, Phi, U, D, Ups)
    dof_parent = m.dof_parent

    # --- key nodes: contact nodes and branch points between them ---------------------------
    here_head = -np.ones(nv, dtype=np.int64)  # contacts at a node, as linked lists
    nxt = -np.ones(nc, dtype=np.int64)
    count = np.zeros(nv, dtype=np.int64)      # contacts in the subtree of each node
    m_eff = 0
    for i in range(nc - 1, -1, -1):
        if cbody[i] >= 0:
            k = last_dof(m, cbody[i])
            nxt[i] = here_head[k]
            here_head[k] = i
            count[k] += 1
            m_eff += 1
    if m_eff == 0:
        return True
    active_children = np.zeros(nv, dtype=np.int64)
    for k in range(nv - 1, -1, -1):
        par = dof_parent[k]
        if par >= 0 and count[k] > 0:
            count[par] += count[k]
            active_children[par] += 1
    key = np.zeros(nv, dtype=np.bool_)
    for k in range(nv):
        key[k] = count[k] > 0 and (here_head[k] >= 0 or active_children[k] >= 2)

    # psi(kp(k), k) along the disjoint paths between a key node and its key parent: O(N) total
    seg = ws.seg
    child_head = -np.ones(nv, dtype=np.int64)   # key children of each key node (linked list)
    sibling = -np.ones(nv, dtype=np.int64)
    for k in range(nv - 1, -1, -1):
        if not key[k] or count[k] == m_eff:   # the top key node needs no path
            continue
        S = seg[k]
        S[:] = 0.0
        for r in range(6):
            S[r, r] = 1.0
        t = k
        while True:
            _apply_psi(Phi, U, D, t, S)
            t = dof_parent[t]
            if t < 0 or key[t]:
                break
        if t >= 0:                            # else k tops its own root's subtree: nodes in
            sibling[k] = child_head[t]        # different subtrees of the fixed world are
            child_head[t] = k                 # uncoupled (Upsilon(world) = 0, Lam block = 0)

    # --- Lambda blocks where the branches meet (Eq. 69): each pair once, O(nc^2) -------------
    blk = np.empty((nc, 6, w))                 # psi(c, node_i) B_i at the current key node c
    Yb = np.empty((nc, 6, w))                  # Upsilon(c) blk_i
    head = -np.ones(nv, dtype=np.int64)       # contacts in the subtree of a processed key node
    tail = -np.ones(nv, dtype=np.int64)
    link = -np.ones(nc, dtype=np.int64)
    for c in range(nv - 1, -1, -1):
        if not key[c]:
            continue
        Y = Ups[c]
        h, tl = -1, -1                        # the list of c, built group by group
        # group 0: the contacts on this node's body; then one group per key child
        g = -1
        while True:
            if g == -1:
                gh = here_head[c]
                i = gh
                while i >= 0:
                    _pick_off(R, p, cbody[i], clocal[i], w, blk[i])
                    i = nxt[i]
            else:
                gh = head[g]
                i = gh
                while i >= 0:
                    _apply_psi_block(seg[g], blk[i])
                    i = link[i]
            # Upsilon(c) times the group's blocks, then pairs with the earlier groups and within
            i = gh
            while i >= 0:
                for r in range(6):
                    for col in range(w):
                        s = 0.0
                        for t in range(6):
                            s += Y[r, t] * blk[i, t, col]
                        Yb[i, r, col] = s
                i = nxt[i] if g == -1 else link[i]
            i = gh
            while i >= 0:
                j = h
                while j >= 0:                 # earlier groups: LCA is c
                    _lambda_block(blk, Yb, j, i, w, Lam)
                    j = link[j]
                if g == -1:                   # same body: pairs within the group (and i, i)
                    j = gh
                    while j >= 0:
                        _lambda_block(blk, Yb, j, i, w, Lam)
                        if j == i:
                            break
                        j = nxt[j]
                i = nxt[i] if g == -1 else link[i]
            # append the group to the list of c
            i = gh
            if g == -1:
                while i >= 0:
                    if tl < 0:
                        h = i
                    else:
                        link[tl] = i
                    tl = i
                    link[i] = -1
                    i = nxt[i]
            elif gh >= 0:
                if tl < 0:
                    h = gh
                else:
                    link[tl] = gh
                tl = tail[g]
            g = child_head[c] if g == -1 else sibling[g]
            if g < 0:
                break
        head[c], tail[c] = h, tl
    return True


@helper
def _apply_psi_block(S, X):
    """X <- S X for a 6x6 S and a 6 x w block X."""
    tmp = np.empty(6)
    for col in range(X.shape[1]):
        for r in range(6):
            s = 0.0
            for t in range(6):
                s += S[r, t] * X[t, col]
            tmp[r] = s
        for r in range(6):
            X[r, col] = tmp[r]


@helper
def _lambda_block(blk, Yb, i, j, w, Lam):
    """Lambda(i, j) = blk_i^* Upsilon(c) blk_j (and its transpose at (j, i))."""
    for a in range(w):
        for b in range(w):
            s = 0.0
            for t in range(6):
                s += blk[i, t, a] * Yb[j, t, b]
            Lam[i * w + a, j * w + b] = s
            Lam[j * w + b, i * w + a] = s
