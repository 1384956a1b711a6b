"""Vectorized range maxima over one array (a sparse table), for per-point window maxima."""

from __future__ import annotations

import numpy as np


def range_max(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``max(values[..., lo[i] : hi[i] + 1])`` for every i; needs ``lo <= hi``. ``values`` may
    hold several rows (the ranges run along its last axis), answered together.

    Builds the levels of a sparse table one at a time, only up to the longest range asked for,
    answering the ranges of each level (two lookups each) before the next replaces it: O(m log L)
    time for m values and ranges of length at most L, and O(m) memory.

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
        return np.maximum.accumulate(values, axis=-1).take(hi, axis=-1)
    level = np.frexp(hi - lo + 1)[1] - 1  # floor(log2(length))
    order = np.argsort(level, kind="stable")
    bounds = np.searchsorted(level[order], np.arange(int(level.max()) + 2))
    rows = values.reshape(-1, values.shape[-1])
    out = np.empty((len(rows), len(lo)), dtype=values.dtype)
    table = rows  # level k: the maxima of the 2**k values from each index
    for k in range(len(bounds) - 1):
        at = order[bounds[k] : bounds[k + 1]]  # the ranges answered from level k
        if len(at):
            left, right = lo[at], hi[at] - (1 << k) + 1
            for row, into in zip(table, out, strict=True):  # 1-D gathers: 2-D ones are slow
                into[at] = np.maximum(row.take(left), row.take(right))
        if k + 2 < len(bounds):
            table = np.maximum(table[:, : -(1 << k)], table[:, 1 << k :])
    return out.reshape(*values.shape[:-1], len(lo))
