"""Random walks (§3.3, App. E): exact ±s_i increments, fair coin, the Fig. 3/4 query sets."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.protocols.filters.queries import Aggregate
from tsmon.sim.filters import Workload, fig3_workload, fig4_workload, random_walks


def grid(w: Workload) -> np.ndarray:
    """Values as (time steps, objects); a walk updates every object once per time unit."""
    return w.values.reshape(-1, len(w.objects))


@given(
    st.integers(1, 12),
    st.integers(1, 300),
    st.integers(0, 2**32 - 1),
    st.floats(0.0, 5.0),
    st.floats(0.0, 5.0),
)
@settings(max_examples=50, deadline=None)
def test_every_increment_has_magnitude_s_i(
    n: int, steps: int, seed: int, a: float, b: float
) -> None:
    lo, hi = min(a, b), max(a, b)
    w = random_walks(n, steps, seed=seed, step_range=(lo, hi), start=3.0)
    values = grid(w)
    assert values.shape == (steps + 1, n)
    np.testing.assert_array_equal(values[0], 3.0)
    assert np.all((w.step_sizes >= lo) & (w.step_sizes <= hi))
    steps_taken = np.abs(np.diff(values, axis=0))
    np.testing.assert_allclose(
        steps_taken,
        np.broadcast_to(w.step_sizes, steps_taken.shape),
        rtol=1e-9,
        atol=1e-9 * (1 + np.abs(values).max()),
    )
    assert w.ts_ms.tolist() == np.repeat(np.arange(steps + 1) * 1000, n).tolist()
    assert dict(w.source_of) == {f"w{i}": f"s{i}" for i in range(n)}


def test_the_coin_is_fair() -> None:
    w = random_walks(10, 20_000, seed=3)
    up = np.diff(grid(w), axis=0) > 0
    n = up.size
    assert abs(up.mean() - 0.5) < 5 * np.sqrt(0.25 / n)  # 5 σ of a binomial proportion
    assert abs((up[1:] == up[:-1]).mean() - 0.5) < 0.01  # successive moves independent


def test_gaussian_steps_have_standard_deviation_s_i() -> None:
    w = random_walks(5, 40_000, seed=2, gaussian=True, step_range=(0.5, 3.0))
    ratio = np.diff(grid(w), axis=0).std(axis=0) / w.step_sizes
    np.testing.assert_allclose(ratio, 1.0, atol=0.02)
    np.testing.assert_allclose(w.estimate_step_sizes(), w.step_sizes, rtol=0.02)


def test_seeded_and_reproducible() -> None:
    a, b = random_walks(4, 50, seed=9), random_walks(4, 50, seed=9)
    np.testing.assert_array_equal(a.values, b.values)
    assert not np.array_equal(a.values, random_walks(4, 50, seed=10).values)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="n >= 1"):
        random_walks(0, 10)
    with pytest.raises(ValueError, match="step_range"):
        random_walks(2, 10, step_range=(2.0, 1.0))


def test_fig3_is_one_avg_over_ten_walks() -> None:
    w = fig3_workload(1.5, steps=20)
    (q,) = w.queries
    assert q.aggregate is Aggregate.AVG and q.delta == 1.5
    assert list(q.weights) == list(w.objects) and len(w.objects) == 10
    assert len(set(w.source_of.values())) == 10


@given(st.integers(0, 2**32 - 1), st.floats(1e-3, 1e3))
@settings(max_examples=30, deadline=None)
def test_fig4_query_sets(seed: int, delta_max: float) -> None:
    w = fig4_workload(delta_max, steps=3, seed=seed)
    assert len(w.queries) == 5 and len(w.objects) == 10
    for q in w.queries:
        assert q.aggregate is Aggregate.AVG
        assert 2 <= len(q.weights) <= 5
        assert 0 < q.delta <= delta_max
    sweep = fig4_workload(2 * delta_max, steps=3, seed=seed)
    np.testing.assert_array_equal(sweep.values, w.values)
    for q, r in zip(w.queries, sweep.queries, strict=True):
        assert q.weights == r.weights
        assert r.delta == pytest.approx(2 * q.delta)


def test_fig4_sizes_cover_two_to_five() -> None:
    sizes = {len(q.weights) for s in range(40) for q in fig4_workload(1.0, steps=1, seed=s).queries}
    assert sizes == {2, 3, 4, 5}
