"""Whole-model identification of a floating-base robot standing on its feet, without force
sensors (no ROS).

The equations of motion with point feet,

    M(q) v̇ + h(q, v) = Sᵀ τ + Σ_c J_cᵀ f_c,                                            (1)

carry the unknown foot forces ``f_c``.  ``J_S`` (3k × nv) stacks the linear rows of the stance
feet's Jacobians (frame origins, world axes: :func:`ros_dynamics.core.api.task_space`); the
orthogonal projector onto its null space

    Π(q) = 1 − J_S⁺ J_S = 1 − J_Sᵀ (J_S J_Sᵀ)⁻¹ J_S                                      (2)

has ``Π J_Sᵀ = (J_S Π)ᵀ = 0``, so

    Π (M v̇ + h − Sᵀ τ) = 0                                                             (3)

holds whatever the forces are (Aghili 2005; Mistry, Schaal & Yamane 2009): nv − 3k equations
per sample (six with four feet down: those of the base, Ayusawa et al. 2014), linear in every
body's ten inertial parameters, the joint friction, the armature and the torque offsets, the
unknowns of the fixed-base fit (:mod:`.whole_model`, whose columns this module uses).

Acceleration-free, in the observer's filtered momentum form.  With ``p = M v`` and
``β = Cᵀv − g`` (``Ṁ = C + Cᵀ``), (3) is ``Π (ṗ − β − Sᵀτ) = 0``.  Since Π depends on q,
``Π ṗ`` is not a time derivative; over one sample interval the discrete product rule
``Π_k p_k − Π_{k−1} p_{k−1} − (Π_k − Π_{k−1}) p̄ = Π̄ (p_k − p_{k−1})`` (bars: the mean of the
interval's two ends) gives

    w_k = Π̄ (p_k − p_{k−1}) / Δt − ½ (Π_k β_k + Π_{k−1} β_{k−1}) = Π̄ Sᵀ τ_k,            (4)

the interval's mean of (3) to second order in Δt (the order of the observer's own trapezoidal
β), with no acceleration and no derivative of the projector (its ``Π̇ p`` term is inside
``Π̄ Δp``).  ``τ_k`` is the torque that acted over the interval (the joint-state convention).
Both sides of (4) pass through the observer's filter ``ρ_k = a ρ_{k−1} + (1 − a) w_k``,
``a = e^{−K Δt}`` (:func:`ros_dynamics.estimation.observer.filtered_columns`), which averages
the noise of the momentum difference over ``1/K``: (4) holds at every sample, so its filtered
form holds exactly, from a zero start, with no lag between the two sides, at any gain.  The
fit's gain is its own, :data:`FIT_GAIN` (5 1/s), well below the node's observer gain: noise on
the velocities (an odometry's twist) passes the filtered momentum difference with a variance
that grows with K, and noise in the regressor biases a least-squares fit toward zero (errors
in the variables); measured on the MuJoCo quadruped with 0.01 m/s of twist noise, the total
mass came out 14 % light at K = 50 1/s, 1.3 % at 10 and 0.1 % at 3.  Both projectors of
an interval use one stance set, the feet in stance at either end (a foot in the set that
carries no force only removes equations, it adds no error).

Stance from the recording (unless it is given, e.g. from the node's ``~/contact_forces``): a
loaded foot does not move, and it is on the ground.  The only harmful error is a loaded foot
left out of the set (a foot in the set that carries no force only removes equations), and
feet do slip a little under load, so the rule is conservative: foot ``c`` is in the air at
sample ``k`` only when it is both moving — the speed of its frame origin ``|J_c v|``, averaged
over :data:`STANCE_WINDOW`, above :data:`STANCE_SPEED` — and raised — more than
:data:`STANCE_HEIGHT` above the lowest it was within :data:`GROUND_WINDOW` s (its local
ground, world z from the odometry and the kinematics); it is in stance otherwise and within
:data:`STANCE_PAD` of such a sample.

The base twist from the stance legs.  An odometry's twist is noisy (a legged state
estimator's: a few cm/s, white), late and slow; through ``p = M v`` its noise enters both sides
of a least-squares fit's regressor, which biases the fit toward zero (errors in the
variables): measured on the MuJoCo quadruped with a realistic odometry (0.03 m/s, 10 ms late,
200 Hz), the total mass came out 4 % light and the identified model's foot forces 2.3 % of the
weight off.  A stance foot is at rest, so its velocity ``J_c v = 0`` gives the base twist from
the joint velocities (kinematic leg odometry, Bloesch et al. 2013); the fit takes the base twist
of the node's own fusion (:func:`ros_dynamics.estimation.stance_residual.fused_twist`, its eq.
(1): the stance feet's rows against the odometry as a prior weighted by ``odom_twist_noise``,
the node's parameter of that name; 0: the odometry's twist as is), on the stance found below.
Where a stance foot moves under that twist faster than :data:`SLIP_SPEED` (it slides or rolls:
the twist is wrong there; measured on MuJoCo: 19 % of a weight shift under PD control, 46 % of
the exciting schedule, whose feet slide during the lifts and weight shifts) the fit leaves the rows
out, and :data:`SLIP_MEMORY` after (the filter's memory);
the equations themselves hold there, the twist does not.

Base parameters, physical consistency and the prior toward the URDF are those of
:mod:`.whole_model`: the scaled regressor's singular values below
:data:`FLOATING_BASE_TOLERANCE` (1 %, ten times the fixed base's: fewer equations per sample) of the
largest span what the recording does not determine; the convex fit keeps every body's
pseudo-inertia positive definite (Wensing, Kim & Slotine 2017) and friction and armature
non-negative (cvxpy, Clarabel).  The first ``1 − holdout`` of the recording is fitted; the rest
is reported twice: the projected residual of (4) (what the model cannot explain once the foot
forces are eliminated), and the node's own cycle replayed with the URDF's and the identified
model, its momentum residual split by the contact-force estimator
(:class:`ros_dynamics.estimation.contact_forces.ContactForceEstimator`) over the same feet:
the ``unexplained`` part, which the contact thresholds are calibrated on.
"""

from dataclasses import dataclass, field

import numpy as np

from ..core.api import task_frames, task_space
from ..core.data import Data
from ..estimation.observer import friction_torque
from .check import check_contact_forces
from .observer_regressor import VELOCITY_EPS
from .replay import increasing_in_time
from .samples import CalibrationError
from .inertial_parameters import BASE_TOLERANCE, consistent_fit, parameter_vector
from .thresholds import Thresholds, calibrate_thresholds
from .whole_model import BaseParameters, HeldOut, Identification, regressor_columns

__all__ = ['FIT_GAIN', 'FLOATING_BASE_TOLERANCE', 'ODOM_TWIST_NOISE', 'STANCE_SPEED',
           'STANCE_HEIGHT', 'GROUND_WINDOW', 'STANCE_WINDOW', 'STANCE_PAD', 'SLIP_SPEED',
           'SLIP_MEMORY', 'FloatingBaseIdentification', 'foot_kinematics', 'detect_stance',
           'stance_base_twist', 'slipping', 'null_space_projectors', 'identify_floating_base',
           'identify_floating_recording']

#: foot speed [m/s] below which a foot is in stance (the speed averaged over STANCE_WINDOW)
STANCE_SPEED = 0.15
#: height [m] above its lowest (within GROUND_WINDOW) below which a foot counts as down
STANCE_HEIGHT = 0.02
#: the window [s] (either side) of a foot's lowest height, its local ground
GROUND_WINDOW = 1.0
#: averaging window of the foot speed [s]
STANCE_WINDOW = 0.02
#: a foot is in stance within this time [s] of a sample where the rule holds
STANCE_PAD = 0.03
#: the fit's filter gain K [1/s] (its own, below the node's observer gain: module docstring)
FIT_GAIN = 5.0
#: relative singular value below which a direction counts as not identified (held at the URDF):
#: ten times the fixed base's, since the projected equations are fewer per sample (nv − 3k)
FLOATING_BASE_TOLERANCE = 10 * BASE_TOLERANCE
#: the odometry's twist noise [m/s, rad/s] the fit assumes (the node's odom_twist_noise default)
ODOM_TWIST_NOISE = 0.03
#: a stance foot faster than this [m/s] under the stance legs' twist: the twist is wrong there
SLIP_SPEED = 0.02
#: ... and the fit leaves out this long [s] after it (the fit filter's memory, e^-2.5 left)
SLIP_MEMORY = 0.5
#: relative regularisation of J_S J_Sᵀ in (2), of its largest eigenvalue (a stretched leg)
PROJECTOR_EPS = 1e-9


# ---------------------------------------------------------------------------------------------
# Feet, stance and the projectors


def foot_kinematics(model, q, v, frames):
    """(J (T, k, 3, nv) the linear rows of the feet's Jacobians, positions (T, k, 3), velocities
    (T, k, 3)), world axes, from one kinematics pass per sample (``task_space``)."""
    fr = task_frames(model, frames)
    T, k, nv = q.shape[0], len(fr.names), int(model.nv)
    J = np.empty((T, k, 3, nv))
    pos = np.empty((T, k, 3))
    data = Data(model)
    for i in range(T):
        ts = task_space(model, q[i], v[i], fr, data=data)
        J[i] = ts.jacobians[:, :3, :]
        pos[i] = ts.positions
    return J, pos, np.einsum('tkin,tn->tki', J, v)


def detect_stance(t, positions, velocities, speed=STANCE_SPEED, height=STANCE_HEIGHT,
                  window=STANCE_WINDOW, pad=STANCE_PAD, ground_window=GROUND_WINDOW):
    """(T, k) bool: the feet in stance (module docstring) from their positions and velocities
    (T, k, 3, world axes): in the air only while both moving (speed averaged over ``window``
    above ``speed``) and raised (more than ``height`` above the lowest the foot was within
    ``ground_window`` s), then widened by ``pad`` s."""
    from scipy.ndimage import minimum_filter1d
    t = np.asarray(t, dtype=float)
    dt = float(np.median(np.diff(t))) if t.size > 1 else 1.0
    s = np.linalg.norm(velocities, axis=2)
    n = max(1, int(round(window / dt)))
    if n > 1:           # centred moving average
        c = np.cumsum(np.vstack([np.zeros((1, s.shape[1])), s]), axis=0)
        lo = np.clip(np.arange(len(s)) - n // 2, 0, len(s))
        hi = np.clip(lo + n, 0, len(s))
        s = (c[hi] - c[lo]) / (hi - lo)[:, None]
    z = positions[:, :, 2]
    ground = minimum_filter1d(z, size=2 * max(1, int(round(ground_window / dt))) + 1, axis=0,
                              mode='nearest')
    down = (s < speed) | (z - ground < height)
    m = int(round(pad / dt))
    out = down.copy()
    for d in range(1, m + 1):             # widened by the pad, both ways
        out[d:] |= down[:-d]
        out[:-d] |= down[d:]
    return out


def null_space_projectors(J, eps=PROJECTOR_EPS):
    """Π = 1 − J_Sᵀ (J_S J_Sᵀ)⁻¹ J_S (eq. 2) for a batch of stacked Jacobians J (n, m, nv)."""
    n, m, nv = J.shape
    eye = np.broadcast_to(np.eye(nv), (n, nv, nv))
    if m == 0:
        return eye.copy()
    G = J @ J.transpose(0, 2, 1)
    G += (eps * np.max(np.linalg.eigvalsh(G), axis=1))[:, None, None] * np.eye(m)
    return eye - J.transpose(0, 2, 1) @ np.linalg.solve(G, J)


def stance_base_twist(J, v, stance, odom_twist_noise):
    """``v`` (T, nv) with the base twist of the stance legs fused with the odometry's
    (module docstring; eq. (1) of :mod:`ros_dynamics.estimation.stance_residual`, the node's
    compiled :func:`~ros_dynamics.estimation.stance_residual.fused_twist`, its gate included)
    for the feet's Jacobians J (T, k, 3, nv) and stance (T, k); ``odom_twist_noise`` 0: ``v``
    as is."""
    if odom_twist_noise <= 0:
        return v
    from ..estimation.stance_residual import FOOT_VELOCITY_NOISE, STANCE_GATE, fused_twist
    T, k, d, nv = J.shape
    odom_w = np.full(6, 1.0 / odom_twist_noise ** 2)
    foot_w = 1.0 / FOOT_VELOCITY_NOISE ** 2
    out = np.empty_like(v)
    H = np.zeros((6, 7))
    for i in range(T):
        A = np.ascontiguousarray(J[i].reshape(k * d, nv).T)
        fused_twist(A, np.ascontiguousarray(v[i], dtype=float), stance[i].copy(), d, odom_w,
                    foot_w, STANCE_GATE, out[i], H)
    return out


def slipping(t, J, v, stance, speed=SLIP_SPEED, memory=SLIP_MEMORY):
    """(T,) bool: the samples where a stance foot moves faster than ``speed`` under ``v`` (the
    stance legs' base twist: it is wrong there, a foot slides or rolls) and the ``memory`` s
    after such a sample (the fit's filter remembers it)."""
    sp = np.linalg.norm(np.einsum('tkin,tn->tki', J, v), axis=2)
    bad = np.any(stance & (sp > speed), axis=1)
    dt = float(np.median(np.diff(t))) if len(t) > 1 else 1.0
    n = int(round(memory / dt))
    c = np.cumsum(np.concatenate([[0], bad.astype(int)]))
    idx = np.arange(len(t))
    return (c[idx + 1] - c[np.maximum(idx - n, 0)]) > 0


def _interval_projectors(J, stance):
    """(Π at the start, Π at the end) (T, nv, nv) of every interval k−1 → k, both with the feet
    in stance at either end (row 0: the identity, unused)."""
    T, k, _, nv = J.shape
    sets = stance[1:] | stance[:-1]
    Pa = np.empty((T, nv, nv))
    Pb = np.empty((T, nv, nv))
    Pa[0] = Pb[0] = np.eye(nv)
    code = sets @ (1 << np.arange(k))
    for c in np.unique(code):
        idx = np.flatnonzero(code == c) + 1
        feet = np.flatnonzero((c >> np.arange(k)) & 1)
        for P, rows in ((Pa, idx - 1), (Pb, idx)):
            Js = J[rows][:, feet].reshape(len(rows), 3 * len(feet), nv)
            P[idx] = null_space_projectors(Js)
    return Pa, Pb


def _filtered(t, P, B, Pa, Pb, restart, gain, keep):
    """The observer's filter on w_k of eq. (4) for columns (P, B) (T, nv, p) (the momentum and
    β per unit parameter); returns the rows ``keep``."""
    dt = np.diff(t)
    w = np.zeros(P.shape)
    w[1:] = (np.einsum('kij,kjp->kip', 0.5 * (Pa[1:] + Pb[1:]), P[1:] - P[:-1])
             / dt[:, None, None]
             - 0.5 * (np.einsum('kij,kjp->kip', Pb[1:], B[1:])
                      + np.einsum('kij,kjp->kip', Pa[1:], B[:-1])))
    return _filter(t, w, restart, gain, keep)


def _filter(t, w, restart, gain, keep):
    """``ρ_k = a ρ_{k−1} + (1 − a) w_k``, ``a = e^{−K Δt}``, zero where ``restart``; the rows
    ``keep`` of ρ."""
    T = w.shape[0]
    K = np.broadcast_to(np.asarray(gain, dtype=float), (w.shape[1],))[:, None]
    a = np.exp(-K[None] * np.concatenate([[0.0], np.diff(t)])[:, None, None])
    out = np.empty((keep.size,) + w.shape[1:])
    pos = np.full(T, -1)
    pos[keep] = np.arange(keep.size)
    cur = np.zeros(w.shape[1:])
    for k in range(T):
        if restart[k]:
            cur[:] = 0.0
        else:
            cur = a[k] * cur + (1.0 - a[k]) * w[k]
        if pos[k] >= 0:
            out[pos[k]] = cur
    return out


def _joint_columns(model, v, velocity_eps):
    """(P, B) (T, nv, 4 nj) of F_v, F_c (the observer's friction basis in β), armature (in p)
    and torque offset (β gains −b), as in the fixed-base fit."""
    T, nv = v.shape
    nj = len(model.joint_names)
    nb = nv - nj
    P, B = np.zeros((T, nv, 4 * nj)), np.zeros((T, nv, 4 * nj))
    for j in range(nj):
        vj = v[:, nb + j]
        B[:, nb + j, j] = -friction_torque(vj, 1.0, 0.0, velocity_eps)
        B[:, nb + j, nj + j] = -friction_torque(vj, 0.0, 1.0, velocity_eps)
        P[:, nb + j, 2 * nj + j] = vj
        B[:, nb + j, 3 * nj + j] = -1.0
    return P, B


# ---------------------------------------------------------------------------------------------
# The physically consistent, regularised fit


# ---------------------------------------------------------------------------------------------
# The identification


@dataclass
class FloatingBaseIdentification(Identification):
    """:class:`.whole_model.Identification` of a floating base, with the contact frames, the
    stance found, and the held-out figures: ``before``/``after`` the projected residual of eq.
    (4) per coordinate (rms, max); ``unexplained_before``/``_after`` the node cycle's
    ``unexplained`` part over the contact frames (rms, max per coordinate)."""
    frames: list = field(default_factory=list)
    stance: np.ndarray = None                # (T, k) bool
    stance_source: str = ''
    unexplained_before: dict = field(default_factory=dict)
    unexplained_after: dict = field(default_factory=dict)
    check_before: object = None       # check.ContactForceCheck of the held-out part, URDF
    check_after: object = None        # ... identified
    tolerance: float = FLOATING_BASE_TOLERANCE
    mass_urdf: float = float('nan')
    mass_identified: float = float('nan')
    odom_twist_noise: float = ODOM_TWIST_NOISE

    def node_parameters(self):
        out = super().node_parameters()
        out['contact_frames'] = list(self.frames)
        out['contact_frame_model'] = 'point'
        out['odom_twist_noise'] = float(self.odom_twist_noise)
        return out

    def summary(self):
        f = lambda a: '[' + ', '.join(f'{x:.3g}' for x in a) + ']'  # noqa: E731
        out = [f'stance ({self.stance_source}): ' + ', '.join(
            f'{n} {100 * s:.0f} %' for n, s in zip(self.frames, self.stance.mean(axis=0)))]
        out.append(f'total mass: URDF {self.mass_urdf:.4g} kg -> identified '
                   f'{self.mass_identified:.4g} kg')
        lines = super().summary()
        lines = [x.replace(f'(tolerance {BASE_TOLERANCE:g} ', f'(tolerance {self.tolerance:g} ')
                 for x in lines if not x.startswith('held-out residual')]
        for k, name in (('before', 'URDF'), ('after', 'identified')):
            s = getattr(self.held, k)
            if s:
                out.append(f'held-out projected residual (eq. 4), {name}: rms base '
                           f'{f(s["rms"][:6])}, joints {f(s["rms"][6:])}')
        for k, name in (('unexplained_before', 'URDF'), ('unexplained_after', 'identified')):
            s = getattr(self, k)
            if s:
                out.append(f'held-out unexplained (node cycle, contact frames), {name}: rms base '
                           f'{f(s["rms"][:6])}, joints {f(s["rms"][6:])}')
        for ck in (self.check_before, self.check_after):
            if ck is not None:
                out += ck.summary()
        return out + lines


def projected_regressor(model, samples, frames, stance=None, gain=FIT_GAIN, max_rows=6000,
                        velocity_eps=VELOCITY_EPS, odom_twist_noise=ODOM_TWIST_NOISE):
    """The filtered, projected equations (4) on ``samples``: a dict with ``rho`` (n, nv, p) the
    columns (10 per body, then F_v, F_c, armature, offset per joint), ``y`` (n, nv) the measured
    side, ``rows`` (n,) the sample indices kept (every ``T / max_rows``-th), ``stance`` (T, k)
    and ``source`` (how stance was found).  The base twist: the stance legs' fused with the
    odometry's (:func:`stance_base_twist`; ``odom_twist_noise`` 0: the odometry's as is)."""
    nv, N = int(model.nv), model.nbodies
    nj = len(model.joint_names)
    T = len(samples)
    t, q, v = samples.t, samples.q, samples.v
    J, pos, vel = foot_kinematics(model, q, v, frames)
    source = 'given'
    if stance is None:
        stance = detect_stance(t, pos, vel)
        source = (f'from the recording: in the air while faster than {STANCE_SPEED:g} m/s '
                  f'(over {1e3 * STANCE_WINDOW:.0f} ms) and {1e3 * STANCE_HEIGHT:.0f} mm above '
                  f'its lowest within {GROUND_WINDOW:g} s, widened by '
                  f'{1e3 * STANCE_PAD:.0f} ms')
    stance = np.asarray(stance, dtype=bool)
    if stance.shape != J.shape[:2]:
        raise ValueError(f'stance must be ({T}, {J.shape[1]}), got {stance.shape}')
    slipped = np.zeros(T, dtype=bool)
    if odom_twist_noise > 0:
        v = stance_base_twist(J, v, stance, odom_twist_noise)
        slipped = slipping(t, J, v, stance)
    Pa, Pb = _interval_projectors(J, stance)
    dt = np.diff(t)
    restart = np.concatenate([[True], dt > 5.0 * np.median(dt)])   # gaps restart the filter
    stride = max(1, -(-T // max_rows))
    keep = np.arange(0, T, stride)
    keep = keep[~restart[keep]]
    npar = 10 * N + 4 * nj
    rho = np.empty((keep.size, nv, npar))
    for i in range(N):
        P, B = regressor_columns(model, q, v, i)
        rho[:, :, 10 * i:10 * i + 10] = _filtered(t, P, B, Pa, Pb, restart, gain, keep)
    P, B = _joint_columns(model, v, velocity_eps)
    rho[:, :, 10 * N:] = _filtered(t, P, B, Pa, Pb, restart, gain, keep)
    # the measured side Π̄ Sᵀ τ_k of eq. (4), filtered alike
    wy = np.einsum('kij,kj->ki', 0.5 * (Pa + Pb), samples.tau)[:, :, None]
    y = _filter(t, wy, restart, gain, keep)[:, :, 0]
    return dict(rho=rho, y=y, rows=keep, stance=stance, source=source, slipped=slipped[keep])


def identify_floating_base(model, samples, frames, stance=None, gain=FIT_GAIN, holdout=0.3,
                           max_rows=6000, friction=True, armature=True, offset=False,
                           velocity_eps=VELOCITY_EPS, tol=FLOATING_BASE_TOLERANCE, regressor=None,
                           odom_twist_noise=ODOM_TWIST_NOISE):
    """Fit every body's inertial parameters, joint friction and armature (torque offsets only
    with ``offset``: constant joint torques are what standing takes, so offsets would trade
    against the weight) of a floating-base ``model`` from ``samples`` (q with the base pose,
    v with the base twist, tau with zero base rows) on the feet ``frames`` (module docstring).  ``stance`` (T, k) bool or
    None (found from the recording).  ``regressor``: :func:`projected_regressor`'s result, if
    already computed.  Returns a :class:`FloatingBaseIdentification` (no thresholds:
    :func:`identify_floating_recording`)."""
    if not model.floating_base:
        raise CalibrationError('the model has a fixed base: use whole_model.identify_recording')
    nv, N = int(model.nv), model.nbodies
    nj = len(model.joint_names)
    T = len(samples)
    if not 0.0 <= holdout < 1.0:
        raise ValueError('holdout must be in [0, 1)')
    if T < 200:
        raise CalibrationError(f'{T} samples: too few to identify a model (need >= 200, better '
                               'tens of seconds of exciting motion)')
    reg = regressor or projected_regressor(model, samples, frames, stance, gain, max_rows,
                                           velocity_eps, odom_twist_noise)
    rho, y, keep, stance, source = (reg[k] for k in ('rho', 'y', 'rows', 'stance', 'source'))
    t = samples.t
    t_split = t[0] + (1.0 - holdout) * (t[-1] - t[0])
    fit = (t[keep] <= t_split) & ~reg['slipped']
    if fit.sum() < 20:
        raise CalibrationError(f'{int(fit.sum())} rows to fit: the stance feet slide or roll in '
                               'nearly all of the recording (or hold out less)')
    npar = rho.shape[2]
    par = parameter_vector(model, friction, armature, offset)
    pi0, theta0, scale, free, nonneg = par.pi0, par.theta0, par.scale, par.free, par.nonnegative
    e0 = rho @ theta0 - y                          # the projected residual with the URDF
    # rows weighted by 1 / (the coordinate's rms of Π̄ Sᵀ τ), so that every coordinate counts
    w = 1.0 / np.maximum(np.sqrt(np.mean(y[fit] ** 2, axis=0)),
                         1e-3 * np.sqrt(np.mean(y[fit] ** 2)))
    As = ((rho[fit] * w[None, :, None]).reshape(-1, npar)) * scale
    bs = (e0[fit] * w).reshape(-1)
    x, rank, sv, determined, status = consistent_fit(As, bs, theta0, scale, N, nonneg, free,
                                                     tol)
    theta = theta0 + x * scale
    theta[nonneg] = np.maximum(theta[nonneg], 0.0)
    names = par.names
    ident = FloatingBaseIdentification(
        list(model.joint_names), list(model.body_names), theta[:10 * N].reshape(N, 10), pi0,
        theta[10 * N:10 * N + nj], theta[10 * N + nj:10 * N + 2 * nj],
        theta[10 * N + 2 * nj:10 * N + 3 * nj], theta[10 * N + 3 * nj:],
        base=BaseParameters(rank, int(free.sum()),
                            float(sv[0] / sv[rank - 1]) if rank else float('inf'),
                            [n for n, d in zip(names, determined) if d]),
        velocity_eps=velocity_eps,
        gain=np.broadcast_to(np.asarray(gain, dtype=float), (nv,)).copy(),
        held=HeldOut(fit_rows=keep[fit], test_rows=keep[~fit]), frames=list(task_frames(model, frames).names),
        stance=stance, stance_source=source, tolerance=tol, mass_urdf=float(pi0[:, 0].sum()),
        mass_identified=float(theta[:10 * N:10].sum()), odom_twist_noise=float(odom_twist_noise))
    if status != 'optimal':
        ident.notes.append(f'note: the consistent fit ended {status}')
    part = t[keep] <= t_split
    if (reg['slipped'] & part).any():
        ident.notes.append(f'note: {100 * (reg["slipped"] & part).sum() / part.sum():.0f} % of '
                           f'the fitted part left out: a stance foot faster than {SLIP_SPEED:g} '
                           'm/s under the stance legs\' base twist (a slide or a roll), and '
                           f'{SLIP_MEMORY:g} s after')
    if (~fit).any():
        e1 = e0[~fit] + rho[~fit] @ (theta - theta0)
        ident.held.before = {'rms': np.sqrt(np.mean(e0[~fit] ** 2, axis=0)),
                             'max': np.max(np.abs(e0[~fit]), axis=0)}
        ident.held.after = {'rms': np.sqrt(np.mean(e1 ** 2, axis=0)), 'max': np.max(np.abs(e1), axis=0)}
    return ident


def identify_floating_recording(model, samples, frames, stance=None, gain=50.0, holdout=0.3,
                                margin=2.0, floor=0.2, force_threshold=10.0, fit_gain=FIT_GAIN,
                                odom_twist_noise=ODOM_TWIST_NOISE, **options):
    """:func:`identify_floating_base`, then the held-out part replayed through the node's cycle
    with the URDF's and the identified model (``calibrate check`` of ``~/contact_forces``,
    :func:`.check.check_contact_forces`: the feet's forces, the ``unexplained`` part) and
    per-joint ``contact_threshold = max(floor, margin · max |u|)`` from the identified one's.
    ``gain``: the node's observer gain (the replay and the parameter file); ``fit_gain``: the
    fit's filter (:data:`FIT_GAIN`); ``odom_twist_noise``: the node's (the fit's base twist and
    the replay's unexplained part, :func:`stance_base_twist`)."""
    if samples.q.shape[1] != int(model.nq) or samples.v.shape[1] != int(model.nv):
        raise CalibrationError(f'samples have {samples.q.shape[1]} positions and '
                               f'{samples.v.shape[1]} velocities; the model needs {model.nq} '
                               f'and {model.nv}')
    samples = increasing_in_time(samples)
    ident = identify_floating_base(model, samples, frames, stance, gain=fit_gain,
                                   holdout=holdout, odom_twist_noise=odom_twist_noise, **options)
    ident.gain = np.broadcast_to(np.asarray(gain, dtype=float), (int(model.nv),)).copy()
    ident.notes += samples.notes
    if ident.held.test_rows.size == 0:
        raise CalibrationError('no held-out samples to derive the thresholds from (holdout 0)')
    rows = np.arange(ident.held.test_rows[0], len(samples))
    nb = int(model.nv) - len(model.joint_names)
    for key, mdl, fv, fc, off in (
            ('before', model, 0.0, 0.0, 0.0),
            ('after', ident.model(model), ident.friction_viscous, ident.friction_coulomb,
             ident.torque_offset)):
        ck = check_contact_forces(mdl, samples, ident.frames, gain, fv, fc, off, force_threshold,
                                  odom_twist_noise, rows=rows,
                                  label='the held-out part' + (', URDF' if key == 'before'
                                                               else ', identified'))
        U = ck.unexplained[rows]
        U = U[np.all(np.isfinite(U), axis=1)]
        setattr(ident, 'unexplained_' + key, {'rms': np.sqrt(np.mean(U ** 2, axis=0)),
                                               'max': np.max(np.abs(U), axis=0)})
        setattr(ident, 'check_' + key, ck)
    ident.contact_thresholds = Thresholds(
        calibrate_thresholds(U[:, nb:], margin=margin, floor=floor), margin=margin, floor=floor,
        how=f'max(floor, {margin:g} x the held-out unexplained part\'s largest)')
    return ident
