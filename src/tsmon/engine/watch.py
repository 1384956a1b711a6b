"""Local queries at source nodes: watch queries over registers and windows, and summary queries,
changed live by the coordinator.

A watch query (``QUERY q ON host*.cpu WHEN ... EMIT ...``) reads the windows of one series at a
time, so it runs where the series' points are: at the series' source node (ARCHITECTURE: "Local
persistent queries run at that node"). Each node holds a :class:`LocalQueries`, a
:class:`~tsmon.engine.monitor.Monitor` accepting every series it is sent, with the job's
register settings; only its events and rejected points leave the node, as ``event`` and
``dead`` output rows.

Summary queries (``INNER``/``POINT``/``RANGE`` over a SWAT tree, ``APPROX COUNT|SUM`` over an
exponential histogram, correlated aggregates; :mod:`tsmon.engine.summaries`) read one series
too, so they also run at its source node: the summary is kept there, fed the node's in-order
points from when the query reaches the node, and only the answers leave it — a ``summary`` row
per query whose series got points in the batch. A summary query cannot be altered (its summary
is shaped by the statement): remove it and add it again.

Live changes travel as control rows. The coordinator keeps a :class:`WatchLog`, the changes
since the job started, in order; every source node receives each change once, with the next
control after the coordinator first hears of it (a node created later starts from the job's
queries and receives the whole log). Nodes apply changes before the batch's points, so a query
added in batch ``N`` sees the points of batch ``N + 1`` onwards, and its windows are first
filled from the node's stored history; with ``SINCE`` it is first evaluated over that history
(events marked ``replayed``).

Choices: names are unique across watch and bounded queries, ignoring case, as in query files;
a change is checked (parsed and compiled) at the coordinator before it is logged, so a node
never receives one it cannot apply. Events are ordered by ``(ts_ms, series, query)`` when they
leave a batch, since Spark delivers rows of different nodes in no fixed order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tsmon.engine.events import Event
from tsmon.engine.monitor import Monitor
from tsmon.engine.summaries import SummaryDef, SummaryQueries
from tsmon.query import (
    ApproxDef,
    CorrelatedDef,
    QueryDef,
    WaveletDef,
    compile_query,
    parse_queries,
    query_key,
)

__all__ = [
    "LOCAL_KINDS",
    "WATCH_OPS",
    "LocalQueries",
    "RegisterSettings",
    "WatchLog",
    "event_order",
    "local_statements",
]

Row = dict[str, Any]

#: Live changes of watch queries.
WATCH_OPS = ("add", "alter", "remove")


@dataclass(frozen=True)
class RegisterSettings:
    """How each node stores its series: retention (points and/or event time), the allowed
    lateness and the duplicate policy (see :class:`~tsmon.engine.monitor.Monitor`)."""

    retention: str | int | None = "1h"
    capacity_points: int | None = None
    allowed_lateness: str | int = 0
    duplicates: str = "keep_last"

    def monitor(self) -> Monitor:
        """A monitor accepting every series, with these settings (bad ones raise here)."""
        return Monitor(
            ["*"],
            capacity_points=self.capacity_points,
            retention=self.retention,
            allowed_lateness=self.allowed_lateness,
            duplicates=self.duplicates,
        )


LOCAL_KINDS = (QueryDef, WaveletDef, ApproxDef, CorrelatedDef)
"""Statements that run at source nodes: watch queries and summary queries."""


def local_statements(text: str) -> list[QueryDef | SummaryDef]:
    """The local queries of ``text`` (watch queries, each compiled once to check it, and
    summary queries); anything else in it is a ``ValueError`` (a
    :class:`~tsmon.query.QuerySyntaxError` for bad syntax)."""
    out: list[QueryDef | SummaryDef] = []
    for statement in parse_queries(text):
        if not isinstance(statement, LOCAL_KINDS):
            raise ValueError(
                f"{statement.name!r} is not a watch query (QUERY name ON ...) or a summary "
                "query (INNER, POINT, RANGE, APPROX, COUNT|SUM(x op AVG|MIN|MAX))"
            )
        if isinstance(statement, QueryDef):
            compile_query(statement)
        out.append(statement)
    return out


def _event_row(event: Event) -> Row:
    payload = {
        "query": event.query,
        "series": event.series,
        "ts_ms": event.ts_ms,
        "value": event.value,
        "payload": event.payload,
        "coverage": event.coverage,
        "replayed": event.replayed,
    }
    return {"kind": "event", "payload": payload}


def event_order(rows: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``event`` rows in a fixed order, ``(ts_ms, series, query)``, whatever order the nodes'
    rows came in; a stable sort, so a node's own order breaks the remaining ties."""
    events = [r for r in rows if r["kind"] == "event"]
    return sorted(
        events, key=lambda r: (r["payload"]["ts_ms"], r["payload"]["series"], r["payload"]["query"])
    )


class LocalQueries:
    """A node's registers, windows, watch queries and summary queries.

    ``settings`` may be None when there are no watch queries (summaries need no registers).

    Examples
    --------
    >>> local = LocalQueries(RegisterSettings(), "QUERY up ON *.cpu WHEN last > 0.9")
    >>> local.ingest(["a.cpu", "a.cpu"], [1_000, 2_000], [0.5, 0.95])
    >>> [(r["kind"], r["payload"]["ts_ms"]) for r in local.outputs()]
    [('event', 2000)]
    >>> local.change("remove", "up")
    >>> local.ingest(["a.cpu"], [1_500], [0.99])  # older than the newest point: rejected
    >>> [(r["kind"], r["payload"]["reason"]) for r in local.outputs()]
    [('dead', 'too_late')]
    >>> local.change("add", "QUERY n AS APPROX COUNT(a.cpu > 0.9) OVER 8 points WITHIN 10%")
    >>> local.summarize(["a.cpu", "a.cpu"], [0.95, 0.5])
    >>> [(r["kind"], r["payload"]["value"]) for r in local.outputs()]
    [('summary', 1.0)]
    """

    def __init__(self, settings: RegisterSettings | None, text: str = "") -> None:
        self.monitor = None if settings is None else settings.monitor()
        self.summaries = SummaryQueries()
        self._summarized: set[str] = set()  # series fed to summaries since the last outputs
        if text.strip():
            self.change("add", text)

    def _monitor(self) -> Monitor:
        if self.monitor is None:
            raise ValueError("watch queries need registers: pass registers=RegisterSettings()")
        return self.monitor

    def change(self, op: str, text: str) -> None:
        """Apply one logged change: ``add``/``alter`` take statements, ``remove`` a name."""
        if op not in WATCH_OPS:
            raise ValueError(f"watch change op must be one of {WATCH_OPS}, got {op!r}")
        if op == "remove":
            if self.summaries.defines(text):
                self.summaries.remove(text)
            else:
                self._monitor().remove_query(text)
            return
        statements = parse_queries(text)
        summaries = [s for s in statements if not isinstance(s, QueryDef)]
        if op == "alter" and summaries:
            raise ValueError(f"summary query {summaries[0].name!r}: remove it and add it again")
        for statement in summaries:
            self.summaries.add(statement)  # type: ignore[arg-type]
        watch = "\n".join(s.text for s in statements if isinstance(s, QueryDef))
        if watch.strip():
            (self._monitor().add_query if op == "add" else self._monitor().alter_query)(watch)

    def ingest(self, series: Sequence[str], ts: Sequence[int], values: Sequence[float]) -> None:
        """Store points (in the order given) and run the watch queries they trigger."""
        if len(series) and self.monitor is not None:
            self.monitor.ingest(list(series), list(ts), list(values))

    def summarize(self, series: Sequence[str], values: Sequence[float]) -> None:
        """Feed in-order points (in arrival order) to the summaries of their series."""
        by_series: dict[str, list[float]] = {}
        for name, value in zip(series, values, strict=True):
            if self.summaries.tracks(name):
                by_series.setdefault(name, []).append(value)
        for name, vals in by_series.items():
            self.summaries.feed(name, np.asarray(vals, dtype=float))
        self._summarized.update(by_series)

    def outputs(self) -> list[Row]:
        """The events, summary answers and rejected points since the last call, as rows."""
        rows = [] if self.monitor is None else [_event_row(e) for e in self.monitor.events()]
        rows += self._summary_rows()
        if self.monitor is None or not self.monitor.rejected_pending:
            return rows
        dead = self.monitor.take_dead_letters()
        for r in dead.itertuples(index=False):
            value = r.value if isinstance(r.value, int | float | str) else repr(r.value)
            payload = {
                "series": r.series,
                "ts_ms": int(r.ts_ms),  # node points always have one
                "value": value,
                "reason": r.reason,
                "detail": r.detail,
            }
            rows.append({"kind": "dead", "payload": payload})
        return rows

    def _summary_rows(self) -> list[Row]:
        fed, self._summarized = self._summarized, set()
        if not fed:
            return []
        answers = self.summaries.answers()
        rows = []
        for q in self.summaries.statements.values():
            if q.statement.series in fed:
                payload = dataclasses.asdict(answers[q.statement.name])
                rows.append({"kind": "summary", "payload": payload})
        return rows


@dataclass
class WatchLog:
    """The coordinator's record of watch-query changes, each sent once to every source.

    ``initial`` is the job's watch queries (every node starts with them); :meth:`add`,
    :meth:`alter` and :meth:`remove` check a change against the queries as they will be and
    log it; :meth:`control_for` returns each source's changes not yet sent.

    Examples
    --------
    >>> log = WatchLog("QUERY up ON *.cpu WHEN last > 0.9")
    >>> log.add("QUERY down ON *.cpu WHEN last < 0.1", taken=[])
    ['down']
    >>> [(row["seq"], row["payload"]["op"]) for row in log.control_for(["n1"])["n1"]]
    [(0, 'add')]
    >>> log.control_for(["n1"]), log.names()
    ({}, ['up', 'down'])
    """

    initial: str = ""
    changes: list[dict[str, str]] = field(default_factory=list)
    sent: dict[str, int] = field(default_factory=dict)  # source -> changes it has been sent
    _names: dict[str, str] = field(default_factory=dict)  # query key -> name

    def __post_init__(self) -> None:
        self._names = {query_key(q.name): q.name for q in local_statements(self.initial)}

    def names(self) -> list[str]:
        """The watch queries once every logged change is applied, in registration order."""
        return list(self._names.values())

    def defines(self, name: str) -> bool:
        """Whether a watch query is called ``name`` (ignoring case)."""
        return query_key(name) in self._names

    def add(self, text: str, taken: Iterable[str]) -> list[str]:
        """Log new watch queries; ``taken`` are the other queries' names (bounded ones)."""
        statements = local_statements(text)
        used = set(self._names) | {query_key(n) for n in taken}
        for q in statements:
            if query_key(q.name) in used:
                raise ValueError(f"query {q.name!r} exists (names ignore case); remove it first")
            used.add(query_key(q.name))
        self._log("add", text)
        self._names.update({query_key(q.name): q.name for q in statements})
        return [q.name for q in statements]

    def alter(self, text: str) -> list[str]:
        """Log redefinitions of existing watch queries (kept in place, windows kept)."""
        statements = local_statements(text)
        for q in statements:
            if not self.defines(q.name):
                raise ValueError(f"no watch query {q.name!r}; add it first")
            if not isinstance(q, QueryDef):
                raise ValueError(f"summary query {q.name!r}: remove it and add it again")
        self._log("alter", text)
        return [q.name for q in statements]

    def remove(self, name: str) -> str:
        """Log the removal of watch query ``name``; returns its registered spelling."""
        key = query_key(name)
        if key not in self._names:
            raise ValueError(f"no watch query {name!r}; registered: {self.names()!r}")
        self._log("remove", self._names[key])
        return self._names.pop(key)

    def _log(self, op: str, text: str) -> None:
        self.changes.append({"type": "watch", "op": op, "text": text})

    def control_for(self, sources: Iterable[str]) -> dict[str, list[Row]]:
        """Per source, the control rows of the changes it has not been sent (``seq`` = index
        in the log); marks them sent."""
        out: dict[str, list[Row]] = {}
        for source in sorted(sources):
            start = self.sent.get(source, 0)
            if start < len(self.changes):
                out[source] = [
                    {"seq": i, "payload": dict(self.changes[i])}
                    for i in range(start, len(self.changes))
                ]
            self.sent[source] = len(self.changes)
        return out
