"""The batch-synchronous runtime of the adaptive filters: the steps Spark hosts, run in-process.

In Spark every micro-batch ``N`` runs two steps (ARCHITECTURE, "The Spark runtime"):

1. each source node (one per ``source`` key, in ``transformWithState``) applies the control
   rows the coordinator wrote in batch ``N−1``, then its data points of batch ``N`` in
   ``(ts, seq)`` order, and emits message rows, the events and rejected points of its watch
   queries and registers (:mod:`tsmon.engine.watch`), and one heartbeat;
2. the driver (``foreachBatch``) runs the coordinator once on all of batch ``N``'s message rows,
   a pure step ``state_N = f(state_{N−1}, rows_N)``, and writes the control rows of batch ``N+1``.

:class:`SourceNode` and :class:`CoordinatorNode` are those two steps, as plain picklable
objects that take and return rows of plain dicts (messages through
:mod:`~tsmon.protocols.filters.codec`); :class:`BatchedRuntime` wires them in one process as the
reference the Spark host must agree with. The protocol is Olston, Jiang & Widom (SIGMOD 2003);
the one-batch delay of every message is latency in the sense of its §4, handled as follows.

The same two steps host the other protocols, each in its own module: top-k monitor nodes
(:mod:`tsmon.engine.topk`), the stream models of standing queries and their query partitions
(:mod:`tsmon.engine.deferred`; a partition is a node under a reserved key, made by
:func:`new_node`), summary queries (:mod:`tsmon.engine.watch`) and the SWAT-ASR source sites
that summary readers follow (:mod:`tsmon.engine.replicas`).

Time (the choice, since the paper assumes a coordinator clock): the coordinator's time after
batch ``N`` is ``min over known sources of now_ms, minus 1 ms``, never going back. A source's
``now_ms`` is the newest timestamp it has processed; it has then sent every update stamped
before ``now_ms`` (it ran every period boundary up to ``now_ms`` for all its filters), but a
later batch may still hold points stamped exactly ``now_ms`` (a batch can end between two
points of one instant), hence the ``−1``. The updates of the batch go into the coordinator's
serializing queue (§4, latency ``λ = 0``), which releases them in timestamp order up to that
time, interleaved with the period boundaries; so answers are exact *as of* the coordinator's
time, and the coordinator never shrinks past a boundary a source has not reached. Width
messages are stamped with that time (or a boundary before it), which every source has passed:
a source applies them late, replaying the period shrinks since their stamp (§3.1), so both
sides hold the same width to the bit. Meanwhile a grown bound is narrower at the source than
the coordinator assumes, and a shrink is assumed only once the source confirms it (§3.4, §4):
the coordinator's view is never narrower than the source's.

Query changes (§3.4) between batches happen at the coordinator's time at once (before any
source reported a time, at the first step's time); their width messages go out with the next
step's control, so sources apply them a batch later. Control rows are ordered by the width
messages' sequence numbers; a node's output rows carry its updates' ``(ts_ms, seq)``, so the
coordinator's step does not depend on the order rows arrive in.

Limits: a source that stops sending data holds the coordinator's time back (it may still owe
the updates of its next period boundaries); a host with an event-time watermark can move an
idle node with :meth:`SourceNode.advance`. A point older than its node's time (late across
batches) is applied at the node's time, or ignored and counted if older than its series'
newest point, as the in-process host does (:mod:`tsmon.engine.bounded`).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import numbers
import pickle
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tsmon.engine.bounded import to_query
from tsmon.engine.deferred import (
    PARTITION_PREFIX,
    StandingCoordinator,
    StandingPartition,
    StandingSettings,
    StandingSource,
    is_partition,
    standing_series,
)
from tsmon.engine.replicas import DEFAULT_PHASE_MS, ReplicaHost
from tsmon.engine.standing import StandingAnswer
from tsmon.engine.summaries import SummaryAnswer
from tsmon.engine.topk import TOPK_OPS, TopKAnswer, TopKCoordinator, TopKSource
from tsmon.engine.watch import WATCH_OPS, LocalQueries, RegisterSettings, WatchLog, event_order
from tsmon.protocols.filters.codec import from_dict, to_dict
from tsmon.protocols.filters.coordinator import Answer, Coordinator
from tsmon.protocols.filters.messages import (
    Growth,
    MessageCounts,
    Shrink,
    StreamedUpdate,
    WidthMessage,
)
from tsmon.protocols.filters.queries import Query, check_delta
from tsmon.protocols.filters.source import SourceFilter
from tsmon.query import AggregateDef, AlterTopK, StandingDef, TopKDef, query_key
from tsmon.query.aggregate import resolve_aggregate
from tsmon.query.patterns import series_matches

__all__ = ["BatchCounts", "BatchedRuntime", "CoordinatorNode", "SourceNode", "new_node"]

Row = dict[str, Any]


@dataclass(frozen=True)
class _Point:
    series: str
    ts: int
    value: float
    seq: int


def _is_int(x: object) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _parse_data(rows: Sequence[Mapping[str, Any]], source: str) -> list[_Point]:
    """Validate data rows (nothing changes if one is bad); returns them in ``(ts, seq)`` order."""
    points = []
    for n, row in enumerate(rows):
        where = f"source {source!r}, data row {n}"
        if not isinstance(row, Mapping) or not {"series", "ts", "value", "seq"} <= set(row):
            raise ValueError(f"{where}: expected a dict with series, ts, value, seq; got {row!r}")
        series, ts, value, seq = row["series"], row["ts"], row["value"], row["seq"]
        if not isinstance(series, str):
            raise ValueError(f"{where}: series must be a str, got {series!r}")
        if not (_is_int(ts) and _is_int(seq)):
            raise ValueError(f"{where}: ts and seq must be ints (ms, order), got {ts!r}, {seq!r}")
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError(f"{where}: value of {series!r} must be a number, got {value!r}")
        if not math.isfinite(value):
            raise ValueError(
                f"{where}: value of {series!r} must be finite, got {value} at {ts} ms; "
                "reject it before the source node (dead letters)"
            )
        points.append(_Point(series, int(ts), float(value), int(seq)))
    return sorted(points, key=lambda p: (p.ts, p.seq))


@dataclass(frozen=True)
class _Control:
    """A node's control rows of one batch, validated, each kind in order."""

    changes: list[dict[str, str]]  # watch- and summary-query changes
    topk: list[Mapping[str, Any]]  # top-k control payloads
    tracked: list[str]  # series to model for standing queries
    replica: list[Mapping[str, Any]]  # summary readers' requests (SWAT-ASR)
    widths: list[tuple[int, WidthMessage]]  # (seq, width message)


def _parse_control(rows: Sequence[Mapping[str, Any]], source: str) -> _Control:
    """Validate control rows (a ``ValueError`` naming the row for a bad one)."""
    watch: list[tuple[int, dict[str, str]]] = []
    tracked: list[tuple[int, list[str]]] = []
    replica: list[tuple[int, Mapping[str, Any]]] = []
    topk: list[tuple[int, Mapping[str, Any]]] = []
    out = []
    for n, row in enumerate(rows):
        where = f"source {source!r}, control row {n}"
        if not isinstance(row, Mapping) or not _is_int(row.get("seq")) or "payload" not in row:
            raise ValueError(f"{where}: expected {{'seq': int, 'payload': dict}}, got {row!r}")
        payload = row["payload"]
        if isinstance(payload, Mapping) and payload.get("type") == "topk":
            if payload.get("op") not in (*TOPK_OPS, "msg") or not _is_int(payload.get("gen")):
                raise ValueError(f"{where}: bad top-k control {payload!r}")
            topk.append((int(row["seq"]), payload))
            continue
        if isinstance(payload, Mapping) and payload.get("type") == "standing":
            series = payload.get("series")
            if payload.get("op") != "track" or not (
                isinstance(series, list) and all(isinstance(x, str) for x in series)
            ):
                raise ValueError(f"{where}: bad standing control {payload!r}")
            tracked.append((int(row["seq"]), series))
            continue
        if isinstance(payload, Mapping) and payload.get("type") == "replica":
            if not isinstance(payload.get("request"), Mapping):
                raise ValueError(f"{where}: bad replica request {payload!r}")
            replica.append((int(row["seq"]), payload["request"]))
            continue
        if isinstance(payload, Mapping) and payload.get("type") == "watch":
            op, text = payload.get("op"), payload.get("text")
            if op not in WATCH_OPS or not isinstance(text, str):
                raise ValueError(f"{where}: bad watch-query change {payload!r}")
            watch.append((int(row["seq"]), {"op": op, "text": text}))
            continue
        try:
            message = from_dict(payload)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        if not isinstance(message, Growth | Shrink):
            raise ValueError(f"{where}: control carries growth or shrink messages, got {message}")
        out.append((int(row["seq"]), message.seq, message))
    changes = [c for _, c in sorted(watch, key=lambda x: x[0])]
    # logged top-k changes first (by log index), then protocol messages (by send order)
    topk.sort(key=lambda x: (x[1]["op"] == "msg", x[0]))
    widths = [(s, m) for s, _, m in sorted(out, key=lambda x: x[:2])]
    series = [x for _, names in sorted(tracked, key=lambda x: x[0]) for x in names]
    requests = [r for _, r in sorted(replica, key=lambda x: x[0])]
    return _Control(changes, [p for _, p in topk], series, requests, widths)


class SourceNode:
    """One source node: a :class:`SourceFilter` per series it has seen, stepped once per batch,
    and with ``registers`` its stored points, windows and watch queries
    (:class:`~tsmon.engine.watch.LocalQueries`, starting with the queries of ``watch``).

    A filter is created at a series' first point or first width message; until a width message
    puts the series in a query its ``W = inf`` and it never sends (§3.4). The node's time
    ``now_ms`` is the newest timestamp it processed; control rows are applied at it (a message
    stamped later would be held by the filter until due), then the batch's points, then every
    filter is moved to ``now_ms`` so that all updates stamped before it are out.

    Examples
    --------
    >>> node = SourceNode("n1", period_ms=1_000, shrink=0.1)
    >>> shrink = {"type": "shrink", "object_id": "a", "width": 2.0, "ts_ms": 0, "seq": 1,
    ...           "adaptive": True}
    >>> out = node.step([{"seq": 1, "payload": shrink}],
    ...                 [{"series": "a", "ts": 5, "value": 1.0, "seq": 0},
    ...                  {"series": "a", "ts": 7, "value": 1.5, "seq": 1}])
    >>> [row["kind"] for row in out], out[-1]["payload"]
    (['msg', 'heartbeat'], {'now_ms': 7, 'points': 2, 'stale': 0, 'series': ['a']})
    """

    def __init__(
        self,
        source: str,
        period_ms: int,
        shrink: float,
        registers: RegisterSettings | None = None,
        watch: str = "",
        topk: str = "",
        tracked: Sequence[str] = (),
        standing_settings: StandingSettings | None = None,
        replica_phase_ms: int = DEFAULT_PHASE_MS,
    ) -> None:
        if not isinstance(source, str):
            raise TypeError(f"source must be a str, got {source!r}")
        SourceFilter(source, period_ms, shrink)  # refuses a bad T or S with the reason
        self.local = LocalQueries(registers, watch)  # watch and summary queries
        # the filters track each series' current value as the registers do: the newest point;
        # under keep_first a repeated timestamp keeps the first value
        self.keep_first = registers is not None and registers.duplicates == "keep_first"
        self.source = source
        self.topk = TopKSource(topk)  # its monitor nodes of top-k queries
        # the stream models of standing queries' series (engine.deferred)
        settings = standing_settings or StandingSettings()
        self.standing = StandingSource(tracked, settings)  # standing queries' series
        self.replicas = ReplicaHost(replica_phase_ms)  # SWAT-ASR source sites for readers
        self.requests: list[Mapping[str, Any]] = []  # readers' requests not served yet
        self.period_ms = int(period_ms)
        self.shrink = float(shrink)
        self.filters: dict[str, SourceFilter] = {}
        self.newest_ts: dict[str, int] = {}  # series -> timestamp of its newest point
        self.now_ms: int | None = None
        self.held: list[tuple[int, WidthMessage]] = []  # control that came before any point
        self.points = 0  # points applied, all steps
        self.stale = 0  # points older than their series' newest: ignored, counted
        self.clamped = 0  # points older than the node's time: applied at the node's time

    def step(
        self, control: Sequence[Mapping[str, Any]], data: Sequence[Mapping[str, Any]]
    ) -> list[Row]:
        """Apply ``control`` rows (``{"seq", "payload"}``: watch-query changes first, then
        width messages), then ``data`` rows (``{"series", "ts", "value", "seq"}``); return
        ``{"kind": "msg", "payload": ...}`` rows, one per streamed update, the ``event`` and
        ``dead`` rows of the watch queries and registers, then one ``{"kind": "heartbeat",
        "payload": {"now_ms", "points", "stale", "series"}}`` row (``series``: those whose
        first point came in this step).

        All rows are validated first: a bad one raises ``ValueError`` and changes nothing.
        """
        c = _parse_control(control, self.source)
        points = _parse_data(data, self.source)
        for change in c.changes:
            self.local.change(change["op"], change["text"])
        self.standing.track(c.tracked)
        self.requests += c.replica  # served once the node has a time
        topk_rows: list[Row] = []
        for payload in c.topk:
            if payload["op"] == "msg":
                topk_rows += self.topk.deliver(payload["query"], payload["gen"], payload["msg"])
            else:
                self.topk.change(payload["op"], payload["text"], payload["gen"])
        return [*topk_rows, *self._run(c.widths, points, None)]

    def advance(self, now_ms: int) -> list[Row]:
        """Move the node's time to ``now_ms`` without data (an event-time watermark: the host
        promises no point stamped before it); returns rows as :meth:`step` does."""
        if not _is_int(now_ms):
            raise ValueError(f"now_ms must be an int (ms), got {now_ms!r}")
        if self.now_ms is not None and now_ms < self.now_ms:
            raise ValueError(
                f"time of source {self.source!r} must not go back: "
                f"at {self.now_ms} ms, got {now_ms} ms"
            )
        return self._run([], [], int(now_ms))

    def _filter(self, series: str) -> SourceFilter:
        if series not in self.filters:
            self.filters[series] = SourceFilter(series, self.period_ms, self.shrink)
        return self.filters[series]

    def _run(
        self, messages: list[tuple[int, WidthMessage]], points: list[_Point], until_ms: int | None
    ) -> list[Row]:
        if self.now_ms is None:
            start = points[0].ts if points else until_ms
            if start is None:  # no time yet to apply control at: hold it for the first point
                self.held = sorted(self.held + messages, key=lambda x: (x[0], x[1].seq))
                return [*self._local_outputs(), self._heartbeat(0, 0, [])]
            self.now_ms = start
        out: list[StreamedUpdate] = []
        for _, message in sorted(self.held + messages, key=lambda x: (x[0], x[1].seq)):
            out += self._filter(message.object_id).apply(message, self.now_ms)
        self.held = []
        applied = stale = 0
        new: list[str] = []
        in_order: list[_Point] = []  # the points applied, for the summaries and replicas
        protocol: list[Row] = []  # top-k and stream-model rows
        for p in points:
            newest = self.newest_ts.get(p.series)
            if newest is None:
                new.append(p.series)
            elif p.ts < newest or (p.ts == newest and self.keep_first):
                stale += 1  # older than the series' current value, or a kept-out duplicate
                continue
            if p.ts < self.now_ms:
                self.clamped += 1  # late across batches: the value holds from the node's time
            self.now_ms = max(self.now_ms, p.ts)
            self.newest_ts[p.series] = p.ts
            out += self._filter(p.series).observe(self.now_ms, p.value)
            protocol += self.topk.observe(p.ts, p.series, p.value, self.now_ms)
            self.standing.observe(p.series, p.ts, p.value)
            in_order.append(p)
            applied += 1
        if until_ms is not None:
            self.now_ms = max(self.now_ms, until_ms)
        for f in self.filters.values():  # every boundary up to now_ms, for every series (§3.1)
            out += f.advance(self.now_ms)
        protocol += self.topk.advance(self.now_ms)
        protocol += self.standing.report(self.now_ms)
        self.points += applied
        self.stale += stale
        self.local.ingest(
            [p.series for p in points], [p.ts for p in points], [p.value for p in points]
        )
        self.local.summarize([p.series for p in in_order], [p.value for p in in_order])
        protocol += self._replicate(in_order)
        rows: list[Row] = [{"kind": "msg", "payload": to_dict(u)} for u in out]
        heartbeat = self._heartbeat(applied, stale, sorted(set(new)))
        return [*rows, *protocol, *self._local_outputs(), heartbeat]

    def _replicate(self, points: list[_Point]) -> list[Row]:
        """SWAT-ASR at this node (:mod:`tsmon.engine.replicas`): readers' requests, then the
        batch's in-order values; the messages for the readers and the keys' arrival counts."""
        requests, self.requests = self.requests, []
        if not (requests or self.replicas.sites):
            return []
        assert self.now_ms is not None
        values: dict[str, list[float]] = {}
        for p in points:
            values.setdefault(p.series, []).append(p.value)
        rows: list[Row] = [
            {"kind": "replica", "payload": m}
            for m in self.replicas.step(self.now_ms, requests, values)
        ]
        counts = [[*key, n] for key, n in sorted(self.replicas.counts().items())]
        rows.append(
            {"kind": "replica_counts", "payload": {"now_ms": self.now_ms, "counts": counts}}
        )
        return rows

    def _local_outputs(self) -> list[Row]:
        return self.local.outputs()

    def _heartbeat(self, points: int, stale: int, series: list[str]) -> Row:
        payload = {"now_ms": self.now_ms, "points": points, "stale": stale, "series": series}
        ignored = self.topk.ignored()
        if ignored:
            payload["topk_ignored"] = ignored
        return {"kind": "heartbeat", "payload": payload}


@dataclass
class BatchCounts:
    """What crossed between the nodes and the coordinator, each row counted once.

    ``messages`` counts streamed updates received and growth/shrink messages sent;
    ``rows_in`` every row the coordinator read (messages, events, dead letters and
    ``heartbeats``); ``control_rows`` every row it wrote (width messages, watch-query
    changes); ``batches`` the batches applied (a replayed batch is not counted again).
    """

    messages: MessageCounts = field(default_factory=MessageCounts)
    rows_in: int = 0
    heartbeats: int = 0
    control_rows: int = 0
    batches: int = 0


class CoordinatorNode:
    """The coordinator as a pure step per batch: rows of batch ``N`` in, control for ``N+1`` out.

    Wraps a :class:`Coordinator` with latency ``λ = 0``; its time is explained in the module
    docstring. Width messages go to the source of their object, learned from the rows (a
    streamed update, or a heartbeat's ``series``), else declared by ``source_of`` here or in
    :meth:`add_query`. Query changes before the coordinator has a time (no source reported
    yet) wait for the first :meth:`step` and happen at its time.

    Watch queries run at the source nodes (:mod:`tsmon.engine.watch`): ``watch`` is the text
    every node starts with; :meth:`add_watch`, :meth:`alter_watch` and :meth:`remove_query` log
    changes that go to every source that has reported, with the next control. ``event`` and
    ``dead`` rows of the nodes are accepted and left to the host's sinks.

    A batch id is applied once: stepping the last batch id again returns the same control and
    changes nothing; an older id raises. :meth:`snapshot` after each step and :meth:`restore`
    before a replay make a replayed batch give identical control (ARCHITECTURE: the driver
    snapshots ``state_N`` before writing ``ctrl-<N>.json``).
    """

    def __init__(
        self,
        period_ms: int,
        shrink: float,
        seed: int,
        growth: str = "paper",
        source_of: Mapping[str, str] | None = None,
        watch: str = "",
        topk: str = "",
        standing: str = "",
        standing_settings: StandingSettings | None = None,
    ) -> None:
        self.watch = WatchLog(watch)  # the job's watch queries and their live changes
        self.topk = TopKCoordinator(topk)  # the job's top-k queries, live changes, protocol
        # standing queries: stream table, interruptions, query partitions (engine.deferred)
        self.standing = StandingCoordinator(standing, standing_settings)
        self.shared: set[str] = set()  # series seen at several sources (fine for top-k)
        self.globbed: dict[str, AggregateDef] = {}  # bounded queries over globs, by name
        self.dropped: dict[str, str] = {}  # glob queries that cannot be evaluated, and why
        self._globs_expanded_over = -1  # how many series the glob queries were expanded over
        self.sources: set[str] = set()  # every source that sent a heartbeat
        self.summaries: dict[str, SummaryAnswer] = {}  # summary queries' newest answers
        self.summaries_arrived: list[SummaryAnswer] = []  # those that came in the last step
        self.replica_waiting: list[dict[str, Any]] = []  # readers' requests to send
        self.replica_out: list[Row] = []  # the last step's messages for readers
        self.replica_clock: dict[tuple[str, int, int], tuple[int, int]] = {}  # key -> count, ms
        self.coordinator = Coordinator(
            period_ms, shrink, np.random.default_rng(seed), latency_ms=0, growth=growth
        )
        self.declared: dict[str, str] = dict(source_of or {})  # series -> source, as told
        self.learned: dict[str, str] = {}  # series -> source, as seen in rows: authoritative
        self.source_now: dict[str, int] = {}  # source -> newest now_ms it reported
        self.outbox: list[WidthMessage] = []  # from query changes, out with the next step
        self.deferred: list[tuple[Any, ...]] = []  # query changes waiting for a time
        self.parked: list[WidthMessage] = []  # width messages waiting for their series' source
        self.last_batch_id: int | None = None
        self.last_control: dict[str, list[Row]] = {}
        self.counts = BatchCounts()

    # ----------------------------------------------------------------- queries

    @property
    def started(self) -> bool:
        """Whether the coordinator has a time (some source reported one)."""
        return self.coordinator.settled_ms is not None

    def source_of(self, series: str) -> str | None:
        """Where ``series``'s points come from, if known."""
        return self.learned.get(series, self.declared.get(series))

    def _planned(self) -> dict[str, Query]:
        """The queries once every deferred change is made."""
        queries = dict(self.coordinator.queries)
        for op in self.deferred:
            if op[0] == "add":
                queries[op[1].name] = op[1]
            elif op[0] == "alter":
                queries[op[1]] = queries[op[1]].with_delta(op[2])
            else:
                del queries[op[1]]
        return queries

    def bounded_series(self) -> set[str]:
        """The series some bounded query reads (each must come from one source)."""
        return {o for q in self._planned().values() for o in q.objects}

    def names(self) -> list[str]:
        """Every query name: bounded ones (also those over globs matching nothing yet) and
        watch queries, once every deferred change is made."""
        return list(
            dict.fromkeys(
                [
                    *self._planned(),
                    *self.globbed,
                    *self.watch.names(),
                    *self.topk.names(),
                    *self.standing.names(),
                ]
            )
        )

    def _free(self, name: str) -> None:
        taken = {query_key(n): n for n in self.names()}
        if query_key(name) in taken:
            raise ValueError(
                f"query {name!r} exists (as {taken[query_key(name)]!r}); remove it first"
            )

    def add_glob_query(self, statement: AggregateDef) -> None:
        """Register a bounded aggregate whose terms hold globs (``AVG(host*.cpu)``).

        A running job does not know its series in advance, so the query covers the matching
        series the rows have shown so far (or ``source_of`` declared): from the first step
        where every term matches, and registered again over the larger set whenever a new
        matching series appears (an added query, §3.4: its bounds shrink to a share at once).
        """
        self._free(statement.name)
        self.globbed[statement.name] = statement
        self._globs_expanded_over = -1  # expand at the next step

    def _expand_globs(self) -> list[WidthMessage]:
        """Re-register each glob query whose matching series changed (at the current time)."""
        out: list[WidthMessage] = []
        known = sorted({*self.learned, *self.declared} - self.shared)
        if len(known) == self._globs_expanded_over:
            return out  # no new series (the set only grows) and no new glob query since
        self._globs_expanded_over = len(known)
        for name, statement in list(self.globbed.items()):
            waiting = [
                t for t in statement.terms if not any(series_matches(k, [t.series]) for k in known)
            ]
            if waiting:  # a term matches no series yet
                continue
            try:
                query = to_query(resolve_aggregate(statement, known))
            except ValueError as e:  # it never will (weights summing to 0): drop it, say why
                del self.globbed[name]
                self.dropped[name] = str(e)
                if name in self.coordinator.queries:
                    out += self.coordinator.remove_query(name)
                continue
            old = self.coordinator.queries.get(name)
            if old is not None and old.objects == query.objects:
                continue
            if old is not None:
                out += self.coordinator.remove_query(name)
            out += self.coordinator.add_query(query)
        return out

    def add_watch(self, text: str) -> list[str]:
        """Register watch queries at every source node, from the next control on."""
        return self.watch.add(text, taken=[*self._planned(), *self.globbed, *self.topk.names()])

    def add_topk(self, statement: TopKDef) -> None:
        """Start a top-k query: its definition goes to every source with the next control;
        each source counts from when it gets it (:mod:`tsmon.engine.topk`)."""
        self._free(statement.name)
        self.topk.add(statement)

    def add_standing(self, statement: StandingDef) -> None:
        """Start a standing query (deferred evaluation) at its query partition; globs expand
        over the series known now (:mod:`tsmon.engine.deferred`)."""
        self._free(statement.name)
        self.standing.add(statement, sorted({*self.learned, *self.declared}))

    def standing_answers(self) -> dict[str, StandingAnswer]:
        """The last evaluation of every standing query."""
        return self.standing.answers()

    def alter_topk(self, change: AlterTopK) -> None:
        """New ``k`` (and ε) for a top-k query, once no resolution of it is under way."""
        name = self.registered_name(change.name)
        if not self.topk.defines(name):
            raise ValueError(f"{name!r} is not a top-k query")
        self.topk.alter(dataclasses.replace(change, name=name))

    def topk_answers(self) -> dict[str, TopKAnswer]:
        """The current set of every top-k query, with its ε and epoch."""
        return self.topk.answers()

    def alter_watch(self, text: str) -> list[str]:
        """Redefine watch queries at every source node (windows still needed are kept)."""
        return self.watch.alter(text)

    def registered_name(self, name: str) -> str:
        """The registered spelling of query ``name`` (names ignore case); a ``KeyError``
        naming the registered queries if there is none."""
        for known in self.names():
            if query_key(known) == query_key(name):
                return known
        raise KeyError(f"no query {name!r}; registered: {sorted(self.names())!r}")

    def _known(self, name: str) -> Query:
        planned = self._planned()
        if name not in planned:
            raise KeyError(f"no query {name!r}; registered: {sorted(planned)!r}")
        return planned[name]

    def add_query(self, query: Query, source_of: Mapping[str, str] | None = None) -> None:
        """Register ``query``; its width messages go out with the next :meth:`step`.

        ``source_of`` names the source of series not seen in any row yet; width messages for a
        series whose source is still unknown wait until a row shows where it lives.
        """
        given = dict(source_of or {})
        wrong = [
            o for o in query.objects if o in given and given[o] != self.learned.get(o, given[o])
        ]
        if wrong:
            raise ValueError(
                f"query {query.name!r}: series {wrong[0]!r} comes from source "
                f"{self.learned[wrong[0]]!r}, not {given[wrong[0]]!r}; fix source_of"
            )
        self._free(query.name)
        shared = sorted(self.shared.intersection(query.objects))
        if shared:
            raise ValueError(
                f"query {query.name!r}: series {shared[0]!r} comes from several sources; a "
                "bounded query needs each of its series at one source"
            )
        if self.started:
            self.outbox += self.coordinator.add_query(query)
        else:
            self.deferred.append(("add", query))
        self.declared.update({o: given[o] for o in query.objects if o in given})

    def alter_query(self, name: str, delta: float, *, immediately: bool = False) -> None:
        """Change the precision constraint of ``name`` to ``delta`` (§3.4), at the next step."""
        name = self.registered_name(name)
        if self.watch.defines(name):
            raise ValueError(f"{name!r} is a watch query: redefine it (QUERY {name} ON ...)")
        if self.topk.defines(name):
            self.topk.alter_eps(name, delta)
            return
        if self.standing.defines(name):
            self.standing.alter(name, delta, sorted({*self.learned, *self.declared}))
            return
        if name in self.globbed:
            statement = self.globbed[name]
            check_delta(name, delta)
            self.globbed[name] = dataclasses.replace(statement, delta=float(delta))
            if name not in self.coordinator.queries:
                return  # registered later, with the new δ
        self._known(name).with_delta(delta)  # refuses a bad δ now
        if self.started:
            self.outbox += self.coordinator.alter_query(name, delta, immediately=immediately)
        else:
            self.deferred.append(("alter", name, delta, immediately))

    def remove_query(self, name: str) -> None:
        """Unregister query ``name`` (any kind; names ignore case). Objects left in no bounded
        query stop sending (``W = inf``); a watch query is removed at every source node."""
        name = self.registered_name(name)
        if self.watch.defines(name):
            self.watch.remove(name)
            return
        if self.topk.defines(name):
            self.topk.remove(name)
            return
        if self.standing.defines(name):
            self.standing.remove(name)
            return
        if self.globbed.pop(name, None) is not None and name not in self._planned():
            return  # it matched no series yet
        self._known(name)
        if self.started:
            self.outbox += self.coordinator.remove_query(name)
        else:
            self.deferred.append(("remove", name))

    def _run_deferred(self) -> list[WidthMessage]:
        out: list[WidthMessage] = []
        for op in self.deferred:
            if op[0] == "add":
                out += self.coordinator.add_query(op[1])
            elif op[0] == "alter":
                out += self.coordinator.alter_query(op[1], op[2], immediately=op[3])
            else:
                out += self.coordinator.remove_query(op[1])
        self.deferred = []
        return out

    # ----------------------------------------------------------------- the step

    def step(self, batch_id: int, outputs: Sequence[Mapping[str, Any]]) -> dict[str, list[Row]]:
        """Apply batch ``batch_id``'s node rows (each with its ``"source"``); return the control
        rows ``{"seq", "payload"}`` of the next batch, per source (sources with none left out).

        The result does not depend on the order of ``outputs``. A bad row raises
        ``ValueError`` before anything changes.
        """
        if not _is_int(batch_id):
            raise ValueError(f"batch_id must be an int, got {batch_id!r}")
        if self.last_batch_id is not None and batch_id <= self.last_batch_id:
            if batch_id == self.last_batch_id:
                return copy.deepcopy(self.last_control)  # a replay: applied already
            raise ValueError(
                f"batch {batch_id} is older than the last applied batch {self.last_batch_id}; "
                f"restore the snapshot taken after batch {batch_id - 1} to replay it"
            )
        updates, now_of, seen, topk_rows, standing_rows, summaries, ignored = self._parse(outputs)
        self.standing.receive(standing_rows)
        self._summaries_in([r for r in summaries if r["kind"] == "summary"])
        self._replicas_in([r for r in summaries if r["kind"] != "summary"])
        for source, counts in ignored.items():
            self.topk.note_ignored(source, counts)
        for source, now in now_of.items():
            if now is not None:
                self.source_now[source] = max(now, self.source_now.get(source, now))
        self.learned.update(seen)
        self.sources.update(now_of)
        coord = self.coordinator
        fresh = [u.object_id for u in updates if u.object_id not in coord.cache.index]
        if fresh:
            coord.set_objects(dict.fromkeys(fresh))
        for u in updates:
            # late only if stamped before the coordinator's time (a source that joined late)
            arrival = u.ts_ms if coord.now_ms is None else max(u.ts_ms, coord.now_ms)
            coord.receive(u, arrival_ms=arrival)
            self.counts.messages.add(u)
        out, self.outbox = self.outbox, []
        if self.source_now:
            horizon = min(self.source_now.values()) - 1  # see the module docstring
            if coord.settled_ms is not None:
                horizon = max(horizon, coord.settled_ms)
            out += coord.advance(horizon)
            out += self._run_deferred()
            out += self._expand_globs()
        control = self.watch.control_for(self.sources)
        for source, rows in self.topk.step(topk_rows, self.sources).items():
            control.setdefault(source, []).extend(rows)
        for source, rows in self._replica_control().items():
            control.setdefault(source, []).extend(rows)
        job_now = max(self.source_now.values()) if self.source_now else None
        for key, rows in self.standing.control_for(self.sources, job_now).items():
            seq = len(control.get(key, []))
            control.setdefault(key, []).extend(
                {"seq": seq + n, **row} for n, row in enumerate(rows)
            )
        self.counts.control_rows += sum(len(rows) for rows in control.values())
        decided = sorted(out, key=lambda m: m.seq)
        for m in decided:
            self.counts.messages.add(m)  # counted once, when decided
        waiting, self.parked = self.parked + decided, []
        for m in waiting:
            source = self.source_of(m.object_id)
            if source is None:  # no row has shown where this series lives yet
                self.parked.append(m)
                continue
            control.setdefault(source, []).append({"seq": m.seq, "payload": to_dict(m)})
            self.counts.control_rows += 1
        control = dict(sorted(control.items()))
        self.counts.rows_in += len(outputs)
        self.counts.heartbeats += sum(1 for row in outputs if row["kind"] == "heartbeat")
        self.counts.batches += 1
        self.last_batch_id, self.last_control = int(batch_id), control
        return copy.deepcopy(control)

    def _parse(
        self, outputs: Sequence[Mapping[str, Any]]
    ) -> tuple[
        list[StreamedUpdate],
        dict[str, int | None],
        dict[str, str],
        list[Row],
        list[Row],
        list[Row],
        dict[str, Any],
    ]:
        """Validate every row; returns updates in canonical order, each source's newest
        ``now_ms``, series → source as the rows show it, the top-k rows, the standing-query
        rows (stream models, partitions' answers), the summary answers and each source's
        counts of points its top-k queries ignored.

        A series may come from several sources (a top-k metric summed over them): such a
        series is *shared*; a bounded query over it fails, as its filter has one source."""
        updates: list[StreamedUpdate] = []
        now_of: dict[str, int | None] = {}
        seen: dict[str, str] = {}
        topk: list[Row] = []
        standing: list[Row] = []
        summaries: list[Row] = []
        replicas: list[Row] = []
        ignored: dict[str, Any] = {}
        bounded = self.bounded_series()

        def locate(series: str, source: str, where: str, *, strict: bool) -> None:
            known = seen.get(series, self.learned.get(series, self.declared.get(series, source)))
            if known != source and (strict or series in bounded):
                raise ValueError(
                    f"{where}: series {series!r} comes from source {source!r} but is known at "
                    f"{known!r}; a bounded query needs each of its series at one source "
                    "(fix source_of or the data)"
                )
            if known != source:
                self.shared.add(series)
            seen.setdefault(series, known)

        for n, row in enumerate(outputs):
            where = f"output row {n}"
            if not isinstance(row, Mapping) or not {"source", "kind", "payload"} <= set(row):
                raise ValueError(f"{where}: expected source, kind and payload, got {row!r}")
            source, kind, payload = row["source"], row["kind"], row["payload"]
            if not isinstance(source, str):
                raise ValueError(f"{where}: source must be a str, got {source!r}")
            if kind == "msg":
                try:
                    update = from_dict(payload)
                except ValueError as exc:
                    raise ValueError(f"{where}: {exc}") from None
                if not isinstance(update, StreamedUpdate):
                    raise ValueError(f"{where}: sources send streamed updates, got {update}")
                locate(update.object_id, source, where, strict=True)
                updates.append(update)
            elif kind in ("event", "dead"):
                continue  # watch-query outputs: for the sinks, not the protocol
            elif kind in ("replica", "replica_counts"):
                if not isinstance(payload, Mapping):
                    raise ValueError(f"{where}: bad {kind} payload {payload!r}")
                replicas.append({"source": source, "kind": kind, "payload": payload})
            elif kind == "summary":
                if not isinstance(payload, Mapping) or not isinstance(payload.get("name"), str):
                    raise ValueError(f"{where}: bad summary payload {payload!r}")
                summaries.append({"source": source, "kind": kind, "payload": payload})
            elif kind == "topk":
                if not isinstance(payload, Mapping) or not {"query", "gen", "n", "msg"} <= set(
                    payload
                ):
                    raise ValueError(f"{where}: bad top-k payload {payload!r}")
                topk.append({"source": source, "payload": payload})
            elif kind in ("streams", "standing"):
                if not isinstance(payload, Mapping) or (kind == "standing") != is_partition(source):
                    raise ValueError(f"{where}: bad {kind} row from {source!r}: {payload!r}")
                standing.append({"source": source, "kind": kind, "payload": payload})
            elif kind == "heartbeat":
                now = payload.get("now_ms") if isinstance(payload, Mapping) else None
                series = payload.get("series", []) if isinstance(payload, Mapping) else None
                if not (now is None or _is_int(now)) or not isinstance(series, list):
                    raise ValueError(f"{where}: bad heartbeat payload {payload!r}")
                for s in series:
                    locate(s, source, where, strict=False)
                if payload.get("topk_ignored"):
                    ignored[source] = payload["topk_ignored"]
                old = now_of.get(source)
                if old is None or (now is not None and now > old):
                    now_of[source] = now
            else:
                raise ValueError(
                    f"{where}: kind must be 'msg', 'heartbeat', 'event', 'dead', 'topk', "
                    f"'streams', 'standing', 'summary', 'replica' or 'replica_counts', "
                    f"got {kind!r}"
                )
        updates.sort(key=lambda u: (u.ts_ms, u.object_id, u.seq))
        standing.sort(key=lambda r: (r["kind"], r["source"]))  # any arrival order: one result
        now_of = dict(sorted(now_of.items()))
        summaries += replicas  # summary answers and readers' messages: for the sinks
        return updates, now_of, dict(sorted(seen.items())), topk, standing, summaries, ignored

    # ----------------------------------------------------------------- state and answers

    def _summaries_in(self, rows: list[Row]) -> None:
        """Keep the newest answer of each summary query (a series at several sources: the
        first source in name order)."""
        self.summaries_arrived = []
        seen: set[str] = set()
        for row in sorted(rows, key=lambda r: (r["source"], r["payload"]["name"])):
            p = row["payload"]
            if p["name"] in seen or not self.watch.defines(p["name"]):
                continue
            seen.add(p["name"])
            fields = {**p, "positions": tuple(p["positions"]), "possible": tuple(p["possible"])}
            answer = SummaryAnswer(**fields)
            self.summaries[answer.name] = answer
            self.summaries_arrived.append(answer)

    def replica_request(self, request: Mapping[str, Any]) -> None:
        """Send a summary reader's request (:class:`~tsmon.engine.replicas.SummaryReader`)
        to the source node of its series with the next control (held until a row shows
        where the series lives)."""
        if not isinstance(request, Mapping) or not isinstance(request.get("series"), str):
            raise ValueError(f"a reader's request names its series, got {request!r}")
        if not isinstance(request.get("reader"), str):
            raise ValueError(f"a reader's request names its reader, got {request!r}")
        self.replica_waiting.append(dict(request))

    def _replica_control(self) -> dict[str, list[Row]]:
        out: dict[str, list[Row]] = {}
        waiting, self.replica_waiting = self.replica_waiting, []
        for request in waiting:
            source = self.source_of(request["series"])
            if source is None:
                self.replica_waiting.append(request)
                continue
            rows = out.setdefault(source, [])
            rows.append({"seq": len(rows), "payload": {"type": "replica", "request": request}})
        return out

    def _replicas_in(self, rows: list[Row]) -> None:
        """Keep the batch's messages for readers (in a fixed order) and the keys' clocks."""
        self.replica_out = []
        for row in sorted(rows, key=lambda r: (r["source"], r["kind"])):
            p = row["payload"]
            if row["kind"] == "replica":
                self.replica_out.append(dict(p))
            else:
                for series, window, k, count in p["counts"]:
                    self.replica_clock[(series, window, k)] = (count, p["now_ms"])
        self.replica_out.sort(key=lambda m: (m["reader"], m["series"], m["window"], m["k"], m["n"]))

    def summary_answers(self) -> dict[str, SummaryAnswer]:
        """The newest answer of every summary query (from the source node of its series)."""
        return {n: a for n, a in self.summaries.items() if self.watch.defines(n)}

    def answers(self) -> dict[str, Answer]:
        """Bounded answer of every query, as of the coordinator's time (``as_of_ms``)."""
        return self.coordinator.answers()

    def snapshot(self) -> bytes:
        """The whole state, pickled (restore only snapshots this job wrote: it is a pickle)."""
        return pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self, data: bytes) -> None:
        """Replace this node's state by a :meth:`snapshot`."""
        state = pickle.loads(data)
        if not isinstance(state, CoordinatorNode):
            raise TypeError(f"not a CoordinatorNode snapshot: {type(state).__name__}")
        self.__dict__ = state.__dict__


def new_node(
    key: str,
    *,
    period_ms: int,
    shrink: float,
    registers: RegisterSettings | None = None,
    watch: str = "",
    topk: str = "",
    tracked: Sequence[str] = (),
    standing_settings: StandingSettings | None = None,
    replica_phase_ms: int = DEFAULT_PHASE_MS,
) -> SourceNode | StandingPartition:
    """The node of ``key``: a query partition for :data:`PARTITION_PREFIX` keys, else a source
    node with the job's settings and initial queries (``tracked``: the series the job's
    standing queries read, :func:`~tsmon.engine.deferred.standing_series`, so that no node
    parses the standing queries' text)."""
    settings = standing_settings or StandingSettings()
    if is_partition(key):
        return StandingPartition(key, settings)
    return SourceNode(
        key, period_ms, shrink, registers, watch, topk, tracked, settings, replica_phase_ms
    )


class BatchedRuntime:
    """The in-process reference of the Spark job: source nodes and a coordinator, per batch.

    Each :meth:`run_batch` groups the points by source, steps every node that has points or
    control (control written by the previous batch), then the coordinator. ``source_of``
    declares the source of series that queries read before their first point; ``registers``
    and ``watch`` give every node its registers and watch queries (:meth:`events` of the
    last batch, :attr:`last_outputs` for its rejected points).

    Examples
    --------
    >>> rt = BatchedRuntime(period_ms=1_000, shrink=0.1, seed=0, source_of={"a": "n1", "b": "n2"})
    >>> rt.add_query(Query.avg("q", ["a", "b"], 1.0))
    >>> _ = rt.run_batch([("n1", "a", 100, 1.0), ("n2", "b", 100, 3.0)])  # shrinks go out
    >>> _ = rt.run_batch([("n1", "a", 110, 1.2), ("n2", "b", 110, 3.0)])  # sources reply
    >>> rt.run_batch([("n1", "a", 120, 1.3), ("n2", "b", 120, 3.1)])["q"]  # inside the bounds
    Answer(value=2.0, lo=1.5, hi=2.5, as_of_ms=119)
    >>> rt.counts.messages
    MessageCounts(streamed=2, growth=0, shrink=2, replies=2)
    """

    def __init__(
        self,
        period_ms: int,
        shrink: float,
        seed: int,
        source_of: Mapping[str, str] | None = None,
        growth: str = "paper",
        registers: RegisterSettings | None = None,
        watch: str = "",
        topk: str = "",
        standing: str = "",
        standing_settings: StandingSettings | None = None,
        replica_phase_ms: int = DEFAULT_PHASE_MS,
    ) -> None:
        LocalQueries(registers, watch)  # refuses watch queries without registers, now
        self.coordinator = CoordinatorNode(
            period_ms, shrink, seed, growth, source_of, watch, topk, standing, standing_settings
        )
        self.new_node = functools.partial(
            new_node,
            period_ms=int(period_ms),
            shrink=float(shrink),
            registers=registers,
            watch=watch,
            topk=topk,
            tracked=standing_series(standing),
            standing_settings=standing_settings,
            replica_phase_ms=replica_phase_ms,
        )
        self.nodes: dict[str, SourceNode | StandingPartition] = {}
        self.control: dict[str, list[Row]] = {}  # written by the last batch, for the next
        self.batch_id = -1
        self.last_outputs: list[Row] = []  # the node rows of the last batch
        self._seq = 0  # arrival order of points over all batches

    def add_query(self, query: Query, source_of: Mapping[str, str] | None = None) -> None:
        """Register ``query`` (see :meth:`CoordinatorNode.add_query`)."""
        self.coordinator.add_query(query, source_of)

    def alter_query(self, name: str, delta: float, *, immediately: bool = False) -> None:
        """Change the precision constraint of ``name`` (§3.4)."""
        self.coordinator.alter_query(name, delta, immediately=immediately)

    def remove_query(self, name: str) -> None:
        """Unregister query ``name``."""
        self.coordinator.remove_query(name)

    def run_batch(self, points: Sequence[tuple[str, str, int, float]]) -> dict[str, Answer]:
        """Run one micro-batch of ``(source, series, ts, value)`` points; return the answers.

        Every point is checked before any node steps: a bad one raises ``ValueError`` and the
        batch does not happen.
        """
        groups: dict[str, list[Row]] = {}
        located: dict[str, str] = {}
        bounded = self.coordinator.bounded_series()
        for n, point in enumerate(points):
            if not (isinstance(point, tuple | list) and len(point) == 4):
                raise ValueError(f"point {n}: expected (source, series, ts, value), got {point!r}")
            source, series, ts, value = point
            if not isinstance(source, str) or is_partition(source):
                raise ValueError(
                    f"point {n}: source must be a str not starting with {PARTITION_PREFIX!r} "
                    f"(query partitions), got {source!r}"
                )
            known = located.setdefault(series, self.coordinator.source_of(series) or source)
            if known != source and series in bounded:
                raise ValueError(
                    f"point {n}: series {series!r} comes from source {source!r} but is known "
                    f"at {known!r}; a bounded query needs each of its series at one source"
                )
            row = {"series": series, "ts": ts, "value": value, "seq": self._seq + n}
            groups.setdefault(source, []).append(row)
        for source, rows in groups.items():
            _parse_data(rows, source)
        self._seq += len(points)
        self.batch_id += 1
        outputs: list[Row] = []
        for source in sorted(set(groups) | set(self.control)):
            if source not in self.nodes:
                self.nodes[source] = self.new_node(source)
            rows = self.nodes[source].step(self.control.get(source, []), groups.get(source, []))
            outputs += [{**row, "source": source} for row in rows]
        self.last_outputs = outputs
        self.control = self.coordinator.step(self.batch_id, outputs)
        return self.coordinator.answers()

    def answers(self) -> dict[str, Answer]:
        """Bounded answer of every query, as of the coordinator's time."""
        return self.coordinator.answers()

    def topk_answers(self) -> dict[str, TopKAnswer]:
        """The current set of every top-k query (see :class:`~tsmon.engine.topk.TopKAnswer`)."""
        return self.coordinator.topk_answers()

    def standing_answers(self) -> dict[str, StandingAnswer]:
        """The last evaluation of every standing query (one batch behind the snapshot)."""
        return self.coordinator.standing_answers()

    def summary_answers(self) -> dict[str, SummaryAnswer]:
        """The newest answer of every summary query, computed at its series' source node."""
        return self.coordinator.summary_answers()

    def events(self) -> list[Mapping[str, Any]]:
        """The ``event`` rows of the last batch, in :func:`~tsmon.engine.watch.event_order`."""
        return event_order(self.last_outputs)

    @property
    def counts(self) -> BatchCounts:
        """Messages and rows that crossed so far."""
        return self.coordinator.counts
