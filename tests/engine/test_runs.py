"""The store's batch split: the one-pass order test per series equals a test per series, and
a source node's grouping of a batch is the store's own."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from tsmon.engine.node import Columns, SourceNode
from tsmon.engine.runs import increasing_groups, series_groups
from tsmon.engine.settings import HostSettings

NAMES = ("a", "b", "c")


@given(st.lists(st.tuples(st.sampled_from(NAMES), st.integers(0, 6)), min_size=1, max_size=40))
def test_increasing_groups_equals_a_test_per_series(points: list[tuple[str, int]]) -> None:
    names = np.array([name for name, _ in points], dtype=object)
    ts = np.array([t for _, t in points], dtype=np.int64)
    _, order, bounds = series_groups(names)
    grouped = ts[order]
    expected = [bool((np.diff(grouped[lo:hi]) > 0).all()) for lo, hi in itertools.pairwise(bounds)]
    assert increasing_groups(grouped, bounds) == expected


@given(st.lists(st.sampled_from(NAMES), min_size=1, max_size=40))
def test_a_nodes_groups_are_the_stores_own(series: list[str]) -> None:
    node = SourceNode("n", HostSettings(period_ms=1_000, shrink=0.1))
    node.now_ms = 0
    ts = np.arange(len(series), dtype=np.int64)
    points, _ = node._apply(Columns(series, ts, ts.astype(np.float64)))
    order, bounds = points.groups
    own = series_groups(np.array(series, dtype=object))
    assert points.names == own[0] and bounds.tolist() == own[2]
    assert order.tolist() == own[1].tolist()
