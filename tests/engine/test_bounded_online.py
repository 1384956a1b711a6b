"""The batch host with the filter period ``T`` chosen online (``period_ms=None``): the
coordinator chooses ``T`` from the streamed updates and tells the sources in its width
messages, and falls back to uniform static widths when the safety net trips; whatever the
batches and the coordinator's lag (1 ms, the batch runtimes; 0, the Monitor's), every answer
holds the exact aggregate of the values delivered so far within δ, and every source filter
holds the width the coordinator assumes for it, to the bit, once no message is in flight."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.engine.batched import BatchedRuntime
from tsmon.engine.settings import HostSettings
from tsmon.protocols.filters import Query
from tsmon.protocols.filters.bounds import shrunk
from tsmon.protocols.filters.tuning import INTERVALS_PER_PERIOD

UNIT = 300_000  # five minutes between the points of a series
START = 1_700_000_000_000


def runtime(lag: int, source_of: dict[str, str], queries: list[Query]) -> BatchedRuntime:
    settings = HostSettings(None, 0.05, 0, "capped", bounded_lag_ms=lag)
    rt = BatchedRuntime.from_settings(settings, source_of=source_of)
    for q in queries:
        rt.add_query(q)
    return rt


def check_answers(rt: BatchedRuntime, queries: list[Query], delivered: dict) -> None:
    """Every known answer holds the exact aggregate, as of its time, of the values delivered
    so far (a later batch's point stamped at that time is applied when it comes)."""
    answers = rt.answers()
    for q in queries:
        a = answers[q.name]
        if math.isnan(a.value):
            continue
        values = {}
        for o in q.objects:
            ts, vs = delivered[o]
            values[o] = vs[np.searchsorted(ts, a.as_of_ms, "right") - 1]
        assert a.lo - 1e-9 <= q.exact(values) <= a.hi + 1e-9, (q.name, a, values)
        assert a.hi - a.lo <= q.delta * (1 + 1e-9), (q.name, a)


def check_agreement(rt: BatchedRuntime) -> int:
    """Each source filter's width is the coordinator's confirmed schedule at the source's
    period, to the bit, unless a message to it is in flight or unconfirmed; how many agree."""
    coord = rt.coordinator.part("bounded").coordinator
    cache = coord.cache
    flying = {r["payload"]["object_id"] for rows in rt.control.values() for r in rows}
    agreed = 0
    for node in rt.nodes.values():
        for name, f in node.part("bounded").filters.items():
            i = cache.i(name)
            if name in flying or i in cache.pending:
                continue
            assert f.adaptive == bool(cache.adaptive[i]), name
            if f.adaptive:
                assert f.period_ms == coord.period_ms, name  # T reached it
                k = f.now_ms // f.period_ms
                assert f.width == shrunk(float(cache.base[i]), cache.factor, k - cache.anchor[i])
            else:
                assert f.width == cache.base[i], name
            agreed += 1
    return agreed


def replay(rt: BatchedRuntime, queries: list[Query], points: list, sizes: list[int]) -> int:
    """Feed ``points`` (time order) in batches of the given sizes, cycling, then three empty
    batches; check every step; returns the agreements counted."""
    delivered: dict[str, tuple[list, list]] = {}
    agreed, lo, n = 0, 0, 0
    while lo < len(points) or n < 3:
        size = sizes[n % len(sizes)] if lo < len(points) else 0
        batch = points[lo : lo + size]
        lo += size
        n += 1 if not batch else 0
        for _, series, ts, value in batch:
            delivered.setdefault(series, ([], []))
            delivered[series][0].append(ts)
            delivered[series][1].append(value)
        rt.run_batch(batch, clock_ms=START + 10**12)
        check_answers(rt, queries, delivered)
        agreed += check_agreement(rt)
    return agreed


def walks(steps: int, seed: int, shared: bool) -> tuple[list, dict[str, str]]:
    rng = np.random.default_rng(seed)
    objects = ["a", "b", "c", "d"]
    values = np.cumsum(rng.normal(0.0, [0.2, 1.0, 3.0, 0.5], size=(steps, 4)), axis=0)
    source_of = {o: ("n" if shared else f"n.{o}") for o in objects}
    points = [
        (source_of[o], o, START + t * UNIT, float(values[t, j]))
        for t in range(steps)
        for j, o in enumerate(objects)
    ]
    return points, source_of


@settings(max_examples=20, deadline=None)
@given(
    lag=st.sampled_from([0, 1]),
    shared=st.booleans(),
    sizes=st.lists(st.integers(1, 40), min_size=1, max_size=4),
    seed=st.integers(0, 2**16),
    delta=st.sampled_from([0.5, 2.0, 8.0]),
)
def test_the_period_chosen_online_keeps_answers_and_widths_in_agreement(
    lag: int, shared: bool, sizes: list[int], seed: int, delta: float
) -> None:
    points, source_of = walks(300, seed, shared)
    queries = [Query.avg("avg", list("abcd"), delta), Query.max("top", ["b"], delta)]
    rt = runtime(lag, source_of, queries)
    agreed = replay(rt, queries, points, sizes)
    coord = rt.coordinator.part("bounded").coordinator
    assert coord.period_ms is not None and coord.period_ms >= INTERVALS_PER_PERIOD * UNIT
    assert agreed > 0
    for node in rt.nodes.values():  # every adapting series' source learned it
        for f in node.part("bounded").filters.values():
            assert f.period_ms == coord.period_ms or not f.adaptive


def test_the_period_is_twenty_sampling_intervals_as_in_the_per_point_protocol() -> None:
    points, source_of = walks(600, 0, shared=False)
    queries = [Query.avg("avg", list("abcd"), 0.5)]  # narrow: nearly every point is sent
    rt = runtime(1, source_of, queries)
    replay(rt, queries, points, [37])
    assert rt.coordinator.part("bounded").coordinator.period_ms == INTERVALS_PER_PERIOD * UNIT


@pytest.mark.parametrize("lag", [0, 1])
def test_the_safety_net_falls_back_and_the_sources_stop_shrinking(lag: int) -> None:
    """±1 walks on a lattice, SUM of three WITHIN 6 (the safety-net workload of
    tests/protocols/filters/test_tuning.py): adapting costs more than uniform static widths,
    the coordinator falls back, and its width messages make every source static again."""
    rng = np.random.default_rng(0)
    steps = 3_000
    objects = ["a", "b", "c", "z"]
    values = np.column_stack(
        [np.cumsum(rng.choice([-1.0, 1.0], size=(steps, 3)), axis=0), np.full(steps, 5.0)]
    )
    source_of = {o: f"n.{o}" for o in objects}
    points = [
        (source_of[o], o, START + t * 1_000, float(values[t, j]))
        for t in range(steps)
        for j, o in enumerate(objects)
    ]
    queries = [Query.avg("avg", objects, 10.0), Query.sum("sum", ["a", "b", "c"], 6.0)]
    rt = runtime(lag, source_of, queries)
    agreed = replay(rt, queries, points, [50, 13])
    coord = rt.coordinator.part("bounded").coordinator
    assert coord.fallback and agreed > 0
    filters = [f for node in rt.nodes.values() for f in node.part("bounded").filters.values()]
    assert filters and not any(f.adaptive for f in filters)
