"""The core library: model, spatial algebra, the algorithms (one module each) and the public API.

Imports numpy and numba only: nothing here depends on ROS, estimation or simulation.
"""

from .api import (Dynamics, christoffel, christoffel_batch, contact_compliance, contact_nodes,
                  coriolis_matrix,
                  coriolis_transpose_times_v, dynamics, dynamics_batch, forward_dynamics, gravity,
                  inverse_dynamics, link_jacobian, link_placement, mass_matrix,
                  mass_matrix_derivative, momentum, observer_terms)
from .bundled import bundled_urdf
from .coordinates import MimicCoordinates, transform_christoffel, transform_dynamics
from .model import Model, attach_payload
from .urdf import load_urdf

__all__ = [
    'Dynamics', 'MimicCoordinates', 'Model', 'attach_payload', 'bundled_urdf', 'christoffel',
    'christoffel_batch', 'contact_compliance', 'contact_nodes', 'coriolis_matrix', 'coriolis_transpose_times_v', 'dynamics',
    'dynamics_batch', 'forward_dynamics', 'gravity', 'inverse_dynamics', 'link_jacobian',
    'link_placement', 'load_urdf', 'mass_matrix', 'mass_matrix_derivative', 'momentum',
    'observer_terms', 'transform_christoffel', 'transform_dynamics',
]
