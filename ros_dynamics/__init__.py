"""ros_dynamics: rigid-body dynamics terms for model-based control.

    import ros_dynamics as rd
    model = rd.load_urdf('urdf/arm7.urdf')
    d = rd.dynamics(model, q, v)          # M, C (Christoffel-consistent), Mdot, g
    Gamma = rd.christoffel(model, q)      # Gamma[i, j, k], C[i, j] = sum_k Gamma[i, j, k] v[k]

Subpackages, by concern:

* :mod:`ros_dynamics.core`: the model, spatial algebra, one module per algorithm (Echeandia &
  Wensing's Algorithms 1-2; Featherstone's RNEA, CRBA, sparse LTDL) and the public API.  No ROS.
* :mod:`ros_dynamics.estimation`: the generalized-momentum contact observer.
* :mod:`ros_dynamics.simulation`: the simulator (ground truth for the observer, plant for control).
* :mod:`ros_dynamics.ros`: the ROS 2 nodes, thin adapters over the above (imported only by them).
* :mod:`ros_dynamics.testing`: random physically valid robots for tests and benchmarks.

See CONVENTIONS.md for the public contract.
"""

from .core import *  # noqa: F401,F403
from .core import __all__ as _core_all
from .estimation import *  # noqa: F401,F403
from .estimation import __all__ as _estimation_all

__all__ = list(_core_all) + list(_estimation_all)
__version__ = '0.1.0'
