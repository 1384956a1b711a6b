"""Bounded aggregates over series that go quiet: once every series has sent all its points
(in the batch where it first appears, or any later one), the answer is known as of the
coordinator's time within two batches, and holds the exact value then (BatchedRuntime,
the reference Spark must agree with batch for batch)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from typing import NamedTuple

from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.engine.batched import BatchedRuntime

DELTA = 1.0
QUERY = f"QUERY q AS AVG(s.*) WITHIN {DELTA:g}"
Point = tuple[str, str, int, float]  # (source, series, ts, value)


def runtime(query: str = QUERY) -> BatchedRuntime:
    return BatchedRuntime(period_ms=10, shrink=0.1, seed=0, queries=query)


def series_points(source: str, series: str, times: list[int]) -> list[Point]:
    return [(source, series, t, float(t % 7)) for t in times]


class Oracle(NamedTuple):
    as_of: int  # the coordinator's time: the oldest source's time − 1, never going back
    applied: dict[str, list[tuple[int, float]]]  # each series' values, at the node's times
    reply: dict[str, int]  # when each series' filter sends its first value


def oracle(batches: list[list[Point]]) -> Oracle:
    """What the batches lead to; a point older than its node's time is applied at that time
    (docs/time.md). A series' filter starts in the batch after the one it appears in, one ms
    before its node's time if it had a value then, else at that time (kinds/bounded/)."""
    now: dict[str, int] = {}
    applied: dict[str, list[tuple[int, float]]] = {}
    reply: dict[str, int] = {}
    coordinator = None
    for batch in batches:
        for src, series, ts, value in sorted(batch, key=lambda p: p[2]):
            now[src] = max(ts, now.get(src, ts))
            applied.setdefault(series, []).append((now[src], value))
        for series in {p[1] for p in batch}:
            node = now[next(p[0] for p in batch if p[1] == series)]
            known = value_at(applied[series], node - 1) is not None
            reply.setdefault(series, node - 1 if known else node)
        time = min(now.values()) - 1 if now else None
        if time is not None:
            coordinator = time if coordinator is None else max(coordinator, time)
    assert coordinator is not None
    return Oracle(coordinator, applied, reply)


def value_at(values: list[tuple[int, float]], t: int) -> float | None:
    before = [v for at, v in values if at <= t]
    return before[-1] if before else None


def check(
    batches: list[list[Point]],
    query: str = QUERY,
    of: Callable[[list[float]], float] = statistics.fmean,
) -> None:
    rt = runtime(query)
    for batch in batches:
        rt.run_batch(batch, clock_ms=0)
    for _ in range(2):  # the width messages of the last series out, their replies back
        answer = rt.run_batch([], clock_ms=0)["q"]
    o = oracle(batches)
    assert answer.as_of_ms == o.as_of
    values = [value_at(v, o.as_of) for v in o.applied.values()]
    if any(r > o.as_of for r in o.reply.values()):  # a first value stamped after that time
        assert math.isnan(answer.value)
        return
    exact = of(values)  # type: ignore[arg-type]
    assert answer.lo <= exact <= answer.hi
    assert answer.hi - answer.lo <= DELTA * (1 + 1e-9)


def test_all_points_in_the_first_batch_one_source() -> None:
    times = list(range(0, 101, 5))
    batch = series_points("n1", "s.a", times) + series_points("n1", "s.b", times)
    check([batch])
    rt = runtime()
    rt.run_batch(batch, clock_ms=0)
    answer = rt.run_batch([], clock_ms=0)["q"]  # known one batch after the series appeared
    assert (answer.value, answer.as_of_ms) == (4.0, 99)  # both at 95 ms: 95 % 7


def test_all_points_in_the_first_batch_two_sources() -> None:
    times = list(range(0, 101, 5))
    check([series_points("n1", "s.a", times) + series_points("n2", "s.b", times)])


LATER = [
    series_points("n1", "s.a", list(range(0, 101, 5))),
    series_points("n1", "s.b", list(range(50, 151, 5))),
    series_points("n1", "s.c", list(range(0, 201, 5))),
]


def test_one_series_per_batch_later_ones_ending_later() -> None:
    check([LATER[0]])
    check(LATER, f"QUERY q AS AVG(s.a, s.b, s.c) WITHIN {DELTA:g}")


def test_one_series_per_batch_a_glob_query() -> None:
    """Registered again over each new series, the glob query leaves the filters that meet its
    constraints alone, and those it shrinks reply a millisecond before their node's time."""
    check(LATER)
    check(LATER, f"QUERY q AS SUM(s.*) WITHIN {DELTA:g}", math.fsum)


def test_a_series_applied_only_at_its_node_time_has_no_value_before_it() -> None:
    """The limit (docs/time.md): a series whose points all come after its node passed them is
    applied at the node's time, the coordinator's time stays one ms before it while no later
    point comes, so the answer says why it is not known (and stays exact as of that time)."""
    times = list(range(0, 101, 5))
    check([series_points("n1", "s.a", times), series_points("n1", "s.b", times)])
    rt = runtime()
    rt.run_batch(series_points("n1", "s.a", times), clock_ms=0)
    rt.run_batch(series_points("n1", "s.b", times), clock_ms=0)
    for _ in range(3):
        answer = rt.run_batch([], clock_ms=0)["q"]
    assert math.isnan(answer.value) and answer.as_of_ms == 99
    # a later point of the source moves its time on: the value at 100 ms is then known
    answer = rt.run_batch([("n1", "other", 101, 0.0)], clock_ms=0)["q"]
    assert (answer.value, answer.as_of_ms) == (2.0, 100)  # both at 100 ms: 100 % 7


@st.composite
def quiet_series(draw: st.DrawFn) -> tuple[int, list[list[Point]]]:
    """2-4 series on 1-2 sources, each sending all its points (distinct instants) in one
    batch, some batches empty; every source has a series in the first batch (a source that
    joins behind the coordinator's time holds its width messages until it gets there)."""
    n = draw(st.integers(2, 4))
    n_batches = draw(st.integers(1, 4))
    batches: list[list[Point]] = [[] for _ in range(n_batches)]
    first: set[str] = set()
    for i in range(n):
        source = draw(st.sampled_from(["n1", "n2"]))
        times = sorted(draw(st.sets(st.integers(0, 200), min_size=1, max_size=6)))
        batch = 0 if source not in first else draw(st.integers(0, n_batches - 1))
        first.add(source)
        batches[batch] += series_points(source, f"s.{i}", times)
    return n, batches


@settings(max_examples=150, deadline=None)
@given(drawn=quiet_series())
def test_quiet_series_become_known_within_two_batches(
    drawn: tuple[int, list[list[Point]]],
) -> None:
    n, batches = drawn
    terms = ", ".join(f"s.{i}" for i in range(n))
    check(batches, f"QUERY q AS AVG({terms}) WITHIN {DELTA:g}")


@settings(max_examples=150, deadline=None)
@given(drawn=quiet_series(), aggregate=st.sampled_from(["AVG", "SUM"]))
def test_quiet_series_of_a_glob_query_become_known_within_two_batches(
    drawn: tuple[int, list[list[Point]]], aggregate: str
) -> None:
    """As the query naming the series, though the glob query is registered again over each
    series as it appears (a SUM shrinks the filters that exist to make room for it)."""
    _, batches = drawn
    of = statistics.fmean if aggregate == "AVG" else math.fsum
    check(batches, f"QUERY q AS {aggregate}(s.*) WITHIN {DELTA:g}", of)


def test_a_source_that_stopped_later_waits_for_the_idle_timeout() -> None:
    """n2 stops 100 ms after n1: the coordinator stays at n1's time − 1, before n2's first
    values (stamped at n2's time − 1), until n1 is idle (docs/time.md)."""
    batch = series_points("n1", "s.a", list(range(0, 101, 5)))
    batch += series_points("n2", "s.b", list(range(0, 201, 5)))
    query = f"QUERY q AS AVG(s.a, s.b) WITHIN {DELTA:g}"
    for idle_ms, value, as_of in ((None, math.nan, 99), (50, (100 % 7 + 195 % 7) / 2, 199)):
        rt = BatchedRuntime(10, 0.1, 0, queries=query, idle_timeout_ms=idle_ms)
        rt.run_batch(batch, clock_ms=0)
        for _ in range(3):
            answer = rt.run_batch([], clock_ms=0)["q"]
        assert answer.as_of_ms == as_of
        if math.isnan(value):
            assert math.isnan(answer.value)
        else:
            assert answer.lo <= value <= answer.hi and answer.hi - answer.lo <= DELTA
