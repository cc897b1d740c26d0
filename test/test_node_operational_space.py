"""~/get_operational_space of a real dynamics_node process over loopback DDS: Lambda = J M^-1 J^T
(and its inverse) at the requested or the latest state, for the arm and the floating quadruped,
checked against rd.contact_compliance and against J M^-1 J^T formed densely from the core's
Jacobians and mass matrix; bad requests answered with success=false and a reason."""
import itertools
import math

import numpy as np
import pytest

import ros_dynamics as rd

from test_node_support import ARM7, QUADRUPED, read, running_node

pytestmark = pytest.mark.ros


_stamps = itertools.count(3_000_000_000_000, 1_000_000)


@pytest.fixture(scope='module')
def arm(rclpy_context, ros_env, tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp('os_arm'))
    params = {'robot_description': read(ARM7), 'log_throttle_sec': 0.0}
    with running_node(rclpy_context, ros_env, tmp, 'os_arm', params) as (proc, probe):
        yield proc, probe, rd.load_urdf(ARM7)


@pytest.fixture(scope='module')
def quad(rclpy_context, ros_env, tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp('os_quad'))
    params = {'robot_description': read(QUADRUPED), 'floating_base': True,
              'log_throttle_sec': 0.0}
    with running_node(rclpy_context, ros_env, tmp, 'os_quad', params) as (proc, probe):
        yield proc, probe, rd.load_urdf(QUADRUPED, floating_base=True)


def request(probe, links, points=None, names=None, q=None, base_pose=None, spatial=False,
            inertia=False):
    from geometry_msgs.msg import Point
    from ros_dynamics_msgs.srv import GetOperationalSpace
    req = GetOperationalSpace.Request()
    if names is not None:
        req.state = probe.joint_state(names, q)
    if base_pose is not None:
        p, o = req.base_pose.position, req.base_pose.orientation
        p.x, p.y, p.z = (float(x) for x in base_pose[:3])
        o.x, o.y, o.z, o.w = (float(x) for x in base_pose[3:7])
    req.links = list(links)
    req.points = [Point(x=float(x), y=float(y), z=float(z)) for x, y, z in (points or [])]
    req.spatial, req.inertia = spatial, inertia
    return probe.call(GetOperationalSpace, f'{probe.prefix}/get_operational_space', req)


def matrices(resp):
    """(Lambda, inertia or None) of a successful response, reshaped."""
    assert resp.success, resp.message
    os_ = resp.operational_space
    n = os_.dim * len(os_.links)
    lam = np.asarray(os_.compliance).reshape(n, n)
    inertia = np.asarray(os_.inertia).reshape(n, n) if len(os_.inertia) else None
    return lam, inertia


def dense(model, q, nodes, rows):
    """J M^-1 J^T from the core's link Jacobians and mass matrix (not the recursion)."""
    J = np.vstack([rd.link_jacobian(model, q, link, x)[:rows] for link, x in nodes])
    return J @ np.linalg.solve(rd.mass_matrix(model, q), J.T)


def test_arm_requested_state(arm):
    proc, probe, model = arm
    rng = np.random.default_rng(5)
    names = list(model.joint_names)
    q = rng.uniform(-1.2, 1.2, len(names))
    perm = rng.permutation(len(names))
    nodes = [('tool', (0.0, 0.0, 0.05)), ('arm_link_4', (0.03, 0.1, 0.08)),
             ('arm_link_6', (0.02, 0.0, 0.0))]
    for spatial in (False, True):
        k = nodes[:2] if not spatial else nodes[:1]      # 6 rows: Lambda invertible (7 DoF)
        resp = request(probe, [n for n, _ in k], [x for _, x in k], [names[i] for i in perm],
                       q[perm], spatial=spatial, inertia=True)
        lam, inertia = matrices(resp)
        os_ = resp.operational_space
        assert os_.dim == (6 if spatial else 3) and list(os_.links) == [n for n, _ in k]
        assert os_.header.frame_id == 'base'
        np.testing.assert_allclose(os_.position, q, rtol=0, atol=0)
        core = rd.contact_compliance(model, q, k, spatial=spatial)
        np.testing.assert_allclose(lam, core, rtol=0, atol=1e-12 * np.abs(core).max())
        d = dense(model, q, k, 6 if spatial else 3)
        np.testing.assert_allclose(lam, d, rtol=0, atol=1e-10 * np.abs(d).max())
        # the operational-space inertia: Lambda^-1
        np.testing.assert_allclose(inertia @ d, np.eye(len(d)), rtol=0, atol=1e-8)
    # 3 nodes, 9 rows on 7 DoF: Lambda (singular) is still returned without the inertia
    lam, inertia = matrices(request(probe, [n for n, _ in nodes], [x for _, x in nodes], names, q))
    assert inertia is None and lam.shape == (9, 9)
    np.testing.assert_allclose(lam, dense(model, q, nodes, 3), rtol=0,
                               atol=1e-10 * np.abs(lam).max())
    # without points: the link origins
    lam, _ = matrices(request(probe, ['tool'], None, names, q))
    np.testing.assert_allclose(lam, dense(model, q, [('tool', (0, 0, 0))], 3), rtol=0,
                               atol=1e-10 * np.abs(lam).max())


def test_arm_latest_state(arm):
    proc, probe, model = arm
    names = list(model.joint_names)
    q = np.linspace(-0.8, 0.9, len(names))
    msg = probe.joint_state(names, q, np.zeros(len(names)), stamp_ns=next(_stamps))
    assert probe.send_and_wait(msg) is not None, 'joint state not answered'
    lam, _ = matrices(request(probe, ['tool', 'arm_link_5'], [(0, 0, 0.1), (0.05, 0, 0)]))
    core = rd.contact_compliance(model, q, [('tool', (0, 0, 0.1)), ('arm_link_5', (0.05, 0, 0))])
    np.testing.assert_allclose(lam, core, rtol=0, atol=1e-12 * np.abs(core).max())


def test_bad_requests_get_a_reason(arm):
    proc, probe, model = arm
    names = list(model.joint_names)
    q = np.zeros(len(names))
    cases = [
        (dict(links=['nope'], names=names, q=q), 'unknown link'),
        (dict(links=['tool', 'arm_link_3'], points=[(0, 0, 0)], names=names, q=q), 'points for'),
        (dict(links=[], names=names, q=q), 'no nodes'),
        (dict(links=['tool'], names=names, q=np.r_[math.nan, q[1:]]), 'NaN'),
        (dict(links=['tool'], names=names[:-1], q=q[:-1]), names[-1]),
        (dict(links=['tool'], names=names + ['extra_joint'], q=np.r_[q, 0.0]), 'unknown joint'),
        # two identical nodes: Lambda is singular, so no inertia
        (dict(links=['tool', 'tool'], names=names, q=np.full(len(names), 0.3), inertia=True),
         'singular'),
        # a node on the world-fixed root: zero rows, no inertia
        (dict(links=['base'], names=names, q=q, inertia=True), 'singular'),
    ]
    for kwargs, reason in cases:
        resp = request(probe, **kwargs)
        assert not resp.success, kwargs
        assert reason in resp.message, (kwargs, resp.message)
    # ... and the node still answers a good request
    assert request(probe, ['tool'], None, names, q).success
    assert proc.alive()


def test_floating_quadruped_feet(quad):
    proc, probe, model = quad
    rng = np.random.default_rng(9)
    names = list(model.joint_names)
    qj = rng.uniform(-1.0, 1.0, len(names))
    quat = rng.normal(size=4)
    quat /= np.linalg.norm(quat)
    pose = np.r_[rng.uniform(-1, 1, 3), quat]
    q = np.r_[pose, qj]
    feet = [(f, (0.0, 0.0, -0.02)) for f in ('LF_foot', 'RF_foot', 'LH_foot', 'RH_foot')]
    resp = request(probe, [f for f, _ in feet], [x for _, x in feet], names, qj, base_pose=pose,
                   inertia=True)
    lam, inertia = matrices(resp)
    assert resp.operational_space.header.frame_id == 'world'
    core = rd.contact_compliance(model, q, feet)
    np.testing.assert_allclose(lam, core, rtol=0, atol=1e-12 * np.abs(core).max())
    d = dense(model, q, feet, 3)
    np.testing.assert_allclose(lam, d, rtol=0, atol=1e-10 * np.abs(d).max())
    np.testing.assert_allclose(inertia @ d, np.eye(12), rtol=0, atol=1e-8)
    # the trunk as a full-wrench node (6 rows): the base's operational space
    lam, _ = matrices(request(probe, ['trunk'], None, names, qj, base_pose=pose, spatial=True))
    np.testing.assert_allclose(lam, dense(model, q, [('trunk', (0, 0, 0))], 6), rtol=0,
                               atol=1e-10 * np.abs(lam).max())
    # a non-unit quaternion is refused with a reason
    resp = request(probe, ['LF_foot'], None, names, qj, base_pose=np.r_[pose[:3], 2 * quat])
    assert not resp.success and 'quaternion' in resp.message
