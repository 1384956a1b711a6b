"""The source side of hosted top-k queries: a monitor node per query at each source, fed the
source's points (:mod:`tsmon.kinds.topk.coordinator` explains the choices: units, windows, joins).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tsmon.kinds.base import NodePart, Points
from tsmon.protocols.topk.codec import from_dict, to_dict
from tsmon.protocols.topk.messages import Install, ToCoordinator, ToNode
from tsmon.protocols.topk.node import MonitorNode
from tsmon.query import TopKDef, parse_queries, query_key

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tsmon.engine.settings import HostSettings

Row = dict[str, Any]
UNITS = 10**6  # integer units per value unit
MAX_VALUE = 2**53 / UNITS  # largest |value|: its micro-units are an exact float integer
THETA = 20  # Appendix C threshold, the paper's setting
TOPK_OPS = ("add", "alter", "remove")  # logged changes; protocol messages are "msg"


def to_units(x: float) -> int:
    """``x`` in integer micro-units; ``ValueError`` beyond :data:`MAX_VALUE` (or not finite).

    Examples
    --------
    >>> to_units(0.1), to_units(2.5), to_units(3)
    (100000, 2500000, 3000000)
    """
    reason = unusable(x)
    if reason is not None and reason != "negative":
        raise ValueError(
            f"{x!r} is {reason}: top-k values and ε must be finite with |x| ≤ {MAX_VALUE:.6g}"
        )
    return round(x * UNITS)


def unusable(x: float) -> str | None:
    """Why ``x`` cannot be a top-k update (``None``: it can).

    Examples
    --------
    >>> unusable(3.0), unusable(-1.0), unusable(1.8e302), unusable(float("nan"))
    (None, 'negative', 'too large', 'not finite')
    """
    if not math.isfinite(x):
        return "not finite"
    if abs(x) > MAX_VALUE:
        return "too large"
    return "negative" if x < 0 else None


def topk_statements(text: str) -> list[TopKDef]:
    """The top-k statements of a query text (the others are left to their runtimes)."""
    return [s for s in parse_queries(text) if isinstance(s, TopKDef)]


def topk_statement(text: str) -> TopKDef:
    """The one top-k statement in ``text`` (a log entry)."""
    statements = parse_queries(text)
    if len(statements) != 1 or not isinstance(statements[0], TopKDef):
        raise ValueError(f"expected one TOP/BOTTOM query, got {text!r}")
    return statements[0]


class _LocalQuery:
    """One top-k query at one source: its monitor node and the window of counted points."""

    def __init__(self, statement: TopKDef, gen: int) -> None:
        self.statement, self.gen = statement, gen
        self.node = MonitorNode(0, statement.k, statement.bottom, THETA)
        self.window: deque[tuple[int, str, int]] = deque()  # (ts, object, units) counted
        self.ignored: dict[str, int] = {}  # reason -> points
        self._objects: dict[str, str | None] = {}  # series -> its object (None: not ours)

    def object_of(self, series: str) -> str | None:
        """The object whose metric ``series`` holds, remembered per series."""
        if series not in self._objects:
            self._objects[series] = self.statement.object_of(series)
        return self._objects[series]

    def expire(self, now_ms: int) -> list[ToCoordinator]:
        """Cancel the points that left the window ``(now − W, now]`` (§1.3)."""
        width = self.statement.window_ms
        out: list[ToCoordinator] = []
        while width is not None and self.window and self.window[0][0] <= now_ms - width:
            _, obj, units = self.window.popleft()
            sent = self.node.update(obj, -units)
            if sent is not None:
                out.append(sent)
        return out

    def observe(self, ts: int, obj: str, value: float, now_ms: int) -> list[ToCoordinator]:
        out = self.expire(now_ms)
        reason = unusable(value)
        if reason is not None:
            self.ignored[reason] = self.ignored.get(reason, 0) + 1
            return out
        units = to_units(value)
        width = self.statement.window_ms
        if width is not None and ts <= now_ms - width:
            return out  # already out of the window
        if width is not None:
            self.window.append((ts, obj, units))  # ts order: points come in (ts, seq) order
        sent = self.node.update(obj, units)
        return out if sent is None else [*out, sent]

    def on_message(self, message: ToNode) -> ToCoordinator | None:
        if isinstance(message, Install):
            self.node.node = message.node  # the coordinator's number for this source
        return self.node.on_message(message)


class TopKSource:
    """A source node's top-k queries: changes from the log, protocol messages, points.

    Examples
    --------
    >>> src = TopKSource("QUERY hot AS TOP 1 OF doc* BY hits WITHIN 0")
    >>> [row["payload"]["msg"]["type"] for row in src.observe(["doc1.hits"], [5], [3.0], [5])]
    ['request']
    """

    def __init__(self, initial: str = "") -> None:
        self.queries: dict[str, _LocalQuery] = {}  # by query key
        self._n = 0  # output rows so far, for their order
        for gen, statement in enumerate(topk_statements(initial)):
            self.queries[query_key(statement.name)] = _LocalQuery(statement, gen)

    def change(self, op: str, text: str, gen: int) -> None:
        """Apply one logged change: ``add`` / ``alter`` (a statement's text) or ``remove``."""
        if op == "remove":
            self.queries.pop(query_key(text), None)
            return
        statement = topk_statement(text)
        key = query_key(statement.name)
        if op == "add":
            self.queries[key] = _LocalQuery(statement, gen)
        elif op == "alter" and key in self.queries:
            local = self.queries[key]
            local.statement = statement
            local.node.k = statement.k
        elif op != "alter":
            raise ValueError(f"unknown top-k change {op!r}")

    def deliver(self, name: str, gen: int, message: Mapping[str, Any]) -> list[Row]:
        """A protocol message from the coordinator for query ``name``."""
        local = self.queries.get(query_key(name))
        if local is None or local.gen != gen:
            return []  # for a query removed (or re-added) since
        sent = local.on_message(from_dict(message))  # type: ignore[arg-type]
        return [] if sent is None else self._rows(local, [sent])

    def observe(
        self,
        series: Sequence[str],
        ts: Sequence[int],
        values: Sequence[float],
        now_ms: Sequence[int],
    ) -> list[Row]:
        """Points in order, each at the node's time ``now_ms[i]`` (``ts[i] ≤ now_ms[i]``), to
        the queries that read their series: a point of a series no query reads costs one
        lookup (the node calls it only when there are queries: :meth:`TopKNode.observe`)."""
        out: list[Row] = []
        readers: dict[str, list[tuple[_LocalQuery, str]]] = {}  # series -> (query, object)
        for i, name in enumerate(series):
            pairs = readers.get(name)
            if pairs is None:
                pairs = readers[name] = [
                    (q, obj)
                    for q in self.queries.values()
                    if (obj := q.object_of(name)) is not None
                ]
            for local, obj in pairs:
                out += self._rows(local, local.observe(ts[i], obj, values[i], now_ms[i]))
        return out

    def advance(self, now_ms: int) -> list[Row]:
        """Expire every window up to the node's time."""
        out: list[Row] = []
        for local in self.queries.values():
            out += self._rows(local, local.expire(now_ms))
        return out

    def ignored(self) -> dict[str, dict[str, int]]:
        """Points ignored so far, per query name and reason."""
        return {q.statement.name: dict(q.ignored) for q in self.queries.values() if q.ignored}

    def _rows(self, local: _LocalQuery, messages: Iterable[ToCoordinator]) -> list[Row]:
        rows = []
        for m in messages:
            payload = {"query": local.statement.name, "gen": local.gen, "n": self._n}
            rows.append({"kind": "topk", "payload": {**payload, "msg": to_dict(m)}})
            self._n += 1
        return rows


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
        if not self.topk.queries:  # no query: no lookup, and the points as lists not needed
            return []
        return self.topk.observe(*points.in_order)

    def advance(self, now_ms: int) -> list[Row]:
        return self.topk.advance(now_ms)

    def heartbeat(self) -> dict[str, Any]:
        ignored = self.topk.ignored()
        return {"topk_ignored": ignored} if ignored else {}
