"""The core library: model, spatial algebra, the algorithms (one module each) and the public API.

Imports numpy and numba only: nothing here depends on ROS, estimation or simulation.  Importing
it compiles nothing: each kernel is compiled (or loaded from numba's disk cache) at its first
call (jit.py; ``python -m ros_dynamics.warmup`` compiles them all ahead of time).

Modules: ``model`` (the frozen tree), ``urdf`` (the loader), ``data`` (the workspace),
``validation`` (the input checks), ``kernels`` (the compiled entry points), ``api`` (the public
functions), ``coordinates`` (output coordinates), and one module per algorithm; ``task_space`` (task frames and the result of
:func:`task_space`).
"""

from . import jit  # noqa: F401  (first: keys the kernels' disk cache on all core sources)

from . import configuration
from .api import (christoffel, christoffel_batch, compute_all_terms, compute_all_terms_unchecked,
                  contact_compliance, contact_nodes, coriolis_matrix, coriolis_transpose_times_v,
                  dynamics, dynamics_batch, forward_dynamics, gravity, inverse_dynamics,
                  link_jacobian, link_placement, mass_matrix, mass_matrix_derivative, momentum,
                  observer_terms, task_frames, task_space, task_space_after_terms)
from .bundled import bundled_urdf
from .coordinates import (BASE_DOF_NAMES, CENTER_OF_MASS_NAMES, COORDINATES,
                          CenterOfMassCoordinates, Coordinates, JointCoordinates,
                          MimicCoordinates, Output, output_coordinates, transform_christoffel,
                          transform_dynamics)
from .data import Data, Dynamics
from .derivatives import (forward_dynamics_derivatives, forward_dynamics_derivatives_batch,
                          inverse_dynamics_derivatives, inverse_dynamics_derivatives_batch,
                          inverse_dynamics_dv)
from .model import Model, attach_payload
from .task_space import TaskFrames, TaskSpace
from .urdf import URDFWarning, load_urdf, load_urdf_string
from .validation import check_configuration, check_state, check_vector

__all__ = [
    'BASE_DOF_NAMES', 'CENTER_OF_MASS_NAMES', 'COORDINATES', 'CenterOfMassCoordinates',
    'Coordinates', 'Data', 'Dynamics', 'JointCoordinates', 'MimicCoordinates', 'Model', 'Output',
    'URDFWarning', 'attach_payload', 'bundled_urdf', 'check_configuration', 'check_state',
    'check_vector', 'christoffel', 'christoffel_batch', 'compute_all_terms',
    'compute_all_terms_unchecked', 'configuration', 'contact_compliance', 'contact_nodes',
    'coriolis_matrix', 'coriolis_transpose_times_v', 'dynamics', 'dynamics_batch',
    'forward_dynamics', 'forward_dynamics_derivatives', 'forward_dynamics_derivatives_batch',
    'gravity', 'inverse_dynamics', 'inverse_dynamics_derivatives',
    'inverse_dynamics_derivatives_batch', 'inverse_dynamics_dv', 'link_jacobian',
    'link_placement', 'load_urdf', 'load_urdf_string', 'mass_matrix', 'mass_matrix_derivative',
    'momentum', 'observer_terms', 'output_coordinates', 'TaskFrames', 'TaskSpace', 'task_frames',
    'task_space', 'task_space_after_terms', 'transform_christoffel', 'transform_dynamics',
]
