"""Evaluating one compiled query over a run of points of its trigger series.

The statistics come from the series' window views; the points where the condition holds (of one
series or of several) become one :class:`~tsmon.engine.events.EventChunk`, with the payload
evaluated on those points only and the smallest coverage of the windows the query read.
"""

from __future__ import annotations

import numpy as np

from tsmon.core.window_spec import WindowSpec
from tsmon.core.windows import WindowView
from tsmon.engine.events import EventChunk
from tsmon.query import CompiledQuery


class ViewBindings:
    """Per-point values a compiled query reads: the trigger points (of one series or of
    several, ``series`` naming each) and their windows."""

    def __init__(
        self,
        series: np.ndarray,
        ts_ms: np.ndarray,
        value: np.ndarray,
        views: dict[WindowSpec, WindowView],
        at: np.ndarray | None = None,
    ) -> None:
        self.series = series if at is None else series[at]
        self.ts_ms = ts_ms if at is None else ts_ms[at]
        self.value = value if at is None else value[at]
        self._views = views
        self._at = at  # the indices of the points bound, or None for all

    def stat(self, name: str, window: WindowSpec) -> np.ndarray:
        values = self._views[window].stat(name)
        return values if self._at is None else values[self._at]

    def subset(self, at: np.ndarray) -> ViewBindings:
        """The points at indices ``at`` only (of a binding of all points)."""
        return ViewBindings(self.series, self.ts_ms, self.value, self._views, at)


def fire(
    query: CompiledQuery,
    bindings: ViewBindings,
    seq: np.ndarray,
    epoch: int,
    rank: int,
    replayed: bool = False,
) -> EventChunk | None:
    """The events of ``query`` over the points in ``bindings``, or None when none fires."""
    fired = query.condition(bindings).nonzero()[0]  # few: indices select cheaper than masks
    if len(fired) == 0:
        return None
    hit = bindings.subset(fired)
    coverage = np.ones(len(fired))
    for spec in query.windows:
        coverage = np.minimum(coverage, hit.stat("coverage", spec))
    return EventChunk(
        epoch=epoch,
        order=seq[fired],
        rank=rank,
        query=query.name,
        series=hit.series,
        ts_ms=hit.ts_ms,
        values=hit.value,
        payload={label: evaluate(hit) for label, evaluate in query.payload},
        coverage=coverage,
        replayed=replayed,
    )
