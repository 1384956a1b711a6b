"""The registry of query kinds: the hosts name no kind, so a kind registered only here runs
through the batch runtime, snapshots and sinks; and every registered kind keeps the contract
(statements dispatch to it, describe for ``tsmon check``, parts that pickle)."""

from __future__ import annotations

import pickle
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tsmon import kinds
from tsmon.engine.batched import BatchedRuntime
from tsmon.engine.hub import CoordinatorNode
from tsmon.engine.node import SourceNode
from tsmon.engine.settings import HostSettings, RegisterSettings
from tsmon.kinds import KINDS, PARTS, CoordinatorPart, NodePart, Part, Points, QueryKind
from tsmon.query import parse_query
from tsmon.spark.job import SinkSpec
from tsmon.spark.sinks import BatchOutput, Sinks

# ----------------------------------------------------------------------------- a kind for tests


@dataclass(frozen=True)
class CountDef:
    """``COUNT series``: how many points of ``series`` the sources applied (exact)."""

    name: str
    series: str

    @property
    def text(self) -> str:
        return f"COUNT {self.name} {self.series}"


@dataclass(frozen=True)
class CountAnswer:
    name: str
    count: int
    sources: tuple[str, ...]


class CountNode(NodePart):
    control_types = ("count",)

    def __init__(self, settings: HostSettings, key: str) -> None:
        self.watched: dict[str, str] = {}  # query -> series
        self.counts: dict[str, int] = {}

    def parse_control(self, payload: Mapping[str, Any], where: str) -> Mapping[str, Any]:
        if payload.get("op") not in ("add", "remove"):
            raise ValueError(f"{where}: bad count control {payload!r}")
        return payload

    def control(self, items: Sequence[tuple[int, Any]]) -> list[dict]:
        for _, p in sorted(items, key=lambda x: x[0]):
            if p["op"] == "add":
                self.watched[p["name"]] = p["series"]
                self.counts[p["name"]] = 0
            else:
                self.watched.pop(p["name"], None)
                self.counts.pop(p["name"], None)
        return []

    def observe(self, points: Points) -> list[dict]:
        series = points.in_order.series
        for name, watched in self.watched.items():
            self.counts[name] += sum(s == watched for s in series)
        return []

    def outputs(self) -> list[dict]:
        return [{"kind": "count", "payload": {"name": n, "n": c}} for n, c in self.counts.items()]


class CountPart(CoordinatorPart):
    row_kinds = ("count",)

    def __init__(self, settings: HostSettings) -> None:
        self.queries: dict[str, CountDef] = {}
        self.log: list[dict] = []
        self.sent: dict[str, int] = {}
        self.counts: dict[str, dict[str, int]] = {}  # query -> source -> its count

    def parse_row(self, hub: CoordinatorNode, row: Mapping[str, Any], where: str) -> Any:
        if not isinstance(row["payload"].get("n"), int):
            raise ValueError(f"{where}: bad count row {row!r}")
        return row

    def receive(self, hub: CoordinatorNode, rows: Sequence[Any]) -> None:
        for row in rows:
            name = row["payload"]["name"]
            if name in self.queries:
                self.counts.setdefault(name, {})[row["source"]] = row["payload"]["n"]

    def control(self, hub: CoordinatorNode) -> dict[str, list[dict]]:
        out: dict[str, list[dict]] = {}
        for source in sorted(hub.sources):
            start = self.sent.get(source, 0)
            if start < len(self.log):
                out[source] = [
                    {"seq": i, "payload": self.log[i]} for i in range(start, len(self.log))
                ]
            self.sent[source] = len(self.log)
        return out

    def names(self) -> list[str]:
        return list(self.queries)

    def add(self, statement: CountDef) -> None:
        self.queries[statement.name] = statement
        self.log.append({"type": "count", "op": "add", **vars(statement)})

    def remove(self, hub: CoordinatorNode, name: str) -> None:
        del self.queries[name]
        self.counts.pop(name, None)
        self.log.append({"type": "count", "op": "remove", "name": name})

    def answers(self) -> dict[str, CountAnswer]:
        return {
            n: CountAnswer(n, sum(c.values()), tuple(sorted(c)))
            for n, c in self.counts.items()
            if n in self.queries
        }


def _add(hub: CoordinatorNode, statement: CountDef, source_of: Any) -> str:
    hub.free(statement.name)
    hub.part("count").add(statement)
    return f"added count {statement.name!r}"


COUNT_PART = Part(
    "count",
    node=CountNode,
    coordinator=CountPart,
    sink="counts",
    title="counts",
    line=lambda a: f"{a.count} points from {len(a.sources)} sources",
)
COUNT_KIND = QueryKind(
    "count", "count", (CountDef,), add=_add, describe=lambda s: (f"COUNT {s.series}", "-", "-")
)


@pytest.fixture
def with_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry with the test kind: one line in each list, as the docs say."""
    monkeypatch.setattr(kinds, "PARTS", (*PARTS, COUNT_PART))
    monkeypatch.setattr(kinds, "KINDS", (*KINDS, COUNT_KIND))


def test_a_kind_registered_in_one_place_runs_through_every_host(with_count, tmp_path: Path):
    rt = BatchedRuntime(1_000, 0.1, 0)
    points = [(src, s, t, 1.0) for t in range(0, 5) for src in ("n1", "n2") for s in ("a", "b")]
    rt.run_batch(points[:8])  # the sources report: the coordinator knows them
    assert rt.coordinator.add(CountDef("ca", "a")) == "added count 'ca'"
    rt.run_batch(points[8:12])  # the add goes out with this batch's control
    rt.run_batch(points[12:])  # the nodes count from here
    rt.run_batch([])  # their counts arrive
    exact = sum(1 for p in points[12:] if p[1] == "a")
    assert rt.answers("count")["ca"] == CountAnswer("ca", exact, ("n1", "n2"))
    copy = pickle.loads(rt.coordinator.snapshot())  # a snapshot holds the new part too
    assert copy.answers("count") == rt.answers("count")
    assert all(isinstance(n.part("count"), CountNode) for n in rt.nodes.values())

    out = BatchOutput(
        rt.batch_id,
        [],
        [],
        {},
        {"count": rt.answers("count")},
        {"count": rt.coordinator.part("count").arrived()},
    )
    Sinks([SinkSpec("parquet", tmp_path)]).emit(out)
    frame = pd.read_parquet(tmp_path / "counts" / f"batch-{rt.batch_id:09d}.parquet")
    assert frame[["query", "count"]].values.tolist() == [["ca", exact]]

    rt.coordinator.remove_query("CA")  # names ignore case
    rt.run_batch([])
    assert rt.answers("count") == {} and "ca" not in rt.coordinator.names()


def test_a_bad_control_payload_is_refused_before_anything_changes(with_count):
    node = SourceNode("n1", HostSettings(1_000, 0.1))
    with pytest.raises(ValueError, match="bad count control"):
        node.step([{"seq": 0, "payload": {"type": "count", "op": "?"}}], [])
    with pytest.raises(ValueError, match="control payload type must be one of"):
        node.step([{"seq": 0, "payload": {"type": "nope"}}], [])
    assert node.now_ms is None and node.points == 0


# ----------------------------------------------------------------------------- every kind

EXAMPLES = {
    "watch": "QUERY w ON *.x WHEN mean(3 points) > 1 EMIT series",
    "summary": "QUERY s AS POINT(a.x, 1) OVER 16 points",
    "bounded": "QUERY b AS AVG(a.x, b.x) WITHIN 0.5",
    "topk": "QUERY t AS TOP 1 OF * BY x WITHIN 0",
    "standing": "QUERY d AS SUM(a.x, b.x) WITHIN 1 CONFIDENCE 0.9",
}


def test_every_kind_has_an_example_here():
    assert sorted(EXAMPLES) == sorted(k.name for k in KINDS)
    assert len({p.name for p in PARTS}) == len(PARTS)
    assert {k.part for k in KINDS} <= {p.name for p in PARTS}


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_statements_dispatch_to_their_kind_and_describe_themselves(kind: QueryKind):
    statement = parse_query(EXAMPLES[kind.name])
    assert kinds.kind_of(statement) is kind and kind.defines(statement)
    columns = kind.describe(statement)
    assert len(columns) == 3 and all(isinstance(c, str) and c for c in columns)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_every_kind_registers_runs_and_is_removed_while_running(kind: QueryKind):
    rt = BatchedRuntime(1_000, 0.1, 0, registers=RegisterSettings())
    batches = [[("n1", "a.x", t, float(t % 5)), ("n2", "b.x", t, 2.0)] for t in range(0, 40, 4)]
    rt.run_batch(batches[0])
    outcome = rt.coordinator.add(parse_query(EXAMPLES[kind.name]))
    assert isinstance(outcome, str) and outcome
    name = parse_query(EXAMPLES[kind.name]).name
    assert name in rt.coordinator.names()
    with pytest.raises(ValueError, match="exists"):
        rt.coordinator.add(
            parse_query(EXAMPLES[kind.name].replace(f" {name} ", " " + name.upper() + " ", 1))
        )
    for batch in batches[1:]:
        rt.run_batch(batch)
    for node in rt.nodes.values():
        assert pickle.loads(pickle.dumps(node)).step([], []) == node.step([], [])
    rt.coordinator.remove_query(name.upper())  # names ignore case
    assert name not in rt.coordinator.names()
    rt.run_batch(batches[-1])
    part = next(p for p in PARTS if p.name == kind.part)
    if part.sink is not None:
        assert name not in rt.answers(part.name)


def test_answers_are_asked_for_by_kind_or_by_part():
    rt = BatchedRuntime(1_000, 0.1, 0, queries="QUERY s AS POINT(a.x, 0) OVER 8 points")
    rt.run_batch([("n1", "a.x", t, float(t)) for t in range(4)])
    rt.run_batch([])
    answer = rt.answers("summary")["s"]
    assert rt.answers("local") == {"s": answer}
    assert abs(answer.value - 3.0) <= answer.bound  # the newest value, within SWAT's bound
    with pytest.raises(ValueError, match="no query kind or part 'nope'"):
        rt.answers("nope")
