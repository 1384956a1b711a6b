"""The checked correlated aggregate (:mod:`tsmon.core.correlated_check`) against the exact
two-pass answer (:func:`~tsmon.sim.correlated.exact_correlated`).

Margin: the check sample of ``r`` tuples estimates a count with standard error at most
``scope / (2 sqrt(r))``, so on streams where the focused histogram fails (a moving mean) the
checked answer's RMSE may exceed the better of the trivial answer and the histogram by at most
``MARGIN = mean(scope) / (2 sqrt(r))``, the sample's own worst-case error.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.core.correlated import CorrelatedAggregate, CorrelatedQuery
from tsmon.core.correlated_check import CANDIDATES, CheckedAggregate
from tsmon.sim.correlated import exact_correlated, rmse

COUNT_ABOVE = CorrelatedQuery("avg", "count")


def moving_mean(kind: str, n: int, seed: int) -> np.ndarray:
    """Streams whose mean keeps moving: the focus AVG ± sd/sqrt(n) assumes it settles."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    if kind == "level shifts":
        return np.repeat(rng.uniform(0, 100, n // 250 + 1), 250)[:n] + rng.normal(0, 3, n)
    if kind == "ramp":
        return 0.05 * t + rng.exponential(5, n)
    if kind == "daily cycle":
        return 50 + 40 * np.sin(2 * np.pi * t / 288) + rng.normal(0, 5, n)
    return np.cumsum(rng.normal(0, 1, n)) + rng.exponential(3, n)  # "walk", skewed noise


@pytest.mark.parametrize("kind", ["level shifts", "ramp", "daily cycle", "walk"])
@pytest.mark.parametrize("window", [None, 600])
def test_no_worse_than_trivial_where_the_focus_fails(kind: str, window: int | None) -> None:
    n, r, failed = 3000, 256, 0
    for seed in range(2):
        x = moving_mean(kind, n, seed)
        exact = exact_correlated(COUNT_ABOVE, x, window=window)
        scope = np.minimum(np.arange(1, n + 1), window or n)
        trivial = rmse(scope / 2, exact)
        plain = rmse(CorrelatedAggregate(COUNT_ABOVE, 10, window=window).extend(x), exact)
        checked = rmse(CheckedAggregate(COUNT_ABOVE, 10, window=window, sample=r).extend(x), exact)
        margin = scope.mean() / (2 * math.sqrt(r))
        failed += plain > trivial
        assert checked <= min(trivial, plain) + margin, (seed, checked, trivial, plain, margin)
    if kind in ("ramp", "walk"):  # there the histogram alone loses to "half the scope"
        assert failed, "these streams must defeat the focused histogram"


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(0, 1e3, allow_nan=False) | st.sampled_from([0.0, 5.0]), max_size=150),
    st.sampled_from([None, 1, 9, 40]),
    st.sampled_from(
        [COUNT_ABOVE, CorrelatedQuery("avg", "sum"), CorrelatedQuery("max", "count", eps=0.5)]
    ),
)
def test_exact_while_the_sample_holds_the_scope(values, window, q) -> None:
    """Scopes of at most ``sample`` tuples are answered exactly (the sample is the scope)."""
    x = np.array(values)
    agg = CheckedAggregate(q, 4, window=window, sample=40 if window is None else window)
    for i, v in enumerate(x.tolist()):
        got = agg.update(v).get()
        scope = x[max(0, i + 1 - (window or i + 1)) : i + 1]
        if window is None and i >= 40:
            break
        assert got == pytest.approx(q.evaluate(scope, scope), rel=1e-9, abs=1e-9)
        assert agg.chosen in CANDIDATES


def test_sample_zero_is_the_paper_histogram_alone() -> None:
    x = moving_mean("walk", 1500, 3)
    for window in (None, 300):
        plain = CorrelatedAggregate(COUNT_ABOVE, 10, window=window).extend(x)
        alone = CheckedAggregate(COUNT_ABOVE, 10, window=window, sample=0).extend(x)
        np.testing.assert_array_equal(plain, alone)


def test_new_landmark_restarts_sample_and_scores() -> None:
    x = moving_mean("level shifts", 800, 1)
    agg = CheckedAggregate(COUNT_ABOVE, 10)
    agg.extend(x)
    agg.new_landmark()
    fresh = CheckedAggregate(COUNT_ABOVE, 10)
    np.testing.assert_array_equal(agg.extend(x[:500]), fresh.extend(x[:500]))


def test_bad_parameters_say_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="sample >= 0"):
        CheckedAggregate(COUNT_ABOVE, sample=-1)
    with pytest.raises(ValueError, match="memory >= 1"):
        CheckedAggregate(COUNT_ABOVE, memory=0)
