"""Windows over a register with statistics maintained online (claims 1 and 2).

Every statistic is updated as points enter and leave the window, never by rescanning it:
moments (sum, mean, variance, slope) by adding the feature sums of entering points and
subtracting those of leaving ones, minimum and maximum by monotonic queues, count, first and
last by position. A batch of new points is processed at once with numpy, yet each point gets
the statistics of the window *as of that point* (per-point semantics): cumulative sums over the
entering points and over the leaving points give every intermediate window.

A window keeps only what its queries read: the time moments (for ``slope``) and the monotonic
queues (for ``min``/``max``) start when a query first asks for them, rebuilt at once from the
points the window holds. Sliding windows pin those points in the register, so they are always
there; landmark windows keep everything from the start because their points are not pinned.

Precision: moments are kept about anchors near the window's means (see ``moments``); points
whose window is so short next to the batch that subtracting cumulative sums could lose digits
are recomputed exactly from the points held; and after a window has turned over four times its
sums are recomputed exactly (amortized O(1) per point), bounding accumulated rounding.

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
from tsmon.core.window_spec import WindowKind, WindowSpec

STATS = (
    "count", "sum", "mean", "var", "stddev", "min", "max",
    "first", "last", "rate", "slope", "coverage",
)  # fmt: skip
_SECOND_MOMENTS = frozenset({"var", "stddev", "slope"})
_TURNOVERS_BETWEEN_EXACT = 16
_CHUNK_WINDOWS, _MIN_CHUNK = 8, 256  # a batch is advanced in chunks of 8 windows' points


class WindowView:
    """Per-point statistics of one window for a run of consecutive points of its series."""

    def __init__(self, spec: WindowSpec, stats: dict[str, np.ndarray]) -> None:
        self.spec = spec
        self._stats = stats

    def names(self) -> list[str]:
        """The statistics this view holds."""
        return list(self._stats)

    def stat(self, name: str) -> np.ndarray:
        """The values of statistic ``name``, one per point (NaN where undefined)."""
        try:
            return self._stats[name]
        except KeyError:
            raise KeyError(
                f"window {self.spec} was not asked for {name!r} (has {sorted(self._stats)}); "
                "list it in the statistics passed to Window.advance"
            ) from None


class Window:
    """One window of one series, shared by every query that reads it (reference-counted).

    Examples
    --------
    >>> from tsmon.core.register import RegisterConfig
    >>> reg = Register("s", RegisterConfig(retention_ms=None))
    >>> win = Window(WindowSpec.count(2), reg)
    >>> p0, p1 = reg.append(np.array([0, 1000, 2000]), np.array([1.0, 5.0, 3.0]))
    >>> view = win.advance(p0, p1, {"mean", "max", "coverage"})
    >>> view.stat("mean").tolist(), view.stat("max").tolist(), view.stat("coverage").tolist()
    ([1.0, 3.0, 4.0], [1.0, 5.0, 5.0], [1.0, 1.0, 1.0])
    """

    def __init__(self, spec: WindowSpec, register: Register, until: int | None = None) -> None:
        self.spec = spec
        self.register = register
        self.refcount = 0
        self._sliding = spec.kind is not WindowKind.LANDMARK
        self._with_time = not self._sliding
        self._max: MaxQueue | None = None if self._sliding else MaxQueue()
        self._neg_min: MaxQueue | None = None if self._sliding else MaxQueue()  # min = -max(-x)
        self.populate(register.end if until is None else until)

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
            if not self._sliding:
                queue.truncate_to_max()
        self.first_ts = int(ts[0]) if len(ts) else None
        self.first_value = float(values[0]) if len(ts) else None
        self.complete_from_ts = reg.complete_from_ts
        self._left_since_exact = 0
        self._pin()

    def _start_as_of(self, until: int) -> int:
        reg = self.register
        if until <= reg.start:
            return until
        if self.spec.kind is WindowKind.COUNT:
            return max(until - self.spec.size, reg.start)
        if self.spec.kind is WindowKind.TIME:
            last_ts = int(reg.ts(until - 1, until)[0])
            return max(int(reg.search(last_ts - self.spec.size, side="right")), reg.start)
        return max(int(reg.search(self.spec.size, side="left")), reg.start)

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
        if self._sliding:
            self.register.pin(id(self), self.start)

    def close(self) -> None:
        """Release the register points this window pinned."""
        self.register.unpin(id(self))

    # -- online advance ------------------------------------------------------------------------
    def advance(self, p0: int, p1: int, wanted: Iterable[str]) -> WindowView:
        """Take in the register points ``[p0, p1)`` (just appended) and return, for each of
        them, the statistics in ``wanted`` of the window as of that point."""
        if p0 != self.end:
            raise ValueError(
                f"window {self.spec} holds up to position {self.end}, was given {p0}..{p1}; "
                "advance with the positions returned by Register.append"
            )
        wanted = frozenset(wanted)
        self._track(wanted)
        if not self._sliding:
            return self._advance_landmark(p0, p1, wanted)
        views = []
        while p0 < p1:  # chunks a few windows long keep the cumulative sums well-conditioned
            chunk = _CHUNK_WINDOWS * max(int(self.moments.n), _MIN_CHUNK)
            views.append(self._advance_sliding(p0, min(p0 + chunk, p1), wanted))
            p0 += chunk
        if len(views) == 1:
            return views[0]
        return WindowView(
            self.spec, {k: np.concatenate([v.stat(k) for v in views]) for k in views[0].names()}
        )

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
        scale = sums[squares] + base.sums[squares, None]
        sums += base.sums[:, None]
        if new_start > old_start:  # subtract the points that left, as of each new point
            held = slice(old_start, new_start)
            leaving = features(
                reg.ts(held.start, held.stop),
                reg.values(held.start, held.stop),
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
        if wanted & _SECOND_MOMENTS:
            ill = np.flatnonzero(ill_conditioned(n, sums, scale))
            self._exact_rows(stats, ill, starts, p0, wanted)
            exact = len(ill) > 0 and ill[-1] == len(ts) - 1
        else:  # only the state carried to the next batch must be well-conditioned
            exact = bool(ill_conditioned(n[-1:], sums[:, -1:], scale[:, -1:])[0])
        if "min" in wanted or "max" in wanted:
            self._extremes(stats, wanted, values, p0, starts)
        if "first" in wanted or "rate" in wanted:
            offset = starts - old_start
            held_ts, held_values = reg.ts(old_start, p1), reg.values(old_start, p1)
            self._first_rate(stats, held_ts[offset], held_values[offset], ts, values)
        self._common(stats, wanted, ts, values, n)
        self._commit(base, n[-1], sums[:, -1], values, p0, p1, new_start, exact)
        return WindowView(self.spec, stats)

    def _advance_landmark(self, p0: int, p1: int, wanted: frozenset[str]) -> WindowView:
        reg = self.register
        ts, values = reg.ts(p0, p1), reg.values(p0, p1)
        k = int(np.searchsorted(ts, self.spec.size, side="left"))  # points before k precede it
        inside = np.arange(len(ts)) >= k
        base = self.moments.rebased(ts[k:], values[k:]) if k < len(ts) else self.moments
        rows = features(ts, values, base.anchor, base.anchor_t_ms, with_time=True)
        rows[:, :k] = 0.0
        sums = np.cumsum(rows, axis=1) + base.sums[:, None]
        n = base.n + np.cumsum(inside)
        stats = stats_from_sums(n, sums, base.anchor, wanted)
        if self.first_ts is None and k < len(ts):
            self.first_ts, self.first_value = int(ts[k]), float(values[k])
        if "min" in wanted or "max" in wanted:
            starts = np.full(len(ts), self.start)
            self._extremes(stats, wanted, values[k:], p0 + k, starts[k:], skipped=k)
        if "first" in wanted or "rate" in wanted:
            first_ts = self.first_ts if self.first_ts is not None else 0
            first = self.first_value if self.first_value is not None else np.nan
            self._first_rate(stats, np.full(len(ts), first_ts), np.full(len(ts), first), ts, values)
            stats["first"][:k] = np.nan
            stats["rate"][:k] = np.nan
        self._common(stats, wanted, ts, values, n)
        if "last" in wanted:
            stats["last"][:k] = np.nan
        self._commit(base, float(n[-1]), sums[:, -1], values[k:], p0 + k, p1, self.start)
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
        skipped: int = 0,
    ) -> None:
        """Per-point max/min; the first ``skipped`` points (before a landmark) get NaN."""
        pad = np.full(skipped, np.nan)
        if "max" in wanted and self._max is not None:
            stats["max"] = np.concatenate((pad, self._max.per_point(values, p0, starts)))
        if "min" in wanted and self._neg_min is not None:
            stats["min"] = np.concatenate((pad, -self._neg_min.per_point(-values, p0, starts)))

    @staticmethod
    def _first_rate(
        stats: dict[str, np.ndarray],
        first_ts: np.ndarray,
        first: np.ndarray,
        ts: np.ndarray,
        values: np.ndarray,
    ) -> None:
        with np.errstate(divide="ignore", invalid="ignore"):
            span_s = (ts - first_ts) / 1000.0
            rate = (values - first) / span_s
        rate[~(span_s > 0)] = np.nan
        stats["first"] = first.astype(np.float64)
        stats["rate"] = rate

    def _common(
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
        if self.spec.kind is WindowKind.TIME:
            return np.clip((ts - complete_from + 1) / self.spec.size, 0.0, 1.0)
        if complete_from <= self.spec.size:
            return np.ones(len(ts))
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.clip((ts - complete_from + 1) / (ts - self.spec.size + 1), 0.0, 1.0)

    # -- state after a batch -------------------------------------------------------------------
    def _commit(
        self,
        base: Moments,
        n: float,
        last_sums: np.ndarray,
        values: np.ndarray,
        p0: int,
        p1: int,
        new_start: int,
        exact: bool = False,
    ) -> None:
        for queue, signed in self._queues(values):
            queue.push(signed, p0, keep_from=new_start)
            if not self._sliding:
                queue.truncate_to_max()
        self._left_since_exact += new_start - self.start
        self.start, self.end = new_start, p1
        self.moments = Moments(base.anchor, base.anchor_t_ms, float(n), last_sums.copy())
        turned_over = self._left_since_exact >= _TURNOVERS_BETWEEN_EXACT * max(n, 1.0)
        if self._sliding and (exact or turned_over):
            reg = self.register
            self.moments = Moments.exact(
                reg.ts(new_start, p1), reg.values(new_start, p1), self._with_time
            )
            self._left_since_exact = 0
        self._pin()
