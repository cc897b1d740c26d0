"""Estimation on top of the core: the generalized-momentum contact observer, detection,
isolation and contact-wrench estimation, and the forces at known contact frames."""

from .contact_forces import ContactForceEstimator, ContactForces
from .observer import (ContactDetector, ContactState, MomentumObserver, estimate_contact_wrench,
                       friction_torque)

__all__ = ['ContactForceEstimator', 'ContactForces', 'ContactDetector', 'ContactState', 'MomentumObserver',
           'estimate_contact_wrench', 'friction_torque']
