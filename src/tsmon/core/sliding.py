"""Sliding windows (the last N points, or the last span of event time) maintained online.

Every statistic is updated as points enter and leave the window, never by rescanning it:
moments (sum, mean, variance, slope) from prefix sums over the points held, minimum and maximum
by monotonic queues, count, first and last by position. A batch of new points is processed at
once with numpy, yet each point gets the statistics of the window *as of that point*
(per-point semantics): the prefix sums differenced at each window's ends give every
intermediate window.

A window keeps only what its queries read: the monotonic queues (for ``min``/``max``) start
when a query first asks for them, rebuilt at once from the points the window holds, which it
pins in the register so they are always there.

Precision: a batch is taken in chunks of at most 8 windows, in points held and (time windows)
in span; each chunk's sums are about anchors at the means of its first point's window, so the
anchors stay near every window of the chunk and no rounding is carried from one chunk to the
next. Points whose statistics are still so small next to the sums they were computed from that
subtracting could lose digits (``ill_conditioned``: sum and mean, variance, time moment,
slope) are recomputed exactly from the points held. Every statistic stays within 1e-9
relative of the exact value.

``coverage`` says how much of the window's span is observed history: the share of the span
after the series' first point (of a count window, of its N points), so it is < 1 until a
whole span has passed since the first point. A window inserted while running is populated at
once from the register (which holds at least what the other windows of the series pin); where
history was already evicted it counts only from the oldest point still complete.
"""

from __future__ import annotations

from collections.abc import Iterable, Set

import numpy as np

from tsmon.core.moments import (
    SQUARE_ROWS,
    exact_stats,
    features,
    ill_conditioned,
    stats_from_sums,
    tiny_windows,
)
from tsmon.core.monotonic import MaxQueue
from tsmon.core.register import Register
from tsmon.core.rmq import range_max
from tsmon.core.view import WindowView, check_follows, covered_from, first_and_rate
from tsmon.core.window_spec import WindowKind, WindowSpec

_MOMENTS = frozenset({"sum", "mean", "var", "stddev", "slope"})
# a batch is advanced in chunks of 8 windows, so the anchors stay near every window of a
# chunk: 8 times a count window's size (at least 2,048 points), 8 spans of a time window (at
# least 32 points, that a chunk's fixed cost is spread over)
_CHUNK_WINDOWS, _MIN_CHUNK, _MIN_COUNT_CHUNK = 8, 32, 256


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
    ([1.0, 3.0, 4.0], [1.0, 5.0, 5.0], [0.5, 1.0, 1.0])
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
        self._max: MaxQueue | None = MaxQueue() if "max" in track else None
        self._neg_min: MaxQueue | None = MaxQueue() if "min" in track else None  # -max(-x)
        self.complete_from_ts = register.complete_from_ts
        self.populate(register.end if until is None else until)

    def fork(self, until: int) -> SlidingWindow:
        """A private window as of position ``until``, tracking what this one tracks."""
        queues = (("max", self._max), ("min", self._neg_min))
        tracked = {name for name, queue in queues if queue is not None}
        return SlidingWindow(self.spec, self.register, until, frozenset(tracked))

    # -- (re)building from history -------------------------------------------------------------
    def populate(self, until: int) -> None:
        """Set the window to hold, as of position ``until`` (exclusive), what history allows."""
        reg = self.register
        self.end = until
        self.start = self._start_as_of(until)
        values = reg.values(self.start, until)
        for queue, signed in self._queues(values):
            queue.reset(signed, self.start)
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
        """Start keeping the extremes when a query first reads them."""
        start_max = "max" in wanted and self._max is None
        start_min = "min" in wanted and self._neg_min is None
        if start_max:
            self._max = MaxQueue()
        if start_min:
            self._neg_min = MaxQueue()
        if start_max or start_min:
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
        self.register.pin(self, self.start)

    def close(self) -> None:
        """Release the register points this window pinned."""
        self.register.unpin(self)

    # -- online advance ------------------------------------------------------------------------
    def advance(self, p0: int, p1: int, wanted: Iterable[str]) -> WindowView:
        """Take in the register points ``[p0, p1)`` (just appended) and return, for each of
        them, the statistics in ``wanted`` of the window as of that point."""
        check_follows(self.spec, self.end, p0, p1)
        wanted = frozenset(wanted)
        self._track(wanted)
        views = []
        while p0 < p1:  # chunks a few windows long keep the cumulative sums well-conditioned
            end = self._chunk_end(p0, p1)
            views.append(self._advance_sliding(p0, end, wanted))
            p0 = end
        return WindowView.concat(self.spec, views)

    def _chunk_end(self, p0: int, p1: int) -> int:
        """Where the chunk starting at ``p0`` ends (see ``_CHUNK_WINDOWS``)."""
        if self.spec.kind is WindowKind.COUNT:
            return min(p0 + _CHUNK_WINDOWS * max(self.spec.size, _MIN_COUNT_CHUNK), p1)
        reg = self.register
        horizon = int(reg.ts(p0, p0 + 1)[0]) + _CHUNK_WINDOWS * self.spec.size
        return min(max(int(reg.search(horizon, side="left")), p0 + _MIN_CHUNK), p1)

    def _advance_sliding(self, p0: int, p1: int, wanted: frozenset[str]) -> WindowView:
        reg = self.register
        ts, values = reg.ts(p0, p1), reg.values(p0, p1)
        old_start = self.start
        positions = np.arange(p0, p1)
        if self.spec.kind is WindowKind.COUNT:
            starts = np.maximum(positions - (self.spec.size - 1), old_start)
        else:
            starts = np.maximum(reg.search(ts - self.spec.size, side="right"), old_start)
        n = (positions - starts + 1).astype(np.float64)
        stats = {"count": n} if "count" in wanted else {}
        if wanted & _MOMENTS:
            stats |= self._moments(p0, p1, starts, n, wanted)
        if "min" in wanted or "max" in wanted:
            self._extremes(stats, wanted, values, p0, starts)
        if "first" in wanted or "rate" in wanted:
            offset = starts - old_start
            held_ts, held_values = reg.ts(old_start, p1), reg.values(old_start, p1)
            first_and_rate(stats, held_ts[offset], held_values[offset], ts, values)
        self._last_and_coverage(stats, wanted, ts, values, n)
        for queue, signed in self._queues(values):
            queue.push(signed, p0, keep_from=int(starts[-1]))
        self.start, self.end = int(starts[-1]), p1
        self._pin()
        return WindowView(self.spec, stats)

    def _moments(
        self, p0: int, p1: int, starts: np.ndarray, n: np.ndarray, wanted: frozenset[str]
    ) -> dict[str, np.ndarray]:
        """Moment statistics of the window of each point ``p0 + j``: prefix sums of the
        features of the points held, about anchors at the middle of the first point's window,
        differenced at the window's ends; ill-conditioned points recomputed exactly."""
        reg = self.register
        first = int(starts[0])
        with_time = "slope" in wanted
        held_ts, held_values = reg.ts(first, p1), reg.values(first, p1)
        lead = p0 + 1 - first  # the first point's window
        anchor = float(held_values[:lead].sum()) / lead
        anchor_t = (int(held_ts[0]) + int(held_ts[lead - 1])) // 2
        rows = features(held_ts, held_values, anchor, anchor_t, with_time)
        leaving = int(starts[-1]) - first
        if lead <= leaving:  # windows shorter than the batch: window sums from one prefix sum
            prefix = np.zeros((len(rows), len(held_values) + 1))
            np.cumsum(rows, axis=1, out=prefix[:, 1:])
            ends, begins = prefix[:, lead:], prefix.take(starts - first, axis=1)
        else:  # sum over the first window + entering prefix - leaving prefix (same sums)
            ends = np.zeros((len(rows), len(n)))
            np.cumsum(rows[:, lead:], axis=1, out=ends[:, 1:])
            ends += rows[:, :lead].sum(axis=1)[:, None]
            begins = np.zeros((len(rows), leaving + 1))
            np.cumsum(rows[:, :leaving], axis=1, out=begins[:, 1:])
            begins = begins.take(starts - first, axis=1)  # cheaper than [:, starts - first]
        sums = ends - begins
        stats = stats_from_sums(n, sums, anchor, wanted)
        single = n == 1  # exact without sums: its value
        for name in ("sum", "mean"):
            if name in wanted:
                stats[name][single] = held_values[lead - 1 :][single]
        squares = SQUARE_ROWS[len(rows)]
        scale = ends[squares] + begins[squares]  # the magnitudes subtracted
        checked = wanted
        may_cancel = "sum" in wanted or "mean" in wanted
        if may_cancel and (held_values.min() >= 0 or held_values.max() <= 0):  # one sign
            checked = wanted - {"sum", "mean"}
        ill = ill_conditioned(n, sums, scale, anchor, float(len(held_values)), checked)
        if checked & {"var", "stddev", "slope"}:  # squares of tiny values underflow
            ends_at = np.arange(lead, len(held_values) + 1)
            ill |= tiny_windows(held_values, starts - first, ends_at) & (n >= 2)
        for j in ill.nonzero()[0].tolist():
            lo, hi = int(starts[j]), p0 + j + 1
            for name, value in exact_stats(reg.ts(lo, hi), reg.values(lo, hi), wanted).items():
                stats[name][j] = value
        return stats

    # -- per-point statistics ------------------------------------------------------------------
    def _extremes(
        self,
        stats: dict[str, np.ndarray],
        wanted: frozenset[str],
        values: np.ndarray,
        p0: int,
        starts: np.ndarray,
    ) -> None:
        kept = (("max", self._max, 1.0), ("min", self._neg_min, -1.0))  # min = -max(-x)
        asked = [(name, q, sign) for name, q, sign in kept if name in wanted and q is not None]
        if not asked:
            return
        # the new points' part of every window, of both extremes at once (one sparse table)
        signed = np.stack([sign * values for _, _, sign in asked])
        new = range_max(signed, np.clip(starts - p0, 0, None), np.arange(len(values)))
        for (name, queue, sign), row in zip(asked, new, strict=True):
            stats[name] = sign * np.maximum(queue.held_max(starts), row)

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
        if self.spec.kind is WindowKind.COUNT:
            return np.minimum(count / self.spec.size, 1.0)
        start = covered_from(self.register, self.complete_from_ts)
        return np.clip((ts - start + 1) / self.spec.size, 0.0, 1.0)
