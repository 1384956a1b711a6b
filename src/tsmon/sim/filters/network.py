"""An in-process network of source filters and one coordinator, with optional message delays.

A discrete-event simulation, pure and deterministic: time is an argument, messages travel over
a :class:`~tsmon.engine.transport.Link` (instant by default; delays and losses from seeded
rules), which counts every message sent. At equal times the order is: the coordinator's tick
(boundaries and releases, §4), message deliveries, the sources' period boundaries, new values.
With zero delays this gives the idealised protocol of §3: growth decided at a boundary reaches
its source before the source re-applies its filter there.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from tsmon.engine.transport import Delay, Link, Loss, no_delay
from tsmon.protocols.filters.coordinator import NEVER_MS, Answer, Coordinator
from tsmon.protocols.filters.messages import (
    EnvelopeCounts,
    Message,
    MessageCounts,
    StreamedUpdate,
    WidthMessage,
)
from tsmon.protocols.filters.queries import Query
from tsmon.protocols.filters.source import SourceFilter

#: Event priorities at equal times (lower first).
_TICK, _DELIVER, _BOUNDARY = 0, 1, 2


class FilterNetwork:
    """Sources and coordinator wired through a transport with per-message delays.

    Parameters
    ----------
    objects
        All object ids (one filter each).
    queries
        Queries registered at ``start_ms``.
    period_ms
        Adjustment period ``T`` in milliseconds; ``None`` lets the coordinator choose it from
        the sampling interval it observes (sources learn it from their width messages).
    shrink
        Shrink percentage ``S``.
    rng
        Seeded random generator for the growth tie-break.
    start_ms
        Event time the network starts at.
    delay, loss
        Delay in ms of each message (default: instant; the latency tolerance ``λ`` is
        ``latency_ms``) and which messages are lost (default: none), rules of
        :mod:`tsmon.engine.transport`.
    latency_ms, max_rates, costs, growth
        Passed to :class:`Coordinator`.
    source_of
        Source of every object, for :attr:`envelopes` only (default: each object its own
        source, so envelopes equal messages). Messages still travel one by one.

    Attributes
    ----------
    counts
        Messages of every kind sent so far (lost ones included: :attr:`link` tallies the
        messages sent, dropped and delivered).
    envelopes
        The same messages counted once per (source, send time, direction): the cost if one
        source's messages of one instant were batched (:class:`EnvelopeCounts`).

    Examples
    --------
    >>> net = FilterNetwork(["a", "b"], [Query.sum("s", ["a", "b"], 2.0)], 1_000, 0.05,
    ...                     np.random.default_rng(1))
    >>> _ = net.update(0, "a", 1.0), net.update(0, "b", 2.0)
    >>> net.update(10, "a", 1.4)      # inside a's bound [0.5, 1.5]: nothing sent
    []
    >>> net.answers()["s"]
    Answer(value=3.0, lo=2.0, hi=4.0, as_of_ms=10)
    >>> net.counts
    MessageCounts(streamed=2, growth=0, shrink=2, replies=0)
    """

    def __init__(
        self,
        objects: Iterable[str],
        queries: Sequence[Query],
        period_ms: int | None,
        shrink: float,
        rng: np.random.Generator,
        *,
        start_ms: int = 0,
        delay: Delay = no_delay,
        loss: Loss | None = None,
        latency_ms: int = 0,
        max_rates: Mapping[str, float] | None = None,
        costs: Mapping[str, float] | None = None,
        source_of: Mapping[str, str] | None = None,
        growth: str = "paper",
    ) -> None:
        self.coordinator = Coordinator(
            period_ms,
            shrink,
            rng,
            latency_ms=latency_ms,
            max_rates=max_rates,
            costs=costs,
            growth=growth,
        )
        self.sources = {o: SourceFilter(o, period_ms, shrink) for o in objects}
        self.coordinator.set_objects(self.sources)
        self.period_ms = self.coordinator.period_ms
        self.shrink = float(shrink)
        self.link: Link[Message] = Link(delay, loss, self._count)
        self.counts = MessageCounts()
        self.envelopes = EnvelopeCounts()
        self._source_of = dict(source_of or {})
        self.now_ms = int(start_ms)
        self._events: list[tuple[int, int, int, str, Any]] = []
        self._order = itertools.count()
        self._next_boundary = NEVER_MS
        if self.period_ms is not None:
            self._next_boundary = (self.now_ms // self.period_ms + 1) * self.period_ms
        self._log: list[Message] = []
        self.coordinator.start(self.now_ms - self._tick_delay())
        for q in queries:
            self._check_objects(q)
            self._send(self.coordinator.add_query(q))
        self._run(self.now_ms)

    # ----------------------------------------------------------------- events

    def _check_objects(self, query: Query) -> None:
        unknown = [o for o in query.objects if o not in self.sources]
        if unknown:
            raise KeyError(
                f"query {query.name!r} reads unknown objects {unknown[:10]!r}; "
                "add them first with add_object"
            )

    def _push(self, at_ms: int, priority: int, kind: str, payload: Any = None) -> None:
        heapq.heappush(self._events, (at_ms, priority, next(self._order), kind, payload))

    def _count(self, messages: Sequence[Message]) -> None:
        for m in messages:
            self.counts.add(m)
            up = "up" if isinstance(m, StreamedUpdate) else "down"
            self.envelopes.add(self._source_of.get(m.object_id, m.object_id), self.now_ms, up)
        self._log.extend(messages)

    def _send(self, messages: Sequence[Message]) -> None:
        self.link.send(messages, self.now_ms, _DELIVER)

    def _head(self) -> tuple[int, int] | None:
        """``(time, priority)`` of the next event or delivery."""
        heads = [self._events[0][:2]] if self._events else []
        if (due := self.link.next_due()) is not None:
            heads.append(due)
        return min(heads, default=None)

    def _run(self, until_ms: int) -> None:
        """Process every event up to ``until_ms``, scheduling period boundaries on the way.

        A boundary is scheduled once every earlier event has run; a run of boundaries where
        nothing can happen is skipped to its last one (:meth:`_skip`), so an event-time jump
        costs O(objects · log periods), not one step per period.
        """
        self._push(until_ms, _TICK, "tick")  # answers as of until_ms − λ
        while True:
            if self.period_ms is None and self.coordinator.period_ms is not None:
                self.period_ms = self.coordinator.period_ms  # chosen: boundaries from now on
                self._next_boundary = (self.now_ms // self.period_ms + 1) * self.period_ms
            b = self._next_boundary
            head = self._head()
            if b <= until_ms and (head is None or head[0] >= b):
                b = self._skip(b, until_ms)
                self._push(b + self._tick_delay(), _TICK, "tick")
                self._push(b, _BOUNDARY, "boundary", b)
                self._next_boundary = b + self.period_ms
                continue
            if head is None or head[0] > until_ms:
                break
            if head[1] == _DELIVER:
                at_ms, message = self.link.pop()
                self.now_ms = max(self.now_ms, at_ms)
                self._deliver(message)
                continue
            at_ms, _, _, kind, payload = heapq.heappop(self._events)
            self.now_ms = max(self.now_ms, at_ms)
            if kind == "tick":
                self._send(self.coordinator.advance(self.now_ms))
            else:
                for source in self.sources.values():
                    self._send(source.advance(payload))
        self.now_ms = max(self.now_ms, until_ms)

    def _deliver(self, message: Message) -> None:
        if isinstance(message, StreamedUpdate):
            self.coordinator.receive(message, self.now_ms)
            self._push(self.now_ms, _TICK, "tick")  # released at once when padding
            self._push(max(self.now_ms, message.ts_ms + self._tick_delay()), _TICK, "tick")
        else:
            self._send(self.sources[message.object_id].apply(message, self.now_ms))

    def _skip(self, boundary: int, until_ms: int) -> int:
        """The boundary to run next, from ``boundary`` on: past every boundary before the
        next message delivery (and ``until_ms``) when at none of them anything happens — the
        coordinator has nothing counted or queued (so it grows nothing), no source holds a
        message, and no source's shrinking bound drops its value there."""
        t = self.period_ms
        assert t is not None
        deliveries = self.link.due_times()
        limit = min([until_ms + 1, *deliveries]) - 1  # the last time before any delivery
        last = limit // t * t
        coord = self.coordinator
        if last <= boundary or coord.counts.any() or len(coord.queue):
            return boundary
        for source in self.sources.values():
            if source.held or source.first_escape(boundary // t, last // t) is not None:
                return boundary
        return last

    def _tick_delay(self) -> int:
        return self.coordinator.latency_ms

    # ----------------------------------------------------------------- API

    def advance(self, now_ms: int) -> list[Message]:
        """Move time to ``now_ms``; returns the messages sent on the way."""
        if now_ms < self.now_ms:
            raise ValueError(f"time must not go back: at {self.now_ms} ms, got {now_ms} ms")
        self._log = []
        self._run(now_ms)
        return self._log

    def add_object(self, object_id: str, now_ms: int, value: float | None = None) -> None:
        """Add an object (in no query yet, ``W = inf``), with its current value if known."""
        if object_id in self.sources:
            raise ValueError(f"object {object_id!r} exists")
        self.sources[object_id] = SourceFilter(object_id, self.period_ms, self.shrink)
        self.coordinator.set_objects([object_id])
        if value is not None:
            self.update(now_ms, object_id, value)

    def update(self, now_ms: int, object_id: str, value: float) -> list[Message]:
        """Object ``object_id`` takes ``value`` at ``now_ms``; returns the messages sent."""
        if object_id not in self.sources:
            raise KeyError(f"unknown object {object_id!r}; pass one of the network's objects")
        log = self.advance(now_ms)
        self._log = log
        self._send(self.sources[object_id].observe(now_ms, value))
        self._run(now_ms)
        return log

    def add_query(self, query: Query) -> list[Message]:
        """Register ``query`` now (the coordinator's logical time)."""
        self._check_objects(query)
        return self._change(lambda: self.coordinator.add_query(query))

    def remove_query(self, name: str) -> list[Message]:
        """Unregister query ``name`` now."""
        return self._change(lambda: self.coordinator.remove_query(name))

    def alter_query(self, name: str, delta: float, *, immediately: bool = False) -> list[Message]:
        """Change the precision constraint of ``name`` now (§3.4)."""
        return self._change(
            lambda: self.coordinator.alter_query(name, delta, immediately=immediately)
        )

    def _change(self, change: Callable[[], list[WidthMessage]]) -> list[Message]:
        self._log = []
        self._send(change())
        self._run(self.now_ms)
        return self._log

    def answers(self) -> dict[str, Answer]:
        """Bounded answer of every query, as of the coordinator's logical time."""
        return self.coordinator.answers()
