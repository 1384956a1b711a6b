"""Hindsight: the floor under any width policy (exact against brute force, below every fixed
width) and static widths from real counts (within every constraint, never worse than uniform)."""

from __future__ import annotations

import itertools

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.protocols.filters import initial_widths
from tsmon.sim.filters import filter_scan
from tsmon.sim.filters.hindsight import floor_messages, hindsight_static_widths, widest_widths

values = st.lists(st.integers(-4, 4).map(float), min_size=0, max_size=7)
widths = st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0, 5.0])


def brute_floor(v: list[float], max_width: float) -> int:
    """Fewest runs, over every choice of run starts, each run within max_width/2 of its first."""
    n, half = len(v), max_width / 2
    if n == 0:
        return 0
    best = n
    for cuts in itertools.product([False, True], repeat=n - 1):
        starts = [0] + [t + 1 for t, c in enumerate(cuts) if c]
        ends = [*starts[1:], n]
        if all(
            not (v[t] < v[s] - half or v[t] > v[s] + half)
            for s, e in zip(starts, ends, strict=True)
            for t in range(s, e)
        ):
            best = min(best, len(starts))
    return best


@settings(max_examples=300, deadline=None)
@given(values, widths)
def test_floor_is_the_fewest_runs(v: list[float], w: float) -> None:
    assert floor_messages(np.array(v), w) == brute_floor(v, w)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(-100, 100), max_size=60), st.floats(0, 50), st.floats(0, 1))
def test_floor_is_at_most_any_fixed_narrower_width(v: list[float], w: float, f: float) -> None:
    arr = np.array(v)
    assert floor_messages(arr, w) <= int(filter_scan(arr, w * f).sum())


def test_no_query_sends_nothing() -> None:
    assert floor_messages(np.array([1.0, 5.0]), np.inf) == 0


def test_widest_width_is_the_tightest_constraint_alone() -> None:
    k = sp.csr_matrix(np.array([[1.0, 1.0, 0.0], [0.0, 2.0, 0.0], [0.5, 0.0, 0.0]]))
    assert widest_widths(k, np.array([4.0, 3.0, 1.0])).tolist() == [2.0, 1.5, np.inf]


@settings(max_examples=40, deadline=None)
@given(
    st.integers(2, 4).flatmap(
        lambda n: st.tuples(
            st.lists(st.lists(st.floats(-10, 10), min_size=1, max_size=40), min_size=n, max_size=n),
            st.lists(
                st.lists(st.sampled_from([0.0, 0.5, 1.0, 3.0]), min_size=n, max_size=n).filter(any),
                min_size=1,
                max_size=3,
            ),
        )
    ),
    st.floats(0.1, 5),
)
def test_hindsight_static_meets_every_constraint_and_beats_uniform(
    drawn: tuple[list[list[float]], list[list[float]]], budget: float
) -> None:
    series, rows = [np.array(v) for v in drawn[0]], np.array(drawn[1])
    k = sp.csr_matrix(rows)
    budgets = np.full(len(rows), budget)
    w = hindsight_static_widths(series, k, budgets)
    finite = np.where(np.isinf(w), 0.0, w)
    assert np.all(k @ finite <= budgets * (1 + 1e-9))
    assert np.all(np.isinf(w) == np.isinf(widest_widths(k, budgets)))
    uniform = initial_widths(k, budgets)
    sent = sum(int(filter_scan(v, x).sum()) for v, x in zip(series, w, strict=True))
    assert sent <= sum(int(filter_scan(v, x).sum()) for v, x in zip(series, uniform, strict=True))
