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

Uncertainty (:mod:`.residual_fit`): the noise, the jackknife over stretches of the recording,
torque constants off, and the spread of refits with the velocities differentiated from the
positions under several filters (:mod:`.determination`).  What the motion does not determine (a
parameter whose column the others nearly explain) is said in plain words, with the motion that
would determine it.
"""

from dataclasses import dataclass, field

import numpy as np

from ..core.model import attach_payload
from .contact_in_data import (ADVICE, CONTACT_SHARE, ContactInData, contact_message,
                              contact_spans, moving_rows, settling_note, settling_spans, small_note,
                              split_spans, trimmed_rows)
from .determination import VELOCITY_FILTERS, differentiated, not_determined
from .least_squares import torque_scale_covariance
from .model_error import model_error_note
from .observer_regressor import VELOCITY_EPS, regressor
from .payload import (INERTIA6, PAYLOAD_PARAMETERS, check_physical, payload_from_parameters,
                      skew2)
from .replay import increasing_in_time, observer_residuals, without_refused
from .residual_fit import ResidualFit
from .samples import CalibrationError
from .spans import in_spans
from .thresholds import Thresholds, fit_thresholds

__all__ = ['Calibration', 'ContactInData', 'Traces', 'calibrate', 'observer_residuals']

#: the relative error of each joint's torque constant assumed for the payload's standard errors
#: (one standard deviation): torques from motor currents through datasheet constants are
#: typically a few percent off; 0 for joint torque sensors
TORQUE_SCALE_ERROR = 0.02


@dataclass
class Traces:
    """What a calibration saw, over the recording: the times ``t`` (T,), the residual of the
    node's cycle with the nominal and with the calibrated model (T, nv; NaN at restarts), the
    friction the data show (−residual with the payload fitted, (n, nj)) at the joint
    velocities ``friction_velocity``, and the samples the fit used (``used`` (T,): the
    samples the node refuses and contact left out)."""
    t: np.ndarray
    residual_before: np.ndarray = None
    residual_after: np.ndarray = None
    friction_observed: np.ndarray = None
    friction_velocity: np.ndarray = None
    used: np.ndarray = None


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
    velocity_eps: float = VELOCITY_EPS
    contact_thresholds: Thresholds = None
    before: dict = field(default_factory=dict)   # residual statistics, nominal model
    after: dict = field(default_factory=dict)    # residual statistics, calibrated
    traces: Traces = None
    autocorrelation_time: float = 1.0
    friction_load: np.ndarray = None             # F_l [N m per N m] when selected (not a node
    friction_load_se: np.ndarray = None          # parameter: the observer's law has no F_l)
    determined: bool = True                      # the motion determines what was asked
    notes: list = field(default_factory=list)

    # the base level of the thresholds (contact_thresholds: all their rows)
    thresholds = property(lambda self: self.contact_thresholds.base)
    used = property(lambda self: self.traces.used)
    t = property(lambda self: self.traces.t)

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
             **self.contact_thresholds.parameters()}
        if self.payload_link is not None:
            I = self.payload_inertia
            p.update(payload_link=str(self.payload_link), payload_mass=float(self.payload_mass),
                     payload_com=[float(x) for x in self.payload_com],
                     payload_inertia=[float(I[i, j]) for i, j in INERTIA6])
        return p

    def summary(self):
        """A human-readable report (lines)."""
        f = lambda a: '[' + ', '.join(f'{x:.4g}' for x in a) + ']'  # noqa: E731
        out = [f'friction viscous [N m s/rad]: {f(self.friction_viscous)} '
               f'(± {f(self.friction_viscous_se)})',
               f'friction Coulomb [N m]:       {f(self.friction_coulomb)} '
               f'(± {f(self.friction_coulomb_se)})']
        if self.friction_load is not None:
            out.append(f'friction growing with |tau| [N m per N m]: {f(self.friction_load)} '
                       f'(± {f(self.friction_load_se)}; in the fit; the Coulomb level above is '
                       'the constant law at this recording\'s load, which the node runs)')
        if self.payload_link is not None:
            out.append(f'payload on {self.payload_link!r}: mass {self.payload_mass:.4f} ± '
                       f'{self.payload_mass_se:.4f} kg, CoM {f(self.payload_com)} ± '
                       f'{f(self.payload_com_se)} m (± one standard error)'
                       + ('' if self.determined else ': NOT DETERMINED by this recording, '
                          'below'))
            I = self.payload_inertia
            out.append('  inertia about the CoM [kg m²]: '
                       + (f'{f([I[i, j] for i, j in INERTIA6])} ± {f(self.payload_inertia_se)}'
                          if self.inertia_identified else 'not identified (not excited by '
                          'the motion; point mass assumed)'))
        for k in ('before', 'after'):
            s = getattr(self, k)
            out.append(f'residual {k:6s}: rms {f(s["rms"])}, max |r| {f(s["max"])} N m')
        out.append(self.contact_thresholds.describe(f))
        return out + self.notes


def _stats(r):
    ok = ~np.any(np.isnan(r), axis=1)
    x = r[ok]
    return {'rms': np.sqrt(np.mean(x ** 2, axis=0)), 'max': np.max(np.abs(x), axis=0),
            'mean': np.mean(x, axis=0)}


class _Problem:
    """One recording's regression: the node's cycle replayed with the nominal model
    (``r0``), the columns ``rho`` at the kept samples ``idx`` and their :class:`ResidualFit`."""

    def __init__(self, model, samples, gain, link, friction, load_friction, usable=None):
        base = observer_residuals(model, samples, gain)
        if base['refused']:     # the node never sees them: the fit does not either
            samples = without_refused(model, samples, base)
            base = observer_residuals(model, samples, gain)
        self.model, self.samples, self.gain, self.link = model, samples, gain, link
        self.nv = int(model.nv)
        self.nb = self.nv - len(model.joint_names)
        if base['skipped'].any():
            raise CalibrationError(f'the pipeline skipped {int(base["skipped"].sum())} samples '
                                   '(non-finite results)')
        self.r0, self.valid = base['r'], ~(base['restart'] | base['skipped'])
        rho, self.names, self.idx = regressor(model, samples, base['restart'], gain, link,
                                              VELOCITY_EPS, friction, bridge=base['bridge'],
                                              load_friction=load_friction)
        self.ts, self.valid_s = samples.t[self.idx], self.valid[self.idx]
        if usable is None or len(usable) != len(samples):
            usable = np.ones((len(samples), self.nv), dtype=bool)
            usable[:, self.nb:] = moving_rows(samples.t, samples.v[:, self.nb:], gain)
        self.usable = usable
        self.fit = ResidualFit(rho, self.r0[self.idx], self.names, usable[self.idx])

    def joint_residual(self, theta):
        """(n, nj) the fitted residual, NaN where a joint does not count (at rest)."""
        e = self.fit.residual(theta)[:, self.nb:]
        return np.where(self.usable[self.idx][:, self.nb:], e, np.nan)

    def columns(self, prefix):
        return np.array([n.startswith(prefix) for n in self.names])


def calibrate(model, samples, payload_link=None, gain=50.0, friction=True, inertia='auto',
              margin=2.0, floor=0.2, contact='auto', model_error=0.25,
              torque_scale_error=TORQUE_SCALE_ERROR, load_friction='auto',
              velocity_filters=VELOCITY_FILTERS, friction_load=None):
    """Fit joint friction (and a payload on ``payload_link``) to contact-free ``samples``.

    ``gain``: the observer gain the node will run (the thresholds are for it).  ``inertia``:
    fit the payload's rotational inertia (True), not (False: a point mass at the CoM), or
    ``'auto'``: keep it when it is determined (every standard error below 25 % of the largest
    principal moment, or below 1e-4 kg m²) and physically consistent.  Thresholds:
    :func:`ros_dynamics.identification.thresholds.fit_thresholds` on the calibrated residual of
    the node's cycle, at least the fitted Coulomb friction.

    ``contact``: what to do with stretches of the recording that look like contact
    (:mod:`.contact_in_data`): ``'auto'`` fits on the rest and names them in ``notes`` when
    they are at most :data:`CONTACT_SHARE` of the recording (a start-up stretch,
    :data:`.contact_in_data.SETTLING`, left out and not counted), else raises
    :class:`ContactInData`; ``'error'`` raises naming them; ``'exclude'`` always fits on the
    rest.  A joint at rest counts for neither the fit nor the contact.

    A payload without a reference recording absorbs the robot's own model error: ``notes``
    say how much (``model_error``: the relative error of each URDF link assumed).

    Standard errors (:mod:`.residual_fit`): noise, jackknife, torque constants
    ``torque_scale_error`` off per joint for a payload (0: joint torque sensors), and the
    spread of refits with the velocities differentiated from the positions and low-passed at
    each of ``velocity_filters`` [Hz] (``()``: none); the CoM's by the delta method
    (``c = h / m``).  ``determined`` is False, and ``notes`` say what is missing and
    the motion that would give it, when the motion does not determine the payload.
    ``load_friction`` (with a payload): a Coulomb level ``F_l |tau|`` too, ``'auto'``:
    selected on held-out samples; ``friction_load`` (nj,): held at these ``F_l`` instead (a
    reference recording's, :func:`.whole_model.payload_against_reference`).  Returns a
    :class:`Calibration`; raises :class:`CalibrationError` when the data cannot give it.
    """
    _check_options(model, samples, payload_link, friction, margin, floor, contact,
                   load_friction)
    gain = np.broadcast_to(np.asarray(gain, dtype=float), (int(model.nv),)).copy()
    samples = increasing_in_time(samples)
    load = friction and (friction_load is not None
                         or payload_link is not None and load_friction is not False)
    prob = _Problem(model, samples, gain, payload_link, friction, load)
    samples = prob.samples
    notes = list(samples.notes)     # what reading the recording skipped
    if friction_load is not None:
        values = np.zeros(len(prob.names))
        values[prob.columns('Fl[')] = friction_load
        prob.fit.hold(prob.columns('Fl['), values)
        load_friction = True        # held, not selected
    _hold_unexcited(prob, notes)
    try:
        rows, used = _without_contact(prob, contact, friction, notes)
    except ContactInData as exc:   # an undetermined fit leaves a residual that looks like it
        lines = _undetermined(prob, prob.fit.solve(prob.valid_s))
        if lines:
            raise CalibrationError('; '.join(lines) + f' (what it leaves: {exc})') from None
        raise
    _select_load_friction(prob, rows, load_friction, notes)
    inertia_identified = _payload_inertia(prob, rows, inertia, notes)
    sol = prob.fit.solve(rows)
    cov, tau_c = _covariance(prob, rows, sol, torque_scale_error, velocity_filters, friction,
                             load)
    cal = _result(prob, sol.theta, cov, friction, notes, inertia_identified, rows)
    cal.autocorrelation_time = tau_c
    lines = _undetermined(prob, sol)
    cal.determined = not lines
    _replay(cal, prob, used, contact)
    _thresholds(cal, prob, used, margin, floor)
    if payload_link is not None and model_error:
        cal.notes.append(model_error_note(model, samples, prob.r0, cal, payload_link, gain,
                                          model_error))
    cal.notes += lines
    return cal


def _undetermined(prob, sol):
    """The report's lines on what was asked (the payload's mass and first moment, or the
    friction) and the recording does not determine (:func:`.determination.not_determined`)."""
    asked = (['m', 'hx', 'hy', 'hz'] if prob.link else
             [n for n in prob.names if n.startswith(('Fv[', 'Fc['))])
    vif, partners = prob.fit.inflation(sol)
    return not_determined(prob.names, [n for n, f in zip(prob.names, sol.free) if f], vif,
                          partners, asked, prob.link)


def _check_options(model, samples, link, friction, margin, floor, contact, load_friction):
    if contact not in ('auto', 'error', 'exclude'):
        raise ValueError("contact must be 'auto', 'error' or 'exclude'")
    if not friction and link is None:
        raise ValueError('nothing to calibrate: friction=False and no payload_link')
    if not (margin > 0 and floor >= 0):
        raise ValueError('margin must be > 0 and floor >= 0')
    if load_friction not in ('auto', True, False):
        raise ValueError("load_friction must be 'auto', True or False")
    if samples.q.shape[1] != int(model.nq) or samples.v.shape[1] != int(model.nv):
        raise CalibrationError(f'samples have {samples.q.shape[1]} positions and '
                               f'{samples.v.shape[1]} velocities; the model needs {model.nq} '
                               f'and {model.nv}')
    if len(samples) < 50:
        raise CalibrationError(f'{len(samples)} samples: too few to calibrate (need >= 50)')


def _hold_unexcited(prob, notes):
    """Friction columns no usable row excites (a joint at rest throughout) are held at 0."""
    fit = prob.fit
    dead = ~np.any(fit.A[fit.usable] != 0, axis=0) & np.array(
        [n.startswith(('Fv[', 'Fc[', 'Fl[')) for n in prob.names])
    if dead.any():
        fit.hold(dead, np.zeros(len(dead)))
        joints = sorted({n[3:-1] for n, d in zip(prob.names, dead) if d})
        notes.append(f'{", ".join(joints)} never move (faster than 0.02 rad/s): their friction '
                     'is not fitted (0)')


def _without_contact(prob, contact, friction, notes):
    """The fit's rows and the samples used, contact left out (:mod:`.contact_in_data`): a
    trimmed fit, the spans far above the noise, those beyond what friction can leave called
    contact, refused or left out by ``contact``."""
    fit, ts, valid_s = prob.fit, prob.ts, prob.valid_s
    state = {'theta': fit.solve(valid_s).theta}

    def solve(rows):
        state['theta'] = fit.solve(rows).theta
    rows = trimmed_rows(ts, valid_s, lambda: np.nan_to_num(prob.joint_residual(state['theta'])),
                        solve)
    spans = contact_spans(ts, prob.joint_residual(state['theta']), rows, valid_s)
    flagged = in_spans(ts, spans, 0.2)
    if not np.array_equal(valid_s & ~flagged, rows):
        rows = valid_s & ~flagged
        solve(rows)
    e = prob.joint_residual(state['theta'])
    nj = e.shape[1]
    fc = np.maximum(state['theta'][nj:2 * nj], 0.0) if friction else np.zeros(nj)
    tau = prob.samples.tau[prob.idx, prob.nb:]
    limit = np.maximum(2.0 * fc, 0.1 * np.sqrt(np.mean(tau ** 2, axis=0)))
    big, small = split_spans(ts, e, spans, limit)
    if small:
        notes.append(small_note(ts, e, small, limit))
    used = prob.valid & ~in_spans(prob.samples.t, big, 0.2)
    start = settling_spans(ts, valid_s, big) if contact == 'auto' else []
    if start:                 # the robot settling: left out, not counted as contact
        notes.append(settling_note(ts, start))
        big = [sp for sp in big if sp not in start]
    if big:
        msg = contact_message(ts, big, e, rows, list(prob.model.joint_names))
        share = np.sum(prob.valid & in_spans(prob.samples.t, big, 0.2)) / max(1, prob.valid.sum())
        if contact == 'error' or (contact == 'auto' and share > CONTACT_SHARE):
            raise ContactInData(msg + (f' ({share:.0%} of the recording: more than '
                                       f'{CONTACT_SHARE:.0%}, too much to fit on the rest)'
                                       if contact == 'auto' else '') + ADVICE)
        notes.append(f'fitted on the rest ({share:.1%} of the recording left out, not in the '
                     f'thresholds either): {msg}')
    at_rest = ~prob.usable[:, prob.nb:]
    if at_rest.any():
        share = at_rest[prob.valid].mean(axis=0)
        notes.append('joints at rest (slower than 0.02 rad/s, and 3/K after) left out of the '
                     'fit, their static friction being unknown: '
                     + ', '.join(f'{n} {100 * s:.1f} %' for n, s in
                                 zip(prob.model.joint_names, share) if s > 0))
    return rows, used


def _select_load_friction(prob, rows, load_friction, notes):
    """With ``load_friction='auto'``: both laws fitted on the first 70 % of the fit's samples,
    the load-dependent one kept when it lowers the residual of the other 30 % by >= 5 % (mean
    over the joints of the mean square's ratio); otherwise its columns are held at 0."""
    load = prob.columns('Fl[')
    if not load.any() or load_friction is True:
        return
    if load_friction == 'auto':
        first = rows & (np.cumsum(rows) <= 0.7 * rows.sum())
        ms = []
        for fix in (prob.fit.fixed, prob.fit.fixed | load):
            eh = np.nan_to_num(prob.joint_residual(prob.fit.solve(first, fix).theta))
            ms.append(np.mean(eh[rows & ~first] ** 2, axis=0))
        ratio = float(np.mean(ms[0] / np.maximum(ms[1], 1e-300)))
        notes.append(f'load-dependent Coulomb friction (F_c + F_l |tau|, Mamedov et al. 2020) '
                     f'{"fitted" if ratio <= 0.95 else "not fitted"}: on the held-out 30 % of '
                     f'the fit\'s samples its residual\'s mean square is {ratio:.3f} of the '
                     'constant law\'s (kept at <= 0.95)')
        if ratio <= 0.95:
            return
    prob.fit.hold(load, np.zeros(len(load)))


def _payload_inertia(prob, rows, inertia, notes):
    """Whether the payload's rotational inertia is kept (``inertia``: True, False, 'auto':
    determined and physically consistent); if not, it is held at the point mass's, ``m S(c)ᵀ
    S(c)`` about the link origin, nonlinear in (m, h): a fixed-point iteration of 3 rounds."""
    if prob.link is None:
        return False
    idx = [prob.names.index(n) for n in PAYLOAD_PARAMETERS[4:]]
    i0 = prob.names.index('m')
    sol = prob.fit.solve(rows)
    m, c, Ic = payload_from_parameters(sol.theta[i0:i0 + 10])
    se_I = np.sqrt(np.maximum(np.diag(prob.fit.noise_covariance(sol)[0])[idx], 0.0))
    wI = np.linalg.eigvalsh(0.5 * (Ic + Ic.T))
    determined = np.all(se_I < max(1e-4, 0.25 * float(np.max(np.abs(wI)))))
    consistent = check_physical(m, Ic) is None
    if inertia is True or (inertia == 'auto' and determined and consistent):
        if not consistent:
            notes.append(f'note: the fitted payload inertia is not physically consistent '
                         f'({check_physical(m, Ic)})')
        return True
    if inertia == 'auto':
        notes.append('payload inertia not identified (standard errors '
                     f'{np.round(se_I, 5).tolist()} kg m² vs principal moments '
                     f'{np.round(wI, 5).tolist()}' + ('' if consistent else
                                                      ', not physically consistent')
                     + '): point mass at the CoM assumed')
    mask = np.zeros(len(prob.names), dtype=bool)
    mask[idx] = True
    theta = sol.theta
    for _ in range(3):
        m, c, _Ic = payload_from_parameters(theta[i0:i0 + 10])
        Io = max(m, 0.0) * skew2(c)
        values = np.zeros(len(prob.names))
        values[idx] = [Io[i, j] for i, j in INERTIA6]
        prob.fit.hold(mask, values)
        theta = prob.fit.solve(rows).theta
    return False


def _covariance(prob, rows, sol, torque_scale_error, velocity_filters, friction, load):
    """The parameters' covariance (:mod:`.residual_fit`) and the residual's autocorrelation
    time; plus the spread of refits under other velocity estimates."""
    fit = prob.fit
    cov, tau_c = fit.noise_covariance(sol)
    cov = cov + fit.jackknife_covariance(rows, sol)
    if prob.link is not None and torque_scale_error > 0:
        cov = cov + torque_scale_covariance(fit.rho, sol.sel, sol.An, sol.scale, sol.w,
                                            sol.free, prob.names.index('m'), sol.theta,
                                            torque_scale_error)
    spread = []
    for cutoff in velocity_filters:
        alt = _Problem(prob.model, differentiated(prob.samples, cutoff), prob.gain, prob.link,
                       friction, load, usable=prob.usable)
        if len(alt.valid_s) != len(rows):
            continue        # the node refuses other samples of it: not comparable
        alt.fit.hold(fit.fixed, fit.offset)
        spread.append(alt.fit.solve(rows & alt.valid_s).theta - sol.theta)
    if spread:
        d = np.asarray(spread)
        cov = cov + d.T @ d / len(spread)
    return cov, tau_c


def _result(prob, theta, cov, friction, notes, inertia_identified, rows):
    """The :class:`Calibration` of the fitted θ and its covariance."""
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    nj, nb = len(prob.model.joint_names), prob.nb
    fv = theta[:nj] if friction else np.zeros(nj)
    fc = theta[nj:2 * nj] if friction else np.zeros(nj)
    load = prob.columns('Fl[')       # F_l per joint (held ones at 0 or a reference's)
    fitted = bool(np.any(theta[load] != 0))
    if fitted:   # the node's constant law: the Coulomb level at this recording's load
        wt = np.tanh(prob.samples.v[prob.idx][rows, nb:] / VELOCITY_EPS) ** 2
        fc = fc + theta[load] * np.sum(wt * np.abs(prob.samples.tau[prob.idx][rows, nb:]),
                                       axis=0) / np.maximum(np.sum(wt, axis=0), 1e-12)
    for kind, x in (('viscous', fv), ('Coulomb', fc)):
        if np.any(x < 0):
            bad = [n for n, xi in zip(prob.model.joint_names, x) if xi < 0]
            notes.append(f'note: negative {kind} friction fitted on {bad} (set to 0; the '
                         'observer needs >= 0): unmodelled effects on those joints')
    cal = Calibration(list(prob.model.joint_names), np.maximum(fv, 0.0), np.maximum(fc, 0.0),
                      se[:nj] if friction else np.zeros(nj),
                      se[nj:2 * nj] if friction else np.zeros(nj), gain=prob.gain,
                      notes=notes, traces=Traces(prob.samples.t))
    if fitted:
        cal.friction_load, cal.friction_load_se = theta[load], se[load]
    if prob.link is not None:
        _payload(cal, prob, theta, cov, se, inertia_identified)
    # the friction the data shows: minus the residual with only the payload's part removed
    r_p = np.nan_to_num(prob.r0[prob.idx])
    if prob.link is not None:
        i0 = prob.names.index('m')
        r_p = r_p + prob.fit.rho[:, :, i0:i0 + 10] @ theta[i0:i0 + 10]
    cal.traces.friction_observed = -r_p[:, nb:]
    cal.traces.friction_velocity = prob.samples.v[prob.idx, nb:]
    return cal


def _payload(cal, prob, theta, cov, se, inertia_identified):
    """The payload's figures and standard errors into ``cal``; the CoM's by the delta method
    (``c = h / m``, ``J = [−h/m², I/m]``)."""
    i0 = prob.names.index('m')
    pi = theta[i0:i0 + 10]
    m, c, Ic = payload_from_parameters(pi)
    if m <= 0:
        raise CalibrationError(f'the fitted payload mass is {m:.3g} kg (± {se[i0]:.2g}): no '
                               f'payload on {prob.link!r}, or the motion does not determine it')
    Jc = np.hstack([-pi[1:4, None] / m ** 2, np.eye(3) / m])
    cal.payload_link, cal.payload_mass, cal.payload_com = prob.link, m, c
    cal.payload_mass_se = float(se[i0])
    cal.payload_com_se = np.sqrt(np.maximum(np.diag(Jc @ cov[i0:i0 + 4, i0:i0 + 4] @ Jc.T),
                                            0.0))
    cal.inertia_identified = inertia_identified
    if inertia_identified:
        cal.payload_inertia = Ic
        cal.payload_inertia_se = se[i0 + 4:i0 + 10]   # of I_o; about the CoM to first order


def _replay(cal, prob, used, contact):
    """The node's cycle again, with the calibrated model: the residual statistics; refused
    when the calibration explains the recording worse than the nominal model."""
    nb = prob.nb
    r1 = observer_residuals(cal.model(prob.model), prob.samples, prob.gain,
                            cal.friction_viscous, cal.friction_coulomb)['r']
    cal.traces.residual_before, cal.traces.residual_after = prob.r0, r1
    cal.traces.used = used
    cal.before, cal.after = _stats(prob.r0[used][:, nb:]), _stats(r1[used][:, nb:])
    worse = cal.after['rms'] > 1.2 * cal.before['rms'] + 1e-3
    if np.any(worse):
        bad = [n for n, x in zip(prob.model.joint_names, worse) if x]
        msg = (f'the calibrated model explains the recording worse than the nominal one on '
               f'{bad} (residual rms {np.round(cal.after["rms"][worse], 3).tolist()} against '
               f'{np.round(cal.before["rms"][worse], 3).tolist()} N m): the data contain '
               'something friction and a payload cannot explain -- most likely contact over a '
               'large part of the recording -- or the motion does not excite the parameters')
        if contact != 'exclude':
            raise ContactInData(msg)
        cal.notes.append('warning: ' + msg)


def _thresholds(cal, prob, used, margin, floor):
    """The thresholds from the calibrated residual of the node's cycle at the samples used."""
    r1 = cal.traces.residual_after
    ok = used & np.all(np.isfinite(r1), axis=1)
    cal.contact_thresholds = fit_thresholds(prob.samples.t[ok], r1[ok][:, prob.nb:],
                                            margin=margin, floor=floor,
                                            coulomb=cal.friction_coulomb)
