"""DeferralEngine: runtime add/remove, exact evaluations, counters, Eq. 8-9 options."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from tsmon.protocols.deferral import DeferralEngine, StandingQuery, next_interval


def feed(eng: DeferralEngine, t: int, x: np.ndarray) -> list:
    return eng.tick(t, np.arange(len(x)), np.full(len(x), t), x)


def test_add_and_remove_at_runtime() -> None:
    rng = np.random.default_rng(0)
    eng = DeferralEngine(tick_ms=1, max_dt_ms=50)
    eng.models.fix(range(3), mu=[0.0] * 3, sigma=[0.05] * 3)
    eng.add_query(StandingQuery("a", {0: 1.0}, eps=0.2, p=0.9))
    x = np.zeros(3)
    names: list[set[str]] = []
    for t in range(200):
        x += 0.05 * rng.standard_normal(3)
        if t == 50:
            eng.add_query(StandingQuery("b", {1: 2.0, 2: -1.0}, eps=0.3, p=0.8))
        if t == 120:
            eng.remove_query("a")
        if t == 150:
            eng.add_query(StandingQuery("a", {2: 1.0}, eps=0.2, p=0.9))  # a name can be reused
        out = feed(eng, t, x)
        names.append({a.name for a in out})
        for a in out:
            w = {"a": [1.0, 0, 0] if t < 150 else [0, 0, 1.0], "b": [0, 2.0, -1.0]}[a.name]
            assert a.value == pytest.approx(np.dot(w, x), abs=1e-12)
    assert "a" in names[0] and "b" in names[50]  # a new query is evaluated at once
    assert not any("b" in n for n in names[:50])
    assert not any("a" in n for n in names[120:150]) and "a" in names[150]
    assert eng.query_names == ["b", "a"]
    assert eng.counters.evaluations == sum(len(n) for n in names)
    with pytest.raises(ValueError, match="query 'b' exists"):
        eng.add_query(StandingQuery("b", {0: 1.0}, eps=1.0, p=0.9))
    with pytest.raises(KeyError):
        eng.remove_query("nope")


def test_remove_cancels_pending_work() -> None:
    eng = DeferralEngine(tick_ms=1, budget=1)
    for name in "abc":
        eng.add_query(StandingQuery(name, {0: 1.0}, eps=0.0, p=0.9))
    eng.tick(0, [0], [0], [1.0])
    assert eng.scheduler.n_pending == 2
    eng.remove_query("b")
    eng.remove_query("c")
    assert eng.scheduler.n_pending == 0


def test_next_due_follows_eq7_eq8_eq9() -> None:
    eng = DeferralEngine(tick_ms=1, max_dt_ms=10**6)
    eng.models.fix([0, 1], mu=[0.01, 0.03], sigma=[0.1, 0.2])
    eng.add_query(StandingQuery("abs", {0: 1.0, 1: 1.0}, eps=2.0, p=0.9))
    eng.add_query(StandingQuery("rel", {0: 1.0, 1: 1.0}, eps=0.1, p=0.9, relative=True))
    eng.add_query(StandingQuery("extra", {0: 1.0, 1: 1.0}, eps=2.0, p=0.9, extrapolate=True))
    got = {a.name: a for a in eng.tick(0, [0, 1], [0, 0], [5.0, 15.0])}
    mu_a, sigma_a = 0.04, np.hypot(0.1, 0.2)  # Eq. 6
    assert got["abs"].mu_a == pytest.approx(mu_a)
    # due at the first tick after Eq. 7's Δt (§4.4; ticks 1 ms apart)
    assert got["abs"].next_due_ms == np.floor(next_interval(mu_a, sigma_a, 2.0, 0.9)) + 1
    assert got["rel"].eps == pytest.approx(0.1 * 20.0)  # Eq. 9
    assert got["rel"].next_due_ms == pytest.approx(got["abs"].next_due_ms)
    assert got["extra"].next_due_ms == np.floor(next_interval(0.0, sigma_a, 2.0, 0.9)) + 1


def test_validation_messages() -> None:
    with pytest.raises(ValueError, match=r"p must be in \(0, 1\), got 1.5"):
        StandingQuery("q", {0: 1.0}, eps=1.0, p=1.5)
    with pytest.raises(ValueError, match="needs exactly one of window_ms or landmark_ms"):
        StandingQuery("q", {0: 1.0}, eps=1.0, p=0.9, kind="max")
    eng = DeferralEngine()
    eng.tick(5)
    with pytest.raises(ValueError, match="ticks must move forward: got 5 ms after 5 ms"):
        eng.tick(5)


class EngineMachine(RuleBasedStateMachine):
    """Random adds, removes and ticks (some streams silent); invariants after every step."""

    @initialize()
    def setup(self) -> None:
        self.eng = DeferralEngine(k=5, tick_ms=1, max_dt_ms=20, t_interrupt_ms=4, budget=3)
        self.t = 0
        self.x = np.zeros(4)
        self.live: set[str] = set()
        self.n_answers = 0
        self.next_name = 0
        self.weights: dict[str, dict[int, float]] = {}
        self.reported: set[int] = set()

    @rule(
        weights=st.dictionaries(st.integers(0, 3), st.floats(-2, 2), min_size=1, max_size=3),
        eps=st.floats(0.0, 1.0),
        kind=st.sampled_from(["linear", "max", "window-min"]),
    )
    def add(self, weights: dict[int, float], eps: float, kind: str) -> None:
        name = f"q{self.next_name}"
        self.next_name += 1
        extra = {
            "linear": {},
            "max": {"kind": "max", "landmark_ms": self.t},
            "window-min": {"kind": "min", "window_ms": 10},
        }[kind]
        self.eng.add_query(StandingQuery(name, weights, eps=eps, p=0.9, **extra))
        self.live.add(name)
        self.weights[name] = weights

    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        if self.live:
            name = data.draw(st.sampled_from(sorted(self.live)))
            self.eng.remove_query(name)
            self.live.remove(name)

    @rule(
        steps=st.integers(1, 5),
        silent=st.sets(st.integers(0, 3), max_size=2),
        seed=st.integers(0, 2**16),
    )
    def tick(self, steps: int, silent: set[int], seed: int) -> None:
        rng = np.random.default_rng(seed)
        for _ in range(steps):
            self.t += 1
            self.x += rng.normal(0, 0.3, 4)
            ids = [i for i in range(4) if i not in silent]
            out = self.eng.tick(self.t, ids, [self.t] * len(ids), self.x[ids])
            self.reported |= set(ids)
            self.n_answers += len(out)
            for a in out:
                assert a.name in self.live and a.ts_ms == self.t
                assert a.next_due_ms >= self.t + 1  # never earlier than the next tick
                assert a.interrupted or a.eps_intr == 0.0
                used = {i for i, w in self.weights[a.name].items() if w != 0}
                assert np.isfinite(a.value) == (used <= self.reported) or not used

    @invariant()
    def counted(self) -> None:
        if hasattr(self, "eng"):
            c = self.eng.counters
            assert c.evaluations == self.n_answers
            assert sorted(self.eng.query_names) == sorted(self.live)
            assert c.missed_deadlines == self.eng.scheduler.n_missed


EngineMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=20, deadline=None)
TestEngineMachine = EngineMachine.TestCase


def test_a_pickled_engine_carries_on_exactly() -> None:
    """Hosts store the partition every batch: the compact pickle (names as one string, derived
    matrices dropped) must give the same answers, lookups and removals afterwards."""
    import pickle

    rng = np.random.default_rng(4)
    eng = DeferralEngine(tick_ms=1, max_dt_ms=200)
    for j in range(30):
        cols = rng.choice(8, 3, replace=False).tolist()
        eng.add_query(StandingQuery(f"q{j}", dict.fromkeys(cols, 0.5), eps=0.8, p=0.9))
    x = np.zeros(8)
    steps = [x := x + rng.normal(0, 0.1, 8) for _ in range(120)]
    for t in range(60):
        eng.tick(t, np.arange(8), np.full(8, t), steps[t])
    copy = pickle.loads(pickle.dumps(eng))
    assert copy.query_names == eng.query_names
    assert copy.next_due_ms("q7") == eng.next_due_ms("q7")
    for e in (eng, copy):
        e.remove_query("q3")
        e.add_query(StandingQuery("late", {0: 1.0, 7: -1.0}, eps=0.5, p=0.95))
    for t in range(60, 120):
        a = eng.tick(t, np.arange(8), np.full(8, t), steps[t])
        b = copy.tick(t, np.arange(8), np.full(8, t), steps[t])
        assert a == b
    assert eng.counters == copy.counters
