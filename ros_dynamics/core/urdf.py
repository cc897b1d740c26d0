"""URDF (or xacro) to :class:`~ros_dynamics.model.Model`.

Parsing is done by ``urdf_parser_py``; this module only builds the tree:

* ``fixed`` joints are merged: the child's inertia is lumped into its parent body
  (parallel-axis theorem), and the child link stays addressable through ``model.link_frames``;
* ``revolute``/``continuous`` (angle) and ``prismatic`` (displacement) joints are 1-DoF;
* with ``floating_base=True`` the URDF root becomes a body with a 6-DoF free joint
  (Pinocchio's free-flyer layout, see CONVENTIONS.md);
* ``mimic`` joints stay independent coordinates (their relation is kept in ``model.mimic``);
* anything else (planar/floating joints below the root, a moving link that carries no mass
  at all) raises ``ValueError`` naming the joint or link.
"""

import os
import xml.etree.ElementTree as ET

import numpy as np

from .model import FREE, PRISMATIC, REVOLUTE, Model
from .spatial_numpy import lump_inertia, rpy_to_matrix

_JOINT_TYPES = {'revolute': REVOLUTE, 'continuous': REVOLUTE, 'prismatic': PRISMATIC}


def _read_source(source):
    """Return URDF XML text from an XML string or a path to a .urdf or .xacro file."""
    if not isinstance(source, (str, bytes, os.PathLike)):
        raise ValueError('URDF source must be an XML string or a file path')
    if isinstance(source, bytes):
        source = source.decode('utf-8')
    text = os.fspath(source)
    if text.lstrip().startswith('<'):
        return text
    if not os.path.isfile(text):
        raise ValueError(f'URDF file not found: {text!r}')
    if text.endswith('.xacro'):
        try:
            import xacro
        except ImportError as exc:  # pragma: no cover - xacro is a declared dependency
            raise ValueError('loading a .xacro file needs the "xacro" package') from exc
        try:
            return xacro.process_file(text).toxml()
        except Exception as exc:
            raise ValueError(f'xacro failed on {text!r}: {exc}') from exc
    with open(text, encoding='utf-8') as f:
        return f.read()


def _parse(xml):
    from urdf_parser_py import urdf as up
    from urdf_parser_py.xml_reflection import core
    try:
        ET.fromstring(xml)
    except ET.ParseError as exc:
        raise ValueError(f'malformed URDF XML: {exc}') from exc
    saved = core.on_error
    core.on_error = lambda message: None          # unknown tags (gazebo, transmission) are fine
    try:
        robot = up.URDF.from_xml_string(xml)
    except Exception as exc:
        raise ValueError(f'invalid URDF: {exc}') from exc
    finally:
        core.on_error = saved
    return robot


def _origin(element):
    """(R, p) of a URDF <origin> (identity when absent)."""
    pose = getattr(element, 'origin', None)
    xyz = pose.xyz if pose is not None and pose.xyz is not None else [0.0, 0.0, 0.0]
    rpy = pose.rpy if pose is not None and pose.rpy is not None else [0.0, 0.0, 0.0]
    return rpy_to_matrix(rpy), np.asarray(xyz, dtype=float)


def _link_inertia(link):
    """(mass, CoM, inertia about the CoM) of a link in its own frame."""
    inertial = link.inertial
    if inertial is None:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    R, p = _origin(inertial)
    m = float(inertial.mass or 0.0)
    Ic = np.zeros((3, 3)) if inertial.inertia is None else np.asarray(inertial.inertia.to_matrix(), float)
    values = np.concatenate([[m], p, Ic.ravel()])
    if not np.all(np.isfinite(values)):
        raise ValueError(f'link {link.name!r} has a non-finite inertial parameter')
    if m < 0:
        raise ValueError(f'link {link.name!r} has negative mass')
    return m, p, R @ Ic @ R.T


def load_urdf(source, floating_base=False, gravity=(0.0, 0.0, -9.81)):
    """Build a :class:`Model` from a URDF file path, a .xacro file path or a URDF XML string."""
    robot = _parse(_read_source(source))
    links = {link.name: link for link in robot.links}
    if not links:
        raise ValueError('URDF has no links')
    children = {name: [] for name in links}
    has_parent = set()
    for joint in robot.joints:
        for end in (joint.parent, joint.child):
            if end not in links:
                raise ValueError(f'joint {joint.name!r} refers to unknown link {end!r}')
        if joint.child in has_parent:
            raise ValueError(f'link {joint.child!r} has two parent joints (closed loops are not supported)')
        has_parent.add(joint.child)
        children[joint.parent].append(joint)
    roots = [name for name in links if name not in has_parent]
    if len(roots) != 1:
        raise ValueError(f'URDF must have exactly one root link, found {roots}')
    root = roots[0]

    body_names, joint_names, parent, jtype = [], [], [], []
    X_R, X_p, axis, inertial = [], [], [], []
    link_frames = {}
    mimic, limits = {}, {}

    # Depth-first walk (URDF child order, as Pinocchio numbers joints).  ``frame`` is the pose of
    # the current link in the frame of the body it is rigidly attached to (-1: the world).
    def add_mass(body, R, p, link):
        m, c, Ic = _link_inertia(link)
        if body < 0 or m == 0.0 and not Ic.any():
            return
        mb, cb, Ib = inertial[body]
        inertial[body] = lump_inertia(mb, cb, Ib, m, R @ c + p, R @ Ic @ R.T)

    def walk(link_name, body, R, p):
        link_frames[link_name] = (body, R, p)
        add_mass(body, R, p, links[link_name])
        for joint in children[link_name]:
            Rj, pj = _origin(joint)
            R_child, p_child = R @ Rj, R @ pj + p
            if joint.type == 'fixed':
                walk(joint.child, body, R_child, p_child)
                continue
            if joint.type not in _JOINT_TYPES:
                raise ValueError(f'joint {joint.name!r}: unsupported joint type {joint.type!r} '
                                 '(supported: revolute, continuous, prismatic, fixed; a floating base '
                                 'only at the root via floating_base=True)')
            a = np.asarray(joint.axis if joint.axis is not None else [1.0, 0.0, 0.0], dtype=float)
            if a.shape != (3,) or not np.all(np.isfinite(a)) or np.linalg.norm(a) < 1e-12:
                raise ValueError(f'joint {joint.name!r} has an invalid axis {joint.axis}')
            index = len(body_names)
            body_names.append(joint.child)
            joint_names.append(joint.name)
            parent.append(body)
            jtype.append(_JOINT_TYPES[joint.type])
            X_R.append(R_child)
            X_p.append(p_child)
            axis.append(a / np.linalg.norm(a))
            inertial.append((0.0, np.zeros(3), np.zeros((3, 3))))
            if joint.mimic is not None:
                mimic[joint.name] = (joint.mimic.joint, float(joint.mimic.multiplier or 1.0),
                                     float(joint.mimic.offset or 0.0))
            if joint.limit is not None:
                limits[joint.name] = dict(lower=joint.limit.lower, upper=joint.limit.upper,
                                          velocity=joint.limit.velocity, effort=joint.limit.effort)
            walk(joint.child, index, np.eye(3), np.zeros(3))

    if floating_base:
        body_names.append(root)
        parent.append(-1)
        jtype.append(FREE)
        X_R.append(np.eye(3))
        X_p.append(np.zeros(3))
        axis.append(np.zeros(3))
        inertial.append((0.0, np.zeros(3), np.zeros((3, 3))))
        walk(root, 0, np.eye(3), np.zeros(3))
    else:
        walk(root, -1, np.eye(3), np.zeros(3))
    if not body_names:
        raise ValueError('URDF has no moving joint (only fixed joints)')

    for name, (leader, _, _) in mimic.items():
        if leader not in joint_names:
            raise ValueError(f'joint {name!r} mimics unknown or fixed joint {leader!r}')

    # A moving body that carries no mass and has no massive descendant makes M singular.
    masses = np.array([m for m, _, _ in inertial])
    subtree = masses.copy()
    for i in range(len(body_names) - 1, -1, -1):
        if parent[i] >= 0:
            subtree[parent[i]] += subtree[i]
    for i, name in enumerate(body_names):
        if subtree[i] <= 0.0:
            raise ValueError(f'link {name!r} moves but neither it nor any link below it has mass '
                             '(add an <inertial> or make its joint fixed)')

    return Model(name=robot.name or 'robot', body_names=body_names,
                 joint_names=joint_names,
                 parent=parent, jtype=jtype, X_R=X_R, X_p=X_p, axis=axis,
                 mass=masses, com=[c for _, c, _ in inertial], inertia=[I for _, _, I in inertial],
                 link_frames=link_frames, floating_base=floating_base, gravity=gravity,
                 root_link=root, mimic=mimic, joint_limits=limits)
