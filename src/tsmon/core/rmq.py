"""Vectorized range maxima over one array (a sparse table), for per-point window maxima."""

from __future__ import annotations

import numpy as np


def range_max(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``max(values[lo[i] : hi[i] + 1])`` for every i; needs ``lo <= hi``.

    Builds the levels of a sparse table only up to the longest range asked for, so the cost is
    O(m log L) for m ranges of length at most L.

    Examples
    --------
    >>> range_max(np.array([3.0, 1.0, 4.0, 1.0, 5.0]), np.array([0, 1, 3]), np.array([1, 3, 3]))
    array([3., 4., 1.])
    """
    if len(lo) == 0:
        return np.empty(0, dtype=values.dtype)
    if not lo.any():
        return np.maximum.accumulate(values)[hi]
    length = hi - lo + 1
    level = np.frexp(length.astype(np.float64))[1] - 1  # floor(log2(length)), exact for ints
    out = np.empty(len(lo), dtype=values.dtype)
    table = values
    for k in range(int(level.max()) + 1):
        if k:
            step = 1 << (k - 1)
            table = np.maximum(table[:-step], table[step:])
        at = level == k
        if at.any():
            out[at] = np.maximum(table[lo[at]], table[hi[at] - (1 << k) + 1])
    return out
