"""Bounded-aggregate queries through the Monitor: answers against the newest values (oracle)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.engine.monitor import Monitor
from tsmon.query.aggregate import QueryResolveError
from tsmon.query.errors import QuerySyntaxError

SERIES = ["a.x", "b.x", "c.x", "d.y"]
QUERIES = """
QUERY avg3 AS AVG(a.x, b.x, c.x) WITHIN 2
QUERY diff AS SUM(2*a.x - b.x) WITHIN 0.5
QUERY low AS MIN(a.x, c.x, d.y) WITHIN 0.25
QUERY high AS MAX(*.x) WITHIN 1
"""


def exact(name: str, v: dict[str, float]) -> float:
    """The exact aggregates of QUERIES, written out by hand."""
    return {
        "avg3": (v["a.x"] + v["b.x"] + v["c.x"]) / 3,
        "diff": 2 * v["a.x"] - v["b.x"],
        "low": min(v["a.x"], v["c.x"], v["d.y"]),
        "high": max(v["a.x"], v["b.x"], v["c.x"]),
    }[name]


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    batches=st.integers(1, 30),
    lateness=st.sampled_from([0, 500]),
    alter=st.floats(0.05, 3.0),
    growth=st.sampled_from(["paper", "capped"]),
)
def test_answers_hold_the_newest_values_within_delta(
    seed: int, batches: int, lateness: int, alter: float, growth: str
) -> None:
    rng = np.random.default_rng(seed)
    mon = Monitor(
        SERIES,
        filter_period="1s",
        filter_shrink=0.1,
        filter_growth=growth,
        allowed_lateness=lateness,
    )
    newest: dict[str, tuple[int, float]] = {}
    t = 0
    first = rng.normal(0, 5, len(SERIES))
    mon.ingest(SERIES, [0] * len(SERIES), first)
    newest.update({s: (0, float(v)) for s, v in zip(SERIES, first, strict=True)})
    mon.add_query(QUERIES)
    deltas = {"avg3": 2.0, "diff": 0.5, "low": 0.25, "high": 1.0}
    for b in range(batches):
        n = int(rng.integers(1, 20))
        names = rng.choice(SERIES, n).tolist()
        ts = (t + np.sort(rng.integers(0, 3000, n)) - rng.integers(0, lateness + 1, n)).tolist()
        vals = (rng.normal(0, 1, n) * rng.choice([0.01, 0.3, 3.0], n)).tolist()
        values = [newest[s][1] + v for s, v in zip(names, vals, strict=True)]
        mon.ingest(names, ts, values)
        for s in SERIES:  # the oracle: each series' newest stored point
            pts = mon.points(s)
            newest[s] = (int(pts.ts_ms.iloc[-1]), float(pts.value.iloc[-1]))
        t = max(ts)
        if b == batches // 2:
            mon.alter_query(f"ALTER QUERY diff WITHIN {alter} IMMEDIATELY")
            deltas["diff"] = alter
        v = {s: newest[s][1] for s in SERIES}
        for name, answer in mon.answers().items():
            assert answer.lo - 1e-9 <= exact(name, v) <= answer.hi + 1e-9, (name, answer, v)
            assert answer.hi - answer.lo <= deltas[name] * (1 + 1e-9)


def test_a_query_over_series_without_points_is_unbounded_until_they_report() -> None:
    mon = Monitor(["a", "b"])
    mon.add_query("QUERY s AS SUM(a, b) WITHIN 1")
    assert math.isinf(mon.answers()["s"].lo)
    mon.ingest(["a", "b"], [0, 0], [1.0, 2.0])
    answer = mon.answers()["s"]
    assert answer.lo <= 3.0 <= answer.hi and answer.hi - answer.lo <= 1.0


def test_bad_aggregate_queries_say_what_is_wrong() -> None:
    mon = Monitor(["a", "b"])
    with pytest.raises(QueryResolveError, match="unknown series 'zz'"):
        mon.add_query("QUERY s AS SUM(a, zz) WITHIN 1")
    with pytest.raises(QuerySyntaxError, match="1:"):
        mon.add_query("QUERY s AS SUM(a, b)")
    with pytest.raises(ValueError, match="alter_query"):
        mon.add_query("ALTER QUERY s WITHIN 1")
    with pytest.raises(KeyError, match="no query named 's'"):
        mon.alter_query("ALTER QUERY s WITHIN 1")
    mon.add_query("QUERY s AS SUM(a, b) WITHIN 1")
    with pytest.raises(ValueError, match="already exists"):
        mon.add_query("QUERY S AS AVG(a) WITHIN 1")
    assert mon.queries() == {"s": "QUERY s AS SUM(a, b) WITHIN 1"}


def test_redefining_and_removing_an_aggregate() -> None:
    mon = Monitor(["a", "b"], filter_period="1s")
    mon.ingest(["a", "b"], [0, 0], [1.0, 5.0])
    mon.add_query("QUERY s AS SUM(a, b) WITHIN 1")
    mon.alter_query("QUERY s AS MAX(a, b) WITHIN 0.5")
    answer = mon.answers()["s"]
    assert answer.lo <= 5.0 <= answer.hi and answer.hi - answer.lo <= 0.5
    mon.remove_query("S")
    assert mon.answers() == {} and mon.queries() == {}


def test_a_query_registered_before_any_point_starts_at_the_first_point() -> None:
    """Regression: the protocol used to start at t = 0 and step through every period since
    1970 at the first real timestamp (the ingest hung)."""
    mon = Monitor(["a", "b"], filter_period="10s")
    mon.add_query("QUERY q AS AVG(a, b) WITHIN 2\nQUERY r AS MAX(a) WITHIN 1")
    mon.alter_query("ALTER QUERY r WITHIN 0.5")
    assert math.isinf(mon.answers()["q"].lo) and mon.answers()["q"].as_of_ms is None
    mon.ingest(["a", "b"], ["2024-01-01T00:00:00Z"] * 2, [1.0, 3.0])
    start = 1_704_067_200_000
    mon.ingest(["a", "b"], [start + 60_000] * 2, [1.5, 2.5])
    answers = mon.answers()
    assert answers["q"].as_of_ms == start + 60_000
    assert answers["q"].lo <= 2.0 <= answers["q"].hi and answers["q"].width <= 2.0
    assert answers["r"].lo <= 1.5 <= answers["r"].hi and answers["r"].width <= 0.5
    assert mon.filter_messages().growth < 100  # a few periods, not 10^8


def test_answers_are_as_of_the_newest_point_and_take_later_points_of_that_instant() -> None:
    """The coordinator runs at the node's time (``bounded_lag_ms = 0``): an answer after an
    ingest includes its points; a later ingest's point at that same time (another series, or a
    keep_last replacement) is applied at that time."""
    mon = Monitor(["a", "b"], filter_period="1s")
    mon.add_query("QUERY s AS SUM(a, b) WITHIN 0.5")
    mon.ingest(["a", "b"], [0, 0], [1.0, 2.0])
    mon.ingest(["a"], [100], [5.0])
    answer = mon.answers()["s"]
    assert answer.as_of_ms == 100 and answer.lo <= 7.0 <= answer.hi
    mon.ingest(["b"], [100], [4.0])  # the same instant, in the next ingest
    answer = mon.answers()["s"]
    assert answer.as_of_ms == 100 and answer.lo <= 9.0 <= answer.hi
    mon.ingest(["b"], [100], [-3.0])  # replaces b's newest point
    answer = mon.answers()["s"]
    assert answer.lo <= 2.0 <= answer.hi and answer.width <= 0.5
    assert mon.exact_answers() == {"s": 2.0}


def test_a_query_added_after_points_is_known_at_once_and_its_globs_are_expanded_once() -> None:
    mon = Monitor(["*.x"])
    mon.ingest(["a.x", "b.x"], [0, 0], [1.0, 3.0])
    mon.add_query("QUERY t AS TOP 1 OF * BY x WITHIN 0")  # the batch host starts serving
    mon.remove_query("t")
    mon.ingest(["a.x"], [10], [2.0])  # reaches no host: no query needs it
    mon.add_query("QUERY m AS AVG(*.x) WITHIN 1")
    answer = mon.answers()["m"]  # every series' current value, before any new point
    assert answer.lo <= 2.5 <= answer.hi and answer.width <= 1
    mon.ingest(["c.x", "a.x"], [20, 20], [100.0, 2.0])  # c.x joins no registered query
    assert mon.exact_answers() == {"m": 2.5} and mon.stats()["bounded_queries"] == 1
    answer = mon.answers()["m"]
    assert answer.lo <= 2.5 <= answer.hi
