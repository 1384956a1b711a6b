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


def crossing_max(
    values: np.ndarray, lo: np.ndarray, cut: np.ndarray, count: np.ndarray
) -> np.ndarray:
    """``range_max(values, lo, hi)`` for ranges that each cross their segment's cut: segment
    ``i`` has ``count[i]`` ranges (consecutive in ``lo``), ending at ``cut[i]``, ``cut[i] + 1``,
    ... and all starting before ``cut[i]`` (windows longer than the points just appended).

    Each maximum is that of a suffix before the cut and a prefix from it, from running maxima:
    O(m) for m values instead of the sparse table's O(m log L). Equal values are equal bits,
    except zeros (``0.0`` and ``-0.0`` tie, and the order of comparisons picks one) and NaNs:
    ranges whose maximum is one are answered by :func:`range_max`, so every result is bit for
    bit the sparse table's.

    Examples
    --------
    >>> crossing_max(np.array([3.0, 1.0, 4.0, 1.0, 5.0]), np.array([0, 1, 1]), np.array([2]),
    ...              np.array([3]))
    array([4., 4., 5.])
    """
    rows = values.reshape(-1, values.shape[-1])
    heads = np.concatenate(([0], np.cumsum(count)[:-1]))
    first, last = np.minimum.reduceat(lo, heads), np.maximum.reduceat(lo, heads)
    room = last - first + 1  # the suffix maxima each segment's ranges start at
    at = np.concatenate(([0], np.cumsum(room)[:-1]))
    suffix = np.empty((len(rows), int(room.sum())), dtype=values.dtype)
    prefix = np.empty((len(rows), len(lo)), dtype=values.dtype)
    bounds = zip(*(v.tolist() for v in (first, last, cut, count, at, heads)), strict=True)
    for a, b, c, k, s, h in bounds:  # the running maxima of each segment, back and forth
        back = suffix[:, s : s + b + 1 - a][:, ::-1]
        np.maximum.accumulate(rows[:, a : b + 1][:, ::-1], axis=1, out=back)
        np.maximum.accumulate(rows[:, c : c + k], axis=1, out=prefix[:, h : h + k])
    # the values between each segment's last start and its cut are in all its ranges
    between = np.maximum.reduceat(rows, np.stack((last + 1, cut), axis=1).reshape(-1), axis=1)
    between = between[:, ::2]
    between[:, last + 1 == cut] = -np.inf  # none
    np.maximum(suffix, np.repeat(between, room, axis=1), out=suffix)
    starts = lo - np.repeat(first - at, count)
    out = np.empty_like(prefix)
    for row, pre, into in zip(suffix, prefix, out, strict=True):  # 1-D takes: faster
        np.maximum(row.take(starts), pre, out=into)
    redo = np.flatnonzero(~(np.abs(out) > 0).all(axis=0))  # zeros and NaN
    if len(redo):
        hi = np.arange(len(lo)) + np.repeat(cut - heads, count)
        out[:, redo] = range_max(rows, lo[redo], hi[redo])
    return out.reshape(*values.shape[:-1], len(lo))
