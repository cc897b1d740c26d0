"""The ``calibrate`` sub-commands (no ROS except ``record``): each reads its files through
:mod:`.calibrate_files`, runs the offline tool and writes its report, parameter file and plots.
Errors the data cause (:class:`~ros_dynamics.identification.samples.CalibrationError`) and bad
files (:class:`~ros_dynamics.identification.calibrate_files.InputError`) propagate to the one
error boundary, :func:`ros_dynamics.identification.calibrate.main`."""

import argparse
import csv
import os
import sys

import numpy as np

from .calibrate_files import (InputError, contact_settings, load_floating, load_model,
                              load_params, load_samples, observer_settings, write_params)

__all__ = ['cmd_calibrate', 'cmd_check', 'cmd_excite', 'cmd_record']

_CHOICE = {'auto': 'auto', 'yes': True, 'no': False}


def _samples(args, model, bag=None, whole=False):
    bag = bag or args.bag
    return load_samples(bag, args.topic, model, None if whole else args.start,
                        None if whole else args.stop)


def _payload_options(args):
    """The payload fit's options of the command line (those given)."""
    out = {'load_friction': _CHOICE[args.load_friction], 'contact': args.contact}
    if args.torque_constant_error is not None:
        out['torque_scale_error'] = args.torque_constant_error
    if args.velocity_filters is not None:
        out['velocity_filters'] = tuple(args.velocity_filters)
    return out


def _report(lines):
    for line in lines:
        print('  ' + line)


def cmd_calibrate(args):
    """The default command: friction and a payload (or, by option, the whole model, a payload
    against a reference, a floating base)."""
    if args.floating_base:
        return _floating_base(args)
    if args.links == 'all':
        return _identify(args)
    if args.reference:
        if not args.payload_link:
            raise InputError('--reference needs --payload-link')
        return _reference(args)
    if args.out_urdf:
        raise InputError('--out-urdf needs --links all or --reference')
    from .calibration import calibrate
    from .calibrate_plots import plot_calibration
    model = load_model(args.urdf)
    s = _samples(args, model)
    print(f'calibrate: {len(s)} samples ({s.t[-1] - s.t[0]:.1f} s) of {args.topic} from '
          f'{args.bag} ...', flush=True)
    cal = calibrate(model, s, args.payload_link, gain=args.gain, inertia=_CHOICE[args.inertia],
                    margin=args.margin, floor=args.floor, **_payload_options(args))
    _report(cal.summary())
    write_params(args.out, cal.parameters(), args.node)
    print(f'calibrate: wrote the parameters of node {args.node!r} to {args.out}')
    for f in plot_calibration(cal, model, args.plots or os.path.join('out', 'calibration')):
        print(f'calibrate: wrote {f}')
    return 0


def _identify(args):
    """``--links all``: the whole model (ros_dynamics.identification.whole_model)."""
    from .whole_model import identify_recording
    model = load_model(args.urdf)
    s = _samples(args, model)
    held = _samples(args, model, args.held_out, whole=True) if args.held_out else None
    print(f'calibrate: {len(s)} samples ({s.t[-1] - s.t[0]:.1f} s) of {args.topic} from '
          f'{args.bag}; identifying every link ('
          + (f'fit on all of it, report on {args.held_out}' if held is not None else
             f'fit on the first {1 - args.holdout:.0%}, report on the rest: the same motion; '
             'give --held-out BAG of other motion to judge on that') + ') ...', flush=True)
    ident = identify_recording(model, s, gain=args.gain, holdout=args.holdout,
                               margin=args.margin, floor=args.floor, held_out=held)
    return _write_identified(args, model, ident)


def _write_identified(args, model, ident, lines=None):
    """The report, the node's parameter file and (``--out-urdf``) the identified URDF of a
    whole-model fit (fixed or floating base)."""
    from .urdf_inertials import replace_inertials
    _report(lines or ident.summary())
    write_params(args.out, ident.node_parameters(), args.node)
    print(f'calibrate: wrote the parameters of node {args.node!r} to {args.out}')
    if args.out_urdf:
        with open(args.urdf) as f:
            text = f.read()
        os.makedirs(os.path.dirname(os.path.abspath(args.out_urdf)), exist_ok=True)
        with open(args.out_urdf, 'w') as f:
            f.write(replace_inertials(text, model, ident.model(model)))
        print(f'calibrate: wrote the identified URDF to {args.out_urdf}')
    return 0


def _floating_base(args):
    """``--floating-base --contact-frames F.. --links all``: joint states and odometry from the
    bag, the whole model by projection onto the stance feet's null space
    (:mod:`ros_dynamics.identification.floating_base`)."""
    from ros_dynamics.core.api import task_frames
    from .floating_base import identify_floating_recording
    if args.links != 'all':
        raise InputError('--floating-base identifies the whole model: add --links all')
    if not args.contact_frames:
        raise InputError('--floating-base needs --contact-frames (the feet)')
    model, s = load_floating(args)
    try:
        task_frames(model, args.contact_frames)
    except ValueError as exc:
        raise InputError(f'{args.urdf}: {exc}') from None
    print(f'calibrate: {len(s)} samples ({s.t[-1] - s.t[0]:.1f} s) of {args.topic} and '
          f'{args.odom_topic} from {args.bag}; identifying every link of the floating base '
          f'(feet {", ".join(args.contact_frames)}; fit on the first {1 - args.holdout:.0%}, '
          'report on the rest) ...', flush=True)
    ident = identify_floating_recording(model, s, args.contact_frames, gain=args.gain,
                                        holdout=args.holdout, margin=args.margin,
                                        floor=args.floor, odom_twist_noise=args.odom_twist_noise)
    return _write_identified(args, model, ident)


def _reference(args):
    """``--payload-link L --reference REF``: the robot from REF, the payload as the difference."""
    from .whole_model import payload_against_reference
    model = load_model(args.urdf)
    s = _samples(args, model)
    ref = _samples(args, model, args.reference)
    print(f'calibrate: the robot from {args.reference} ({len(ref)} samples), the payload on '
          f'{args.payload_link!r} from {args.bag} ({len(s)} samples) ...', flush=True)
    robot, cal = payload_against_reference(model, s, ref, args.payload_link, gain=args.gain,
                                           margin=args.margin, floor=args.floor,
                                           **_payload_options(args))
    params = cal.parameters()
    params['joint_armature'] = [float(x) for x in robot.armature]
    _report(robot.summary() + cal.summary())
    write_params(args.out, params, args.node)
    print(f'calibrate: wrote the parameters of node {args.node!r} to {args.out}')
    if args.out_urdf:
        from .urdf_inertials import replace_inertials
        with open(args.urdf) as f:
            text = f.read()
        with open(args.out_urdf, 'w') as f:
            f.write(replace_inertials(text, model, robot.model(model)))
        print(f'calibrate: wrote the identified URDF (the robot without the payload) to '
              f'{args.out_urdf}')
    return 0


def cmd_check(args):
    """``check``: the bag through the node's own cycle (ros_dynamics.identification.check); a
    floating base (``--floating-base``) with contact frames also ``~/contact_forces``."""
    from .check import check_contact_forces, check_recording
    from .calibrate_plots import plot_check
    if args.floating_base:
        model, s = load_floating(args)
    else:
        model = load_model(args.urdf)
        s = _samples(args, model)
    params = load_params(args.params, args.node) if args.params else {}
    obs_model, st = observer_settings(params, model, args.params or 'the defaults')
    contact = contact_settings(params, getattr(args, 'contact_frames', None))
    if args.floating_base and not contact:
        raise InputError('check --floating-base needs the feet: --contact-frames or '
                         'contact_frames in the parameter file')
    label = os.path.basename(os.path.normpath(args.bag))
    ck = check_recording(obs_model, s, label=label, **st, **contact)
    feet = (check_contact_forces(obs_model, s, label=label, **{
        k: st[k] for k in ('gain', 'friction_viscous', 'friction_coulomb', 'torque_offset')},
        **contact) if contact else None)
    names = list(model.joint_names)
    for line in ck.summary() + (feet.summary() if feet else []):
        print(line)
    out = args.out or os.path.join('out', 'check.csv')
    _write_check_csv(out, ck, names)
    print(f'check: wrote {out}')
    png = os.path.join(args.plots or os.path.dirname(os.path.abspath(out)),
                       os.path.splitext(os.path.basename(out))[0] + '.png')
    plot_check(ck, names, f"{label} through the node's cycle: residual, thresholds, "
               f'{ck.onsets} detections and isolation', png)
    print(f'check: wrote {png}')
    return 0


def _write_check_csv(path, ck, names):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, 'w', newline='') as f:
        w = csv.writer(f)
        w.writerow(['t'] + [f'r_{n}' for n in names] + [f'threshold_{n}' for n in names]
                   + ['contact', 'link'])
        for k in range(len(ck.t)):
            w.writerow([f'{ck.t[k]:.6f}'] + [f'{x:.6g}' for x in ck.r[k]]
                       + [f'{x:.6g}' for x in ck.threshold[k]]
                       + [int(ck.contact[k]), ck.link[k] or ''])


def cmd_excite(args):
    """An exciting trajectory (ros_dynamics.identification.excitation) as a YAML file: the
    JointTrajectory fields (joint_names; points with positions, velocities, accelerations and
    time_from_start) for a trajectory controller, plus the Fourier coefficients."""
    import yaml
    from .excitation import optimise_excitation
    model = load_model(args.urdf)
    print(f'calibrate excite: optimising {args.harmonics} harmonics per joint over '
          f'{args.duration:g} s (up to {args.iterations} iterations, exact gradients) ...',
          flush=True)
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
    run it in this process's place, so that signals reach it as they would reach ``calibrate``.
    A bag folder that exists already is refused here, before ROS starts."""
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument('bag', nargs='?')
    for option in ('--topic', '--duration', '--count', '--storage'):
        ap.add_argument(option)
    known, _ = ap.parse_known_args(argv)
    if known.bag and os.path.exists(known.bag):
        raise InputError(f'{known.bag} exists already (a bag is a new folder)')
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, '-m', 'ros_dynamics.ros.recorder', *argv])
