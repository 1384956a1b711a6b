"""Decomposing a query into sub-queries over a site's cached segments (Bulut & Singh, §3, Fig. 8a).

"If the message is a query then it is decomposed into sub-queries over different data segments.
If the resulting error from the different approximations is within the specified error bound
then the read count is incremented." Every position of ``(I, W, delta)`` (§2.1) is answered by
the midpoint of a covering segment's block, off by at most the block's half width, so the
query's error is at most ``sum_i |W_i| hw_i``.

Which segments: first the Fig. 3(b) cover from the *coarsest* start level whose bound is within
``delta`` (coarse segments change least often, §2.3, so their replicas are the cheapest to keep
fresh); failing that, per position the tightest covering segment (the smallest bound any cover
of these segments has, as the bound is a sum over positions).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from tsmon.protocols.replication.segments import SLOTS, Approx, Segment

__all__ = ["Decomposition", "decompose"]


@dataclass(frozen=True)
class Decomposition:
    """A query answered from segments: ``value`` within ``bound`` of the exact answer.

    ``satisfied`` is ``bound <= delta``; ``used`` are the segments whose read counts a
    satisfied query increments (Fig. 8a); ``bound`` is ``inf`` when some position is covered
    by no segment.
    """

    value: float
    bound: float
    satisfied: bool
    used: tuple[Segment, ...]


def _first_covering(cov: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per position, the first row in ``order`` that covers it, and a covered mask."""
    cs = cov[order]
    first = cs.argmax(axis=0)
    return order[first], cs[first, np.arange(cov.shape[1])]


def decompose(
    rows: Mapping[Segment, Approx],
    count: int,
    positions: ArrayLike,
    weights: ArrayLike,
    delta: float | None,
) -> Decomposition:
    """Answer ``(positions, weights, delta)`` at ``count`` from the segments ``rows``.

    ``delta=None`` asks for the tightest answer. Positions of weight 0 need no segment.

    Examples
    --------
    Table 1's directory at a count where level 1 and 2 are up to date (``count = 16``):

    >>> rows = {Segment(0, "R"): Approx((25.0,), (45.0,)),
    ...         Segment(0, "L"): Approx((30.0,), (40.0,)),
    ...         Segment(1, "L"): Approx((2.0,), (7.0,)),
    ...         Segment(2, "L"): Approx((4.0,), (10.0,))}
    >>> d = decompose(rows, 16, [3], [1.0], delta=8.0)  # Q_0 of §3 asks [3] within 20; 8 here
    >>> d.value, d.bound, d.satisfied, d.used
    (35.0, 5.0, True, (Segment(level=0, kind='L'),))
    >>> decompose(rows, 16, [3, 12], [1.0, 1.0], delta=4.0).satisfied  # 5 + 3 > 4
    False
    """
    p = np.asarray(positions, dtype=np.int64).reshape(-1)
    w = np.asarray(weights, dtype=float).reshape(-1)
    if p.shape != w.shape:
        raise ValueError(f"positions and weights must have equal length, got {p.shape}, {w.shape}")
    keep = w != 0
    p, w = p[keep], w[keep]
    if not len(p):
        return Decomposition(0.0, 0.0, True, ())
    segs = sorted(rows, key=Segment.order)
    if not segs:
        return Decomposition(math.nan, math.inf, False, ())
    n = len(segs)
    start = np.array([s.start(count) for s in segs], dtype=np.int64)
    size = np.array([s.size for s in segs], dtype=np.int64)
    level = np.array([s.level for s in segs], dtype=np.int64)
    slot = np.array([SLOTS.index(s.kind) for s in segs], dtype=np.int64)
    nblk = np.array([rows[s].entries for s in segs], dtype=np.int64)
    mid = np.zeros((n, int(nblk.max())))
    hw = np.zeros_like(mid)
    for i, s in enumerate(segs):
        mid[i, : nblk[i]], hw[i, : nblk[i]] = rows[s].midpoints(), rows[s].half_widths()
    rel = p[None, :] - start[:, None]
    cov = (rel >= 0) & (rel < size[:, None])
    blk = np.clip(rel // (size // nblk)[:, None], 0, (nblk - 1)[:, None])
    ri = np.arange(n)[:, None]
    err = np.where(cov, hw[ri, blk], np.inf)  # per (segment, position) half width
    val = mid[ri, blk]
    aw, cols = np.abs(w), np.arange(len(p))

    def result(chosen: np.ndarray, satisfied: bool) -> Decomposition:
        bound = float(aw @ err[chosen, cols])
        value = float(w @ val[chosen, cols]) if math.isfinite(bound) else math.nan
        used = tuple(segs[i] for i in sorted(set(chosen.tolist())))
        return Decomposition(value, bound, satisfied, used)

    if delta is not None:
        if not delta >= 0:
            raise ValueError(f"delta must be a precision >= 0, got {delta}")
        for s in sorted(set(level.tolist()), reverse=True):  # coarsest start level first
            finer = level < s
            order = np.lexsort((slot, np.where(finer, -level, level), finer))
            chosen, covered = _first_covering(cov, order)
            if covered.all() and aw @ err[chosen, cols] <= delta:
                return result(chosen, True)
    coarse_first = np.lexsort((slot, -level))
    chosen = coarse_first[err[coarse_first].argmin(axis=0)]
    tight = result(chosen, True)
    return result(chosen, delta is None or tight.bound <= delta)
