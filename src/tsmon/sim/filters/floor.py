"""A floor under the messages of *any* bound-filter width policy, static or adaptive (§1.2).

Every query constraint ``Σ_i |K_i,j|·W_i ≤ β_j`` holds at every moment, so no object can ever
have a width above ``β_j/|K_i,j|`` for any constraint ``j`` it is in (:func:`widest_widths`: the
width it would get if every other object had width 0). Between two values an object sends, its
bound stays centred on the first of them (§1.2: ``[V − W/2, V + W/2]``), so every value of such a
run lies within half that widest width of the run's first value. :func:`floor_messages` counts
the fewest runs the values split into under that rule, by dynamic programming over where each
run may start: no width schedule, even one that knew the future, sends fewer. Growth and shrink
messages only add to it. Summed over objects it bounds what adapting widths can gain over
uniform static widths on a workload (``benchmarks/filters/bench_nab_folders.py``).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp


def widest_widths(k: sp.spmatrix, budgets: np.ndarray) -> np.ndarray:
    """Per object, ``min_j β_j/|K_i,j|`` over its constraints (``inf`` in none).

    Examples
    --------
    >>> k = sp.csr_matrix(np.array([[1.0, 1.0, 0.0], [0.0, 2.0, 0.0]]))
    >>> widest_widths(k, np.array([4.0, 3.0])).tolist()
    [4.0, 1.5, inf]
    """
    coo = sp.coo_matrix(k)
    widest = np.full(coo.shape[1], np.inf)
    np.minimum.at(widest, coo.col, np.asarray(budgets, dtype=float)[coo.row] / coo.data)
    return widest


def floor_messages(values: np.ndarray, max_width: float) -> int:
    """The fewest values a bound filter of width at most ``max_width`` at all times sends.

    The first value is always sent (none when ``max_width`` is ``inf``: the object is in no
    query). A run that starts at a sent value ``v_s`` can last until just before the first later
    value farther than ``max_width/2`` from ``v_s`` (the float comparison of
    :func:`~tsmon.sim.filters.baselines.filter_scan`), and the next run may start anywhere up to
    that value (a narrower width ends the run sooner). The fewest runs are found backwards:
    ``g[s] = 1 + min(g[s+1 … reach(s)])``.

    Examples
    --------
    >>> v = np.array([-1.0, 0.0, 1.0, -1.0, -1.0])
    >>> floor_messages(v, 2.0)  # width 2 throughout sends -1, 1, -1; a narrower one sends -1, 0
    2
    """
    v = np.asarray(values, dtype=float)
    n = len(v)
    if n == 0 or math.isinf(max_width):
        return 0
    half = max_width / 2
    g = np.zeros(n + 1)
    for s in range(n - 1, -1, -1):
        reach = _reach(v, s, half)
        g[s] = 1.0 + g[s + 1 : reach + 1].min()
    return int(g[0])


def _reach(v: np.ndarray, s: int, half: float) -> int:
    """The first index after ``s`` whose value leaves ``[v_s − half, v_s + half]`` (or ``n``)."""
    n, lo, hi = len(v), v[s] - half, v[s] + half
    start, chunk = s + 1, 64
    while start < n:
        part = v[start : start + chunk]
        out = np.flatnonzero((part < lo) | (part > hi))
        if len(out):
            return start + int(out[0])
        start, chunk = start + chunk, chunk * 2
    return n
