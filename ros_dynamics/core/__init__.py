"""The core library: model, spatial algebra, the algorithms (one module each) and the public API.

Imports numpy and numba only: nothing here depends on ROS, estimation or simulation.
"""

from . import _numba_cache  # noqa: F401  (first: stamps the kernels' disk cache with all core sources)

from . import configuration
from .api import (Data, Dynamics, check_configuration, check_state, check_vector, christoffel,
                  christoffel_batch, compute_all_terms, compute_all_terms_unchecked,
                  contact_compliance, contact_nodes, coriolis_matrix, coriolis_transpose_times_v,
                  dynamics, dynamics_batch,
                  forward_dynamics, gravity, inverse_dynamics, link_jacobian, link_placement,
                  mass_matrix, mass_matrix_derivative, momentum, observer_terms)
from .bundled import bundled_urdf
from .coordinates import (CenterOfMassCoordinates, MimicCoordinates, transform_christoffel,
                          transform_dynamics)
from .derivatives import inverse_dynamics_dv
from .model import Model, attach_payload
from .urdf import URDFWarning, load_urdf, load_urdf_string

__all__ = [
    'CenterOfMassCoordinates', 'Data', 'Dynamics', 'MimicCoordinates', 'Model', 'URDFWarning',
    'attach_payload', 'bundled_urdf', 'check_configuration', 'check_state', 'check_vector',
    'christoffel', 'christoffel_batch', 'compute_all_terms', 'compute_all_terms_unchecked',
    'configuration', 'contact_compliance', 'contact_nodes', 'coriolis_matrix',
    'coriolis_transpose_times_v', 'dynamics', 'dynamics_batch', 'forward_dynamics', 'gravity', 'inverse_dynamics', 'inverse_dynamics_dv',
    'link_jacobian', 'link_placement', 'load_urdf', 'load_urdf_string', 'mass_matrix',
    'mass_matrix_derivative', 'momentum', 'observer_terms', 'transform_christoffel',
    'transform_dynamics',
]
