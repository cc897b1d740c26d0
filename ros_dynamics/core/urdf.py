"""URDF (or xacro) to :class:`~ros_dynamics.core.model.Model`.

Reading.  The XML is parsed by the standard library's ``xml.etree.ElementTree`` (expat); this
module then reads, itself, only what rigid-body dynamics needs: ``<robot>``, ``<link>`` with its
``<inertial>`` (``<origin>``, ``<mass>``, ``<inertia>``), ``<joint>`` with ``<parent>``,
``<child>``, ``<origin>``, ``<axis>``, ``<limit>`` and ``<mimic>``, following the URDF
specification (defaults: origin zero, axis (1, 0, 0), mimic multiplier 1 and offset 0).
Why not ``urdf_parser_py``: it validates elements that dynamics never reads and refuses whole
robots for them (a ``<texture/>`` without filename in iCub and Romeo, PR2's transmissions);
silencing its errors (as this module did before) also silences the ones that matter, and its
recursive reflection is slow.  Why not lxml: nothing here needs more than expat, which is in the
standard library, never fetches external entities and (>= 2.4) bounds entity expansion.

Tolerance (as urdfdom, or more).  ``<visual>``, ``<collision>``, ``<material>``,
``<transmission>``, ``<gazebo>``, ``<ros2_control>``, ``<sensor>`` and the joint elements
``<dynamics>``, ``<calibration>``, ``<safety_controller>`` are standard and unused here: they
are ignored silently, whatever their content.  Unknown elements, a missing robot name, a mimic
joint whose leader is not a moving joint (it becomes an independent coordinate), a moving link
that carries no inertia (M is then singular; :func:`~ros_dynamics.forward_dynamics` refuses it),
a robot without a moving joint (nv = 0 with a fixed base, a single free body with
``floating_base=True``), a link inertia that violates the triangle inequality (real files do,
and urdfdom and Pinocchio accept them; ``strict_inertia=True`` refuses them) and an unreadable
``<limit>`` attribute are each reported *once* per load: as a :class:`URDFWarning` through
Python's :mod:`warnings` and, for callers that log, in the tuple ``model.warnings``.

Strictness (``ValueError`` naming the element): text that is not XML, malformed or truncated
XML (naming the innermost open element), a root element other than ``<robot>``, a link or joint
without a name, two links or two joints with the same name, a joint to a missing link, a link
with two parent joints, a joint cycle (also one detached from the tree, whose joints would
otherwise be dropped), two root links, an unknown joint type, ``planar``/``floating`` joints
(a floating base is ``floating_base=True``), a zero or non-finite axis, a non-finite or
malformed number in an origin or inertial, a negative mass, a negative moment of inertia.

Building the tree (one iterative depth-first walk in URDF child order, so a chain of any length
loads):

* ``fixed`` joints are merged: the child's inertia is lumped into its parent body
  (parallel-axis theorem), and the child link stays addressable through ``model.link_frames``;
* ``revolute``/``continuous`` (angle) and ``prismatic`` (displacement) joints are 1-DoF;
* with ``floating_base=True`` the URDF root becomes a body with a 6-DoF free joint
  (Pinocchio's free-flyer layout, see docs/conventions.md);
* ``mimic`` joints stay independent coordinates (their relation is kept in ``model.mimic``).

Sources: :func:`load_urdf` takes an XML string, a ``.urdf`` path or a ``.xacro`` path (run
through xacro); :func:`load_urdf_string` takes XML text only and never touches the file system
or xacro, for descriptions that arrive from a topic or a parameter.
"""

import math
import os
import warnings
import xml.etree.ElementTree as ET
from collections import Counter

import numpy as np

from .configuration import FREE, PRISMATIC, REVOLUTE
from .model import Model, massless_bodies
from .spatial_numpy import lump_inertia, rpy_to_matrix

_JOINT_TYPES = {'revolute': REVOLUTE, 'continuous': REVOLUTE, 'prismatic': PRISMATIC}
_REFUSED_JOINT_TYPES = ('planar', 'floating')

# Standard URDF/ROS elements that rigid-body dynamics does not read: ignored without a warning.
_IGNORED = {
    'robot': {'material', 'transmission', 'gazebo', 'ros2_control', 'sensor'},
    'link': {'visual', 'collision'},
    'joint': {'dynamics', 'calibration', 'safety_controller'},
    'inertial': set(),
}
_READ = {
    'robot': {'link', 'joint'},
    'link': {'inertial'},
    'joint': {'parent', 'child', 'origin', 'axis', 'limit', 'mimic'},
    'inertial': {'origin', 'mass', 'inertia'},
}

# Inertia check tolerance [kg m^2]: relative to the inertia's trace, plus an absolute floor
# below which moments are rounding noise (iCub lists moments of 1e-20).
_INERTIA_RTOL, _INERTIA_ATOL = 1e-9, 1e-12


def inconsistent_moments(I):
    """'principal moments a, b, c' if the inertia I is not positive semi-definite or violates
    the triangle inequality beyond round-off, else ''."""
    lam = np.linalg.eigvalsh(I)
    tol = _INERTIA_RTOL * abs(np.trace(I)) + _INERTIA_ATOL
    if lam[0] < -tol or lam[0] + lam[1] < lam[2] - tol:
        return f'principal moments {lam[0]:.4g}, {lam[1]:.4g}, {lam[2]:.4g}'
    return ''


class URDFWarning(UserWarning):
    """Something in a URDF was skipped or assumed while loading (see ``model.warnings``)."""


# -- sources --------------------------------------------------------------------------------------

def _xml_text(source):
    """``source`` as text if it is XML, else None (then it may be a path)."""
    if isinstance(source, bytes):
        try:
            source = source.decode('utf-8')
        except UnicodeDecodeError as exc:
            raise ValueError(f'robot description is not UTF-8 text: {exc}') from None
    if not isinstance(source, str):
        return None
    text = source.lstrip('\ufeff \t\r\n')       # a byte-order mark or whitespace before <?xml
    return text if text.startswith('<') else None


def _read_source(source, allow_files):
    """URDF XML text from an XML string or (``allow_files``) a path to a .urdf or .xacro file."""
    if not isinstance(source, (str, bytes) if not allow_files else (str, bytes, os.PathLike)):
        raise ValueError('URDF source must be an XML string' + (' or a file path' if allow_files else ''))
    text = _xml_text(source)
    if text is not None:
        return text
    if isinstance(source, (str, bytes)) and not source.strip():
        raise ValueError('the robot description is empty')
    if not allow_files:
        shown = source if isinstance(source, str) else repr(source)
        raise ValueError(f'the robot description is not XML (it must start with "<"): {shown[:60]!r}')
    path = os.fsdecode(os.fspath(source))
    if not os.path.isfile(path):
        raise ValueError(f'URDF file not found: {path!r} (and the text is not XML)')
    if path.endswith('.xacro'):
        try:
            import xacro
        except ImportError as exc:  # pragma: no cover - xacro is a declared dependency
            raise ValueError('loading a .xacro file needs the "xacro" package') from exc
        try:
            return xacro.process_file(path).toxml()
        except Exception as exc:
            raise ValueError(f'xacro failed on {path!r}: {exc}') from exc
    with open(path, 'rb') as f:
        data = f.read()
    text = _xml_text(data)
    if text is None:
        raise ValueError(f'URDF file {path!r} is not XML (it must start with "<")')
    return text


def _describe(element):
    name = element.get('name')
    return f'<{_tag(element)} name="{name}">' if name is not None else f'<{_tag(element)}>'


def _parse_xml(text):
    """The root element; on malformed XML a ValueError naming the innermost open element."""
    try:
        return ET.fromstring(text)
    except ET.ParseError:
        pass                     # parse again, event by event, to name the open elements
    parser = ET.XMLPullParser(events=('start', 'end'))
    root, open_elements, error = None, [], None
    try:
        parser.feed(text)        # a syntax error is queued as an event, raised by read_events
        parser.close()
    except ET.ParseError as exc:
        error = exc
    try:
        for event, element in parser.read_events():
            if event == 'start':
                root = element if root is None else root
                open_elements.append(element)
            else:
                open_elements.pop()
    except ET.ParseError as exc:
        error = exc
    if error is not None:
        shown = [_describe(e) for e in open_elements[:2] + open_elements[2:][-3:]]
        if len(open_elements) > 5:
            shown.insert(2, '...')
        where = (' inside ' + ' / '.join(shown)) if open_elements else ''
        raise ValueError(f'malformed URDF XML{where}: {error}') from None
    if root is None:
        raise ValueError('malformed URDF XML: no element found')
    return root


def _tag(element):
    tag = element.tag
    return tag.rsplit('}', 1)[-1] if isinstance(tag, str) else str(tag)


# -- reading the elements dynamics needs ----------------------------------------------------------

class _Reader:
    """Reads <link>/<joint> elements into plain values; collects warnings (each once)."""

    def __init__(self, strict_inertia):
        self.strict_inertia = strict_inertia
        self.messages = []
        self.unknown = Counter()
        self.inconsistent = {}          # link -> its principal moments, if inconsistent

    def warn(self, message):
        if message not in self.messages:
            self.messages.append(message)

    def children(self, element, kind):
        """Direct children by tag; unknown tags are counted for one warning."""
        found = {}
        for child in element:
            if not isinstance(child.tag, str):            # comments, processing instructions
                continue
            tag = _tag(child)
            if tag in _READ[kind]:
                found.setdefault(tag, []).append(child)
            elif tag not in _IGNORED[kind]:
                self.unknown[f'<{kind}>/<{tag}>' if kind != 'robot' else f'<{tag}>'] += 1
        return found

    def first(self, found, tag, owner):
        elements = found.get(tag, [])
        if len(elements) > 1:
            self.warn(f'{owner} has {len(elements)} <{tag}> elements: the first is used')
        return elements[0] if elements else None

    @staticmethod
    def numbers(element, attribute, n, owner, default=None):
        """``n`` finite floats from a whitespace-separated attribute (``default`` if absent)."""
        text = element.get(attribute) if element is not None else None
        if text is None:
            if default is None:
                raise ValueError(f'{owner}: <{_tag(element)}> has no {attribute!r} attribute')
            return list(default)
        try:
            values = [float(t) for t in text.split()]
        except ValueError:
            raise ValueError(f'{owner}: <{_tag(element)} {attribute}="{text}"> is not a list of '
                             f'{n} numbers') from None
        if len(values) != n:
            raise ValueError(f'{owner}: <{_tag(element)} {attribute}="{text}"> must have {n} '
                             f'numbers, found {len(values)}')
        if not all(map(math.isfinite, values)):
            raise ValueError(f'{owner}: <{_tag(element)} {attribute}="{text}"> is not finite')
        return values

    def origin(self, element, owner):
        """(R, p) of an <origin> (identity when absent)."""
        if element is None:
            return np.eye(3), np.zeros(3)
        where = f'{owner} <origin>'
        xyz = self.numbers(element, 'xyz', 3, where, default=(0.0, 0.0, 0.0))
        rpy = self.numbers(element, 'rpy', 3, where, default=(0.0, 0.0, 0.0))
        return rpy_to_matrix(rpy), np.array(xyz)

    def inertial(self, link, name):
        """(mass, CoM, inertia about the CoM) of a link in its own frame (zero if absent)."""
        found = self.children(link, 'link')
        inertial = self.first(found, 'inertial', f'link {name!r}')
        if inertial is None:
            return 0.0, np.zeros(3), np.zeros((3, 3))
        owner = f'link {name!r} <inertial>'
        parts = self.children(inertial, 'inertial')
        R, c = self.origin(self.first(parts, 'origin', owner), f'link {name!r} <inertial>')
        mass = self.first(parts, 'mass', owner)
        if mass is None:
            raise ValueError(f'{owner} has no <mass>')
        m = self.numbers(mass, 'value', 1, owner)[0]
        if m < 0:
            raise ValueError(f'link {name!r} has a negative mass ({m:g} kg) in <inertial>/<mass>')
        inertia = self.first(parts, 'inertia', owner)
        if inertia is None:
            raise ValueError(f'{owner} has no <inertia>')
        xx, xy, xz, yy, yz, zz = (self.numbers(inertia, k, 1, owner)[0]
                                  for k in ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz'))
        I = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        self.check_inertia(I, name)
        return m, c, R @ I @ R.T

    def check_inertia(self, I, name):
        """Moments of inertia are >= 0; principal moments satisfy the triangle inequality."""
        tol = _INERTIA_RTOL * abs(np.trace(I)) + _INERTIA_ATOL
        if np.diag(I).min() < -tol:
            raise ValueError(f'link {name!r}: <inertia> has a negative moment of inertia '
                             f'(ixx, iyy, izz = {I[0, 0]:g}, {I[1, 1]:g}, {I[2, 2]:g})')
        moments = inconsistent_moments(I)
        if moments:
            if self.strict_inertia:
                raise ValueError(f'link {name!r}: <inertia> is not physically consistent ({moments} '
                                 'are not positive semi-definite or violate the triangle inequality)')
            self.inconsistent[name] = moments

    def joint(self, element, index):
        """A dict describing one <joint>."""
        name = element.get('name')
        if not name:
            raise ValueError(f'<joint> number {index + 1} has no name')
        owner = f'joint {name!r}'
        jtype = element.get('type')
        if jtype is None:
            raise ValueError(f'{owner} has no type')
        if jtype in _REFUSED_JOINT_TYPES:
            raise ValueError(f'{owner}: unsupported joint type {jtype!r} (supported: revolute, '
                             'continuous, prismatic, fixed; a floating base only at the root via '
                             'floating_base=True)')
        if jtype not in _JOINT_TYPES and jtype != 'fixed':
            raise ValueError(f'{owner}: unknown joint type {jtype!r}')
        found = self.children(element, 'joint')
        ends = {}
        for end in ('parent', 'child'):
            e = self.first(found, end, owner)
            if e is None or not e.get('link'):
                raise ValueError(f'{owner} has no <{end} link="..."/>')
            ends[end] = e.get('link')
        R, p = self.origin(self.first(found, 'origin', owner), owner)
        joint = dict(name=name, type=jtype, parent=ends['parent'], child=ends['child'], R=R, p=p)
        if jtype == 'fixed':
            return joint
        axis = np.array(self.numbers(self.first(found, 'axis', owner), 'xyz', 3, f'{owner} <axis>',
                                     default=(1.0, 0.0, 0.0)) if 'axis' in found else [1.0, 0.0, 0.0])
        norm = np.linalg.norm(axis)
        if not norm > 1e-12:
            raise ValueError(f'{owner} has an invalid <axis> {axis.tolist()} (zero length)')
        joint['axis'] = axis / norm
        limit = self.first(found, 'limit', owner)
        if limit is not None:
            values = {}
            for key in ('lower', 'upper', 'velocity', 'effort'):
                text = limit.get(key)
                if text is None and key in ('lower', 'upper') and jtype != 'continuous':
                    text = '0'                            # the URDF default
                try:
                    values[key] = None if text is None else float(text)
                except ValueError:
                    values[key] = math.nan
                if values[key] is not None and math.isnan(values[key]):
                    self.warn(f'{owner}: <limit {key}="{text}"> is not a number: ignored')
                    values[key] = None
            joint['limit'] = values
        mimic = self.first(found, 'mimic', owner)
        if mimic is not None:
            leader = mimic.get('joint')
            if not leader:
                self.warn(f'{owner}: <mimic> names no joint: {name!r} is an independent coordinate')
            else:
                try:
                    rule = (leader, float(mimic.get('multiplier', 1.0)), float(mimic.get('offset', 0.0)))
                except ValueError:
                    rule = (leader, math.nan, math.nan)
                if all(map(math.isfinite, rule[1:])):
                    joint['mimic'] = rule
                else:
                    self.warn(f'{owner}: <mimic> multiplier or offset is not a finite number: '
                              f'{name!r} is an independent coordinate')
        return joint


def _listed(items, shown=8):
    return ', '.join(items[:shown]) + (f', ... ({len(items)} in all)' if len(items) > shown else '')


def _follow_cycle(start, parent_joint, joints):
    """Joints of the cycle reached by following parent joints from link ``start``."""
    seen, link = {}, start
    while link not in seen:
        seen[link] = len(seen)
        j = parent_joint.get(link)
        if j is None:
            return None
        link = joints[j]['parent']
    order = list(seen)[seen[link]:]                  # the links on the cycle, in walk order
    return [parent_joint[l] for l in order]


def _tree(root_element, reader):
    """Links (name -> element), joints (name -> dict), children lists and the root link."""
    links, joints, found = {}, {}, reader.children(root_element, 'robot')
    for k, element in enumerate(found.get('link', [])):
        name = element.get('name')
        if not name:
            raise ValueError(f'<link> number {k + 1} has no name')
        if name in links:
            raise ValueError(f'two links are named {name!r}')
        links[name] = element
    if not links:
        raise ValueError('the URDF has no <link>')
    for k, element in enumerate(found.get('joint', [])):
        joint = reader.joint(element, k)
        if joint['name'] in joints:
            raise ValueError(f'two joints are named {joint["name"]!r}')
        joints[joint['name']] = joint

    children = {name: [] for name in links}
    parent_joint = {}
    for name, joint in joints.items():
        for end in ('parent', 'child'):
            if joint[end] not in links:
                raise ValueError(f'joint {name!r}: its {end} link {joint[end]!r} does not exist')
        if joint['parent'] == joint['child']:
            raise ValueError(f'joint cycle: joint {name!r} connects link {joint["child"]!r} to itself')
        if joint['child'] in parent_joint:
            raise ValueError(f'link {joint["child"]!r} is the child of two joints, '
                             f'{parent_joint[joint["child"]]!r} and {name!r} (closed kinematic loops '
                             'are not supported)')
        parent_joint[joint['child']] = name
        children[joint['parent']].append(name)

    roots = [name for name in links if name not in parent_joint]
    if not roots:
        cycle = _follow_cycle(next(iter(links)), parent_joint, joints)
        raise ValueError('joint cycle (the URDF has no root link): ' + ' -> '.join(map(repr, cycle)))
    if len(roots) > 1:
        raise ValueError(f'the URDF has {len(roots)} root links ({_listed(list(map(repr, roots)), 5)}): '
                         'every link but one must be the child of a joint')
    return links, joints, children, parent_joint, roots[0]


# -- the model ------------------------------------------------------------------------------------

def load_urdf(source, floating_base=False, gravity=(0.0, 0.0, -9.81), *, allow_files=True,
              strict_inertia=False):
    """Build a :class:`Model` from a URDF XML string, a .urdf path or a .xacro path.

    ``allow_files=False`` accepts XML text only (see :func:`load_urdf_string`).
    ``strict_inertia=True`` refuses link inertias that violate the triangle inequality (by
    default they load with a warning, as urdfdom and Pinocchio load them).
    Skipped or assumed elements are reported as :class:`URDFWarning` and in ``model.warnings``.
    """
    reader = _Reader(strict_inertia)
    root_element = _parse_xml(_read_source(source, allow_files))
    if _tag(root_element) != 'robot':
        raise ValueError(f'the root element is <{_tag(root_element)}>, not <robot>')
    robot_name = root_element.get('name')
    if not robot_name:
        reader.warn('<robot> has no name: called "robot"')
        robot_name = 'robot'
    links, joints, children, parent_joint, root = _tree(root_element, reader)

    body_names, joint_names, parent, jtype = [], [], [], []
    X_R, X_p, axis, inertial = [], [], [], []
    members = []                  # per body: the links whose inertia it carries
    link_frames, mimic, limits = {}, {}, {}

    def add_body(name, parent_body, jt, R, p, a):
        body_names.append(name)
        parent.append(parent_body)
        jtype.append(jt)
        X_R.append(R)
        X_p.append(p)
        axis.append(a)
        inertial.append((0.0, np.zeros(3), np.zeros((3, 3))))
        members.append([])
        return len(body_names) - 1

    # Depth-first walk in URDF child order (as Pinocchio numbers joints), with an explicit stack
    # so that chains of any length load.  An entry (link, joint, body, R, p): the link, the joint
    # above it (None for the root), the body that joint hangs from (-1: the world) and the pose
    # R, p of the joint frame in that body's frame.  A moving joint makes the link a new body when
    # it is popped (pre-order, so parent[i] < i); a fixed one attaches the link to ``body``.
    # Children are pushed in reverse so that they pop in document order.
    if floating_base:
        stack = [(root, None, add_body(root, -1, FREE, np.eye(3), np.zeros(3), np.zeros(3)),
                  np.eye(3), np.zeros(3))]
    else:
        stack = [(root, None, -1, np.eye(3), np.zeros(3))]
    while stack:
        link, name, body, R, p = stack.pop()
        joint = joints.get(name)
        if joint is not None and joint['type'] != 'fixed':
            body = add_body(link, body, _JOINT_TYPES[joint['type']], R, p, joint['axis'])
            R, p = np.eye(3), np.zeros(3)
            joint_names.append(name)
            if 'mimic' in joint:
                mimic[name] = joint['mimic']
            if 'limit' in joint:
                limits[name] = joint['limit']
        link_frames[link] = (body, R, p)
        m, c, Ic = reader.inertial(links[link], link)
        if body >= 0 and (m != 0.0 or Ic.any()):
            members[body].append(link)
            mb, cb, Ib = inertial[body]
            if link == body_names[body]:              # the body's own link, in its own frame
                inertial[body] = (m, c, Ic)
            else:                                     # a link fixed to it: parallel-axis theorem
                inertial[body] = lump_inertia(mb, cb, Ib, m, R @ c + p, R @ Ic @ R.T)
        for child in reversed(children[link]):
            j = joints[child]
            stack.append((j['child'], child, body, R @ j['R'], R @ j['p'] + p))

    # An inconsistent link does not reach the dynamics if it is fixed to the world, or merged
    # into a moving body whose total inertia is consistent (e.g. a placeholder frame with a
    # dummy inertia, as Go1's 'base'): only the others are reported.
    reaching = {link for body, (_, _, Ic) in enumerate(inertial) if inconsistent_moments(Ic)
                for link in members[body]}
    reader.inconsistent = {link: m for link, m in reader.inconsistent.items() if link in reaching}

    if len(link_frames) != len(links):                 # unreached links hang from a detached cycle
        start = next(name for name in links if name not in link_frames)
        cycle = _follow_cycle(start, parent_joint, joints)
        raise ValueError('joint cycle detached from the tree: ' + ' -> '.join(map(repr, cycle)))

    moving = set(joint_names)
    orphans = [f'{name!r} (mimics {leader!r})' for name, (leader, _, _) in mimic.items()
               if leader not in moving]
    if orphans:
        reader.warn('mimic joints whose leader is not a moving joint of this robot stay independent '
                    'coordinates: ' + _listed(orphans))
        mimic = {name: rule for name, rule in mimic.items() if rule[0] in moving}
    if reader.inconsistent:
        reader.warn('link inertias that violate the triangle inequality or are not positive '
                    'semi-definite, used as given (strict_inertia=True refuses them): '
                    + _listed([f'{name!r} ({moments})' for name, moments in reader.inconsistent.items()]))

    if not joint_names:
        reader.warn('the robot has no moving joint: ' + (
            'it is a single free-floating body (nv = 6)' if floating_base else
            'nv = 0 (a single rigid body fixed to the world; floating_base=True makes it free)'))
    if reader.unknown:
        reader.warn('unknown elements ignored: ' + ', '.join(
            f'{tag} ({count})' if count > 1 else tag for tag, count in sorted(reader.unknown.items())))

    model = Model(name=robot_name, body_names=body_names, joint_names=joint_names,
                  parent=parent, jtype=jtype, X_R=X_R, X_p=X_p, axis=axis,
                  mass=[m for m, _, _ in inertial], com=[c for _, c, _ in inertial],
                  inertia=[I for _, _, I in inertial],
                  link_frames=link_frames, floating_base=floating_base, gravity=gravity,
                  root_link=root, mimic=mimic, joint_limits=limits)
    massless = [repr(body_names[i]) for i in massless_bodies(model)]
    if massless:
        reader.warn('moving links that carry no mass or inertia, nor does any link below them (the '
                    'mass matrix is singular; forward dynamics refuses it): ' + _listed(massless))
    model = model.copy(warnings=reader.messages)
    for message in reader.messages:
        warnings.warn(f'URDF {robot_name!r}: {message}', URDFWarning, stacklevel=2)
    return model


def load_urdf_string(xml, floating_base=False, gravity=(0.0, 0.0, -9.81), *, strict_inertia=False):
    """:func:`load_urdf` from URDF XML text only: never reads a file or runs xacro.

    For descriptions from a topic or a parameter: text that is not XML is refused
    (``ValueError``), not taken for a path.
    """
    return load_urdf(xml, floating_base, gravity, allow_files=False, strict_inertia=strict_inertia)
