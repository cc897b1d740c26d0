"""Identification of the whole model from one recording of free motion (no ROS).

What is identified, per body ``i`` of the model (links merged by fixed joints form one body)
and per joint ``j``:

* the ten inertial parameters ``π_i = [m, h_x, h_y, h_z, I_xx, I_xy, I_xz, I_yy, I_yz, I_zz]``
  (first moment ``h = m c`` and inertia ``I_o`` about the body origin, body axes);
* joint friction ``τ_f,j = F_v,j v_j + F_c,j tanh(v_j / ε)`` (the observer's law,
  :func:`ros_dynamics.estimation.observer.friction_torque`, whose basis gives the columns);
* the reflected rotor inertia ``I_a,j`` (armature: ``M + diag(I_a)``);
* a constant offset ``b_j`` of the measured joint torque (``τ_meas = τ + b``).

All of them enter the joint torques linearly (Atkeson, An & Hollerbach 1986; Khalil & Dombre
2002, Ch. 12), so the momentum residual of the observer with the parameters θ is
``r(θ) = r_0 + P (θ − θ_0)`` exactly as in :mod:`.calibration`: ``r_0`` the residual of the
node's pipeline with the URDF's model, the columns of ``P`` the same filter run on the change of
``p = M v`` and ``β = Cᵀv − g − τ_f`` per unit parameter.  The columns of the inertial
parameters come from the core library (the payload regressor generalised to every body): the
dynamics of models whose only inertia is a unit parameter set on one body, on all samples at
once (:func:`ros_dynamics.core.api.dynamics_batch`).

Base parameters.  Not every combination of the 10 N inertial parameters affects the joint
torques (a link's rotation about its own joint axis leaves some products unobservable; mass
near the base is invisible to gravity...).  With the columns scaled by each parameter's
natural size (``m_0``, ``m_0 L``, ``m_0 L²`` with the body's mass ``m_0`` and length ``L``,
1 N m s/rad, ...), the singular values of the scaled regressor below ``tol · σ_max``
(``tol`` = :data:`BASE_TOLERANCE` = 1e-3) span the directions the recording does not determine;
the others are the identifiable (base) combinations (Gautier 1990 computes them by QR; the SVD
gives the same space, Khalil & Dombre 2002, Sec. 12.4).  Their number, the condition number of
the base part and the parameters with no component in the unidentified space are reported.

Physical consistency and regularisation (:mod:`.inertial_parameters`): every body's
pseudo-inertia positive definite (Wensing, Kim & Slotine 2017), friction and armature
non-negative, the directions the data do not determine held at the URDF by a prior.  A link may
end up lighter than its URDF.
"""

from dataclasses import dataclass, field

import numpy as np

from ..core.api import dynamics_batch
from ..estimation.observer import filtered_columns, friction_torque
from .calibration import calibrate
from .check import check_recording, contact_stretches
from .inertial_parameters import (BASE_TOLERANCE, body_inertia, consistent_fit,
                                  inertial_parameters, parameter_vector)
from .observer_regressor import VELOCITY_EPS   # the observer's Coulomb smoothing, one constant
from .payload import inertia_matrix, skew2
from .replay import increasing_in_time, observer_residuals
from .samples import CalibrationError, Samples
from .thresholds import Thresholds, fit_thresholds

__all__ = ['BaseParameters', 'HeldOut', 'Identification', 'identify', 'identify_recording',
           'payload_against_reference', 'regressor_columns', 'typical_blocks', 'unit_models']

# ---------------------------------------------------------------------------------------------
# The regressor's columns from the core library


def unit_models(model, body):
    """Models whose only inertia is on ``body``: 1 kg at its origin (π₀), and π₀ + e_j."""
    N = model.nbodies
    zero = dict(mass=np.zeros(N), com=np.zeros((N, 3)), inertia=np.zeros((N, 3, 3)))
    models = []
    for j in range(10):
        pi = np.zeros(10)
        pi[0] = 1.0
        if j > 0:
            pi[j] += 1.0
        m, c = pi[0], pi[1:4] / pi[0]
        Ic = inertia_matrix(pi[4:]) - m * skew2(c)
        mass, com, inertia = (zero[k].copy() for k in ('mass', 'com', 'inertia'))
        mass[body], com[body], inertia[body] = m, c, Ic
        models.append(model.copy(mass=mass, com=com, inertia=inertia,
                                 armature=np.zeros(int(model.nv))))
    return models


def regressor_columns(model, q, v, body):
    """Per-sample changes of ``p = M v`` and of ``Cᵀv − g`` per unit inertial parameter of
    ``body``: two arrays (T, nv, 10), columns in
    :data:`ros_dynamics.identification.payload.PAYLOAD_PARAMETERS` order.  Exact: the dynamics is
    linear in π, and each column is the dynamics of a model whose only inertia is on ``body``
    (1 kg at its origin, then that plus a unit of one parameter)."""
    T, nv = q.shape[0], int(model.nv)
    P = np.empty((T, nv, 10))
    B = np.empty((T, nv, 10))
    for j, mdl in enumerate(unit_models(model, body)):
        d = dynamics_batch(mdl, q, v)
        P[:, :, j] = np.einsum('kij,kj->ki', d.M, v)
        B[:, :, j] = np.einsum('kji,kj->ki', d.C, v) - d.g
    P[:, :, 1:] -= P[:, :, :1]
    B[:, :, 1:] -= B[:, :, :1]
    return P, B


def _joint_columns(model, v, velocity_eps, tau=None):
    """(P, B) (T, nv, 4 nj) of F_v, F_c (``β`` gains ``−τ_f``: basis of ``friction_torque``),
    armature (``p`` gains ``I_a v``) and torque offset (``τ`` loses ``b``: ``β`` gains ``−b``);
    with the measured torques ``tau`` (T, nv) also F_l, a Coulomb level growing with the joint's
    load torque, ``F_l |τ| tanh(v/ε)`` (Mamedov et al. 2020): (T, nv, 5 nj)."""
    T, nv = v.shape
    nj = len(model.joint_names)
    nb = nv - nj
    ncol = (4 if tau is None else 5) * nj
    P = np.zeros((T, nv, ncol))
    B = np.zeros((T, nv, ncol))
    vj = v[:, nb:]
    for j in range(nj):
        B[:, nb + j, j] = -friction_torque(vj[:, j], 1.0, 0.0, velocity_eps)
        B[:, nb + j, nj + j] = -friction_torque(vj[:, j], 0.0, 1.0, velocity_eps)
        P[:, nb + j, 2 * nj + j] = vj[:, j]
        B[:, nb + j, 3 * nj + j] = -1.0
        if tau is not None:
            B[:, nb + j, 4 * nj + j] = -friction_torque(vj[:, j], 0.0, np.abs(tau[:, nb + j]),
                                                        velocity_eps)
    return P, B


def _filter(t, P, B, restart, gain, keep, bridge=None):
    """The observer's filter on the columns (observer.filtered_columns); returns the rows
    ``keep`` (indices)."""
    out = np.empty((keep.size,) + P.shape[1:])
    pos = np.full(P.shape[0], -1)
    pos[keep] = np.arange(keep.size)
    for k, cur in enumerate(filtered_columns(t, zip(P, B), restart, gain, bridge)):
        if pos[k] >= 0:
            out[pos[k]] = cur
    return out


# ---------------------------------------------------------------------------------------------
# The fit


@dataclass
class BaseParameters:
    """What the recording determines (Gautier 1990; module text): the number of identified
    directions (``rank``) of ``n_parameters``, the condition number of the identified part,
    and the names of the parameters determined individually."""
    rank: int = 0
    n_parameters: int = 0
    condition: float = float('nan')
    identifiable: list = field(default_factory=list)


@dataclass
class HeldOut:
    """The held-out data: what they are (``label``), the sample indices fitted and held out of
    the recording, the residual statistics with the URDF's and the identified model
    (``before``/``after``: rms, max per joint), the held-out residuals (n, nj) of the fit's
    prediction, and the held-out replay through the node's cycle (``check``, a
    :class:`~ros_dynamics.identification.check.Check`)."""
    label: str = ''
    fit_rows: np.ndarray = None
    test_rows: np.ndarray = None
    before: dict = field(default_factory=dict)
    after: dict = field(default_factory=dict)
    residual_before: np.ndarray = None
    residual_after: np.ndarray = None
    check: object = None


@dataclass
class Identification:
    """Result of :func:`identify` (SI units): per body the identified and the URDF's π, per
    joint friction, armature and torque offset; what the recording determines (``base``), the
    held-out judgement (``held``) and the thresholds."""
    joint_names: list
    body_names: list
    parameters: np.ndarray              # (N, 10) identified π per body
    urdf_parameters: np.ndarray         # (N, 10) the URDF's
    friction_viscous: np.ndarray
    friction_coulomb: np.ndarray
    armature: np.ndarray
    torque_offset: np.ndarray
    base: BaseParameters = field(default_factory=BaseParameters)
    velocity_eps: float = VELOCITY_EPS
    gain: np.ndarray = None
    held: HeldOut = field(default_factory=HeldOut)
    contact_thresholds: Thresholds = None
    notes: list = field(default_factory=list)
    friction_load: np.ndarray = None    # F_l [N m per N m] when selected; friction_coulomb is
                                        # then the constant law at this recording's load

    # the base level of the thresholds (contact_thresholds: all their rows)
    thresholds = property(lambda self: self.contact_thresholds.base)

    def node_parameters(self):
        """The ``dynamics`` node's parameters of this identification (the inertials go into the
        URDF: :func:`ros_dynamics.identification.urdf_inertials.replace_inertials`)."""
        return {'observer_gain': [float(x) for x in np.atleast_1d(self.gain)],
                'observer_friction_viscous': [float(x) for x in self.friction_viscous],
                'observer_friction_coulomb': [float(x) for x in self.friction_coulomb],
                'observer_torque_offset': [float(x) for x in self.torque_offset],
                'joint_armature': [float(x) for x in self.armature],
                **self.contact_thresholds.parameters()}

    def model(self, model):
        """``model`` with the identified inertials and armature (what the node builds from the
        identified URDF and ``joint_armature``; friction is an observer setting)."""
        mass, com, inertia = model.mass.copy(), model.com.copy(), model.inertia.copy()
        for i, pi in enumerate(self.parameters):
            mass[i], com[i], inertia[i] = body_inertia(pi)
        armature = model.armature.copy()
        armature[int(model.nv) - len(self.joint_names):] = self.armature
        return model.copy(mass=mass, com=com, inertia=inertia, armature=armature)

    def summary(self):
        f = lambda a: '[' + ', '.join(f'{x:.4g}' for x in a) + ']'  # noqa: E731
        b = self.base
        out = [f'base parameters: {b.rank} of {b.n_parameters} combinations identified '
               f'(tolerance {BASE_TOLERANCE:g} of the largest singular value), condition number '
               f'{b.condition:.3g}',
               f'individually identified: {len(b.identifiable)} ({", ".join(b.identifiable[:12])}'
               f'{" ..." if len(b.identifiable) > 12 else ""})']
        for i, name in enumerate(self.body_names):
            m0, m1 = self.urdf_parameters[i, 0], self.parameters[i, 0]
            out.append(f'  {name}: mass {m0:.4g} -> {m1:.4g} kg, CoM '
                       f'{f(self.parameters[i, 1:4] / m1)} m')
        out += [f'friction viscous [N m s/rad]: {f(self.friction_viscous)}',
                f'friction Coulomb [N m]:       {f(self.friction_coulomb)}']
        if self.friction_load is not None:
            out.append(f'friction growing with |tau| [N m per N m]: {f(self.friction_load)} (in '
                       'the fit; the Coulomb level above is the constant law at this '
                       'recording\'s load, which the node runs)')
        out += [
                f'armature [kg m²]:             {f(self.armature)}',
                f'torque offset [N m]:          {f(self.torque_offset)}']
        if self.held.label:
            out.append(f'held out: {self.held.label}')
        for k in ('before', 'after'):
            s = getattr(self.held, k)
            if s:
                out.append(f'held-out residual {k:6s}: rms {f(s["rms"])}, max |r| '
                           f'{f(s["max"])} N m' + (' (replayed through the node\'s cycle)'
                                                   if k == 'after' and self.held.check else ''))
        if self.contact_thresholds is not None:
            out.append(self.contact_thresholds.describe(f))
        out += self.held.check.summary() if self.held.check is not None else []
        return out + self.notes


def identify(model, samples, residual, restart, gain=50.0, holdout=0.3, max_rows=5000,
             friction=True, armature=True, offset=True, velocity_eps=VELOCITY_EPS,
             rows_mask=None, bridge=None, load_friction=False):
    """Fit every body's inertial parameters, joint friction, armature and torque offsets.

    ``residual`` (T, nv), ``restart`` (T,) and ``bridge`` (T,) or None: the node pipeline's
    residual with the URDF's model on ``samples``, where it restarted and where it bridged a
    gap (:func:`.replay.observer_residuals`).
    The first ``1 − holdout`` of the recording is fitted, the rest held out for the report.
    ``rows_mask`` (T,) bool: samples allowed in the fit (e.g. contact stretches excluded).
    ``load_friction``: a Coulomb friction growing with the joint's load torque in the fit
    (False, the default: the node's constant law; True; or ``'auto'``, as a payload's
    reference is identified, :func:`payload_against_reference`: kept when it lowers the
    residual of the last 30 % of the fitted samples, fitted on the first 70 %, by at least 5 %,
    :func:`_load_friction_selected`).
    Returns an :class:`Identification`; raises :class:`CalibrationError` when the recording
    cannot give it.
    """
    nj = len(model.joint_names)
    nb = int(model.nv) - nj
    gain = np.broadcast_to(np.asarray(gain, dtype=float), (int(model.nv),)).copy()
    if not 0.0 <= holdout < 1.0:
        raise ValueError('holdout must be in [0, 1)')
    if load_friction not in ('auto', True, False):
        raise ValueError("load_friction must be 'auto', True or False")
    valid = np.all(np.isfinite(residual), axis=1) & ~restart
    if rows_mask is not None:
        valid &= rows_mask
    T = len(samples)
    keep = np.arange(0, T, max(1, -(-T // max_rows)))
    t_split = samples.t[0] + (1.0 - holdout) * (samples.t[-1] - samples.t[0])
    fit_rows = keep[valid[keep] & (samples.t[keep] <= t_split)]
    test_rows = keep[valid[keep] & (samples.t[keep] > t_split)]
    if fit_rows.size < 50:
        raise CalibrationError(f'{fit_rows.size} usable samples to fit: too few')
    load = friction and load_friction is not False
    rho = _columns(model, samples, restart, gain, keep, bridge, velocity_eps, load)
    par = parameter_vector(model, friction, armature, offset, load)
    pos = np.full(T, -1)
    pos[keep] = np.arange(keep.size)
    rho_fit, r_fit = rho[pos[fit_rows]][:, nb:, :], residual[fit_rows][:, nb:]
    notes = []
    if load and load_friction == 'auto':
        ratio = _load_friction_selected(model, par, rho_fit, r_fit)
        notes.append(f'load-dependent Coulomb friction (F_c + F_l |tau|, Mamedov et al. 2020) '
                     f'{"fitted" if ratio <= 0.95 else "not fitted"}: on the last 30 % of the '
                     f'fitted samples its residual\'s mean square is {ratio:.3f} of the constant '
                     'law\'s, fitted on the first 70 % (kept at <= 0.95)')
        load = ratio <= 0.95
        par.free[10 * model.nbodies + 4 * nj:] = load
    x, base, dropped, status = _robust_fit(model, par, rho_fit, r_fit, samples.t[fit_rows])
    theta = par.theta0 + x * par.scale
    theta[par.nonnegative] = np.maximum(theta[par.nonnegative], 0.0)   # friction, armature
    ident = _identification(model, par, theta, samples, fit_rows, load, base, velocity_eps,
                            gain)
    ident.held.test_rows = test_rows
    ident.notes += notes
    if status != 'optimal':
        ident.notes.append(f'note: the consistent fit ended {status}')
    if dropped:
        ident.notes.append(f'{dropped} of {fit_rows.size} fitted samples left out: 0.25 s blocks '
                           'whose residual stays far above the rest (contact or a large '
                           'unmodelled effect)')
    if test_rows.size:
        r_before = residual[test_rows][:, nb:]
        r_after = r_before + rho[pos[test_rows]][:, nb:, :] @ (theta - par.theta0)
        ident.held.before, ident.held.after = _stats(r_before), _stats(r_after)
        ident.held.residual_before, ident.held.residual_after = r_before, r_after
    return ident


def _identification(model, par, theta, samples, fit_rows, load, base, velocity_eps, gain):
    """The :class:`Identification` of θ; with a load-dependent friction ``F_l``, the Coulomb
    level the node's constant law runs is ``F_c + F_l`` x the joint's mean load ``|τ|`` over
    the fitted samples while it moves (weights ``tanh²(v/ε)``)."""
    N, nj = model.nbodies, len(model.joint_names)
    nb = int(model.nv) - nj
    j0 = 10 * N
    fc = theta[j0 + nj:j0 + 2 * nj].copy()
    fl = theta[j0 + 4 * nj:j0 + 5 * nj].copy() if load else None
    if load:
        wt = np.tanh(samples.v[fit_rows, nb:] / velocity_eps) ** 2
        level = np.sum(wt * np.abs(samples.tau[fit_rows, nb:]), axis=0) / np.maximum(
            np.sum(wt, axis=0), 1e-12)
        fc += fl * level
    return Identification(
        list(model.joint_names), list(model.body_names), theta[:j0].reshape(N, 10), par.pi0,
        theta[j0:j0 + nj], fc, theta[j0 + 2 * nj:j0 + 3 * nj], theta[j0 + 3 * nj:j0 + 4 * nj],
        base=base, velocity_eps=velocity_eps, gain=gain, held=HeldOut(fit_rows=fit_rows),
        friction_load=fl)


def _scaled(par, rho, residual):
    """The fit's scaled, weighted regressor and right-hand side of the rows' columns ``rho``
    (n, nj, p) and ``residual`` (n, nj): rows weighted by 1 / (the joint's nominal residual
    rms), so that every joint counts; columns by the parameters' natural sizes."""
    n, nj, npar = rho.shape
    w = 1.0 / np.maximum(np.sqrt(np.mean(residual ** 2, axis=0)), 1e-6)
    W = np.tile(w, n)
    return (rho.reshape(-1, npar) * W[:, None]) * par.scale, residual.reshape(-1) * W


def _load_friction_selected(model, par, rho, residual):
    """The mean over the joints of the last 30 % of the rows' residual mean square with the
    load-dependent friction over that without it, both fitted (consistent) on the first 70 %."""
    n, nj, _ = rho.shape
    As, bs = _scaled(par, rho, residual)
    first = np.repeat(np.arange(n) < int(0.7 * n), nj)
    load = np.zeros(len(par.names), dtype=bool)
    load[10 * model.nbodies + 4 * nj:] = True
    ms = []
    for free in (par.free & ~load, par.free):
        x = consistent_fit(As[first], bs[first], par.theta0, par.scale, model.nbodies,
                           par.nonnegative, free)[0]
        e = (As[~first][:, free] @ x[free] + bs[~first]).reshape(-1, nj)
        ms.append(np.mean(e ** 2, axis=0))
    return float(np.mean(ms[1] / np.maximum(ms[0], 1e-300)))


def _columns(model, samples, restart, gain, keep, bridge, velocity_eps, load_friction=False):
    """ρ (keep, nv, 10 N + 4 nj (+ nj)): the filtered columns of every body's inertial
    parameters, then F_v, F_c, armature and offset per joint (and F_l)."""
    N, nj, nv = model.nbodies, len(model.joint_names), int(model.nv)
    rho = np.empty((keep.size, nv, 10 * N + (5 if load_friction else 4) * nj))
    for i in range(N):
        P, B = regressor_columns(model, samples.q, samples.v, i)
        rho[:, :, 10 * i:10 * i + 10] = _filter(samples.t, P, B, restart, gain, keep, bridge)
    P, B = _joint_columns(model, samples.v, velocity_eps,
                          samples.tau if load_friction else None)
    rho[:, :, 10 * N:] = _filter(samples.t, P, B, restart, gain, keep, bridge)
    return rho


def _robust_fit(model, par, rho, residual, t):
    """The consistent fit of the fitted rows' columns ``rho`` (n, nj, p) to their ``residual``
    (n, nj), rows weighted by 1 / (the joint's nominal residual rms) so that every joint counts;
    robustly (least trimmed squares over 0.25 s blocks, Rousseeuw 1984): blocks whose fitted
    residual is far above the typical block's (mean square > 25x the median on a joint: rms
    5x, e.g. a contact) are left out and the fit repeated, at most twice.  Returns (x,
    BaseParameters, samples left out, the solver's status)."""
    n, nj, npar = rho.shape
    As, bs = _scaled(par, rho, residual)
    use = np.ones(n, dtype=bool)
    for _ in range(3):
        sel = np.repeat(use, nj)
        x, rank, sv, determined, status = consistent_fit(As[sel], bs[sel], par.theta0,
                                                         par.scale, model.nbodies,
                                                         par.nonnegative, par.free)
        e = (As[:, par.free] @ x[par.free] + bs).reshape(n, nj)
        keep = typical_blocks(t, e)
        if np.array_equal(keep, use) or keep.sum() < 0.5 * n:
            break
        use = keep
    base = BaseParameters(rank, int(par.free.sum()),
                          float(sv[0] / sv[rank - 1]) if rank else float('inf'),
                          [nm for nm, d, f in zip(par.names, determined, par.free) if d and f])
    return x, base, n - int(use.sum()), status


def identify_recording(model, samples, gain=50.0, holdout=0.3, margin=2.0, floor=0.2,
                       held_out=None, **options):
    """:func:`identify` on a recording: the node pipeline's residual with the URDF's model
    (:func:`.replay.observer_residuals`), the fit on the first ``1 − holdout`` of the
    recording, then the held-out rest replayed through the node's cycle with the identified
    model, friction, armature and torque offsets: the thresholds cover every held-out sample
    (:func:`.thresholds.fit_thresholds`), except stretches called contact with the evidence
    :func:`.check.contact_stretches` reports, and the held-out replay with them is the check
    (:func:`.check.check_recording`, in ``ident.held.check``).

    ``held_out``: a second recording (:class:`.samples.Samples`) of *other* motion of the same
    robot: then the whole of ``samples`` is fitted and the held-out figures, the thresholds and
    the check come from ``held_out`` (motion the fit has not seen, not the tail of the same
    excitation)."""
    nv = int(model.nv)
    for what, smp in (('samples', samples), ('held-out samples', held_out)):
        if smp is not None and (smp.q.shape[1] != int(model.nq) or smp.v.shape[1] != nv):
            raise CalibrationError(f'{what} have {smp.q.shape[1]} positions and '
                                   f'{smp.v.shape[1]} velocities; the model needs {model.nq} '
                                   f'and {nv}')
    if len(samples) < 200:
        raise CalibrationError(f'{len(samples)} samples: too few to identify a model (need '
                               '>= 200, better tens of seconds of exciting motion)')
    samples = increasing_in_time(samples)
    base = observer_residuals(model, samples, gain)
    ident = identify(model, samples, base['r'], base['restart'], gain=gain,
                     holdout=0.0 if held_out is not None else holdout, bridge=base['bridge'],
                     **options)
    ident.notes += samples.notes
    if held_out is not None:
        if len(held_out) < 50:
            raise CalibrationError(f'{len(held_out)} held-out samples: too few (need >= 50)')
        held = increasing_in_time(held_out)
        ident.held.label = (f'a second recording ({len(held)} samples, '
                          f'{held.t[-1] - held.t[0]:.1f} s: other motion)')
        ident.notes += held.notes
    else:
        if ident.held.test_rows is None or not ident.held.test_rows.size:
            raise CalibrationError('no held-out samples to derive the thresholds from '
                                   '(holdout 0 and no second recording)')
        held = samples.slice(samples.t[int(ident.held.test_rows[0])] - samples.t[0])
        ident.held.label = (f'the last {holdout:.0%} of the recording ({len(held)} samples: the '
                          'same motion as the fit)')
    _judge_held_out(model, ident, held, gain, margin, floor)
    return ident


def _judge_held_out(model, ident, held, gain, margin, floor):
    """The held-out samples replayed through the node's cycle with the URDF's and with the
    identified model: the residual statistics, the thresholds and the check."""
    nb = int(model.nv) - len(model.joint_names)
    names = list(model.joint_names)
    idm = ident.model(model)
    settings = dict(gain=gain, friction_viscous=ident.friction_viscous,
                    friction_coulomb=ident.friction_coulomb, torque_offset=ident.torque_offset)
    after = observer_residuals(idm, held, **settings)['r']
    ok = np.all(np.isfinite(after), axis=1)
    t_h = held.t[ok]
    r_h, v_h = after[ok][:, nb:], held.v[ok][:, nb:]
    tau_h = held.tau[ok][:, nb:]
    contact, found = contact_stretches(t_h, r_h, v_h, tau_h, names)
    for st in found:
        ident.notes.append(f'held-out {st["start"]:.2f}-{st["stop"]:.2f} s from its start '
                           f'({st["duration"]:.2f} s): |r| up to '
                           f'{np.round(st["peak"], 3).tolist()} N m, '
                           + ('called contact, left out of the thresholds: ' if st['contact']
                              else 'stands out, kept in the thresholds: ') + st['why'])
    th = fit_thresholds(t_h[~contact], r_h[~contact], margin=margin, floor=floor,
                        coulomb=ident.friction_coulomb)
    ident.notes += th.notes
    ident.contact_thresholds = th
    ident.held.after = _stats(r_h[~contact])
    rb = observer_residuals(model, held, gain)['r'][ok][:, nb:][~contact]
    ident.held.before = _stats(rb[np.all(np.isfinite(rb), axis=1)])
    ident.held.check = check_recording(
        idm, held, **th.settings(),
        label=f'the held-out data, {ident.held.label} (the node\'s cycle, identified model and '
              'thresholds)', **settings)


def typical_blocks(t, e, block=0.25, ratio=25.0):
    """Mask of the rows of ``e`` (n, nj) in 0.25 s blocks whose mean square on every joint is
    at most ``ratio`` x that of the median block (a contact shows on some joints only)."""
    k = np.floor((t - t[0]) / block).astype(int)
    n = k.max() + 1
    cnt = np.maximum(np.bincount(k, minlength=n), 1)
    ms = np.stack([np.bincount(k, weights=e[:, j] ** 2, minlength=n) for j in range(e.shape[1])],
                  axis=1) / cnt[:, None]
    have = np.bincount(k, minlength=n) > 0
    score = np.max(ms / np.maximum(np.median(ms[have], axis=0), 1e-300), axis=1)
    ok = score <= ratio
    return ok[k]


def _stats(r):
    return {'rms': np.sqrt(np.mean(r ** 2, axis=0)), 'max': np.max(np.abs(r), axis=0)}


def payload_against_reference(model, samples, reference, link, gain=50.0, robot=None,
                              **options):
    """A payload on ``link`` as the difference between two recordings of the same robot: the
    robot's own model (every link, armature, torque offsets) identified on ``reference``
    (without the payload, :func:`identify_recording`), then the payload's ten parameters and
    the friction fitted on ``samples`` (with it) against that model
    (:func:`.calibration.calibrate`, with its standard errors), the torque offsets of the
    reference removed from the measured torques (``robot``: that identification when already
    made).  A load-dependent Coulomb friction ``F_l`` the reference selected is held in the
    payload's fit (fitted there too it trades against the payload's mass: on MuJoCo arms with
    0.1-0.2 N m per N m, -3 to -17 % of a 2.8 kg tool).  Returns (Identification of the robot,
    Calibration of the payload)."""
    if robot is None:      # the reference's friction law as the payload's (load or not)
        robot = identify_recording(model, reference, gain=gain,
                                   load_friction=options.get('load_friction', 'auto'))
    nb = int(model.nv) - len(model.joint_names)
    tau = samples.tau.copy()
    tau[:, nb:] -= robot.torque_offset
    shifted = Samples(samples.t, samples.q, samples.v, tau, samples.names, samples.t0_ns,
                      samples.notes)
    if robot.friction_load is not None and options.get('load_friction', 'auto') is not False:
        options['friction_load'] = robot.friction_load
    cal = calibrate(robot.model(model), shifted, link, gain=gain, model_error=0.0, **options)
    return robot, cal
