"""SWAT queries (Bulut & Singh 2003, §2.4, Fig. 3b) and error bounds (§2.6) over a set of nodes.

A query is answered from *nodes*: segments of consecutive stream values, each summarised by
``k`` block averages (its first ``k`` Haar coefficients, §2.2) and, per block, the minimum and
maximum value. The ranges are the ``[d_L, d_H]`` approximations of §3 (Table 1); they make the
returned bounds guarantees, not estimates:

- ``range_bound``: ``sum_i |W_i| max(a_i - min_i, max_i - a_i)`` from the stored block ranges;
- ``eps_bound``: the §2.6 model, where consecutive values differ by at most ``eps``. A value at
  offset ``j`` of a block of ``m`` values is then within ``eps / m * sum_i |i - j|`` of the
  block average (``|j - (m - 1) / 2| eps`` for the paper's exact ramp).

Everything here works on a :class:`NodeTable`, so the same code serves the full tree
(:class:`tsmon.core.swat.SWAT`) and a client's partial copy
(:class:`tsmon.core.swat_copy.SwatCopy`, §3).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike

from tsmon.core.swat_nodes import KINDS, NodeTable

__all__ = [
    "Entries",
    "QueryResult",
    "RangeResult",
    "cover",
    "exponential_query_bound",
    "linear_query_bound",
]


@dataclass(frozen=True)
class Entries:
    """Per query entry: approximation ``avg``, block range ``lo..hi``, block size and offset."""

    avg: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    bsize: np.ndarray
    offset: np.ndarray
    code: np.ndarray  # 4 * level + kind index, for reporting the node set V of Fig. 3b

    def eps_dev(self, eps: float) -> np.ndarray:
        """§2.6 per-entry bound, ``eps / m * sum_i |i - j|`` at offset ``j`` of a block of ``m``."""
        m, j = self.bsize.astype(float), self.offset.astype(float)
        return eps / m * (j * (j + 1) / 2 + (m - 1 - j) * (m - j) / 2)


@dataclass(frozen=True)
class QueryResult:
    """Answer to an inner-product query ``(I, W, delta)`` (§2.1) with its error bounds.

    ``bound`` is the smaller of ``range_bound`` and ``eps_bound``; the exact answer lies in
    ``[lower, upper]``. ``satisfied`` tells whether ``bound <= delta``; ``start_level`` is the
    coarsest level the answer was taken from; ``nodes`` is the set ``V`` of Fig. 3b.
    """

    value: float
    bound: float
    range_bound: float
    eps_bound: float
    eps: float | None
    lower: float
    upper: float
    start_level: int
    satisfied: bool
    nodes: tuple[tuple[int, str], ...]


@dataclass(frozen=True)
class RangeResult:
    """Positions (back in time) answering a range query (§2.4).

    ``matches``: approximate value within ``value ± radius`` (the step function of §2.4 meets
    the rectangle); ``certain``: every value the bounds allow is inside, so the exact value is;
    ``possible``: some allowed value is inside. ``certain ⊆ exact ⊆ possible``.
    """

    matches: np.ndarray
    certain: np.ndarray
    possible: np.ndarray


def cover(table: NodeTable, positions: np.ndarray, start_level: int) -> tuple[Entries, np.ndarray]:
    """Fig. 3b: give each position the first node covering it, levels from ``start_level`` up.

    Nodes are visited in level order from ``start_level`` to the top and ``R -> S -> L`` within
    a level (Fig. 3b with ``start_level`` the lowest level); positions no such node covers take
    the nearest finer level, then pending pieces. Returns the entries and a covered mask.
    """
    p = np.asarray(positions, dtype=np.int64)
    if not len(table.level):  # nothing cached: nothing covered
        z = np.zeros(len(p), np.int64)
        return Entries(z * 0.0, z * 0.0, z * 0.0, z + 1, z, z), np.zeros(len(p), bool)
    cov = (table.start[:, None] <= p) & (p < (table.start + table.size)[:, None])
    finer = table.level < start_level
    order = np.lexsort((table.kind, np.where(finer, -table.level, table.level), finer))
    cs = cov[order]
    first = cs.argmax(axis=0)
    covered = cs[first, np.arange(len(p))]
    node = order[first]
    rel = p - table.start[node]
    bs = table.bsize[node]
    blk = np.clip(rel // bs, 0, table.avg.shape[1] - 1)
    code = 4 * table.level[node] + table.kind[node]
    entries = Entries(
        table.avg[node, blk], table.lo[node, blk], table.hi[node, blk], bs, rel % bs, code
    )
    return entries, covered


def summarize(
    e: Entries, weights: np.ndarray, eps: float | None, start_level: int, delta: float | None
) -> QueryResult:
    """Weighted answer and §2.6 bounds for entries already matched to nodes."""
    w = np.asarray(weights, dtype=float)
    aw = np.abs(w)
    value = float(w @ e.avg)
    range_bound = float(aw @ np.maximum(e.avg - e.lo, e.hi - e.avg))
    eps_bound = math.inf if eps is None else float(aw @ e.eps_dev(eps))
    bound = min(range_bound, eps_bound)
    pos = w >= 0
    rlo = float(w @ np.where(pos, e.lo, e.hi))
    rhi = float(w @ np.where(pos, e.hi, e.lo))
    codes = (np.flatnonzero(np.bincount(e.code + 4)) - 4).tolist()  # P pieces sit at level -1
    return QueryResult(
        value=value,
        bound=bound,
        range_bound=range_bound,
        eps_bound=eps_bound,
        eps=eps,
        lower=max(rlo, value - bound),
        upper=min(rhi, value + bound),
        start_level=start_level,
        satisfied=delta is None or bound <= delta,
        nodes=tuple((int(c) // 4, KINDS[int(c) % 4]) for c in codes),
    )


def search(
    entries_at: Callable[[int], Entries],
    levels: Sequence[int],
    weights: np.ndarray,
    delta: float | None,
    eps: float | None,
    entries_all: Callable[[np.ndarray], Entries | None] | None = None,
) -> QueryResult:
    """Answer from the coarsest start level whose guaranteed bound is within ``delta``.

    Why coarsest: coarse nodes change least often, so a client holding only them (§3) can
    answer without contacting the source. ``delta=None`` answers from the finest nodes (Fig.
    3b); when no level meets ``delta`` the finest answer is returned with ``satisfied=False``.
    ``entries_all``, if given, matches every start level at once (rows of 2-d entries) or
    returns None, and the levels are then tried in one vectorised pass.
    """
    if delta is None:
        return summarize(entries_at(levels[0]), weights, eps, levels[0], None)
    if not delta >= 0:
        raise ValueError(f"delta must be a precision >= 0, got {delta}; pass None for the finest")
    table = None if entries_all is None else entries_all(np.asarray(levels))
    if table is not None:
        aw = np.abs(np.asarray(weights, dtype=float))
        bound = np.maximum(table.avg - table.lo, table.hi - table.avg) @ aw
        if eps is not None:
            bound = np.minimum(bound, table.eps_dev(eps) @ aw)
        good = np.flatnonzero(bound <= delta)
        i = int(good[-1]) if good.size else 0
        row = Entries(*(getattr(table, f)[i] for f in Entries.__dataclass_fields__))
        return summarize(row, weights, eps, levels[i], delta)
    result = None
    for level in reversed(levels):
        result = summarize(entries_at(level), weights, eps, level, delta)
        if result.satisfied:
            return result
    assert result is not None
    return replace(result, satisfied=False)


def range_answer(
    e: Entries, positions: np.ndarray, value: float, radius: float, eps: float | None
) -> RangeResult:
    """§2.4 range query from matched entries: see :class:`RangeResult`."""
    dev = np.full(len(e.avg), np.inf) if eps is None else e.eps_dev(eps)
    dev = dev + 8 * np.finfo(float).eps * (np.abs(e.lo) + np.abs(e.hi))  # rounding of avg ± dev
    lo = np.maximum(e.lo, e.avg - dev)  # the block ranges are exact, the §2.6 interval not quite
    hi = np.minimum(e.hi, e.avg + dev)
    low, high = value - radius, value + radius
    p = np.asarray(positions)
    return RangeResult(
        matches=p[(e.avg >= low) & (e.avg <= high)],
        certain=p[(lo >= low) & (hi <= high)],
        possible=p[(hi >= low) & (lo <= high)],
    )


def check_query(
    indices: ArrayLike, weights: ArrayLike, available: int
) -> tuple[np.ndarray, np.ndarray]:
    """Validate an ``(I, W)`` pair against ``available`` positions; return them as arrays."""
    idx = np.asarray(indices, dtype=np.int64).reshape(-1)
    w = np.asarray(weights, dtype=float)
    w = w.reshape(-1) if w.ndim == 0 else w
    if idx.shape != w.shape or idx.ndim != 1:
        raise ValueError(
            f"indices and weights must be 1-d of equal length, got {idx.shape} and {w.shape}"
        )
    if len(idx) and (idx.min() < 0 or idx.max() >= available):
        raise ValueError(
            f"positions must lie in [0, {available - 1}] (0 = most recent), got "
            f"{int(idx.min())}..{int(idx.max())}; query only values still in the window"
        )
    return idx, w


def span(start: int, end: int | None, available: int) -> np.ndarray:
    """Positions ``start..end`` (``end`` None: the oldest available) of a range query."""
    end = available - 1 if end is None else end
    if end < start:
        raise ValueError(f"a range query needs start <= end, got {start} > {end}; swap them")
    return check_query(np.arange(start, end + 1), np.ones(end - start + 1), available)[0]


def exponential_query_bound(m: int, eps: float) -> float:
    """Eq. (2) of §2.6: error of an exponential query of length ``m``, ``2 eps`` per level.

    Examples
    --------
    >>> exponential_query_bound(8, 0.5)  # levels 0..3
    4.0
    """
    return 2.0 * eps * (math.ceil(math.log2(m)) + 1)


def linear_query_bound(m: int, eps: float) -> float:
    """Eq. (3) of §2.6: error of a linear query of length ``m``, ``4**l eps`` at level ``l``.

    Examples
    --------
    >>> linear_query_bound(4, 1.0)  # 1 + 4 + 16
    21.0
    """
    return eps * sum(4.0**level for level in range(math.ceil(math.log2(m)) + 1))
