"""Bounded aggregates under random runs: every known answer holds the exact aggregate of the
series' values as of its ``as_of_ms`` (BatchedRuntime against an independent oracle; the Spark
host's pickling of every node each batch changes no answer). Widths are not checked here: an
answer as of a time before the sources' replies is wider than δ for a while (§4)."""

from __future__ import annotations

import math
import pickle
import statistics

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from tsmon.engine.batched import BatchedRuntime

SOURCES = ("n1", "n2", "n3")
SERIES = tuple(f"s.{i}" for i in range(4))
OF = {"AVG": statistics.fmean, "SUM": math.fsum, "MIN": min, "MAX": max}
VALUES = st.integers(0, 20).map(lambda v: v / 20)


def test_a_shrink_after_a_value_sent_and_dropped_at_the_node_time() -> None:
    """At 4 ms, 5.7 is sent and 5.3 dropped (inside [5.2, 6.2]); the shrink that follows is
    answered as of 3 ms with 5.3, the value then: 5.3 goes at 4 ms too, else the coordinator
    keeps 5.7 from 4 ms on with the new width (found by the machine below)."""
    rt = BatchedRuntime(period_ms=10, shrink=0.1, seed=0, queries="QUERY q AS AVG(s.a) WITHIN 1")
    for t in range(3):
        rt.run_batch([("n1", "s.a", t, 5.0)], clock_ms=0)
    rt.run_batch([("n1", "s.a", 3, 5.3), ("n1", "s.a", 4, 5.7), ("n1", "s.a", 4, 5.3)], clock_ms=0)
    rt.alter_query("q", 0.2, immediately=True)
    for points in ([], [], [("n1", "x", 60, 0.0)]):  # the shrink out, the reply back, 59 ms
        answer = rt.run_batch(points, clock_ms=0)["q"]
    assert answer.as_of_ms == 59
    assert answer.lo <= 5.3 <= answer.hi and answer.width <= 0.2 * (1 + 1e-9)


class Bounded(RuleBasedStateMachine):
    @initialize(
        homes=st.lists(st.sampled_from(SOURCES), min_size=len(SERIES), max_size=len(SERIES)),
        glob=st.sampled_from(sorted(OF)),
        other=st.sampled_from(sorted(OF)),
        named=st.sampled_from(sorted(OF)),
        deltas=st.lists(st.sampled_from([0.25, 0.5, 1.0, 2.0]), min_size=3, max_size=3),
    )
    def start(self, homes, glob, other, named, deltas) -> None:
        self.home = dict(zip(SERIES, homes, strict=True))
        self.queries = {  # name -> (aggregate, series or None for the glob, δ)
            "g": (glob, None, deltas[0]),
            "h": (other, None, deltas[1]),
            "e": (named, ("s.0", "s.1"), deltas[2]),
        }
        text = "\n".join(
            f"QUERY {n} AS {a}({'s.*' if s is None else ', '.join(s)}) WITHIN {d:g}"
            for n, (a, s, d) in self.queries.items()
        )
        self.rt = BatchedRuntime(period_ms=10, shrink=0.1, seed=0, queries=text)
        self.twin = BatchedRuntime(period_ms=10, shrink=0.1, seed=0, queries=text)
        self.now: dict[str, int] = {}  # each source's time
        self.newest: dict[str, int] = {}  # each series' newest ts
        self.applied: dict[str, list[tuple[int, float]]] = {}  # at the node's times
        self.coordinator: int | None = None
        self.batches = 0

    @rule(data=st.data(), n=st.integers(0, 12))
    def batch(self, data, n) -> None:
        base = 10 * self.batches
        points = [
            (self.home[s], s, t, v)
            for s, t, v in data.draw(
                st.lists(
                    st.tuples(
                        st.sampled_from(SERIES), st.integers(max(0, base - 3), base + 3), VALUES
                    ),
                    min_size=n,
                    max_size=n,
                )
            )
        ]
        self.send(points)

    def send(self, points: list[tuple[str, str, int, float]]) -> None:
        """One batch of ``points`` to both runtimes and the oracle, then the check."""
        self.batches += 1
        for src, series, ts, value in sorted(points, key=lambda p: p[2]):
            if series.startswith("t."):  # read by no query
                self.now[src] = max(ts, self.now.get(src, ts))
                continue
            if ts < self.newest.get(series, ts):
                continue  # stale: a dead letter without registers
            self.newest[series] = ts
            self.now[src] = max(ts, self.now.get(src, ts))
            self.applied.setdefault(series, []).append((self.now[src], value))
        if self.now:
            time = min(self.now.values()) - 1
            self.coordinator = time if self.coordinator is None else max(self.coordinator, time)
        self.rt.run_batch(points, clock_ms=10**9)
        self.twin.run_batch(points, clock_ms=10**9)
        nodes = self.twin.nodes
        for key in list(nodes):  # as the Spark host: every node pickled each batch
            nodes[key] = pickle.loads(pickle.dumps(nodes[key]))
        self.twin.coordinator = pickle.loads(pickle.dumps(self.twin.coordinator))
        self.check()

    @rule(
        series=st.sampled_from(SERIES),
        dt=st.integers(0, 2),
        values=st.lists(VALUES, min_size=1, max_size=2),
    )
    def instant(self, series, dt, values) -> None:
        """Several values of one series at one instant, the last its value before: it may
        come back inside the bound of one sent at that instant."""
        at = self.now.get(self.home[series], 10 * self.batches) + dt
        values += [v for _, v in self.applied.get(series, [])[-1:]]
        self.send([(self.home[series], series, at, v) for v in values])

    @precondition(lambda self: self.now)
    @rule(dt=st.integers(1, 30))
    def advance(self, dt) -> None:
        """Every source moves on by a point of a series no query reads."""
        at = max(self.now.values()) + dt
        self.send([(src, f"t.{src}", at, 0.0) for src in sorted(self.now)])

    @precondition(lambda self: self.queries)
    @rule(data=st.data(), delta=st.sampled_from([0.1, 0.25, 0.5, 1.0]), now=st.booleans())
    def alter(self, data, delta, now) -> None:
        name = data.draw(st.sampled_from(sorted(self.queries)))
        a, s, _ = self.queries[name]
        self.queries[name] = (a, s, delta)
        for rt in (self.rt, self.twin):
            rt.alter_query(name, delta, immediately=now)

    @precondition(lambda self: len(self.queries) > 1)
    @rule(data=st.data())
    def remove(self, data) -> None:
        name = data.draw(st.sampled_from(sorted(self.queries)))
        del self.queries[name]
        for rt in (self.rt, self.twin):
            rt.remove_query(name)

    def value_at(self, series: str, t: int) -> float | None:
        before = [v for at, v in self.applied.get(series, []) if at <= t]
        return before[-1] if before else None

    def check(self) -> None:
        answers, twins = self.rt.answers(), self.twin.answers()
        for name, (aggregate, named, _) in self.queries.items():
            answer = answers.get(name)
            assert repr(answer) == repr(twins.get(name)), name
            if answer is None or math.isnan(answer.value):
                continue
            assert answer.as_of_ms == self.coordinator
            over = named or sorted(s for s in self.applied)
            values = [self.value_at(s, answer.as_of_ms) for s in over]
            assert None not in values, (name, answer, values)
            exact = OF[aggregate](values)
            assert answer.lo <= exact <= answer.hi, (name, aggregate, answer, exact)


Bounded.TestCase.settings = settings(max_examples=400, stateful_step_count=20, deadline=None)
test_bounded_machine = Bounded.TestCase
