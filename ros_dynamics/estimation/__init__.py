"""Estimation on top of the core: the generalized-momentum contact observer, detection,
isolation and contact-wrench estimation."""

from .observer import (ContactDetector, ContactState, MomentumObserver, calibrate_thresholds,
                       estimate_contact_wrench, friction_torque)

__all__ = ['ContactDetector', 'ContactState', 'MomentumObserver', 'calibrate_thresholds',
           'estimate_contact_wrench', 'friction_torque']
