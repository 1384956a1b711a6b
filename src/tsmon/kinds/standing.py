"""Standing aggregates with deferred evaluation (``QUERY q AS SUM|AVG(...) WITHIN ε CONFIDENCE
p``, ``MAX|MIN OVER ...``): stream models at the sources, the stream table at the coordinator,
the queries in query partitions (Zhu & Ravishankar 2004, hosted by :mod:`tsmon.engine.deferred`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tsmon.core.timestamps import format_instant_ms
from tsmon.core.units import format_value
from tsmon.engine.deferred import (
    PARTITION_PREFIX,
    StandingCoordinator,
    StandingPartition,
    StandingSource,
    is_partition,
)
from tsmon.engine.standing import StandingAnswer, check_window, series_weights
from tsmon.kinds.base import CoordinatorPart, NodePart, Part, Points, QueryKind, Row
from tsmon.query import StandingDef, format_percent, format_terms
from tsmon.query.patterns import is_glob

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tsmon.engine.hub import CoordinatorNode
    from tsmon.engine.settings import HostSettings

__all__ = ["KIND", "PART", "StandingNode", "StandingPart"]


class StandingNode(NodePart):
    """The stream models of the series the job's standing queries read (:class:`StandingSource`)."""

    control_types = ("standing",)

    def __init__(self, settings: HostSettings, key: str) -> None:
        self.standing = StandingSource(settings.tracked, settings.standing)

    def parse_control(self, payload: Mapping[str, Any], where: str) -> list[str]:
        series = payload.get("series")
        if payload.get("op") != "track" or not (
            isinstance(series, list) and all(isinstance(x, str) for x in series)
        ):
            raise ValueError(f"{where}: bad standing control {payload!r}")
        return series

    def control(self, items: Sequence[tuple[int, Any]]) -> list[Row]:
        self.standing.track(x for _, names in sorted(items, key=lambda x: x[0]) for x in names)
        return []

    def observe(self, points: Points) -> list[Row]:
        series, ts, values, _ = points.applied_points()
        for s, t, v in zip(series, ts.tolist(), values.tolist(), strict=True):
            self.standing.observe(s, t, v)
        return []

    def advance(self, now_ms: int) -> list[Row]:
        return self.standing.report(now_ms)


class StandingPart(CoordinatorPart):
    """Statements, the stream table, interruptions and the ticks' snapshots
    (:class:`StandingCoordinator`); answers come back from the query partitions."""

    row_kinds = ("streams", "standing")

    def __init__(self, settings: HostSettings) -> None:
        self.standing = StandingCoordinator(settings.standing)
        self.rows: list[Row] = []

    def parse_row(self, hub: CoordinatorNode, row: Mapping[str, Any], where: str) -> Row:
        kind, source, payload = row["kind"], row["source"], row["payload"]
        if not isinstance(payload, Mapping) or (kind == "standing") != is_partition(source):
            raise ValueError(f"{where}: bad {kind} row from {source!r}: {payload!r}")
        return {"source": source, "kind": kind, "payload": payload}

    def receive(self, hub: CoordinatorNode, rows: Sequence[Any]) -> None:
        # any arrival order: one result
        self.standing.receive(sorted(rows, key=lambda r: (r["kind"], r["source"])))

    def control(self, hub: CoordinatorNode) -> dict[str, list[Row]]:
        out = self.standing.control_for(hub.sources, hub.job_now())
        return {key: [{"seq": n, **row} for n, row in enumerate(rows)] for key, rows in out.items()}

    def names(self) -> list[str]:
        return self.standing.names()

    def remove(self, hub: CoordinatorNode, name: str) -> None:
        self.standing.remove(name)

    def alter_precision(self, hub: CoordinatorNode, name: str, delta: float, now: bool) -> None:
        self.standing.alter(name, delta, hub.known_series())

    def answers(self) -> dict[str, StandingAnswer]:
        """The last evaluation of every standing query."""
        return self.standing.answers()

    def arrived(self) -> list[tuple[str, StandingAnswer]]:
        return [(a.name, a) for a in self.standing.arrived]

    def progress(self) -> dict[str, Any]:
        return {"standing": self.standing.totals()}


def _add(hub: CoordinatorNode, statement: StandingDef, source_of: Any) -> str:
    """Start a standing query at its query partition; globs expand over the known series."""
    hub.free(statement.name)
    hub.part("standing").standing.add(statement, hub.known_series())
    within = f"{100 * statement.eps:g}%" if statement.relative else f"{statement.eps:g}"
    return (
        f"added standing query {statement.name!r} within {within} at confidence "
        f"{statement.confidence:g}"
    )


def _describe(statement: StandingDef) -> tuple[str, str, str]:
    of = f"{statement.aggregate.upper()}({format_terms(statement.terms)})"
    window = "-"
    if statement.extremum is not None:
        if statement.window is not None:
            window = str(statement.window)
        elif statement.landmark_ms is not None:
            window = f"since {format_instant_ms(statement.landmark_ms)}"
        else:
            window = "since START"
        of = f"{statement.extremum.upper()} OF {of}"
    eps = f"{format_percent(statement.eps)}%" if statement.relative else f"{statement.eps:g}"
    return of, window, f"WITHIN {eps} CONFIDENCE {statement.confidence:g}"


def _job_check(statement: StandingDef) -> None:
    check_window(statement)
    series_weights(statement, [])  # a glob matches no series before the job runs


def _line(a: StandingAnswer) -> str:
    """``12.5 ±0.5 at 1000 ms, next 1800 ms`` (and the interruption error if any)."""
    line = (
        f"{format_value(a.value)} ±{format_value(a.eps)} at {a.ts_ms} ms, "
        f"next {format_value(a.next_due_ms)} ms"
    )
    return f"{line} (interrupted: ±{format_value(a.eps_intr)})" if a.interrupted else line


PART = Part(
    "standing",
    node=StandingNode,
    coordinator=StandingPart,
    answers="standing",
    title="standing queries (deferred)",
    line=_line,
    tracks=lambda statements: list(
        dict.fromkeys(t.series for s in statements for t in s.terms if not is_glob(t.series))
    ),
    reserved_prefix=PARTITION_PREFIX,
    reserved_node=lambda settings, key: StandingPartition(key, settings.standing),
)
KIND = QueryKind(
    "standing", "standing", (StandingDef,), add=_add, describe=_describe, job_check=_job_check
)
