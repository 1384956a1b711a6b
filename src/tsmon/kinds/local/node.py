"""The local part at a source node: its registers, windows, watch queries and summary
queries (:class:`LocalQueries`), applying the coordinator's logged changes."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tsmon.engine.events import event_row
from tsmon.engine.store import SeriesStore
from tsmon.engine.summaries import SummaryDef, SummaryQueries
from tsmon.kinds.base import NodePart, Points, Row
from tsmon.query import ApproxDef, CorrelatedDef, QueryDef, WaveletDef, compile_query, parse_queries

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tsmon.engine.settings import HostSettings, RegisterSettings

__all__ = ["LOCAL_KINDS", "WATCH_OPS", "LocalNode", "LocalQueries", "local_statements"]

#: Live changes of watch queries.
WATCH_OPS = ("add", "alter", "remove")

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


class LocalQueries:
    """A node's registers, windows, watch queries and summary queries.

    ``settings`` may be None when there are no watch queries (summaries need no registers).

    Examples
    --------
    >>> from tsmon.engine.settings import RegisterSettings
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
        self.store = None if settings is None else settings.store()
        self.summaries = SummaryQueries()
        self._summarized: set[str] = set()  # series fed to summaries since the last outputs
        if text.strip():
            self.change("add", text)

    def _store(self) -> SeriesStore:
        if self.store is None:
            raise ValueError("watch queries need registers: pass registers=RegisterSettings()")
        return self.store

    def change(self, op: str, text: str) -> None:
        """Apply one logged change: ``add``/``alter`` take statements, ``remove`` a name."""
        if op not in WATCH_OPS:
            raise ValueError(f"watch change op must be one of {WATCH_OPS}, got {op!r}")
        if op == "remove":
            if self.summaries.defines(text):
                self.summaries.remove(text)
            else:
                self._store().remove(text)
            return
        statements = parse_queries(text)
        summaries = [s for s in statements if not isinstance(s, QueryDef)]
        if op == "alter" and summaries:
            raise ValueError(f"summary query {summaries[0].name!r}: remove it and add it again")
        for statement in summaries:
            self.summaries.add(statement)  # type: ignore[arg-type]
        for statement in statements:
            if isinstance(statement, QueryDef):
                query = compile_query(statement)
                (self._store().add if op == "add" else self._store().replace)(query)

    def ingest(
        self,
        series: Sequence[str],
        ts: Sequence[int] | np.ndarray,
        values: Sequence[float] | np.ndarray,
        grouped: tuple[list[str], np.ndarray, list[int]] | None = None,
    ) -> None:
        """Store points (in the order given) and run the watch queries they trigger;
        ``grouped``: their series grouped (:meth:`SeriesStore.ingest`)."""
        if len(series) and self.store is not None:
            self.store.ingest(self.store.read(series, ts, values), grouped=grouped)

    def summarize(self, series: Sequence[str], values: Sequence[float]) -> None:
        """Feed in-order points (in arrival order) to the summaries of their series (the node
        calls it only when there are summary queries: :meth:`LocalNode.observe`)."""
        tracked = {name for name in set(series) if self.summaries.tracks(name)}
        by_series: dict[str, list[float]] = {}
        for name, value in zip(series, values, strict=True):
            if name in tracked:
                by_series.setdefault(name, []).append(value)
        for name, vals in by_series.items():
            self.summaries.feed(name, np.asarray(vals, dtype=float))
        self._summarized.update(by_series)

    def outputs(self) -> list[Row]:
        """The events, summary answers and rejected points since the last call, as rows."""
        rows = [] if self.store is None else [event_row(e) for e in self.store.events.drain()]
        rows += self._summary_rows()
        if self.store is None or not self.store.dead.pending():
            return rows
        dead = self.store.dead.take()
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


class LocalNode(NodePart):
    """A node's registers, windows, watch queries and summary queries."""

    control_types = ("watch",)

    def __init__(self, settings: HostSettings, key: str) -> None:
        self.local = LocalQueries(settings.registers, settings.text("local"))

    def parse_control(self, payload: Mapping[str, Any], where: str) -> dict[str, str]:
        op, text = payload.get("op"), payload.get("text")
        if op not in WATCH_OPS or not isinstance(text, str):
            raise ValueError(f"{where}: bad watch-query change {payload!r}")
        return {"op": op, "text": text}

    def control(self, items: Sequence[tuple[int, Any]]) -> list[Row]:
        for _, change in sorted(items, key=lambda x: x[0]):
            self.local.change(change["op"], change["text"])
        return []

    def observe(self, points: Points) -> list[Row]:
        order, bounds = points.groups
        grouped = (points.names, order, bounds.tolist())
        self.local.ingest(points.series, points.ts, points.value, grouped)
        if self.local.summaries.statements:  # else the points as lists are not needed
            series, _, values, _ = points.in_order
            self.local.summarize(series, values)
        return []

    def outputs(self) -> list[Row]:
        return self.local.outputs()
