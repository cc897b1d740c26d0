"""What ``calibrate`` reads and writes, validated at one boundary (no ROS): the URDF (refused
when an inertial is not a rigid body's), the recordings (refused when they do not fit the
model), the node's parameter file (refused when a value does not fit the model).

Every refusal is an :class:`InputError` whose message names the file and what in it is wrong
(the link, the topic, the parameter); the command line prints it on one line and exits with
status 2 (:func:`ros_dynamics.identification.calibrate.main`).
"""

import os

import numpy as np

NODE = 'dynamics'

__all__ = ['InputError', 'NODE', 'contact_settings', 'load_floating', 'load_model',
           'load_params', 'load_samples', 'observer_settings', 'write_params']


class InputError(ValueError):
    """A file ``calibrate`` was given cannot be used (the message says which and why)."""


def load_model(urdf, floating_base=False):
    """The model of ``urdf``, whose every inertial is a rigid body's: a mass > 0 where a link
    has inertia, moments >= 0 that satisfy the triangle inequality (a fit regularised toward
    the URDF, and its report, would otherwise start from a body no robot has)."""
    from ros_dynamics.core.urdf import load_urdf
    if not os.path.exists(urdf):
        raise InputError(f'URDF file {urdf!r} not found')
    try:
        model = load_urdf(urdf, floating_base=floating_base, strict_inertia=True)
    except ValueError as exc:
        raise InputError(f'{urdf}: {exc}') from None
    for name, m, inertia in zip(model.body_names, model.mass, model.inertia):
        if m <= 0 and np.any(np.abs(inertia) > 0):
            raise InputError(f'{urdf}: link {name!r} has inertia but a mass of {m:g} kg: not a '
                             'rigid body (the mass must be > 0)')
    return model


def load_samples(path, topic, model, start=None, stop=None):
    """The joint states of ``topic`` in the bag at ``path`` as samples of ``model``'s joints,
    cut to [``start``, ``stop``) seconds."""
    from .bags import BagError, read_joint_states
    try:
        s = read_joint_states(path, topic, model.joint_names)
    except BagError as exc:
        raise InputError(str(exc)) from None
    return _cut(s, path, start, stop)


def load_floating(args):
    """(floating-base model, joint states and odometry of the bag) of ``--floating-base``."""
    from .bags import BagError, read_floating_base
    model = load_model(args.urdf, floating_base=True)
    try:
        s = read_floating_base(args.bag, model.joint_names, args.topic, args.odom_topic)
    except (BagError, ValueError) as exc:
        raise InputError(str(exc)) from None
    return model, _cut(s, args.bag, args.start, args.stop)


def _cut(s, path, start, stop):
    if start is not None or stop is not None:
        s = s.slice(start, stop)
    if len(s) == 0:
        raise InputError(f'{path}: no samples in the selected time range')
    return s


def write_params(path, params, node=NODE):
    """The parameter file of ``node`` (``ros__parameters``), its folder created."""
    import yaml
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, 'w') as f:
        f.write('# written by ros_dynamics calibrate\n')
        yaml.safe_dump({node: {'ros__parameters': params}}, f, default_flow_style=None,
                       sort_keys=False)


def load_params(path, node=NODE):
    """The ``ros__parameters`` of ``node`` in a parameter file (or of its only node)."""
    import yaml
    try:
        with open(path) as f:
            d = yaml.safe_load(f) or {}
    except OSError as exc:
        raise InputError(f'parameter file {path!r}: {exc.strerror}') from None
    except yaml.YAMLError as exc:
        raise InputError(f'parameter file {path!r} is not YAML: '
                         f'{str(exc).splitlines()[0]}') from None
    if not isinstance(d, dict):
        raise InputError(f'parameter file {path!r} is not a mapping of node names')
    if node not in d:
        if len(d) != 1:
            raise InputError(f'{path} has no parameters for node {node!r}')
        node = next(iter(d))
    p = (d[node] or {}).get('ros__parameters', {}) if isinstance(d[node], dict) else None
    if not isinstance(p, dict):
        raise InputError(f'{path}: node {node!r} has no ros__parameters mapping')
    return p


def observer_settings(params, model, path='the parameter file'):
    """(the model with the file's armature and payload, the observer's settings) of a
    parameter file's values: keyword arguments of
    :func:`~ros_dynamics.identification.check.check_recording`."""
    from .payload import apply_payload
    nj = len(model.joint_names)

    def per_joint(name, default):
        try:
            x = np.atleast_1d(np.asarray(params.get(name, default), dtype=float))
        except (TypeError, ValueError):
            raise InputError(f'{path}: {name} is not a list of numbers') from None
        if x.size == 1:
            x = np.full(nj, float(x[0]))
        if x.size != nj or not np.all(np.isfinite(x)):
            raise InputError(f'{path}: {name} has {x.size} values for {nj} joints'
                             if x.size != nj else f'{path}: {name} is not finite')
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
            raise InputError(f'{path}: {exc}') from None
    return model, dict(gain=per_joint('observer_gain', 50.0),
                       friction_viscous=per_joint('observer_friction_viscous', 0.0),
                       friction_coulomb=per_joint('observer_friction_coulomb', 0.0),
                       torque_offset=per_joint('observer_torque_offset', 0.0),
                       threshold=per_joint('contact_threshold', 5.0),
                       threshold_velocity=per_joint('contact_threshold_velocity', 0.0),
                       threshold_torque=per_joint('contact_threshold_torque', 0.0),
                       release_ratio=float(params.get('contact_release_ratio', 0.5)))


def contact_settings(params, frames=None):
    """The contact-force settings of a parameter file (``frames`` first): keyword arguments of
    :func:`~ros_dynamics.identification.check.check_contact_forces` (none without contact
    frames)."""
    frames = frames or params.get('contact_frames') or []
    if not frames:
        return {}
    return dict(contact_frames=list(frames),
                contact_force_threshold=float(params.get('contact_force_threshold', 10.0)),
                odom_twist_noise=float(params.get('odom_twist_noise', 0.03)),
                contact_frame_model=params.get('contact_frame_model', 'point'))
