"""Summary queries in the batch runtime: each summary lives in its series' source node and only
its answers reach the coordinator. Oracles: the raw window (SWAT within its bound, histograms
within relative ε) and a Monitor fed the same points, whose summaries must agree exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.engine.batched import BatchedRuntime
from tsmon.engine.monitor import Monitor
from tsmon.query import parse_query

N = 32
QUERIES = f"""
QUERY ip AS INNER(x.v, [8, 4, 2, 1] AT [0, 1, 2, 3]) OVER {N} points
QUERY cnt AS APPROX COUNT(x.v > 9) OVER {N} points WITHIN 10%
QUERY above AS COUNT(y.w > AVG)
"""
SOURCE = {"x.v": "n1", "y.w": "n2"}


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(list(SOURCE)), st.integers(0, 20)), max_size=200),
    st.integers(1, 30),
)
def test_node_summaries_equal_a_monitor_and_the_raw_window(points, batch) -> None:
    rt = BatchedRuntime(1_000, 0.1, 0, queries=QUERIES)
    monitor = Monitor(list(SOURCE))
    monitor.add_query(QUERIES)
    raw: dict[str, list[float]] = {s: [] for s in SOURCE}
    for lo in range(0, len(points), batch):
        part = points[lo : lo + batch]
        rows = [(SOURCE[s], s, lo + n, float(v)) for n, (s, v) in enumerate(part)]
        rt.run_batch(rows)
        if rows:
            monitor.ingest([r[1] for r in rows], [r[2] for r in rows], [r[3] for r in rows])
        for s, v in part:
            raw[s].append(float(v))
        got, want = rt.answers("summary"), monitor.answers("summary")
        for name, answer in got.items():  # queries whose series has had points
            assert answer == want[name] or (math.isnan(answer.value) and answer.points == 0)
        assert set(got) == {n for n, a in want.items() if a.points > 0}
    answers = rt.answers("summary")
    x = np.array(raw["x.v"])
    if len(x) >= 4:
        exact = float(np.dot([8, 4, 2, 1], x[::-1][:4]))
        assert abs(answers["ip"].value - exact) <= answers["ip"].bound + 1e-9
    if len(x):
        count = float((x[-N:] > 9).sum())
        assert abs(answers["cnt"].value - count) <= 0.1 * count + 1e-9


def test_live_add_and_remove_reach_the_series_node_only() -> None:
    rt = BatchedRuntime(1_000, 0.1, 0)
    rng = np.random.default_rng(3)
    values = rng.integers(0, 10, 40).astype(float)
    rt.run_batch([("n1", "x.v", t, values[t]) for t in range(10)])
    rt.coordinator.add(parse_query(f"QUERY pt AS POINT(x.v, 2) OVER {N} points"))
    rt.run_batch([("n1", "x.v", t, values[t]) for t in range(10, 20)])  # control goes out
    assert "pt" not in rt.answers("summary")
    rt.run_batch([("n1", "x.v", t, values[t]) for t in range(20, 30)])  # the node applies it
    answer = rt.answers("summary")["pt"]
    assert answer.points == 10  # fed from when it reached the node
    assert abs(answer.value - values[27]) <= answer.bound + 1e-9
    assert rt.nodes["n1"].part("local").local.summaries.defines("pt")
    with pytest.raises(ValueError, match="remove it and add it again"):
        rt.coordinator.alter(parse_query(f"QUERY pt AS POINT(x.v, 3) OVER {N} points"))
    rt.coordinator.remove_query("PT")
    rt.run_batch([("n1", "x.v", t, values[t]) for t in range(30, 40)])
    assert "pt" not in rt.answers("summary")  # the coordinator forgets it at once
    rt.run_batch([])  # the node drops it with the next control
    assert not rt.nodes["n1"].part("local").local.summaries.defines("pt")


def test_watch_queries_still_need_registers_but_summaries_do_not() -> None:
    with pytest.raises(ValueError, match="need registers"):
        BatchedRuntime(1_000, 0.1, 0, queries="QUERY up ON *.cpu WHEN last > 1")
    rt = BatchedRuntime(1_000, 0.1, 0, queries=QUERIES)
    rt.run_batch([("n1", "x.v", 0, 10.0), ("n1", "x.v", 1, 1.0)])
    assert rt.answers("summary")["cnt"].value == 1.0
