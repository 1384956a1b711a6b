"""Simulated networks of ``m`` monitor nodes and the coordinator (Babcock & Olston 2003).

:class:`TopKNetwork` runs every resolution to completion before :meth:`TopKNetwork.update`
returns (the "instantaneous resolution" of §3.1), so between calls no resolution is pending
and :meth:`TopKNetwork.answer` is valid within ε. :class:`DelayedNetwork` delivers every
message ``delay`` time units after it was sent (FIFO per channel, Appendix A's reliable
channels), so updates keep arriving while a resolution is under way. Both send over a
:class:`~tsmon.engine.transport.Link` (instant, or a fixed delay; a loss rule drops messages,
which the protocol does not survive: Appendix A assumes reliable channels), which counts every
message sent in ``counts`` (kinds and entries per message, §4.2).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tsmon.engine.transport import Delay, FixedDelay, Link, Loss, no_delay
from tsmon.protocols.topk.coordinator import Coordinator, Policy
from tsmon.protocols.topk.messages import (
    MessageCounts,
    Obj,
    ToCoordinator,
    ToNode,
)
from tsmon.protocols.topk.node import MonitorNode
from tsmon.protocols.topk.resolver import Resolver


class _Network:
    """Nodes, a serialized coordinator and a message pump; subclasses decide when to deliver."""

    def __init__(
        self,
        m: int,
        k: int,
        eps: int,
        policy: Policy | None,
        initial: Sequence[Mapping[Obj, int]] | None,
        bottom: bool,
        theta: int | None,
        delay: Delay = no_delay,
        loss: Loss | None = None,
    ) -> None:
        self.nodes = [MonitorNode(j, k, bottom, theta) for j in range(1, m + 1)]
        self.resolver = Resolver(Coordinator(m, k, eps, policy, bottom))
        self.counts = MessageCounts()
        self.link: Link[ToNode | ToCoordinator] = Link(delay, loss, self._count)
        if initial is not None:
            if len(initial) != m:
                raise ValueError(f"initial needs one mapping per node ({m}), got {len(initial)}")
            for node, values in zip(self.nodes, initial, strict=True):
                for obj, value in values.items():
                    node.update(obj, value)
                node.updates = 0
                node.fresh.clear()  # the initial gather names them
                node.awaiting = False

    @property
    def coordinator(self) -> Coordinator:
        return self.resolver.coordinator

    @property
    def eps(self) -> int:
        return self.coordinator.eps

    @property
    def resolutions(self) -> int:
        """Requests (and offloads) the coordinator took up."""
        return self.resolver.resolutions

    def answer(self) -> frozenset[Obj]:
        """The approximate top-k set ``T``, valid within ε when nothing is pending (§1.3)."""
        return self.coordinator.top

    def _count(self, messages: Sequence[ToNode | ToCoordinator]) -> None:
        for message in messages:
            self.counts.add(message)

    def _deliver(self, message: ToNode | ToCoordinator) -> list[ToNode | ToCoordinator]:
        """Hand ``message`` to its receiver; what it sends back."""
        if isinstance(message, ToCoordinator):
            return list(self.resolver.on_message(message))
        answer = self.nodes[message.node - 1].on_message(message)
        return [] if answer is None else [answer]


class TopKNetwork(_Network):
    """``m`` nodes, a coordinator, top-``k`` (or bottom-``k``) within integer ``eps``, zero
    latency.

    ``initial[j-1]`` holds node ``N_j``'s partial values before monitoring starts. The initial
    top-k costs one gather (``m`` requests, ``m`` replies) and ``m`` installs. ``theta`` enables
    Appendix C's offloading of decreases that break more than ``theta`` constraints.

    Examples
    --------
    >>> net = TopKNetwork(2, 1, 0, initial=[{"a": 9, "b": 1}, {"a": 1, "b": 3}])
    >>> net.answer(), net.counts.total
    (frozenset({'a'}), 6)
    >>> net.update(2, "b", 5)  # V_b = 9 < 10 = V_a: a Phase 2 or 3 resolution, no change
    >>> net.update(2, "b", 2)  # V_b = 11 > 10
    >>> net.answer()
    frozenset({'b'})
    """

    def __init__(
        self,
        m: int,
        k: int,
        eps: int,
        policy: Policy | None = None,
        initial: Sequence[Mapping[Obj, int]] | None = None,
        bottom: bool = False,
        theta: int | None = None,
    ) -> None:
        super().__init__(m, k, eps, policy, initial, bottom, theta)
        self._pump(self.resolver.start())

    def _send(self, messages: Sequence[ToNode | ToCoordinator]) -> None:
        for message in messages:  # FIFO per direction, messages to the coordinator first
            self.link.send([message], 0, 1 - isinstance(message, ToCoordinator))

    def _pump(self, messages: Sequence[ToNode | ToCoordinator]) -> None:
        """Send ``messages`` and deliver until none is left."""
        self._send(messages)
        while self.link:
            self._send(self._deliver(self.link.pop()[1]))

    def update(self, node: int, obj: Obj, delta: int) -> None:
        """``(O_i, N_j, Δ)`` at node ``node`` (1..m), with any resolution run to completion."""
        request = self.nodes[node - 1].update(obj, delta)
        if request is not None:
            self._pump([request])


class DelayedNetwork(_Network):
    """The same protocol with every message delivered ``delay`` time units after it is sent.

    Time is an argument: :meth:`update` applies an update at time ``now`` after delivering
    every message due by then; :meth:`settle` delivers everything still in flight. ``loss``
    (a rule of :mod:`tsmon.engine.transport`) drops messages, counted in ``link.dropped``.
    :attr:`quiet` says no message is in flight and no node awaits an answer: then, by the
    convergence property of Appendix A, the answer is valid within ε.

    Examples
    --------
    >>> net = DelayedNetwork(2, 1, 0, delay=2, initial=[{"a": 5}, {"b": 1}])
    >>> net.update(0, 1, "b", 9)  # the gather is still on its way
    >>> net.settle(); net.answer()
    frozenset({'b'})
    """

    def __init__(
        self,
        m: int,
        k: int,
        eps: int,
        delay: int,
        policy: Policy | None = None,
        initial: Sequence[Mapping[Obj, int]] | None = None,
        bottom: bool = False,
        theta: int | None = None,
        start: int = 0,
        loss: Loss | None = None,
    ) -> None:
        super().__init__(m, k, eps, policy, initial, bottom, theta, FixedDelay(delay), loss)
        self.delay = delay
        self.now = start
        self.link.send(self.resolver.start(), self.now)

    def run_until(self, now: int) -> None:
        """Deliver every message due at or before ``now``, in send order per due time."""
        if now < self.now:
            raise ValueError(f"time must not go back: at {self.now}, got {now}")
        while (head := self.link.next_due()) is not None and head[0] <= now:
            self.now, message = self.link.pop()
            self.link.send(self._deliver(message), self.now)
        self.now = now

    def update(self, now: int, node: int, obj: Obj, delta: int) -> None:
        """``(O_i, N_j, Δ)`` at time ``now``, after the messages due by then."""
        self.run_until(now)
        request = self.nodes[node - 1].update(obj, delta)
        if request is not None:
            self.link.send([request], self.now)

    def settle(self) -> None:
        """Deliver messages until none is in flight."""
        while (head := self.link.next_due()) is not None:
            self.run_until(head[0])

    @property
    def quiet(self) -> bool:
        """Nothing in flight, nothing queued, no node awaiting an answer."""
        return (
            not self.link
            and not self.resolver.busy
            and not any(n.awaiting or n.fresh for n in self.nodes)
        )
