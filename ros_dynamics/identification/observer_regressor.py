"""The momentum residual's dependence on the friction and payload parameters (no ROS).

One observer step ``r_{k+1} = a r_k + (1 − a) w_k`` with ``w_k = (p_{k+1} − p_k)/Δt − τ_{k+1} −
½(β_k + β_{k+1})`` is linear in ``p = M v`` and ``β = Cᵀ v − g − τ_f``, which are linear in a
payload's ten inertial parameters (Atkeson, An & Hollerbach 1986; :mod:`.payload` computes the
columns with the core library) and in the friction coefficients.  So the residual of the
observer that has the parameters θ is ``r(θ) = r_0 + Σ_j θ_j ρ_j``, ``ρ_j`` the same filter run
on the change of ``(p, β)`` per unit of parameter ``j`` (:func:`regressor`).
"""

import numpy as np

from ..estimation.observer import filtered_columns, friction_torque
from ..estimation.rules import FRICTION_EPS
from .payload import PAYLOAD_PARAMETERS, PayloadColumns

__all__ = ['VELOCITY_EPS', 'regressor']

#: the smoothing velocity of the Coulomb term: the node's observer's (one constant, rules.py)
VELOCITY_EPS = FRICTION_EPS


def regressor(model, samples, restart, gain, link, velocity_eps, friction=True,
               max_rows=60000, bridge=None, load_friction=False):
    """Columns ρ of the residual's dependence on the parameters, their names and the sample
    indices they are kept at.

    Streamed over the samples (the observer's filter, restarted where the pipeline restarted,
    held where it bridged a gap):
    ``w_k = (P_k − P_{k−1})/Δt − ½(B_k + B_{k−1})``, ``ρ_k = a ρ_{k−1} + (1 − a) w_k`` with
    ``a = e^{−K Δt}``, ``P``/``B`` the change of ``p``/``β`` per unit parameter.  Every
    ``stride``-th sample is kept (at most ``max_rows``): the residual is correlated over ~1/K,
    so thinning long recordings loses little and bounds the memory.  Returns (ρ (n, nv, p),
    names, indices (n,))."""
    T, nv = len(samples), int(model.nv)
    nj = len(model.joint_names)
    nb = nv - nj
    names = []
    if friction:
        names += [f'Fv[{n}]' for n in model.joint_names] + [f'Fc[{n}]' for n in model.joint_names]
    if load_friction:
        names += [f'Fl[{n}]' for n in model.joint_names]
    if link is not None:
        names += list(PAYLOAD_PARAMETERS)
        pc = PayloadColumns(model, link)
    npar = len(names)
    stride = max(1, -(-T // max_rows))
    idx = np.arange(0, T, stride)
    rho = np.zeros((idx.size, nv, npar))
    jr, jc = np.arange(nb, nv), np.arange(nj)

    def columns():
        for k in range(T):
            P, B = np.zeros((nv, npar)), np.zeros((nv, npar))
            if friction:
                # β gains −τ_f: the column of a coefficient is −φ(v) in β
                v = samples.v[k, nb:]
                B[jr, jc] = -v
                B[jr, nj + jc] = -friction_torque(v, 0.0, 1.0, velocity_eps)   # the law's shape
            if load_friction:
                # a Coulomb level growing with the joint's load torque (Mamedov et al. 2020)
                B[jr, 2 * nj * friction + jc] = -friction_torque(
                    samples.v[k, nb:], 0.0, np.abs(samples.tau[k, nb:]), velocity_eps)
            if link is not None:
                P[:, npar - 10:], B[:, npar - 10:] = pc.observer_terms(samples.q[k],
                                                                       samples.v[k])
            yield P, B

    for k, cur in enumerate(filtered_columns(samples.t, columns(), restart, gain, bridge)):
        if k % stride == 0:
            rho[k // stride] = cur
    return rho, names, idx


