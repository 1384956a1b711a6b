"""The next evaluation's tick (the first after Eq. 7's Δt), the caps on Δt and the weight rows,
each against an exact oracle."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from tsmon.protocols.deferral import DeferralEngine, StandingQuery, StreamSnapshot
from tsmon.protocols.deferral.deadlines import interval_caps, jumps, tick_interval
from tsmon.protocols.deferral.model import NO_TS
from tsmon.protocols.deferral.weights import QueryWeights

finite_dt = st.floats(0, 1e9, allow_nan=False, allow_infinity=False)


@given(st.lists(finite_dt, min_size=1, max_size=20), st.integers(1, 10**6))
def test_tick_interval_is_the_first_tick_after_dt(dts: list[float], tick: int) -> None:
    got = tick_interval(dts, tick)
    for dt, g in zip(dts, got.tolist(), strict=True):
        n = math.floor(Fraction(dt) / tick) + 1  # exact: the first n with n·tick > Δt
        assert g == n * tick
        assert (n - 1) * tick <= dt < n * tick  # every stale tick is within Δt
    assert tick_interval(np.inf, tick) == np.inf


@given(
    st.lists(st.lists(st.sampled_from([0.0, 0.5, -2.0, 1.0]), min_size=4, max_size=4),
             min_size=1, max_size=8),
    st.lists(st.one_of(st.just(np.nan), st.floats(1, 1e6)), min_size=4, max_size=4),
    st.one_of(st.just(np.inf), st.floats(1, 1e8)),
    st.one_of(st.just(np.inf), st.floats(0.5, 500)),
)  # fmt: skip
def test_interval_caps_match_a_dense_oracle(
    rows: list[list[float]], period: list[float], max_ms: float, periods: float
) -> None:
    got = interval_caps(sp.csr_array(np.array(rows)), np.array(period), max_ms, periods)
    for r, g in zip(rows, got.tolist(), strict=True):
        used = [p for w, p in zip(r, period, strict=True) if w != 0 and not np.isnan(p)]
        want = min([max_ms] + ([periods * min(used)] if used and np.isfinite(periods) else []))
        assert g == want


def test_a_linear_query_is_due_at_the_first_tick_after_dt() -> None:
    """σ_A = 1 per √ms, ε = 2, p = 0.9: Δt = (2 / z_0.95)² = 1.478 ms, so with 1 ms ticks the
    query is evaluated every 2 ticks (the answer stands at the tick 1 ms on, F(1) > p)."""
    eng = DeferralEngine(tick_ms=1, max_dt_ms=1_000)
    eng.models.fix([0], mu=[0.0], sigma=[1.0])
    eng.add_query(StandingQuery("q", {0: 1.0}, eps=2.0, p=0.9))
    ticks = [t for t in range(10) if eng.tick(t, [0], [t], [float(t % 3)])]
    assert ticks == [0, 2, 4, 6, 8]


class WeightsMachine(RuleBasedStateMachine):
    """Appends, removes and builds of :class:`QueryWeights` against a list of dense rows."""

    def __init__(self) -> None:
        super().__init__()
        self.qw, self.rows, self.n = QueryWeights(), [], 3

    @rule(w=st.dictionaries(st.integers(0, 5), st.sampled_from([0.0, 1.5, -0.25]), min_size=1))
    def append(self, w: dict[int, float]) -> None:
        self.qw.append(w)
        self.n = max(self.n, max(w) + 1)
        self.rows.append(w)

    @precondition(lambda self: self.rows)
    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        r = data.draw(st.integers(0, len(self.rows) - 1))
        self.qw.remove(r)
        del self.rows[r]

    @rule()
    def build(self) -> None:
        self.qw.matrix(self.n)
        bound = np.zeros(self.n)  # after removals without a rebuild, column_max is a bound
        for w in self.rows:
            for c, v in w.items():
                bound[c] = max(bound[c], abs(v))
        assert (self.qw.column_max >= bound).all()

    @rule()
    def pickle_round_trip(self) -> None:
        import pickle

        self.qw = pickle.loads(pickle.dumps(self.qw))

    @invariant()
    def matches(self) -> None:
        dense = np.zeros((len(self.rows), self.n))
        for i, w in enumerate(self.rows):
            for c, v in w.items():
                dense[i, c] = v
        qw = QueryWeights()
        qw.__setstate__(dict(self.qw.__getstate__()))  # look without changing the machine's
        got = qw.matrix(self.n)
        assert got.shape == dense.shape
        np.testing.assert_array_equal(got.toarray(), dense)
        np.testing.assert_array_equal(qw.squared.toarray(), dense**2)
        np.testing.assert_array_equal(qw.absolute.toarray(), np.abs(dense))
        assert (qw.column_max == np.abs(dense).max(axis=0, initial=0.0)).all()  # just built


WeightsMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=25, deadline=None)
TestWeights = WeightsMachine.TestCase


@given(
    st.lists(
        st.tuples(
            st.floats(-50, 50), st.integers(0, 3), st.floats(-50, 50), st.floats(-0.5, 0.5),
            st.one_of(st.just(np.nan), st.floats(0, 3)), st.booleans(), st.booleans(),
        ),
        min_size=1, max_size=12,
    ),
    st.floats(0, 6),
)  # fmt: skip
def test_jumps_match_a_scalar_oracle(streams: list[tuple], z: float) -> None:
    """Each stream: previous value, gap in ms (0: no new item), value, μ, σ, interrupted, and
    whether it had a previous tick at all."""
    prev_v = np.array([s[0] for s in streams])
    prev_ts = np.array([10 if s[6] else NO_TS for s in streams], dtype=np.int64)
    last_ts = np.array([10 + s[1] for s in streams], dtype=np.int64)
    snap = StreamSnapshot(
        20, np.array([s[2] for s in streams]), np.array([s[3] for s in streams]),
        np.array([s[4] for s in streams]), last_ts, np.array([s[5] for s in streams]),
        np.full(len(streams), 1.0),
    )  # fmt: skip
    got = jumps(prev_v, prev_ts, snap, z).tolist()
    for (pv, gap, v, mu, sigma, intr, had), g in zip(streams, got, strict=True):
        resid = abs(v - pv - mu * gap)
        is_jump = had and gap > 0 and not intr and resid > z * sigma * math.sqrt(gap)
        assert g == (resid if is_jump else 0.0)


def test_a_jump_makes_a_query_due_at_its_tick() -> None:
    """σ = 0.1 per √ms on both streams; AVG WITHIN 1 at p = 0.9 is due every 74 ticks. A move of
    3 in stream 0 (|a_0| · 3 = 1.5 > ε, and 30 σ) makes it due at once with the jump test;
    a move of 1.5 (0.75 < ε) does not, nor does any move of a relative query's stream."""
    for z, move, due_at_once in ((3.0, 3.0, True), (3.0, 1.5, False), (None, 3.0, False)):
        eng = DeferralEngine(tick_ms=1, max_dt_ms=1_000, jump_z=z)
        eng.models.fix([0, 1], mu=[0.0, 0.0], sigma=[0.1, 0.1])
        eng.add_query(StandingQuery("avg", {0: 0.5, 1: 0.5}, eps=1.0, p=0.9))
        eng.add_query(StandingQuery("rel", {0: 0.5, 1: 0.5}, eps=0.1, p=0.9, relative=True))
        evaluated = []
        for t in range(10):
            x0 = 10.0 + (move if t >= 5 else 0.0)
            evaluated += [(t, a.name) for a in eng.tick(t, [0, 1], [t, t], [x0, 20.0])]
        assert evaluated == [(0, "avg"), (0, "rel")] + ([(5, "avg")] if due_at_once else [])
