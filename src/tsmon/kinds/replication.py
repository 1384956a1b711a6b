"""SWAT-ASR replication (Bulut & Singh 2003, §3): summary readers follow a source node's
summary of one series; their requests reach the node through the control, the node's source
sites answer (:class:`~tsmon.engine.replicas.ReplicaHost`), and the coordinator keeps the
batch's messages for the readers and each followed key's clock. It has no statements: readers
send requests (the ``replica`` command)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tsmon.engine.replicas import ReplicaHost
from tsmon.kinds.base import CoordinatorPart, NodePart, Part, Points, Row

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tsmon.engine.hub import CoordinatorNode
    from tsmon.engine.settings import HostSettings

__all__ = ["PART", "ReplicaNode", "ReplicaPart"]


class ReplicaNode(NodePart):
    """The node's SWAT-ASR source sites: readers' requests, then the batch's in-order values."""

    control_types = ("replica",)

    def __init__(self, settings: HostSettings, key: str) -> None:
        self.replicas = ReplicaHost(settings.replica_phase_ms)
        self.requests: list[Mapping[str, Any]] = []  # readers' requests not served yet
        self.values: dict[str, list[float]] = {}  # the batch's applied values, by series

    def parse_control(self, payload: Mapping[str, Any], where: str) -> Mapping[str, Any]:
        if not isinstance(payload.get("request"), Mapping):
            raise ValueError(f"{where}: bad replica request {payload!r}")
        return payload["request"]

    def control(self, items: Sequence[tuple[int, Any]]) -> list[Row]:
        self.requests += [r for _, r in sorted(items, key=lambda x: x[0])]  # served with a time
        return []

    def observe(self, points: Points) -> list[Row]:
        if not (self.requests or self.replicas.sites):
            return []  # no site to feed: advance would drop the values
        series, _, values, _ = points.in_order
        for s, v in zip(series, values, strict=True):
            self.values.setdefault(s, []).append(v)
        return []

    def advance(self, now_ms: int) -> list[Row]:
        requests, self.requests = self.requests, []
        values, self.values = self.values, {}
        if not (requests or self.replicas.sites):
            return []
        rows: list[Row] = [
            {"kind": "replica", "payload": m} for m in self.replicas.step(now_ms, requests, values)
        ]
        counts = [[*key, n] for key, n in sorted(self.replicas.counts().items())]
        rows.append({"kind": "replica_counts", "payload": {"now_ms": now_ms, "counts": counts}})
        return rows


class ReplicaPart(CoordinatorPart):
    """Readers' requests to send, the last batch's messages for readers and the keys' clocks."""

    row_kinds = ("replica", "replica_counts")

    def __init__(self, settings: HostSettings) -> None:
        self.waiting: list[dict[str, Any]] = []  # readers' requests to send
        self.out: list[Row] = []  # the last step's messages for readers
        self.clock: dict[tuple[str, int, int], tuple[int, int]] = {}  # key -> count, ms

    def request(self, request: Mapping[str, Any]) -> None:
        """Send a summary reader's request (:class:`~tsmon.engine.replicas.SummaryReader`)
        to the source node of its series with the next control (held until a row shows
        where the series lives)."""
        if not isinstance(request, Mapping) or not isinstance(request.get("series"), str):
            raise ValueError(f"a reader's request names its series, got {request!r}")
        if not isinstance(request.get("reader"), str):
            raise ValueError(f"a reader's request names its reader, got {request!r}")
        self.waiting.append(dict(request))

    def parse_row(self, hub: CoordinatorNode, row: Mapping[str, Any], where: str) -> Row:
        if not isinstance(row["payload"], Mapping):
            raise ValueError(f"{where}: bad {row['kind']} payload {row['payload']!r}")
        return {"source": row["source"], "kind": row["kind"], "payload": row["payload"]}

    def receive(self, hub: CoordinatorNode, rows: Sequence[Any]) -> None:
        """Keep the batch's messages for readers (in a fixed order) and the keys' clocks."""
        self.out = []
        for row in sorted(rows, key=lambda r: (r["source"], r["kind"])):
            p = row["payload"]
            if row["kind"] == "replica":
                self.out.append(dict(p))
            else:
                for series, window, k, count in p["counts"]:
                    self.clock[(series, window, k)] = (count, p["now_ms"])
        self.out.sort(key=lambda m: (m["reader"], m["series"], m["window"], m["k"], m["n"]))

    def control(self, hub: CoordinatorNode) -> dict[str, list[Row]]:
        out: dict[str, list[Row]] = {}
        waiting, self.waiting = self.waiting, []
        for request in waiting:
            source = hub.source_of(request["series"])
            if source is None:
                self.waiting.append(request)
                continue
            rows = out.setdefault(source, [])
            rows.append({"seq": len(rows), "payload": {"type": "replica", "request": request}})
        return out


PART = Part("replica", node=ReplicaNode, coordinator=ReplicaPart)
