"""Traffic workloads (§5, Figures 7 and 8): rates in range, bursty, groups add up, Q1..Q5."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.protocols.filters.queries import Aggregate
from tsmon.sim.filters import (
    FIG8_PARAMS,
    PREDICATE_PROBS,
    PacketTrace,
    TrafficParams,
    Workload,
    fig7_workload,
    fig8_queries,
    fig8_workload,
    moving_average,
    simulate_packets,
    uniform_static_widths,
)
from tsmon.sim.filters.traffic import group_names, subset_probs


@pytest.fixture(scope="module")
def fig7() -> Workload:
    return fig7_workload(5.0)  # the full 200 hosts × 2 h, as in §5.1


@pytest.fixture(scope="module")
def trace8() -> PacketTrace:
    return simulate_packets(10, 7_200, seed=0, params=FIG8_PARAMS, predicate_probs=PREDICATE_PROBS)


def test_fig7_shape_and_update_schedule(fig7: Workload) -> None:
    n, seconds = 200, 7_200
    assert len(fig7.objects) == n and len(set(fig7.source_of.values())) == n
    assert fig7.objects[7] == "h007.rate" and fig7.source_of["h007.rate"] == "h007"
    assert len(fig7) == n * seconds and fig7.time_unit_ms == 1_000
    assert np.all(fig7.update_counts() == seconds)  # one update per object per second
    np.testing.assert_array_equal(np.unique(fig7.ts_ms), np.arange(seconds) * 1_000)
    (q,) = fig7.queries
    assert q.aggregate is Aggregate.AVG and len(q.weights) == n and q.delta == 5.0


def test_fig7_rates_are_in_the_range_of_section_5_1(fig7: Workload) -> None:
    rates = fig7.values.reshape(-1, 200)
    assert rates.min() >= 0
    p50, p95, p99, top = np.percentile(rates, [50, 95, 99, 100])
    assert 1 <= p50 <= 10, p50  # most hosts are quiet most of the time
    assert 15 <= p95 <= 60, p95
    assert 40 <= p99 <= 150, p99
    assert 100 <= top <= 165, top  # "from 0 to about 150 packets per second"
    host_means = rates.mean(axis=0)
    assert host_means.max() > 10 * np.median(host_means)  # hosts differ a lot (heavy tail)


def test_traffic_is_bursty_on_many_time_scales() -> None:
    counts = simulate_packets(50, 3_600, seed=4).counts.sum(axis=(0, 1)).astype(float)

    def dispersion(m: int) -> float:  # index of dispersion of counts aggregated over m s
        a = counts[: len(counts) // m * m].reshape(-1, m).sum(axis=1)
        return a.var() / a.mean()

    idc = [dispersion(m) for m in (1, 10, 100)]
    assert idc[0] > 2  # not Poisson (which has 1 at every scale) [PF95]
    assert idc[1] > 2 * idc[0] and idc[2] > 2 * idc[1], idc


def test_link_saturation_bounds_the_packet_rate() -> None:
    params = TrafficParams(session_rate=2.0, max_rate=40.0)
    rates = simulate_packets(5, 600, seed=1, params=params).rates()
    assert rates.max() <= 40 * 1.25 and np.median(rates) > 30


def test_seeded_and_reproducible() -> None:
    a = simulate_packets(3, 100, seed=5).counts
    np.testing.assert_array_equal(a, simulate_packets(3, 100, seed=5).counts)
    assert not np.array_equal(a, simulate_packets(3, 100, seed=6).counts)


@given(
    st.lists(st.integers(0, 1000), min_size=1, max_size=60),
    st.integers(1, 10),
)
@settings(max_examples=60, deadline=None)
def test_moving_average_against_convolve(counts: list[int], window: int) -> None:
    c = np.array(counts)
    if len(c) < window:
        with pytest.raises(ValueError, match="at least"):
            moving_average(c, window)
        return
    expected = np.convolve(c, np.ones(window) / window, mode="valid")
    np.testing.assert_allclose(moving_average(c, window), expected, rtol=1e-12)


def test_group_names_and_subset_probabilities() -> None:
    names = group_names()
    assert len(names) == 31 and names[0] == "g10000" and names[-1] == "g11111"
    probs = subset_probs(PREDICATE_PROBS)
    assert probs.sum() == pytest.approx(1.0) and np.all(probs > 0)
    bits = np.array([[int(b) for b in name[1:]] for name in names])
    share = bits.T @ probs  # P(Q_j) among measured sessions
    assert share[1] / share[0] == pytest.approx(100.0)
    assert share[4] / share[3] == pytest.approx(100.0)
    with pytest.raises(ValueError, match="not all 0"):
        subset_probs((0.0, 0.0))


def test_fig8_group_objects_sum_to_the_host_total(trace8: PacketTrace) -> None:
    w = fig8_workload(4.0, trace=trace8)
    assert len(w.objects) == 10 * 31 and len(set(w.source_of.values())) == 10
    assert all(re.fullmatch(r"h0\d\.g[01]{5}", o) for o in w.objects)
    assert "h07.g10110" in w.objects and w.source_of["h07.g10110"] == "h07"
    values = w.values.reshape(trace8.duration_s, 10, 31)  # second, host, group
    np.testing.assert_allclose(values.sum(axis=2), trace8.host_rates().T, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(trace8.rates().sum(axis=1), trace8.host_rates(), atol=1e-9)


def test_fig8_query_volumes(trace8: PacketTrace) -> None:
    rates = trace8.rates()
    bits = np.array([[int(b) for b in g[1:]] for g in trace8.groups], dtype=bool)
    volume = np.array([rates[:, bits[:, j], :].sum(axis=(0, 1)) for j in range(5)])
    mean = volume.mean(axis=1)
    for low in (0, 2, 3):  # Q1, Q3, Q4 carry about 100 times less than Q2 and Q5 (§5.2)
        assert 30 < mean[1] / mean[low] < 300, mean
    assert volume[4].min() > 50 and volume[4].max() < 1_000, (volume[4].min(), volume[4].max())


@pytest.mark.parametrize(
    ("aggregate", "budget_q2"), [("sum", 4.0), ("avg_per_host", 40.0), ("avg", 4.0 * 160)]
)
def test_fig8_queries_and_their_budgets(
    trace8: PacketTrace, aggregate: str, budget_q2: float
) -> None:
    w = fig8_workload(4.0, trace=trace8, aggregate=aggregate)  # type: ignore[arg-type]
    assert [q.name for q in w.queries] == ["Q1", "Q2", "Q3", "Q4", "Q5"]
    assert [q.delta for q in w.queries] == [0.04, 4.0, 0.04, 0.04, 4.0]
    for j, q in enumerate(w.queries):
        expected = {o for o in w.objects if o.split(".g")[1][j] == "1"}
        assert set(q.weights) == expected and len(expected) == 160
    ((absk, budget),) = w.queries[1].constraints()
    assert budget / next(iter(absk.values())) == pytest.approx(budget_q2)  # Σ_i W_i <= this
    widths = uniform_static_widths(w)
    assert np.isfinite(widths).all()  # every group object is in some query
    # an object in Q1 or Q3 or Q4 gets the narrow share of the low-volume budget
    assert widths[w.index["h03.g01001"]] == pytest.approx(budget_q2 / 160)
    assert widths[w.index["h03.g11001"]] == pytest.approx(budget_q2 / 160 / 100)


def test_fig8_rejects_a_trace_without_groups() -> None:
    with pytest.raises(ValueError, match="31 groups"):
        fig8_workload(1.0, trace=simulate_packets(2, 5))
    with pytest.raises(ValueError, match="aggregate"):
        fig8_queries(("h0.g10000",), 1, 1.0, aggregate="max")  # type: ignore[arg-type]


def test_params_are_validated() -> None:
    with pytest.raises(ValueError, match="session_rate"):
        TrafficParams(session_rate=0.0)
    with pytest.raises(ValueError, match="duration_max_s"):
        TrafficParams(duration_max_s=1.0)
