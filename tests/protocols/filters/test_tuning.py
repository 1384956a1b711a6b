"""The adjustment period chosen online from the sampling interval (issue 17 c)."""

from __future__ import annotations

import numpy as np

from tsmon.protocols.filters import Query
from tsmon.protocols.filters.tuning import INTERVALS_PER_PERIOD
from tsmon.sim.filters import grid_workload, run_static, uniform_static_widths
from tsmon.sim.filters.network import FilterNetwork
from tsmon.sim.filters.runner import run_adaptive

FIVE_MIN = 300_000


def walks(delta: float, steps: int = 600, seed: int = 0):
    rng = np.random.default_rng(seed)
    values = np.cumsum(rng.normal(0.0, [0.2, 1.0, 3.0, 0.5], size=(steps, 4)), axis=0)
    objects = ["a", "b", "c", "d"]
    return grid_workload(
        objects,
        {o: o for o in objects},
        values,
        time_unit_ms=FIVE_MIN,
        start_ms=1_700_000_000_000,
        queries=[Query.avg("avg", objects, delta)],
    )


def replay(w) -> FilterNetwork:
    net = FilterNetwork(w.objects, list(w.queries), None, 0.05, np.random.default_rng(0))
    for t, i, v in zip(w.ts_ms.tolist(), w.obj.tolist(), w.values.tolist(), strict=True):
        net.update(t, w.objects[i], v)
    return net


def test_the_period_is_twenty_sampling_intervals_and_reaches_every_source() -> None:
    net = replay(walks(delta=0.5))  # narrow: nearly every point is sent
    assert net.period_ms == net.coordinator.period_ms == INTERVALS_PER_PERIOD * FIVE_MIN
    assert all(s.period_ms == INTERVALS_PER_PERIOD * FIVE_MIN for s in net.sources.values())
    # every source adapts, unless the safety net fell back to uniform static widths
    assert [s.adaptive for s in net.sources.values()] == [not net.coordinator.fallback] * 4


def test_a_quiet_stream_gets_a_longer_period_so_growth_stays_a_small_share() -> None:
    net = replay(walks(delta=40.0))  # wide: few points are sent, growth would dominate
    period = net.coordinator.period_ms
    assert (
        period is not None and period > INTERVALS_PER_PERIOD * FIVE_MIN and period % FIVE_MIN == 0
    )


def test_chosen_period_keeps_every_answer_and_beats_ten_seconds_of_event_time() -> None:
    w = walks(delta=8.0, steps=1_500)  # App. F optimum: 290 messages, uniform 479
    auto = run_adaptive(w, period_ms=None, shrink=0.05, growth="capped")
    fixed = run_adaptive(w, period_ms=10_000, shrink=0.05, growth="capped")  # the old default
    uniform = run_static(w, uniform_static_widths(w)).streamed
    assert auto.violations == 0 and fixed.violations == 0 and auto.checked > 0
    assert auto.counts.total < fixed.counts.total
    assert auto.counts.total < uniform  # step sizes differ 15-fold: adapting pays


def test_the_safety_net_falls_back_to_uniform_where_adapting_costs_more() -> None:
    """±1 walks on a lattice, SUM of three WITHIN 6: uniform W = 2 drops every return to the
    centre, while any shrink below 2 sends every step (adaptive sent 2.5× uniform). The net
    trips after the settling periods; their cost is spread over 10,000 steps."""
    rng = np.random.default_rng(0)
    steps = 10_000
    objects = ["a", "b", "c", "z"]
    values = np.column_stack(
        [np.cumsum(rng.choice([-1.0, 1.0], size=(steps, 3)), axis=0), np.full(steps, 5.0)]
    )
    queries = [Query.avg("avg", objects, 10.0), Query.sum("sum", ["a", "b", "c"], 6.0)]
    w = grid_workload(objects, {o: o for o in objects}, values, queries=queries)
    uniform = run_static(w, uniform_static_widths(w)).streamed
    fixed = run_adaptive(w, period_ms=10_000, shrink=0.05)  # no safety net: T given
    auto = run_adaptive(w, period_ms=None, shrink=0.05)
    assert auto.violations == 0 and fixed.violations == 0 and auto.checked > 0
    assert fixed.counts.total > 2 * uniform
    assert auto.counts.total <= 1.1 * uniform, (auto.counts, uniform)
    assert auto.counts.growth < fixed.counts.growth / 10  # static from the trip on
