"""Serialized resolution at the coordinator (Babcock & Olston 2003, Appendix A and C).

:class:`Resolver` puts the :class:`~tsmon.protocols.topk.coordinator.Coordinator` behind one
message handler, so any host (zero latency, simulated delays, Spark micro-batches) drives it
the same way: messages in, messages out.

* **Serialized** (Appendix A): one Phase 3 (or offload) at a time; requests that come while
  Phase 3 gathers values, or while an offload is being placed, wait in a queue.
* **Folded** (a choice the paper leaves open): when the coordinator is free again it takes up
  every queued request at once (:meth:`Coordinator.on_requests`): each tries Phase 2, and those
  that fail share one Phase 3 over the union of their resolution sets. Hosts that deliver many
  messages at once (a micro-batch) pass them to :meth:`Resolver.on_messages`, which takes up
  requests only after all of them are in. So ``n`` nodes asking together cost one round of
  control, not ``n`` one after another (a source that asks in every batch could otherwise
  keep the others waiting: the installs of its Phase 3 made their queued requests stale).
* **Fair** order within a fold: the node that has waited longest tries Phase 2 first, counted
  from its oldest request not yet taken up (the coordinator's slack goes to it first). A node
  whose request went stale keeps its place for the request it sends as soon as it has the
  install that made it stale (recognized by its version); a later request, after the node's
  constraints held again, waits from its own arrival.
* **Stale requests dropped**: a request from an earlier epoch, or sent by a node before an
  install or shift the coordinator had already sent it (the request's ``version`` is behind),
  is ignored and counted in :attr:`Resolver.stale`. The node gets that install, checks its
  constraints again and asks anew if they still break, so every violation is eventually
  resolved.
* **Offloads** (Appendix C) are never dropped: the node already cancelled its update by
  ``δ_ij += Δ``, so the coordinator must place ``−Δ`` somewhere to keep ``Σ_j δ_ij = 0``. It
  asks the other nodes how many constraints ``(O_i, N_j', −Δ)`` would break and shifts the
  decrease to the one with the fewest (the phantom counts as more than any number). An
  offload still queued when a Phase 3 or gather reply of its node comes in is taken into that
  reply instead (:meth:`Resolver._fold`).
"""

from __future__ import annotations

import dataclasses
from collections import deque

from tsmon.protocols.topk.coordinator import Coordinator
from tsmon.protocols.topk.messages import (
    CountReply,
    CountRequest,
    Install,
    Obj,
    Offload,
    ResolutionRequest,
    Shift,
    ToCoordinator,
    ToNode,
    ValueReply,
    ValueRequest,
)


class Resolver:
    """The coordinator's message handler: :meth:`start` the initial gather, then
    :meth:`on_message` for every message from a node, in arrival order.

    Examples
    --------
    >>> from tsmon.protocols.topk.node import MonitorNode
    >>> nodes = {1: MonitorNode(1, k=1), 2: MonitorNode(2, k=1)}
    >>> resolver = Resolver(Coordinator(2, 1, 0))
    >>> replies = [nodes[r.node].on_message(r) for r in resolver.start()]
    >>> out = [m for r in replies for m in resolver.on_message(r)]  # T = {} installed
    >>> [nodes[m.node].on_message(m) for m in out]
    [None, None]
    >>> request = nodes[1].update("a", 2)  # a new object while |T| < k
    >>> [type(m).__name__ for m in resolver.on_message(request)]
    ['ValueRequest']
    """

    def __init__(self, coordinator: Coordinator) -> None:
        self.coordinator = coordinator
        self.queue: deque[ResolutionRequest | Offload] = deque()
        self.sent = [0] * (coordinator.m + 1)  # installs and shifts sent to each node
        # bottom-k: the objects each node was given an entry for (every node needs one for
        # every known object, as there is no phantom to stand for the others)
        self.holds: list[set[Obj]] = [set() for _ in range(coordinator.m + 1)]
        self.stale = 0  # requests dropped (Appendix A)
        self._arrivals = 0  # requests and offloads received (the clock of _since)
        # node -> (arrival of its oldest request not taken up, the version its next request
        # has if it asks again at once after the install that made the last one stale)
        self._since: dict[int, tuple[int, int | None]] = {}
        self._held = False  # on_messages: take up requests only once the batch is in
        self.resolutions = 0  # requests taken up
        self._phase: str | None = None  # "gather", "phase3", "count" or None (idle)
        self._waiting: set[int] = set()
        self._replies: list[ValueReply] = []
        self._counts: list[CountReply] = []
        self._offload: Offload | None = None

    @property
    def phase(self) -> str | None:
        """What the coordinator waits for: ``"gather"`` (initial or after :meth:`restart`),
        ``"phase3"``, ``"count"`` (an offload), or ``None``."""
        return self._phase

    @property
    def busy(self) -> bool:
        """A resolution is under way or waiting in the queue."""
        return self._phase is not None or bool(self.queue)

    def start(self) -> list[ToNode]:
        """The one-time gather of every partial value (§3)."""
        return self._gather()

    def add_node(self) -> list[ToNode]:
        """Take in a new node (all partial values 0): it gets ``T`` in a first install, and
        only it. An install to the others would end the wait of a node that already answered
        a gather or full refresh still running: objects it saw since would keep the old
        ``d_j`` where the coordinator assumes the new one (Invariant 1, §3)."""
        c = self.coordinator
        j = c.add_node()
        self.sent.append(0)
        self.holds.append(set())
        return self._count([Install(j, {}, top=c.top, epoch=c.epoch)])

    def _gather(self) -> list[ToNode]:
        requests = self.coordinator.full_request()
        if requests:
            return self._ask(requests, "gather")
        return self._installs(self.coordinator.initialize([]))  # no node yet

    def restart(self, k: int, eps: int) -> list[ToNode]:
        """New ``k`` and ``ε`` (a query altered): a full gather and reallocation, as at the
        start. Only while idle (:attr:`busy` is false); the hosts hold the change until then.
        Requests already sent are stale after the gather's installs."""
        if self.busy:
            raise RuntimeError("restart only between resolutions")
        c = self.coordinator
        c.k, c.eps = k, eps
        return self._gather()

    def _ask(self, requests: list[ValueRequest], phase: str) -> list[ToNode]:
        self._phase, self._waiting, self._replies = phase, {r.node for r in requests}, []
        return list(requests)

    def _installs(self, installs: list[Install]) -> list[ToNode]:
        """A resolution's installs; when ``T`` changed, every node not in the resolution (one
        that joined while it ran) gets ``T'`` too, or its requests would stay in an old epoch."""
        c = self.coordinator
        if any(m.top is not None for m in installs):
            covered = {m.node for m in installs}
            installs = installs + [
                Install(j, {}, top=c.top, epoch=c.epoch)
                for j in range(1, c.m + 1)
                if j not in covered
            ]
        return self._count(installs)

    def _count(self, installs: list[Install]) -> list[ToNode]:
        """Count the installs (bottom-k: each with every known object the node lacks)."""
        c = self.coordinator
        if c.bottom:
            installs = self._with_known(installs)
        for m in installs:
            self.sent[m.node] += 1
            self.holds[m.node].update(m.deltas)
        return list(installs)

    def _with_known(self, installs: list[Install]) -> list[Install]:
        """Bottom-k: give every node an entry (``δ_ij = 0``, what the coordinator assumes of a
        node that never held the object) for each known object it lacks; a node that joined
        after an object was resolved could not see it beat a member of ``T`` otherwise."""
        c = self.coordinator
        by_node = {m.node: m for m in installs}
        for j in range(1, c.m + 1):
            m = by_node.get(j)
            missing = c.known - self.holds[j] - set(m.deltas if m is not None else ())
            if not missing:
                continue
            zeros = dict.fromkeys(sorted(missing, key=repr), 0)
            if m is None:
                by_node[j] = Install(j, zeros, epoch=c.epoch)
            else:
                by_node[j] = dataclasses.replace(m, deltas={**zeros, **m.deltas})
        return [by_node[j] for j in sorted(by_node)]

    def on_messages(self, messages: list[ToCoordinator]) -> list[ToNode]:
        """Take many messages at once (a host's batch); requests are taken up, longest-waiting
        node first, after every message is in."""
        self._held = True
        try:
            out = [m for message in messages for m in self.on_message(message)]
        finally:
            self._held = False
        return out + self._drain()

    def on_message(self, message: ToCoordinator) -> list[ToNode]:
        """Take one message from a node; return what the coordinator sends in answer."""
        if isinstance(message, ResolutionRequest | Offload):
            self._arrivals += 1
            if isinstance(message, ResolutionRequest):
                since = self._since.get(message.node)
                if since is None or message.version != since[1]:  # not a retry: a new wait
                    self._since[message.node] = (self._arrivals, None)
            self.queue.append(message)
            return self._drain()
        if isinstance(message, ValueReply):
            return self._on_reply(message)
        if isinstance(message, CountReply):
            return self._on_count(message)
        raise TypeError(f"the coordinator cannot handle {type(message).__name__}")

    def _on_reply(self, reply: ValueReply) -> list[ToNode]:
        if self._phase not in ("gather", "phase3") or reply.node not in self._waiting:
            raise ValueError(f"unexpected value reply from node {reply.node}")
        self._waiting.discard(reply.node)
        self._replies.append(reply)
        if self._waiting:
            return []
        phase, self._phase = self._phase, None
        replies = self._fold(sorted(self._replies, key=lambda r: r.node))
        c = self.coordinator
        out = self._installs(c.initialize(replies)) if phase == "gather" else None
        return (out if out is not None else self._answer(c.on_replies(replies))) + self._drain()

    def _answer(self, answer: list[ToNode]) -> list[ToNode]:
        """Send the coordinator's answer: installs (Phase 2, or the end of a resolution), then
        the requests of a Phase 3 (all of it, the probe, or the rest after a probe)."""
        c = self.coordinator
        installs = [m for m in answer if isinstance(m, Install)]
        asks = [m for m in answer if isinstance(m, ValueRequest)]
        out = self._installs(installs) if installs else []
        if asks:
            return out + self._ask(asks, "phase3")
        if c.resolving:  # Phase 3 with no other node to ask (m = 1)
            return out + self._answer(c.on_replies([]))
        return out

    def _fold(self, replies: list[ValueReply]) -> list[ValueReply]:
        """Take the queued offloads of the nodes that replied into their replies.

        A node offloads only while it awaits nothing, so its queued offloads were sent before
        its reply, which shows each decrease cancelled (``δ_ij + Δ``) while ``−Δ`` is placed
        nowhere yet: reallocating from it would carry ``Σ_j δ_ij + δ_i0 = Δ`` into every new
        ``δ`` (Invariants 1 and 2, §3). The reply is read as if the decrease had not been
        cancelled (``δ_ij``), its border ``B_j`` too (the object is in ``T``, so
        ``B_j ≤ V_ij + δ_ij``, §3.1); the install then sets ``δ_ij`` from the true sum, which
        places the decrease, and the offload (Appendix C) is done."""
        values = {r.node: dict(r.values) for r in replies}
        borders = {r.node: r.border for r in replies}
        kept: deque[ResolutionRequest | Offload] = deque()
        for m in self.queue:
            entries = values.get(m.node) if isinstance(m, Offload) else None
            if entries is None or m.obj not in entries:
                kept.append(m)
                continue
            v, d = entries[m.obj]
            entries[m.obj] = (v, d - m.delta)
            border = borders[m.node]
            if border is not None and m.obj in self.coordinator.top:
                borders[m.node] = min(border, v + d - m.delta)
        self.queue = kept
        return [
            dataclasses.replace(r, values=values[r.node], border=borders[r.node]) for r in replies
        ]

    def _on_count(self, reply: CountReply) -> list[ToNode]:
        if self._phase != "count" or reply.node not in self._waiting:
            raise ValueError(f"unexpected count reply from node {reply.node}")
        self._waiting.discard(reply.node)
        self._counts.append(reply)
        if self._waiting:
            return []
        self._phase = None
        return self._place() + self._drain()

    def _place(self) -> list[ToNode]:
        """Shift the offloaded decrease to the node that breaks the fewest constraints."""
        offload, self._offload = self._offload, None
        assert offload is not None
        best = min(self._counts, key=lambda r: (r.phantom, r.violated, r.node), default=None)
        target = offload.node if best is None else best.node
        self.sent[target] += 1
        return [Shift(target, offload.obj, offload.delta, self.coordinator.epoch)]

    def _take(self) -> Offload | list[ResolutionRequest]:
        """The first queued offload (in arrival order: never dropped, its decrease must be
        placed), else every queued request, the node that has waited longest first."""
        for n, m in enumerate(self.queue):
            if isinstance(m, Offload):
                del self.queue[n]
                return m
        requests = [m for m in self.queue if isinstance(m, ResolutionRequest)]
        self.queue.clear()
        return sorted(requests, key=lambda r: self._since[r.node][0])

    def _drain(self) -> list[ToNode]:
        """Take up queued requests until one needs answers from the nodes: an offload, or the
        requests still current, folded (:meth:`Coordinator.on_requests`)."""
        out: list[ToNode] = []
        c = self.coordinator
        while self._phase is None and self.queue and not self._held:
            taken = self._take()
            if isinstance(taken, Offload):
                self.resolutions += 1
                others = [j for j in range(1, c.m + 1) if j != taken.node]
                self._offload, self._counts = taken, []
                if not others:
                    out += self._place()
                    continue
                self._phase, self._waiting = "count", set(others)
                out += [CountRequest(j, taken.obj, taken.delta) for j in others]
                continue
            current = []
            for request in taken:
                if request.epoch < c.epoch or request.version < self.sent[request.node]:
                    self.stale += 1
                    if request.node in self._since:  # it keeps its place if it asks again
                        self._since[request.node] = (
                            self._since[request.node][0],
                            self.sent[request.node],
                        )
                    continue
                self.resolutions += 1
                self._since.pop(request.node, None)
                current.append(request)
            if current:
                out += self._answer(c.on_requests(current))
        return out
