"""Standing queries at the coordinator: statements, the stream table, interruptions and the
ticks' snapshots (:class:`StandingCoordinator`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from tsmon.engine.standing_settings import StandingSettings
from tsmon.kinds.base import CoordinatorPart
from tsmon.kinds.standing.partition import (
    PARTITION_PREFIX,
    encode_query,
    is_partition,
    partition_key,
    partition_of,
)
from tsmon.kinds.standing.statements import (
    StandingAnswer,
    StandingRegistry,
    check_window,
    series_weights,
    standing_query,
)
from tsmon.protocols.deferral import Answer, Counters, InterruptMonitor, approximate_values
from tsmon.protocols.deferral.model import NO_TS
from tsmon.query import StandingDef, parse_query, query_key

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tsmon.engine.hub import CoordinatorNode
    from tsmon.engine.settings import HostSettings

__all__ = ["StandingCoordinator", "StandingPart"]

Row = dict[str, Any]

_TABLE = ("value", "last_ts", "mu", "sigma", "period")  # what a source reports per stream


class _Stored(NamedTuple):
    """A statement as the coordinator's snapshot keeps it: parsed again only to be altered
    (a snapshot is pickled every batch; a parsed statement costs ~10 µs to pickle)."""

    name: str
    text: str
    eps: float


class StandingCoordinator(StandingRegistry):
    """The coordinator's share: statements, the stream table, interruptions and snapshots.

    Examples
    --------
    >>> from tsmon.query import parse_query
    >>> sc = StandingCoordinator()
    >>> sc.add(parse_query("QUERY s AS SUM(a.x, b.x) WITHIN 1 CONFIDENCE 0.9"), [])
    >>> sc.control_for(["n1"])["n1"][0]["payload"]["series"]   # sources model these
    ['a.x', 'b.x']
    """

    def __init__(self, settings: StandingSettings | None = None) -> None:
        super().__init__()
        self.settings = settings or StandingSettings()
        self.stream_of: dict[str, int] = {}  # series -> stream id in the table
        self.table = {f: np.empty(0) for f in _TABLE}
        self.table["last_ts"] = np.empty(0, np.int64)
        self.monitor = InterruptMonitor(self.settings.interrupt_factor)
        self.tracked: list[str] = []  # series the sources model, in the order named
        self._tracked: set[str] = set()  # the same, for membership
        self.sent: dict[str, int] = {}  # source -> how many of ``tracked`` it was sent
        self.ops: dict[int, list[dict[str, Any]]] = {}  # partition -> adds/removes to send
        self.live: set[int] = set()  # partitions that hold queries
        self.last_tick_ms: int | None = None  # time of the last snapshot sent
        self.arrived: list[Answer] = []  # the evaluations received by the last receive
        self.counters: dict[int, Counters] = {}  # by partition, as last reported
        self.estimations: dict[str, int] = {}  # by source
        self.skipped: dict[str, int] = {}  # by source

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["statements"] = {k: (s.name, s.text, s.eps) for k, s in self.statements.items()}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.statements = {k: _Stored._make(v) for k, v in state["statements"].items()}  # type: ignore[misc]

    def _statement(self, name: str) -> StandingDef:
        s = self.statements[query_key(name)]
        if isinstance(s, _Stored):
            return dataclasses.replace(parse_query(s.text), eps=s.eps)  # type: ignore[arg-type]
        return s

    # -- queries ----------------------------------------------------------------------------

    def add(self, statement: StandingDef, known: Iterable[str]) -> None:
        """Register ``statement``; globs expand over ``known`` series (a ``ValueError`` if a
        term matches none, the weights cancel, or a MAX/MIN window counts points)."""
        check_window(statement)
        weights = series_weights(statement, known)
        ids = {self._stream(s): w for s, w in weights.items()}
        query = standing_query(statement, ids, landmark_ms=0)  # SINCE START: set at its tick
        self.statements[query_key(statement.name)] = statement
        self.series_of[statement.name] = tuple(weights)
        for s in weights:
            if s not in self._tracked:
                self._tracked.add(s)
                self.tracked.append(s)
        part = partition_of(statement.name, self.settings.partitions)
        op = {"type": "standing", "op": "add", "query": encode_query(query, statement.since_start)}
        self.ops.setdefault(part, []).append(op)
        self.live.add(part)

    def _drop(self, statement: StandingDef) -> None:
        part = partition_of(statement.name, self.settings.partitions)
        self.ops.setdefault(part, []).append(
            {"type": "standing", "op": "remove", "name": statement.name}
        )

    def _stream(self, series: str) -> int:
        if series not in self.stream_of:
            self.stream_of[series] = len(self.stream_of)
            for f, a in self.table.items():
                fill = NO_TS if f == "last_ts" else (0.0 if f == "mu" else np.nan)
                self.table[f] = np.append(a, np.array([fill], dtype=a.dtype))
        return self.stream_of[series]

    # -- the step ---------------------------------------------------------------------------

    def receive(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Apply batch rows: sources' ``streams`` rows and partitions' ``standing`` rows."""
        self.arrived = []
        for row in rows:
            p, source = row["payload"], row["source"]
            if row["kind"] == "streams":
                self.estimations[source] = int(p["estimations"])
                self.skipped[source] = int(p["skipped"])
                ids = np.array([self._stream(s) for s in p["series"]], dtype=np.int64)
                for f in _TABLE:
                    self.table[f][ids] = np.array(p[f], dtype=self.table[f].dtype)
                continue
            part = int(source[len(PARTITION_PREFIX) :])
            self.counters[part] = Counters(**p["counters"])
            for fields in p["answers"]:
                a = Answer(*fields)
                if self.defines(a.name):  # not removed since
                    self.latest[a.name] = a
                    self.arrived.append(a)

    def control_for(self, sources: Iterable[str], now_ms: int | None = None) -> dict[str, list]:
        """Control payloads per node key: series to track for ``sources`` that lack some;
        query changes and, when ``now_ms`` moved on, the tick's snapshot for partitions."""
        out: dict[str, list] = {}
        for source in sorted(sources):
            have = self.sent.get(source, 0)
            if have < len(self.tracked):
                payload = {"type": "standing", "op": "track", "series": self.tracked[have:]}
                out[source] = [{"payload": payload}]
                self.sent[source] = len(self.tracked)
        ops, self.ops = self.ops, {}
        snapshot = self._snapshot(now_ms)
        for part in sorted(set(ops) | (self.live if snapshot else set())):
            rows = [{"payload": op} for op in ops.get(part, [])]
            if snapshot is not None:
                rows.append({"payload": {"type": "standing", "op": "tick", "snapshot": snapshot}})
            out[partition_key(part)] = rows
        return out

    def _snapshot(self, now_ms: int | None) -> dict[str, Any] | None:
        """The tick at ``now_ms`` (§4.5 interruptions, Eq. 13), if time moved on."""
        last = self.last_tick_ms
        if now_ms is None or not self.statements or (last is not None and last >= now_ms):
            return None
        self.last_tick_ms = now_ms
        t = self.table
        intr, _, _ = self.monitor.update(now_ms, t["last_ts"], t["period"])
        s_hat = approximate_values(t["value"], t["last_ts"], t["mu"], intr, now_ms)
        return {
            "now_ms": now_ms,
            "value": s_hat.tolist(),
            "mu": t["mu"].tolist(),
            "sigma": t["sigma"].tolist(),
            "last_ts": t["last_ts"].tolist(),
            "interrupted": intr.tolist(),
            "period": t["period"].tolist(),
        }

    # -- answers ----------------------------------------------------------------------------

    def totals(self) -> dict[str, float]:
        """Work over all partitions and sources: evaluations, misses, penalty, estimations."""
        c = list(self.counters.values())
        return {
            "evaluations": sum(x.evaluations for x in c),
            "missed_deadlines": sum(x.missed_deadlines for x in c),
            "penalty": sum(x.penalty for x in c),
            "interrupted_answers": sum(x.interrupted_answers for x in c),
            "estimations": sum(self.estimations.values()),
            "skipped": sum(self.skipped.values()),
        }


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

    def reads(self, names: Iterable[str] | None = None) -> dict[str, tuple[tuple[str, ...], ...]]:
        return self.standing.reads(names)

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
