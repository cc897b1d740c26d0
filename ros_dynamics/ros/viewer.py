"""Live view of dynamics_node in a web browser (no RViz needed), on viser.

    python -m ros_dynamics.ros.viewer --urdf urdf/arm7.urdf [--node /dynamics] [--port 8080]
    viewer --urdf robot.urdf --threshold 5.0          # console script of the installed package

then open http://localhost:8080. It shows

* the robot from its URDF ``<visual>`` elements: box, cylinder and sphere as such, meshes loaded
  with trimesh when their file resolves (``package://`` through the ament index or a folder of
  that name above the URDF, ``file://``, or a path relative to the URDF), else a grey box
  stand-in; every link placed with the core's forward kinematics (``rd.link_placement``) at
  the joint positions of the node's ``~/dynamics`` (``position``, in the order of ``names``;
  joint coordinates) or, with ``--joint-states`` or other coordinates, of ``joint_states``;
* the contact of ``~/contact_estimate`` and each contact frame in contact of ``~/contact_forces``
  (the feet of a legged robot): a red arrow from the contact point along the estimated
  force (``--force-scale`` m/N, default 0.01) and an orange sphere on the isolated link(s);
* a bar per joint of |r_i| / threshold_i from ``~/external_torque``, with the thresholds of
  the node's ``contact_threshold`` parameter (or ``--threshold``, one value or one per joint).

The scene is refreshed at ``--fps`` (default 30) from the latest messages; the subscriptions
are best effort (matching the node's reliable publishers without slowing them), except the
contact estimate (reliable: its release message must arrive). Without ROS the class
:class:`RobotView` is the whole viewer: feed it with :meth:`RobotView.set_configuration`,
:meth:`RobotView.set_contacts` and :meth:`RobotView.set_residual`.
"""
from __future__ import annotations

import argparse
import html
import os
import sys
import threading
import time

import numpy as np

import ros_dynamics as rd
from ros_dynamics.ros.dynamics_node.rviz_messages import (FORCE_SCALE, contacts_from_estimate,
                                            contacts_from_forces)

ROBOT_COLOR = (170, 178, 190)
STAND_IN_COLOR = (120, 120, 120)
ARROW_COLOR = (235, 40, 25)
LINK_COLOR = (255, 150, 0)


def _quat(R):
    import viser.transforms as tf
    return tf.SO3.from_matrix(np.asarray(R, float)).wxyz


def resolve_mesh(filename, urdf_dir=None):
    """Path of a URDF mesh file, or None when it does not resolve (module docstring)."""
    if filename.startswith('file://'):
        path = filename[len('file://'):]
        return path if os.path.isfile(path) else None
    if filename.startswith('package://'):
        pkg, _, rel = filename[len('package://'):].partition('/')
        roots = []
        try:
            from ament_index_python.packages import get_package_share_directory
            roots.append(get_package_share_directory(pkg))
        except Exception:   # not installed / no ament index: try the folders above the URDF
            pass
        d = os.path.abspath(urdf_dir) if urdf_dir else None
        while d and d != os.path.dirname(d):
            if os.path.basename(d) == pkg:
                roots.append(d)
            roots.append(os.path.join(d, pkg))
            d = os.path.dirname(d)
        for root in roots:
            path = os.path.join(root, rel)
            if os.path.isfile(path):
                return path
        return None
    path = filename if os.path.isabs(filename) else os.path.join(urdf_dir or '.', filename)
    return path if os.path.isfile(path) else None


def _visual_color(visual, materials):
    mat = visual.material
    rgba = None
    if mat is not None:
        if mat.color is not None:
            rgba = mat.color.rgba
        elif mat.name in materials and materials[mat.name].color is not None:
            rgba = materials[mat.name].color.rgba
    if rgba is None:
        return ROBOT_COLOR, None
    color = tuple(int(round(255 * c)) for c in rgba[:3])
    return color, (float(rgba[3]) if rgba[3] < 1.0 else None)


class RobotView:
    """The viser scene of one robot: links, contact arrows, residual bars (module docstring).

    ``server``: a viser.ViserServer (the caller owns it). ``urdf``: URDF XML; ``urdf_dir``:
    the folder meshes are resolved against. Methods may be called from any thread; each call
    sends its changes to the connected browsers.
    """

    def __init__(self, server, urdf, *, urdf_dir=None, floating_base=False,
                 force_scale=FORCE_SCALE, threshold=None):
        import viser.transforms as tf
        from urdf_parser_py.urdf import URDF, Box, Cylinder, Mesh, Sphere
        self.server = server
        self.model = rd.load_urdf(urdf, floating_base=floating_base, allow_files=False)
        self.force_scale = float(force_scale)
        self.threshold = None if threshold is None else np.atleast_1d(np.asarray(threshold, float))
        self.q = self.model.neutral()
        self.unresolved_meshes = []
        self._lock = threading.Lock()
        robot = URDF.from_xml_string(urdf if isinstance(urdf, str) else urdf.decode())
        materials = {m.name: m for m in robot.materials}
        scene = server.scene
        scene.set_up_direction('+z')
        scene.add_grid('/ground', width=2.0, height=2.0, cell_size=0.1, section_size=0.5)
        self.links = {}
        for link in robot.links:
            if link.name not in self.model.link_frames or not link.visuals:
                continue
            frame = scene.add_frame(f'/robot/{link.name}', show_axes=False)
            self.links[link.name] = frame
            for k, vis in enumerate(link.visuals):
                name = f'/robot/{link.name}/visual_{k}'
                o = vis.origin
                pos = tuple(o.xyz) if o is not None and o.xyz is not None else (0.0, 0.0, 0.0)
                rpy = tuple(o.rpy) if o is not None and o.rpy is not None else (0.0, 0.0, 0.0)
                wxyz = tf.SO3.from_rpy_radians(*rpy).wxyz
                color, opacity = _visual_color(vis, materials)
                g = vis.geometry
                common = dict(wxyz=wxyz, position=pos)
                if isinstance(g, Box):
                    scene.add_box(name, color=color, dimensions=tuple(g.size), opacity=opacity,
                                  **common)
                elif isinstance(g, Cylinder):
                    scene.add_cylinder(name, radius=g.radius, height=g.length, color=color,
                                       opacity=opacity, **common)
                elif isinstance(g, Sphere):
                    scene.add_icosphere(name, radius=g.radius, color=color, opacity=opacity,
                                        **common)
                elif isinstance(g, Mesh):
                    path = resolve_mesh(g.filename, urdf_dir)
                    mesh = None
                    if path is not None:
                        try:
                            import trimesh
                            mesh = trimesh.load(path, force='mesh')
                            if g.scale is not None:
                                mesh.apply_scale(np.asarray(g.scale, float))
                        except Exception as exc:   # unreadable file: stand-in, said once
                            print(f'viewer: mesh {path}: {exc}; showing a stand-in',
                                  file=sys.stderr)
                            mesh = None
                    if mesh is not None:
                        scene.add_mesh_simple(name, np.asarray(mesh.vertices, np.float32),
                                              np.asarray(mesh.faces, np.uint32), color=color,
                                              opacity=opacity, **common)
                    else:
                        self.unresolved_meshes.append(g.filename)
                        scene.add_box(name, color=STAND_IN_COLOR, dimensions=(0.05, 0.05, 0.05),
                                      wireframe=True, **common)
        if self.unresolved_meshes:
            print(f'viewer: {len(self.unresolved_meshes)} mesh file(s) not found (e.g. '
                  f'{self.unresolved_meshes[0]}): grey stand-ins', file=sys.stderr)
        self._arrows = None
        self._spheres = []          # sphere, label per contact
        self._estimate, self._feet = [], []   # views of ~/contact_estimate, ~/contact_forces
        self._shown = (0, 0)        # (arrows, contacts) in the scene
        self._bars = server.gui.add_html(self._bars_html([], np.zeros(0), None))
        self._status = server.gui.add_markdown('waiting for data')
        self.set_configuration(self.q)

    # -- robot --------------------------------------------------------------------------------
    def set_configuration(self, q):
        """Place every link at configuration q (model.nq) with the core's kinematics."""
        q = np.asarray(q, float)
        data = rd.Data(self.model)
        placements = {name: rd.link_placement(self.model, q, name, data=data)
                      for name in self.links}
        with self._lock:
            self.q = q.copy()
            for name, (R, p) in placements.items():
                frame = self.links[name]
                frame.wxyz = _quat(R)
                frame.position = tuple(p)

    def q_from_joint_positions(self, names, position):
        """q (model.nq) from named joint positions (joint_states style); joints not given keep
        their current value, mimic followers follow their leader."""
        q = self.q.copy()
        given = dict(zip(names, position))
        for j in self.model.joint_names:
            if j in given:
                q[self.model.joint_q_index(j)] = given[j]
        for j, (leader, mult, offset) in self.model.mimic.items():
            if j not in given and leader in given and j in self.model.joint_names:
                q[self.model.joint_q_index(j)] = mult * given[leader] + offset
        return q

    def q_from_dynamics(self, names, position):
        """q from a ros_dynamics_msgs/Dynamics (names, position) in joint coordinates, else None
        (other coordinates: use joint_states)."""
        joints = [n for n in names if not n.startswith('floating_base/')]
        if joints != list(self.model.joint_names) or len(position) != self.model.nq:
            return None
        return np.asarray(position, float)

    def frame_camera(self):
        """Initial camera of new browsers: looking at the robot (its link origins at the
        current configuration) from the front right, above."""
        origins = np.array([self.placement(n)[1] for n in self.model.link_frames]).reshape(-1, 3)
        lo, hi = origins.min(axis=0), origins.max(axis=0)
        centre = 0.5 * (lo + hi)
        size = max(float(np.max(hi - lo)), 0.3)
        self.server.initial_camera.look_at = tuple(centre)
        self.server.initial_camera.position = tuple(centre + size * np.array([0.8, -0.8, 0.5]))

    def placement(self, link):
        """(R, p) of a link at the current configuration."""
        return rd.link_placement(self.model, self.q, link)

    # -- contact ------------------------------------------------------------------------------
    def set_contacts(self, contacts):
        """Show ContactViews (ros_dynamics.ros.dynamics_node.rviz_messages): an arrow per force from the world
        contact point, length force_scale |f|, a label with |f|, and a sphere at each contact
        link's origin. The scene nodes are updated in place while the number of contacts and
        forces stays the same (no flicker at the refresh rate), re-created when it changes."""
        scene = self.server.scene
        arrows = [(c.world_point(), c.world_point() + self.force_scale * np.asarray(c.force, float))
                  for c in contacts if c.force is not None]
        pts = np.array(arrows, np.float32).reshape(-1, 2, 3)
        longest = float(np.max(np.linalg.norm(pts[:, 1] - pts[:, 0], axis=1))) if arrows else 0.0
        head = min(0.08, 0.4 * max(longest, 1e-3))
        labels = [(c.link if c.force is None else
                   f'{c.link} {float(np.linalg.norm(c.force)):.1f} N',
                   tuple(c.world_point() + np.array([0.0, 0.0, 0.08]))) for c in contacts]
        with self._lock:
            if (len(arrows), len(contacts)) == self._shown:
                if self._arrows is not None:
                    self._arrows.points = pts
                    self._arrows.head_length = head
                for k, c in enumerate(contacts):
                    sphere, label = self._spheres[2 * k], self._spheres[2 * k + 1]
                    sphere.position = tuple(np.asarray(c.p, float))
                    label.text, label.position = labels[k]
                return
            if self._arrows is not None:
                self._arrows.remove()
                self._arrows = None
            for s in self._spheres:
                s.remove()
            self._spheres = []
            if arrows:
                self._arrows = scene.add_arrows('/contact/force', pts, ARROW_COLOR,
                                                shaft_radius=0.015, head_radius=0.035,
                                                head_length=head)
            for k, c in enumerate(contacts):
                self._spheres.append(scene.add_icosphere(
                    f'/contact/link_{k}', radius=0.06, color=LINK_COLOR, opacity=0.4,
                    position=tuple(np.asarray(c.p, float))))
                self._spheres.append(scene.add_label(
                    f'/contact/label_{k}', labels[k][0], anchor='bottom-center',
                    position=labels[k][1]))
            self._shown = (len(arrows), len(contacts))

    def set_contact_estimate(self, msg):
        """A ros_dynamics_msgs/ContactEstimate at the current configuration."""
        self._estimate = contacts_from_estimate(msg, self.placement)
        self.set_contacts(self._estimate + self._feet)

    def release_contact_estimate(self):
        """The contact estimate released (its stream stopped): only the contact frames stay."""
        self._estimate = []
        self.set_contacts(self._feet)

    def set_contact_forces(self, msg):
        """A ros_dynamics_msgs/ContactForces: an arrow per contact frame in contact."""
        self._feet = contacts_from_forces(msg, self.placement)
        self.set_contacts(self._estimate + self._feet)

    # -- residual -----------------------------------------------------------------------------
    def set_residual(self, names, residual, threshold=None):
        """Bars of |r_i| / threshold_i (threshold: scalar, per joint, or the view's)."""
        thr = self.threshold if threshold is None else np.atleast_1d(np.asarray(threshold, float))
        r = np.abs(np.asarray(residual, float))
        if thr is not None:
            thr = np.broadcast_to(thr, r.shape) if thr.size in (1, r.size) else None
        content = self._bars_html(list(names), r, thr)
        if content != self._bars.content:
            self._bars.content = content

    @staticmethod
    def _bars_html(names, r, thr):
        if not names:
            return '<div style="font-size:0.8em">external torque: no data yet</div>'
        rows = []
        for k, n in enumerate(names):
            if thr is None:
                frac, text, color = 0.0, f'{r[k]:.2f}', '#888'
            else:
                frac = r[k] / thr[k]
                text = f'{r[k]:.2f} / {thr[k]:.2f}'
                color = '#d0302a' if frac >= 1.0 else ('#e0a000' if frac >= 0.8 else '#3a8f3a')
            width = 100.0 * min(frac, 1.5) / 1.5
            rows.append(
                f'<div style="display:flex;align-items:center;font-size:0.75em;margin:1px 0">'
                f'<span style="width:7em;overflow:hidden">{html.escape(n)}</span>'
                f'<span style="flex:1;position:relative;height:0.9em;background:#eee">'
                f'<span style="position:absolute;left:0;top:0;bottom:0;width:{width:.1f}%;'
                f'background:{color}"></span>'
                f'<span style="position:absolute;left:66.7%;top:-2px;bottom:-2px;width:1px;'
                f'background:#000"></span></span>'
                f'<span style="width:7em;text-align:right">{text}</span></div>')
        head = ('<div style="font-size:0.8em;margin-bottom:2px">|external torque| vs threshold'
                ' (line: threshold)</div>')
        return head + ''.join(rows)

    def set_status(self, text):
        if text != self._status.content:
            self._status.content = text


# -- ROS ----------------------------------------------------------------------------------------
def _thresholds_from_node(node, target, timeout=5.0):
    """The target node's contact_threshold parameter (list), or None."""
    from rcl_interfaces.srv import GetParameters
    client = node.create_client(GetParameters, f'{target}/get_parameters')
    try:
        if not client.wait_for_service(timeout_sec=timeout):
            return None
        fut = client.call_async(GetParameters.Request(names=['contact_threshold']))
        t0 = time.monotonic()
        while not fut.done() and time.monotonic() - t0 < timeout:
            time.sleep(0.02)
        if not fut.done() or not fut.result().values:
            return None
        v = fut.result().values[0]
        return list(v.double_array_value) or ([v.double_value] if v.type == 3 else None)
    finally:
        node.destroy_client(client)


def _refresh(view, snap, shown, use_js, bars):
    """Bring the view up to the latest messages in ``snap`` (key -> (message, receipt time));
    ``shown`` remembers what is already drawn. Returns whether joint_states is the source."""
    q = None
    if not use_js and 'dynamics' in snap and snap['dynamics'] is not shown.get('dynamics'):
        m = snap['dynamics'][0]
        q = view.q_from_dynamics(m.names, m.position)
        if q is None:
            print('viewer: ~/dynamics is not in joint coordinates: using joint_states', flush=True)
            use_js = True
    if q is None and use_js and 'joint_states' in snap and \
            snap['joint_states'] is not shown.get('joint_states'):
        m = snap['joint_states'][0]
        q = view.q_from_joint_positions(m.name, m.position)
    if q is not None:
        view.set_configuration(q)
    shown.update({k: snap[k] for k in ('dynamics', 'joint_states') if k in snap})
    c = snap.get('contact')
    if c is not None and c is not shown.get('contact'):
        view.set_contact_estimate(c[0])
        shown['contact'] = c
    elif c is not None and c[0].in_contact and time.monotonic() - c[1] > 0.5 and \
            shown.get('stale') is not c:
        view.release_contact_estimate()   # estimates stream while in contact: none for 0.5 s
        shown['stale'] = c
    f = snap.get('feet')
    if f is not None and f is not shown.get('feet'):
        view.set_contact_forces(f[0])
        shown['feet'] = f
    r = snap.get('residual')
    if bars and r is not None and r is not shown.get('residual'):
        view.set_residual(r[0].name, r[0].effort)
        shown['residual'] = r
    return use_js


def run(args):
    import rclpy
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
    from sensor_msgs.msg import JointState
    import viser
    try:
        from ros_dynamics_msgs.msg import ContactEstimate, Dynamics
    except ImportError:
        ContactEstimate = Dynamics = None

    with open(args.urdf) as f:
        xml = f.read()
    if args.urdf.endswith('.xacro'):
        import xacro
        xml = xacro.process_file(args.urdf).toxml()
    server = viser.ViserServer(host=args.host, port=args.port, label='ros_dynamics viewer')
    view = RobotView(server, xml, urdf_dir=os.path.dirname(os.path.abspath(args.urdf)),
                     floating_base=args.floating_base, force_scale=args.force_scale,
                     threshold=args.threshold)
    view.frame_camera()
    rclpy.init()
    node = rclpy.create_node('dynamics_viewer')
    target = args.node.rstrip('/')
    latest = {}
    counts = {}
    lock = threading.Lock()

    def keep(key):
        def cb(msg):
            with lock:
                latest[key] = (msg, time.monotonic())
                counts[key] = counts.get(key, 0) + 1
        return cb

    reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    use_js = args.joint_states or Dynamics is None
    if not use_js:
        node.create_subscription(Dynamics, f'{target}/dynamics', keep('dynamics'),
                                 qos_profile_sensor_data)
    if use_js:
        node.create_subscription(JointState, args.joint_states_topic, keep('joint_states'),
                                 qos_profile_sensor_data)
    if ContactEstimate is not None:
        node.create_subscription(ContactEstimate, f'{target}/contact_estimate', keep('contact'),
                                 reliable)
    try:
        from ros_dynamics_msgs.msg import ContactForces
        node.create_subscription(ContactForces, f'{target}/contact_forces', keep('feet'),
                                 qos_profile_sensor_data)
    except ImportError:
        pass
    node.create_subscription(JointState, f'{target}/external_torque', keep('residual'),
                             qos_profile_sensor_data)
    executor = MultiThreadedExecutor(num_threads=2)
    executor.add_node(node)
    spin = threading.Thread(target=executor.spin, daemon=True)
    spin.start()
    if view.threshold is None:
        thr = _thresholds_from_node(node, target)
        if thr:
            view.threshold = np.asarray(thr, float)
            print(f'viewer: contact_threshold of {target}: {thr}')
        else:
            print(f'viewer: no contact_threshold from {target} (give --threshold); bars show |r|')
    print(f'viewer: open http://localhost:{server.get_port()}  (Ctrl+C to stop)', flush=True)
    shown = {}
    period = 1.0 / args.fps
    slow = max(1, int(round(args.fps / 5.0)))      # bars at ~5 Hz, status at ~1 Hz: the browser
    frame = 0                                       # re-lays out HTML, keep that rare
    last_report = time.monotonic()
    try:
        while True:
            time.sleep(period)
            frame += 1
            with lock:
                snap = dict(latest)
            with server.atomic():                   # one batch per refresh
                was_js = use_js
                use_js = _refresh(view, snap, shown, use_js, bars=frame % slow == 0)
            if use_js and not was_js:               # ~/dynamics in other coordinates
                node.create_subscription(JointState, args.joint_states_topic,
                                         keep('joint_states'), qos_profile_sensor_data)
            if time.monotonic() - last_report >= 10.0:   # a sign of life every 10 s
                last_report = time.monotonic()
                with lock:
                    got, counts = dict(counts), {}
                print('viewer: received in the last 10 s: ' + (', '.join(
                    f'{k} {n}' for k, n in sorted(got.items())) or 'nothing'), flush=True)
            if frame % int(round(args.fps)) == 0:
                now = time.monotonic()
                view.set_status(f'{target}: ' + ', '.join(
                    f'{k} {now - v[1]:.1f} s ago' for k, v in sorted(snap.items()))
                    if snap else f'{target}: waiting for data')
    except KeyboardInterrupt:
        pass
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
        server.stop()


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description='Live browser view of dynamics_node (viser).')
    ap.add_argument('--urdf', required=True, help='URDF (or .xacro) file of the robot')
    ap.add_argument('--node', default='/dynamics', help='dynamics_node name (default /dynamics)')
    ap.add_argument('--host', default='127.0.0.1',
                    help='address to serve on (default 127.0.0.1; 0.0.0.0 for other machines)')
    ap.add_argument('--port', type=int, default=8080)
    ap.add_argument('--threshold', type=float, nargs='+', default=None,
                    help="contact thresholds (one, or one per joint); default: the node's "
                         'contact_threshold parameter')
    ap.add_argument('--force-scale', type=float, default=FORCE_SCALE,
                    help=f'arrow length per newton [m/N] (default {FORCE_SCALE})')
    ap.add_argument('--joint-states', action='store_true',
                    help='take joint positions from joint_states instead of ~/dynamics')
    ap.add_argument('--joint-states-topic', default='joint_states')
    ap.add_argument('--floating-base', action='store_true',
                    help='the URDF root is a 6-DoF free joint (as the node\'s floating_base)')
    ap.add_argument('--fps', type=float, default=30.0, help='scene refresh rate [Hz]')
    args, _ros_args = ap.parse_known_args(argv)
    if not args.force_scale > 0 or not args.fps > 0:
        ap.error('--force-scale and --fps must be > 0')
    if not os.path.isfile(args.urdf):
        ap.error(f'--urdf {args.urdf}: no such file')
    return args


def main(argv=None):
    run(parse_args(argv))


if __name__ == '__main__':
    main()
