"""The zero-violation target over ≥ 10^6 updates, in the suite (slow): every answer after every
update holds the exact aggregate and is at most δ wide, on overlapping AVG, weighted SUM with
negative weights, MIN, MAX and single-object queries over random walks, with both growth
allocations. ``benchmarks/filters/validate.py`` runs the larger set (traffic, NAB replays)."""

from __future__ import annotations

import pytest

from tsmon.protocols.filters import Query
from tsmon.sim.filters.runner import run_adaptive
from tsmon.sim.filters.walks import random_walks


@pytest.mark.slow
@pytest.mark.parametrize("growth", ["paper", "capped"])
def test_half_a_million_updates_per_growth_mode_without_a_violation(growth: str) -> None:
    w = random_walks(20, 25_000, seed=11 if growth == "paper" else 12)
    o = w.objects
    w = w.with_queries(
        [
            Query.avg("avg_a", o[:8], 2.0),
            Query.avg("avg_b", o[4:14], 3.0),
            Query.sum("wsum", {o[1]: 2.0, o[5]: -1.5, o[9]: 0.5, o[15]: -3.0}, 6.0),
            Query.min("min", o[10:16], 2.5),
            Query.max("max", [o[0], o[12], o[18]], 1.5),
            Query.avg("single", [o[19]], 0.8),
            Query.sum("alternating", {x: (-1.0) ** i for i, x in enumerate(o)}, 25.0),
        ]
    )
    assert len(w) >= 500_000  # two modes: ≥ 10^6 updates in all
    result = run_adaptive(w, period_ms=10_000, shrink=0.05, growth=growth)
    assert result.checked >= 7 * (len(w) - 20)
    assert result.violations == 0
    assert result.counts.streamed < len(w)  # and the filters did filter
