"""Vectorized range maxima over one array (a sparse table), for per-point window maxima."""

from __future__ import annotations

import numpy as np


def range_max(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``max(values[..., lo[i] : hi[i] + 1])`` for every i; needs ``lo <= hi``. ``values`` may
    hold several rows (the ranges run along its last axis), answered together.

    Builds the levels of a sparse table only up to the longest range asked for, so the cost is
    O(m log L) for m ranges of length at most L, then answers every range with two lookups.

    Examples
    --------
    >>> range_max(np.array([3.0, 1.0, 4.0, 1.0, 5.0]), np.array([0, 1, 3]), np.array([1, 3, 3]))
    array([3., 4., 1.])
    >>> range_max(np.array([[3.0, 1.0, 4.0], [-3.0, -1.0, -4.0]]), np.array([1]), np.array([2]))
    array([[ 4.],
           [-1.]])
    """
    if len(lo) == 0:
        return np.empty((*values.shape[:-1], 0), dtype=values.dtype)
    if not lo.any():
        return np.maximum.accumulate(values, axis=-1)[..., hi]
    level = np.frexp(hi - lo + 1)[1] - 1  # floor(log2(length))
    top, m = int(level.max()), values.shape[-1]
    table = np.empty((*values.shape[:-1], top + 1, m), dtype=values.dtype)
    table[..., 0, :] = values
    for k in range(1, top + 1):  # level k: the maxima of the 2**k values from each index
        valid, step = m - (1 << k) + 1, 1 << (k - 1)
        below = table[..., k - 1, :]
        np.maximum(below[..., :valid], below[..., step : step + valid], out=table[..., k, :valid])
    # two lookups per range (flat indices: much cheaper than indexing the table by two arrays)
    rows = np.arange(table.size // ((top + 1) * m)).reshape(*values.shape[:-1], 1) * (top + 1)
    start = (rows + level) * m
    flat = table.reshape(-1)
    return np.maximum(flat[start + lo], flat[start + hi - (1 << level) + 1])
