"""§5 scheduling: EDF in underload, fewest missed deadlines (brute force), Eq. 18 sequencing."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.protocols.deferral import DeferralEngine, EdfScheduler, StandingQuery, penalty


def completions(order: tuple[int, ...], cost: np.ndarray, start: float) -> np.ndarray:
    c = np.empty(len(cost))
    c[list(order)] = start + np.cumsum(cost[list(order)])
    return c


tasks = st.lists(st.tuples(st.integers(1, 4), st.integers(0, 14)), min_size=1, max_size=6)


@settings(max_examples=150, deadline=None)
@given(tasks)
def test_fewest_missed_deadlines_vs_brute_force(spec: list[tuple[int, int]]) -> None:
    cost = np.array([c for c, _ in spec], dtype=float)
    dl = np.array([d for _, d in spec], dtype=float)
    best = min(
        int((completions(o, cost, 0.0) > dl).sum())
        for o in itertools.permutations(range(len(spec)))
    )
    s = EdfScheduler(ms_per_unit=1.0)
    s.submit(np.arange(len(spec)), dl, cost)
    done = s.run(now_ms=0.0)
    assert s.n_missed == best == int(done.late.sum())
    assert len(done) == len(spec) and s.n_pending == 0
    np.testing.assert_allclose(done.completion_ms, np.cumsum(cost[done.keys]))


@settings(max_examples=60, deadline=None)
@given(tasks, st.integers(1, 3))
def test_budget_per_tick_preempts_without_losing_work(
    spec: list[tuple[int, int]], budget: int
) -> None:
    """Cutting the same work into ticks of ``budget`` units keeps the fewest-misses count."""
    cost = np.array([c for c, _ in spec], dtype=float)
    dl = np.array([d for _, d in spec], dtype=float)
    best = min(
        int((completions(o, cost, 0.0) > dl).sum())
        for o in itertools.permutations(range(len(spec)))
    )
    s = EdfScheduler(ms_per_unit=1.0)
    s.submit(np.arange(len(spec)), dl, cost)
    t, done = 0, []
    while s.n_pending:
        got = s.run(now_ms=t, budget=budget)
        assert (got.completion_ms <= t + budget + 1e-9).all()
        done += got.keys.tolist()
        t += budget
    assert sorted(done) == list(range(len(spec)))
    assert s.n_missed == best


def test_underload_is_edf() -> None:
    rng = np.random.default_rng(0)
    d = rng.permutation(50).astype(float) * 3 + 3
    s = EdfScheduler(ms_per_unit=1.0)
    s.submit(np.arange(50), d, 1.0)
    done = s.run(now_ms=0.0)
    assert np.all(np.diff(done.deadline_ms) > 0) and s.n_missed == 0 and s.total_penalty == 0


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 4), st.floats(0.0, 5.0), st.integers(-10, 0)),
        min_size=1,
        max_size=6,
    )
)
def test_late_linear_penalties_sequenced_optimally(spec: list[tuple[int, float, int]]) -> None:
    """With σ_A = 0 and every task already late, Eq. 18 is Σ|μ_A|(C - d) and the metric is
    Smith's rule |μ_A|/p_i: its total penalty equals the brute-force minimum."""
    cost = np.array([c for c, _, _ in spec], dtype=float)
    mu = np.array([m for _, m, _ in spec])
    dl = np.array([d for _, _, d in spec], dtype=float)
    best = min(
        penalty(completions(o, cost, 0.0), dl, mu, 0.0).sum()
        for o in itertools.permutations(range(len(spec)))
    )
    s = EdfScheduler(ms_per_unit=1.0)
    s.submit(np.arange(len(spec)), dl, cost, mu_a=mu)
    s.run(now_ms=0.0)
    assert s.total_penalty == pytest.approx(best, rel=1e-12, abs=1e-12)


def test_metric_orders_late_tasks() -> None:
    """Late tasks run in non-increasing (|μ_A| + σ_A/√|s|)/p, after the on-time EDF set."""
    s = EdfScheduler(ms_per_unit=1.0)
    s.submit(
        [0, 1, 2, 3],
        deadline_ms=[-5.0, -5.0, -5.0, 10.0],
        cost=[1.0, 2.0, 1.0, 1.0],
        mu_a=[1.0, 1.0, 0.0, 0.0],
        sigma_a=[0.0, 0.0, 4.0, 0.0],
    )
    # at t = 1 (after task 3): slacks |-5 - (1 + p)| = 7, 8, 7 → metrics 1, 0.5, 4/√7 ≈ 1.51
    done = s.run(now_ms=0.0)
    assert done.keys.tolist() == [3, 2, 0, 1]
    assert done.late.tolist() == [False, True, True, True] and s.n_missed == 3
    expect = penalty([2.0, 3.0, 5.0], [-5.0] * 3, [0.0, 1.0, 1.0], [4.0, 0.0, 0.0])
    assert s.total_penalty == pytest.approx(expect.sum())


def test_engine_overload_counts_misses_and_penalty() -> None:
    """Budget 2 evaluations per tick, 5 queries due every tick (ε = 0): 3 miss at once.

    With aging off (the paper's pure order), each tick the 2 queries evaluated last tick are due
    again and on time, so they win the budget; the 3 late ones starve. Every miss counts, and
    the counters now show the starvation while it lasts (late_pending, max_lateness_ms,
    accrued_penalty). The engine's default aging rule is tested below.
    """
    eng = DeferralEngine(tick_ms=1, budget=2, max_wait_ms=np.inf)
    eng.models.fix(range(5), mu=[0.5] * 5, sigma=[1.0] * 5)
    for i in range(5):
        eng.add_query(StandingQuery(f"q{i}", {i: 1.0}, eps=0.0, p=0.9))
    answers = []
    for t in range(20):
        answers += eng.tick(t, list(range(5)), [t] * 5, [float(t)] * 5)
    assert eng.counters.evaluations == len(answers) == 40
    assert eng.counters.missed_deadlines == 3 and not any(a.late for a in answers)
    assert eng.scheduler.n_pending == 3
    assert eng.scheduler.pending_penalty(19) == pytest.approx(3 * (0.5 * 19 + np.sqrt(19)))
    c = eng.counters
    assert c.late_pending == 3 and c.max_lateness_ms == 19.0 and c.aged == 0
    assert c.accrued_penalty == pytest.approx(3 * (0.5 * 19 + np.sqrt(19)))


def test_engine_overload_aging_answers_every_query() -> None:
    """Same overload with the default aging rule: no query starves, and the misses it causes
    (on-time tasks displaced by aged ones) are all counted, with their Eq. 18 penalties."""
    eng = DeferralEngine(tick_ms=1, budget=2, max_wait_ms=3)
    eng.models.fix(range(5), mu=[0.5] * 5, sigma=[1.0] * 5)
    for i in range(5):
        eng.add_query(StandingQuery(f"q{i}", {i: 1.0}, eps=0.0, p=0.9))
    last: dict[str, int] = {}
    answers = []
    for t in range(40):
        for a in eng.tick(t, list(range(5)), [t] * 5, [float(t)] * 5):
            answers.append(a)
            last[a.name] = t
        assert eng.counters.max_lateness_ms <= 3 + 5  # aged within max_wait + backlog drain
    c = eng.counters
    assert c.evaluations == len(answers) == 80
    assert sorted(last) == [f"q{i}" for i in range(5)] and min(last.values()) >= 40 - 5
    late = [a for a in answers if a.late]
    assert c.aged > 0 and len(late) > 3
    # every late completion was counted as a miss, and so was every task still waiting late
    assert c.missed_deadlines == len(late) + c.late_pending
    assert c.penalty > 0 and c.missed_deadlines == eng.scheduler.n_missed


def test_scheduler_aging_runs_old_tasks_first() -> None:
    s = EdfScheduler(ms_per_unit=0.0, max_wait_ms=5.0)
    s.submit([0, 1, 2], deadline_ms=[-10.0, 1.0, -2.0])
    assert s.pending(0) and not s.pending(7)
    assert s.n_overdue(0.0) == 2 and s.max_lateness(0.0) == 10.0
    done = s.run(now_ms=0.0, budget=1)  # task 0 is past max_wait: it beats on-time task 1
    assert done.keys.tolist() == [0] and s.n_aged == 1 and not s.pending(0)
    assert s.n_missed == 2 and s.n_overdue(0.0) == 1
    done = s.run(now_ms=1.0, budget=1)  # task 2 is late by 3 < 5: on-time task 1 first
    assert done.keys.tolist() == [1] and s.n_aged == 1


def test_engine_backlog_drains_by_penalty_metric() -> None:
    """10 new queries, budget 3 per tick: 7 miss; the backlog runs by (|μ_A| + σ_A/√|s|)/p.

    Completions are "at" the tick (``p_i`` = 0 ms), so ``s_i = d_i - t``.
    """
    rng = np.random.default_rng(5)
    mu, sigma = rng.uniform(0, 0.01, 10), rng.uniform(0.001, 0.01, 10)
    eng = DeferralEngine(tick_ms=1, budget=3, max_dt_ms=10**6)
    eng.models.fix(range(10), mu=mu, sigma=sigma)
    for i in range(10):  # ε large: after one evaluation a query is not due for ages
        eng.add_query(StandingQuery(f"q{i}", {i: 1.0}, eps=100.0, p=0.9))
    done_at: dict[int, list[int]] = {}
    for t in range(6):
        out = eng.tick(t, list(range(10)), [t] * 10, [0.0] * 10)
        done_at[t] = [int(a.name[1:]) for a in out]
        assert all(a.late == (t > 0) for a in out)
    assert [len(done_at[t]) for t in range(6)] == [3, 3, 3, 1, 0, 0]
    c = eng.counters
    assert c.evaluations == 10 and c.missed_deadlines == 7
    backlog = [i for t in (1, 2, 3) for i in done_at[t]]
    left = set(backlog)
    for t in (1, 2, 3):  # at tick t every late task has |s| = t ms: metric |μ| + σ/√t
        ranked = sorted(left, key=lambda i, t=t: -(mu[i] + sigma[i] / np.sqrt(t)))
        assert done_at[t] == ranked[: len(done_at[t])]
        left -= set(done_at[t])
    lateness = np.array([1.0] * 3 + [2.0] * 3 + [3.0])
    expect = (mu[backlog] * lateness + sigma[backlog] * np.sqrt(lateness)).sum()  # Eq. 18
    assert c.penalty == pytest.approx(expect, rel=1e-12)
