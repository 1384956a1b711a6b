"""What windows hand to queries: per-point statistics, and the pieces every window kind shares."""

from __future__ import annotations

import numpy as np

from tsmon.core.register import Register
from tsmon.core.window_spec import WindowSpec

STATS = (
    "count", "sum", "mean", "var", "stddev", "min", "max",
    "first", "last", "rate", "slope", "coverage",
)  # fmt: skip


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
                "list it in the statistics passed to advance"
            ) from None

    @classmethod
    def concat(cls, spec: WindowSpec, views: list[WindowView]) -> WindowView:
        """One view over consecutive runs of points."""
        if len(views) == 1:
            return views[0]
        return cls(spec, {k: np.concatenate([v.stat(k) for v in views]) for k in views[0].names()})


def first_and_rate(
    stats: dict[str, np.ndarray],
    first_ts: np.ndarray,
    first: np.ndarray,
    ts: np.ndarray,
    values: np.ndarray,
) -> None:
    """``first`` and ``rate`` = (last - first) / elapsed seconds, NaN over no elapsed time."""
    with np.errstate(divide="ignore", invalid="ignore"):
        span_s = (ts - first_ts) / 1000.0
        rate = (values - first) / span_s
    rate[~(span_s > 0)] = np.nan
    stats["first"] = np.asarray(first, dtype=np.float64)
    stats["rate"] = rate


def covered_from(register: Register, complete_from_ts: int | None) -> int:
    """The first instant from which a window's history is observed: where the history
    evicted before the window existed ends, else the series' first point."""
    if complete_from_ts is not None:
        return complete_from_ts
    return register.first_ts if register.first_ts is not None else 0


def check_follows(spec: WindowSpec, end: int, p0: int, p1: int) -> None:
    """A window advances only over the points right after those it holds."""
    if p0 != end:
        raise ValueError(
            f"window {spec} holds up to position {end}, was given {p0}..{p1}; "
            "advance with the positions returned by Register.append"
        )
