"""Random but physically valid URDF models for tests and benchmarks.

Pure Python (numpy only, no ROS). Every generator returns a URDF XML string and is
deterministic for a given ``seed``. Naming scheme shared by all generators:

* root link ``base`` (carries an inertia of its own, which matters only with a floating base),
* moving links ``link_0 .. link_{n-1}`` attached by joints ``joint_0 .. joint_{n-1}``,
* extra links added on fixed joints are called ``fixed_link_i`` / ``fixed_joint_i``.

Inertias: mass in [0.5, 3] kg, centre of mass at |c| < 0.2 m, rotational inertia
``R diag(principal) R^T`` about the centre of mass, where the principal moments are those of a
solid box with random side lengths (so they always satisfy the triangle inequality strictly)
and ``R`` is the random rpy of the ``<inertial><origin>``.
"""

import numpy as np

__all__ = ['chain', 'binary_tree', 'quadruped_like', 'random_inertial', 'JOINT_TYPES', 'sphere_pendulum',
           'point_mass']

JOINT_TYPES = ('revolute', 'continuous', 'prismatic')


def _fmt(x):
    return repr(float(x))


def _vec(v):
    return ' '.join(_fmt(x) for x in v)


def random_inertial(rng, mass_range=(0.5, 3.0), max_com=0.2):
    """Draw ``(mass, com, rpy, principal_moments)`` of a physically valid rigid body.

    The principal moments are those of a uniform box with sides in [0.05, 0.4] m, so they are
    positive and satisfy I_a + I_b > I_c strictly.
    """
    mass = rng.uniform(*mass_range)
    direction = rng.normal(size=3)
    direction /= np.linalg.norm(direction)
    com = direction * rng.uniform(0.0, max_com * 0.999)
    rpy = rng.uniform(-np.pi, np.pi, size=3)
    a, b, c = rng.uniform(0.05, 0.4, size=3)
    principal = mass / 12.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    return mass, com, rpy, principal


def _inertial_xml(mass, com, rpy, principal, indent='    '):
    # URDF's <inertia> is the inertia about the CoM in the <inertial><origin> frame, so a
    # rotated body is written as diagonal principal moments plus the origin's rpy.
    ixx, iyy, izz = principal
    return (f'{indent}<inertial>\n'
            f'{indent}  <origin xyz="{_vec(com)}" rpy="{_vec(rpy)}"/>\n'
            f'{indent}  <mass value="{_fmt(mass)}"/>\n'
            f'{indent}  <inertia ixx="{_fmt(ixx)}" ixy="0" ixz="0" iyy="{_fmt(iyy)}" iyz="0" '
            f'izz="{_fmt(izz)}"/>\n'
            f'{indent}</inertial>\n')


def _link_xml(name, rng):
    return f'  <link name="{name}">\n{_inertial_xml(*random_inertial(rng))}  </link>\n'


def _joint_xml(name, jtype, parent, child, rng):
    xyz = rng.uniform(-0.3, 0.3, size=3)
    rpy = rng.uniform(-np.pi, np.pi, size=3)
    s = (f'  <joint name="{name}" type="{jtype}">\n'
         f'    <parent link="{parent}"/>\n'
         f'    <child link="{child}"/>\n'
         f'    <origin xyz="{_vec(xyz)}" rpy="{_vec(rpy)}"/>\n')
    if jtype != 'fixed':
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        s += f'    <axis xyz="{_vec(axis)}"/>\n'
    if jtype == 'revolute':
        s += '    <limit lower="-3.14" upper="3.14" velocity="10" effort="100"/>\n'
    elif jtype == 'prismatic':
        s += '    <limit lower="-0.5" upper="0.5" velocity="2" effort="200"/>\n'
    elif jtype == 'continuous':
        s += '    <limit velocity="10" effort="100"/>\n'
    return s + '  </joint>\n'


def _check(n, joint_types):
    if int(n) != n or n < 1:
        raise ValueError(f'n must be a positive integer, got {n!r}')
    joint_types = tuple(joint_types)
    bad = [t for t in joint_types if t not in JOINT_TYPES]
    if not joint_types or bad:
        raise ValueError(f'joint_types must be a non-empty subset of {JOINT_TYPES}, got {joint_types!r}')
    return int(n), joint_types


def _tree(name, parents, seed, joint_types, fixed_every=0):
    """URDF of a tree of moving links; ``parents[i]`` is the index of link i's parent (-1 = base).

    All random draws for one link are made together, in link order, so the result depends only
    on ``seed`` and the arguments.
    """
    n, joint_types = _check(len(parents), joint_types)
    rng = np.random.default_rng(seed)
    parts = [f'<?xml version="1.0"?>\n<robot name="{name}">\n', _link_xml('base', rng)]
    # Where children of link i attach: link i itself, or the fixed link lumped onto it.
    attach = {-1: 'base'}
    for i, p in enumerate(parents):
        jtype = joint_types[rng.integers(len(joint_types))]
        parts.append(_joint_xml(f'joint_{i}', jtype, attach[p], f'link_{i}', rng))
        parts.append(_link_xml(f'link_{i}', rng))
        attach[i] = f'link_{i}'
        if fixed_every and (i + 1) % fixed_every == 0:
            parts.append(_joint_xml(f'fixed_joint_{i}', 'fixed', f'link_{i}', f'fixed_link_{i}', rng))
            parts.append(_link_xml(f'fixed_link_{i}', rng))
            attach[i] = f'fixed_link_{i}'
    parts.append('</robot>\n')
    return ''.join(parts)


def chain(n, seed=0, joint_types=('revolute',), fixed_every=0):
    """Serial chain ``base -> link_0 -> ... -> link_{n-1}`` of ``n`` one-DoF joints.

    Joint origins have xyz in [-0.3, 0.3]^3 and random rpy, axes are random unit vectors and each
    joint type is drawn uniformly from ``joint_types`` ('revolute', 'continuous', 'prismatic').
    With ``fixed_every = k > 0`` a fixed joint and an extra massive link ``fixed_link_i`` follow
    every k-th moving link (i = k-1, 2k-1, ...); the next moving joint hangs off that fixed link,
    so a model builder has to lump its inertia and compose the fixed transform.
    The model has ``nq = nv = n`` (fixed base) and ``1 + n + n // k`` links with mass.
    """
    n, _ = _check(n, joint_types)
    if int(fixed_every) != fixed_every or fixed_every < 0:
        raise ValueError(f'fixed_every must be a non-negative integer, got {fixed_every!r}')
    parents = list(range(-1, n - 1))
    return _tree(f'chain_{n}', parents, seed, joint_types, int(fixed_every))


def binary_tree(n, seed=0, joint_types=('revolute',)):
    """Binary tree of ``n`` moving links: link i's parent is link (i-1)//2, link 0 hangs off ``base``.

    Random geometry and inertias as in :func:`chain`; ``nq = nv = n`` with a fixed base.
    """
    n, _ = _check(n, joint_types)
    parents = [-1] + [(i - 1) // 2 for i in range(1, n)]
    return _tree(f'binary_tree_{n}', parents, seed, joint_types)


def quadruped_like(legs=4, links_per_leg=3, seed=0, joint_types=('revolute',)):
    """A root with ``legs`` serial branches of ``links_per_leg`` moving links each (random geometry).

    Link numbering is leg-major: leg l holds links ``l*links_per_leg .. (l+1)*links_per_leg - 1``.
    ``nq = nv = legs * links_per_leg`` with a fixed base.
    """
    if legs < 1 or links_per_leg < 1:
        raise ValueError('legs and links_per_leg must be >= 1')
    parents = []
    for leg in range(legs):
        for k in range(links_per_leg):
            i = leg * links_per_leg + k
            parents.append(-1 if k == 0 else i - 1)
    return _tree(f'quadruped_like_{legs}x{links_per_leg}', parents, seed, joint_types)


# -- models for the contact dynamics (Jain et al. 2012) -----------------------------------------------------

def _sphere_inertial(mass, radius, xyz, indent='    '):
    i = 0.4 * mass * radius * radius
    return _inertial_xml(mass, np.asarray(xyz, float), np.zeros(3), (i, i, i), indent)


def sphere_pendulum(n, length=12.0, mass=1.0, base_height=10.0):
    """Jain's Sec. 8 pendulum: n identical solid spheres (``mass`` each) on pin joints about y.

    The spheres touch end to end, so the radius is length / (2 n); joint k sits at the top of
    sphere k (``link_k``, centre at z = -r in its frame), joint 0 at (0, 0, base_height).
    Angle q_k > 0 swings the chain towards -x.  ``nq = nv = n``, fixed base.
    """
    if int(n) != n or n < 1:
        raise ValueError(f'n must be a positive integer, got {n!r}')
    r = length / (2.0 * n)
    parts = [f'<?xml version="1.0"?>\n<robot name="sphere_pendulum_{n}">\n  <link name="base"/>\n']
    for k in range(n):
        parent = 'base' if k == 0 else f'link_{k - 1}'
        xyz = (0.0, 0.0, base_height) if k == 0 else (0.0, 0.0, -2.0 * r)
        parts.append(f'  <joint name="joint_{k}" type="continuous">\n'
                     f'    <parent link="{parent}"/>\n    <child link="link_{k}"/>\n'
                     f'    <origin xyz="{_vec(xyz)}" rpy="0 0 0"/>\n    <axis xyz="0 1 0"/>\n'
                     f'  </joint>\n')
        parts.append(f'  <link name="link_{k}">\n{_sphere_inertial(mass, r, (0.0, 0.0, -r))}  </link>\n')
    parts.append('</robot>\n')
    return ''.join(parts)


def point_mass(mass=1.0, radius=0.05, axes='xyz'):
    """A solid sphere ``ball`` moved by prismatic joints along the world ``axes`` (no rotation).

    Intermediate links ``slide_<axis>`` carry no mass; ``nq = nv = len(axes)``, fixed base.
    """
    unit = {'x': '1 0 0', 'y': '0 1 0', 'z': '0 0 1'}
    parts = ['<?xml version="1.0"?>\n<robot name="point_mass">\n  <link name="base"/>\n']
    parent = 'base'
    for k, a in enumerate(axes):
        child = 'ball' if k == len(axes) - 1 else f'slide_{a}'
        parts.append(f'  <joint name="{a}" type="prismatic">\n    <parent link="{parent}"/>\n'
                     f'    <child link="{child}"/>\n    <origin xyz="0 0 0" rpy="0 0 0"/>\n'
                     f'    <axis xyz="{unit[a]}"/>\n'
                     f'    <limit lower="-100" upper="100" velocity="100" effort="1000"/>\n  </joint>\n')
        if child != 'ball':
            parts.append(f'  <link name="{child}"/>\n')
        parent = child
    parts.append(f'  <link name="ball">\n{_sphere_inertial(mass, radius, (0, 0, 0))}  </link>\n</robot>\n')
    return ''.join(parts)
