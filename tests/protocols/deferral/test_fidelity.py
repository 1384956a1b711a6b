"""Fidelity on simulated DBM random walks (§6.1, Table 2), AVG over 4 streams per query.

Each check compares the observed hit rate with its exact expectation given the evaluation times
(see ``walks.py``) within 4 standard errors (two-sided, a false alarm rate of about 6e-5 per
check). At the end of each deferred interval the expectation is ``F(Δt)``, which is ``p`` by
Eq. 7 up to the rounding of deadlines to the first tick after ``Δt`` (so every stale tick has
``F ≥ p``, the end tick slightly less); over all ticks it is higher, since
``F`` decreases from 1 during the interval.
"""

from __future__ import annotations

import numpy as np
import pytest

from tsmon.protocols.deferral import DeferralEngine, StandingQuery

from .walks import Fidelity, simulate

PS = (0.85, 0.90, 0.95)


def run(
    fixed: bool, seed: int, groups: int = 60, n_ticks: int = 3_000, eps: float = 0.75
) -> tuple[dict[float, Fidelity], DeferralEngine]:
    rng = np.random.default_rng(seed)
    n = 4 * groups
    drift = rng.choice([-1.0, 1.0], groups) * rng.uniform(0, 0.008, groups)  # per ms
    mu, sigma = np.repeat(drift, 4), np.full(n, 0.1)  # σ_A = 0.05 per √ms
    eng = DeferralEngine(k=100, tick_ms=1, max_dt_ms=1_000)
    if fixed:
        eng.models.fix(np.arange(n), mu, sigma)
    for g in range(groups):
        eng.add_query(
            StandingQuery(
                f"q{g}", dict.fromkeys(range(4 * g, 4 * g + 4), 0.25), eps=eps, p=PS[g % 3]
            )
        )
    xs, answers = simulate(eng, rng, mu, sigma, n_ticks)
    fid = {p: Fidelity() for p in PS}
    for g in range(groups):
        a_true = xs[:, 4 * g : 4 * g + 4].mean(axis=1)
        got = answers[f"q{g}"]
        ticks = np.array([a.ts_ms for a in got])
        np.testing.assert_allclose([a.value for a in got], a_true[ticks], rtol=1e-12, atol=1e-12)
        fid[PS[g % 3]].add(a_true, ticks, eps, drift[g], 0.05)
    assert eng.counters.evaluations == sum(len(v) for v in answers.values())
    return fid, eng


@pytest.mark.parametrize("fixed", [True, False], ids=["known-params", "estimated-k100"])
def test_fidelity_matches_model(fixed: bool) -> None:
    fid, eng = run(fixed, seed=42)
    assert eng.counters.evaluations < 0.05 * 60 * 3_000  # vs. evaluating at every tick
    for p, f in fid.items():
        obs, exp, se = f.end
        assert abs(obs - exp) < 4 * se, (p, f.end)
        obs_t, exp_t, se_t = f.time
        assert abs(obs_t - exp_t) < 4 * se_t, (p, f.time)
        assert obs_t > p  # over time the last answer is right more often than p
        if fixed:
            # the next evaluation is at the first tick after Δt: every stale tick has F ≥ p
            # (the last one, one tick before the end, included), the end tick F ≤ p
            assert f.last_stale_min >= p - 1e-9
            assert p - 0.02 < exp <= p + 1e-9
            assert abs(obs - p) < 4 * se + (p - exp)
        else:
            # estimated μ̂ (SE σ/√99 per ms, larger than the drift) shortens intervals
            assert obs > p - 4 * se
