"""Simulated networks of ``m`` monitor nodes and the coordinator (Babcock & Olston 2003).

:class:`TopKNetwork` runs every resolution to completion before :meth:`TopKNetwork.update`
returns (the "instantaneous resolution" of §3.1), so between calls no resolution is pending
and :meth:`TopKNetwork.answer` is valid within ε. :class:`DelayedNetwork` delivers every
message ``delay`` time units after it was sent (FIFO per channel, Appendix A's reliable
channels), so updates keep arriving while a resolution is under way. Both count every message
in ``counts`` (kinds and entries per message, §4.2).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Mapping, Sequence

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
    ) -> None:
        self.nodes = [MonitorNode(j, k, bottom, theta) for j in range(1, m + 1)]
        self.resolver = Resolver(Coordinator(m, k, eps, policy, bottom))
        self.counts = MessageCounts()
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

    def _to_node(self, message: ToNode) -> ToCoordinator | None:
        return self.nodes[message.node - 1].on_message(message)


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
        self._pump(list(self.resolver.start()), [])

    def _pump(self, down: list[ToNode], up: list[ToCoordinator]) -> None:
        """Deliver messages (FIFO) until none is left."""
        while down or up:
            if up:
                message = up.pop(0)
                self.counts.add(message)
                down += self.resolver.on_message(message)
                continue
            message = down.pop(0)
            self.counts.add(message)
            answer = self._to_node(message)
            if answer is not None:
                up.append(answer)

    def update(self, node: int, obj: Obj, delta: int) -> None:
        """``(O_i, N_j, Δ)`` at node ``node`` (1..m), with any resolution run to completion."""
        request = self.nodes[node - 1].update(obj, delta)
        if request is not None:
            self._pump([], [request])


class DelayedNetwork(_Network):
    """The same protocol with every message delivered ``delay`` time units after it is sent.

    Time is an argument: :meth:`update` applies an update at time ``now`` after delivering
    every message due by then; :meth:`settle` delivers everything still in flight.
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
    ) -> None:
        if delay < 0:
            raise ValueError(f"delay must be ≥ 0, got {delay}")
        super().__init__(m, k, eps, policy, initial, bottom, theta)
        self.delay = delay
        self.now = start
        self._seq = itertools.count()
        self._flight: list[tuple[int, int, ToNode | ToCoordinator, bool]] = []
        for message in self.resolver.start():
            self._send(message, to_node=True)

    def _send(self, message: ToNode | ToCoordinator, *, to_node: bool) -> None:
        self.counts.add(message)
        heapq.heappush(self._flight, (self.now + self.delay, next(self._seq), message, to_node))

    def run_until(self, now: int) -> None:
        """Deliver every message due at or before ``now``, in send order per due time."""
        if now < self.now:
            raise ValueError(f"time must not go back: at {self.now}, got {now}")
        while self._flight and self._flight[0][0] <= now:
            due, _, message, to_node = heapq.heappop(self._flight)
            self.now = due
            if to_node:
                answer = self._to_node(message)  # type: ignore[arg-type]
                if answer is not None:
                    self._send(answer, to_node=False)
            else:
                for out in self.resolver.on_message(message):  # type: ignore[arg-type]
                    self._send(out, to_node=True)
        self.now = now

    def update(self, now: int, node: int, obj: Obj, delta: int) -> None:
        """``(O_i, N_j, Δ)`` at time ``now``, after the messages due by then."""
        self.run_until(now)
        request = self.nodes[node - 1].update(obj, delta)
        if request is not None:
            self._send(request, to_node=False)

    def settle(self) -> None:
        """Deliver messages until none is in flight."""
        while self._flight:
            self.run_until(self._flight[0][0])

    @property
    def quiet(self) -> bool:
        """Nothing in flight, nothing queued, no node awaiting an answer."""
        return (
            not self._flight
            and not self.resolver.busy
            and not any(n.awaiting or n.fresh for n in self.nodes)
        )
