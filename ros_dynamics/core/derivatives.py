"""The public derivatives of the dynamics: dtau/dv from Algorithm 1 (Echeandia & Wensing 2021,
Remark 3, below), and dtau/dq, dtau/dv, da/dq, da/dv, M^-1 by the analytical RNEA derivatives of
Carpentier & Mansard 2018 (rnea_derivatives.py, forward_dynamics_derivatives.py), one state or
a batch.  Derivatives with respect to q are in the tangent space: column j is d/de_j at e = 0 of
the function at q (+) e (configuration.integrate; a floating base's displacement in its own
frame), as Pinocchio's computeRNEADerivatives / computeABADerivatives.

dtau/dv of inverse dynamics from Algorithm 1 (Echeandia & Wensing 2021, Remark 3), floating base included.

Inverse dynamics is tau = M(q) a + h(q, v) + g(q) with the bias h = C(q, v) v, quadratic in v.
With Gamma[i, j, k] := dC_ij/dv_k (C_ij = sum_k Gamma[i, j, k] v_k, the conventions' index order)

    dtau_i/dv_k = dh_i/dv_k = C_ik + sum_j Gamma[i, j, k] v_j.

Joint coordinates (Remark 3).  Gamma is symmetric in (j, k), so sum_j Gamma[i, j, k] v_j = C_ik
and dtau/dv = 2C: the Coriolis matrix of Algorithm 1, doubled, is the whole derivative.

Floating base.  The free joint's rates are quasi-velocities, the base twist nu_0 = [upsilon; omega]
in the base frame, and Gamma is no longer symmetric when j and k are both free-joint DoFs, so
2C is wrong there (by O(|M| |v|): max |2C - dtau/dv| = 15.7 on the bundled floating quadruped
at |v_i| <= 2).  The exact correction
follows from Remark 4's form of C (eq. (30)) with world-frame joint axes Phi_j and body
Jacobians J_b (column j = Phi_j for the DoFs j supporting body b, zero otherwise):

    C = sum_b J_b^T [ B(v_b, I_b) J_b + I_b Jdot_b ],   h = C v = sum_b J_b^T [ v_b x* I_b v_b + I_b zeta_b ],

with B the factorization of eq. (10), B(v, I) w = 1/2 [v x* I w + w x* I v - I (v x w)], and
zeta_b = Jdot_b v = sum_j (v_lambda(j) x Phi_j) v_j (lambda(j): the body j moves; an axis fixed in
that body has Phidot_j = v_lambda(j) x Phi_j, the time derivative of line 4).  Differentiating:

  * d/dv_k [v_b x* I_b v_b] = Phi_k x* I_b v_b + v_b x* I_b Phi_k = 2 B(v_b, I_b) Phi_k + I_b (v_b x Phi_k).
  * a 1-DoF joint k (a generalized coordinate) enters zeta_b through its own term and through
    the velocities of the joints below it: dzeta_b/dv_k = 2 Phidot_k - v_b x Phi_k.
  * the free joint's six terms sum to v_0 x v_0 = 0 (all six axes move with the base, v_0 =
    sum_{k<6} Phi_k v_k), so for k < 6 only the joints below contribute:
    dzeta_b/dv_k = Phi_k x (v_b - v_0) = (2 Phidot_k - v_b x Phi_k) - Phidot_k, Phidot_k = v_0 x Phi_k.

Summing with J_b^T, the 2 B Phi_k + 2 I_b Phidot_k terms rebuild 2 C[:, k] (eq. (30)); what is
left is, for the free-joint columns only,

    dtau/dv = 2C + E,   E[i, k] = -Phi_i^T I^C_{lambda(i)} (v_0 x Phi_k)   (k < 6),  E[:, k] = 0 (k >= 6),

where I^C_{lambda(i)} is the composite inertia of the subtree of DoF i's body (every body lies
below the free joint).  The free joint's axes span the motion space, in base coordinates
Phi_{0:6} = 1_6 (linear first), so v_0 x Phi_k = sum_l Phi_l (nu_0 x)_{lk} with the 6x6 motion
cross-product matrix of the base twist in the base frame,

    (nu_0 x) = [[omega x, upsilon x], [0, omega x]]   (linear first, as the free-flyer v),

and Phi_i^T I^C_{lambda(i)} Phi_l = M_il for l < 6 (the CRBA entry, eq. (19)).  Hence

    dtau/dv = 2C - [ M[:, 0:6] (nu_0 x) | 0 ]                                              (*)

an O(36 nv) correction from outputs Algorithm 1 already returns: no Gamma is formed.  For a
single free body (M = I, body frame) (*) reads (v x*) I + (I v) xbar* = d(v x* I v)/dv, the
derivative of the Newton-Euler bias.  E is the Boltzmann-Hamel term: the base frame's
quasi-velocities do not commute (their structure constants are those of (nu_0 x)).
"""

import numpy as np
from numba import njit

from . import kernels
from .api import batch_call, batch_threads, dynamics, run_kernel
from .jit import JIT
from .validation import check_batch


@njit(**JIT)
def free_joint_correction(M, v, D):
    """D[:, 0:6] -= M[:, 0:6] (nu_0 x), nu_0 = v[0:6] = [upsilon; omega] (eq. (*) above).

    Row by row, with r = M[i, 0:6] = [a; b]: r (nu_0 x) = [a x omega, a x upsilon + b x omega]
    (a^T (w x) = (a x w)^T).  O(36 nv), no temporaries.
    """
    ux, uy, uz, wx, wy, wz = v[0], v[1], v[2], v[3], v[4], v[5]
    for i in range(M.shape[0]):
        ax, ay, az, bx, by, bz = M[i, 0], M[i, 1], M[i, 2], M[i, 3], M[i, 4], M[i, 5]
        D[i, 0] -= ay * wz - az * wy
        D[i, 1] -= az * wx - ax * wz
        D[i, 2] -= ax * wy - ay * wx
        D[i, 3] -= ay * uz - az * uy + by * wz - bz * wy
        D[i, 4] -= az * ux - ax * uz + bz * wx - bx * wz
        D[i, 5] -= ax * uy - ay * ux + bx * wy - by * wx


def inverse_dynamics_dv(model, q, v, data=None):
    """dtau/dv of inverse dynamics, (nv, nv): 2C (Remark 3), with the floating base's exact
    correction -M[:, 0:6] (nu_0 x) in the free-joint columns (module docstring, eq. (*)).

    With ``data`` (an ``rd.Data`` of this model) the result is written into ``data.dtau_dv``
    and returned, no allocation; M and C are left in ``data`` as :func:`dynamics` leaves them.
    """
    d = dynamics(model, q, v, data=data)       # validates q, v (ValueError on bad input)
    if data is None:
        out = d.C                              # a fresh array: ours to overwrite
        out *= 2.0
    else:
        out = data.dtau_dv
        np.multiply(d.C, 2.0, out=out)
    if model.floating_base:
        free_joint_correction(d.M, np.asarray(v, dtype=float), out)
    return out


# -- Carpentier & Mansard 2018: dtau/dq, dtau/dv and the forward dynamics derivatives -------------

def inverse_dynamics_derivatives(model, q, v, a, data=None):
    """(dtau/dq, dtau/dv), each (nv, nv), of tau = inverse_dynamics(q, v, a), by the analytical
    RNEA derivatives (Carpentier & Mansard 2018; rnea_derivatives.py); q in the tangent space.
    dtau/da is the mass matrix (with ``data``: left in ``data.M``).

    With ``data``: written into ``data.dtau_dq``, ``data.dtau_dv`` and returned (views, no
    allocation); without, new arrays.  ValueError for bad input.
    """
    out = np.empty((2, model.nv, model.nv)) if data is None else data.derivatives
    run_kernel(kernels.derivatives, model, data, 'inverse_dynamics_derivatives', ('q', 'v', 'a'),
               q, v, a, out, 0)
    if data is not None:
        return data.dtau_dq, data.dtau_dv
    return out[0], out[1]


def forward_dynamics_derivatives(model, q, v, tau, data=None):
    """(da/dq, da/dv, da/dtau = M^-1), each (nv, nv), of a = forward_dynamics(q, v, tau):
    -M^-1 times the RNEA derivatives at that a (Carpentier & Mansard 2018;
    forward_dynamics_derivatives.py); q in the tangent space.

    With ``data``: written into ``data.da_dq``, ``data.da_dv``, ``data.Minv`` and returned
    (views, no allocation; ``data.ddq`` holds a, ``data.dtau_dq`` and ``data.dtau_dv`` the RNEA
    derivatives at a).  ValueError for bad input or a mass matrix that is not positive definite.
    """
    out = np.empty((5, model.nv, model.nv)) if data is None else data.derivatives
    run_kernel(kernels.derivatives, model, data, 'forward_dynamics_derivatives',
               ('q', 'v', 'tau'), q, v, tau, out, kernels.FORWARD)
    if data is not None:
        return data.da_dq, data.da_dv, data.Minv
    return out[2], out[3], out[4]


_NO_MINV = np.zeros((0, 0, 0))


def _batch(model, Q, V, X, name, forward):
    Q = check_batch(model, Q, model.nq, 'Q', True)
    V, X = check_batch(model, V, model.nv, 'V'), check_batch(model, X, model.nv, name)
    K, n = Q.shape[0], model.nv
    if V.shape[0] != K or X.shape[0] != K:
        raise ValueError(f'Q, V and {name} must have the same number of rows '
                         f'({K}, {V.shape[0]}, {X.shape[0]})')
    out = np.empty((3 if forward else 2, K, n, n))
    Minv = out[2] if forward else _NO_MINV
    bad = batch_call(kernels.derivatives_batch, batch_threads(K, len(out) * n * n),
                     model.packed, Q, V, X, out[0], out[1], Minv,
                     kernels.FORWARD if forward else 0)
    if bad >= 0:
        raise ValueError(f'the mass matrix is not positive definite at Q[{bad}]')
    return tuple(out)


def inverse_dynamics_derivatives_batch(model, Q, V, A):
    """:func:`inverse_dynamics_derivatives` for K states in one compiled call: Q (K, nq), V, A
    (K, nv) -> (dtau/dq, dtau/dv), each (K, nv, nv), on numba's threads as
    :func:`dynamics_batch` (one contiguous block of rows per thread)."""
    return _batch(model, Q, V, A, 'A', False)


def forward_dynamics_derivatives_batch(model, Q, V, TAU):
    """:func:`forward_dynamics_derivatives` for K states in one compiled call: Q (K, nq), V, TAU
    (K, nv) -> (da/dq, da/dv, M^-1), each (K, nv, nv); threads as :func:`dynamics_batch`."""
    return _batch(model, Q, V, TAU, 'TAU', True)
