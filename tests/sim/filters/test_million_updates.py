"""The zero-violation target over ≥ 10^6 updates, in the suite (slow): every answer after every
update holds the exact aggregate and is at most δ wide, on overlapping AVG, weighted SUM with
negative weights, MIN, MAX and single-object queries over random walks, with both growth
allocations. ``benchmarks/filters/validate.py`` runs the larger set (traffic, NAB replays)."""

from __future__ import annotations

import pytest

from tsmon.sim.filters.runner import run_adaptive
from tsmon.sim.filters.walks import mixed_workload


@pytest.mark.slow
@pytest.mark.parametrize("growth", ["paper", "capped"])
def test_half_a_million_updates_per_growth_mode_without_a_violation(growth: str) -> None:
    w = mixed_workload(seed=11 if growth == "paper" else 12, steps=25_000)
    assert len(w) >= 500_000  # two modes: ≥ 10^6 updates in all
    result = run_adaptive(w, period_ms=10_000, shrink=0.05, growth=growth)
    assert result.checked >= 7 * (len(w) - 20)
    assert result.violations == 0
    assert result.counts.streamed < len(w)  # and the filters did filter
