"""Stretches of a recording: runs of a mask and the samples inside given time spans (no ROS)."""

import numpy as np

__all__ = ['in_spans', 'runs']


def runs(mask):
    """(start, stop) index pairs of the runs of True in ``mask``."""
    m = np.concatenate([[False], np.asarray(mask, bool), [False]])
    d = np.flatnonzero(np.diff(m.astype(int)))
    return list(zip(d[::2], d[1::2]))


def in_spans(t, spans, pad=0.0):
    """Mask of the times ``t`` inside one of the (start, end) ``spans``, widened by ``pad``."""
    mask = np.zeros(len(t), dtype=bool)
    for a, b in spans:
        mask |= (t >= a - pad) & (t <= b + pad)
    return mask
