"""Queries added, altered and removed while running, with message delays and reordering.

A hypothesis state machine drives a :class:`FilterNetwork` whose messages take random delays up
to the latency tolerance ``λ`` (so they overtake each other), and checks against an exact oracle
(the value history of every object) that every bounded answer holds the exact aggregate as of
the coordinator's time, and is at most ``δ`` wide unless a narrower bound is still on its way.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, rule

from tests.protocols.filters.machines import History, QueryChanges
from tsmon.protocols.filters import Query, StreamedUpdate
from tsmon.protocols.filters.messages import Message
from tsmon.sim.filters.network import FilterNetwork

OBJECTS = [f"o{i}" for i in range(6)]


class DelayedFilters(QueryChanges):
    """Random walks, query changes and per-message delays ≤ λ, per-link FIFO or not."""

    universe = OBJECTS

    @initialize(
        period=st.one_of(st.none(), st.integers(1, 60)),  # None: T chosen online
        shrink=st.floats(0.0, 0.5),
        latency=st.integers(0, 40),
        seed=st.integers(0, 2**32 - 1),
        fifo=st.booleans(),
    )
    def start(self, period: int | None, shrink: float, latency: int, seed: int, fifo: bool) -> None:
        rng = np.random.default_rng(seed)
        links: dict[str, int] = {}

        def delay(message: Message, sent_ms: int) -> int:
            arrive = sent_ms + int(rng.integers(0, latency + 1))
            if not fifo:  # as UDP or the latency experiments: any message may overtake any
                return arrive - sent_ms
            # per-link FIFO (as TCP gives): never overtake an earlier message on the same link
            link = f"{isinstance(message, StreamedUpdate)}:{message.object_id}"
            links[link] = max(links.get(link, arrive), arrive)
            return links[link] - sent_ms

        self.now = 0
        self.latency = latency
        self.history = History(OBJECTS)
        self.net = FilterNetwork(
            OBJECTS,
            [],
            period,
            shrink,
            np.random.default_rng(seed),
            delay=delay,
            latency_ms=latency,
        )
        self.start_changes(self.net)
        self.values = {o: float(rng.normal(0, 5)) for o in OBJECTS}

    @rule(obj=st.sampled_from(OBJECTS), step=st.floats(-3, 3), gap=st.integers(0, 30))
    def update(self, obj: str, step: float, gap: int) -> None:
        self.now += gap
        self.values[obj] += step
        self.history.add(obj, self.now, self.values[obj])
        self.net.update(self.now, obj, self.values[obj])

    @rule(gap=st.integers(1, 200))
    def wait(self, gap: int) -> None:
        self.now += gap
        self.net.advance(self.now)

    @invariant()
    def answers_hold_the_exact_value(self) -> None:
        coord = self.net.coordinator
        as_of = coord.now_ms
        assert as_of == self.now - self.latency
        exact_values = self.history.at(as_of)
        assert coord.queue.late == 0
        self.check_answers(coord, self.net.answers(), exact_values)

    @invariant()
    def unqueried_objects_are_unbounded(self) -> None:
        queried = {o for q in self.queries.values() for o in q.objects}
        widths = self.net.coordinator.widths()
        for o in OBJECTS:
            if o not in queried:
                assert math.isinf(widths[o])


DelayedFilters.TestCase.settings = settings(max_examples=100, stateful_step_count=60, deadline=None)
test_delayed_filters = DelayedFilters.TestCase


@settings(max_examples=60, deadline=None)
@given(
    latency=st.integers(1, 30),
    period=st.integers(5, 100),
    shrink=st.floats(0.0, 0.3),
    seed=st.integers(0, 2**32 - 1),
    kind=st.sampled_from(["avg", "sum", "min", "max"]),
)
def test_padded_answers_hold_the_current_value(
    latency: int, period: int, shrink: float, seed: int, kind: str
) -> None:
    """§4.1: objects change at most R per second; padded bounds hold the value *now*."""
    rng = np.random.default_rng(seed)
    objects = OBJECTS[:4]
    rates = {o: float(r) for o, r in zip(objects, rng.uniform(0.5, 20.0, 4), strict=True)}
    phi = {o: 2 * r * latency / 1000 for o, r in rates.items()}
    delta = 2 * max(phi.values()) * 4 + float(rng.uniform(0.1, 5.0))
    make = {"avg": Query.avg, "sum": Query.sum, "min": Query.min, "max": Query.max}[kind]
    query = make("q", objects, delta)

    def delay(message: Message, sent_ms: int) -> int:
        return int(rng.integers(0, latency + 1))

    net = FilterNetwork(
        objects, [query], period, shrink, rng, delay=delay, latency_ms=latency, max_rates=rates
    )
    values = {o: 0.0 for o in objects}
    for now in range(600):
        for o in objects:  # every ms: a step of at most R·1 ms
            values[o] += float(rng.uniform(-1, 1)) * rates[o] / 1000
            net.update(now, o, values[o])
        answer = net.answers()["q"]
        assert answer.as_of_ms == now
        if now >= 2 * latency:  # registration took one round trip: every object reported
            exact = query.exact(values)
            assert answer.lo - 1e-9 <= exact <= answer.hi + 1e-9, (now, answer, exact)
            assert answer.width <= delta * (1 + 1e-9)
    assert net.coordinator.queue.late == 0


def test_padding_that_uses_all_of_delta_is_refused() -> None:
    with pytest.raises(ValueError, match="padding"):
        FilterNetwork(
            ["a", "b"],
            [Query.avg("q", ["a", "b"], 0.1)],
            10,
            0.05,
            np.random.default_rng(0),
            latency_ms=100,
            max_rates={"a": 1.0, "b": 1.0},  # φ = 2·1·0.1 s = 0.2 per object > δ
        )


def zero_latency(objects: list[str], queries: list[Query]) -> FilterNetwork:
    return FilterNetwork(objects, queries, 10, 0.1, np.random.default_rng(3))


def test_stronger_delta_immediately_sends_explicit_shrinks() -> None:
    net = zero_latency(["a", "b"], [Query.sum("s", ["a", "b"], 4.0)])
    net.update(0, "a", 0.0)
    net.update(0, "b", 0.0)
    log = net.alter_query("s", 1.0, immediately=True)
    assert [type(m).__name__ for m in log] == [
        "Shrink",
        "Shrink",
        "StreamedUpdate",
        "StreamedUpdate",
    ]
    assert all(m.forced for m in log[2:])  # the sources confirm with their current value
    assert net.answers()["s"].width == pytest.approx(1.0)
    assert net.counts.shrink == 4  # two at registration, two now


def test_stronger_delta_lazily_narrows_by_the_period_shrinks_without_growth() -> None:
    net = zero_latency(["a", "b"], [Query.sum("s", ["a", "b"], 4.0)])
    net.update(0, "a", 0.0)
    net.update(0, "b", 0.0)
    assert net.alter_query("s", 1.0) == []
    widths = []
    for t in range(10, 400, 10):
        log = net.update(t, "a", 0.0)
        widths.append(net.answers()["s"].width)
        if widths[-1] > 1.0:
            assert not any(type(m).__name__ == "Growth" for m in log)  # §3.4: growth suppressed
    assert widths[0] == pytest.approx(4.0 * 0.9)
    assert all(b <= a + 1e-12 for a, b in itertools.pairwise(widths))
    assert widths[-1] <= 1.0


def test_weaker_delta_is_absorbed_by_growth_at_the_next_boundary() -> None:
    net = zero_latency(["a", "b"], [Query.avg("q", ["a", "b"], 1.0)])
    net.update(0, "a", 0.0)
    net.update(0, "b", 0.0)
    assert net.alter_query("q", 3.0) == []
    net.update(5, "a", 0.6)  # escapes [−0.5, 0.5]: a sent in this period, 1.2 wide would do
    log = net.update(10, "a", 0.0)
    assert any(type(m).__name__ == "Growth" for m in log)
    assert net.answers()["q"].width == pytest.approx(3.0)


def test_removed_query_frees_its_objects_and_an_added_one_holds_at_once() -> None:
    net = zero_latency(["a", "b", "c"], [Query.avg("q", ["a", "b"], 2.0)])
    for o in "abc":
        net.update(0, o, 1.0)
    assert net.counts.streamed == 2  # c is in no query
    net.remove_query("q")
    assert all(math.isinf(w) for w in net.coordinator.widths().values())
    assert net.update(1, "a", 100.0) == []  # W = ∞: never sent
    log = net.add_query(Query.sum("t", ["a", "c"], 0.5))
    assert [type(m).__name__ for m in log].count("Shrink") == 2
    answer = net.answers()["t"]
    assert answer.lo <= 101.0 <= answer.hi and answer.width == pytest.approx(0.5)


def test_stronger_delta_without_shrinking_periods_is_shrunk_explicitly() -> None:
    """§3.4: with S = 0 no period shrink ever narrows a bound, so a lazily strengthened δ
    must be met by explicit shrinks, else the answer stays wider than δ for ever."""
    net = FilterNetwork(
        ["a", "b"], [Query.avg("q", ["a", "b"], 4.0)], 10, 0.0, np.random.default_rng(0)
    )
    net.update(0, "a", 1.0)
    net.update(0, "b", 1.0)
    net.alter_query("q", 1.0)
    net.advance(1_000)
    assert net.answers()["q"].width <= 1.0 * (1 + 1e-12)
