"""Top-k queries (``QUERY q AS TOP|BOTTOM k OF pattern BY metric [OVER d] WITHIN ε``): monitor
nodes at the sources, the serialized coordinator at the driver (Babcock & Olston 2003, hosted
by :mod:`tsmon.kinds.topk.coordinator`)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from tsmon.core.units import format_duration_ms, format_value
from tsmon.kinds.base import Part, QueryKind
from tsmon.kinds.topk.coordinator import TopKAnswer, TopKPart
from tsmon.kinds.topk.node import TopKNode
from tsmon.query import AlterTopK, TopKDef

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tsmon.engine.hub import CoordinatorNode

__all__ = ["KIND", "PART", "TopKNode", "TopKPart"]


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
    line += f" (epoch {t.epoch}, {t.nodes} node{'s' * (t.nodes != 1)}, {t.messages} messages)"
    return line if t.settled else f"{line} (resolving)"


PART = Part(
    "topk",
    node=TopKNode,
    coordinator=TopKPart,
    sink="topk",
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
