"""Beyond the paper: aggregated replays, batching counts, the App. G choice, calibration."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from tsmon.protocols.filters.aggregation import aggregate_sources, all_pairs
from tsmon.protocols.filters.queries import Query
from tsmon.sim.filters import constraint_matrix, fig8_workload, optimized_static_widths
from tsmon.sim.filters.beyond import (
    aggregated_workload,
    appendix_g_workload,
    batching_costs,
    calibrate,
    choose_aggregation,
    model_min_cost,
)
from tsmon.sim.filters.network import FilterNetwork
from tsmon.sim.filters.runner import run_adaptive
from tsmon.sim.filters.walks import fig3_workload


@pytest.mark.parametrize("coalesce", [True, False])
def test_aggregated_fig8_replay_keeps_every_answer(coalesce):
    w = fig8_workload(4.0, n_hosts=2, duration_s=120, aggregate="avg")
    agg = aggregate_sources(w.queries, w.source_of, {("h00", 0)})
    aw = aggregated_workload(w, agg, coalesce=coalesce)
    assert not any(o.startswith("h00.") for o in aw.objects)
    # the last derived value of every instant is the derived value of the raw state then
    last = aw.slice_time(int(aw.ts_ms[-1]))
    values = dict(zip(w.objects, w.exact_values_at(len(w) - 1).tolist(), strict=True))
    for d, v in zip(np.array(aw.objects)[last.obj], last.values, strict=True):
        if d in agg.derivations:
            assert v == pytest.approx(agg.derive(values)[d])
    r = run_adaptive(aw, period_ms=10_000, shrink=0.05)
    assert r.violations == 0 and r.checked > 0


def test_run_adaptive_counts_envelopes_per_source_after_the_warm_up():
    w = fig8_workload(4.0, n_hosts=2, duration_s=120, aggregate="avg")
    r = run_adaptive(w, period_ms=10_000, shrink=0.05, warmup_ms=30_000)
    assert r.violations == 0 and r.checked > 0
    assert 0 < r.envelopes.total < r.counts.total  # 31 objects per host share envelopes
    assert sum(r.streamed_of.values()) == r.counts.streamed
    assert all(0 <= r.alone.get(o, 0) <= n for o, n in r.streamed_of.items())


def test_envelopes_count_one_per_source_instant_and_direction():
    q = Query.sum("s", ["a", "b", "c"], 3.0)
    plain = FilterNetwork(["a", "b", "c"], [q], 1_000, 0.05, np.random.default_rng(0))
    batched = FilterNetwork(
        ["a", "b", "c"], [q], 1_000, 0.05, np.random.default_rng(0),
        source_of={"a": "x", "b": "x", "c": "y"},
    )  # fmt: skip
    for net in (plain, batched):
        for obj, v in (("a", 1.0), ("b", 2.0), ("c", 3.0)):
            net.update(0, obj, v)
        net.update(5, "a", 9.0)
    assert plain.envelopes.total == plain.counts.total  # default: every object its own source
    assert (plain.counts.shrink, plain.counts.streamed) == (3, 4)
    assert (batched.envelopes.down, batched.envelopes.up) == (2, 3)  # x, y at 0; x at 5


def test_batching_costs_lower_objects_that_ride_along():
    w = fig8_workload(4.0, n_hosts=2, duration_s=120, aggregate="avg")
    costs = batching_costs(run_adaptive(w, period_ms=10_000, shrink=0.05, check=False))
    assert costs and all(0.1 <= c <= 1.0 for c in costs.values())


def test_model_min_cost_matches_the_app_f_solver():
    w = fig8_workload(2.0, n_hosts=2, duration_s=300, aggregate="avg")
    s = np.nan_to_num(w.estimate_step_sizes())
    k, b = constraint_matrix(w.queries, w.objects)
    cost, widths = model_min_cost(k.toarray(), b, (2 * s) ** 2)
    assert np.all(k @ widths <= b * (1 + 1e-9))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = optimized_static_widths(w.with_step_sizes(s)).model_cost
    assert cost == pytest.approx(ref, rel=1e-3)


@pytest.mark.parametrize(
    ("kind", "disparity", "aggregate"),
    [("private", 10.0, True), ("shared", 1.0, False)],  # App. G's two cases (§5.2.1)
)
def test_choice_picks_the_cheaper_side_of_appendix_g(kind, disparity, aggregate):
    """One source, V0 in Q1 and Q2, V1 in Q1, V2 in Q2 (App. G). Analytically, with unit steps
    and δ_2 = 10·δ_1, aggregation costs (2+2/100)·4/δ_1² < the optimum without it; with V1, V2
    nearly still and δ_1 = δ_2, aggregation streams V0 twice."""
    w = appendix_g_workload([kind], disparity=disparity, steps=10)
    choice = choose_aggregation(w)
    assert (("p0", 0) in choice.chosen) == aggregate
    none, all_ = choice.model["none"], choice.model["all"]
    assert (all_ < none) == aggregate
    if aggregate:  # closed form of App. G with variances adding: F_Q = (2² + 2²)/δ²
        assert all_ == pytest.approx(8 / 4.0**2 + 8 / 40.0**2)
    assert choice.model["chosen"] == min(none, all_)


def test_mixed_sources_are_chosen_selectively():
    w = appendix_g_workload(["private", "shared"], steps=10)
    choice = choose_aggregation(w)
    assert choice.chosen == {("p0", 0)}
    assert choice.model["chosen"] < min(choice.model["none"], choice.model["all"])
    assert all_pairs(w.queries, w.source_of) == {("p0", 0), ("p1", 0)}


def test_calibrate_picks_the_cheapest_pilot():
    w = fig3_workload(2.0, steps=400)
    cal = calibrate(w, pilot_ms=200_000, periods=(5, 10), shrinks=(0.05, 0.1))
    assert len(cal.pilots) == 4
    assert cal.pilots[(cal.period_ms, cal.shrink)] == min(cal.pilots.values())
