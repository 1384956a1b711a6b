"""Correlated aggregates of a stream from one pass and a few histogram buckets.

Gehrke, Korn and Srivastava, "On Computing Correlated Aggregates Over Continual Data Streams"
(SIGMOD 2001), the OCCA paper. A correlated aggregate ``AGG-D{y | P(x, AGG-I{x})}`` (§2.1)
filters by an *independent* aggregate of the same scope: COUNT of calls longer than AVG, SUM of
traffic within 10 % of MAX. Exactly, it needs two passes (AGG-I, then AGG-D). One pass keeps a
*focused* histogram: few buckets, packed where the predicate boundary lies and moved with it.

Predicates (§2.1; §3.2 experiments): ``MIN <= x <= (1 + eps) MIN``, symmetrically
``(1 - eps) MAX <= x <= MAX`` (Example 3, "within 10 % of MAX", is ``eps = 0.1``), and
``x > AVG``. MIN/MAX ranges are relative, so they take ``x >= 0`` as in the paper's data.

Supported: landmark scope (``window=None``, ``new_landmark()`` starts a new one) and sliding
scope over the last ``window`` tuples; the uniform partition policy with *piecemeal* (default;
the paper's "strategy of choice") or *wholesale* reallocation (Fig. 3). Not supported: the
quantile policy (merge-split swaps, §3.1.2), worst in the paper's 5-bucket and sliding runs.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from tsmon.core.focused import FocusedHistogram

__all__ = [
    "CorrelatedAggregate",
    "CorrelatedQuery",
]

INDEPENDENT = ("min", "max", "avg")
DEPENDENT = ("count", "sum")
STRATEGIES = ("piecemeal", "wholesale")


@dataclass(frozen=True)
class CorrelatedQuery:
    """``dependent{y | P(x, independent{x})}`` over one scope, with its exact two-pass answer.

    Examples
    --------
    >>> x = np.array([3.0, 1.0, 4.0, 1.0, 5.0])
    >>> CorrelatedQuery("avg").evaluate(x, x)  # COUNT{x > AVG(x) = 2.8}
    3.0
    >>> CorrelatedQuery("max", "sum", eps=0.25).evaluate(x, x)  # SUM{x >= 0.75 * 5}
    9.0
    """

    independent: str = "avg"
    dependent: str = "count"
    eps: float = 0.0

    def __post_init__(self) -> None:
        if self.independent not in INDEPENDENT or self.dependent not in DEPENDENT:
            raise ValueError(
                f"independent must be one of {INDEPENDENT} and dependent one of {DEPENDENT}, "
                f"got {self.independent!r}, {self.dependent!r}"
            )
        top = 1.0 if self.independent == "max" else math.inf
        if not 0.0 <= self.eps <= top:
            raise ValueError(f"eps must be in [0, {top}] for {self.independent}, got {self.eps}")

    def predicate(self, agg: float) -> tuple[float, float, bool]:
        """``(lo, hi, open_lo)``: x qualifies iff ``lo <= x <= hi`` (``lo < x`` if open_lo)."""
        if self.independent == "min":
            return agg, (1.0 + self.eps) * agg, False  # §2.1: MIN <= x <= (1 + eps) MIN
        if self.independent == "max":
            return (1.0 - self.eps) * agg, agg, False  # Example 3: x >= 0.9 MAX for eps = 0.1
        return agg, math.inf, True  # §3.2.4: x > AVG(x)

    def evaluate(self, x: np.ndarray, y: np.ndarray) -> float:
        """Exact answer over the scope's tuples ``(x, y)``: AGG-I first, then AGG-D."""
        if len(x) == 0:
            return 0.0
        agg = {"min": np.min, "max": np.max, "avg": np.mean}[self.independent](x)
        lo, hi, open_lo = self.predicate(float(agg))
        keep = ((x > lo) if open_lo else (x >= lo)) & (x <= hi)
        return float(keep.sum() if self.dependent == "count" else y[keep].sum())


class CorrelatedAggregate:
    """One-pass estimate of a :class:`CorrelatedQuery` over a landmark or sliding scope.

    Fig. 1 (landmark) / Fig. 11 (sliding): until ``buckets`` tuples are in play they are kept
    and answered exactly (InitializeHistogram); then each tuple may move the layout
    ``(lo, focus_lo, focus_hi, hi)``, which reallocates the histogram, and is then counted.

    * landmark MIN/MAX: the histogram covers the predicate range ``[a, b]`` only; tuples out of
      it never qualify again (extrema are monotonic), and a new range disjoint from the old one
      restarts exactly (condition 1, §3.1.2).
    * AVG: outer buckets to MIN and MAX, the focus ``AVG +- z * sd / sqrt(n)`` (§3.1.3; ``n``
      is the window size ``w`` over a sliding scope, §4.1.3).
    * sliding MIN (MAX): focus ``[MIN, (1 + eps) maxmin]`` (``[(1 - eps) minmax, MAX]``) and one
      outer bucket, ``maxmin`` the largest minimum of ``blocks`` fixed sub-intervals (§4.1.2).
      The window's tuples are kept to delete the outgoing one (Fig. 11); MIN and MAX are the
      exact sliding extrema of monotone queues (Datar et al. §6). The outgoing tuple is
      deleted before reallocating, so a reallocation never drops mass deleted later.
      A window shorter than ``buckets`` is always answered exactly.

    Examples
    --------
    COUNT{x > AVG(x)} on 3,000 multifractal values, 10 buckets, against two passes:

    >>> from tsmon.sim.correlated import exact_correlated, multifractal, rmse
    >>> x = multifractal(3000, seed=1)
    >>> q = CorrelatedQuery("avg", "count")
    >>> exact = exact_correlated(q, x)
    >>> piecemeal = CorrelatedAggregate(q, buckets=10).extend(x)
    >>> wholesale = CorrelatedAggregate(q, buckets=10, strategy="wholesale").extend(x)
    >>> print(exact[-1], round(piecemeal[-1], 1), round(wholesale[-1], 1))
    1107.0 1110.7 1176.0
    >>> print(round(rmse(piecemeal, exact), 1), round(rmse(wholesale, exact), 1))
    6.1 44.8
    """

    def __init__(
        self,
        query: CorrelatedQuery,
        buckets: int = 10,
        strategy: str = "piecemeal",
        window: int | None = None,
        z: float = 1.0,
        blocks: int = 10,
    ) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
        if buckets < 3 or (window is not None and window < 1) or z <= 0 or blocks < 1:
            raise ValueError(
                f"need buckets >= 3, window >= 1 tuples or None, z > 0, blocks >= 1; got "
                f"buckets={buckets}, window={window}, z={z}, blocks={blocks}"
            )
        self.query, self.m, self.strategy, self.window, self.z = query, buckets, strategy, window, z
        self._block_len = math.ceil(window / blocks) if window else 0
        self.new_landmark()

    def new_landmark(self) -> None:
        """Start a new scope at the next tuple (a landmark, §2.1); a sliding scope restarts too."""
        self.hist: FocusedHistogram | None = None
        self._raw: deque[tuple[float, float]] = deque()  # exact tuples; the window if sliding
        self._layout: tuple[float, ...] = ()
        self.pos = 0
        self._min, self._max = math.inf, -math.inf
        self._mean = self._m2 = self._sx = self._sxx = 0.0  # Welford (landmark), sums (sliding)
        self._min_q: deque[tuple[int, float]] = deque()  # sliding: (position, x), x increasing
        self._max_q: deque[tuple[int, float]] = deque()  # sliding: (position, x), x decreasing
        self._blocks: deque[list[float]] = deque()  # sliding: [block id, local min, local max]

    @property
    def scope(self) -> int:
        """Number of tuples in the current scope."""
        return self.pos if self.window is None else min(self.pos, self.window)

    def update(self, x: float, y: float | None = None) -> CorrelatedAggregate:
        """Read tuple ``(x, y)`` (``y`` defaults to ``x``) and return the instance."""
        y = x if y is None else y
        if not (math.isfinite(x) and math.isfinite(y)):
            raise ValueError(f"x and y must be finite, got x={x}, y={y}")
        if x < 0 and self.query.independent != "avg":
            raise ValueError(f"x must be >= 0 for the relative {self.query.independent} range")
        x, y = float(x), float(y)
        self.pos += 1
        extrema_landmark = self.window is None and self.query.independent != "avg"
        if self.window is None:
            self._landmark_stats(x)
        else:
            self._sliding_stats(x, y)
        if self.hist is None:  # InitializeHistogram: exact until m tuples are in play
            if self.window is None:
                self._raw.append((x, y))
            if extrema_landmark:  # out of [a, b] now means out for good: purge
                lo, hi, _ = self.query.predicate(self._agg())
                self._raw = deque(t for t in self._raw if lo <= t[0] <= hi)
            if len(self._raw) >= self.m:
                self._layout = self._target()
                right = self.query.independent == "min"
                self.hist = FocusedHistogram.uniform(self._layout, self._n_focus(), right)
                for t in self._raw:
                    self.hist.add(*t)
                if self.window is None:
                    self._raw.clear()
            return self
        old, self._layout = self._layout, self._target()
        new = self._layout
        if extrema_landmark and (new[2] < old[0] or new[1] > old[3]):
            self.hist, self._raw = None, deque([(x, y)])  # condition 1: restart without error
            return self
        if new != old:  # condition 2 (extrema); the mean moved (AVG); the window moved
            # Only the outer ends moved: stretch them, whatever the strategy (§4.1.2: "all but
            # the last bucket are redistributed"). Landmark extrema truncate, others keep mass.
            strategy = self.strategy if new[1:3] != old[1:3] else "piecemeal"
            self.hist.reallocate(strategy, new, self._n_focus(), not extrema_landmark)
        if not extrema_landmark or new[1] <= x <= new[2]:
            self.hist.add(x, y)
        return self

    def _n_focus(self) -> int:
        lo, flo, fhi, hi = self._layout
        return self.m - (lo < flo) - (fhi < hi)

    def _landmark_stats(self, x: float) -> None:
        self._min, self._max = min(self._min, x), max(self._max, x)
        delta = x - self._mean
        self._mean += delta / self.pos
        self._m2 += delta * (x - self._mean)

    def _sliding_stats(self, x: float, y: float) -> None:
        w, pos = self.window, self.pos
        if len(self._raw) == w:  # Fig. 11: delete the outgoing tuple
            xo, yo = self._raw.popleft()
            self._sx, self._sxx = self._sx - xo, self._sxx - xo * xo
            if self.hist is not None:
                self.hist.remove(xo, yo)
        self._raw.append((x, y))
        self._sx, self._sxx = self._sx + x, self._sxx + x * x
        for q, sign in ((self._min_q, 1.0), (self._max_q, -1.0)):
            while q and sign * q[-1][1] >= sign * x:
                q.pop()
            q.append((pos, x))
            if q[0][0] <= pos - w:
                q.popleft()
        self._min, self._max = self._min_q[0][1], self._max_q[0][1]
        bid = pos // self._block_len  # UpdateExtrema (§4.1.1): local extrema per sub-interval
        if self._blocks and self._blocks[-1][0] == bid:
            b = self._blocks[-1]
            b[1], b[2] = min(b[1], x), max(b[2], x)
        else:
            self._blocks.append([bid, x, x])
        if (self._blocks[0][0] + 1) * self._block_len <= pos - w + 1:
            self._blocks.popleft()

    def _agg(self) -> float:
        kind = self.query.independent
        if kind == "avg":
            return self._mean if self.window is None else self._sx / self.scope
        return self._min if kind == "min" else self._max

    def _target(self) -> tuple[float, float, float, float]:
        """Layout ``(lo, focus_lo, focus_hi, hi)`` for the current scope."""
        kind, eps, agg = self.query.independent, self.query.eps, self._agg()
        xmin, xmax = self._min, self._max
        if kind == "avg":
            n = self.scope
            var = self._m2 / n if self.window is None else self._sxx / n - agg * agg
            half = self.z * math.sqrt(max(var, 0.0) / n)  # §3.1.3: mu +- sd / sqrt(n), z = 1
            return xmin, max(xmin, agg - half), min(xmax, agg + half), xmax
        lo, hi, _ = self.query.predicate(agg)
        if self.window is None:
            return lo, lo, hi, hi
        blocks = list(self._blocks)[:-1] or self._blocks  # the newest block is still filling
        if kind == "min":  # §4.1.2: bins at (min, ..., (1 + eps) maxmin, max)
            top = min(xmax, (1.0 + eps) * max(b[1] for b in blocks))
            return xmin, xmin, max(top, xmin), xmax
        bottom = max(xmin, (1.0 - eps) * min(b[2] for b in blocks))
        return xmin, min(bottom, xmax), xmax, xmax

    def get(self) -> float:
        """Current estimate of the correlated aggregate over the scope."""
        if self.hist is None:  # exact: the in-range tuples (landmark) or the window
            xs, ys = (np.array([t[i] for t in self._raw]) for i in (0, 1))
            return self.query.evaluate(xs, ys)
        count, total = self.hist.estimate(*self.query.predicate(self._agg()))
        return count if self.query.dependent == "count" else total

    def extend(self, xs: np.ndarray, ys: np.ndarray | None = None) -> np.ndarray:
        """Read many tuples; return the output stream ``S_out``, one estimate per tuple."""
        xs = np.asarray(xs, dtype=np.float64)
        ys = xs if ys is None else np.asarray(ys, dtype=np.float64)
        return np.array([self.update(x, y).get() for x, y in zip(xs, ys, strict=True)])
