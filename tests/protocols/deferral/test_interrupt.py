"""Interrupted streams (§4.5, Algorithms 1-2): detection, Eq. 13, ε_intr, automatic recovery."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.protocols.deferral import (
    DeferralEngine,
    QueryPartition,
    StandingQuery,
    StreamSnapshot,
    approximate_values,
    interruption_error,
    next_interval,
)


def test_detection_approximation_and_recovery() -> None:
    rng = np.random.default_rng(3)
    tick, t_intr = 10, 50
    eng = DeferralEngine(
        k=20, tick_ms=tick, max_dt_ms=2_000, t_interrupt_ms=t_intr, interrupt_factor=3.0
    )
    eng.add_query(StandingQuery("all", {0: 1 / 3, 1: 1 / 3, 2: 1 / 3}, eps=0.5, p=0.9))
    eng.add_query(StandingQuery("other", {0: 0.5, 1: 0.5}, eps=0.5, p=0.9))
    x = np.zeros(3)
    seen: dict[str, list] = {"all": [], "other": []}
    params_during: list[tuple[float, float]] = []
    for t in range(0, 1_500, tick):
        x = x + np.array([0.01, -0.02, 0.03]) * tick + 0.1 * np.sqrt(tick) * rng.standard_normal(3)
        live = [0, 1] if 500 <= t < 900 else [0, 1, 2]  # stream 2 silent in [500, 900)
        out = eng.tick(t, live, [t] * len(live), x[live])
        intr = eng.monitor.interrupted
        if 500 <= t < 900:
            params_during.append((eng.models.mu[2], eng.models.sigma[2]))
        assert intr[2] == (530 <= t < 900)  # silent > 3 periods of 10 ms
        for a in out:
            seen[a.name].append(a)
            if a.interrupted:  # Eq. 13 with the model's own μ and the last item of stream 2
                m = eng.models
                s_hat = m.value.copy()
                s_hat[2] += m.mu[2] * (t - m.last_ts[2])
                assert a.value == pytest.approx(s_hat.mean(), rel=1e-12)
                z = 1.6448536269514722  # Φ⁻¹(0.95)
                assert a.eps_intr == pytest.approx(z * m.sigma[2] * np.sqrt(t - 490) / 3)
                assert a.next_due_ms == t + t_intr  # Algorithm 1: re-evaluate after T
            else:
                assert a.eps_intr == 0.0
    flagged = [a for a in seen["all"] if a.interrupted]
    assert flagged and all(530 <= a.ts_ms < 900 for a in flagged)
    assert np.diff([a.ts_ms for a in flagged]).tolist() == [t_intr] * (len(flagged) - 1)
    assert all(np.diff([a.eps_intr for a in flagged]) > 0)  # error grows with the gap
    assert not any(a.interrupted for a in seen["other"])
    after = [a for a in seen["all"] if a.ts_ms >= 900]
    assert after and not after[0].interrupted and after[0].ts_ms <= 900 + t_intr
    assert eng.monitor.n_interruptions == 1 and eng.monitor.n_recoveries == 1
    assert eng.counters.interrupted_answers == len(flagged)
    # Algorithm 2: an interrupted stream keeps its last estimates
    kept = params_during[-1]
    assert all(pm == kept for pm in params_during[4:])


@pytest.mark.parametrize("combine", ["linear", "rss"])
def test_interruption_error_monte_carlo(combine: str) -> None:
    """Ŝ_i errors are N(0, σ_i² gap): rss is exactly at p, the paper's weighted sum above it."""
    rng = np.random.default_rng(8)
    n, p = 200_000, 0.9
    w = sp.csr_array([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]])
    mu, sigma = np.array([0.2, -0.1, 0.0]), np.array([0.3, 0.6, 1.0])
    last, now = np.array([100, 60, 0]), 200
    intr = np.array([True, True, False])
    value = np.array([1.0, 2.0, 3.0])
    s_hat = approximate_values(value, last, mu, intr, now)  # Eq. 13
    gap = now - last
    truth = value + mu * gap + sigma * np.sqrt(gap) * rng.standard_normal((n, 3))
    truth[:, 2] = value[2]  # the live stream is known exactly
    err = np.abs((truth - s_hat) @ w.toarray().T)
    eps = interruption_error(w, sigma, last, intr, now, p, combine=combine)
    hit = (err <= eps).mean(axis=0)
    se = np.sqrt(p * (1 - p) / n)
    assert abs(hit[1] - p) < 4 * se  # one interrupted stream: both rules are exact
    if combine == "rss":
        assert abs(hit[0] - p) < 4 * se
    else:
        assert hit[0] > p + 4 * se  # |a_1|e_1 + |a_2|e_2 ≥ sqrt(a_1²e_1² + a_2²e_2²)


def test_no_interruption_no_error() -> None:
    w = sp.csr_array([[1.0, 1.0]])
    assert interruption_error(w, [1.0, 1.0], [0, 0], [False, False], 50, 0.9).tolist() == [0.0]
    with pytest.raises(ValueError, match="combine must be"):
        interruption_error(w, [1.0, 1.0], [0, 0], [True, False], 50, 0.9, combine="max")


def _snapshot(now: int, intr: np.ndarray, period: float = 1.0) -> StreamSnapshot:
    n = len(intr)
    return StreamSnapshot(
        now, np.arange(n, dtype=float), np.zeros(n), np.ones(n),
        np.full(n, now - 1, np.int64), intr, np.full(n, period),
    )  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.booleans(), min_size=3, max_size=3), min_size=2, max_size=40))
def test_interruption_flagged_at_the_tick_it_starts_and_ends(flags: list[list[bool]]) -> None:
    """A query is evaluated exactly when new, or when a stream of it becomes interrupted or
    resumes (ε is so wide that its model never makes it due, T and the caps are off); its
    answer says whether a stream of it is interrupted at that tick."""
    part = QueryPartition(tick_ms=1, max_dt_ms=np.inf, max_dt_periods=np.inf, t_interrupt_ms=10**9)
    reads = {"a": [0, 1], "b": [2], "c": [1, 2]}
    for name, streams in reads.items():
        part.add_query(StandingQuery(name, dict.fromkeys(streams, 0.5), eps=1e6, p=0.9))
    before = np.zeros(3, dtype=bool)
    for t, f in enumerate(flags):
        intr = np.array(f)
        got = {a.name: a for a in part.run(_snapshot(t, intr))}
        for name, streams in reads.items():
            changed = t == 0 or bool((intr[streams] != before[streams]).any())
            assert (name in got) == changed, (t, name)
            if changed:
                assert got[name].interrupted == bool(intr[streams].any())
                assert (got[name].eps_intr > 0) == bool(intr[streams].any())
        before = intr


def test_cap_in_sampling_intervals_of_the_fastest_stream() -> None:
    """``Δt`` of a query due far off by its model (ε ≫ σ, Eq. 7) is the cap: the smaller of
    ``max_dt_ms`` and ``max_dt_periods`` periods of its fastest stream (unknown periods left
    out); without a cap that applies, the model's ``Δt``."""
    model = float(next_interval(0.0, 1.0, 1e9, 0.9))
    queries = {"fast": {0: 1.0, 1: 1.0}, "slow": {1: 1.0}, "unknown": {2: 1.0}}
    period = np.array([10.0, 40.0, np.nan])
    for max_ms, expected in ((np.inf, [50, 200, model]), (120, [50, 120, 120])):
        part = QueryPartition(tick_ms=1, max_dt_ms=max_ms, max_dt_periods=5)
        for name, w in queries.items():
            part.add_query(StandingQuery(name, w, eps=1e9, p=0.9))
        part.run(dataclasses.replace(_snapshot(0, np.zeros(3, bool)), period=period))
        assert [part.next_due_ms(q) for q in queries] == expected
    with pytest.raises(ValueError, match="max_dt_ms and max_dt_periods must be > 0"):
        QueryPartition(max_dt_periods=0)
