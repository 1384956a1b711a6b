"""The registry of query kinds: every host dispatches through it and names no kind.

:data:`PARTS` are the hosting parts, in the order a coordinator writes their control and a
node applies it; :data:`KINDS` the statement kinds of the language, each hosted by one part.
Adding a kind = its module here (a :class:`~tsmon.kinds.base.QueryKind`, and a
:class:`~tsmon.kinds.base.Part` unless it shares one), its grammar rules in :mod:`tsmon.query`,
and one line in each list below.

Examples
--------
>>> from tsmon.query import parse_query
>>> kind_of(parse_query("QUERY d AS SUM(a.x, b.x) WITHIN 0.5")).name
'bounded'
>>> kind_of(parse_query("QUERY up ON *.cpu WHEN last > 0.9")).part
'local'
>>> [p.name for p in PARTS]
['local', 'topk', 'replica', 'standing', 'bounded']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tsmon.kinds import bounded, local, replication, standing, topk
from tsmon.kinds.base import CoordinatorPart, NodePart, Part, Points, QueryKind

__all__ = [
    "KINDS",
    "PARTS",
    "CoordinatorPart",
    "JobStatements",
    "NodePart",
    "Part",
    "Points",
    "QueryKind",
    "alter_kind",
    "answer_lines",
    "answers_part",
    "kind_of",
    "reserved_part",
]

PARTS: tuple[Part, ...] = (local.PART, topk.PART, replication.PART, standing.PART, bounded.PART)
KINDS: tuple[QueryKind, ...] = (local.WATCH, local.SUMMARY, bounded.KIND, topk.KIND, standing.KIND)


def kind_of(statement: object) -> QueryKind:
    """The kind that defines ``statement`` (or, for an alter statement, that takes it)."""
    for kind in KINDS:
        if kind.defines(statement):
            return kind
    return alter_kind(statement)


def alter_kind(statement: object) -> QueryKind:
    """The kind whose alter statements include ``statement``."""
    for kind in KINDS:
        if kind.changes(statement):
            return kind
    for kind in KINDS:
        if kind.defines(statement):
            raise ValueError(
                f"{kind.name} query {statement.name!r} cannot be changed in place: remove it "  # type: ignore[attr-defined]
                "and add it again"
            )
    raise ValueError(f"no query kind takes {type(statement).__name__} statements")


def answer_lines(answers: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Each answer of ``answers`` (part name -> query -> answer) as ``name: <its part's line>``,
    part by part in :data:`PARTS` order: the console's lines after a batch or a replay."""
    return [
        f"{name}: {part.line(a)}"
        for part in PARTS
        if part.line is not None
        for name, a in answers.get(part.name, {}).items()
    ]


def answers_part(name: str) -> str:
    """The part whose answers ``name`` asks for: a kind's name (``summary`` answers come from
    the ``local`` part) or a part's name."""
    for kind in KINDS:
        if kind.name == name:
            return kind.part
    if any(p.name == name for p in PARTS):
        return name
    known = sorted({k.name for k in KINDS} | {p.name for p in PARTS if p.sink is not None})
    raise ValueError(f"no query kind or part {name!r}; use one of {known}")


def reserved_part(key: str) -> Part | None:
    """The part that owns node key ``key`` (a standing query partition), if any."""
    for part in PARTS:
        if part.reserved_prefix is not None and key.startswith(part.reserved_prefix):
            return part
    return None


@dataclass(frozen=True)
class JobStatements:
    """A job's statements split by where they start: ``node_text`` maps a part name to the
    text every node starts with; ``registered`` are registered at the coordinator when it is
    made (:meth:`~tsmon.engine.hub.CoordinatorNode.add`); ``tracked`` are the series every
    node models from the start."""

    node_text: Mapping[str, str]
    registered: tuple[Any, ...]
    tracked: tuple[str, ...]

    @classmethod
    def of(cls, statements: Sequence[Any]) -> JobStatements:
        """Split ``statements`` (definitions of any kind) by their parts."""
        parts = {p.name: p for p in PARTS}
        texts: dict[str, list[str]] = {}
        registered, by_part = [], {}
        for s in statements:
            part = parts[kind_of(s).part]
            by_part.setdefault(part.name, []).append(s)
            if part.at_nodes:
                texts.setdefault(part.name, []).append(s.text)
            else:
                registered.append(s)
        tracked = [
            x for p in PARTS if p.tracks is not None for x in p.tracks(by_part.get(p.name, []))
        ]
        node_text = {name: "\n".join(t) for name, t in texts.items()}
        return cls(node_text, tuple(registered), tuple(dict.fromkeys(tracked)))
