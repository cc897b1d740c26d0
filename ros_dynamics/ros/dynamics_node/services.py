"""The dynamics node's services, answered off the input path.

``~/get_dynamics``, ``~/get_christoffel``, ``~/get_operational_space`` (Lambda = J M^-1 J^T of
requested nodes; Khatib 1987; the O(N) + O(m^2) recursion of Jain's contact dynamics in
minimal coordinates), ``~/get_linearization`` (A = d(v, a)/d(q, v), B = d(v, a)/d(tau) by the
core's analytical derivatives), ``~/estimate_payload`` (mass and CoM of a tool from the recorded static
poses; ros_dynamics.identification.payload) and ``~/reset_observer`` live on a companion node (``<name>_services``)
spun by its own executor thread, under the dynamics node's names, so that a slow request delays
only itself and never waits behind the joint-state backlog.  Requests obey the joint_states
input policy and documented bounds (docs/ros_interface.md): at most 4 x the model's joints
plus 64 names, ``max_request_links`` links, points within 1 km of their link; a result that is
not finite is refused, never returned with success.
"""
from __future__ import annotations

import array
import math
import threading
from typing import Callable, NamedTuple

import numpy as np

from ...core.api import christoffel, dynamics, mass_matrix
from ...core.derivatives import forward_dynamics_derivatives
from ...identification.payload import estimate_payload
from .. import interfaces as itf
from .messages import stamp_msg

MAX_POINT_DISTANCE = 1e3     # m, a contact point from its link
MIN_RCOND = 1e-12            # Lambda counts as singular below this reciprocal condition number


def operational_space_inertia(lam):
    """Lambda^-1 for a symmetric positive definite Lambda; ValueError if (near) singular."""
    ev = np.linalg.eigvalsh(lam)
    if ev.size and not ev[0] > MIN_RCOND * ev[-1]:
        raise ValueError(f'Lambda is singular (eigenvalues {ev[0]:.3g} .. {ev[-1]:.3g}): the nodes '
                         'over-constrain the robot (a node on a link fixed to the world, repeated '
                         'nodes, or more rows than the degrees of freedom moving them); no inertia')
    inv = np.linalg.inv(lam)
    return 0.5 * (inv + inv.T)


def _finite(*arrays):
    return all(math.isfinite(float(np.sum(a))) for a in arrays)


class Host(NamedTuple):
    """What the services need of the node that hosts them (passed in, not the node)."""
    context: object              # the rclpy context
    name: str                    # the node's name, namespace and fully qualified name
    namespace: str
    fqn: str
    engine: Callable             # () -> the current Engine or None
    config: Callable             # () -> the current parameters
    now: Callable                # () -> builtin_interfaces/Time of the node clock
    reset_observer: Callable     # () -> (success, message)
    set_parameters: Callable     # [rclpy Parameter] -> SetParametersResult (atomically)


class Services:
    """The companion node and its executor thread (module text)."""

    def __init__(self, host):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        self.host = host
        self.srv_node = rclpy.create_node(f'{host.name}_services', namespace=host.namespace,
                                          context=host.context, start_parameter_services=False,
                                          use_global_arguments=False)   # no __node remap
        base = host.fqn
        make = self.srv_node.create_service
        if itf.HAVE_MSGS:
            make(itf.GetDynamics, f'{base}/get_dynamics', self.get_dynamics)
            make(itf.GetChristoffel, f'{base}/get_christoffel', self.get_christoffel)
            make(itf.GetOperationalSpace, f'{base}/get_operational_space',
                 self.get_operational_space)
            make(itf.EstimatePayload, f'{base}/estimate_payload', self.estimate_payload)
        if itf.HAVE_TASK_SPACE:
            make(itf.GetTaskSpace, f'{base}/get_task_space', self.get_task_space)
        if itf.HAVE_LINEARIZATION:
            make(itf.GetLinearization, f'{base}/get_linearization', self.get_linearization)
        make(itf.Trigger, f'{base}/reset_observer', self.reset_observer)
        self.executor = SingleThreadedExecutor(context=host.context)
        self.executor.add_node(self.srv_node)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, name='services', daemon=True)
        self._thread.start()

    def _spin(self):
        while not self._stop.is_set():
            try:
                self.executor.spin_once(timeout_sec=1.0)   # close() wakes it
            except Exception:  # noqa: BLE001 - context shut down under us at exit
                if self._stop.is_set():
                    return
                raise

    def close(self):
        self._stop.set()
        self.executor.wake()
        self._thread.join(timeout=2.0)
        self.executor.shutdown(timeout_sec=1.0)
        self.srv_node.destroy_node()

    # ------------------------------------------------------------------ shared path
    def _state(self, req, with_velocity):
        """(engine, q, v, stamp) of a request: its state, or the latest accepted one."""
        eng = self.host.engine()
        if eng is None:
            raise ValueError('no robot model yet (set robot_description or publish it on the '
                             'robot_description topic)')
        js = req.state
        if len(js.name) == 0:
            if len(js.position) or len(js.velocity):
                raise ValueError('positions or velocities without names')
            latest = eng.requests.latest
            if latest is None:
                raise ValueError('no joint state accepted yet: give a state in the request '
                                 '(names and positions) or publish joint_states')
            return eng, latest[0], latest[1], stamp_msg(latest[2])
        limit = 4 * len(eng.joint_names) + 64
        if len(js.name) > limit:
            raise ValueError(f'{len(js.name)} names: at most {limit} for this model')
        q, v = eng.requests.state(list(js.name), js.position, js.velocity,
                                  getattr(req, 'base_pose', None),
                                  getattr(req, 'base_twist', None), with_velocity)
        return eng, q, v, self.host.now()

    @staticmethod
    def _serve(response, field, compute):
        """``compute()`` returns (engine, stamp, {field: value}) or raises: a failure goes back
        as success=false with the reason, nothing filled."""
        try:
            eng, stamp, values = compute()
        except Exception as exc:  # noqa: BLE001 - the reason goes back to the caller
            response.success = False
            response.message = str(exc) if isinstance(exc, ValueError) else (
                f'{type(exc).__name__}: {exc}')
            return response
        m = getattr(response, field)
        m.header.stamp = stamp
        m.header.frame_id = eng.frame_id
        for name, value in values.items():
            setattr(m, name, value)
        response.success = True
        return response

    # ------------------------------------------------------------------ handlers
    def get_dynamics(self, request, response):
        def compute():
            eng, q, v, stamp = self._state(request, with_velocity=True)
            out = eng.coords.apply(q, v, dynamics(eng.model, q, v))
            d = out.d
            if not _finite(d.M, d.C, d.Mdot, d.g, out.q, out.v):
                raise ValueError('non-finite result at the requested state')
            return eng, stamp, {
                'names': list(eng.coords.names), 'position': array.array('d', out.q),
                'velocity': array.array('d', out.v),
                'mass_matrix': array.array('d', d.M.ravel()),
                'coriolis_matrix': array.array('d', d.C.ravel()),
                'mass_matrix_dot': array.array('d', d.Mdot.ravel()),
                'gravity': array.array('d', d.g)}
        return self._serve(response, 'dynamics', compute)

    def get_linearization(self, request, response):
        """A = d(v, a)/d(q, v), B = d(v, a)/d(tau) at the request's state (or the latest) and
        effort (empty: zero), q in the tangent space (core.derivatives, Carpentier & Mansard)."""
        try:
            eng, q, v, _ = self._state(request, with_velocity=True)
            if not eng.coords.identity:
                raise ValueError('get_linearization answers in joint coordinates: not with '
                                 'output coordinates other than joint')
            n = eng.nv
            tau = np.zeros(n) if len(request.effort) == 0 else np.asarray(request.effort, float)
            if tau.shape != (n,):
                raise ValueError(f'effort must have {n} values (one per name), got {tau.size}')
            da_dq, da_dv, Minv = forward_dynamics_derivatives(eng.model, q, v, tau)
            A = np.zeros((2 * n, 2 * n))
            A[:n, n:] = np.eye(n)
            A[n:, :n], A[n:, n:] = da_dq, da_dv
            B = np.zeros((2 * n, n))
            B[n:] = Minv
            if not _finite(A, B):
                raise ValueError('non-finite result at the requested state')
        except Exception as exc:  # noqa: BLE001 - the reason goes back to the caller
            response.success = False
            response.message = str(exc) if isinstance(exc, ValueError) else (
                f'{type(exc).__name__}: {exc}')
            return response
        response.names = list(eng.coords.names)
        response.position, response.velocity = array.array('d', q), array.array('d', v)
        response.a_matrix, response.b_matrix = array.array('d', A.ravel()), array.array('d', B.ravel())
        response.success = True
        return response

    def get_christoffel(self, request, response):
        def compute():
            eng, q, v, stamp = self._state(request, with_velocity=False)
            if not eng.with_gamma:
                raise ValueError(f'Gamma is not computed for this model: nv = {eng.nv} > '
                                 'christoffel_max_nv')
            M = None if eng.coords.identity else mass_matrix(eng.model, q)
            gamma = eng.coords.christoffel(q, christoffel(eng.model, q), M)
            qbar = eng.coords.state(q, v, M)[0]
            if not _finite(gamma, qbar):
                raise ValueError('non-finite result at the requested state')
            return eng, stamp, {
                'names': list(eng.coords.names), 'position': array.array('d', qbar),
                'christoffel': array.array('d', np.ascontiguousarray(gamma).ravel())}
        return self._serve(response, 'christoffel', compute)

    def get_operational_space(self, request, response):
        def compute():
            links = list(request.links)
            limit = self.host.config().max_request_links
            if not links:
                raise ValueError('no nodes: give at least one link (and its point)')
            if len(links) > limit:
                raise ValueError(f'{len(links)} links: at most max_request_links ({limit}) per '
                                 'request')
            if len(request.points) not in (0, len(links)):
                raise ValueError(f'{len(request.points)} points for {len(links)} links (give '
                                 'one per link, or none for the link origins)')
            points = [(p.x, p.y, p.z) for p in request.points] or [(0.0, 0.0, 0.0)] * len(links)
            for p in points:
                if not (all(math.isfinite(x) for x in p) and math.hypot(*p) <= MAX_POINT_DISTANCE):
                    raise ValueError(f'point {p} is not finite or farther than '
                                     f'{MAX_POINT_DISTANCE:g} m from its link')
            eng, q, _, stamp = self._state(request, with_velocity=False)
            lam = eng.coords.contact_compliance(q, list(zip(links, points)),
                                                spatial=request.spatial)
            values = {'links': links, 'points': list(request.points) or [
                itf.Point() for _ in links], 'dim': 6 if request.spatial else 3,
                'position': array.array('d', eng.coords.state(q, np.zeros(eng.nv))[0]),
                'compliance': array.array('d', lam.ravel())}
            if request.inertia:
                inv = operational_space_inertia(lam)
                values['inertia'] = array.array('d', inv.ravel())
                lam = inv
            if not _finite(lam):
                raise ValueError('non-finite result at the requested state')
            return eng, stamp, values
        return self._serve(response, 'operational_space', compute)

    def get_task_space(self, request, response):
        def compute():
            frames = list(request.frames)
            limit = self.host.config().max_request_links
            if len(frames) > limit:
                raise ValueError(f'{len(frames)} frames: at most max_request_links ({limit}) '
                                 'per request')
            eng, q, v, stamp = self._state(request, with_velocity=True)
            ts = eng.task.at(q, v, frames)
            return eng, stamp, eng.task.fields(ts, itf.Pose, itf.Point, itf.Vector3)
        return self._serve(response, 'task_space', compute)

    def reset_observer(self, request, response):
        response.success, response.message = self.host.reset_observer()
        return response

    def estimate_payload(self, request, response):
        """Fit a payload to the recorded joint states; optionally set the payload parameters."""
        eng, cfg = self.host.engine(), self.host.config()
        try:
            if eng is None:
                raise ValueError('no robot model yet')
            link = request.link or cfg.payload_link
            if not link:
                raise ValueError('no link: give one in the request or set payload_link')
            if not (request.window >= 0.0 and math.isfinite(request.window)):
                raise ValueError('window must be a finite number of seconds >= 0')
            samples = eng.requests.recorded(request.window)
            if len(samples) == 0:
                raise ValueError('no joint states with efforts recorded yet')
            est = estimate_payload(eng.urdf_model, samples, link)
        except ValueError as exc:
            response.success, response.message = False, str(exc)
            return response
        response.success = True
        response.link, response.mass, response.poses = est.link, est.mass, est.poses
        response.com.x, response.com.y, response.com.z = (float(x) for x in est.com)
        response.com_se.x, response.com_se.y, response.com_se.z = (float(x) for x in est.com_se)
        response.mass_se, response.residual_rms = est.mass_se, est.residual_rms
        response.message = (f'{est.mass:.4g} kg +- {est.mass_se:.2g} at {np.round(est.com, 4)} m '
                            f'on {est.link} from {est.poses} samples (torque residual rms '
                            f'{est.residual_rms:.3g} N m)')
        if request.apply:
            from rclpy.parameter import Parameter
            res = self.host.set_parameters([
                Parameter('payload_link', value=est.link),
                Parameter('payload_mass', value=float(est.mass)),
                Parameter('payload_com', value=[float(x) for x in est.com]),
                Parameter('payload_inertia', value=[0.0] * 6)])
            response.applied = bool(res.successful)
            if not res.successful:
                response.message += f'; not applied: {res.reason}'
        return response
