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
* :mod:`ros_dynamics.estimation`: the generalized-momentum contact observer, and the forces at
  known contact frames from its residual.
* :mod:`ros_dynamics.identification`: offline, from recordings: friction, payload, contact
  thresholds, the whole model's inertial parameters, exciting trajectories, the ``calibrate``
  command.
* :mod:`ros_dynamics.simulation`: the simulator (ground truth for the observer, plant for control).
* :mod:`ros_dynamics.ros`: the ROS 2 nodes, thin adapters over the above (imported only by them).
* :mod:`ros_dynamics.testing`: random physically valid robots for tests and benchmarks.
"""

import importlib

__version__ = '0.1.0'

_OBSERVER = ('ContactDetector', 'ContactState', 'MomentumObserver', 'estimate_contact_wrench',
             'friction_torque')
_THRESHOLDS = ('calibrate_thresholds',)
_CONTACT_FORCES = ('ContactForceEstimator', 'ContactForces')
_SUBPACKAGES = ('core', 'estimation', 'identification', 'simulation', 'control', 'ros', 'testing')


def __getattr__(name):
    """The public API (``rd.dynamics``, ``rd.MomentumObserver``, ...), imported at its first
    use: ``import ros_dynamics`` itself loads neither NumPy nor numba, so that an executable of
    ``ros_dynamics.ros`` can install its signal handlers before those imports (PEP 562)."""
    if name == '__all__':
        from .core import __all__ as core_all
        return list(core_all) + list(_OBSERVER) + list(_CONTACT_FORCES) + list(_THRESHOLDS)
    if name in _SUBPACKAGES:
        return importlib.import_module(f'{__name__}.{name}')
    if name in _OBSERVER:
        from .estimation import observer as source
    elif name in _CONTACT_FORCES:
        from .estimation import contact_forces as source
    elif name in _THRESHOLDS:
        from .identification import thresholds as source
    elif not name.startswith('__'):
        from . import core as source
    else:
        raise AttributeError(name)
    try:
        value = getattr(source, name)
    except AttributeError:
        raise AttributeError(f"module 'ros_dynamics' has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__getattr__('__all__')))
