"""Source aggregation as a query rewrite (§5.2.1, App. G): exact answers, equivalent constraints."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.protocols.filters.aggregation import aggregate_sources, all_pairs, query_groups
from tsmon.protocols.filters.queries import Query

OBJECTS = [f"o{i}" for i in range(6)]
SOURCES = ["s0", "s1", "s2"]
weights = st.floats(-3, 3).filter(lambda k: abs(k) > 0.05)


@st.composite
def setups(draw):
    source_of = {o: draw(st.sampled_from(SOURCES)) for o in OBJECTS}
    queries = []
    for j in range(draw(st.integers(1, 4))):
        members = draw(st.lists(st.sampled_from(OBJECTS), min_size=1, max_size=6, unique=True))
        kind = draw(st.sampled_from(["avg", "sum", "min"]))
        delta = draw(st.floats(0.1, 5.0))
        if kind == "min":
            queries.append(Query.min(f"q{j}", members, delta))
        else:
            factory = Query.avg if kind == "avg" else Query.sum
            queries.append(factory(f"q{j}", {o: draw(weights) for o in members}, delta))
    pairs = sorted(all_pairs(queries, source_of))
    chosen = draw(st.sets(st.sampled_from(pairs))) if pairs else set()
    values = {o: draw(st.floats(-100, 100)) for o in OBJECTS}
    return queries, source_of, chosen, values, draw(st.booleans())


@settings(max_examples=200, deadline=None)
@given(setups())
def test_rewrite_keeps_every_exact_answer(setup):
    queries, source_of, chosen, values, share = setup
    agg = aggregate_sources(queries, source_of, chosen, share=share)
    derived = {**values, **agg.derive(values)}
    for q, r in zip(queries, agg.queries, strict=True):
        assert r.name == q.name and r.delta == q.delta and r.divisor == q.divisor
        assert math.isclose(r.exact(derived), q.exact(values), rel_tol=1e-9, abs_tol=1e-9)


@settings(max_examples=200, deadline=None)
@given(setups(), st.data())
def test_widths_feasible_for_the_rewrite_bound_the_original(setup, data):
    """Any widths meeting the rewritten constraints (App. B) and any bounds holding the derived
    values give answers that hold the original exact aggregate and are at most δ wide."""
    queries, source_of, chosen, values, share = setup
    agg = aggregate_sources(queries, source_of, chosen, share=share)
    objects = sorted({o for q in agg.queries for o in q.weights})
    raw = np.array([data.draw(st.floats(0.01, 1.0)) for _ in objects])
    widths = dict(zip(objects, raw, strict=True))
    for q in agg.queries:  # scale down into every constraint
        for absk, budget in q.constraints():
            used = sum(k * widths[o] for o, k in absk.items())
            if used > budget:
                for o in absk:
                    widths[o] *= budget / used
    derived = {**values, **agg.derive(values)}
    centres = {o: derived[o] + data.draw(st.floats(-0.5, 0.5)) * widths[o] for o in objects}
    for q, r in zip(queries, agg.queries, strict=True):
        for absk, budget in r.constraints():
            assert sum(k * widths[o] for o, k in absk.items()) <= budget * (1 + 1e-9)
        lo, hi = r.answer(centres, widths)
        truth, tol = q.exact(values), 1e-9 * (1 + max(abs(v) for v in values.values()))
        assert lo - tol <= truth <= hi + tol
        assert hi - lo <= q.delta * (1 + 1e-9)


def test_appendix_g_rewrite_one_bound_per_query():
    qs = [Query.sum("Q1", ["v0", "v1"], 1.0), Query.sum("Q2", ["v0", "v2"], 4.0)]
    agg = aggregate_sources(qs, dict.fromkeys(["v0", "v1", "v2"], "s"), {("s", 0)})
    assert [dict(q.weights) for q in agg.queries] == [{"agg:s:Q1": 1.0}, {"agg:s:Q2": 1.0}]
    assert agg.replaced == {"v0", "v1", "v2"}
    assert agg.readers["v0"] == ("agg:s:Q1", "agg:s:Q2")


def test_avg_divisor_kept_and_groups_independent():
    qs = [Query.avg("a", ["x", "y", "z"], 1.0), Query.avg("b", ["w"], 1.0)]
    src = {"x": "s", "y": "s", "z": "t", "w": "s"}
    assert query_groups(qs) == (("a",), ("b",))
    agg = aggregate_sources(qs, src, {("s", 0)})
    assert dict(agg.queries[0].weights) == {"z": 1.0, "agg:s:a": 1.0}
    assert agg.queries[0].divisor == 3
    assert agg.queries[1] is qs[1]  # group 1 not chosen for s


def test_identical_derivations_are_shared():
    qs = [Query.sum("q1", ["v"], 1.0), Query.sum("q2", ["v", "u"], 1.0)]
    agg = aggregate_sources(qs, {"v": "s", "u": "t"}, {("s", 0)})
    assert list(agg.derivations) == ["agg:s:q1"]  # q2 reads the same Σ at s
    assert dict(agg.queries[1].weights) == {"u": 1.0, "agg:s:q1": 1.0}


def test_bad_group_index_names_the_groups():
    with pytest.raises(ValueError, match="group index 3"):
        aggregate_sources([Query.avg("q", ["a"], 1.0)], {"a": "s"}, {("s", 3)})
