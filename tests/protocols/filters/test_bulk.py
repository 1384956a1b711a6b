"""A filter's points in bulk (``observe_many``) equal the same points one by one, to the bit."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from hypothesis import given, settings, target
from hypothesis import strategies as st

from tsmon.protocols.filters import Growth, Shrink, SourceFilter

# a batch: times as steps from the last time (0: the same instant), a walk of values on a
# coarse grid that often stays put (ties with the bound's ends happen, and a shrinking bound
# drops a value that did not move), and a width message before it, or none
steps = st.lists(st.integers(0, 25), min_size=0, max_size=40)
moves = st.sampled_from([0.0, 0.25, -0.25, 0.25, -0.25, 4.0])
values = st.floats(-20.0, 20.0).map(lambda x: round(x * 4) / 4)
message = st.none() | st.tuples(
    st.sampled_from(["growth", "shrink"]),
    st.sampled_from([0.75, 1.0, 2.0, math.inf]) | st.floats(0.0, 30.0),
    st.booleans(),
    st.integers(0, 30),  # how long before the filter's time it was stamped
    st.none() | st.integers(1, 40),  # the period the coordinator chose, if it tells it
)


@settings(max_examples=400, deadline=None)
@given(
    period=st.none() | st.integers(1, 40),
    shrink=st.sampled_from([0.0, 0.05, 0.3, 0.5]),
    start=st.none() | values,
    batches=st.lists(st.tuples(message, steps, st.data()), min_size=1, max_size=6),
)
def test_bulk_points_equal_points_one_by_one(
    period: int | None, shrink: float, start: float | None, batches: list
) -> None:
    bulk = SourceFilter("a", period, shrink, value=start)
    each = copy.deepcopy(bulk)
    now, seq, last = 100, 0, 0.0 if start is None else start
    crossings = 0
    for msg, gaps, draw in batches:
        if msg is not None:
            seq += 1
            kind, width, adaptive, back, chosen = msg
            made = (Growth if kind == "growth" else Shrink)(
                "a", width, max(0, now - back), seq, adaptive=adaptive, period_ms=chosen
            )
            assert bulk.apply(made, now) == each.apply(made, now)
        at = (now + np.cumsum(np.array(gaps, dtype=np.int64))).tolist()
        vs = (last + np.cumsum([draw.draw(moves) for _ in gaps])).tolist()
        last = vs[-1] if vs else last
        expected = [(i, u) for i in range(len(at)) for u in each.observe(at[i], vs[i])]
        crossings += sum(u.ts_ms != at[i] for i, u in expected)  # sent at a boundary (§3.1)
        assert bulk.observe_many(at, vs) == expected
        assert vars(bulk) == vars(each)
        now = at[-1] if at else now
        now += draw.draw(st.integers(0, 3 * (bulk.period_ms or 10)))
        assert bulk.advance(now) == each.advance(now)
        assert vars(bulk) == vars(each)
    target(crossings)  # look for values a shrinking bound drops between two points


def test_bulk_points_refuse_what_points_one_by_one_refuse() -> None:
    f = SourceFilter("a", 10, 0.1)
    f.apply(Shrink("a", 1.0, 0, seq=1), 0)
    with pytest.raises(ValueError, match="must be finite"):
        f.observe_many([1, 2], [1.0, math.nan])
    with pytest.raises(ValueError, match="must not go back"):
        f.observe_many([5, 3], [1.0, 2.0])


def test_a_value_a_boundary_drops_is_sent_before_the_next_point_though_that_one_is_inside() -> None:
    f = SourceFilter("a", 10, 0.5)
    f.apply(Shrink("a", 2.0, 0, seq=1), 0)
    sent = f.observe_many([0, 5, 15], [0.0, 0.8, 0.1])
    # at 10 the bound shrinks to [-0.5, 0.5]: 0.8 goes out (§3.1), then 0.1 leaves [0.3, 1.3]
    assert [(i, u.value, u.ts_ms) for i, u in sent] == [(0, 0.0, 0), (2, 0.8, 10), (2, 0.1, 15)]
