"""Contact thresholds from residuals recorded in contact-free motion (offline: the observer's
threshold calibration; the node only compares the residual against what this returns)."""

import numpy as np

__all__ = ['calibrate_thresholds']


def calibrate_thresholds(residuals, margin=1.5, floor=0.1):
    """Per-joint thresholds from residuals recorded in contact-free motion.

    ``threshold_i = max(floor, margin * max_t |r_i(t)|)``: run the task (or a representative
    motion) without contact, with the same observer settings, and pass the residual history
    (T, nv).  The margin covers what the recording did not see; raise it, or the floor, for a
    lower false-positive rate at the cost of a longer detection delay.
    """
    R = np.asarray(residuals, dtype=float)
    if R.ndim != 2 or R.shape[0] == 0:
        raise ValueError('residuals must be a (T, nv) array with T >= 1')
    if not np.all(np.isfinite(R)):
        raise ValueError('residuals must be finite')
    return np.maximum(float(floor), float(margin) * np.max(np.abs(R), axis=0))
