"""Adaptive bound filters end to end: every answer holds the exact aggregate within δ."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.protocols.filters import FilterNetwork, Growth, Query, StreamedUpdate

KINDS = ["avg", "sum", "min", "max"]


@st.composite
def scenarios(draw: st.DrawFn) -> dict:
    """Random walks of 2–10 objects and 1–4 (possibly overlapping) queries over them."""
    n = draw(st.integers(2, 10))
    objects = [f"o{i}" for i in range(n)]
    queries = []
    for j in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(KINDS))
        members = draw(st.lists(st.sampled_from(objects), min_size=1, max_size=n, unique=True))
        delta = draw(st.floats(0.05, 20.0))
        if kind in ("avg", "sum"):
            weights = {o: draw(st.sampled_from([1.0, -1.0, 2.0, -0.5, 3.0, -2.5])) for o in members}
            make = Query.avg if kind == "avg" else Query.sum
            queries.append(make(f"q{j}", weights, delta))
        else:
            make = Query.min if kind == "min" else Query.max
            queries.append(make(f"q{j}", members, delta))
    return {
        "objects": objects,
        "queries": queries,
        "period_ms": draw(st.integers(1, 500)),
        "shrink": draw(st.floats(0.0, 0.6)),
        "seed": draw(st.integers(0, 2**32 - 1)),
        "steps": draw(st.integers(1, 300)),
    }


def run(scenario: dict) -> None:
    """Drive a network with random walks; check every answer after every update."""
    rng = np.random.default_rng(scenario["seed"])
    objects, queries = scenario["objects"], scenario["queries"]
    period_ms = scenario["period_ms"]
    net = FilterNetwork(
        objects, queries, period_ms, scenario["shrink"], np.random.default_rng(scenario["seed"])
    )
    step_sizes = dict(
        zip(objects, rng.choice([0.0, 0.01, 0.3, 1.0, 5.0], len(objects)), strict=True)
    )
    values = {o: float(rng.normal(0, 10)) for o in objects}
    growth_seen = 0
    observations = 0

    def check(log: list, now_ms: int, boundary: bool, answers: bool = True) -> None:
        nonlocal growth_seen
        for m in log:
            if isinstance(m, Growth):
                growth_seen += 1
                assert boundary and m.ts_ms % period_ms == 0 and m.ts_ms <= now_ms
        for q in queries if answers else []:
            lo, hi = net.answers()[q.name]
            exact = q.exact(values)
            tol = 1e-9 * (1 + max(abs(v) for v in values.values()))
            assert hi - lo <= q.delta + 1e-9, (q, lo, hi)
            assert lo - tol <= exact <= hi + tol, (q, lo, exact, hi)

    now_ms = 0
    for o in objects:  # every object reports once before answers are bounded
        check(net.update(now_ms, o, values[o]), now_ms, False, answers=False)
        observations += 1
    for _ in range(scenario["steps"]):
        gap = int(rng.integers(0, 2 * period_ms + 1))
        crosses = (now_ms + gap) // period_ms > now_ms // period_ms
        now_ms += gap
        o = objects[int(rng.integers(len(objects)))]
        values[o] += float(rng.normal(0, step_sizes[o]))
        check(net.update(now_ms, o, values[o]), now_ms, crosses)
        observations += 1
    assert net.counts.streamed <= observations
    assert net.counts.growth == growth_seen
    assert net.counts.shrink == 0


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
        lo, hi = net.answers()["q"]
        assert lo - 1e-9 <= values.mean() <= hi + 1e-9
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
    assert net.coordinator.widths()["a"] == 1.0  # §3: W = min δ over single-object queries
    assert net.update(0, "c", 5.0) == []  # W = ∞: in no query
    assert net.update(0, "a", 0.0) == [StreamedUpdate("a", 0.0, 0)]
    for t in range(1, 100):
        net.update(t, "a", 0.4 * (-1) ** t)  # inside ±0.5 forever, no shrink: nothing sent
    assert net.counts.streamed == 1 and net.counts.growth == 0
    assert net.answers() == {"one": (-0.5, 0.5), "top": (-0.5, 0.5)}
