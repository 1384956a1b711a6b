"""SWAT-ASR and the §4 baselines as a state machine: values, queries and phase ends in any order.

Rules: a value arrives at the source; a client asks a random inner-product query; a phase ends.
Invariants after every step: each answer is within its precision of the exact answer (numpy
over the raw stream), every delivered message was counted (once per link it crossed), and the
directories are consistent (§3; after a phase end, counts and interested lists are reset).
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from tsmon.protocols.replication import AdaptivePrecision, DivergenceCaching
from tsmon.sim.replication import AsrNetwork, ItemNetwork


@st.composite
def trees(draw: st.DrawFn) -> dict[int, int]:
    """A random tree of 1..7 clients under the source 0 (client i's parent is < i)."""
    n = draw(st.integers(1, 7))
    return {c: draw(st.integers(0, c - 1)) for c in range(1, n + 1)}


class Replication(RuleBasedStateMachine):
    @initialize(
        scheme=st.sampled_from(["asr", "asr", "asr-slack", "asr-slack", "dc", "aps"]),
        parents=trees(),
        window=st.sampled_from([8, 16]),
        k=st.sampled_from([1, 1, 2]),
        start=st.lists(st.integers(0, 40), min_size=16, max_size=16),
    )
    def setup(self, scheme, parents, window, k, start):
        if scheme.startswith("asr"):  # asr-slack: copies with slack (AsrSite)
            self.net = AsrNetwork(parents, window, k, 0.5 if scheme == "asr-slack" else None)
            sites = [self.net.source, *self.net.clients.values()]
        else:
            policy = AdaptivePrecision() if scheme == "aps" else DivergenceCaching(max_range=40)
            self.net = ItemNetwork(parents, window, policy)
            sites = [self.net.server, *self.net.clients.values()]
        self.scheme, self.window, self.now = scheme, window, 0
        self.delivered = self.links = 0
        for site in sites:  # count deliveries independently of MessageCounts
            site.on_message = self._counting(site.on_message)
        self.x: list[float] = []
        for v in start[:window]:
            self.arrive(v)

    def _counting(self, handler):
        def counted(m, now_ms):
            self.delivered += 1
            client = m.receiver if m.sender == 0 else m.sender
            self.links += 1 if self.scheme.startswith("asr") else self.net.depth[client]
            return handler(m, now_ms)

        return counted

    @rule(v=st.integers(0, 40))
    def arrive(self, v):
        self.now += 1
        self.x.append(float(v))
        self.net.arrive(float(v), self.now)

    @rule(data=st.data())
    def ask(self, data):
        client = data.draw(st.sampled_from(sorted(self.net.clients)))
        n = min(len(self.x), self.window)
        m = data.draw(st.integers(1, n))
        p = data.draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
        w = data.draw(
            st.lists(st.sampled_from([0.0, 0.25, 1.0, -1.0, 3.0]), min_size=m, max_size=m)
        )
        delta = data.draw(st.sampled_from([0.0, 1.0, 5.0, 20.0, 100.0, 1e4]))
        a = self.net.query(client, p, w, delta, self.now)
        exact = float(np.dot(w, np.asarray(self.x)[len(self.x) - 1 - np.asarray(p)]))
        assert abs(a.value - exact) <= delta + 1e-9 * (1 + abs(exact)), (a, exact, delta)
        assert a.bound <= delta + 1e-12
        self.net.check()

    @rule()
    def phase(self):
        self.now += 1
        self.net.end_phase(self.now)
        self.net.check(after_phase=True)

    @invariant()
    def every_message_is_counted(self):
        if not hasattr(self, "net"):
            return
        counts = self.net.counts
        assert counts.end_to_end == self.delivered
        assert counts.total == self.links == sum(counts.by_kind.values())
        assert counts.packets <= counts.total

    @invariant()
    def directories_are_consistent(self):
        if hasattr(self, "net"):
            self.net.check()


Replication.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestReplication = Replication.TestCase
