"""The local part at the coordinator: the log of watch- and summary-query changes
(:class:`WatchLog`), each sent once to every source, the summary queries' newest answers, and
the series patterns of each query (what the hub's notes of waiting queries read)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tsmon.engine.summaries import SummaryAnswer
from tsmon.kinds.base import CoordinatorPart
from tsmon.kinds.local.node import local_statements
from tsmon.query import QueryDef, query_key

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tsmon.engine.hub import CoordinatorNode
    from tsmon.engine.settings import HostSettings

__all__ = ["LocalCoordinator", "WatchLog"]

Row = dict[str, Any]


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
        others, seen = {query_key(n) for n in taken}, set()
        for q in statements:
            key = query_key(q.name)
            if key in self._names or key in others or key in seen:
                raise ValueError(f"query {q.name!r} exists (names ignore case); remove it first")
            seen.add(key)
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


def patterns_of(statement: Any) -> tuple[str, ...]:
    """The series patterns a local query runs on: a watch query's ``ON`` list, a summary
    query's one series."""
    return statement.triggers if isinstance(statement, QueryDef) else (statement.series,)


class LocalCoordinator(CoordinatorPart):
    """The log of watch- and summary-query changes and the summary queries' newest answers."""

    row_kinds = ("event", "dead", "summary")

    def __init__(self, settings: HostSettings) -> None:
        self.watch = WatchLog(settings.text("local"))
        self.summaries: dict[str, SummaryAnswer] = {}  # summary queries' newest answers
        self.summaries_arrived: list[SummaryAnswer] = []  # those that came in the last step
        self.patterns: dict[str, tuple[str, ...]] = {}  # query -> the series it runs on
        self._read(settings.text("local"))

    def parse_row(self, hub: CoordinatorNode, row: Mapping[str, Any], where: str) -> Any:
        payload = row["payload"]
        if row["kind"] == "summary" and not (
            isinstance(payload, Mapping) and isinstance(payload.get("name"), str)
        ):
            raise ValueError(f"{where}: bad summary payload {payload!r}")
        return row

    def receive(self, hub: CoordinatorNode, rows: Sequence[Any]) -> None:
        self.summaries_arrived = []
        seen: set[str] = set()
        summaries = [r for r in rows if r["kind"] == "summary"]
        for row in sorted(summaries, key=lambda r: (r["source"], r["payload"]["name"])):
            p = row["payload"]
            if p["name"] in seen or not self.watch.defines(p["name"]):
                continue
            seen.add(p["name"])
            fields = {**p, "positions": tuple(p["positions"]), "possible": tuple(p["possible"])}
            answer = SummaryAnswer(**fields)
            self.summaries[answer.name] = answer
            self.summaries_arrived.append(answer)

    def control(self, hub: CoordinatorNode) -> dict[str, list[Row]]:
        return self.watch.control_for(hub.sources)

    def _read(self, text: str) -> None:
        """Note the series patterns of the queries of ``text`` (new or redefined)."""
        for statement in local_statements(text):
            self._forget(statement.name)
            self.patterns[statement.name] = patterns_of(statement)

    def _forget(self, name: str) -> None:
        for known in [n for n in self.patterns if query_key(n) == query_key(name)]:
            del self.patterns[known]

    def reads(self, names: Iterable[str] | None = None) -> dict[str, tuple[tuple[str, ...], ...]]:
        patterns = self.patterns
        wanted = patterns if names is None else [n for n in names if n in patterns]
        return {name: (patterns[name],) for name in wanted}

    def names(self) -> list[str]:
        return self.watch.names()

    def add(self, hub: CoordinatorNode, text: str) -> list[str]:
        """Register watch or summary queries at every source node, from the next control on."""
        others = [n for part in hub.parts.values() if part is not self for n in part.names()]
        names = self.watch.add(text, taken=others)  # its own names: the log knows them
        for statement in local_statements(text):  # new names: none to forget
            self.patterns[statement.name] = patterns_of(statement)
        return names

    def alter(self, text: str) -> list[str]:
        """Redefine watch queries at every source node (windows still needed are kept)."""
        names = self.watch.alter(text)
        self._read(text)
        return names

    def remove(self, hub: CoordinatorNode, name: str) -> None:
        self.watch.remove(name)
        self._forget(name)

    def alter_precision(self, hub: CoordinatorNode, name: str, delta: float, now: bool) -> None:
        raise ValueError(f"{name!r} is a watch query: redefine it (QUERY {name} ON ...)")

    def answers(self) -> dict[str, SummaryAnswer]:
        """The newest answer of every summary query (from the source node of its series)."""
        return {n: a for n, a in self.summaries.items() if self.watch.defines(n)}

    def arrived(self) -> list[tuple[str, SummaryAnswer]]:
        return [(a.name, a) for a in self.summaries_arrived]
