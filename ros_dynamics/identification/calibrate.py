"""``calibrate``: observer calibration and checks from recorded joint states (ROS 2 bags).

    calibrate BAG --urdf URDF --out PARAMS.yaml [--payload-link LINK] [--topic /joint_states]
              [--plots DIR] [--gain K] [--margin 2] [--floor 0.2] [--start S] [--stop S]
    calibrate BAG --urdf URDF --links all [--held-out BAG2] --out PARAMS.yaml --out-urdf IDENTIFIED.urdf
    calibrate BAG --urdf URDF --payload-link LINK --reference BAG_WITHOUT --out PARAMS.yaml
    calibrate BAG --urdf URDF --floating-base [--odom-topic /odom] --contact-frames F1 F2 ...
              --links all --out PARAMS.yaml --out-urdf IDENTIFIED.urdf
    calibrate check BAG --urdf URDF [--params PARAMS.yaml] [--out CSV] [--plots DIR]
    calibrate excite --urdf URDF --out TRAJECTORY.yaml [--duration S]
    calibrate record BAG [--topic /joint_states] [--duration S] [--count N] [--storage sqlite3|mcap]

(also ``python -m ros_dynamics.identification.calibrate ...``).

* The default command fits joint friction and, with ``--payload-link``, a payload on that link
  to contact-free motion in the bag (:func:`ros_dynamics.identification.calibration.calibrate`) and
  writes a parameter file for the ``dynamics`` node (friction, per-joint ``contact_threshold``,
  ``payload_*``, and the ``observer_gain`` the thresholds are for) plus plots: the residual
  before/after per joint and the friction curves with the data.
* ``--links all`` identifies the whole model instead
  (:func:`ros_dynamics.identification.whole_model.identify_recording`): every link's inertial
  parameters (physically consistent, regularised toward the URDF), joint friction and
  armature, fitted on the start of the recording (all of it when ``--held-out`` gives a second
  recording of other motion); the rest (or that recording) is replayed through the node's
  cycle with what was identified, and the thresholds cover every held-out sample
  (state-dependent where the data ask for it; a stretch is left out only as contact with the
  evidence the report shows); writes the parameter file (friction, ``joint_armature``,
  thresholds) and, with ``--out-urdf``, the URDF with the identified inertials.
* ``check`` runs a bag through the node's own cycle with the settings of
  a parameter file and reports the false contacts (every detection: when, how long, which
  joints and link), the margin per joint (max |r| / threshold outside detections), the
  smallest external torque the thresholds detect and the worst stretches; writes the
  residual, the thresholds, the detections and the isolated link over time (CSV + plot).
* ``record`` subscribes to joint states with rclpy and writes them with rosbags, for machines
  without rosbag2 (needs ROS 2 Python packages; Ctrl-C or ``--duration`` ends it).
"""

import argparse
import csv
import os
import sys

NODE = 'dynamics'


def _model(urdf):
    from ros_dynamics.core.urdf import load_urdf
    if not os.path.exists(urdf):
        raise SystemExit(f'calibrate: URDF file {urdf!r} not found')
    model = load_urdf(urdf)
    if model.floating_base:
        raise SystemExit('calibrate: floating-base models are not supported (joint states do '
                         'not carry the base motion)')
    return model


def _samples(args, model):
    from ros_dynamics.identification.bags import BagError, read_joint_states
    try:
        s = read_joint_states(args.bag, args.topic, model.joint_names)
    except BagError as exc:
        raise SystemExit(f'calibrate: {exc}') from None
    if args.start is not None or args.stop is not None:
        s = s.slice(args.start, args.stop)
    if len(s) == 0:
        raise SystemExit('calibrate: no samples in the selected time range')

    return s


def _plt():
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    return plt


def _plot_calibration(cal, model, out_dir):
    import numpy as np
    plt = _plt()
    os.makedirs(out_dir, exist_ok=True)
    names = list(model.joint_names)
    n = len(names)
    t = cal.t
    files = []
    fig, axes = plt.subplots(n, 1, figsize=(10, 1.8 * n + 1), sharex=True, squeeze=False)
    for i, ax in enumerate(axes[:, 0]):
        ax.plot(t, cal.residual_before[:, i], lw=0.7, label='nominal model')
        ax.plot(t, cal.residual_after[:, i], lw=0.7, label='calibrated')
        ax.axhline(cal.thresholds[i], color='k', ls='--', lw=0.6, label='contact_threshold')
        ax.axhline(-cal.thresholds[i], color='k', ls='--', lw=0.6)
        ax.set_ylabel(f'{names[i]}\nr [N m]', fontsize=8)
        if i == 0:
            ax.legend(fontsize=7, loc='upper right', ncol=3)
    axes[-1, 0].set_xlabel('time [s]')
    fig.suptitle('Momentum-observer residual in free motion, before and after calibration')
    fig.tight_layout()
    files.append(os.path.join(out_dir, 'residual_before_after.png'))
    fig.savefig(files[-1], dpi=90)
    plt.close(fig)

    cols = min(4, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.8 * rows), squeeze=False)
    for i in range(rows * cols):
        ax = axes[i // cols, i % cols]
        if i >= n:
            ax.axis('off')
            continue
        v = cal.friction_velocity[:, i]
        ok = np.isfinite(cal.friction_observed[:, i])
        step = max(1, int(ok.sum()) // 4000)
        ax.plot(v[ok][::step], cal.friction_observed[ok, i][::step], '.', ms=1, alpha=0.4,
                label='data (residual, payload removed)')
        vv = np.linspace(v.min(), v.max(), 200)
        ax.plot(vv, cal.friction_viscous[i] * vv + cal.friction_coulomb[i]
                * np.tanh(vv / cal.velocity_eps), 'r', lw=1.2, label='fitted F_v v + F_c tanh(v/ε)')
        ax.set_title(names[i], fontsize=9)
        ax.set_xlabel('velocity [rad/s]', fontsize=8)
        ax.set_ylabel('friction torque [N m]', fontsize=8)
        if i == 0:
            ax.legend(fontsize=6)
    fig.suptitle('Joint friction: fitted model and the data')
    fig.tight_layout()
    files.append(os.path.join(out_dir, 'friction.png'))
    fig.savefig(files[-1], dpi=90)
    plt.close(fig)
    return files


def _write_params(path, params, node=NODE):
    import yaml
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    with open(path, 'w') as f:
        f.write('# written by ros_dynamics calibrate\n')
        yaml.safe_dump({node: {'ros__parameters': params}}, f, default_flow_style=None,
                       sort_keys=False)


def load_params(path, node=NODE):
    """The ``ros__parameters`` of ``node`` in a parameter file (or of its only node)."""
    import yaml
    with open(path) as f:
        d = yaml.safe_load(f) or {}
    if node not in d:
        if len(d) != 1:
            raise SystemExit(f'calibrate: {path} has no parameters for node {node!r}')
        node = next(iter(d))
    return (d[node] or {}).get('ros__parameters', {})


def _state(args):
    return {'auto': 'auto', 'yes': True, 'no': False}[args.state_thresholds]


def _payload_options(args):
    """The payload fit's options of the command line (those given)."""
    out = {'load_friction': {'auto': 'auto', 'yes': True, 'no': False}[args.load_friction]}
    if args.torque_constant_error is not None:
        out['torque_scale_error'] = args.torque_constant_error
    return out


def cmd_identify(args):
    """``--links all``: the whole model (ros_dynamics.identification.whole_model)."""
    from ros_dynamics.identification.whole_model import identify_recording
    from ros_dynamics.identification.samples import CalibrationError
    model = _model(args.urdf)
    s = _samples(args, model)
    held = None
    if args.held_out:
        held = _samples(argparse.Namespace(**{**vars(args), 'bag': args.held_out,
                                              'start': None, 'stop': None}), model)
    print(f'calibrate: {len(s)} samples ({s.t[-1] - s.t[0]:.1f} s) of {args.topic} from '
          f'{args.bag}; identifying every link ('
          + (f'fit on all of it, report on {args.held_out}' if held is not None else
             f'fit on the first {1 - args.holdout:.0%}, report on the rest: the same motion; '
             'give --held-out BAG of other motion to judge on that') + ') ...', flush=True)
    try:
        ident = identify_recording(model, s, gain=args.gain, holdout=args.holdout,
                                   margin=args.margin, floor=args.floor,
                                   state_thresholds=_state(args), held_out=held)
    except (CalibrationError, ValueError) as exc:
        raise SystemExit(f'calibrate: {exc}') from None
    return _write_identified(args, model, ident)


def _write_identified(args, model, ident):
    """The report, the node's parameter file and (``--out-urdf``) the identified URDF of a
    whole-model fit (fixed or floating base)."""
    from ros_dynamics.identification.urdf_inertials import replace_inertials
    for line in ident.summary():
        print('  ' + line)
    _write_params(args.out, ident.node_parameters(), args.node)
    print(f'calibrate: wrote the parameters of node {args.node!r} to {args.out}')
    if args.out_urdf:
        with open(args.urdf) as f:
            text = f.read()
        os.makedirs(os.path.dirname(os.path.abspath(args.out_urdf)), exist_ok=True)
        with open(args.out_urdf, 'w') as f:
            f.write(replace_inertials(text, model, ident.model(model)))
        print(f'calibrate: wrote the identified URDF to {args.out_urdf}')
    return 0


def _contact_settings(params, args):
    """The contact-force settings of a parameter file (``--contact-frames`` first): keyword
    arguments of :func:`~ros_dynamics.identification.check.check_contact_forces` (none
    without contact frames)."""
    frames = getattr(args, 'contact_frames', None) or params.get('contact_frames') or []
    if not frames:
        return {}
    return dict(contact_frames=list(frames),
                contact_force_threshold=float(params.get('contact_force_threshold', 10.0)),
                odom_twist_noise=float(params.get('odom_twist_noise', 0.03)),
                contact_frame_model=params.get('contact_frame_model', 'point'))


def cmd_floating_base(args):
    """``--floating-base --contact-frames F.. --links all``: joint states and odometry from the
    bag, the whole model by projection onto the stance feet's null space
    (:mod:`ros_dynamics.identification.floating_base`)."""
    from ros_dynamics.core.api import task_frames
    from ros_dynamics.identification.floating_base import identify_floating_recording
    from ros_dynamics.identification.samples import CalibrationError
    if args.links != 'all':
        raise SystemExit('calibrate: --floating-base identifies the whole model: add --links all')
    if not args.contact_frames:
        raise SystemExit('calibrate: --floating-base needs --contact-frames (the feet)')
    model, s = _floating_samples(args)
    try:
        task_frames(model, args.contact_frames)
    except ValueError as exc:
        raise SystemExit(f'calibrate: {exc}') from None
    print(f'calibrate: {len(s)} samples ({s.t[-1] - s.t[0]:.1f} s) of {args.topic} and '
          f'{args.odom_topic} from {args.bag}; identifying every link of the floating base '
          f'(feet {", ".join(args.contact_frames)}; fit on the first {1 - args.holdout:.0%}, '
          'report on the rest) ...', flush=True)
    try:
        ident = identify_floating_recording(model, s, args.contact_frames, gain=args.gain,
                                            holdout=args.holdout, margin=args.margin,
                                            floor=args.floor,
                                            odom_twist_noise=args.odom_twist_noise)
    except (CalibrationError, ValueError) as exc:
        raise SystemExit(f'calibrate: {exc}') from None
    return _write_identified(args, model, ident)


def cmd_reference(args):
    """``--payload-link L --reference REF``: the robot from REF, the payload as the difference."""
    from ros_dynamics.identification.whole_model import payload_against_reference
    from ros_dynamics.identification.samples import CalibrationError
    from ros_dynamics.identification.urdf_inertials import replace_inertials
    model = _model(args.urdf)
    s = _samples(args, model)
    ref_args = argparse.Namespace(**{**vars(args), 'bag': args.reference})
    ref = _samples(ref_args, model)
    print(f'calibrate: the robot from {args.reference} ({len(ref)} samples), the payload on '
          f'{args.payload_link!r} from {args.bag} ({len(s)} samples) ...', flush=True)
    try:
        robot, cal = payload_against_reference(model, s, ref, args.payload_link, gain=args.gain,
                                               margin=args.margin, floor=args.floor,
                                               contact=args.contact,
                                               state_thresholds=_state(args),
                                               **_payload_options(args))
    except (CalibrationError, ValueError) as exc:
        raise SystemExit(f'calibrate: {exc}') from None
    for line in robot.summary() + cal.summary():
        print('  ' + line)
    params = cal.parameters()
    params['joint_armature'] = [float(x) for x in robot.armature]
    _write_params(args.out, params, args.node)
    print(f'calibrate: wrote the parameters of node {args.node!r} to {args.out}')
    if args.out_urdf:
        with open(args.urdf) as f:
            text = f.read()
        with open(args.out_urdf, 'w') as f:
            f.write(replace_inertials(text, model, robot.model(model)))
        print(f'calibrate: wrote the identified URDF (the robot without the payload) to '
              f'{args.out_urdf}')
    return 0


def cmd_calibrate(args):
    import numpy as np
    if args.floating_base:
        return cmd_floating_base(args)
    if args.links == 'all':
        return cmd_identify(args)
    if args.reference:
        if not args.payload_link:
            raise SystemExit('calibrate: --reference needs --payload-link')
        return cmd_reference(args)
    if args.out_urdf:
        raise SystemExit('calibrate: --out-urdf needs --links all or --reference')
    from ros_dynamics.identification.calibration import calibrate
    from ros_dynamics.identification.samples import CalibrationError
    model = _model(args.urdf)
    s = _samples(args, model)
    inertia = {'auto': 'auto', 'yes': True, 'no': False}[args.inertia]
    try:
        cal = calibrate(model, s, args.payload_link, gain=args.gain, inertia=inertia,
                        margin=args.margin, floor=args.floor, contact=args.contact,
                        state_thresholds=_state(args), **_payload_options(args))
    except (CalibrationError, ValueError) as exc:
        raise SystemExit(f'calibrate: {exc}') from None
    print(f'calibrate: {len(s)} samples ({s.t[-1] - s.t[0]:.1f} s) of {args.topic} from '
          f'{args.bag}')
    for line in cal.summary():
        print('  ' + line)
    _write_params(args.out, cal.parameters(), args.node)
    print(f'calibrate: wrote the parameters of node {args.node!r} to {args.out}')
    plots = args.plots or os.path.join('out', 'calibration')
    for f in _plot_calibration(cal, model, plots):
        print(f'calibrate: wrote {f}')
    return 0 if np.all(np.isfinite(cal.thresholds)) else 1


def _settings(params, model):
    """Observer settings and the model from a parameter file's values."""
    import numpy as np
    from ros_dynamics.identification.payload import apply_payload
    nj = len(model.joint_names)

    def per_joint(name, default):
        x = np.atleast_1d(np.asarray(params.get(name, default), dtype=float))
        if x.size == 1:
            x = np.full(nj, float(x[0]))
        if x.size != nj:
            raise SystemExit(f'calibrate: {name} has {x.size} values for {nj} joints')
        return x
    if any(per_joint('joint_armature', 0.0)):
        from ros_dynamics.core.model import with_armature
        model = with_armature(model, per_joint('joint_armature', 0.0))
    if params.get('payload_link'):
        try:
            model = apply_payload(model, params['payload_link'], params.get('payload_mass', 0.0),
                                  params.get('payload_com', [0.0] * 3),
                                  params.get('payload_inertia', [0.0] * 6))
        except ValueError as exc:
            raise SystemExit(f'calibrate: {exc}') from None
    return model, dict(gain=per_joint('observer_gain', 50.0),
                       friction_viscous=per_joint('observer_friction_viscous', 0.0),
                       friction_coulomb=per_joint('observer_friction_coulomb', 0.0),
                       torque_offset=per_joint('observer_torque_offset', 0.0),
                       threshold=per_joint('contact_threshold', 5.0),
                       threshold_velocity=per_joint('contact_threshold_velocity', 0.0),
                       threshold_torque=per_joint('contact_threshold_torque', 0.0),
                       release_ratio=float(params.get('contact_release_ratio', 0.5)))


def _floating_samples(args):
    """(floating-base model, samples of joint states and odometry) of ``--floating-base``."""
    from ros_dynamics.core.urdf import load_urdf
    from ros_dynamics.identification.bags import BagError, read_floating_base
    if not os.path.exists(args.urdf):
        raise SystemExit(f'calibrate: URDF file {args.urdf!r} not found')
    model = load_urdf(args.urdf, floating_base=True)
    try:
        s = read_floating_base(args.bag, model.joint_names, args.topic, args.odom_topic)
    except (BagError, ValueError) as exc:
        raise SystemExit(f'calibrate: {exc}') from None
    if args.start is not None or args.stop is not None:
        s = s.slice(args.start, args.stop)
    if len(s) == 0:
        raise SystemExit('calibrate: no samples in the selected time range')
    return model, s


def cmd_check(args):
    """``check``: the bag through the node's own cycle (ros_dynamics.identification.check); a
    floating base (``--floating-base``) with contact frames also ``~/contact_forces``."""
    import numpy as np
    from ros_dynamics.identification.check import check_contact_forces, check_recording
    if args.floating_base:
        model, s = _floating_samples(args)
    else:
        model = _model(args.urdf)
        s = _samples(args, model)
    params = load_params(args.params, args.node) if args.params else {}
    obs_model, st = _settings(params, model)
    contact = _contact_settings(params, args)
    if args.floating_base and not contact:
        raise SystemExit('calibrate: check --floating-base needs the feet: --contact-frames or '
                         'contact_frames in the parameter file')
    label = os.path.basename(os.path.normpath(args.bag))
    try:
        ck = check_recording(obs_model, s, label=label, **st, **contact)
        feet = (check_contact_forces(obs_model, s, label=label, **{
            k: st[k] for k in ('gain', 'friction_viscous', 'friction_coulomb', 'torque_offset')},
            **contact) if contact else None)
    except ValueError as exc:
        raise SystemExit(f'calibrate: {exc}') from None
    names = list(model.joint_names)
    for line in ck.summary() + (feet.summary() if feet else []):
        print(line)
    out = args.out or os.path.join('out', 'check.csv')
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, 'w', newline='') as f:
        w = csv.writer(f)
        w.writerow(['t'] + [f'r_{n}' for n in names] + [f'threshold_{n}' for n in names]
                   + ['contact', 'link'])
        for k in range(len(s)):
            w.writerow([f'{s.t[k]:.6f}'] + [f'{x:.6g}' for x in ck.r[k]]
                       + [f'{x:.6g}' for x in ck.threshold[k]]
                       + [int(ck.contact[k]), ck.link[k] or ''])
    print(f'check: wrote {out}')
    plt = _plt()
    n = len(names)
    fig, axes = plt.subplots(n + 1, 1, figsize=(10, 1.6 * (n + 1) + 1), sharex=True)
    for i in range(n):
        ax = axes[i]
        ax.plot(s.t, ck.r[:, i], lw=0.7, label='residual')
        ax.plot(s.t, ck.threshold[:, i], color='k', ls='--', lw=0.6, label='threshold')
        ax.plot(s.t, -ck.threshold[:, i], color='k', ls='--', lw=0.6)
        ax.set_ylabel(f'{names[i]}\nr [N m]', fontsize=8)
        if i == 0:
            ax.legend(fontsize=7, loc='upper right')
    links = sorted({x for x in ck.link if x})
    code = np.array([links.index(x) + 1 if x else 0 for x in ck.link])
    axes[n].step(s.t, code, where='post')
    axes[n].set_yticks(range(len(links) + 1), ['free'] + links, fontsize=7)
    axes[n].set_ylabel('isolated link', fontsize=8)
    axes[n].set_xlabel('time [s]')
    fig.suptitle(f'{os.path.basename(os.path.normpath(args.bag))} through the node\'s cycle: '
                 f'residual, thresholds, {ck.onsets} detections and isolation')
    fig.tight_layout()
    png = os.path.join(args.plots or os.path.dirname(os.path.abspath(out)),
                       os.path.splitext(os.path.basename(out))[0] + '.png')
    os.makedirs(os.path.dirname(png), exist_ok=True)
    fig.savefig(png, dpi=90)
    plt.close(fig)
    print(f'check: wrote {png}')
    return 0


def cmd_excite(args):
    """An exciting trajectory (ros_dynamics.identification.excitation) as a YAML file: the
    JointTrajectory fields (joint_names; points with positions, velocities, accelerations and
    time_from_start) for a trajectory controller, plus the Fourier coefficients."""
    import numpy as np
    import yaml
    from ros_dynamics.identification.excitation import optimise_excitation
    model = _model(args.urdf)
    print(f'calibrate excite: optimising {args.harmonics} harmonics per joint over '
          f'{args.duration:g} s (up to {args.iterations} iterations, exact gradients) ...', flush=True)
    traj, c0, c1 = optimise_excitation(model, args.duration, args.harmonics,
                                       max_acceleration=args.max_acceleration,
                                       maxiter=args.iterations)
    t = np.arange(0.0, args.duration + 1e-9, 1.0 / args.rate)
    q, v, a = traj(t)
    doc = {'joint_names': list(model.joint_names),
           'points': [{'time_from_start': {'sec': int(tk), 'nanosec': int(round((tk % 1) * 1e9))},
                       'positions': [float(x) for x in q[k]],
                       'velocities': [float(x) for x in v[k]],
                       'accelerations': [float(x) for x in a[k]]} for k, tk in enumerate(t)],
           'fourier': {'period': float(traj.period), 'q0': traj.q0.tolist(),
                       'a': traj.a.tolist(), 'b': traj.b.tolist()},
           'condition_number': {'start': c0, 'optimised': c1}}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, 'w') as f:
        f.write('# exciting trajectory written by ros_dynamics calibrate excite: trajectory_msgs/'
                'JointTrajectory fields (joint_names, points) for a trajectory controller; one '
                'period of a Fourier series (fourier: q(t) = q0 + sum_l a_l/(w l) sin(w l t) - '
                'b_l/(w l) cos(w l t), w = 2 pi/period); start it from points[0]\n')
        yaml.safe_dump(doc, f, default_flow_style=None, sort_keys=False)
    print(f'calibrate excite: condition number of the identification regressor {c0:.3g} -> '
          f'{c1:.3g}; wrote {len(t)} points to {args.out}')
    return 0


def cmd_record(argv):
    """``record`` is a ROS 2 program (:mod:`ros_dynamics.ros.recorder`, which parses ``argv``):
    run it in this process's place, so that signals reach it as they would reach ``calibrate``."""
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, '-m', 'ros_dynamics.ros.recorder', *argv])


def _common(ap, urdf=True):
    ap.add_argument('bag', help='ROS 2 bag folder (sqlite3 or mcap storage)')
    if urdf:
        ap.add_argument('--urdf', required=True, help='URDF file of the robot (as in the node)')
    ap.add_argument('--topic', default='/joint_states', help='sensor_msgs/JointState topic')
    ap.add_argument('--start', type=float, default=None, help='use samples from S s on')
    ap.add_argument('--stop', type=float, default=None, help='use samples before S s')
    ap.add_argument('--node', default=NODE, help='node name in the parameter file')


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == 'replay':
        raise SystemExit("calibrate: 'replay' is now 'calibrate check' (the same replay through "
                         "the node's cycle, with a report)")
    cmd = argv[0] if argv and argv[0] in ('check', 'record', 'excite') else 'calibrate'
    if cmd != 'calibrate':
        argv = argv[1:]
    if cmd == 'calibrate':
        ap = argparse.ArgumentParser(
            prog='calibrate', description='Fit joint friction and a payload to contact-free '
            'motion in a bag; write node parameters and plots. Subcommands: check, excite, '
            'record (calibrate check -h).')
        _common(ap)
        ap.add_argument('--payload-link', default=None, help='link carrying an unknown payload')
        ap.add_argument('--links', choices=('all',), default=None,
                        help='all: identify every link\'s inertia, joint friction and armature '
                        '(the whole model; with --out-urdf)')
        ap.add_argument('--out-urdf', default=None,
                        help='with --links all: write the URDF with the identified inertials')
        ap.add_argument('--floating-base', action='store_true',
                        help='a legged robot (with --links all and --contact-frames): joint '
                        'states and nav_msgs/Odometry from the bag, the feet\'s unknown forces '
                        'eliminated by projection (docs/calibration.md)')
        ap.add_argument('--odom-topic', default='/odom',
                        help='with --floating-base: nav_msgs/Odometry topic (default /odom)')
        ap.add_argument('--contact-frames', nargs='+', default=None,
                        help='with --floating-base: the feet (frames of the URDF)')
        ap.add_argument('--odom-twist-noise', type=float, default=0.03, help='with '
                        '--floating-base: the odometry twist\'s noise [m/s, rad/s] (the node\'s '
                        'odom_twist_noise, default 0.03), fused with the stance legs\' twist; 0: '
                        'the odometry\'s as is (an exact odometry)')
        ap.add_argument('--reference', default=None,
                        help='with --payload-link: a bag of the same robot without the payload; '
                        'the robot is identified from it and the payload is the difference')
        ap.add_argument('--held-out', default=None, metavar='BAG',
                        help='with --links all: a second bag of other motion of the same robot; '
                        'the whole of BAG is fitted and the held-out report, the thresholds and '
                        'the check come from this one (default: the end of BAG, --holdout)')
        ap.add_argument('--holdout', type=float, default=0.3, help='with --links all: fraction '
                        'of the recording (its end) held out for the report and the thresholds')
        ap.add_argument('--out', required=True, help='parameter file to write (YAML)')
        ap.add_argument('--plots', default=None, help='plot folder (default out/calibration)')
        ap.add_argument('--gain', type=float, nargs='+', default=[50.0],
                        help='observer gain K [1/s] the node runs (one or one per joint)')
        ap.add_argument('--margin', type=float, default=2.0,
                        help='the thresholds cover margin x |r| at every sample (default 2)')
        ap.add_argument('--floor', type=float, default=0.2, help='smallest threshold [N m]')
        ap.add_argument('--inertia', choices=('auto', 'yes', 'no'), default='auto',
                        help="fit the payload's rotational inertia (auto: when the motion "
                        'determines it)')
        ap.add_argument('--torque-constant-error', type=float, default=None,
                        help='relative error of each joint\'s torque constant (one standard '
                        'deviation) in the payload\'s standard errors (default 0.02: torques '
                        'from motor currents; 0 for joint torque sensors)')
        ap.add_argument('--load-friction', choices=('auto', 'yes', 'no'), default='auto',
                        help='with --payload-link: fit a Coulomb friction growing with the '
                        'joint\'s load torque (auto: when it lowers the residual of held-out '
                        'samples by 5 %%)')
        ap.add_argument('--contact', choices=('auto', 'error', 'exclude'), default='auto',
                        help='stretches that look like contact: auto (default) fits on the rest '
                        'and names them when they are at most 10 %% of the recording, else '
                        'stops; error: stop with an error naming them; exclude: fit on the rest')
        ap.add_argument('--state-thresholds', choices=('auto', 'yes', 'no'), default='auto',
                        help='contact thresholds growing with |v| and |tau| '
                        '(contact_threshold_velocity/_torque): auto (default) where the data '
                        'ask for it, yes on every joint, no: constant')
        args = ap.parse_args(argv)
        args.gain = args.gain[0] if len(args.gain) == 1 else args.gain
        return cmd_calibrate(args)
    if cmd == 'check':
        ap = argparse.ArgumentParser(prog='calibrate check', description='Replay a bag through '
                                     "the node's own cycle with a parameter file: false "
                                     'contacts, margins per joint, the smallest detected '
                                     'external torque, the worst stretches; residual, '
                                     'thresholds, detections and isolation over time to CSV '
                                     'and a plot.')
        _common(ap)
        ap.add_argument('--params', default=None, help='node parameter file (e.g. from '
                        'calibrate); default: the node defaults')
        ap.add_argument('--out', default=None, help='CSV to write (default out/check.csv)')
        ap.add_argument('--plots', default=None, help='plot folder (default: next to the CSV)')
        ap.add_argument('--floating-base', action='store_true',
                        help='a legged robot: joint states and nav_msgs/Odometry from the bag; '
                        'with contact frames (--contact-frames or the parameter file\'s) also '
                        '~/contact_forces on the stance: the feet\'s vertical forces against '
                        'the weight and the foot-force residual (the unexplained part)')
        ap.add_argument('--odom-topic', default='/odom',
                        help='with --floating-base: nav_msgs/Odometry topic (default /odom)')
        ap.add_argument('--contact-frames', nargs='+', default=None,
                        help='with --floating-base: the feet (default: the parameter file\'s '
                        'contact_frames)')
        return cmd_check(ap.parse_args(argv))
    if cmd == 'excite':
        ap = argparse.ArgumentParser(prog='calibrate excite', description='An exciting '
                                     'trajectory for --links all: an optimised Fourier series '
                                     'within the joint limits, as JointTrajectory points.')
        ap.add_argument('--urdf', required=True, help='URDF file of the robot')
        ap.add_argument('--out', required=True, help='trajectory file to write (YAML)')
        ap.add_argument('--duration', type=float, default=20.0, help='period [s] (default 20)')
        ap.add_argument('--harmonics', type=int, default=4, help='harmonics per joint')
        ap.add_argument('--max-acceleration', type=float, default=3.0,
                        help='joint acceleration limit [rad/s^2] (URDFs carry none)')
        ap.add_argument('--iterations', type=int, default=100, help='optimiser iterations')
        ap.add_argument('--rate', type=float, default=50.0, help='points per second')
        return cmd_excite(ap.parse_args(argv))
    return cmd_record(argv)


if __name__ == '__main__':
    sys.exit(main())
