"""ros_dynamics: rigid-body dynamics terms for model-based control.

    import ros_dynamics as rd
    model = rd.load_urdf('urdf/arm7.urdf')
    d = rd.dynamics(model, q, v)          # M, C (Christoffel-consistent), Mdot, g
    Gamma = rd.christoffel(model, q)      # Gamma[i, j, k], C[i, j] = sum_k Gamma[i, j, k] v[k]

Subpackages, by concern:

* :mod:`ros_dynamics.core`: the model, spatial algebra, one module per algorithm (Echeandia &
  Wensing's Algorithms 1-2; Featherstone's RNEA, CRBA, sparse LTDL), the public API and the
  output coordinates.  No ROS.  Importing compiles nothing: kernels are compiled (or loaded
  from numba's disk cache) at their first call; ``python -m ros_dynamics.warmup`` compiles
  them all ahead of time.
* :mod:`ros_dynamics.estimation`: the generalized-momentum contact observer.
* :mod:`ros_dynamics.simulation`: the simulator (ground truth for the observer, plant for control).
* :mod:`ros_dynamics.ros`: the ROS 2 nodes, thin adapters over the above (imported only by them).
* :mod:`ros_dynamics.testing`: random physically valid robots for tests and benchmarks.
"""

from .core import (BASE_DOF_NAMES, CENTER_OF_MASS_NAMES, COORDINATES, CenterOfMassCoordinates,
                   Coordinates, Data, Dynamics, JointCoordinates, MimicCoordinates, Model, Output,
                   URDFWarning, attach_payload, bundled_urdf, check_configuration, check_state,
                   check_vector, christoffel, christoffel_batch, compute_all_terms,
                   compute_all_terms_unchecked, configuration, contact_compliance, contact_nodes,
                   coriolis_matrix, coriolis_transpose_times_v, dynamics, dynamics_batch,
                   forward_dynamics, gravity, inverse_dynamics, inverse_dynamics_dv,
                   link_jacobian, link_placement, load_urdf, load_urdf_string, mass_matrix,
                   mass_matrix_derivative, momentum, observer_terms, output_coordinates,
                   transform_christoffel, transform_dynamics)
from .core import __all__ as _core_all
from .estimation.observer import (ContactDetector, ContactState, MomentumObserver,
                                  calibrate_thresholds, estimate_contact_wrench, friction_torque)

__all__ = list(_core_all) + ['ContactDetector', 'ContactState', 'MomentumObserver',
                             'calibrate_thresholds', 'estimate_contact_wrench', 'friction_torque']
__version__ = '0.1.0'
