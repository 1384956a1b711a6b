"""An in-process, zero-latency network of source filters and one coordinator (for tests)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from tsmon.protocols.filters.coordinator import Coordinator
from tsmon.protocols.filters.messages import Message, MessageCounts, StreamedUpdate
from tsmon.protocols.filters.queries import Query
from tsmon.protocols.filters.source import SourceFilter


class FilterNetwork:
    """Sources and coordinator wired with instant delivery; every message is counted.

    Period boundaries fall on event-time multiples of ``T``; when an update's time reaches one,
    the coordinator shrinks and grows first, growth messages reach their sources, and every
    source then shrinks (unless grown) and re-applies its filter, all before the update itself.

    **Supported:** AVG/SUM (weighted), MIN/MAX, overlapping queries, per-object costs.
    **Not supported:** message latency (§4), precision changes (§3.4), adding queries later.

    Parameters
    ----------
    objects
        All object ids.
    queries
        The registered queries.
    period_ms
        Adjustment period ``T`` in milliseconds.
    shrink
        Shrink percentage ``S``.
    rng
        Seeded random generator for the growth tie-break.
    costs
        Message cost ``C_i`` per object (default 1).

    Examples
    --------
    >>> net = FilterNetwork(["a", "b"], [Query.sum("s", ["a", "b"], 2.0)], 1_000, 0.05,
    ...                     np.random.default_rng(1))
    >>> _ = net.update(0, "a", 1.0), net.update(0, "b", 2.0)
    >>> net.update(10, "a", 1.4)      # inside a's bound [0, 2]: nothing sent
    []
    >>> net.answers()
    {'s': (2.0, 4.0)}
    >>> net.counts
    MessageCounts(streamed=2, growth=0, shrink=0)
    """

    def __init__(
        self,
        objects: Iterable[str],
        queries: Sequence[Query],
        period_ms: int,
        shrink: float,
        rng: np.random.Generator,
        costs: Mapping[str, float] | None = None,
    ) -> None:
        objs = list(objects)
        self.coordinator = Coordinator(objs, queries, period_ms, shrink, rng, costs)
        widths = self.coordinator.widths()
        self.sources = {
            o: SourceFilter(o, widths[o], shrink, adaptive=self.coordinator.is_adaptive(o))
            for o in objs
        }
        self.period_ms = int(period_ms)
        self.now_ms: int | None = None
        self.next_period_ms: int | None = None
        self.counts = MessageCounts()

    def _send(self, message: StreamedUpdate | None, log: list[Message]) -> None:
        if message is not None:
            self.counts.add(message)
            log.append(message)
            self.coordinator.on_update(message)

    def _period(self, ts_ms: int, log: list[Message]) -> None:
        for growth in self.coordinator.on_period(ts_ms):
            self.counts.add(growth)
            log.append(growth)
            self._send(self.sources[growth.object_id].apply(growth), log)
        for source in self.sources.values():
            self._send(source.on_period(ts_ms), log)

    def advance(self, now_ms: int) -> list[Message]:
        """Move event time to ``now_ms``, running every period boundary reached on the way."""
        if self.now_ms is not None and now_ms < self.now_ms:
            raise ValueError(
                f"event time must not go back: current {self.now_ms} ms, got {now_ms} ms"
            )
        if self.next_period_ms is None:
            self.next_period_ms = (now_ms // self.period_ms + 1) * self.period_ms
        self.now_ms = now_ms
        log: list[Message] = []
        while self.next_period_ms <= now_ms:
            self._period(self.next_period_ms, log)
            self.next_period_ms += self.period_ms
        return log

    def update(self, now_ms: int, object_id: str, value: float) -> list[Message]:
        """Object ``object_id`` takes ``value`` at ``now_ms``; returns the messages sent."""
        if object_id not in self.sources:
            raise KeyError(f"unknown object {object_id!r}; pass one of the network's objects")
        log = self.advance(now_ms)
        self._send(self.sources[object_id].observe(now_ms, value), log)
        return log

    def answers(self) -> dict[str, tuple[float, float]]:
        """Bounded answer ``(lo, hi)`` of every query."""
        return self.coordinator.answers()
