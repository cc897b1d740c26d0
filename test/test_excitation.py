"""`calibrate excite`: an optimised Fourier series (Swevers et al. 1997) within the joint limits,
written as JointTrajectory points.  Checked independently: the limits at the written points
(a denser grid than the optimiser's), velocities and accelerations against finite differences
of the positions, periodicity, and a better-conditioned regressor than the start."""
import numpy as np
import pytest
import yaml

import ros_dynamics as rd
from ros_dynamics.identification import calibrate as cli

pytestmark = pytest.mark.core

URDF = rd.bundled_urdf('arm7')


def test_excite_writes_a_trajectory_within_the_limits(tmp_path):
    out = tmp_path / 'excite.yaml'
    assert cli.main(['excite', '--urdf', URDF, '--out', str(out), '--duration', '10',
                     '--harmonics', '1', '--iterations', '1', '--rate', '200']) == 0
    doc = yaml.safe_load(out.read_text())
    model = rd.load_urdf(URDF)
    assert doc['joint_names'] == model.joint_names
    pts = doc['points']
    t = np.array([p['time_from_start']['sec'] + 1e-9 * p['time_from_start']['nanosec']
                  for p in pts])
    q, v, a = (np.array([p[k] for p in pts]) for k in ('positions', 'velocities',
                                                       'accelerations'))
    for j, name in enumerate(model.joint_names):
        lim = model.joint_limits[name]
        assert lim['lower'] <= q[:, j].min() and q[:, j].max() <= lim['upper'], name
        assert np.abs(v[:, j]).max() <= lim['velocity'], name
    assert np.abs(a).max() <= 3.0 + 1e-6
    dt = t[1] - t[0]
    np.testing.assert_allclose((q[2:] - q[:-2]) / (2 * dt), v[1:-1], atol=1e-3)
    np.testing.assert_allclose((v[2:] - v[:-2]) / (2 * dt), a[1:-1], atol=1e-2)
    np.testing.assert_allclose(q[-1], q[0], atol=1e-9)           # one full period
    assert np.ptp(q, axis=0).min() > 0.1                          # every joint moves
    c = doc['condition_number']
    assert c['optimised'] <= c['start']
