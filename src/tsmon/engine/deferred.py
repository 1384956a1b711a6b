"""Standing aggregates hosted apart: stream models at the sources, queries in partitions.

A million standing queries (Zhu & Ravishankar 2004, :mod:`tsmon.protocols.deferral`) do not
fit one coordinator loop. The batch-synchronous runtimes (Spark, and
:class:`~tsmon.engine.batched.BatchedRuntime` as its in-process reference) split the work:

1. **Source nodes** keep the :class:`~tsmon.protocols.deferral.model.StreamModels` of the
   series standing queries read (:class:`StandingSource`): they observe the in-order points,
   re-estimate ``μ, σ`` on Algorithm 2's schedule at the node's time, and send per batch one
   ``streams`` row with the state of each stream that changed (value, last timestamp, ``μ``,
   ``σ``, mean period). The ``k`` items behind each estimate never leave the node.
2. **The coordinator** (:class:`StandingCoordinator`) merges them into one stream table,
   detects interrupted streams at the job's time — the newest time any source reported, so a
   silent source's streams fall silent (§4.5) — forms the tick's snapshot (``Ŝ_i``, Eq. 13)
   and sends it, with the queries' adds and removes, to every query partition through the
   control channel.
3. **Query partitions** (:class:`StandingPartition`, keys :data:`PARTITION_PREFIX` ``+ i``,
   hosted like source nodes, so Spark spreads them over executors) each hold the queries whose
   name hashes to them (CRC-32 of the lower-case name) in a
   :class:`~tsmon.protocols.deferral.partition.QueryPartition`, and evaluate the due ones
   vectorised on the snapshot. Their answers reach the coordinator with the next batch's rows.

Choices
    * **Ticks.** One tick per batch in which the job's time moved on, at that time.
      ``tick_ms`` is the event time a batch is expected to span: a query due before the next
      tick is evaluated at this one (early, which only tightens its error); when batches
      are further apart than ``tick_ms``, deadlines between them are served late and counted
      as missed, which says the batches are too coarse for the query's ``ε``.
    * **Series** must be named, or globs expand over the series the coordinator knows when
      the query is added (as in a Monitor). Each series must come from one source.
    * **Points** reach the models in order: a point not newer than its stream's last item is
      left out of the model (counted as ``skipped``), as in a Monitor.
    * **Latency.** Control written after batch ``N`` is applied in batch ``N+1``: a source
      tracks a newly named series from then, and a tick of batch ``N``'s snapshot is evaluated
      in batch ``N+1``; its answer is stamped with batch ``N``'s time.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from tsmon.engine.standing import (
    StandingRegistry,
    check_window,
    series_weights,
    standing_query,
)
from tsmon.engine.standing_settings import StandingSettings
from tsmon.protocols.deferral import (
    Answer,
    Counters,
    InterruptMonitor,
    QueryPartition,
    StandingQuery,
    StreamSnapshot,
    approximate_values,
)
from tsmon.protocols.deferral.model import NO_TS
from tsmon.query import StandingDef, parse_query, query_key

__all__ = [
    "PARTITION_PREFIX",
    "StandingCoordinator",
    "StandingPartition",
    "StandingSource",
    "is_partition",
    "partition_key",
]

Row = dict[str, Any]

PARTITION_PREFIX = "tsmon:standing/"
"""Node keys of query partitions; a data source may not start with it."""

_TABLE = ("value", "last_ts", "mu", "sigma", "period")  # what a source reports per stream


def partition_key(i: int) -> str:
    """Node key of query partition ``i``."""
    return f"{PARTITION_PREFIX}{i}"


def is_partition(key: str) -> bool:
    """Whether a node key names a query partition."""
    return key.startswith(PARTITION_PREFIX)


def partition_of(name: str, partitions: int) -> int:
    """The partition of query ``name`` (stable across runs and processes)."""
    return zlib.crc32(query_key(name).encode()) % partitions


# ---------------------------------------------------------------------------- source side


class StandingSource:
    """The stream models of one source node: the series its standing queries read.

    Examples
    --------
    >>> src = StandingSource(["a.x"], StandingSettings(k=3))
    >>> for t, v in [(0, 1.0), (10, 2.0), (20, 2.5), (30, 9.0)]:
    ...     src.observe("a.x" if t < 30 else "b.y", t, v)
    >>> [round(v, 3) for v in src.report(30)[0]["payload"]["mu"]]   # (2.5 - 1) / 20 per ms
    [0.075]
    """

    def __init__(self, series: Iterable[str], settings: StandingSettings) -> None:
        self.models = settings.models()
        self.ids: dict[str, int] = {}  # tracked series -> local stream id
        self.skipped = 0  # points not newer than their stream's last item
        self._batch: list[tuple[int, int, float]] = []
        self.track(series)

    def track(self, series: Iterable[str]) -> None:
        """Model these series from their next point on."""
        for s in series:
            self.ids.setdefault(s, len(self.ids))

    def observe(self, series: str, ts: int, value: float) -> None:
        """One applied point of this node (ignored unless its series is tracked)."""
        i = self.ids.get(series)
        if i is not None:
            self._batch.append((i, ts, value))

    def report(self, now_ms: int) -> list[Row]:
        """Feed the batch's points, re-estimate at ``now_ms``; one ``streams`` row with every
        stream that changed (none if nothing did)."""
        m, batch, self._batch = self.models, self._batch, []
        m.ensure(len(self.ids))
        if batch:
            ids, ts, vals = (np.array(c) for c in zip(*batch, strict=True))
            order = np.lexsort((ts, ids))
            ids, ts, vals = ids[order], ts[order].astype(np.int64), vals[order].astype(float)
            last = np.r_[(ids[1:] != ids[:-1]) | (ts[1:] != ts[:-1]), True]  # a tie: newest
            newer = ts > m.last_ts[ids]
            keep = last & newer
            self.skipped += int((~newer).sum())
            m.observe(ids[keep], ts[keep], vals[keep])
        changed = np.union1d(np.array([b[0] for b in batch], np.int64), m.reestimate(now_ms))
        changed = changed[m.last_ts[changed] != NO_TS]
        if not len(changed):
            return []
        names = np.array(list(self.ids), dtype=object)[changed].tolist()
        period = m.period_ms()[changed]
        payload = {
            "series": names,
            "value": m.value[changed].tolist(),
            "last_ts": m.last_ts[changed].tolist(),
            "mu": m.mu[changed].tolist(),
            "sigma": m.sigma[changed].tolist(),
            "period": period.tolist(),
            "estimations": m.n_estimates,
            "skipped": self.skipped,
        }
        return [{"kind": "streams", "payload": payload}]


# ---------------------------------------------------------------------------- partitions


def _fields(a: Answer) -> list[Any]:
    """An answer's fields in order (``dataclasses.astuple`` deep-copies: 15× slower)."""
    return [
        a.name, a.ts_ms, a.value, a.mu_a, a.eps, a.interrupted, a.eps_intr, a.next_due_ms, a.late
    ]  # fmt: skip


def _encode_query(q: StandingQuery, since_start: bool) -> dict[str, Any]:
    d = {f.name: getattr(q, f.name) for f in _QUERY_FIELDS}  # asdict deep-copies: slower
    d["weights"] = [[int(i), float(w)] for i, w in q.weights.items()]
    d["since_start"] = since_start
    return d


_QUERY_FIELDS = dataclasses.fields(StandingQuery)


def _decode_query(d: Mapping[str, Any]) -> tuple[StandingQuery, bool]:
    args = {f.name: d[f.name] for f in _QUERY_FIELDS if f.name in d}
    args["weights"] = {int(i): float(w) for i, w in d["weights"]}
    return StandingQuery(**args), bool(d.get("since_start"))


class StandingPartition:
    """A query partition: the queries hashed to it, evaluated on each tick's snapshot.

    A pure node (``step(control, data)``) hosted like a source node under
    :func:`partition_key`. Control payloads ``{"type": "standing", "op": ...}``: ``add``
    (``query``), ``remove`` (``name``), ``tick`` (``snapshot``), applied in order. Outputs one
    ``standing`` row per tick: the answers and the partition's counters.
    """

    def __init__(self, key: str, settings: StandingSettings) -> None:
        self.key = key
        self.engine = QueryPartition(**settings.partition_options())  # type: ignore[arg-type]
        self.waiting: dict[str, StandingQuery] = {}  # SINCE START: landmark at the next tick

    def step(self, control: Sequence[Mapping[str, Any]], data: Sequence[Any]) -> list[Row]:
        if data:
            raise ValueError(f"{self.key!r} is a query partition: it takes no data rows")
        out: list[Row] = []
        for row in sorted(control, key=lambda r: r["seq"]):
            p = row["payload"]
            if not (isinstance(p, Mapping) and p.get("type") == "standing"):
                raise ValueError(f"{self.key!r}: expected standing control, got {p!r}")
            if p["op"] == "add":
                query, since_start = _decode_query(p["query"])
                if since_start:
                    self.waiting[query.name] = query
                else:
                    self.engine.add_query(query)
            elif p["op"] == "remove":
                if self.waiting.pop(p["name"], None) is None:
                    self.engine.remove_query(p["name"])
            elif p["op"] == "tick":
                out.append(self._tick(p["snapshot"]))
            else:
                raise ValueError(f"{self.key!r}: unknown standing op {p['op']!r}")
        return out

    def _tick(self, s: Mapping[str, Any]) -> Row:
        now = int(s["now_ms"])
        for q in self.waiting.values():
            self.engine.add_query(dataclasses.replace(q, landmark_ms=now))
        self.waiting = {}
        snap = StreamSnapshot(
            now,
            np.array(s["value"], dtype=float),
            np.array(s["mu"], dtype=float),
            np.array(s["sigma"], dtype=float),
            np.array(s["last_ts"], dtype=np.int64),
            np.array(s["interrupted"], dtype=bool),
            np.array(s["period"], dtype=float),
        )
        answers = [_fields(a) for a in self.engine.run(snap)]
        counters = dataclasses.asdict(self.engine.counters)
        return {"kind": "standing", "payload": {"answers": answers, "counters": counters}}


# ---------------------------------------------------------------------------- coordinator


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
        for s in weights:
            if s not in self._tracked:
                self._tracked.add(s)
                self.tracked.append(s)
        part = partition_of(statement.name, self.settings.partitions)
        op = {"type": "standing", "op": "add", "query": _encode_query(query, statement.since_start)}
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
