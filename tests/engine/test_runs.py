"""The store's batch split: the one-pass order test per series equals a test per series, and
a source node's grouping of a batch is the store's own."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from tsmon.engine.runs import code_groups, increasing_groups, series_groups

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
    names = np.array(series, dtype=object)
    codes, found = pd.factorize(names, sort=False)  # as SourceNode._apply factorizes
    order, bounds = code_groups(codes, len(found))  # as Points.groups groups
    own = series_groups(names)
    assert found.tolist() == own[0] and bounds.tolist() == own[2]
    assert order.tolist() == own[1].tolist()
