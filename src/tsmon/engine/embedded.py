"""The batch host behind a :class:`~tsmon.engine.monitor.Monitor`, with an instant transport.

:class:`InstantHost` runs the same :class:`~tsmon.engine.node.SourceNode` and
:class:`~tsmon.engine.hub.CoordinatorNode` as :class:`~tsmon.engine.batched.BatchedRuntime` (it
is one), with one source node, :data:`SOURCE`, holding every series. The transport is instant:
after a batch, the control the coordinator wrote is delivered at once, the nodes that got some
step again with no data, and so on until the coordinator writes none (a top-k resolution, a
reader's forwarded query, a bounded query's width messages and the replies). So one
:meth:`InstantHost.step` is one batch of the batch runtime followed by every round trip it
causes, all at the batch's time. The Monitor sets ``bounded_lag_ms = 0``: its bounded
coordinator answers as of the node's time (:mod:`tsmon.kinds.bounded`).

Standing queries tick once per batch in which the job's time moved
(:mod:`tsmon.kinds.standing`). So that one step spanning many ``standing_tick`` intervals (a
whole CSV in one ``ingest``) still ticks in each, a step cuts its points at tick boundaries
while standing queries run (:func:`tick_batches`): the points of each interval ``(b − tick, b]``
are one batch, followed by its round trips (the snapshot to the query partitions, their
answers back), before the next interval's. Intervals without points are not stepped, so a jump
in event time costs one batch. Without standing queries a step is one batch.

Summary readers (SWAT-ASR, :class:`~tsmon.engine.replicas.SummaryReader`) follow the node's
summaries: their queued requests go out with the next step, and each round's messages, the
key's arrival count and the node's time are delivered to them, with their phase ends.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tsmon.engine.batched import BatchedRuntime
from tsmon.engine.hub import CoordinatorNode
from tsmon.engine.replicas import SummaryReader, phase_ends
from tsmon.engine.settings import HostSettings
from tsmon.query import query_key

__all__ = ["MAX_ROUNDS", "SOURCE", "InstantHost", "tick_batches"]

SOURCE = "monitor"
"""The key of the one source node."""

MAX_ROUNDS = 64
"""Round trips one step may take before it stops (answers then say they are resolving)."""


class InstantHost:
    """Statements of the kinds the batch host runs, over one source node, delivered at once.

    Examples
    --------
    >>> from tsmon.engine.settings import HostSettings
    >>> from tsmon.query import parse_query
    >>> host = InstantHost(HostSettings(period_ms=1_000, shrink=0.05))
    >>> host.add(parse_query("QUERY t AS TOP 1 OF * BY x WITHIN 0"), ["a.x", "b.x"])
    >>> host.step([("a.x", 0, 3.0), ("b.x", 0, 5.0)])
    >>> host.answers("topk")["t"].members
    ('b',)
    """

    def __init__(self, settings: HostSettings) -> None:
        self.runtime = BatchedRuntime.from_settings(settings)
        self.runtime.open_source(SOURCE)  # the queries reach the node before any point
        self.statements: dict[str, Any] = {}  # by query key, in registration order
        self.readers: list[SummaryReader] = []
        self._read_ms: dict[str, int | None] = {}  # reader -> node time it last saw

    @property
    def active(self) -> bool:
        """Whether a query or a reader needs the points."""
        return bool(self.statements or self.readers)

    def defines(self, name: str) -> bool:
        return query_key(name) in self.statements

    def texts(self) -> dict[str, str]:
        return {s.name: s.text for s in self.statements.values()}

    # -- statements ----------------------------------------------------------------------
    def add(self, statement: Any, series: Iterable[str]) -> None:
        """Register a definition; ``series`` (the Monitor's) all live at :data:`SOURCE`."""
        # as of now (the change is replayed later), and only what is new: the journal keeps
        # it until its next snapshot, and every add would hold a copy of every series
        known = self.runtime.hub().declared
        declared = {s: SOURCE for s in series if known.get(s) != SOURCE}

        def add(coordinator: CoordinatorNode) -> None:
            coordinator.declare(declared)
            coordinator.add(statement, source_of=lambda names: dict.fromkeys(names, SOURCE))

        self.runtime.change(add)
        self.statements[query_key(statement.name)] = statement
        self.step([])

    def alter(self, statement: Any) -> None:
        """Apply an alter statement of a registered query."""
        self.runtime.change(lambda coordinator: coordinator.alter(statement))
        self.step([])

    def remove(self, name: str) -> None:
        self.runtime.remove_query(name)
        del self.statements[query_key(name)]
        self.step([])

    def catch_up(self, newest: Mapping[str, tuple[int, float] | None]) -> None:
        """One batch of the newest point of each series (``newest``: series -> ``(ts, value)``)
        that the node has not seen, so that it knows every series' current value as a job's
        node does; call it before the first query or reader (no query counts these points)."""
        node = self.runtime.node(SOURCE)
        seen = {} if node is None else node.newest_ts
        points = [
            (name, p[0], p[1])
            for name, p in newest.items()
            if p is not None and p[0] > seen.get(name, p[0] - 1)
        ]
        self.step(sorted(points, key=lambda p: p[1]))

    def follow(self, reader: SummaryReader) -> None:
        """Serve ``reader`` from now on (its queued requests go with the next step)."""
        self.runtime.hub(change=True).declare({reader.key[0]: SOURCE})
        self.readers.append(reader)
        self._read_ms[reader.name] = None

    def waiting(self) -> dict[str, str]:
        """The queries with no answer for want of points: name -> why."""
        return self.runtime.hub().waiting_now(s.name for s in self.statements.values())

    def answers(self, kind: str) -> Mapping[str, Any]:
        return self.runtime.answers(kind)

    # -- the transport -------------------------------------------------------------------
    def step(self, points: Sequence[tuple[str, int, float]]) -> None:
        """``(series, ts, value)`` points in arrival order: one batch (one per
        ``standing_tick`` interval while standing queries run), each followed by every round
        trip it causes."""
        if points and self.runtime.hub().part("standing").names():
            for group in tick_batches(points, self.runtime.settings.standing.tick_ms):
                self._settle(group)
        else:
            self._settle(points)

    def evaluations(self) -> int:
        """Evaluations of standing queries so far (their query partitions' counters)."""
        return int(self.runtime.hub().part("standing").progress()["standing"]["evaluations"])

    def _settle(self, points: Sequence[tuple[str, int, float]]) -> None:
        """One batch of ``points``, then every round trip it causes."""
        batch: list[tuple[str, str, int, float]] = [(SOURCE, s, t, v) for s, t, v in points]
        for _ in range(MAX_ROUNDS):
            requests = [request for reader in self.readers for request in reader.drain()]
            if requests:  # a change to the coordinator between its steps
                replica = self.runtime.hub(change=True).part("replica")
                for request in requests:
                    replica.request(request)
            self.runtime.step_batch(batch)  # the answers are read when asked for
            batch = []
            replica = self.runtime.hub().part("replica")  # a quarantine makes a new one
            for reader in self.readers:
                self._deliver(reader, replica)
            if not (self.runtime.control or any(r.outbox for r in self.readers)):
                return

    def _deliver(self, reader: SummaryReader, replica: Any) -> None:
        """The round's messages and the key's clock to ``reader``, and its phase ends."""
        clock = replica.clock.get(reader.key)
        if clock is None:
            return
        count, now = clock
        reader.deliver(replica.out, count, now)
        phase = self.runtime.settings.replica_phase_ms
        for end in phase_ends(self._read_ms[reader.name], now, phase):
            reader.end_phase(end)
        self._read_ms[reader.name] = now


def tick_batches(
    points: Sequence[tuple[str, int, float]], tick_ms: int
) -> list[list[tuple[str, int, float]]]:
    """``(series, ts, value)`` points cut by tick interval ``(b − tick_ms, b]``: one list per
    interval that holds a point, in interval order, each in the points' order.

    >>> tick_batches([("a", 1_000, 1.0), ("b", 2_500, 2.0), ("a", 1_800, 3.0)], 1_000)
    [[('a', 1000, 1.0)], [('a', 1800, 3.0)], [('b', 2500, 2.0)]]
    """
    by_tick: dict[int, list[tuple[str, int, float]]] = {}
    for point in points:
        by_tick.setdefault(-(-point[1] // tick_ms), []).append(point)  # b = ⌈ts / tick⌉·tick
    return [by_tick[b] for b in sorted(by_tick)]
