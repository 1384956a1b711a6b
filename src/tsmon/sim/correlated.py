"""Experiments on correlated aggregates (Gehrke, Korn & Srivastava, SIGMOD 2001): the exact
two-pass answer (§2.3), the paper's error measure and its MULTIFRAC data (§3.2.1)."""

from __future__ import annotations

import numpy as np

from tsmon.core.correlated import CorrelatedQuery

__all__ = ["exact_correlated", "multifractal", "rmse"]


def exact_correlated(
    query: CorrelatedQuery, x: np.ndarray, y: np.ndarray | None = None, window: int | None = None
) -> np.ndarray:
    """``S_exact[i]`` (§2.3) for every step: recomputed from the raw scope, O(n * scope)."""
    x = np.asarray(x, dtype=np.float64)
    y = x if y is None else np.asarray(y, dtype=np.float64)
    starts = (
        np.zeros(len(x), int) if window is None else np.maximum(np.arange(len(x)) - window + 1, 0)
    )
    return np.array([query.evaluate(x[s : i + 1], y[s : i + 1]) for i, s in enumerate(starts)])


def rmse(out: np.ndarray, exact: np.ndarray) -> float:
    """Root mean squared error over the steps given, the paper's quality measure (§2.3)."""
    diff = np.asarray(out, dtype=np.float64) - np.asarray(exact, dtype=np.float64)
    return float(np.sqrt(np.mean(diff**2))) if diff.size else 0.0


def multifractal(n: int, levels: int = 16, p: float = 0.8, seed: int = 0) -> np.ndarray:
    """``n`` values in ``[0, 1)`` of a binomial multifractal, the paper's MULTIFRAC (§3.2.1).

    Each level splits every interval in halves and gives ``p`` of its points to the left half
    (the "80-20 law" for ``p = 0.8``), ``levels`` times; points are uniform within the finest
    cells and returned in random order, as the paper's synthetic sets.

    Examples
    --------
    >>> v = multifractal(10_000, levels=10)
    >>> print(round(float(np.mean(v < 0.5)), 3), round(float(np.mean(v < 0.25)), 3))
    0.8 0.64
    """
    counts = np.array([n])
    for _ in range(levels):
        left = np.round(counts * p).astype(np.int64)
        counts = np.stack([left, counts - left], axis=1).ravel()
    rng = np.random.default_rng(seed)
    cells = np.repeat(np.arange(counts.size), counts)
    return rng.permutation((cells + rng.random(n)) / counts.size)
