"""Monitor node ``N_j`` of distributed top-k monitoring (Babcock & Olston 2003, §1.3, §3, §3.1).

The node holds integer partial values ``V_ij`` (updates ``(O_i, Δ)``, ``Δ`` possibly negative,
e.g. the cancelling update of a sliding window; a partial value never goes below zero),
integer adjustment factors ``δ_ij`` and the current top-k set ``T`` installed by the
coordinator. Its constraints (§3) are, for every ``O_t ∈ T`` and ``O_s ∉ T``,
``V_tj + δ_tj ≥ V_sj + δ_sj``; it checks them in ``O(log n)`` per update by tracking the
smallest adjusted value in ``T`` and the largest outside ``T`` with two heaps with lazy
deletion (footnote 1).

Objects the node never saw (new objects may appear at any node at any time, prior value zero,
§1.3) have ``V_ij = 0`` and adjustment ``default`` (``d_j``, zero until a full refresh changes
it); they act as one *phantom* object outside ``T`` whose adjusted value is ``d_j``. When the
node first sees an object it records ``δ_ij = d_j`` so later changes of ``d_j`` do not touch it.

Bottom-k (``bottom=True``) runs the same protocol on ``−V_ij``. There unseen objects are not
candidates (every known object has a value ``≥ 0``, an unseen one is no object at all), so
there is no phantom; instead an object the node sees first, and any object while ``|T| < k``,
is reported as *new* and resolved in Phase 3, which gives every node an entry for it.

Latency (Appendix A): after sending a request, or a Phase 3 reply, the node *awaits* the
coordinator's install and sends nothing more; the install (or an Appendix C shift) ends the
wait and the node checks its constraints again, asking anew if they still break. Each install
or shift raises the node's ``version``; requests carry it so the coordinator can drop one sent
before an install that was on its way.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping

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


class MonitorNode:
    """Monitor node ``N_j``: partial values, adjustment factors and the local constraint check.

    ``theta`` is Appendix C's threshold (``None``: never offload): a decrease of a top-k object
    that breaks more than ``theta`` constraints is cancelled here and offloaded.

    Examples
    --------
    >>> node = MonitorNode(1, k=1)
    >>> node.install(Install(1, {"a": 0, "b": 0}, top=frozenset({"a"})))
    >>> node.update("a", 3) is None
    True
    >>> req = node.update("b", 5)  # V_bj + δ_bj = 5 > 3 = V_aj + δ_aj: Phase 1
    >>> sorted(req.values.items()), req.border, req.phantom
    ([('a', (3, 0)), ('b', (5, 0))], 0, False)
    >>> node.update("b", 1) is None  # awaiting the coordinator's answer
    True
    """

    def __init__(
        self, node: int, k: int = 1, bottom: bool = False, theta: int | None = None
    ) -> None:
        self.node, self.k, self.bottom, self.theta = node, k, bottom, theta
        self.values: dict[Obj, int] = {}  # V_ij (negated for bottom-k)
        self.deltas: dict[Obj, int] = {}  # δ_ij (explicit for every object seen or installed)
        self.default = 0  # d_j: adjustment factor of objects without an entry here
        self.top: frozenset[Obj] = frozenset()  # T
        self.epoch = 0
        self.version = 0  # installs and shifts taken (Appendix A)
        self.awaiting = False
        self.fresh: set[Obj] = set()  # new objects not yet installed by the coordinator
        # objects first seen after a full-refresh reply: still at d_j for the coordinator
        self._late: set[Obj] | None = None
        self.updates = 0  # updates since the last message sent (proportional allocation)
        self._stamp: dict[Obj, int] = {}
        self._seq = 0
        self._top_heap: list[tuple[int, int, Obj]] = []  # (adjusted, stamp, O_t), min-heap
        self._rest_heap: list[tuple[int, int, Obj]] = []  # (-adjusted, stamp, O_s), max-heap

    @property
    def phantom(self) -> bool:
        """Whether unseen objects are candidates (top-k) and the phantom stands for them."""
        return not self.bottom

    # -- state -----------------------------------------------------------------------------

    def adjusted(self, obj: Obj) -> int:
        """``V_ij + δ_ij`` (``d_j`` for an object without an entry)."""
        return self.values.get(obj, 0) + self.deltas.get(obj, self.default)

    def entry(self, obj: Obj) -> tuple[int, int]:
        """``(V_ij, δ_ij)`` of ``obj`` (``(0, d_j)`` for an object without an entry)."""
        return self.values.get(obj, 0), self.deltas.get(obj, self.default)

    def _ensure(self, obj: Obj) -> None:
        if obj not in self.deltas:
            self.deltas[obj] = self.default
            self.values.setdefault(obj, 0)
            if self._late is not None:
                self._late.add(obj)

    def _push(self, obj: Obj) -> None:
        self._seq += 1
        self._stamp[obj] = self._seq
        adj = self.adjusted(obj)
        if obj in self.top:
            heapq.heappush(self._top_heap, (adj, self._seq, obj))
        else:
            heapq.heappush(self._rest_heap, (-adj, self._seq, obj))
        if len(self._top_heap) + len(self._rest_heap) > 2 * len(self._stamp) + 32:
            self._rebuild()

    def _rebuild(self) -> None:
        self._seq += 1
        self._stamp = {o: self._seq for o in self.deltas}
        self._top_heap = [(self.adjusted(o), self._seq, o) for o in self.deltas if o in self.top]
        self._rest_heap = [
            (-self.adjusted(o), self._seq, o) for o in self.deltas if o not in self.top
        ]
        heapq.heapify(self._top_heap)
        heapq.heapify(self._rest_heap)

    def _clean(self, heap: list[tuple[int, int, Obj]]) -> None:
        while heap and self._stamp.get(heap[0][2]) != heap[0][1]:
            heapq.heappop(heap)

    def min_top(self) -> int | None:
        """Smallest adjusted value of an object in ``T`` (footnote 1), ``None`` if ``T`` empty."""
        self._clean(self._top_heap)
        return self._top_heap[0][0] if self._top_heap else None

    def max_rest(self) -> int | None:
        """Largest adjusted value of an object outside ``T`` (the phantom's ``d_j`` included
        for top-k); ``None`` when there is none."""
        self._clean(self._rest_heap)
        best = -self._rest_heap[0][0] if self._rest_heap else None
        if self.phantom:
            return self.default if best is None else max(best, self.default)
        return best

    def constraints_hold(self) -> bool:
        """``min_{O_t∈T} V_tj+δ_tj ≥ max_{O_s∉T} V_sj+δ_sj`` (§3), in ``O(log n)`` amortized."""
        low, high = self.min_top(), self.max_rest()
        return low is None or high is None or low >= high

    def _above(self, low: int) -> list[Obj]:
        """Objects outside ``T`` whose adjusted value exceeds ``low`` (the set ``F − T``)."""
        out: list[Obj] = []
        popped: list[tuple[int, int, Obj]] = []
        while True:
            self._clean(self._rest_heap)
            if not self._rest_heap or -self._rest_heap[0][0] <= low:
                break
            item = heapq.heappop(self._rest_heap)
            popped.append(item)
            out.append(item[2])
        for item in popped:
            heapq.heappush(self._rest_heap, item)
        return out

    def border(self, resolution: Iterable[Obj]) -> int:
        """``B_j = min(min_{O_t∈T} V_tj+δ_tj, max_{O_s∈U−R} V_sj+δ_sj)`` (§3.1), phantom in U−R
        (0 when both sets are empty: then any border meets Correctness Criteria 1-2).

        Fresh objects (seen while ``|T| < k``, not yet resolved) are left out of ``U − R``:
        nothing holds them below ``T`` here (Lemma B.3 bounds ``B_j`` by the lowest member of
        a full ``T``; with ``T`` empty there is none), so counting one could put ``B_N`` above
        a member of ``T'``, make ``λ_t < 0`` and break Invariant 2 at the coordinator. They
        get a later resolution: the node asks again after this one's install (requests taken
        up together put every requester's fresh objects in one ``R``, §3.1 Phase 3)."""
        r = {*resolution, *self.fresh}
        popped: list[tuple[int, int, Obj]] = []
        best = self.default if self.phantom else None
        while True:
            self._clean(self._rest_heap)
            if not self._rest_heap:
                break
            item = self._rest_heap[0]
            if item[2] not in r:
                best = -item[0] if best is None else max(best, -item[0])
                break
            popped.append(heapq.heappop(self._rest_heap))
        for item in popped:
            heapq.heappush(self._rest_heap, item)
        low = self.min_top()
        candidates = [x for x in (low, best) if x is not None]
        return min(candidates) if candidates else 0

    # -- protocol --------------------------------------------------------------------------

    def update(self, obj: Obj, delta: int) -> ToCoordinator | None:
        """Apply ``(O_i, N_j, Δ)`` (§1.3, ``Δ`` in the object's own sign); return the Phase 1
        request (or Appendix C offload) if a constraint broke and the node is not awaiting."""
        stored = -delta if self.bottom else delta
        value = self.values.get(obj, 0) + stored
        if (-value if self.bottom else value) < 0:
            current = abs(self.values.get(obj, 0))
            raise ValueError(
                f"partial value of {obj!r} at node {self.node} would go below 0: "
                f"{current} {delta:+d}"
            )
        if obj not in self.deltas and (self.bottom or len(self.top) < self.k):
            self.fresh.add(obj)
        self._ensure(obj)
        self.values[obj] = value
        self.updates += 1
        self._push(obj)
        if self.awaiting:
            return None
        offload = self._offload(obj, stored)
        return offload if offload is not None else self.check()

    def _offload(self, obj: Obj, stored: int) -> Offload | None:
        """Appendix C: cancel a decrease of ``O_i ∈ T`` that breaks more than θ constraints."""
        if self.theta is None or stored >= 0 or obj not in self.top or self.fresh:
            return None
        if self.constraints_hold():
            return None
        low = self.adjusted(obj)
        violated = len(self._above(low))
        if violated <= self.theta or (self.phantom and self.default > low):
            return None
        self.deltas[obj] -= stored  # δ_ij += Δ: the adjusted value is back where it was
        self._push(obj)
        return Offload(self.node, obj, -stored, violated, self.epoch, self.version)

    def check(self) -> ResolutionRequest | None:
        """The Phase 1 request if a constraint is broken or a new object awaits resolution."""
        if self.awaiting or (self.constraints_hold() and not self.fresh):
            return None
        low = self.min_top()
        resolution = set(self.top) | set(self.fresh)
        if low is not None:
            resolution |= set(self._above(low))
        self.awaiting = True
        return ResolutionRequest(
            self.node,
            {o: self.entry(o) for o in resolution},
            border=self.border(resolution),
            phantom=self.phantom and low is not None and low < self.default,
            updates=self._take_updates(),
            epoch=self.epoch,
            version=self.version,
            new=bool(self.fresh),
        )

    def _take_updates(self) -> int:
        n, self.updates = self.updates, 0
        return n

    def on_message(self, message: ToNode) -> ToCoordinator | None:
        """Handle one message from the coordinator; return the node's answer, if any."""
        if isinstance(message, ValueRequest):
            return self.reply(message.objects)
        if isinstance(message, CountRequest):
            return self.count(message.obj, message.delta)
        if isinstance(message, Install):
            self.install(message)
        elif isinstance(message, Shift):
            self.shift(message)
        else:
            raise TypeError(f"a monitor node cannot handle {type(message).__name__}")
        return self.check()

    def reply(self, objects: frozenset[Obj] | None) -> ValueReply:
        """Phase 3: ``(V_ij, δ_ij)`` of ``objects`` and ``B_j``; every entry if ``None``.
        An install follows, so the node awaits it."""
        self.awaiting = True
        if objects is None:
            self._late = set()
            return ValueReply(
                self.node,
                {o: self.entry(o) for o in self.deltas},
                default=self.default,
                updates=self._take_updates(),
            )
        return ValueReply(
            self.node,
            {o: self.entry(o) for o in objects},
            border=self.border(objects),
            updates=self._take_updates(),
        )

    def count(self, obj: Obj, delta: int) -> CountReply:
        """Appendix C: constraints the hypothetical ``(O_i, N_j, −Δ)`` would break here (the
        phantom flagged apart: it stands for arbitrarily many objects)."""
        if obj not in self.top:
            return CountReply(self.node, 0)
        low = self.adjusted(obj) - delta
        return CountReply(
            self.node, len(self._above(low)), phantom=self.phantom and self.default > low
        )

    def install(self, message: Install) -> None:
        """Take new adjustment factors (and ``T'``, ``d_j``) from the coordinator."""
        self.version += 1
        self.awaiting = False
        self.epoch = max(self.epoch, message.epoch)
        late, self._late = self._late or set(), None
        if message.default is not None:
            for o in late:  # unseen when the coordinator gathered: at d_j
                self.deltas[o] = message.default
            self.default = message.default
        for o, d in message.deltas.items():
            self.values.setdefault(o, 0)
            self.deltas[o] = d
            self.fresh.discard(o)
        if message.top is not None and message.top != self.top:
            self.top = message.top
            for o in self.top:
                self._ensure(o)
            self._rebuild()
        else:  # every δ_ij changed here, the late objects' too, is checked anew
            for o in {*message.deltas, *late}:
                self._push(o)

    def shift(self, message: Shift) -> None:
        """Appendix C: ``δ_ij −= Δ``, taking over a decrease another node offloaded."""
        self.version += 1
        self.awaiting = False
        self._ensure(message.obj)
        self.deltas[message.obj] -= message.delta
        self._push(message.obj)

    def snapshot(self) -> Mapping[Obj, tuple[int, int]]:
        """Every ``(V_ij, δ_ij)`` held (for tests and oracles)."""
        return {o: self.entry(o) for o in self.deltas}
