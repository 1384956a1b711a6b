"""Adaptive bound filters end to end: every answer holds the exact aggregate within δ."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.protocols.filters import Growth, Query, StreamedUpdate
from tsmon.protocols.filters.messages import Message
from tsmon.sim.filters.network import FilterNetwork

KINDS = ["avg", "sum", "min", "max"]


def make_query(draw: st.DrawFn, name: str, objects: list[str]) -> Query:
    """A random AVG/SUM (weighted) or MIN/MAX query over some of ``objects``."""
    kind = draw(st.sampled_from(KINDS))
    members = draw(
        st.lists(st.sampled_from(objects), min_size=1, max_size=len(objects), unique=True)
    )
    delta = draw(st.floats(0.05, 20.0))
    if kind in ("avg", "sum"):
        weights = {o: draw(st.sampled_from([1.0, -1.0, 2.0, -0.5, 3.0, -2.5])) for o in members}
        return (Query.avg if kind == "avg" else Query.sum)(name, weights, delta)
    return (Query.min if kind == "min" else Query.max)(name, members, delta)


@st.composite
def scenarios(draw: st.DrawFn) -> dict:
    """Random walks of 2–10 objects and 1–4 (possibly overlapping) queries over them."""
    n = draw(st.integers(2, 10))
    objects = [f"o{i}" for i in range(n)]
    return {
        "objects": objects,
        "queries": [make_query(draw, f"q{j}", objects) for j in range(draw(st.integers(1, 4)))],
        "period_ms": draw(st.one_of(st.none(), st.integers(1, 500))),  # None: chosen online
        "shrink": draw(st.floats(0.0, 0.6)),
        "seed": draw(st.integers(0, 2**32 - 1)),
        "steps": draw(st.integers(1, 300)),
        "growth": draw(st.sampled_from(["paper", "capped"])),
    }


def check_answers(net: FilterNetwork, queries: list[Query], values: dict[str, float]) -> None:
    """Every bounded answer holds the exact aggregate and is at most δ wide."""
    answers = net.answers()
    tol = 1e-9 * (1 + max(abs(v) for v in values.values()))
    for q in queries:
        a = answers[q.name]
        exact = q.exact(values)
        assert a.hi - a.lo <= q.delta * (1 + 1e-9), (q, a)
        assert a.lo - tol <= exact <= a.hi + tol, (q, a, exact)


def check_mirrors(net: FilterNetwork) -> None:
    """Zero latency: the coordinator's width is never narrower than the source's."""
    widths = net.coordinator.widths()
    for o, source in net.sources.items():
        assert widths[o] >= source.width, (o, widths[o], source.width)


def run(scenario: dict) -> None:
    """Drive a network with random walks; check every answer after every update."""
    rng = np.random.default_rng(scenario["seed"])
    objects, queries = scenario["objects"], scenario["queries"]
    period_ms = scenario["period_ms"]
    net = FilterNetwork(
        objects,
        queries,
        period_ms,
        scenario["shrink"],
        np.random.default_rng(scenario["seed"]),
        growth=scenario["growth"],
    )
    step_sizes = dict(
        zip(objects, rng.choice([0.0, 0.01, 0.3, 1.0, 5.0], len(objects)), strict=True)
    )
    values = {o: float(rng.normal(0, 10)) for o in objects}
    growth_seen = net.counts.growth  # adaptivity changes while registering the queries
    now_ms = 0
    for o in objects:  # every object reports once before answers are bounded
        net.update(now_ms, o, values[o])
    for _ in range(scenario["steps"]):
        gap = int(rng.integers(0, 2 * (period_ms or 100) + 1))
        now_ms += gap
        o = objects[int(rng.integers(len(objects)))]
        values[o] += float(rng.normal(0, step_sizes[o]))
        for m in net.update(now_ms, o, values[o]):
            if isinstance(m, Growth):
                growth_seen += 1
                assert m.ts_ms <= now_ms
                # growth at boundaries; with T chosen online, also the switch to adaptive
                assert period_ms is None or m.ts_ms % period_ms == 0
        check_answers(net, queries, values)
        check_mirrors(net)
    assert net.counts.growth == growth_seen


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_answers_hold_exact_aggregate_within_delta(scenario: dict) -> None:
    run(scenario)


def test_streamed_updates_are_a_fraction_of_raw_updates_for_one_avg() -> None:
    """Loose sanity bound (not a paper figure): adaptive filters drop most random-walk updates."""
    rng = np.random.default_rng(7)
    objects = [f"o{i}" for i in range(10)]
    steps = np.linspace(0.1, 2.0, 10)
    net = FilterNetwork(objects, [Query.avg("q", objects, 4.0)], 100, 0.05, rng)
    values = np.zeros(10)
    raw = 0
    for t in range(3_000):
        for i, o in enumerate(objects):
            values[i] += rng.normal(0, steps[i])
            net.update(t, o, float(values[i]))
            raw += 1
        a = net.answers()["q"]
        assert a.lo - 1e-9 <= values.mean() <= a.hi + 1e-9
    assert net.counts.streamed < 0.5 * raw, net.counts
    assert net.counts.growth > 0


def test_single_object_queries_fix_width_and_unqueried_objects_never_send() -> None:
    net = FilterNetwork(
        ["a", "b", "c"],
        [Query.avg("one", ["a"], 2.0), Query.max("top", ["a"], 1.0)],
        10,
        0.5,
        np.random.default_rng(0),
    )
    assert net.update(0, "c", 5.0) == []  # W = ∞: in no query
    assert net.update(0, "a", 0.0) == [StreamedUpdate("a", 0.0, 0, width_seq=2, seq=1)]
    assert net.coordinator.widths()["a"] == 1.0  # §3: W = min δ over single-object queries
    for t in range(1, 100):
        net.update(t, "a", 0.4 * (-1) ** t)  # inside ±0.5 forever, no shrink: nothing sent
    assert net.counts.streamed == 1 and net.counts.growth == 0
    assert [(a.lo, a.hi) for a in net.answers().values()] == [(-0.5, 0.5), (-0.5, 0.5)]


def test_updates_with_the_same_timestamp_overtaking_each_other_keep_the_newest() -> None:
    """§4: two values of one object at the same ms, the older one delayed past the newer one
    (no per-link FIFO): the bound cache must keep the one the source re-centred on last."""
    slow = []

    def delay(message: Message, sent_ms: int) -> int:
        if isinstance(message, StreamedUpdate) and message.ts_ms == 5:
            slow.append(message)
            return 10 if len(slow) == 1 else 0  # the first one arrives last
        return 0

    net = FilterNetwork(
        ["a"],
        [Query.avg("q", ["a"], 2.0)],
        1_000,
        0.1,
        np.random.default_rng(0),
        delay=delay,
        latency_ms=10,
    )
    net.update(0, "a", 0.0)
    net.update(5, "a", 10.0)
    net.update(5, "a", 20.0)
    net.advance(30)
    answer = net.answers()["q"]
    assert len(slow) == 2 and net.coordinator.queue.late == 0
    assert answer.lo <= 20.0 <= answer.hi, answer


def test_queries_over_objects_the_network_does_not_have_are_refused_before_any_change() -> None:
    net = FilterNetwork(["a"], [], 10, 0.1, np.random.default_rng(0))
    with pytest.raises(KeyError, match="'zz'"):
        net.add_query(Query.avg("q", ["a", "zz"], 1.0))
    assert net.coordinator.queries == {} and net.counts.total == 0
    with pytest.raises(KeyError, match="'zz'"):
        FilterNetwork(["a"], [Query.avg("q", ["zz"], 1.0)], 10, 0.1, np.random.default_rng(0))


def test_a_negative_delay_is_refused() -> None:
    with pytest.raises(ValueError, match="delay"):
        FilterNetwork(
            ["a"],
            [Query.avg("q", ["a"], 1.0)],
            10,
            0.1,
            np.random.default_rng(0),
            delay=lambda message, sent_ms: -1,
        )
