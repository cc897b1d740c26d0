"""The plots ``calibrate`` writes (matplotlib, no display): the residual before and after a
calibration with its thresholds, the friction curves with the data, and a recording through
the node's cycle (``calibrate check``)."""

import os

import numpy as np

__all__ = ['plot_calibration', 'plot_check']


def _plt():
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    return plt


def _save(fig, path):
    plt = _plt()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_calibration(cal, model, out_dir):
    """The residual before/after per joint with the thresholds, and the friction curves:
    the two files written."""
    return [_residuals(cal, model, os.path.join(out_dir, 'residual_before_after.png')),
            _friction(cal, model, os.path.join(out_dir, 'friction.png'))]


def _residuals(cal, model, path):
    plt = _plt()
    names = list(model.joint_names)
    n = len(names)
    t, tr = cal.traces.t, cal.traces
    level = cal.contact_thresholds.at(np.zeros((1, n)), np.zeros((1, n)))[0]
    fig, axes = plt.subplots(n, 1, figsize=(10, 1.8 * n + 1), sharex=True, squeeze=False)
    for i, ax in enumerate(axes[:, 0]):
        ax.plot(t, tr.residual_before[:, i], lw=0.7, label='nominal model')
        ax.plot(t, tr.residual_after[:, i], lw=0.7, label='calibrated')
        ax.axhline(level[i], color='k', ls='--', lw=0.6, label='contact_threshold (at rest)')
        ax.axhline(-level[i], color='k', ls='--', lw=0.6)
        ax.set_ylabel(f'{names[i]}\nr [N m]', fontsize=8)
        if i == 0:
            ax.legend(fontsize=7, loc='upper right', ncol=3)
    axes[-1, 0].set_xlabel('time [s]')
    fig.suptitle('Momentum-observer residual in free motion, before and after calibration')
    return _save(fig, path)


def _friction(cal, model, path):
    plt = _plt()
    names = list(model.joint_names)
    n = len(names)
    cols = min(4, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.8 * rows), squeeze=False)
    for i in range(rows * cols):
        ax = axes[i // cols, i % cols]
        if i >= n:
            ax.axis('off')
            continue
        v = cal.traces.friction_velocity[:, i]
        ok = np.isfinite(cal.traces.friction_observed[:, i])
        step = max(1, int(ok.sum()) // 4000)
        ax.plot(v[ok][::step], cal.traces.friction_observed[ok, i][::step], '.', ms=1,
                alpha=0.4, label='data (residual, payload removed)')
        vv = np.linspace(v.min(), v.max(), 200)
        ax.plot(vv, cal.friction_viscous[i] * vv + cal.friction_coulomb[i]
                * np.tanh(vv / cal.velocity_eps), 'r', lw=1.2, label='fitted F_v v + F_c tanh(v/ε)')
        ax.set_title(names[i], fontsize=9)
        ax.set_xlabel('velocity [rad/s]', fontsize=8)
        ax.set_ylabel('friction torque [N m]', fontsize=8)
        if i == 0:
            ax.legend(fontsize=6)
    fig.suptitle('Joint friction: fitted model and the data')
    return _save(fig, path)


def plot_check(ck, names, title, path):
    """The residual and the thresholds per joint, and the isolated link, over a recording
    replayed through the node's cycle (a :class:`~ros_dynamics.identification.check.Check`)."""
    plt = _plt()
    n = len(names)
    fig, axes = plt.subplots(n + 1, 1, figsize=(10, 1.6 * (n + 1) + 1), sharex=True)
    for i in range(n):
        ax = axes[i]
        ax.plot(ck.t, ck.r[:, i], lw=0.7, label='residual')
        ax.plot(ck.t, ck.threshold[:, i], color='k', ls='--', lw=0.6, label='threshold')
        ax.plot(ck.t, -ck.threshold[:, i], color='k', ls='--', lw=0.6)
        ax.set_ylabel(f'{names[i]}\nr [N m]', fontsize=8)
        if i == 0:
            ax.legend(fontsize=7, loc='upper right')
    links = sorted({x for x in ck.link if x})
    code = np.array([links.index(x) + 1 if x else 0 for x in ck.link])
    axes[n].step(ck.t, code, where='post')
    axes[n].set_yticks(range(len(links) + 1), ['free'] + links, fontsize=7)
    axes[n].set_ylabel('isolated link', fontsize=8)
    axes[n].set_xlabel('time [s]')
    fig.suptitle(title)
    return _save(fig, path)
