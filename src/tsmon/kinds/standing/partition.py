"""Query partitions of standing queries: the queries hashed to one node key, evaluated
vectorised on each tick's snapshot (:class:`StandingPartition`)."""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tsmon.engine.standing_settings import StandingSettings
from tsmon.protocols.deferral import Answer, QueryPartition, StandingQuery, StreamSnapshot
from tsmon.query import query_key

__all__ = ["PARTITION_PREFIX", "StandingPartition", "is_partition", "partition_key", "partition_of"]

Row = dict[str, Any]

PARTITION_PREFIX = "tsmon:standing/"
"""Node keys of query partitions; a data source may not start with it."""


def partition_key(i: int) -> str:
    """Node key of query partition ``i``."""
    return f"{PARTITION_PREFIX}{i}"


def is_partition(key: str) -> bool:
    """Whether a node key names a query partition."""
    return key.startswith(PARTITION_PREFIX)


def partition_of(name: str, partitions: int) -> int:
    """The partition of query ``name`` (stable across runs and processes)."""
    return zlib.crc32(query_key(name).encode()) % partitions


def _fields(a: Answer) -> list[Any]:
    """An answer's fields in order (``dataclasses.astuple`` deep-copies: 15× slower)."""
    return [
        a.name, a.ts_ms, a.value, a.mu_a, a.eps, a.interrupted, a.eps_intr, a.next_due_ms, a.late
    ]  # fmt: skip


def encode_query(q: StandingQuery, since_start: bool) -> dict[str, Any]:
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

    def step(
        self, control: Sequence[Mapping[str, Any]], data: Sequence[Any], clock_ms: Any = None
    ) -> list[Row]:
        # clock_ms (a batch's processing time) limits data timestamps: a partition has none
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
