"""Queries answered at the source nodes: watch queries (``QUERY q ON ... WHEN ... EMIT ...``)
and summary queries (SWAT wavelets, exponential histograms, correlated aggregates). Both kinds
share one part: :class:`~tsmon.kinds.local.node.LocalNode` at every node,
:class:`~tsmon.kinds.local.coordinator.LocalCoordinator` at the coordinator.
Local queries at source nodes: watch queries over registers and windows, and summary queries,
changed live by the coordinator.

A watch query (``QUERY q ON host*.cpu WHEN ... EMIT ...``) reads the windows of one series at a
time, so it runs where the series' points are: at the series' source node (ARCHITECTURE: "Local
persistent queries run at that node"). Each node holds a :class:`LocalQueries`, a
:class:`~tsmon.engine.store.SeriesStore` accepting every series it is sent, with the job's
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

from typing import TYPE_CHECKING, Any

from tsmon.core.units import format_value
from tsmon.engine.summaries import SummaryAnswer
from tsmon.kinds.base import Part, QueryKind
from tsmon.kinds.local.coordinator import LocalCoordinator
from tsmon.kinds.local.node import LocalNode
from tsmon.query import (
    ApproxDef,
    CorrelatedDef,
    QueryDef,
    WaveletDef,
    compile_query,
    format_approx_call,
    format_correlated_call,
    format_percent,
    format_points,
    format_wavelet_call,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tsmon.engine.hub import CoordinatorNode

__all__ = ["PART", "SUMMARY", "WATCH", "LocalCoordinator", "LocalNode"]


def _add_watch(hub: CoordinatorNode, statement: QueryDef, source_of: Any) -> str:
    hub.part("local").add(hub, statement.text)
    return f"added watch query {statement.name!r} at every source node"


def _alter_watch(hub: CoordinatorNode, statement: QueryDef) -> str:
    hub.part("local").alter(statement.text)
    return f"redefined watch query {statement.name!r} at every source node"


def _add_summary(hub: CoordinatorNode, statement: Any, source_of: Any) -> str:
    hub.part("local").add(hub, statement.text)
    return f"added summary query {statement.name!r} at the source node of {statement.series!r}"


def _describe_watch(statement: QueryDef) -> tuple[str, str, str]:
    query = compile_query(statement)
    windows = ", ".join(sorted(str(w) for w in query.windows)) or "-"
    since = f"-{query.since_ms} ms" if query.since_ms else "-"
    return "ON " + ", ".join(query.triggers), windows, since


def _describe_summary(statement: WaveletDef | ApproxDef | CorrelatedDef) -> tuple[str, str, str]:
    if isinstance(statement, WaveletDef):
        within = "-" if statement.within is None else f"WITHIN {statement.within:g}"
        return format_wavelet_call(statement), format_points(statement.window_points), within
    if isinstance(statement, ApproxDef):
        within = f"WITHIN {format_percent(statement.eps)}%"
        if statement.max_value is not None:
            within += f" MAX {statement.max_value}"
        return format_approx_call(statement), format_points(statement.window_points), within
    window = "since START"
    if statement.window_points is not None:
        window = format_points(statement.window_points)
    return format_correlated_call(statement), window, "-"


def _line(a: SummaryAnswer) -> str:
    """``41.5 ±0.8 over 1024 points`` (no ``±`` when the summary gives no bound; ``, wider
    than WITHIN`` when the bound did not meet the query's precision)."""
    bound = "" if a.bound is None else f" ±{format_value(a.bound)}"
    missed = ", wider than WITHIN" if a.satisfied is False else ""
    return f"{format_value(a.value)}{bound} over {a.points} points{missed}"


def _band(a: SummaryAnswer) -> tuple[float, float | None, float | None]:
    """The value and where the exact answer lies (``value ± bound`` when only that is known)."""
    if a.lower is not None or a.bound is None:
        return a.value, a.lower, a.upper
    return a.value, a.value - a.bound, a.value + a.bound


PART = Part(
    "local",
    node=LocalNode,
    coordinator=LocalCoordinator,
    sink="summaries",
    title="summary queries",
    line=_line,
    at_nodes=True,
    band=_band,
)
WATCH = QueryKind(
    "watch",
    "local",
    (QueryDef,),
    add=_add_watch,
    describe=_describe_watch,
    alters=(QueryDef,),
    alter=_alter_watch,
    check=compile_query,
)
SUMMARY = QueryKind(
    "summary",
    "local",
    (WaveletDef, ApproxDef, CorrelatedDef),
    add=_add_summary,
    describe=_describe_summary,
)
