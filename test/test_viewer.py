"""ros_dynamics.ros.viewer in a real headless browser (Debian's chromium, driven over the Chrome
DevTools Protocol by scripts/headless_browser.py).

* in process: RobotView on the bundled arm7 with a contact force -> the page renders the robot
  and a red arrow (red pixels in the 3D area, away from the GUI panel); the opposite force moves
  the red pixels to the other side on screen; after the release they are gone. Screenshot:
  out/viewer.png.
* as a process: `python -m ros_dynamics.ros.viewer` fed by a scripted rclpy publisher of
  /dynamics/dynamics, /dynamics/contact_estimate and /dynamics/external_torque over loopback
  DDS -> the arrow appears. Screenshot: out/viewer_ros.png.

What this does not prove: that the arrow is drawn at the right pixel (only that red appears in
the scene and disappears on release; the geometry of the arrow is the ContactView's, checked in
test_visualization.py), nor anything about GPU rendering (chromium renders with SwiftShader).
The test installs nothing: chromium is a system prerequisite (README; ./scripts/run_tests.sh
installs it with apt-get when run as root), and without it on PATH the browser tests fail.
"""
import io
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import pytest
import urdf_parser_py  # noqa: F401 - the viewer's URDF parser
import viser
from PIL import Image

pytestmark = pytest.mark.ros

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO_ROOT, 'scripts'))
import headless_browser  # noqa: E402 - the DevTools client, shared with scripts/viewer_picture.py

URDF = os.path.join(REPO_ROOT, 'urdf', 'arm7.urdf')
OUT = os.path.join(REPO_ROOT, 'out')
TIMEOUT = headless_browser.TIMEOUT
PANEL_X = 940          # the GUI panel is right of this column at 1280 px width
Q = np.array([0.3, 0.6, 0.0, -1.0, 0.0, 0.8, 0.0])
FORCE = np.array([20.0, 20.0, 0.0])   # across the camera's line of sight: a long arrow on screen



def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class Page(headless_browser.Browser):
    """The page with screenshots as RGB arrays and waits for what they must show."""

    def image(self):
        png = self.screenshot()
        return png, np.asarray(Image.open(io.BytesIO(png)).convert('RGB')).astype(int)

    def wait_for(self, predicate, what):
        deadline = time.monotonic() + TIMEOUT
        while True:
            png, img = self.image()
            if predicate(img):
                return png, img
            if time.monotonic() > deadline:
                path = _save(png, 'viewer_failed.png')
                pytest.fail(f'browser: {what} not seen in {TIMEOUT} s (red px {_red(img)}, '
                            f'grey px {_grey(img)}; last screenshot {path})')
            time.sleep(0.3)


def _red(img):
    """Pixels of the arrow's red (235, 40, 25) under shading, in the 3D area: right of the axes
    gizmo (bottom left, red x axis), left of the GUI panel, below the WebGL notice."""
    a = img[160:, 100:PANEL_X]
    r, g, b = a[..., 0], a[..., 1], a[..., 2]
    return int(((r > 150) & (r - g > 60) & (r - b > 60)).sum())


def _red_x(img):
    """Mean column of the red pixels (same region as _red)."""
    a = img[160:, 100:PANEL_X]
    r, g, b = a[..., 0], a[..., 1], a[..., 2]
    cols = np.nonzero((r > 150) & (r - g > 60) & (r - b > 60))[1]
    return 100.0 + cols.mean() if cols.size else float('nan')


def _grey(img):
    """Pixels of the robot's blue-grey links (170, 178, 190) under shading."""
    a = img[160:, 100:PANEL_X]
    return int(((a[..., 2] - a[..., 0] > 8) & (a[..., 2] > 90) & (a[..., 2] < 230)
                & (np.abs(a[..., 1] - a[..., 0]) < 20)).sum())


def _save(png, name):
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, name)
    with open(path, 'wb') as f:
        f.write(png)
    print(f'screenshot: {path}')
    return path


@pytest.fixture
def browser_factory(tmp_path):
    assert headless_browser.CHROMIUM is not None, ('chromium is not on PATH (Debian: apt-get install -y chromium; '
                                  './scripts/run_tests.sh does it as root)')
    opened = []

    def make(url):
        d = tempfile.mkdtemp(dir=tmp_path)
        b = Page(url, d)
        opened.append(b)
        return b
    yield make
    for b in opened:
        b.close()


def test_view_helpers(tmp_path):
    from ros_dynamics.ros.viewer import RobotView, resolve_mesh
    mesh = tmp_path / 'my_robot' / 'meshes' / 'link.stl'
    mesh.parent.mkdir(parents=True)
    mesh.write_bytes(b'solid x\nendsolid x\n')
    urdf_dir = tmp_path / 'my_robot' / 'urdf'
    urdf_dir.mkdir()
    assert resolve_mesh('package://my_robot/meshes/link.stl', str(urdf_dir)) == str(mesh)
    assert resolve_mesh('../meshes/link.stl', str(urdf_dir)) == str(urdf_dir / '../meshes/link.stl')
    assert resolve_mesh(f'file://{mesh}') == str(mesh)
    assert resolve_mesh('package://nowhere/x.stl', str(urdf_dir)) is None
    server = viser.ViserServer(host='127.0.0.1', port=_free_port(), verbose=False)
    try:
        xml = open(URDF).read().replace(
            '<geometry><cylinder radius="0.1" length="0.1575"/></geometry>',
            '<geometry><mesh filename="package://missing_pkg/base.dae"/></geometry>', 1)
        view = RobotView(server, xml)
        assert view.unresolved_meshes == ['package://missing_pkg/base.dae']
        names = list(view.model.joint_names)
        np.testing.assert_array_equal(view.q_from_dynamics(names, Q), Q)
        assert view.q_from_dynamics(['center_of_mass/x'] + names, np.zeros(8)) is None
        q = view.q_from_joint_positions(['arm_joint_4', 'not_a_joint'], [0.7, 1.0])
        assert q[view.model.joint_q_index('arm_joint_4')] == 0.7 and np.count_nonzero(q) == 1
    finally:
        server.stop()


def test_browser_shows_robot_and_contact_arrow(browser_factory):
    from ros_dynamics.ros.viewer import RobotView
    from ros_dynamics.ros.dynamics_node.rviz_messages import ContactView
    port = _free_port()
    server = viser.ViserServer(host='127.0.0.1', port=port, verbose=False)
    try:
        server.initial_camera.position = (1.3, -1.3, 1.1)
        server.initial_camera.look_at = (0.0, 0.0, 0.6)
        view = RobotView(server, open(URDF).read(), threshold=[5.0])
        view.set_configuration(Q)
        R, p = view.placement('arm_link_7')
        view.set_contacts([ContactView('arm_link_7', np.array([0.0, 0.0, 0.05]), R, p, FORCE)])
        view.set_residual(view.model.joint_names, [1.0, 2.0, 4.5, 6.0, 0.1, 0.2, 0.3])
        b = browser_factory(f'http://127.0.0.1:{port}/')
        png, img = b.wait_for(lambda im: _red(im) > 150 and _grey(im) > 3000,
                              'robot (grey) and arrow (red)')
        path = _save(png, 'viewer.png')
        assert len(server.get_clients()) == 1
        x_plus = _red_x(img)
        print(f'red px {_red(img)} (mean column {x_plus:.0f}), grey px {_grey(img)}')
        # the opposite force (same scene nodes, updated in place): the arrow swings to the left
        # on screen (+x+y points right from this camera); its tail stays at the contact point
        view.set_contacts([ContactView('arm_link_7', np.array([0.0, 0.0, 0.05]), R, p, -FORCE)])
        png, img = b.wait_for(lambda im: _red(im) > 150 and _red_x(im) < x_plus - 40,
                              'the reversed arrow')
        _save(png, 'viewer_reversed.png')
        view.set_contacts([])
        _, img = b.wait_for(lambda im: _red(im) < 10, 'release (no red)')
        assert _grey(img) > 3000 and os.path.getsize(path) > 10000
    finally:
        server.stop()


def test_viewer_process_fed_over_ros(browser_factory, ros_env, rclpy_context):
    """The feed node stands in for dynamics_node: named /dynamics, it declares contact_threshold
    (the viewer reads it, no --threshold given) and publishes the three topics at 50 Hz."""
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from ros_dynamics_msgs.msg import ContactEstimate, Dynamics
    from sensor_msgs.msg import JointState
    import rclpy
    node = rclpy.create_node('dynamics', context=rclpy_context)
    node.declare_parameter('contact_threshold', [5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 4.0])
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, '-m', 'ros_dynamics.ros.viewer', '--urdf', URDF, '--port', str(port)],
        env=ros_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    stop, feeder = threading.Event(), None
    try:
        deadline = time.monotonic() + 3 * TIMEOUT     # a cold numba cache compiles first
        said = []
        for line in proc.stdout:     # the viewer says where it serves once it is up
            said.append(line)
            if 'open http://' in line:
                break
            assert time.monotonic() < deadline, 'viewer did not start'
        else:
            pytest.fail(f'viewer exited: {proc.wait()}: {"".join(said)}')
        assert any('contact_threshold of /dynamics: [5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 4.0]' in s
                   for s in said), ''.join(said)
        reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        pub_d = node.create_publisher(Dynamics, '/dynamics/dynamics', reliable)
        pub_c = node.create_publisher(ContactEstimate, '/dynamics/contact_estimate', reliable)
        pub_r = node.create_publisher(JointState, '/dynamics/external_torque', reliable)
        names = [f'arm_joint_{i}' for i in range(1, 8)]
        d = Dynamics(names=names, position=Q.tolist())
        c = ContactEstimate(names=names, in_contact=True, isolated_links=['arm_link_7'],
                            wrench_valid=True, wrench_link='arm_link_7')
        c.wrench_point.z = 0.05
        c.wrench.force.x, c.wrench.force.y = FORCE[:2]
        r = JointState(name=names, effort=[1.0, 2.0, 4.5, 6.0, 0.1, 0.2, 0.3])

        def feed():        # 50 Hz, as a node in contact streams its estimates
            while not stop.wait(0.02):
                pub_d.publish(d)
                pub_c.publish(c)
                pub_r.publish(r)
        feeder = threading.Thread(target=feed, daemon=True)
        feeder.start()
        b = browser_factory(f'http://127.0.0.1:{port}/')
        png, img = b.wait_for(lambda im: _red(im) > 150 and _grey(im) > 3000,
                              'arrow from the ROS-fed viewer')
        _save(png, 'viewer_ros.png')
        assert proc.poll() is None
    finally:
        stop.set()
        if feeder is not None:
            feeder.join()
        executor.shutdown()
        spinner.join(10)
        node.destroy_node()
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
