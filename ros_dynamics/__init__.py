"""ros_dynamics: rigid-body dynamics terms for model-based control (core library, no ROS).

    import ros_dynamics as rd
    model = rd.load_urdf('urdf/arm7.urdf')
    d = rd.dynamics(model, q, v)          # M, C (Christoffel-consistent), Mdot, g
    Gamma = rd.christoffel(model, q)      # Gamma[i, j, k], C[i, j] = sum_k Gamma[i, j, k] v[k]

Algorithms: Echeandia & Wensing (Coriolis matrix, Alg. 1; Christoffel symbols, Alg. 2),
Featherstone (RNEA, CRBA, sparse LTDL).  See CONVENTIONS.md for the public contract.
"""

from .api import (Dynamics, christoffel, christoffel_batch, coriolis_matrix,
                  coriolis_transpose_times_v, dynamics, dynamics_batch, forward_dynamics, gravity,
                  inverse_dynamics, link_jacobian, link_placement, mass_matrix,
                  mass_matrix_derivative, momentum, observer_terms)
from .model import Model, attach_payload
from .robots import bundled_urdf
from .urdf import load_urdf

__all__ = [
    'Dynamics', 'Model', 'attach_payload', 'bundled_urdf', 'christoffel', 'christoffel_batch',
    'coriolis_matrix', 'coriolis_transpose_times_v', 'dynamics', 'dynamics_batch',
    'forward_dynamics', 'gravity', 'inverse_dynamics', 'link_jacobian', 'link_placement',
    'load_urdf', 'mass_matrix', 'mass_matrix_derivative', 'momentum', 'observer_terms',
]

from .observer import (ContactDetector, ContactState, MomentumObserver,  # noqa: E402
                       calibrate_thresholds, estimate_contact_wrench, friction_torque)
__all__ += ['ContactDetector', 'ContactState', 'MomentumObserver', 'calibrate_thresholds',
            'estimate_contact_wrench', 'friction_torque']

__version__ = '0.1.0'

from .coordinates import MimicCoordinates, transform_christoffel, transform_dynamics  # noqa: E402
__all__ += ['MimicCoordinates', 'transform_christoffel', 'transform_dynamics']
