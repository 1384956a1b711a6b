"""The contract every registered kind keeps, on real series: the Monitor (one ingest call = one
batch of the batch host, instant transport; while standing queries run, one batch per
``standing_tick`` interval of its points) agrees with :class:`BatchedRuntime` fed the same
batches, each delivered at once (its control stepped until none is left), while a second query
is added, one altered and the first removed.

Exact kinds give the same answers and events in both; approximate kinds are held to their
guarantee against an exact oracle in both, and every kind gives the same answers in both:
bounded aggregates with the runtime's bounded coordinator at its node's time
(``bounded_lag_ms = 0``, as the Monitor's; with ``T`` fixed and chosen online), standing
queries with the runtime's batches cut at ``standing_tick`` boundaries, as the Monitor cuts them.
The series are NAB's real AWS CPU series, re-timed to one 5-minute clock.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tsmon.engine.batched import BatchedRuntime
from tsmon.engine.embedded import SOURCE
from tsmon.engine.events import event_row
from tsmon.engine.monitor import Monitor
from tsmon.engine.settings import HostSettings, RegisterSettings
from tsmon.engine.standing_settings import StandingSettings
from tsmon.engine.transport import Transport
from tsmon.kinds import KINDS
from tsmon.query import parse_query

NAB = Path(__file__).resolve().parents[2] / "../shared/data/nab/realAWSCloudwatch"
FILES = {"a.cpu": "24ae8d", "b.cpu": "53ea38", "c.cpu": "5f5533", "d.cpu": "77c1ca"}
STEP_MS, POINTS, BATCH = 300_000, 240, 37  # 5-minute points; batches end mid-instant
ADD_AT, ALTER_AT, REMOVE_AT = 2, 5, 8  # after these batches (of 26)

Oracle = Callable[[str, int], float]  # series, time -> its newest value at or before it


@dataclass(frozen=True)
class Case:
    """A kind's statements and how its answers are checked (``check(answers, newest)``
    returns how many are not known yet), and whether they are compared exactly between the
    runtimes (``equal``)."""

    first: str
    second: str
    alter: str | None
    check: Callable[[Mapping[str, Any], Oracle], int] | None = None
    equal: bool = True


def _bounded(answers: Mapping[str, Any], newest: Oracle) -> int:
    unknown = 0
    for name, a in answers.items():
        if math.isinf(a.lo) and math.isinf(a.hi):  # no reply from its sources yet
            unknown += 1
            continue
        v = {s: newest(s, a.as_of_ms) for s in FILES}
        exact = {
            "first": (v["a.cpu"] + v["b.cpu"] + v["c.cpu"]) / 3,
            "second": max(v["a.cpu"], v["d.cpu"]),
        }[name]
        assert a.lo - 1e-9 <= exact <= a.hi + 1e-9, (name, a, exact)
        assert a.hi - a.lo <= {"first": 5.0, "second": 2.0}[name] * (1 + 1e-9)  # δ, first's at most
    return unknown


def _standing(answers: Mapping[str, Any], newest: Oracle) -> int:
    unknown = 0
    for name, a in answers.items():
        if a.interrupted:
            continue
        if math.isnan(a.value):  # a series not modelled at its source yet
            unknown += 1
            continue
        v = {s: newest(s, a.ts_ms) for s in FILES}
        exact = {
            "first": v["a.cpu"] + v["b.cpu"],
            "second": (v["a.cpu"] + v["c.cpu"]) / 2,
        }[name]
        assert a.value == pytest.approx(exact, rel=1e-9, abs=1e-9), (name, a)
    return unknown


CASES = {
    "watch": Case(
        "QUERY first ON *.cpu WHEN mean(6 points) > 40 EMIT series, max(6 points)",
        "QUERY second ON a.cpu WHEN last < 30 EMIT min(1h)",
        "QUERY first ON *.cpu WHEN mean(6 points) > 30 EMIT series, max(6 points)",
    ),
    "summary": Case(
        "QUERY first AS INNER(a.cpu, [4, 2, 1] AT [0, 1, 2]) OVER 64 points",
        "QUERY second AS APPROX COUNT(b.cpu > 40) OVER 128 points WITHIN 10%",
        None,
    ),
    "topk": Case(
        "QUERY first AS TOP 2 OF * BY cpu WITHIN 0",
        "QUERY second AS BOTTOM 1 OF * BY cpu WITHIN 1",
        "ALTER QUERY first TOP 3",
    ),
    "bounded": Case(
        "QUERY first AS AVG(a.cpu, b.cpu, c.cpu) WITHIN 5",
        "QUERY second AS MAX(a.cpu, d.cpu) WITHIN 2",
        "ALTER QUERY first WITHIN 2 IMMEDIATELY",
        _bounded,
    ),
    "standing": Case(
        "QUERY first AS SUM(a.cpu, b.cpu) WITHIN 10 CONFIDENCE 0.9",
        "QUERY second AS AVG(a.cpu, c.cpu) WITHIN 5 CONFIDENCE 0.95",
        "ALTER QUERY first WITHIN 20",
        _standing,
    ),
}


def test_every_registered_kind_has_a_contract_case() -> None:
    assert set(CASES) == {k.name for k in KINDS}


def _series() -> pd.DataFrame:
    if not NAB.exists():
        pytest.skip(f"NAB data not found at {NAB.resolve()} (shared data checkout missing)")
    frames = []
    for j, (series, tag) in enumerate(FILES.items()):
        values = pd.read_csv(NAB / f"ec2_cpu_utilization_{tag}.csv")["value"].to_numpy()[:POINTS]
        ts = np.arange(POINTS) * STEP_MS + 1_000 * j  # one clock, each series a second apart
        frames.append(pd.DataFrame({"series": series, "ts": ts, "value": values}))
    return pd.concat(frames).sort_values(["ts", "series"], kind="stable", ignore_index=True)


def _settle(rt: BatchedRuntime, points: list) -> list[dict]:
    """One batch, then its control delivered at once until none is left; the events."""
    rt.run_batch(points)
    events = list(rt.events())
    for _ in range(64):
        if not rt.control:
            return events
        rt.run_batch([])
        events += rt.events()
    raise AssertionError("the batch runtime did not settle")


def _cut(chunk: pd.DataFrame, kind: str) -> list[pd.DataFrame]:
    """The Monitor's batches of one ingest: with standing queries, one per tick interval
    ``(b − tick, b]`` that holds points, in interval order (the tick is ``STEP_MS``)."""
    if kind != "standing":
        return [chunk]
    return [g for _, g in chunk.groupby(-(-chunk["ts"] // STEP_MS), sort=True)]


def _comparable(answers: Mapping[str, Any]) -> dict[str, Any]:
    """Answers with ``nan`` made comparable."""
    return {
        n: {
            k: ("nan" if isinstance(v, float) and math.isnan(v) else v)
            for k, v in a.__dict__.items()
        }
        for n, a in answers.items()
    }


@pytest.mark.parametrize(
    ("kind", "period"), [(k, "30m") for k in sorted(CASES)] + [("bounded", None)]
)
def test_monitor_equals_the_batch_runtime_while_queries_change(
    kind: str, period: str | None
) -> None:
    case, data = CASES[kind], _series()
    monitor = Monitor(list(FILES), retention=None, filter_period=period, standing_tick="5m")
    settings = HostSettings(
        None if period is None else 1_800_000,  # None: T chosen online
        0.05,
        0,
        "capped",
        RegisterSettings(retention=None),
        StandingSettings(tick_ms=STEP_MS),
        bounded_lag_ms=0,  # the Monitor's: answers as of the newest point
    )
    rt = BatchedRuntime.from_settings(settings, source_of=dict.fromkeys(FILES, SOURCE))
    statement = parse_query(case.first)
    monitor.add_query(case.first)
    rt.coordinator.add(statement, source_of=lambda names: dict.fromkeys(names, SOURCE))
    rt.open_source(SOURCE)  # as the Monitor's host: the queries reach the node first
    _settle(rt, [])
    by_time = {s: g for s, g in data.groupby("series")}

    def newest(series: str, t: int) -> float:
        g = by_time[series]
        return float(g["value"].to_numpy()[np.searchsorted(g["ts"].to_numpy(), t, "right") - 1])

    names, unknown = ["first"], [0, 0]
    for b, lo in enumerate(range(0, len(data), BATCH)):
        chunk = data.iloc[lo : lo + BATCH]
        monitor.ingest(chunk["series"], chunk["ts"], chunk["value"])
        want = [
            r["payload"]
            for group in _cut(chunk, kind)
            for r in _settle(
                rt, [(SOURCE, s, int(t), float(v)) for s, t, v in group.itertuples(index=False)]
            )
        ]
        got = [event_row(e)["payload"] for e in monitor.events()]
        key = lambda p: (p["ts_ms"], p["series"], p["query"])  # noqa: E731
        assert sorted(got, key=key) == sorted(want, key=key)
        mine, theirs = monitor.answers(kind), rt.answers(kind)
        assert set(mine) == set(theirs) == set(names) or kind == "watch"
        if case.equal:
            assert _comparable(mine) == _comparable(theirs)
        if case.check is not None:
            unknown[0] += case.check(mine, newest)
            unknown[1] += case.check(theirs, newest)
        if b == ADD_AT:
            monitor.add_query(case.second)
            rt.coordinator.add(parse_query(case.second))
            names.append("second")
        elif b == ALTER_AT and case.alter is not None:
            monitor.alter_query(case.alter)
            rt.coordinator.alter(parse_query(case.alter))
        elif b == REMOVE_AT:
            monitor.remove_query("FIRST")
            rt.remove_query("first")
            names.remove("first")
        _settle(rt, [])
        assert {n.lower() for n in monitor.queries()} == {n.lower() for n in rt.coordinator.names()}
    assert monitor.stats()["received"] == len(data)
    assert unknown[0] == 0 and unknown[1] <= 1  # the batch host's first answer: before replies
    if period is None:  # chosen from the streamed updates, and in force at the sources
        chosen = rt.coordinator.part("bounded").coordinator.period_ms
        filters = rt.nodes[SOURCE].part("bounded").filters.values()
        assert chosen is not None and {f.period_ms for f in filters} == {chosen}


@pytest.mark.parametrize("delay", [2, 3])
@pytest.mark.parametrize("kind", ["bounded", "standing", "topk"])
def test_guarantees_hold_when_control_is_delayed(kind: str, delay: int) -> None:
    """With the control a few batches late (a slow channel), approximate answers still hold
    their guarantee, and once the control is all delivered a top-k set is valid within ε."""
    case, data = CASES[kind], _series()
    rt = BatchedRuntime(
        1_800_000,
        0.05,
        0,
        source_of=dict.fromkeys(FILES, SOURCE),
        growth="capped",
        standing_settings=StandingSettings(tick_ms=STEP_MS),
        queries=case.first,
        transport=Transport(delay=delay),
    )
    by_time = {s: g for s, g in data.groupby("series")}

    def newest(series: str, t: int) -> float:
        g = by_time[series]
        return float(g["value"].to_numpy()[np.searchsorted(g["ts"].to_numpy(), t, "right") - 1])

    unknown = 0
    for b, lo in enumerate(range(0, len(data), BATCH)):
        chunk = data.iloc[lo : lo + BATCH]
        rt.run_batch([(SOURCE, s, int(t), float(v)) for s, t, v in chunk.itertuples(index=False)])
        if case.check is not None:
            unknown += case.check(rt.answers(kind), newest)
        if b == ADD_AT:
            rt.coordinator.add(parse_query(case.second))
        elif b == ALTER_AT:
            rt.coordinator.alter(parse_query(case.alter))
        elif b == REMOVE_AT:
            rt.remove_query("first")
    assert unknown <= 2 * delay  # each added query, until its sources' replies arrive
    for _ in range(10 * delay):  # deliver everything
        rt.run_batch([])
    assert not rt.control
    if kind == "topk":  # a point is a count: an object's value is its series' sum
        sums = data.groupby("series")["value"].sum().rename(lambda s: s.split(".")[0])
        (bottom,) = rt.answers("topk")["second"].members
        assert rt.answers("topk")["second"].settled
        assert sums[bottom] <= sums.min() + 1.0  # BOTTOM 1 within ε = 1
