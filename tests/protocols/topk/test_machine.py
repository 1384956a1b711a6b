"""Top-k monitoring (Babcock & Olston 2003) as a state machine: updates, deliveries in any order
across channels, node joins and query alters interleave freely.

Every link between the coordinator and node ``N_j`` is a pair of FIFO channels (Appendix A's
reliable channels: an instant :class:`~tsmon.engine.transport.Link` each way); a rule delivers
the head of any non-empty channel, so messages on different links overtake each other as they
would under any delays, or hands the heads of every link to the coordinator at once
(:meth:`Resolver.on_messages`, the micro-batch path). Invariants after every step: every message
sent is counted once (by kind, in ``MessageCounts``, by its channel when sent) and either
delivered or still in its channel; Invariant 2 (``δ_t0 + ε ≥ δ_s0``) at the coordinator (but
during an alter's gather); and whenever the network is quiet (nothing in flight or queued, no
node awaiting), Invariant 1 (``Σ_j δ_ij = 0``) exactly, every local constraint, one ``T``
everywhere and ``T`` ε-valid against the exact sums. Once the updates stop, delivering
everything makes the network quiet (Appendix A's convergence).
"""

from __future__ import annotations

from fractions import Fraction

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from tests.protocols.topk.streams import Oracle, check_invariant_2, check_invariants
from tsmon.engine.transport import Link
from tsmon.protocols.topk.coordinator import Policy
from tsmon.protocols.topk.messages import ToCoordinator, ToNode
from tsmon.protocols.topk.node import MonitorNode
from tsmon.sim.topk.network import _Network

QUARTER_EVEN = Policy(Fraction(1, 4), False)
PROBE_1_2 = Policy(probe=(1, 2), probe_min=1)  # probes of one, then two nodes, from m = 3 on


class Channels(_Network):
    """Nodes and the coordinator joined by one FIFO channel per link and direction."""

    def __init__(self, m: int, k: int, eps: int, policy: Policy, bottom: bool, theta) -> None:
        super().__init__(m, k, eps, policy, None, bottom, theta)
        self.k, self.bottom, self.theta = k, bottom, theta
        self.up: dict[int, Link[ToCoordinator]] = {}
        self.down: dict[int, Link[ToNode]] = {}
        for j in range(1, m + 1):
            self._open(j)
        self._to_nodes(self.resolver.start())

    def _open(self, j: int) -> None:
        self.up[j], self.down[j] = Link(count=self._count), Link(count=self._count)

    def _to_nodes(self, messages: list[ToNode]) -> None:
        for message in messages:
            self.down[message.node].send([message], 0)

    def _to_coordinator(self, message: ToCoordinator | None) -> None:
        if message is not None:
            self.up[message.node].send([message], 0)

    def _channels(self) -> list[Link]:
        return [*self.up.values(), *self.down.values()]

    @property
    def sent(self) -> int:
        return sum(c.sent for c in self._channels())

    @property
    def delivered(self) -> int:
        return sum(c.delivered for c in self._channels())

    def update(self, j: int, obj: int, delta: int) -> None:
        self._to_coordinator(self.nodes[j - 1].update(obj, delta))

    def deliver_down(self, j: int) -> None:
        _, message = self.down[j].pop()
        self._to_coordinator(self.nodes[j - 1].on_message(message))

    def deliver_up(self, j: int) -> None:
        _, message = self.up[j].pop()
        self._to_nodes(self.resolver.on_message(message))

    def deliver_batch(self) -> None:
        """The head of every link's up channel, to the coordinator at once."""
        batch = [q.pop()[1] for q in self.up.values() if q]
        self._to_nodes(self.resolver.on_messages(batch))

    def join(self) -> None:
        j = len(self.nodes) + 1
        self.nodes.append(MonitorNode(j, self.k, self.bottom, self.theta))
        self._open(j)
        self._to_nodes(self.resolver.add_node())

    def alter(self, k: int, eps: int) -> None:
        self.k = k
        for node in self.nodes:  # the new k reaches the sources with the gather (as hosted)
            node.k = k
        self._to_nodes(self.resolver.restart(k, eps))

    def in_flight(self) -> int:
        return sum(map(len, self._channels()))

    @property
    def quiet(self) -> bool:
        return (
            not self.in_flight()
            and not self.resolver.busy
            and not any(n.awaiting or n.fresh for n in self.nodes)
        )


class TopKMachine(RuleBasedStateMachine):
    @initialize(
        m=st.integers(1, 4),
        k=st.integers(1, 3),
        eps=st.sampled_from([0, 0, 1, 3, 10]),
        bottom=st.booleans(),
        theta=st.sampled_from([None, None, 0, 1, 20]),
        policy=st.sampled_from(
            [Policy.paper(), Policy(), Policy(0, False), Policy(1, True), QUARTER_EVEN, PROBE_1_2]
        ),
    )
    def setup(self, m, k, eps, bottom, theta, policy):
        self.net = Channels(m, k, eps, policy, bottom, theta)
        self.k, self.eps, self.bottom = k, eps, bottom
        self.oracle = Oracle()
        self.partial: dict[tuple[int, int], int] = {}  # (node, object) -> V_ij, kept apart

    @rule(data=st.data(), obj=st.integers(0, 6), delta=st.integers(-4, 5))
    def update(self, data, obj, delta):
        j = data.draw(st.integers(1, len(self.net.nodes)), label="node")
        delta = max(delta, -self.partial.get((j, obj), 0))  # partial values stay ≥ 0
        self.partial[(j, obj)] = self.partial.get((j, obj), 0) + delta
        self.oracle.apply(obj, delta)
        self.net.update(j, obj, delta)

    @precondition(lambda self: self.net.in_flight())
    @rule(data=st.data())
    def deliver(self, data):
        links = [("down", j) for j, q in self.net.down.items() if q]
        links += [("up", j) for j, q in self.net.up.items() if q]
        way, j = data.draw(st.sampled_from(links), label="link")
        (self.net.deliver_down if way == "down" else self.net.deliver_up)(j)

    @precondition(lambda self: any(self.net.up.values()))
    @rule()
    def deliver_batch(self):
        self.net.deliver_batch()

    @precondition(lambda self: len(self.net.nodes) < 6)
    @rule()
    def join(self):
        self.net.join()

    @precondition(lambda self: not self.net.resolver.busy)
    @rule(k=st.integers(1, 3), eps=st.sampled_from([0, 1, 5]))
    def alter(self, k, eps):
        self.k, self.eps = k, eps
        self.net.alter(k, eps)

    @rule()
    def settle(self):
        """Deliver everything, link by link, until quiet (Appendix A: resolutions end)."""
        for _ in range(10_000):
            if self.net.quiet:
                break
            for j in list(self.net.down):
                while self.net.down[j]:
                    self.net.deliver_down(j)
                if self.net.up[j]:
                    self.net.deliver_up(j)
        assert self.net.quiet

    @invariant()
    def every_message_counted_once(self):
        net = self.net
        assert net.counts.total == net.sent == net.delivered + net.in_flight()

    @invariant()
    def invariant_2_at_the_coordinator(self):
        """Always, except while an alter's gather runs: the new ε applies from its
        reallocation on."""
        if self.net.resolver.phase != "gather":
            check_invariant_2(self.net.coordinator)

    @invariant()
    def valid_when_quiet(self):
        if not self.net.quiet:
            return
        check_invariants(self.net)  # Invariant 1 exactly, constraints, one T
        assert self.oracle.valid(self.net.answer(), self.eps, self.k, self.bottom)


TopKMachine.TestCase.settings = settings(
    max_examples=80, stateful_step_count=50, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)  # fmt: skip
test_topk_machine = TopKMachine.TestCase
