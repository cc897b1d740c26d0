"""A URDF with new inertials and nothing else changed (no ROS).

Identification gives one inertia per body of the model, and a body is a URDF link together
with the links fixed to it (merged by the loader).  :func:`replace_inertials` writes each
body's inertia into the ``<inertial>`` of the body's own link (CoM as ``<origin xyz>``, no
rotation, the inertia about the CoM in link axes) and removes the ``<inertial>`` of the links
merged into it, so that loading the result gives exactly the identified bodies.  The text is
edited in place: comments, formatting, joints, visuals, collisions and every other element
stay byte for byte as they were.
"""

import re

import numpy as np

__all__ = ['replace_inertials']

_INERTIAL = re.compile(r'[ \t]*<inertial\b.*?</inertial>[ \t]*\n?|[ \t]*<inertial\b[^>]*/>[ \t]*\n?',
                       re.S)


def _link_span(text, name):
    """(start, end) of the body of ``<link name="name">...</link>`` (between the tags), or
    of a self-closing ``<link name="name"/>`` (start == end, marked by a negative start)."""
    pat = re.compile(r'<link\b[^>]*\bname\s*=\s*(["\'])' + re.escape(name) + r'\1[^>]*?(/?)>',
                     re.S)
    m = pat.search(text)
    if m is None:
        raise ValueError(f'link {name!r} not found in the URDF text')
    if m.group(2) == '/':
        return m, None
    end = text.find('</link>', m.end())
    if end < 0:
        raise ValueError(f'link {name!r} is not closed')
    return m, end


def _inertial_xml(mass, com, inertia, indent):
    f = lambda x: repr(float(x))  # noqa: E731
    I = inertia
    return (f'{indent}<inertial>\n'
            f'{indent}  <origin xyz="{f(com[0])} {f(com[1])} {f(com[2])}" rpy="0 0 0"/>\n'
            f'{indent}  <mass value="{f(mass)}"/>\n'
            f'{indent}  <inertia ixx="{f(I[0, 0])}" ixy="{f(I[0, 1])}" ixz="{f(I[0, 2])}" '
            f'iyy="{f(I[1, 1])}" iyz="{f(I[1, 2])}" izz="{f(I[2, 2])}"/>\n'
            f'{indent}</inertial>\n')


def replace_inertials(urdf_text, model, identified):
    """``urdf_text`` with the inertials of ``identified`` (a model with the same bodies, e.g.
    ``Identification.model(model)``) written in; ``model`` is the URDF's own model (which
    links form which body)."""
    text = urdf_text
    for i, body in enumerate(model.body_names):
        b, R, p = model.link_frames[body]
        if b != i or not (np.allclose(R, np.eye(3)) and np.allclose(p, 0.0)):
            raise ValueError(f'body {body!r} is not the frame of its own link')
        merged = [n for n, (bb, _, _) in model.link_frames.items() if bb == i and n != body]
        for name in merged:                      # their mass is now in the body's inertial
            m, end = _link_span(text, name)
            if end is not None:
                inner = _INERTIAL.sub('', text[m.end():end])
                text = text[:m.end()] + inner + text[end:]
        m, end = _link_span(text, body)
        line_start = text.rfind('\n', 0, m.start()) + 1
        indent = re.match(r'[ \t]*', text[line_start:]).group(0) + '  '
        new = _inertial_xml(identified.mass[i], identified.com[i], identified.inertia[i], indent)
        if end is None:                          # <link name="x"/> -> <link name="x">...</link>
            tag = m.group(0)[:-2].rstrip() + '>'
            text = (text[:m.start()] + tag + '\n' + new + indent[:-2] + '</link>'
                    + text[m.end():])
            continue
        inner = text[m.end():end]
        found = _INERTIAL.search(inner)
        if found:
            inner = inner[:found.start()] + new + inner[found.end():]
        else:
            inner = '\n' + new + inner.lstrip('\n') if not inner.startswith('\n') else \
                inner[:1] + new + inner[1:]
        text = text[:m.end()] + inner + text[end:]
    return text
