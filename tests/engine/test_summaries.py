"""Summary queries in a Monitor against exact answers recomputed from the raw points: SWAT
answers within their bounds, exponential-histogram counts and sums within relative ε,
correlated aggregates equal to the summary fed directly."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.core.correlated import CorrelatedQuery
from tsmon.core.correlated_check import CheckedAggregate
from tsmon.engine.monitor import Monitor

N = 64


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 20), min_size=1, max_size=300),
    st.integers(1, 40),
    st.sampled_from([0.05, 0.2, 0.5]),
    st.sampled_from([1, 20, 60, 200]),
)
def test_summary_answers_against_the_raw_window(
    raw: list[int], batch: int, eps: float, within: int
) -> None:
    values = np.array(raw, dtype=float)
    ts = np.arange(len(values)) * 1_000
    monitor = Monitor(["x.v"])
    pct = f"{eps * 100:g}%"
    monitor.add_query(
        f"""
        QUERY ip AS INNER(x.v, [8, 4, 2, 1] AT [0, 1, 2, 3]) OVER {N} points
        QUERY ipw AS INNER(x.v, [8, 4, 2, 1] AT [0, 1, 2, 3]) OVER {N} points WITHIN {within}
        QUERY pt AS POINT(x.v, 5) OVER {N} points
        QUERY rg AS RANGE(x.v, 0..20, 10 ± 3) OVER {N} points
        QUERY cnt AS APPROX COUNT(x.v > 9) OVER {N} points WITHIN {pct}
        QUERY sm AS APPROX SUM(x.v) OVER {N} points WITHIN {pct} MAX 20
        QUERY above AS COUNT(x.v > AVG)
        """
    )
    for lo in range(0, len(values), batch):
        monitor.ingest(
            ["x.v"] * len(values[lo : lo + batch]), ts[lo : lo + batch], values[lo : lo + batch]
        )
    answers = monitor.answers("summary")
    newest_first = values[::-1]
    window = values[-N:]
    if len(values) >= 4:
        exact = float(np.dot([8, 4, 2, 1], newest_first[:4]))
        assert abs(answers["ip"].value - exact) <= answers["ip"].bound + 1e-9
        assert answers["ip"].satisfied is None  # no WITHIN asked
        ipw = answers["ipw"]  # the coarsest answer within δ, else the finest one, flagged
        assert ipw.lower - 1e-9 <= exact <= ipw.upper + 1e-9
        assert ipw.satisfied == (ipw.bound <= within)
        if not ipw.satisfied:
            assert (ipw.value, ipw.bound) == (answers["ip"].value, answers["ip"].bound)
    else:
        assert math.isnan(answers["ip"].value) and answers["ipw"].satisfied is None
    if len(values) > 5:
        assert abs(answers["pt"].value - newest_first[5]) <= answers["pt"].bound + 1e-9
    inside = {i for i in range(min(21, len(values))) if abs(newest_first[i] - 10) <= 3}
    assert set(answers["rg"].positions) <= inside <= set(answers["rg"].possible)
    for name, exact_value in (("cnt", float((window > 9).sum())), ("sm", float(window.sum()))):
        a = answers[name]  # within the histogram's own guarantee, itself within ε
        assert a.lower - 1e-9 <= exact_value <= a.upper + 1e-9
        assert a.bound <= eps * exact_value + 1e-9 and a.satisfied
    direct = CheckedAggregate(CorrelatedQuery("avg", "count"))
    for v in values:
        direct.update(float(v))
    assert answers["above"].value == direct.get()
    assert answers["above"].points == len(values)


def test_sum_skips_values_outside_its_range_and_names_are_checked() -> None:
    monitor = Monitor(["b.n"])
    monitor.add_query("QUERY s AS APPROX SUM(b.n) OVER 100 points WITHIN 1% MAX 10")
    monitor.ingest(["b.n"] * 4, [1, 2, 3, 4], [3.0, 2.5, 11.0, 4.0])
    answer = monitor.answers("summary")["s"]
    assert answer.value == pytest.approx(7.0, rel=0.01) and answer.ignored == 2
    with pytest.raises(ValueError, match="already exists"):
        monitor.add_query("QUERY S AS POINT(b.n, 0)")
    with pytest.raises(KeyError, match="unknown series"):
        monitor.add_query("QUERY p AS POINT(nope.n, 0)")
    monitor.remove_query("s")
    assert monitor.answers("summary") == {} and monitor.stats()["summary_queries"] == 0
