"""How much of a payload fitted without a reference recording the robot's own model error may
be (no ROS).

A payload fitted on the URDF's model absorbs whatever the URDF gets wrong that looks like mass
on the payload link.  Its size on the recording's own motion: for each body, the residual a
body ``rel`` heavier than the URDF says would leave (its ten inertial parameters scaled; the
node's cycle replayed with that model, :func:`.replay.observer_residuals`) is fitted as
payload plus friction with the same regression (:func:`.observer_regressor.regressor`; least squares
is linear in the data, so the payload it fakes is the fit of that change alone); the bodies'
fakes combine as independent errors.
"""

import numpy as np

from .observer_regressor import VELOCITY_EPS, regressor
from .replay import observer_residuals

__all__ = ['model_error_note', 'phantom_payloads']


def phantom_payloads(model, samples, r0, link, gain, rel=0.25):
    """(body names, the payload mass [kg] each body ``rel`` heavier would fake) on ``samples``,
    ``r0`` the residual of the node's cycle with ``model`` on them."""
    nv = int(model.nv)
    restart = ~np.all(np.isfinite(r0), axis=1)
    rho, names, idx = regressor(model, samples, restart, np.broadcast_to(gain, (nv,)), link,
                                VELOCITY_EPS, True, max_rows=20000)
    ok = ~restart[idx]
    A = rho[ok].reshape(-1, rho.shape[2])
    im = names.index('m')
    bodies, fake = [], []
    n = model.nbodies
    for i in range(n):
        if model.mass[i] <= 0:
            continue
        one = np.arange(n) == i
        heavier = model.copy(mass=np.where(one, model.mass * (1 + rel), model.mass),
                             inertia=np.where(one[:, None, None], model.inertia * (1 + rel),
                                              model.inertia))
        # data of a robot with that body heavier: the URDF's residual loses what it adds
        dr = np.nan_to_num(observer_residuals(heavier, samples, gain)['r'] - r0)
        theta = np.linalg.lstsq(A, dr[idx][ok].reshape(-1), rcond=None)[0]
        bodies.append(model.body_names[i])
        fake.append(float(theta[im]))
    return bodies, np.asarray(fake)


def model_error_note(model, samples, r0, cal, link, gain, rel=0.25):
    """The report line: the robot's model error's share of the payload ``cal`` fitted on
    ``link`` without a reference, and how to remove it."""
    bodies, fake = phantom_payloads(model, samples, r0, link, gain, rel)
    share = float(np.sqrt(np.sum(fake ** 2)))
    worst = [f'{b} {m:+.2g} kg' for b, m in sorted(zip(bodies, fake), key=lambda x: -abs(x[1]))
             [:3]]
    return (f'without --reference, the robot\'s own model error may be +-{share:.3g} kg of this '
            f'{cal.payload_mass:.3g} kg ({100 * share / max(abs(cal.payload_mass), 1e-9):.0f} %; '
            f'each URDF link {100 * rel:.0f} % heavier on its own would fake: '
            f'{", ".join(worst)}). Identify the robot first: record the same motion without the '
            'load, then calibrate LOAD_BAG --urdf U --payload-link L --reference NO_LOAD_BAG '
            '(the robot identified from the no-load recording, the payload as the difference)')
