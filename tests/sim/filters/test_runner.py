"""The replay runner and its exact oracle: it finds violations when there are some."""

from __future__ import annotations

import numpy as np
import pytest

from tsmon.protocols.filters import Query
from tsmon.sim.filters import fig3_workload, fig4_workload, random_walks
from tsmon.sim.filters.latency import UniformDelay
from tsmon.sim.filters.oracle import check_answers, exact_aggregates
from tsmon.sim.filters.runner import run_adaptive, run_with_latency

T_MS, S = 10_000, 0.05


def mixed_workload(steps: int = 400, seed: int = 3):
    w = random_walks(6, steps, seed=seed)
    o = w.objects
    return w.with_queries([
        Query.avg("a", o[:4], 1.5),
        Query.sum("s", {o[1]: 2.0, o[4]: -1.0, o[5]: 0.5}, 3.0),
        Query.min("lo", o[2:], 1.0),
        Query.max("hi", [o[0], o[5]], 1.2),
    ])  # fmt: skip


def test_exact_aggregates_match_query_exact() -> None:
    w = mixed_workload(50)
    exact, _ = exact_aggregates(w)
    for k, values in w.iter_exact_values():
        for j, q in enumerate(w.queries):
            vals = {o: values[w.index[o]] for o in q.objects}
            want = np.nan if any(np.isnan(v) for v in vals.values()) else q.exact(vals)
            assert exact[k, j] == pytest.approx(want, rel=1e-12, nan_ok=True)


@pytest.mark.parametrize("make", [lambda: fig4_workload(3.0, steps=400), mixed_workload])
def test_fast_oracle_agrees_with_exhaustive(make) -> None:
    w = make()
    fast = run_adaptive(w, period_ms=T_MS, shrink=S)
    slow = run_adaptive(w, period_ms=T_MS, shrink=S, exhaustive=True)
    assert (fast.checked, fast.violations, fast.counts) == (
        slow.checked,
        slow.violations,
        slow.counts,
    )
    assert fast.violations == 0 and fast.checked > 0


def test_checker_counts_answers_that_miss_or_are_too_wide() -> None:
    w = fig3_workload(2.0, n=3, steps=20)
    exact, _ = exact_aggregates(w)
    samples = np.arange(len(w))
    ok = np.nan_to_num(exact, nan=0.0)
    good = check_answers(w, ok - 0.5, ok + 0.5, samples, samples)
    assert good.violations == 0 and good.checked == len(w) - 2  # first two: not every value
    shifted = check_answers(w, ok + 0.6, ok + 1.6, samples, samples)  # misses by 0.1
    assert shifted.missed == shifted.checked == shifted.violations
    wide = check_answers(w, ok - 1.5, ok + 1.5, samples, samples)  # width 3 > δ = 2
    assert wide.too_wide == wide.checked and wide.missed == 0
    stale = check_answers(w, ok[:1] - 0.5, ok[:1] + 0.5, np.zeros_like(samples), samples)
    assert stale.violations > 0  # the first answer kept for every update: soon wrong


def test_too_late_delays_break_answers_and_are_counted() -> None:
    w = random_walks(2, 300, seed=1, step_range=(1.0, 2.0))
    w = w.with_queries([Query.sum("s", w.objects, 0.5)])
    r = run_with_latency(
        w, period_ms=T_MS, shrink=S, latency_ms=0, delay=UniformDelay(3_000, 3_000),
        warmup_ms=20_000,
    )  # fmt: skip
    assert r.late == r.released > 0 and r.late_fraction == 1.0
    assert r.check.missed > 0 and r.fidelity < 0.9


def test_delays_within_lambda_are_never_late_nor_wrong() -> None:
    w = mixed_workload(300)
    r = run_with_latency(
        w, period_ms=T_MS, shrink=S, latency_ms=200, delay=UniformDelay(0, 200, seed=4),
        warmup_ms=30_000, sample_ms=250,
    )  # fmt: skip
    assert r.late == 0 and r.late_fraction == 0.0 and r.released > 0
    assert r.check.violations == 0 and r.check.checked > 0 and r.lag_ms == 200


def test_zero_latency_runner_matches_run_adaptive() -> None:
    w = fig4_workload(3.0, steps=300)
    a = run_adaptive(w, period_ms=T_MS, shrink=S)
    b = run_with_latency(w, period_ms=T_MS, shrink=S, latency_ms=0, delay=lambda m, t: 0)
    assert b.counts == a.counts and b.late == 0 and b.check.violations == 0


def test_padding_with_known_rate_holds_answers() -> None:
    w = random_walks(4, 600, seed=2, step_range=(0.1, 0.3), time_unit_ms=100)
    w = w.with_queries([Query.avg("q", w.objects, 3.0)])
    lam = 150
    rates = {
        o: (lam // 100 + 1) * float(s) * 1000 / lam
        for o, s in zip(w.objects, w.step_sizes, strict=True)
    }
    r = run_with_latency(
        w, period_ms=1_000, shrink=S, latency_ms=lam, delay=UniformDelay(0, lam, seed=1),
        warmup_ms=5_000, max_rates=rates, sample_ms=50,
    )  # fmt: skip
    assert r.lag_ms == 0 and r.late == 0 and r.check.violations == 0 and r.check.checked > 0


def test_costs_are_counted_after_the_warm_up() -> None:
    w = fig3_workload(2.0, steps=400)
    full = run_adaptive(w, period_ms=T_MS, shrink=S, check=False)
    warm = run_adaptive(w, period_ms=T_MS, shrink=S, check=False, warmup_ms=100_000)
    assert full.time_units == 400 and warm.time_units == 300
    assert 0 < warm.counts.streamed < full.counts.streamed
    # at most one per boundary 100 s, 110 s, …, 400 s (single AVG; none where growth cannot
    # save a message)
    assert 0 < warm.counts.growth <= 31
    first = int(np.searchsorted(w.ts_ms, 100_000))
    head = w.slice_time(None, 100_000)
    before = run_adaptive(head, period_ms=T_MS, shrink=S, check=False).counts
    assert full.counts.streamed - warm.counts.streamed == before.streamed
    assert full.counts.growth - warm.counts.growth == before.growth
    assert first == len(head)
    late = run_adaptive(w, period_ms=T_MS, shrink=S, check=False, warmup_ms=10**9)
    assert late.counts.total == 0 and late.time_units == 0
