"""Bad files get a clear error from every ``calibrate`` sub-command: one line on stderr that
names the link, the topic or the parameter, exit status 2, no traceback, nothing written.

Each case runs the command as a user does (a process: the exit status is the process's)."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics.identification import bags
from ros_dynamics.identification.samples import Samples

pytestmark = pytest.mark.core

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
URDF = rd.bundled_urdf('arm7')
MODEL = rd.load_urdf(URDF)


def _calibrate(*args, cwd):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get('PYTHONPATH', ''))
    return subprocess.run([sys.executable, '-m', 'ros_dynamics.identification.calibrate',
                           *map(str, args)], capture_output=True, text=True, env=env,
                          timeout=600, cwd=str(cwd))


def _refused(p, *words):
    """Exit status 2, one line on stderr naming ``words``, no traceback."""
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith('calibrate: '), p.stderr
    assert 'Traceback' not in p.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])


def _urdf_with(tmp_path, name, link, inertia=None, mass=None):
    """arm7's URDF with one link's <inertia> or <mass> replaced."""
    text = open(URDF).read()
    a = text.index(f'<link name="{link}"')
    b = text.index('</link>', a)
    part = text[a:b]
    if inertia is not None:
        part = re.sub(r'<inertia [^>]*/>', '<inertia ixx="{}" ixy="0" ixz="0" iyy="{}" iyz="0" '
                      'izz="{}"/>'.format(*inertia), part)
    if mass is not None:
        part = re.sub(r'<mass value="[^"]*"', f'<mass value="{mass}"', part)
    path = tmp_path / name
    path.write_text(text[:a] + part + text[b:])
    return path


@pytest.fixture(scope='module')
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('bad')
    t = np.arange(300) * 1e-3
    q = np.tile(np.linspace(-0.2, 0.2, 7), (t.size, 1)) + 0.1 * np.sin(t)[:, None]
    s = Samples(t, q, np.full_like(q, 0.1), np.ones_like(q))
    good = tmp / 'good'
    bags.write_joint_states(str(good), s, names=MODEL.joint_names)
    six = tmp / 'six_joints'
    bags.write_joint_states(str(six), Samples(t, q[:, :6], q[:, :6], q[:, :6]),
                            names=MODEL.joint_names[:6])
    garbage = tmp / 'garbage'
    garbage.mkdir()
    (garbage / 'metadata.yaml').write_text('not: [a bag')
    (tmp / 'bad_params.yaml').write_text('dynamics:\n  ros__parameters:\n'
                                         '    contact_threshold: [1.0, 2.0]\n')
    return {'tmp': tmp, 'good': good, 'six': six, 'garbage': garbage,
            'negative': _urdf_with(tmp, 'negative.urdf', 'arm_link_3', inertia=(-0.01, 0.02, 0.02)),
            'triangle': _urdf_with(tmp, 'triangle.urdf', 'arm_link_5', inertia=(0.001, 0.001, 0.05)),
            'massless': _urdf_with(tmp, 'massless.urdf', 'arm_link_4', mass=0.0)}


@pytest.mark.parametrize('kind,link', [('negative', 'arm_link_3'), ('triangle', 'arm_link_5'),
                                       ('massless', 'arm_link_4')])
def test_a_non_physical_urdf_is_refused_by_every_sub_command(files, kind, link):
    urdf, tmp = files[kind], files['tmp']
    out = tmp / f'{kind}.yaml'
    for args in ([files['good'], '--urdf', urdf, '--out', out],
                 [files['good'], '--urdf', urdf, '--links', 'all', '--out', out],
                 ['check', files['good'], '--urdf', urdf, '--out', tmp / f'{kind}.csv'],
                 ['excite', '--urdf', urdf, '--out', out]):
        _refused(_calibrate(*args, cwd=tmp), link)
    assert not out.exists()


def test_unreadable_or_mismatched_recordings_are_refused(files):
    tmp, good = files['tmp'], files['good']
    out = tmp / 'p.yaml'
    cases = [
        ([files['garbage'], '--urdf', URDF, '--out', out], [str(files['garbage'])]),
        ([tmp / 'missing', '--urdf', URDF, '--out', out], ['no such bag']),
        ([good, '--urdf', URDF, '--topic', '/nope', '--out', out], ["'/nope'", '/joint_states']),
        ([files['six'], '--urdf', URDF, '--out', out], ['arm_joint_7']),
        ([good, '--urdf', URDF, '--payload-link', 'arm_link_7', '--reference', files['six'],
          '--out', out], ['arm_joint_7']),
        ([good, '--urdf', URDF, '--links', 'all', '--held-out', files['six'], '--out', out],
         ['arm_joint_7']),
        (['check', files['six'], '--urdf', URDF, '--out', tmp / 'c.csv'], ['arm_joint_7']),
        (['check', good, '--urdf', URDF, '--params', tmp / 'bad_params.yaml',
          '--out', tmp / 'c.csv'], ['contact_threshold', '2 values for 7 joints']),
        (['check', good, '--urdf', URDF, '--params', tmp / 'none.yaml', '--out', tmp / 'c.csv'],
         ['none.yaml']),
        (['record', good], [str(good), 'exists already']),
    ]
    for args, words in cases:
        _refused(_calibrate(*args, cwd=tmp), *words)
    assert not out.exists() and not (tmp / 'c.csv').exists()
