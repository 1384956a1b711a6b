"""What width policies that knew the whole replay could do: a floor, and static widths (§1.2).

:func:`hindsight_static_widths` picks fixed widths from every object's real message counts at
many widths (a Lagrangian search over the shared constraints), the best static allocation
one could find after the fact: App. F's optimum needs a random-walk model, this does not.

The floor is under the messages of *any* bound-filter width policy, static or adaptive.

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

import itertools
import math
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from tsmon.protocols.filters.precision import initial_widths
from tsmon.sim.filters.static import filter_scan

#: Multipliers tried per shared constraint by :func:`hindsight_static_widths` (besides 0).
PRICES = 40


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


def hindsight_static_widths(
    series: Sequence[np.ndarray], k: sp.spmatrix, budgets: np.ndarray, points: int = 48
) -> np.ndarray:
    """Fixed widths meeting ``K @ W ≤ β`` that send few messages on these very ``series``.

    Each object's messages are counted (:func:`~tsmon.sim.filters.baselines.filter_scan`) at
    0, its uniform width and ``points`` widths up to its widest (:func:`widest_widths`); for
    multipliers ``λ_j ≥ 0`` of the constraints over several objects (a grid per constraint up
    to two of them, one shared multiplier above) each object takes the width minimising
    ``messages + Σ_j λ_j·|K_i,j|·W/β_j``; the best allocation that meets every constraint, or
    the uniform one if better, is then widened object by object while that saves messages and
    keeps every constraint. Not the exact optimum (the search is on a grid and the Lagrangian
    finds hull points), but a static allocation with full hindsight.

    Examples
    --------
    >>> k = sp.csr_matrix(np.array([[1.0, 1.0]]))      # W_a + W_b <= 2
    >>> calm, noisy = np.zeros(50), np.tile([0.0, 0.8], 25)   # uniform W = 1: 1 + 50 messages
    >>> w = hindsight_static_widths([calm, noisy], k, np.array([2.0]))
    >>> [int(filter_scan(v, x).sum()) for v, x in zip([calm, noisy], w)], float(w[0])
    ([1, 1], 0.0)
    """
    k = sp.csr_matrix(k, dtype=float)
    budgets = np.asarray(budgets, dtype=float)
    widest, uniform = widest_widths(k, budgets), initial_widths(k, budgets)
    queried = np.isfinite(widest)
    grids, counts = [], []
    for i, v in enumerate(series):
        if not queried[i]:
            grids.append(np.array([np.inf]))
            counts.append(np.zeros(1))
            continue
        grid = np.unique(np.r_[0.0, np.geomspace(1e-3, 1.0, points) * widest[i], uniform[i]])
        grids.append(grid)
        counts.append(np.array([filter_scan(v, g).sum() for g in grid], dtype=float))
    multi = np.flatnonzero(np.diff(k.indptr) > 1)
    shared = (k[multi].toarray() / budgets[multi, None])[:, queried]  # |K_i,j| / β_j
    lam = np.r_[0.0, np.geomspace(1e-2, 1e7, PRICES)]
    if len(multi) <= 2:
        combos = np.array(list(itertools.product(lam, repeat=len(multi))))
    else:
        combos = np.repeat(lam[:, None], len(multi), axis=1)
    prices = combos @ shared  # combination × queried object
    chosen = np.zeros((len(combos), int(queried.sum())), dtype=int)
    for col, i in enumerate(np.flatnonzero(queried)):
        chosen[:, col] = np.argmin(counts[i][None, :] + prices[:, col, None] * grids[i], axis=1)
    q_grids = [grids[i] for i in np.flatnonzero(queried)]
    q_counts = [counts[i] for i in np.flatnonzero(queried)]
    widths = np.array([[g[j] for g, j in zip(q_grids, row, strict=True)] for row in chosen])
    totals = np.array([sum(c[j] for c, j in zip(q_counts, row, strict=True)) for row in chosen])
    feasible = np.all(widths @ shared.T <= 1 + 1e-9, axis=1)
    best = np.full(len(series), np.inf)
    start = uniform[queried]
    start_total = sum(_count_at(c, g, w) for c, g, w in zip(q_counts, q_grids, start, strict=True))
    if feasible.any() and totals[feasible].min() < start_total:
        start = widths[np.flatnonzero(feasible)[np.argmin(totals[feasible])]]
    best[queried] = _widen(start, q_grids, q_counts, k[:, queried], budgets)
    return best


def _count_at(counts: np.ndarray, grid: np.ndarray, width: float) -> float:
    """Messages at ``width``, one of ``grid``'s widths."""
    return float(counts[np.searchsorted(grid, width)])


def _widen(
    widths: np.ndarray,
    grids: list[np.ndarray],
    counts: list[np.ndarray],
    k: sp.csr_matrix,
    budgets: np.ndarray,
) -> np.ndarray:
    """Each object in turn takes the narrowest grid width with its fewest messages that keeps
    every constraint (twice over the objects): fewer messages, or as many in less width."""
    w = widths.copy()
    for _ in range(2):
        for i, (grid, c) in enumerate(zip(grids, counts, strict=True)):
            rest = budgets - k @ w + k[:, i].toarray().ravel() * w[i]
            col = k[:, i].toarray().ravel()
            room = np.min(rest[col > 0] / col[col > 0])
            ok = grid <= room * (1 + 1e-9)
            j = np.flatnonzero(ok)[np.argmin(c[ok])]
            now = _count_at(c, grid, w[i])
            if c[j] < now or (c[j] == now and grid[j] < w[i]):
                w[i] = grid[j]
    return w
