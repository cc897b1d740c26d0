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

A file that cannot be used (a URDF whose inertials are not a rigid body's, a recording that is
unreadable or does not fit the model, a parameter file that does not fit it) or a recording
that cannot give what was asked ends every sub-command with one line on stderr naming the
file and what is wrong (the link, the topic, the parameter) and exit status 2, no traceback:
:func:`main` is the one error boundary.  The commands are in :mod:`.calibrate_commands`, the
files in :mod:`.calibrate_files`, the plots in :mod:`.calibrate_plots`.
"""

import argparse
import sys

from .calibrate_files import NODE

__all__ = ['main']

#: exit status of a refused input (argparse's own for a bad command line)
EXIT_INPUT = 2


def main(argv=None):
    """``calibrate``: parse the sub-command and run it; the one error boundary (module text)."""
    from .bags import BagError
    from .calibrate_files import InputError
    from .samples import CalibrationError
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _run(argv)
    except (InputError, BagError, CalibrationError, ValueError, OSError) as exc:
        # bad files, data that cannot give what was asked, a value the tools refuse, a file
        # not written: one line
        text = '; '.join(x.strip() for x in str(exc).splitlines() if x.strip())
        print(f'calibrate: {text}', file=sys.stderr)
        return EXIT_INPUT


def _run(argv):
    from . import calibrate_commands as commands
    if argv and argv[0] == 'replay':
        raise ValueError("'replay' is now 'calibrate check' (the same replay through the "
                         "node's cycle, with a report)")
    if argv and argv[0] == 'check':
        return commands.cmd_check(_check_parser().parse_args(argv[1:]))
    if argv and argv[0] == 'excite':
        return commands.cmd_excite(_excite_parser().parse_args(argv[1:]))
    if argv and argv[0] == 'record':
        return commands.cmd_record(argv[1:])
    args = _calibrate_parser().parse_args(argv)
    args.gain = args.gain[0] if len(args.gain) == 1 else args.gain
    return commands.cmd_calibrate(args)


def _common(ap, urdf=True):
    ap.add_argument('bag', help='ROS 2 bag folder (sqlite3 or mcap storage)')
    if urdf:
        ap.add_argument('--urdf', required=True, help='URDF file of the robot (as in the node)')
    ap.add_argument('--topic', default='/joint_states', help='sensor_msgs/JointState topic')
    ap.add_argument('--start', type=float, default=None, help='use samples from S s on')
    ap.add_argument('--stop', type=float, default=None, help='use samples before S s')
    ap.add_argument('--node', default=NODE, help='node name in the parameter file')


def _floating_options(ap, check=False):
    ap.add_argument('--odom-topic', default='/odom',
                    help='with --floating-base: nav_msgs/Odometry topic (default /odom)')
    ap.add_argument('--contact-frames', nargs='+', default=None,
                    help='with --floating-base: the feet (frames of the URDF)'
                    + ('; default: the parameter file\'s contact_frames' if check else ''))


def _calibrate_parser():
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
    _floating_options(ap)
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
    _fit_options(ap)
    return ap


def _fit_options(ap):
    ap.add_argument('--margin', type=float, default=2.0,
                    help='the thresholds cover margin x the largest residual of the recording '
                    '(default 2)')
    ap.add_argument('--floor', type=float, default=0.2, help='smallest threshold [N m] (and '
                    'at least the joint\'s Coulomb friction)')
    ap.add_argument('--inertia', choices=('auto', 'yes', 'no'), default='auto',
                    help="fit the payload's rotational inertia (auto: when the motion "
                    'determines it)')
    ap.add_argument('--torque-constant-error', type=float, default=None,
                    help='relative error of each joint\'s torque constant (one standard '
                    'deviation) in the payload\'s standard errors (default 0.02: torques from '
                    'motor currents; 0 for joint torque sensors)')
    ap.add_argument('--velocity-filters', type=float, nargs='*', default=None, metavar='HZ',
                    help='refit with the velocities differentiated from the positions and '
                    'low-passed at these cut-offs [Hz], the spread counted in the standard '
                    'errors (default 20 5; none: the recorded velocities only)')
    ap.add_argument('--load-friction', choices=('auto', 'yes', 'no'), default='auto',
                    help='with --payload-link: fit a Coulomb friction growing with the '
                    'joint\'s load torque (auto: when it lowers the residual of held-out '
                    'samples by 5 %%); with --reference: selected on the reference and held '
                    'in the payload\'s fit')
    ap.add_argument('--contact', choices=('auto', 'error', 'exclude'), default='auto',
                    help='stretches that look like contact: auto (default) fits on the rest '
                    'and names them when they are at most 10 %% of the recording (not '
                    'counting a start-up stretch: at most 1 s, beginning in the first 0.25 s), '
                    'else stops; error: stop with an error naming them; exclude: fit on the '
                    'rest')


def _check_parser():
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
    _floating_options(ap, check=True)
    return ap


def _excite_parser():
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
    return ap


if __name__ == '__main__':
    sys.exit(main())
