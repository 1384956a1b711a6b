"""Landmark windows: every point at or after a fixed instant, as running sums and extremes.

Their points never leave, so nothing is subtracted; and they do not pin the register (that
would keep all history). Instead, when the register evicts points the window holds, the window
first folds them into a summary of its evicted history. Any rebuild — after a late point, for
the view as of a past point — merges that summary with the points still stored, so the window
stays exact. Only history evicted *before* the window existed is missing; ``coverage`` says
so, and is also < 1 while the series' first point is later than the landmark.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from tsmon.core.moments import (
    SQUARE_ROWS,
    TIME_ROWS,
    TINY_VALUE,
    Moments,
    exact_stats,
    features,
    ill_conditioned,
    stats_from_sums,
)
from tsmon.core.register import Register
from tsmon.core.view import WindowView, check_follows, covered_from, first_and_rate
from tsmon.core.window_spec import WindowSpec


@dataclass(frozen=True)
class Summary:
    """Everything a landmark window needs of a set of points."""

    moments: Moments
    max: float = -np.inf
    min: float = np.inf
    first_ts: int | None = None
    first_value: float = np.nan

    @classmethod
    def of(cls, ts: np.ndarray, values: np.ndarray) -> Summary:
        """The summary of these points (time-ordered)."""
        if len(values) == 0:
            return cls(Moments.exact(ts, values, with_time=True))
        return cls(
            Moments.exact(ts, values, with_time=True),
            float(values.max()),
            float(values.min()),
            int(ts[0]),
            float(values[0]),
        )

    def then(self, later: Summary) -> Summary:
        """These points followed by ``later`` ones."""
        first = (
            (self.first_ts, self.first_value)
            if self.first_ts is not None
            else (later.first_ts, later.first_value)
        )
        return Summary(
            self.moments.merged(later.moments),
            max(self.max, later.max),
            min(self.min, later.min),
            *first,
        )


class LandmarkWindow:
    """Points with ``ts >= spec.size`` of one series, shared and reference-counted.

    Examples
    --------
    >>> from tsmon.core.register import RegisterConfig
    >>> reg = Register("s", RegisterConfig(capacity_points=2, retention_ms=None))
    >>> win = LandmarkWindow(WindowSpec.landmark(1000), reg)
    >>> p0, p1 = reg.append(np.array([0, 1000, 2000, 3000]), np.array([9.0, 1.0, 5.0, 3.0]))
    >>> win.advance(p0, p1, {"count", "max"}).stat("max").tolist()
    [nan, 1.0, 5.0, 5.0]
    >>> reg.evict(); win.populate(reg.end)  # 0 and 1000 evicted: 1000 lives on in the summary
    >>> win.summary.moments.n, win.summary.max, win.summary.first_value
    (3.0, 5.0, 1.0)
    """

    def __init__(self, spec: WindowSpec, register: Register, until: int | None = None) -> None:
        self.spec = spec
        self.register = register
        self.refcount = 0
        self._evicted = Summary(Moments(sums=np.zeros(5)))
        lost = register.complete_from_ts  # history evicted before this window existed
        self.complete_from_ts = lost if lost is not None and lost > spec.size else None
        register.watch(self, self._fold_evicted)
        self.populate(register.end if until is None else until)

    def fork(self, until: int) -> LandmarkWindow:
        """A private copy as of position ``until``: the window as of a past point."""
        twin = LandmarkWindow.__new__(LandmarkWindow)
        twin.spec, twin.register, twin.refcount = self.spec, self.register, 0
        twin._evicted, twin.complete_from_ts = self._evicted, self.complete_from_ts
        twin.populate(until)
        return twin

    def close(self) -> None:
        """Stop following the register's evictions."""
        self.register.unwatch(self)

    def _fold_evicted(self, p0: int, p1: int) -> None:
        lo = max(p0, int(self.register.search(self.spec.size, side="left")))
        if lo < p1:
            reg = self.register
            self._evicted = self._evicted.then(Summary.of(reg.ts(lo, p1), reg.values(lo, p1)))

    def populate(self, until: int) -> None:
        """Set the window as of position ``until`` (exclusive): evicted summary + stored."""
        reg = self.register
        lo = max(int(reg.search(self.spec.size, side="left")), reg.start)
        hi = max(lo, until)
        self.summary = self._evicted.then(Summary.of(reg.ts(lo, hi), reg.values(lo, hi)))
        self.end = until

    def advance(self, p0: int, p1: int, wanted: Iterable[str]) -> WindowView:
        """Take in the register points ``[p0, p1)`` (just appended) and return, for each of
        them, the statistics in ``wanted`` of the window as of that point."""
        check_follows(self.spec, self.end, p0, p1)
        wanted = frozenset(wanted)
        reg, old = self.register, self.summary
        ts, values = reg.ts(p0, p1), reg.values(p0, p1)
        k = int(np.searchsorted(ts, self.spec.size, side="left"))  # points before k precede it
        base = old.moments.rebased(ts[k:], values[k:]) if k < len(ts) else old.moments
        rows = features(ts, values, base.anchor, base.anchor_t_ms, with_time=True)
        rows[:, :k] = 0.0
        sums = np.cumsum(rows, axis=1) + base.sums[:, None]
        n = base.n + np.cumsum(np.arange(len(ts)) >= k)
        stats = stats_from_sums(n, sums, base.anchor, wanted)
        magnitudes = sums[SQUARE_ROWS[TIME_ROWS]]  # sums of squares: nothing subtracted
        ill = ill_conditioned(n, sums, magnitudes, base.anchor, float(n[-1]), wanted)
        inside = values[k:]
        running_max = np.maximum.accumulate(np.concatenate(([old.max], inside)))[1:]
        running_min = np.minimum.accumulate(np.concatenate(([old.min], inside)))[1:]
        if wanted & {"var", "stddev", "slope"}:  # only tiny values, not all equal: see moments
            top = np.maximum(np.abs(running_max), np.abs(running_min))
            tiny = (top < TINY_VALUE) & (running_max > running_min)
            ill[k:] |= tiny & (n[k:] >= 2)
        self._exact_rows(stats, np.flatnonzero(ill), p0, wanted)
        first_ts, first = (
            (old.first_ts, old.first_value)
            if old.first_ts is not None
            else ((int(ts[k]), float(values[k])) if k < len(ts) else (None, np.nan))
        )
        pad = np.full(k, np.nan)
        if "max" in wanted:
            stats["max"] = np.concatenate((pad, running_max))
        if "min" in wanted:
            stats["min"] = np.concatenate((pad, running_min))
        if "first" in wanted or "rate" in wanted:
            first_and_rate(
                stats, np.full(len(ts), first_ts or 0), np.full(len(ts), first), ts, values
            )
            stats["first"][:k] = stats["rate"][:k] = np.nan
        if "last" in wanted:
            stats["last"] = np.concatenate((pad, inside))
        if "coverage" in wanted:
            stats["coverage"] = self._coverage(ts)
        self.summary = Summary(
            Moments(base.anchor, base.anchor_t_ms, float(n[-1]), sums[:, -1].copy()),
            float(running_max[-1]) if len(inside) else old.max,
            float(running_min[-1]) if len(inside) else old.min,
            first_ts,
            first,
        )
        self.end = p1
        return WindowView(self.spec, stats)

    def _exact_rows(
        self, stats: dict[str, np.ndarray], rows: np.ndarray, p0: int, wanted: frozenset[str]
    ) -> None:
        """Recompute ill-conditioned points from the points stored; where history was
        evicted, from its summary merged with them (exact up to that summary's rounding)."""
        reg = self.register
        lo = max(int(reg.search(self.spec.size, side="left")), reg.start)
        evicted = self._evicted.moments
        for j in rows.tolist():
            ts, values = reg.ts(lo, p0 + j + 1), reg.values(lo, p0 + j + 1)
            if evicted.n == 0:
                one = exact_stats(ts, values, wanted)
            else:
                both = evicted.merged(Moments.exact(ts, values, with_time=True))
                sums = both.sums[:, None]
                merged = stats_from_sums(np.array([both.n]), sums, both.anchor, wanted)
                one = {name: float(value[0]) for name, value in merged.items()}
            for name, value in one.items():
                stats[name][j] = value

    def _coverage(self, ts: np.ndarray) -> np.ndarray:
        """Share of ``[landmark, ts]`` observed; 1 before the landmark (nothing to cover)."""
        start = covered_from(self.register, self.complete_from_ts)
        with np.errstate(divide="ignore", invalid="ignore"):
            covered = (ts - start + 1) / (ts - self.spec.size + 1)
        return np.where(ts >= self.spec.size, np.clip(covered, 0.0, 1.0), 1.0)
