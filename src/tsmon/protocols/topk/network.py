"""Zero-latency harness: ``m`` monitor nodes and the coordinator (Babcock & Olston 2003, §3).

Every update is applied at its node and any resolution it triggers runs to completion before
:meth:`TopKNetwork.update` returns (the "instantaneous resolution" of §3.1), so between calls
no resolution is pending and :meth:`TopKNetwork.answer` is valid within ε. Every message is
counted in :attr:`TopKNetwork.counts` (kinds and entries per message, §4.2).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tsmon.protocols.topk.coordinator import Coordinator, Policy
from tsmon.protocols.topk.messages import Install, MessageCounts, Obj, ValueRequest
from tsmon.protocols.topk.node import MonitorNode


class TopKNetwork:
    """``m`` nodes, a coordinator, top-``k`` within integer ``eps``.

    ``initial[j-1]`` holds node ``N_j``'s partial values before monitoring starts; together
    they must name at least ``k`` objects. The initial top-k costs one gather (``m`` requests,
    ``m`` replies) and ``m`` installs.

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
    ) -> None:
        self.nodes = [MonitorNode(j) for j in range(1, m + 1)]
        self.coordinator = Coordinator(m, k, eps, policy)
        self.counts = MessageCounts()
        self.resolutions = 0
        if initial is not None:
            if len(initial) != m:
                raise ValueError(f"initial needs one mapping per node ({m}), got {len(initial)}")
            for node, values in zip(self.nodes, initial, strict=True):
                for obj, value in values.items():
                    node.update(obj, value)  # T is empty: no constraint yet
                node.updates = 0
        replies = self._gather(self.coordinator.full_request())
        self._deliver(self.coordinator.initialize(replies))

    @property
    def eps(self) -> int:
        return self.coordinator.eps

    def _gather(self, requests: list[ValueRequest]) -> list:
        replies = []
        for r in requests:
            self.counts.add(r)
            reply = self.nodes[r.node - 1].reply(r.objects)
            self.counts.add(reply)
            replies.append(reply)
        return replies

    def _deliver(self, installs: list[Install]) -> None:
        for message in installs:
            self.counts.add(message)
            self.nodes[message.node - 1].install(message)

    def update(self, node: int, obj: Obj, delta: int) -> None:
        """``(O_i, N_j, Δ)`` at node ``node`` (1..m), with any resolution run to completion."""
        request = self.nodes[node - 1].update(obj, delta)
        if request is None:
            return
        self.resolutions += 1
        self.counts.add(request)
        out = self.coordinator.on_request(request)
        if out and isinstance(out[0], ValueRequest):
            out = self.coordinator.on_replies(self._gather(out))  # Phase 3 / full refresh
        self._deliver(out)

    def answer(self) -> frozenset[Obj]:
        """The approximate top-k set ``T``, valid within ε (§1.3)."""
        return self.coordinator.top
