"""``~/get_operational_space`` of the dynamics node: Lambda = J M^-1 J^T of requested nodes.

For operational-space and whole-body controllers (Khatib 1987) and contact solvers: the
operational-space compliance of m nodes (points fixed in links) and, on request, its inverse,
the operational-space inertia.  Lambda comes from :func:`ros_dynamics.contact_compliance`, the
O(N) + O(m^2) articulated-body recursion of Jain, "Contact Dynamics Formulation Using Minimal
Coordinates" (Eq. 51, App. 10), which forms neither M^-1 nor J; with ``coordinates:
mimic_reduced`` it is the constrained system's J A (A^T M A)^-1 A^T J^T instead (the node's
OutputCoordinates.contact_compliance decides), and ``position`` is the state in the node's
coordinates, as in ``~/dynamics``.  The state is parsed exactly as for ``~/get_dynamics`` (the
node's ``_service_state``: a requested state, or the latest accepted one).  Message layout and
units: ros_dynamics_msgs/OperationalSpace.
"""

import array

import numpy as np
from geometry_msgs.msg import Point

try:  # the interface package; optional, as for the node's other typed services
    from ros_dynamics_msgs.srv import GetOperationalSpace
except ImportError:  # pragma: no cover
    GetOperationalSpace = None

#: Lambda counts as singular (no inertia) below this reciprocal condition number.
MIN_RCOND = 1e-12


def register(node):
    """Create ``~/get_operational_space`` on a DynamicsNode (None without the interface package)."""
    if GetOperationalSpace is None:
        return None
    return node.create_service(GetOperationalSpace, '~/get_operational_space',
                               lambda request, response: handle(node, request, response))


def operational_space_inertia(lam):
    """Lambda^-1 for a symmetric positive definite Lambda; ValueError if it is (near) singular."""
    ev = np.linalg.eigvalsh(lam)
    if ev.size and not ev[0] > MIN_RCOND * ev[-1]:
        raise ValueError(f'Lambda is singular (eigenvalues {ev[0]:.3g} .. {ev[-1]:.3g}): the nodes '
                         'over-constrain the robot (a node on a link fixed to the world, repeated '
                         'nodes, or more rows than the degrees of freedom moving them); no inertia')
    inv = np.linalg.inv(lam)
    return 0.5 * (inv + inv.T)


def handle(node, request, response):
    """Fill ``response`` (GetOperationalSpace) for ``request``; failures go back as a message
    (the node's shared service path)."""
    def compute():
        links = list(request.links)
        if not links:
            raise ValueError('no nodes: give at least one link (and its point)')
        if len(request.points) not in (0, len(links)):
            raise ValueError(f'{len(request.points)} points for {len(links)} links (give one per '
                             'link, or none for the link origins)')
        points = [(p.x, p.y, p.z) for p in request.points] or [(0.0, 0.0, 0.0)] * len(links)
        eng, q, _, stamp = node._service_state(request, with_velocity=False)
        # in the node's coordinates: with mimic_reduced the constrained system's Lambdabar
        lam = eng.coords.contact_compliance(q, list(zip(links, points)), spatial=request.spatial)
        values = {'links': links,
                  'points': list(request.points) or [Point() for _ in links],
                  'dim': 6 if request.spatial else 3,
                  'position': array.array('d', eng.coords.state(q, np.zeros(eng.nv))[0]),
                  'compliance': array.array('d', lam.ravel())}
        if request.inertia:
            values['inertia'] = array.array('d', operational_space_inertia(lam).ravel())
        return eng, stamp, values
    return node._serve(response, 'operational_space', compute)
