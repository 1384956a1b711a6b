"""Sliding windows (the last N points, or the last span of event time) maintained online.

Every statistic is updated as points enter and leave the window, never by rescanning it:
moments (sum, mean, variance, slope) by adding the feature sums of entering points and
subtracting those of leaving ones, minimum and maximum by monotonic queues, count, first and
last by position. A batch of new points is processed at once with numpy, yet each point gets
the statistics of the window *as of that point* (per-point semantics): cumulative sums over the
entering points and over the leaving points give every intermediate window.

A window keeps only what its queries read: the time moments (for ``slope``) and the monotonic
queues (for ``min``/``max``) start when a query first asks for them, rebuilt at once from the
points the window holds, which it pins in the register so they are always there.

Precision: moments are kept about anchors near the window's means (see ``moments``); long
batches are taken in chunks a few windows long; points whose window is so short next to the
chunk, or to the sums carried from earlier batches (``Moments.error_scale``), that subtracting
could lose digits are recomputed exactly from the points held, and so is the state carried to
the next batch when it is such a window (a single point included); and after the window has
turned over 16 times its sums are recomputed exactly (amortized O(1) per point), bounding
accumulated rounding.

``coverage`` says how much of the window's span the stored history covers: a window inserted
while running is populated at once from the register (which holds at least what the other
windows of the series pin), and where history was already evicted it reports coverage < 1
until its span has been observed live.
"""

from __future__ import annotations

from collections.abc import Iterable, Set

import numpy as np

from tsmon.core.moments import SQUARE_ROWS, Moments, features, ill_conditioned, stats_from_sums
from tsmon.core.monotonic import MaxQueue
from tsmon.core.register import Register
from tsmon.core.view import WindowView, check_follows, first_and_rate
from tsmon.core.window_spec import WindowKind, WindowSpec

_SECOND_MOMENTS = frozenset({"var", "stddev", "slope"})
_TURNOVERS_BETWEEN_EXACT = 16
_CHUNK_WINDOWS, _MIN_CHUNK = 8, 256  # a batch is advanced in chunks of 8 windows' points


class SlidingWindow:
    """A count or time window of one series, shared by every query that reads it
    (reference-counted).

    Examples
    --------
    >>> from tsmon.core.register import RegisterConfig
    >>> reg = Register("s", RegisterConfig(retention_ms=None))
    >>> win = SlidingWindow(WindowSpec.count(2), reg)
    >>> p0, p1 = reg.append(np.array([0, 1000, 2000]), np.array([1.0, 5.0, 3.0]))
    >>> view = win.advance(p0, p1, {"mean", "max", "coverage"})
    >>> view.stat("mean").tolist(), view.stat("max").tolist(), view.stat("coverage").tolist()
    ([1.0, 3.0, 4.0], [1.0, 5.0, 5.0], [1.0, 1.0, 1.0])
    """

    def __init__(
        self,
        spec: WindowSpec,
        register: Register,
        until: int | None = None,
        track: Set[str] = frozenset(),
    ) -> None:
        if spec.kind is WindowKind.LANDMARK:
            raise ValueError(f"{spec} is a landmark window; open it with open_window")
        self.spec = spec
        self.register = register
        self.refcount = 0
        self._with_time = "slope" in track
        self._max: MaxQueue | None = MaxQueue() if "max" in track else None
        self._neg_min: MaxQueue | None = MaxQueue() if "min" in track else None  # -max(-x)
        self.complete_from_ts = register.complete_from_ts
        self.populate(register.end if until is None else until)

    def fork(self, until: int) -> SlidingWindow:
        """A private window as of position ``until``, tracking what this one tracks."""
        tracked = {"slope"} if self._with_time else set()
        queues = (("max", self._max), ("min", self._neg_min))
        tracked |= {name for name, queue in queues if queue is not None}
        return SlidingWindow(self.spec, self.register, until, frozenset(tracked))

    # -- (re)building from history -------------------------------------------------------------
    def populate(self, until: int) -> None:
        """Set the window to hold, as of position ``until`` (exclusive), what history allows."""
        reg = self.register
        self.end = until
        self.start = self._start_as_of(until)
        ts, values = reg.ts(self.start, until), reg.values(self.start, until)
        self.moments = Moments.exact(ts, values, self._with_time)
        for queue, signed in self._queues(values):
            queue.reset(signed, self.start)
        self._left_since_exact = 0
        self._pin()

    def _start_as_of(self, until: int) -> int:
        reg = self.register
        if until <= reg.start:
            return until
        if self.spec.kind is WindowKind.COUNT:
            return max(until - self.spec.size, reg.start)
        last_ts = int(reg.ts(until - 1, until)[0])
        return max(int(reg.search(last_ts - self.spec.size, side="right")), reg.start)

    def _track(self, wanted: Set[str]) -> None:
        """Start keeping time moments or extremes when a query first reads them."""
        start_time = "slope" in wanted and not self._with_time
        start_max = "max" in wanted and self._max is None
        start_min = "min" in wanted and self._neg_min is None
        if start_time:
            self._with_time = True
        if start_max:
            self._max = MaxQueue()
        if start_min:
            self._neg_min = MaxQueue()
        if start_time or start_max or start_min:
            self.populate(self.end)  # the points are pinned: rebuild from them

    def _queues(self, values: np.ndarray) -> list[tuple[MaxQueue, np.ndarray]]:
        """The monotonic queues kept, each with the values it is fed (negated for the min)."""
        queues = []
        if self._max is not None:
            queues.append((self._max, values))
        if self._neg_min is not None:
            queues.append((self._neg_min, -values))
        return queues

    def _pin(self) -> None:
        self.register.pin(id(self), self.start)

    def close(self) -> None:
        """Release the register points this window pinned."""
        self.register.unpin(id(self))

    # -- online advance ------------------------------------------------------------------------
    def advance(self, p0: int, p1: int, wanted: Iterable[str]) -> WindowView:
        """Take in the register points ``[p0, p1)`` (just appended) and return, for each of
        them, the statistics in ``wanted`` of the window as of that point."""
        check_follows(self.spec, self.end, p0, p1)
        wanted = frozenset(wanted)
        self._track(wanted)
        views = []
        while p0 < p1:  # chunks a few windows long keep the cumulative sums well-conditioned
            chunk = _CHUNK_WINDOWS * max(int(self.moments.n), _MIN_CHUNK)
            views.append(self._advance_sliding(p0, min(p0 + chunk, p1), wanted))
            p0 += chunk
        return WindowView.concat(self.spec, views)

    def _advance_sliding(self, p0: int, p1: int, wanted: frozenset[str]) -> WindowView:
        reg = self.register
        ts, values = reg.ts(p0, p1), reg.values(p0, p1)
        old_start = self.start
        positions = np.arange(p0, p1)
        if self.spec.kind is WindowKind.COUNT:
            starts = np.maximum(positions - (self.spec.size - 1), old_start)
        else:
            starts = np.maximum(reg.search(ts - self.spec.size, side="right"), old_start)
        new_start = int(starts[-1])
        n = (positions - starts + 1).astype(np.float64)
        base = self.moments.rebased(ts, values)
        squares = SQUARE_ROWS[len(base.sums)]
        sums = np.cumsum(features(ts, values, base.anchor, base.anchor_t_ms, self._with_time), 1)
        scale = sums[squares] + base.error_scale[:, None]
        sums += base.sums[:, None]
        if new_start > old_start:  # subtract the points that left, as of each new point
            leaving = features(
                reg.ts(old_start, new_start),
                reg.values(old_start, new_start),
                base.anchor,
                base.anchor_t_ms,
                self._with_time,
            )
            left = np.zeros((len(leaving), leaving.shape[1] + 1))
            np.cumsum(leaving, axis=1, out=left[:, 1:])
            left = left[:, starts - old_start]
            sums -= left
            scale += left[squares]
        stats = stats_from_sums(n, sums, base.anchor, wanted)
        # the state carried to the next batch must be well-conditioned, even of one point
        if wanted & _SECOND_MOMENTS:
            ill = ill_conditioned(n, sums, scale, min_count=1)
            self._exact_rows(stats, np.flatnonzero(ill & (n >= 2)), starts, p0, wanted)
            exact = bool(ill[-1])
        else:
            exact = bool(ill_conditioned(n[-1:], sums[:, -1:], scale[:, -1:], min_count=1)[0])
        if "min" in wanted or "max" in wanted:
            self._extremes(stats, wanted, values, p0, starts)
        if "first" in wanted or "rate" in wanted:
            offset = starts - old_start
            held_ts, held_values = reg.ts(old_start, p1), reg.values(old_start, p1)
            first_and_rate(stats, held_ts[offset], held_values[offset], ts, values)
        self._last_and_coverage(stats, wanted, ts, values, n)
        self._commit(base, n[-1], sums[:, -1], scale[:, -1], values, p0, p1, new_start, exact)
        return WindowView(self.spec, stats)

    # -- per-point statistics ------------------------------------------------------------------
    def _exact_rows(
        self,
        stats: dict[str, np.ndarray],
        rows: np.ndarray,
        starts: np.ndarray,
        p0: int,
        wanted: frozenset[str],
    ) -> None:
        """Recompute the moment statistics of ill-conditioned points from the points held."""
        reg = self.register
        for j in rows.tolist():
            lo, hi = int(starts[j]), p0 + j + 1
            exact = Moments.exact(reg.ts(lo, hi), reg.values(lo, hi), self._with_time)
            one = stats_from_sums(np.array([exact.n]), exact.sums[:, None], exact.anchor, wanted)
            for name, value in one.items():
                stats[name][j] = value[0]

    def _extremes(
        self,
        stats: dict[str, np.ndarray],
        wanted: frozenset[str],
        values: np.ndarray,
        p0: int,
        starts: np.ndarray,
    ) -> None:
        if "max" in wanted and self._max is not None:
            stats["max"] = self._max.per_point(values, p0, starts)
        if "min" in wanted and self._neg_min is not None:
            stats["min"] = -self._neg_min.per_point(-values, p0, starts)

    def _last_and_coverage(
        self,
        stats: dict[str, np.ndarray],
        wanted: frozenset[str],
        ts: np.ndarray,
        values: np.ndarray,
        n: np.ndarray,
    ) -> None:
        if "last" in wanted:
            stats["last"] = values.astype(np.float64)
        if "coverage" in wanted:
            stats["coverage"] = self._coverage(ts, n)

    def _coverage(self, ts: np.ndarray, count: np.ndarray) -> np.ndarray:
        complete_from = self.complete_from_ts
        if complete_from is None:
            return np.ones(len(ts))
        if self.spec.kind is WindowKind.COUNT:
            return np.minimum(count / self.spec.size, 1.0)
        return np.clip((ts - complete_from + 1) / self.spec.size, 0.0, 1.0)

    # -- state after a batch -------------------------------------------------------------------
    def _commit(
        self,
        base: Moments,
        n: float,
        last_sums: np.ndarray,
        last_scale: np.ndarray,
        values: np.ndarray,
        p0: int,
        p1: int,
        new_start: int,
        exact: bool = False,
    ) -> None:
        for queue, signed in self._queues(values):
            queue.push(signed, p0, keep_from=new_start)
        self._left_since_exact += new_start - self.start
        self.start, self.end = new_start, p1
        self.moments = Moments(
            base.anchor, base.anchor_t_ms, float(n), last_sums.copy(), last_scale.copy()
        )
        turned_over = self._left_since_exact >= _TURNOVERS_BETWEEN_EXACT * max(n, 1.0)
        if exact or turned_over:
            reg = self.register
            self.moments = Moments.exact(
                reg.ts(new_start, p1), reg.values(new_start, p1), self._with_time
            )
            self._left_since_exact = 0
        self._pin()
