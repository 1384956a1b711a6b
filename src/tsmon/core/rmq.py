"""Vectorized range maxima over one array (a sparse table), for per-point window maxima."""

from __future__ import annotations

import numpy as np


def range_max(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``max(values[lo[i] : hi[i] + 1])`` for every i; needs ``lo <= hi``.

    Builds the levels of a sparse table only up to the longest range asked for, so the cost is
    O(m log L) for m ranges of length at most L, then answers every range with two lookups.

    Examples
    --------
    >>> range_max(np.array([3.0, 1.0, 4.0, 1.0, 5.0]), np.array([0, 1, 3]), np.array([1, 3, 3]))
    array([3., 4., 1.])
    """
    if len(lo) == 0:
        return np.empty(0, dtype=values.dtype)
    if not lo.any():
        return np.maximum.accumulate(values)[hi]
    level = np.frexp((hi - lo + 1).astype(np.float64))[1] - 1  # floor(log2(length))
    top = int(level.max())
    table = np.empty((top + 1, len(values)), dtype=values.dtype)
    table[0] = values
    for k in range(1, top + 1):
        step = 1 << (k - 1)
        np.maximum(table[k - 1, :-step], table[k - 1, step:], out=table[k, :-step])
        table[k, -step:] = table[k - 1, -step:]  # never read: ranges stay inside the array
    return np.maximum(table[level, lo], table[level, hi - (1 << level) + 1])
