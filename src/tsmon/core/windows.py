"""Windows over a register with statistics maintained online (claims 1 and 2).

Every statistic is updated as points enter and leave the window, never by rescanning it:
moments (count, sum, mean, variance, slope) by adding the feature rows of entering points and
subtracting those of leaving ones, minimum and maximum by monotonic queues, first and last by
position. A batch of new points is processed at once with numpy, yet each point gets the
statistics of the window *as of that point* (per-point semantics): cumulative sums over the
entering points and over the leaving points give every intermediate window.

Sliding windows pin the register points they hold, so those points stay available. After a
window has turned over completely its moments are recomputed exactly from the points it holds
(amortized O(1) per point), which bounds the rounding error that add/subtract accumulates.

``coverage`` says how much of the window's span the stored history covers: a window inserted
while running is populated at once from the register (which holds at least what the other
windows of the series pin), and where the history was already evicted it reports coverage < 1
until its span has been observed live.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from tsmon.core.moments import Moments, features, stats_from_sums
from tsmon.core.monotonic import MaxQueue
from tsmon.core.register import Register
from tsmon.core.window_spec import WindowKind, WindowSpec

STATS = (
    "count", "sum", "mean", "var", "stddev", "min", "max",
    "first", "last", "rate", "slope", "coverage",
)  # fmt: skip
_MOMENT_STATS = frozenset({"count", "sum", "mean", "var", "stddev", "slope"})
_SQUARES = [2, 4]  # the d^2 and tau^2 feature columns
_ILL_CONDITIONED = 2.0**-20  # a second moment this small next to its sums loses > ~1e-10


def _ill_conditioned(sums: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Rows whose second moments are so small next to the running sums they came from that
    subtracting the sums would lose precision (a short window at the end of a long batch)."""
    n = sums[:, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        m2 = sums[:, 2] - sums[:, 1] ** 2 / n
        m2_t = sums[:, 4] - sums[:, 3] ** 2 / n
    return (n >= 2) & (
        (m2 < _ILL_CONDITIONED * scale[:, 0]) | (m2_t < _ILL_CONDITIONED * scale[:, 1])
    )


class WindowView:
    """Per-point statistics of one window for a run of consecutive points of its series."""

    def __init__(self, spec: WindowSpec, stats: dict[str, np.ndarray]) -> None:
        self.spec = spec
        self._stats = stats

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

    def __init__(self, spec: WindowSpec, register: Register) -> None:
        self.spec = spec
        self.register = register
        self.refcount = 0
        self._max = MaxQueue()
        self._neg_min = MaxQueue()
        self.populate(register.end)

    # -- (re)building from history -------------------------------------------------------------
    def populate(self, until: int) -> None:
        """Set the window to hold, as of position ``until`` (exclusive), what history allows."""
        reg = self.register
        self.end = until
        self.start = self._start_as_of(until)
        ts, values = reg.ts(self.start, until), reg.values(self.start, until)
        self.moments = Moments.exact(ts, values)
        self._max.reset(values, self.start)
        self._neg_min.reset(-values, self.start)
        self.first_ts = int(ts[0]) if len(ts) else None
        self.first_value = float(values[0]) if len(ts) else None
        self.complete_from_ts = reg.complete_from_ts
        self._left_since_exact = 0
        if self.spec.kind is WindowKind.LANDMARK:
            self._max.truncate_to_max()
            self._neg_min.truncate_to_max()
        self._pin()

    def _start_as_of(self, until: int) -> int:
        reg = self.register
        if until <= reg.start:
            return until
        if self.spec.kind is WindowKind.COUNT:
            return max(until - self.spec.size, reg.start)
        last_ts = int(reg.ts(until - 1, until)[0])
        if self.spec.kind is WindowKind.TIME:
            return max(int(reg.search(last_ts - self.spec.size, side="right")), reg.start)
        return max(int(reg.search(self.spec.size, side="left")), reg.start)

    def _pin(self) -> None:
        if self.spec.kind is not WindowKind.LANDMARK:
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
        if self.spec.kind is WindowKind.LANDMARK:
            return self._advance_landmark(p0, p1, wanted)
        return self._advance_sliding(p0, p1, wanted)

    def _advance_sliding(self, p0: int, p1: int, wanted: frozenset[str]) -> WindowView:
        reg = self.register
        ts, values = reg.ts(p0, p1), reg.values(p0, p1)
        old_start = self.start
        if self.spec.kind is WindowKind.COUNT:
            starts = np.maximum(np.arange(p0, p1) - self.spec.size + 1, old_start)
        else:
            starts = np.maximum(reg.search(ts - self.spec.size, side="right"), old_start)
        new_start = int(starts[-1])
        base = self.moments.rebased(ts, values)
        anchor, anchor_t = base.anchor, base.anchor_t_ms
        entered = np.cumsum(features(ts, values, anchor, anchor_t), axis=0)
        sums = base.sums + entered
        scale = base.sums[_SQUARES] + entered[:, _SQUARES]
        if new_start > old_start:  # subtract the points that left, as of each new point
            leaving = features(
                reg.ts(old_start, new_start), reg.values(old_start, new_start), anchor, anchor_t
            )
            left = np.vstack((np.zeros((1, leaving.shape[1])), np.cumsum(leaving, axis=0)))
            left = left[starts - old_start]
            sums -= left
            scale += left[:, _SQUARES]
        stats = self._per_point(wanted, sums, anchor, ts, values, p0, starts)
        ill = np.flatnonzero(_ill_conditioned(sums, scale))
        if len(ill) and wanted & _MOMENT_STATS:
            self._exact_rows(stats, ill, starts, p0, wanted)
        if "first" in wanted or "rate" in wanted:
            held_ts, held = reg.ts(old_start, p1), reg.values(old_start, p1)
            self._first_last(
                stats, held_ts[starts - old_start], held[starts - old_start], ts, values
            )
        last_ill = len(ill) > 0 and ill[-1] == len(ts) - 1
        self._commit(sums[-1], anchor, anchor_t, values, p0, p1, new_start, exact=last_ill)
        return WindowView(self.spec, stats)

    def _exact_rows(
        self,
        stats: dict[str, np.ndarray],
        rows: np.ndarray,
        starts: np.ndarray,
        p0: int,
        wanted: frozenset[str],
    ) -> None:
        """Recompute the moment statistics of ill-conditioned rows from the points held."""
        reg = self.register
        for j in rows.tolist():
            lo, hi = int(starts[j]), p0 + j + 1
            exact = Moments.exact(reg.ts(lo, hi), reg.values(lo, hi))
            for name, value in stats_from_sums(exact.sums[None, :], exact.anchor).items():
                if name in wanted:
                    stats[name][j] = value[0]

    def _advance_landmark(self, p0: int, p1: int, wanted: frozenset[str]) -> WindowView:
        reg = self.register
        ts, values = reg.ts(p0, p1), reg.values(p0, p1)
        inside = np.asarray(ts >= self.spec.size)
        k = int(np.argmax(inside)) if inside.any() else len(ts)  # points before k precede it
        base = self.moments.rebased(ts[k:], values[k:]) if k < len(ts) else self.moments
        anchor, anchor_t = base.anchor, base.anchor_t_ms
        rows = features(ts, values, anchor, anchor_t) * inside[:, None]
        sums = base.sums + np.cumsum(rows, axis=0)
        starts = np.where(
            inside, max(self.start, p0 + k) if self.moments.n == 0 else self.start, p1
        )
        stats = self._per_point(wanted, sums, anchor, ts, values, p0, starts)
        if self.first_ts is None and k < len(ts):
            self.first_ts, self.first_value = int(ts[k]), float(values[k])
        if "first" in wanted or "rate" in wanted:
            first_ts = np.where(inside, self.first_ts if self.first_ts is not None else 0, 0)
            first = np.where(inside, self.first_value if self.first_value is not None else 0.0, 0.0)
            self._first_last(stats, first_ts, first, ts, values, defined=inside)
        self._commit(sums[-1], anchor, anchor_t, values[k:], p0 + k, p1, self.start)
        self._max.truncate_to_max()
        self._neg_min.truncate_to_max()
        return WindowView(self.spec, stats)

    # -- per-point statistics ------------------------------------------------------------------
    def _per_point(
        self,
        wanted: frozenset[str],
        sums: np.ndarray,
        anchor: float,
        ts: np.ndarray,
        values: np.ndarray,
        p0: int,
        starts: np.ndarray,
    ) -> dict[str, np.ndarray]:
        stats: dict[str, np.ndarray] = {}
        if wanted & _MOMENT_STATS or "coverage" in wanted:
            moment_stats = stats_from_sums(sums, anchor)
            stats.update({k: v for k, v in moment_stats.items() if k in wanted})
        empty = starts > np.arange(p0, p0 + len(values))
        if "max" in wanted:
            stats["max"] = self._extreme(self._max, values, p0, starts, empty)
        if "min" in wanted:
            stats["min"] = -self._extreme(self._neg_min, -values, p0, starts, empty)
        if "last" in wanted:
            stats["last"] = np.where(empty, np.nan, values)
        if "coverage" in wanted:
            stats["coverage"] = self._coverage(ts, sums[:, 0])
        return stats

    @staticmethod
    def _extreme(
        queue: MaxQueue, values: np.ndarray, p0: int, starts: np.ndarray, empty: np.ndarray
    ) -> np.ndarray:
        if not empty.any():
            return queue.per_point(values, p0, starts)
        out = np.full(len(values), np.nan)
        k = int(empty.sum())  # landmark: the points before its instant come first
        if k < len(values):
            out[k:] = queue.per_point(values[k:], p0 + k, starts[k:])
        return out

    @staticmethod
    def _first_last(
        stats: dict[str, np.ndarray],
        first_ts: np.ndarray,
        first: np.ndarray,
        ts: np.ndarray,
        values: np.ndarray,
        defined: np.ndarray | None = None,
    ) -> None:
        with np.errstate(divide="ignore", invalid="ignore"):
            span_s = (ts - first_ts) / 1000.0
            rate = np.where(span_s > 0, (values - first) / span_s, np.nan)
        if defined is not None:
            first = np.where(defined, first, np.nan)
            rate = np.where(defined, rate, np.nan)
        stats["first"] = first
        stats["rate"] = rate

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
        last_sums: np.ndarray,
        anchor: float,
        anchor_t: int,
        values: np.ndarray,
        p0: int,
        p1: int,
        new_start: int,
        exact: bool = False,
    ) -> None:
        self._max.push(values, p0, keep_from=new_start)
        self._neg_min.push(-values, p0, keep_from=new_start)
        self._left_since_exact += new_start - self.start
        self.start, self.end = new_start, p1
        self.moments = Moments(anchor, anchor_t, last_sums.copy())
        if exact or self._left_since_exact >= max(self.moments.n, 1):
            self.moments = Moments.exact(
                self.register.ts(self.start, p1), self.register.values(self.start, p1)
            )
            self._left_since_exact = 0
        self._pin()
