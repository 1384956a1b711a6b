"""The source filter: held and late width messages, shrinks, replies (§3.1, §3.4, §4)."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.protocols.filters import Coordinator, Growth, Shrink, SourceFilter, StreamedUpdate
from tsmon.protocols.filters.bounds import BoundCache


def test_growth_from_the_future_waits_for_its_boundary_and_is_not_shrunk_twice() -> None:
    f = SourceFilter("a", 10, 0.5)
    f.apply(Shrink("a", 2.0, 0, seq=1), 0)
    assert f.observe(0, 1.0) == [StreamedUpdate("a", 1.0, 0, width_seq=1, seq=1)]
    assert f.apply(Growth("a", 3.0, 10, seq=2), 5) == []  # held: the filter is at 5 ms
    assert f.width == 2.0
    assert f.advance(10) == [] and f.width == 3.0  # boundary shrink, then the growth as of 10
    assert f.advance(20) == [] and f.width == 1.5


def test_an_older_message_than_the_last_applied_is_ignored() -> None:
    f = SourceFilter("a", 10, 0.5)
    f.apply(Shrink("a", 1.0, 0, seq=5), 0)
    f.apply(Growth("a", 8.0, 0, seq=4), 1)
    assert f.width == 1.0 and f.width_seq == 5


def test_shrink_and_adaptivity_changes_are_answered_with_the_current_value() -> None:
    f = SourceFilter("a", 10, 0.5)
    f.apply(Shrink("a", 4.0, 0, seq=1, adaptive=False), 0)
    f.observe(1, 2.0)
    assert f.apply(Growth("a", 4.0, 2, seq=2, adaptive=True), 2) == [
        StreamedUpdate("a", 2.0, 2, width_seq=2, forced=True, seq=2)
    ]
    assert f.apply(Growth("a", math.inf, 3, seq=3, adaptive=False), 3) == []  # no query: silent
    assert f.observe(4, 1e9) == []


@settings(max_examples=200, deadline=None)
@given(
    width=st.floats(0.01, 100.0),
    shrink=st.floats(0.0, 0.9),
    period=st.integers(1, 50),
    sent=st.integers(0, 500),
    lag=st.integers(0, 500),
)
def test_a_late_message_gives_the_width_the_coordinator_has_to_the_bit(
    width: float, shrink: float, period: int, sent: int, lag: int
) -> None:
    """Replaying the boundary shrinks since t_m gives the coordinator's cached width exactly."""
    f = SourceFilter("a", period, shrink)
    f.advance(sent)
    f.apply(Growth("a", width, sent, seq=1), sent + lag)
    cache = BoundCache(1 - shrink)  # the coordinator's side: anchored at t_m, then shrunk
    cache.set_period(sent // period)
    cache.confirm_width(cache.add("a"), width, adaptive=True)
    cache.set_period((sent + lag) // period)
    assert f.width == cache.widths[0]
    assert abs(f.width - width * (1 - shrink) ** ((sent + lag) // period - sent // period)) <= (
        1e-12 * width
    )


def test_values_must_be_finite() -> None:
    f = SourceFilter("a", 10, 0.1)
    for bad in (math.nan, math.inf, -np.inf):
        try:
            f.observe(0, bad)
        except ValueError as e:
            assert "finite" in str(e)
        else:
            raise AssertionError("accepted a non-finite value")


def test_a_fractional_period_is_refused_not_truncated_to_zero() -> None:
    for bad in (0.5, 0, -10, math.inf, math.nan):
        with pytest.raises(ValueError, match="period"):
            SourceFilter("a", bad, 0.1)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="period"):
            Coordinator(bad, 0.1, np.random.default_rng(0))  # type: ignore[arg-type]


def test_a_fractional_latency_is_refused_not_truncated_to_zero() -> None:
    """λ = 0.5 ms became λ = 0: answers as of the current time with delays in flight."""
    with pytest.raises(ValueError, match="latency"):
        Coordinator(10, 0.1, np.random.default_rng(0), latency_ms=0.5)  # type: ignore[arg-type]


def test_the_coordinator_wants_a_generator_not_a_seed() -> None:
    with pytest.raises(TypeError, match="default_rng"):
        Coordinator(10, 0.1, 0)  # type: ignore[arg-type]


def test_a_message_applied_in_the_past_is_refused_without_being_kept() -> None:
    f = SourceFilter("a", 10, 0.5)
    f.observe(20, 1.0)
    with pytest.raises(ValueError, match="must not go back"):
        f.apply(Shrink("a", 1.0, 0, seq=1), 5)
    assert f.held == [] and math.isinf(f.width)


def test_an_update_of_an_unknown_object_is_refused_when_received() -> None:
    """Not later, inside advance, after some boundaries were run and the update was popped."""
    coord = Coordinator(10, 0.1, np.random.default_rng(0))
    coord.start(0)
    with pytest.raises(KeyError, match="unknown object"):
        coord.receive(StreamedUpdate("zz", 1.0, 5), arrival_ms=5)
    assert len(coord.queue) == 0


filter_ops = st.lists(
    st.one_of(
        st.tuples(st.just("observe"), st.integers(0, 30), st.floats(-50, 50)),
        st.tuples(st.just("advance"), st.integers(0, 30), st.just(0.0)),
        st.tuples(st.sampled_from(["shrink", "growth"]), st.integers(-20, 40), st.floats(0.1, 20)),
        st.tuples(st.just("pickle"), st.just(0), st.just(0.0)),
    ),
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(filter_ops, st.sampled_from([None, 7]))
def test_pickled_between_steps_equals_never_pickled(ops: list, period: int | None) -> None:
    """A filter pickled between any two steps (a Spark host pickles its node each batch, held
    messages from the future included) sends, holds and bounds exactly as one never pickled."""
    plain, pickled = SourceFilter("a", period, 0.1), SourceFilter("a", period, 0.1)
    now, seq = 0, 0
    for op, dt, x in ops:
        if op == "pickle":
            pickled = pickle.loads(pickle.dumps(pickled, protocol=5))
            assert vars(pickled) == vars(plain)
            continue
        now += max(dt, 0)
        if op == "observe":
            got = [f.observe(now, x) for f in (plain, pickled)]
        elif op == "advance":
            got = [f.advance(now) for f in (plain, pickled)]
        else:
            seq += 1
            kind = Shrink if op == "shrink" else Growth
            message = kind("a", x, max(now + dt, 0), seq=seq)  # a future one is held
            got = [f.apply(message, now) for f in (plain, pickled)]
        assert got[0] == got[1]
        assert vars(pickled) == vars(plain)


def test_a_message_applied_as_of_an_earlier_time_replies_then_and_resends_a_newer_value() -> None:
    """``apply(..., before=(t, v))``: the value ``v`` held from ``t``; the reply is stamped
    ``t`` with ``v``, and the value at ``now_ms``, if another, follows (kinds/bounded/node)."""

    def filter_at_30(last: float) -> SourceFilter:
        f = SourceFilter("a", 10, 0.5)
        f.apply(Shrink("a", 4.0, 0, seq=1, adaptive=False), 0)
        f.observe(0, 1.0)
        assert f.observe(29, 1.4) == [] and f.observe(30, last) == []  # inside [-1, 3]
        return f

    shrink = Shrink("a", 0.2, 20, seq=2, adaptive=False)
    f = filter_at_30(1.6)
    assert f.apply(shrink, 30, before=(29, 1.4)) == [
        StreamedUpdate("a", 1.4, 29, width_seq=2, forced=True, seq=2),
        StreamedUpdate("a", 1.6, 30, width_seq=2, forced=True, seq=3),
    ]
    assert (f.width, f.centre, f.now_ms) == (0.2, 1.6, 30)
    f = filter_at_30(1.4)  # the same value at 30: the reply alone
    assert f.apply(shrink, 30, before=(29, 1.4)) == [
        StreamedUpdate("a", 1.4, 29, width_seq=2, forced=True, seq=2)
    ]
    f = filter_at_30(1.6)  # a message from after t: applied at now_ms
    assert f.apply(Shrink("a", 0.2, 30, seq=2, adaptive=False), 30, before=(29, 1.4)) == [
        StreamedUpdate("a", 1.6, 30, width_seq=2, forced=True, seq=2)
    ]


def test_a_reply_as_of_an_earlier_time_is_followed_by_the_value_if_one_was_sent_at_now() -> None:
    """An update stamped ``now_ms`` (3.2) went out before the value there came back inside its
    bound (1.4, dropped): a reply stamped ``t`` with ``v`` = 1.4 recentres this end on 1.4,
    but the coordinator's copy, ordered by timestamp (§4), takes 3.2 again at ``now_ms``; so
    1.4 is sent at ``now_ms`` too, though it equals ``v``."""
    f = SourceFilter("a", 10, 0.5)
    f.apply(Shrink("a", 4.0, 0, seq=1, adaptive=False), 0)
    f.observe(0, 1.0)
    assert f.observe(29, 1.4) == []  # inside [-1, 3]
    assert f.observe(30, 3.2) == [StreamedUpdate("a", 3.2, 30, width_seq=1, seq=2)]
    assert f.observe(30, 1.4) == []  # inside [1.2, 5.2]
    assert f.apply(Shrink("a", 0.2, 20, seq=2, adaptive=False), 30, before=(29, 1.4)) == [
        StreamedUpdate("a", 1.4, 29, width_seq=2, forced=True, seq=3),
        StreamedUpdate("a", 1.4, 30, width_seq=2, forced=True, seq=4),
    ]
