"""Calibration of the observer's model from recorded free motion (no ROS).

A real robot carries tools its URDF does not know and has joint friction; both enter the
momentum residual as a bias, ``r → −(Y(q, v, v̇) π + τ_f(v))`` in free motion, which the contact
detector mistakes for contact.  This module estimates, from samples ``(t, q, v, τ)`` of
contact-free motion:

* per-joint friction ``τ_f,i = F_v,i v_i + F_c,i tanh(v_i / ε)`` (the observer's model,
  :func:`ros_dynamics.estimation.observer.friction_torque`), and
* a rigid payload on one link: the 10 inertial parameters
  ``π = [m, m c_x, m c_y, m c_z, I_xx, I_xy, I_xz, I_yy, I_yz, I_zz]`` (first moment
  ``h = m c`` and rotational inertia ``I_o`` about the *link origin*, link axes).

Both enter the rigid-body equations linearly: the joint torques of a body are linear in its
10 inertial parameters (Atkeson, An & Hollerbach 1986; :mod:`.payload` computes the columns
with the core library), and the friction model is linear in ``(F_v, F_c)``.

Data: the momentum residual, not inverse dynamics with differentiated velocities
-----------------------------------------------------------------------------------------
The residual of the observer (De Luca & Mattone 2003) is linear in the model's parameters: one
step is ``r_{k+1} = a r_k + (1 − a) w_k`` with ``w_k = (p_{k+1} − p_k)/Δt − τ_{k+1} − ½(β_k +
β_{k+1})``, ``p = M v`` and ``β = Cᵀ v − g − τ_f`` linear in π and in the friction
coefficients.  So the residual of the observer *with* the parameters θ is

    r(θ) = r_0 + Σ_j θ_j ρ_j,

``r_0`` the residual of the nominal observer (the node's pipeline on the recording) and
``ρ_j`` the same filter run on the change of ``(p, β)`` per unit of parameter ``j``.  In free
motion the correct θ makes ``r(θ) ≈ 0``, hence the linear least-squares problem
``min_θ ‖r_0 + P θ‖²`` over all samples and joints (the integrated, "energy/momentum" form of
identification, Gautier 1997; Gaz et al. 2019 use the same residual-based idea).  This avoids
joint accelerations entirely (the momentum difference ``Δp/Δt`` is exact over a sample), uses
exactly the discretization the node runs, and the fitted residual *is* the residual the node
will show, which is what the thresholds are derived from.

Uncertainty: the residual samples are correlated over about ``1/K`` s (it is a low-pass
output), so the ordinary LS covariance ``σ² (PᵀP)⁻¹`` is inflated by the integrated
autocorrelation time of the fitted residual, ``1 + 2 Σ ρ(ℓ)`` (a Newey-West-type correction).
Rows are weighted per joint by the inverse of the joint's residual scale (two passes).
"""

from dataclasses import dataclass, field

import numpy as np

from ..core.model import attach_payload
from ..estimation.observer import filtered_columns, friction_torque
from .thresholds import fit_state_thresholds
from ..estimation.rules import FRICTION_EPS
from .payload import (INERTIA6, PAYLOAD_PARAMETERS, PayloadColumns, check_physical,
                      payload_from_parameters, skew2)
from .replay import increasing_in_time, observer_residuals, without_refused
from .check import runs
from .least_squares import (autocorrelation_time, torque_scale_covariance,
                            weighted_least_squares)
from .samples import CalibrationError

__all__ = ['Calibration', 'ContactInData', 'calibrate', 'observer_residuals']

# Smoothing velocity of the Coulomb term: the node's observer's (one constant, rules.py).
VELOCITY_EPS = FRICTION_EPS


class ContactInData(CalibrationError):
    """The residual stays far above its noise over stretches friction and payload cannot
    explain: the recording contains contact (or a large unmodelled effect)."""


# ---------------------------------------------------------------------------------------------
# The regression


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


def _payload_block(theta, names):
    i = names.index('m')
    return theta[i:i + 10]


@dataclass
class Calibration:
    """Result of :func:`calibrate` (units: N m s/rad, N m, kg, m, kg m²)."""
    joint_names: list
    friction_viscous: np.ndarray
    friction_coulomb: np.ndarray
    friction_viscous_se: np.ndarray
    friction_coulomb_se: np.ndarray
    payload_link: object = None
    payload_mass: float = 0.0
    payload_com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    payload_inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))
    payload_mass_se: float = float('nan')
    payload_com_se: np.ndarray = field(default_factory=lambda: np.full(3, np.nan))
    payload_inertia_se: np.ndarray = field(default_factory=lambda: np.full(6, np.nan))
    inertia_identified: bool = False
    gain: np.ndarray = None
    velocity_eps: float = FRICTION_EPS
    thresholds: np.ndarray = None
    threshold_velocity: np.ndarray = None        # state-dependent terms (rules.threshold_at)
    threshold_torque: np.ndarray = None
    margin: float = 2.0
    floor: float = 0.2
    before: dict = field(default_factory=dict)   # residual statistics, nominal model
    after: dict = field(default_factory=dict)    # residual statistics, calibrated
    residual_before: np.ndarray = None           # (T, nv) residuals, NaN at restarts
    residual_after: np.ndarray = None
    friction_observed: np.ndarray = None         # (n, nj) −residual with the payload fitted
    friction_velocity: np.ndarray = None         # (n, nj) the joint velocities there
    used: np.ndarray = None                      # (T,) the samples the fit used, at times t
                                                 # (those the node refuses left out)
    t: np.ndarray = None
    autocorrelation_time: float = 1.0
    friction_load: np.ndarray = None             # F_l [N m per N m] when selected (not a node
    friction_load_se: np.ndarray = None          # parameter: the observer's law has no F_l)
    notes: list = field(default_factory=list)

    def model(self, model):
        """``model`` with the calibrated payload attached."""
        if self.payload_link is None or self.payload_mass == 0.0:
            return model
        return attach_payload(model, self.payload_link, self.payload_mass, self.payload_com,
                              self.payload_inertia)

    def parameters(self):
        """The node parameters (``dynamics`` node's names) of this calibration."""
        p = {'observer_gain': [float(x) for x in np.atleast_1d(self.gain)],
             'observer_friction_viscous': [float(x) for x in self.friction_viscous],
             'observer_friction_coulomb': [float(x) for x in self.friction_coulomb],
             'contact_threshold': [float(x) for x in self.thresholds]}
        if self.threshold_velocity is not None and (np.any(self.threshold_velocity)
                                                    or np.any(self.threshold_torque)):
            p['contact_threshold_velocity'] = [float(x) for x in self.threshold_velocity]
            p['contact_threshold_torque'] = [float(x) for x in self.threshold_torque]
        if self.payload_link is not None:
            I = self.payload_inertia
            p.update(payload_link=str(self.payload_link), payload_mass=float(self.payload_mass),
                     payload_com=[float(x) for x in self.payload_com],
                     payload_inertia=[float(I[i, j]) for i, j in INERTIA6])
        return p

    def summary(self):
        """A human-readable report (lines)."""
        out = []
        f = lambda a: '[' + ', '.join(f'{x:.4g}' for x in a) + ']'  # noqa: E731
        out.append(f'friction viscous [N m s/rad]: {f(self.friction_viscous)} '
                   f'(± {f(self.friction_viscous_se)})')
        out.append(f'friction Coulomb [N m]:       {f(self.friction_coulomb)} '
                   f'(± {f(self.friction_coulomb_se)})')
        if self.friction_load is not None:
            out.append(f'friction growing with |tau| [N m per N m]: {f(self.friction_load)} '
                       f'(± {f(self.friction_load_se)}; in the fit; the Coulomb level above is '
                       'the constant law at this recording\'s load, which the node runs)')
        if self.payload_link is not None:
            out.append(f'payload on {self.payload_link!r}: mass {self.payload_mass:.4f} ± '
                       f'{self.payload_mass_se:.4f} kg, CoM {f(self.payload_com)} ± '
                       f'{f(self.payload_com_se)} m')
            I = self.payload_inertia
            out.append('  inertia about the CoM [kg m²]: '
                       + (f'{f([I[i, j] for i, j in INERTIA6])} ± {f(self.payload_inertia_se)}'
                          if self.inertia_identified else 'not identified (not excited by '
                          'the motion; point mass assumed)'))
        for k in ('before', 'after'):
            s = getattr(self, k)
            out.append(f'residual {k:6s}: rms {f(s["rms"])}, max |r| {f(s["max"])} N m')
        state = self.threshold_velocity is not None and (np.any(self.threshold_velocity)
                                                         or np.any(self.threshold_torque))
        out.append(f'contact_threshold (covering {self.margin:g} x |r| after, at least '
                   f'{self.floor:g}) = {f(self.thresholds)} N m'
                   + (f' + {f(self.threshold_velocity)} |v| + {f(self.threshold_torque)} |tau|'
                      if state else ''))
        out += self.notes
        return out


def _stats(r):
    ok = ~np.any(np.isnan(r), axis=1)
    x = r[ok]
    return {'rms': np.sqrt(np.mean(x ** 2, axis=0)), 'max': np.max(np.abs(x), axis=0),
            'mean': np.mean(x, axis=0)}


def _in_spans(t, spans, pad=0.0):
    """Mask of the times ``t`` inside one of the (start, end) ``spans``, widened by ``pad``."""
    mask = np.zeros(len(t), dtype=bool)
    for a, b in spans:
        mask |= (t >= a - pad) & (t <= b + pad)
    return mask


def _contact_spans(t, e, rows, valid, ratio=10.0, min_duration=0.05, pad=0.2):
    """Samples to exclude as contact: where the fitted residual ``e`` exceeds ``ratio`` x its
    robust noise level (1.4826 MAD over the fitted ``rows``, per joint) in stretches of at
    least ``min_duration`` s, padded by ``pad`` s (the residual's rise and decay).  Returns
    (mask, [(start time, end time)])."""
    x = e[rows]
    mad = 1.4826 * np.median(np.abs(x - np.median(x, axis=0)), axis=0)
    scale = np.maximum(mad, 1e-3)
    out = np.zeros(len(t), dtype=bool)
    out[valid] = np.any(np.abs(e[valid]) > ratio * scale, axis=1)
    spans = [(t[a], t[b - 1]) for a, b in runs(out) if t[b - 1] - t[a] >= min_duration]
    return _in_spans(t, spans, pad), spans


def _contact_message(t, spans, e, rows, names):
    """What the contact spans show (each: when, how long, which joints, how far above the
    noise), without advice."""
    x = e[rows]
    noise = np.maximum(1.4826 * np.median(np.abs(x - np.median(x, axis=0)), axis=0), 1e-3)
    parts = []
    for a, b in spans[:6]:
        peak = np.nanmax(np.abs(e[_in_spans(t, [(a, b)])]), axis=0)
        joints = [f'{n} {p:.3g} N m' for n, p, z in zip(names, peak, noise) if p > 10 * z]
        parts.append(f'{a - t[0]:.2f}-{b - t[0]:.2f} s ({1e3 * (b - a):.0f} ms; up to '
                     f'{", ".join(joints)})')
    more = f' and {len(spans) - 6} more' if len(spans) > 6 else ''
    worst = int(np.argmax(np.nanmax(np.abs(e[_in_spans(t, spans)]), axis=0) / noise))
    return (f'the recording looks like it contains contact: with friction and payload fitted '
            f'to the rest, the residual stays far above its noise during {"; ".join(parts)}'
            f'{more} (noise level of {names[worst]!r}: {noise[worst]:.3g} N m); friction and a '
            'payload cannot explain that')


_ADVICE = ('; calibrate on contact-free motion (cut the contact out with --start/--stop, or let '
           'the fit exclude it with --contact exclude)')


#: the relative error of each joint's torque constant assumed for the payload's standard errors
#: (one standard deviation): torques from motor currents through datasheet constants are
#: typically a few percent off; 0 for joint torque sensors
TORQUE_SCALE_ERROR = 0.02

#: with contact='auto', the largest share of the recording the contact stretches may take for
#: the fit to go on without them
CONTACT_SHARE = 0.1


def calibrate(model, samples, payload_link=None, gain=50.0, friction=True, inertia='auto',
              margin=2.0, floor=0.2, contact='auto', state_thresholds='auto',
              model_error=0.25, torque_scale_error=TORQUE_SCALE_ERROR, load_friction='auto'):
    """Fit joint friction (and a payload on ``payload_link``) to contact-free ``samples``.

    ``gain``: the observer gain the node will run (the thresholds are for it).  ``inertia``:
    fit the payload's rotational inertia (True), not (False: a point mass at the CoM), or
    ``'auto'``: keep it when it is determined (every standard error below 25 % of the largest
    principal moment, or below 1e-4 kg m²) and physically consistent.  Thresholds:
    covering the calibrated residual of the node's cycle at every sample used, state-dependent
    where the data ask for it (``state_thresholds``:
    :func:`ros_dynamics.identification.thresholds.fit_state_thresholds`).  Returns a
    :class:`Calibration`; raises :class:`CalibrationError` when the data cannot give it.

    ``contact``: what to do with stretches of the recording that look like contact (the
    residual stays > 10x its noise level there after the fit, beyond what friction explains):
    ``'auto'`` fits on the rest and names them in ``notes`` when they are at most
    :data:`CONTACT_SHARE` of the recording, else raises :class:`ContactInData`; ``'error'``
    raises naming them; ``'exclude'`` always fits on the rest.

    A payload without a reference recording absorbs the robot's own model error: ``notes``
    say how much (``model_error``: the relative error of each URDF link assumed, each link on
    its own: the payload a link that much heavier would fake on this motion).

    Standard errors: the noise (the least-squares covariance inflated by the residual's
    integrated autocorrelation time), what changes along the motion (a delete-one-block
    jackknife over 10 stretches) and, for a payload, torque constants ``torque_scale_error``
    off per joint (one standard deviation, :func:`.least_squares.torque_scale_covariance`; 0: joint torque
    sensors); the CoM's from those of ``(m, m c)`` by the delta method (``c = h / m``).
    ``load_friction`` (with a payload): a Coulomb level ``F_l |tau|`` too, ``'auto'``: selected.
    """
    if contact not in ('auto', 'error', 'exclude'):
        raise ValueError("contact must be 'auto', 'error' or 'exclude'")
    if not friction and payload_link is None:
        raise ValueError('nothing to calibrate: friction=False and no payload_link')
    if not (margin > 0 and floor >= 0):
        raise ValueError('margin must be > 0 and floor >= 0')
    nv = int(model.nv)
    nb = nv - len(model.joint_names)
    if samples.q.shape[1] != int(model.nq) or samples.v.shape[1] != nv:
        raise CalibrationError(f'samples have {samples.q.shape[1]} positions and '
                               f'{samples.v.shape[1]} velocities; the model needs {model.nq} '
                               f'and {nv}')
    if len(samples) < 50:
        raise CalibrationError(f'{len(samples)} samples: too few to calibrate (need >= 50)')
    gain = np.broadcast_to(np.asarray(gain, dtype=float), (nv,)).copy()
    velocity_eps = VELOCITY_EPS
    samples = increasing_in_time(samples)
    base = observer_residuals(model, samples, gain)
    if base['refused']:
        samples = without_refused(model, samples, base)
        base = observer_residuals(model, samples, gain)
    r0, restart = base['r'], base['restart']
    valid = ~(restart | base['skipped'])
    if base['skipped'].any():
        raise CalibrationError(f'the pipeline skipped {int(base["skipped"].sum())} samples '
                               '(non-finite results)')
    if load_friction not in ('auto', True, False):
        raise ValueError("load_friction must be 'auto', True or False")
    rho, names, idx = regressor(model, samples, restart, gain, payload_link, velocity_eps,
                                 friction, bridge=base['bridge'],
                                 load_friction=(friction and payload_link is not None
                                                and load_friction is not False))
    # the fit's rows: the kept samples (every sample of a recording up to 60000 long)
    r0s, valid_s, ts = r0[idx], valid[idx], samples.t[idx]
    fixed = np.zeros(rho.shape[2], dtype=bool)
    notes = list(samples.notes)     # what reading the recording skipped
    inertia_ok = payload_link is not None and inertia is not False
    rows = valid_s.copy()          # the samples the fit uses (contact stretches excluded)
    A_all = rho.reshape(idx.size * nv, rho.shape[2])
    b_all = np.nan_to_num(r0s).reshape(-1)

    def fit(fixed, offset):
        sel = np.repeat(rows, nv)
        A, b, n = A_all[sel], b_all[sel], int(rows.sum())
        w = np.ones(A.shape[0])
        free = ~fixed
        for k in range(2):   # pass 2: rows weighted by 1 / (the joint's residual rms)
            if k:
                e_j = (e / w).reshape(n, nv)
                s = np.sqrt(np.mean(e_j ** 2, axis=0))
                s = np.maximum(s, 1e-6 * max(1e-12, s.max()))
                w = np.tile(1.0 / s, n)
            theta_f, An, scale, e, sv = weighted_least_squares(A[:, free], b + A[:, fixed] @ offset[fixed], w,
                                               [nm for nm, f in zip(names, free) if f])
        theta = offset.copy()
        theta[free] = theta_f
        return theta, An, scale, e, w     # w: the weights of the solve

    offset = np.zeros(rho.shape[2])
    theta, An, scale, e, w = fit(fixed, offset)
    # Contact in the data: stretches where the fitted residual stays far above its noise.
    # A contact biases the least-squares fit, so first a trimmed fit: blocks of 0.25 s whose
    # residual is far above the typical block's (mean square > 9x the median) are left out and
    # the fit repeated until the kept set is stable (least trimmed squares over time blocks,
    # Rousseeuw 1984); then samples > 10x the robust noise level of the kept set, in stretches
    # of >= 50 ms, are the contact spans, excluded (or reported) and the fit repeated.
    block = np.floor((ts - ts[0]) / 0.25).astype(int)
    for _ in range(8):
        ef = (r0s + rho @ theta)[:, nb:]
        nblk = block.max() + 1
        cnt = np.bincount(block[valid_s], minlength=nblk)
        ms = np.stack([np.bincount(block[valid_s], weights=ef[valid_s, j] ** 2, minlength=nblk)
                       for j in range(ef.shape[1])], axis=1)
        have = cnt > 0
        ms = ms[have] / cnt[have, None]
        sig2 = np.maximum(np.median(ms, axis=0), 1e-12)
        score = np.full(nblk, np.inf)
        score[have] = np.mean(ms / sig2, axis=1)
        keep = score <= 9.0 * np.median(score[have])
        new_rows = valid_s & keep[block]
        if np.array_equal(new_rows, rows) or new_rows.sum() < max(50, 0.3 * valid_s.sum()):
            break
        rows = new_rows
        theta, An, scale, e, w = fit(fixed, offset)
    flagged, spans = _contact_spans(ts, (r0s + rho @ theta)[:, nb:], rows, valid_s)
    new_rows = valid_s & ~flagged
    if not np.array_equal(new_rows, rows):
        rows = new_rows
        theta, An, scale, e, w = fit(fixed, offset)
    # Which spans friction cannot explain: a span whose residual stays within what the friction
    # law's shape can leave (2 F_c, the Coulomb level: a sticking or asymmetric dry friction
    # against the smooth tanh) or within 10 % of the joint's torque rms on every joint is a
    # friction-law or small model mismatch: left out of the fit, reported, kept for the
    # thresholds.  Only the others are contact.
    e_fit = (r0s + rho @ theta)[:, nb:]
    nj_ = nv - nb
    fc_fit = np.maximum(theta[nj_:2 * nj_], 0.0) if friction else np.zeros(nj_)
    limit = np.maximum(2.0 * fc_fit, 0.1 * np.sqrt(np.mean(samples.tau[idx, nb:] ** 2, axis=0)))
    big = [sp for sp in spans
           if np.any(np.nanmax(np.abs(e_fit[_in_spans(ts, [sp])]), axis=0) > limit)]
    small = [sp for sp in spans if sp not in big]
    if small:
        peak = np.nanmax(np.abs(e_fit[_in_spans(ts, small)]), axis=0)
        where = ', '.join(f'{a - ts[0]:.2f}-{b - ts[0]:.2f} s' for a, b in small[:4])
        notes.append(f'{len(small)} stretches ({where}'
                     f'{" ..." if len(small) > 4 else ""}) stand out of the noise by up to '
                     f'{np.round(peak, 3).tolist()} N m, within what the friction law\'s shape '
                     f'or a small model error explains ({np.round(limit, 3).tolist()} N m): left '
                     'out of the fit, kept for the thresholds')
    used = valid & ~_in_spans(samples.t, big, 0.2)   # all samples but the contact spans
    if big:
        msg = _contact_message(ts, big, e_fit, rows, list(model.joint_names))
        share = 1.0 - used.sum() / max(1, valid.sum())
        if contact == 'error' or (contact == 'auto' and share > CONTACT_SHARE):
            raise ContactInData(msg + (f' ({share:.0%} of the recording: more than '
                                       f'{CONTACT_SHARE:.0%}, too much to fit on the rest)'
                                       if contact == 'auto' else '') + _ADVICE)
        notes.append(f'fitted on the rest ({share:.1%} of the recording left out, not in the '
                     f'thresholds either): {msg}')
    load_cols = np.array([n.startswith('Fl[') for n in names])
    load_selected = bool(load_cols.any())
    if load_friction == 'auto' and load_selected:
        # selected on held-out data: both laws fitted on the first 70 % of the fit's samples,
        # kept when it lowers the residual of the other 30 % by >= 5 % (mean over the joints of
        # the mean square's ratio)
        kept = rows.copy()
        first = kept & (np.cumsum(kept) <= 0.7 * kept.sum())
        ms = []
        for fix in (fixed, fixed | load_cols):
            rows = first
            th = fit(fix, offset)[0]
            eh = (r0s + rho @ th)[kept & ~first][:, nb:]
            ms.append(np.mean(eh ** 2, axis=0))
        rows = kept
        gain_ms = float(np.mean(ms[0] / np.maximum(ms[1], 1e-300)))
        load_selected = gain_ms <= 0.95
        notes.append(f'load-dependent Coulomb friction (F_c + F_l |tau|, Mamedov et al. 2020) '
                     f'{"fitted" if load_selected else "not fitted"}: on the held-out 30 % of '
                     f'the fit\'s samples its residual\'s mean square is {gain_ms:.3f} of the '
                     'constant law\'s (kept at <= 0.95)')
        if not load_selected:
            fixed = fixed | load_cols
            theta, An, scale, e, w = fit(fixed, offset)
    nrows = int(rows.sum())
    inertia_idx = [names.index(n) for n in PAYLOAD_PARAMETERS[4:]] if payload_link else []

    def covariance(An, scale, e, free):
        dof = max(1, e.size - An.shape[1])
        sigma2 = float(e @ e) / dof
        tau_c = autocorrelation_time(e.reshape(nrows, nv)[:, nb:])
        cov_n = np.linalg.pinv(An.T @ An) * sigma2 * tau_c
        cov = np.full((len(names), len(names)), 0.0)
        cov[np.ix_(free, free)] = cov_n / np.outer(scale, scale)
        return cov, tau_c

    cov, tau_c = covariance(An, scale, e, ~fixed)
    inertia_identified = False
    if payload_link is not None:
        m, c, Ic = payload_from_parameters(_payload_block(theta, names))
        se_I = np.sqrt(np.diag(cov)[inertia_idx])
        wI = np.linalg.eigvalsh(0.5 * (Ic + Ic.T))
        determined = np.all(se_I < max(1e-4, 0.25 * float(np.max(np.abs(wI)))))
        consistent = check_physical(m, Ic) is None
        if inertia is True or (inertia == 'auto' and determined and consistent):
            inertia_identified = inertia_ok
            if not consistent:
                notes.append(f'note: the fitted payload inertia is not physically consistent '
                             f'({check_physical(m, Ic)})')
        else:
            if inertia == 'auto':
                notes.append('payload inertia not identified (standard errors '
                             f'{np.round(se_I, 5).tolist()} kg m² vs principal moments '
                             f'{np.round(wI, 5).tolist()}' + ('' if consistent else
                                                              ', not physically consistent')
                             + '): point mass at the CoM assumed')
            # a point mass: I_o = m S(c)ᵀS(c) is nonlinear in (m, h); fix it at the current
            # estimate and refit (m, h) (a fixed-point iteration, 3 rounds)
            fixed = fixed.copy()
            fixed[inertia_idx] = True
            for _ in range(3):
                m, c, _Ic = payload_from_parameters(_payload_block(theta, names))
                Io = max(m, 0.0) * skew2(c)
                offset = np.zeros(len(names))
                offset[inertia_idx] = [Io[i, j] for i, j in INERTIA6]
                theta, An, scale, e, w = fit(fixed, offset)
            cov, tau_c = covariance(An, scale, e, ~fixed)
    # what the noise model misses (a friction law or torque constants that are off leave
    # errors that change along the motion): the delete-one-block jackknife over 10 stretches
    # of the recording (Efron & Stein 1981; Künsch 1989 for dependent data), added
    kept = rows.copy()
    blk = np.minimum((np.cumsum(kept) * 10) // max(1, kept.sum()), 9)
    drop = []
    for b in range(10):
        rows = kept & (blk != b)
        drop.append(fit(fixed, offset)[0])
    rows = kept
    d = np.asarray(drop) - np.mean(drop, axis=0)
    cov = cov + 0.9 * d.T @ d
    if payload_link is not None and torque_scale_error > 0:
        cov = cov + torque_scale_covariance(rho, rows, nb, An, scale, w, ~fixed,
                                             names.index('m'), theta, torque_scale_error)
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))

    nj = nv - nb
    fv = theta[:nj] if friction else np.zeros(nj)
    fc = theta[nj:2 * nj] if friction else np.zeros(nj)
    if load_selected:   # the node's constant law: the Coulomb level at this recording's load
        wt = np.tanh(samples.v[idx][rows, nb:] / velocity_eps) ** 2
        fc = fc + theta[load_cols] * np.sum(wt * np.abs(samples.tau[idx][rows, nb:]), axis=0) \
            / np.maximum(np.sum(wt, axis=0), 1e-12)
    for kind, x in (('viscous', fv), ('Coulomb', fc)):
        if np.any(x < 0):
            bad = [n for n, xi in zip(model.joint_names, x) if xi < 0]
            notes.append(f'note: negative {kind} friction fitted on {bad} (set to 0; the '
                         'observer needs >= 0): unmodelled effects on those joints')
    cal = Calibration(list(model.joint_names), np.maximum(fv, 0.0), np.maximum(fc, 0.0),
                      se[:nj] if friction else np.zeros(nj),
                      se[nj:2 * nj] if friction else np.zeros(nj),
                      gain=gain, velocity_eps=velocity_eps, margin=margin, floor=floor,
                      autocorrelation_time=tau_c, notes=notes, t=samples.t)
    if load_selected:
        cal.friction_load = theta[load_cols]
        cal.friction_load_se = se[load_cols]
    if payload_link is not None:
        pi = _payload_block(theta, names)
        m, c, Ic = payload_from_parameters(pi)
        i0 = names.index('m')
        cov_p = cov[i0:i0 + 10, i0:i0 + 10]
        # CoM c = h / m: first-order propagation, J = [−h/m², I/m]
        Jc = np.hstack([-pi[1:4, None] / m ** 2, np.eye(3) / m]) if m != 0 else np.zeros((3, 4))
        cal.payload_link = payload_link
        cal.payload_mass = m
        cal.payload_com = c
        cal.payload_mass_se = float(se[i0])
        cal.payload_com_se = np.sqrt(np.maximum(np.diag(Jc @ cov_p[:4, :4] @ Jc.T), 0.0))
        cal.inertia_identified = inertia_identified
        if inertia_identified:
            cal.payload_inertia = Ic
            cal.payload_inertia_se = se[i0 + 4:i0 + 10]   # of I_o; about the CoM to first order
        else:
            cal.payload_inertia = np.zeros((3, 3))
        if m <= 0:
            raise CalibrationError(f'the fitted payload mass is {m:.3g} kg (± {se[i0]:.2g}): no '
                                   f'payload on {payload_link!r}, or the motion does not '
                                   'determine it')
    # the friction the data shows: minus the residual with only the payload's part removed
    # (low-pass filtered like the residual), for the friction plots
    r_p = r0s.copy()
    if payload_link is not None:
        i0 = names.index('m')
        r_p = r0s + rho[:, :, i0:i0 + 10] @ theta[i0:i0 + 10]
    cal.friction_observed = -r_p[:, nb:]
    cal.friction_velocity = samples.v[idx, nb:]
    # the calibrated residual: the node's pipeline again, with the calibrated model
    after = observer_residuals(cal.model(model), samples, gain, cal.friction_viscous,
                               cal.friction_coulomb)
    r1 = after['r']
    cal.residual_before, cal.residual_after = r0, r1
    cal.before, cal.after = _stats(r0[used][:, nb:]), _stats(r1[used][:, nb:])
    worse = cal.after['rms'] > 1.2 * cal.before['rms'] + 1e-3
    if np.any(worse):
        bad = [n for n, x in zip(model.joint_names, worse) if x]
        msg = (f'the calibrated model explains the recording worse than the nominal one on '
               f'{bad} (residual rms {np.round(cal.after["rms"][worse], 3).tolist()} against '
               f'{np.round(cal.before["rms"][worse], 3).tolist()} N m): the data contain '
               'something friction and a payload cannot explain -- most likely contact over a '
               'large part of the recording -- or the motion does not excite the parameters')
        if contact != 'exclude':
            raise ContactInData(msg)
        cal.notes.append('warning: ' + msg)
    ok = used & np.all(np.isfinite(r1), axis=1)
    th = fit_state_thresholds(samples.t[ok], r1[ok][:, nb:], samples.v[ok][:, nb:],
                              samples.tau[ok][:, nb:], margin=margin, floor=floor,
                              state=state_thresholds, names=list(model.joint_names))
    cal.thresholds, cal.threshold_velocity, cal.threshold_torque = (th.base, th.velocity,
                                                                    th.torque)
    cal.notes += th.notes
    cal.used = used
    if payload_link is not None and model_error:
        from .model_error import model_error_note
        cal.notes.append(model_error_note(model, samples, r0, cal, payload_link, gain,
                                          model_error))
    return cal
