"""Top-k queries (``QUERY q AS TOP|BOTTOM k OF pattern BY metric [OVER d] WITHIN ε``): monitor
nodes at the sources, the serialized coordinator at the driver (Babcock & Olston 2003, hosted
by :mod:`tsmon.engine.topk`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tsmon.core.units import format_duration_ms, format_value
from tsmon.engine.topk import TOPK_OPS, TopKAnswer, TopKCoordinator
from tsmon.engine.topk_source import TopKSource
from tsmon.kinds.base import CoordinatorPart, NodePart, Part, Points, QueryKind, Row
from tsmon.query import AlterTopK, TopKDef

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tsmon.engine.hub import CoordinatorNode
    from tsmon.engine.settings import HostSettings

__all__ = ["KIND", "PART", "TopKNode", "TopKPart"]


def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


class TopKNode(NodePart):
    """The node's monitor nodes, one per top-k query (:class:`TopKSource`)."""

    control_types = ("topk",)

    def __init__(self, settings: HostSettings, key: str) -> None:
        self.topk = TopKSource(settings.text("topk"))

    def parse_control(self, payload: Mapping[str, Any], where: str) -> Mapping[str, Any]:
        if payload.get("op") not in (*TOPK_OPS, "msg") or not _is_int(payload.get("gen")):
            raise ValueError(f"{where}: bad top-k control {payload!r}")
        return payload

    def control(self, items: Sequence[tuple[int, Any]]) -> list[Row]:
        rows: list[Row] = []
        # logged changes first (by log index), then protocol messages (by send order)
        for _, p in sorted(items, key=lambda x: (x[1]["op"] == "msg", x[0])):
            if p["op"] == "msg":
                rows += self.topk.deliver(p["query"], p["gen"], p["msg"])
            else:
                self.topk.change(p["op"], p["text"], p["gen"])
        return rows

    def observe(self, points: Points) -> list[Row]:
        series, ts, values, at_ms = points.applied_points()
        rows: list[Row] = []
        for s, t, v, at in zip(series, ts.tolist(), values.tolist(), at_ms.tolist(), strict=True):
            rows += self.topk.observe(t, s, v, at)
        return rows

    def advance(self, now_ms: int) -> list[Row]:
        return self.topk.advance(now_ms)

    def heartbeat(self) -> dict[str, Any]:
        ignored = self.topk.ignored()
        return {"topk_ignored": ignored} if ignored else {}


class TopKPart(CoordinatorPart):
    """The job's top-k queries, their live changes and the protocol (:class:`TopKCoordinator`)."""

    row_kinds = ("topk",)

    def __init__(self, settings: HostSettings) -> None:
        self.topk = TopKCoordinator(settings.text("topk"))
        self.rows: list[Row] = []

    def parse_row(self, hub: CoordinatorNode, row: Mapping[str, Any], where: str) -> Row:
        payload = row["payload"]
        if not isinstance(payload, Mapping) or not {"query", "gen", "n", "msg"} <= set(payload):
            raise ValueError(f"{where}: bad top-k payload {payload!r}")
        return {"source": row["source"], "payload": payload}

    def heartbeat(self, source: str, payload: Mapping[str, Any]) -> None:
        if payload.get("topk_ignored"):
            self.topk.note_ignored(source, payload["topk_ignored"])

    def receive(self, hub: CoordinatorNode, rows: Sequence[Any]) -> None:
        self.rows = list(rows)

    def control(self, hub: CoordinatorNode) -> dict[str, list[Row]]:
        rows, self.rows = self.rows, []
        return self.topk.step(rows, hub.sources)

    def names(self) -> list[str]:
        return self.topk.names()

    def remove(self, hub: CoordinatorNode, name: str) -> None:
        self.topk.remove(name)

    def alter_precision(self, hub: CoordinatorNode, name: str, delta: float, now: bool) -> None:
        self.topk.alter_eps(name, delta)

    def answers(self) -> dict[str, TopKAnswer]:
        """The current set of every top-k query, with its ε and epoch."""
        return self.topk.answers()

    def progress(self) -> dict[str, Any]:
        answers = self.answers()
        return {"topk": {q: {"epoch": t.epoch, "settled": t.settled} for q, t in answers.items()}}


def _add(hub: CoordinatorNode, statement: TopKDef, source_of: Any) -> str:
    hub.free(statement.name)
    hub.part("topk").topk.add(statement)
    rank = f"{'BOTTOM' if statement.bottom else 'TOP'} {statement.k}"
    return f"added {statement.name!r}: {rank} of {statement.objects} by {statement.metric}"


def _alter(hub: CoordinatorNode, change: AlterTopK) -> str:
    """New ``k`` (and ε) for a top-k query, once no resolution of it is under way."""
    name = hub.registered_name(change.name)
    topk = hub.part("topk").topk
    if not topk.defines(name):
        raise ValueError(f"{name!r} is not a top-k query")
    topk.alter(dataclasses.replace(change, name=name))
    return f"altered {name!r} to {'BOTTOM' if change.bottom else 'TOP'} {change.k}"


def _describe(statement: TopKDef | AlterTopK) -> tuple[str, str, str]:
    word = "BOTTOM" if statement.bottom else "TOP"
    if isinstance(statement, AlterTopK):
        within = "-" if statement.eps is None else f"WITHIN {statement.eps:g}"
        return f"ALTER {word} {statement.k}", "-", within
    rank = f"{word} {statement.k} OF {statement.objects} BY {statement.metric}"
    over = "-" if statement.window_ms is None else format_duration_ms(statement.window_ms)
    return rank, over, f"WITHIN {statement.eps:g}"


def _line(t: TopKAnswer) -> str:
    """``TOP 3 within 2: a, b, c (epoch 4, 2 nodes, 31 messages)``, ``(resolving)`` while a
    resolution runs."""
    word = "BOTTOM" if t.bottom else "TOP"
    line = f"{word} {t.k} within {format_value(t.eps)}: {', '.join(t.members) or '(none yet)'}"
    line += f" (epoch {t.epoch}, {t.nodes} nodes, {t.messages} messages)"
    return line if t.settled else f"{line} (resolving)"


PART = Part(
    "topk",
    node=TopKNode,
    coordinator=TopKPart,
    answers="topk",
    title="top-k sets",
    line=_line,
    at_nodes=True,
)
KIND = QueryKind(
    "topk",
    "topk",
    (TopKDef,),
    add=_add,
    describe=_describe,
    alters=(AlterTopK,),
    alter=_alter,
)
