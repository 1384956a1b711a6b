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
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping

from tsmon.protocols.topk.messages import Install, Obj, ResolutionRequest, ValueReply


class MonitorNode:
    """Monitor node ``N_j``: partial values, adjustment factors and the local constraint check.

    Examples
    --------
    >>> node = MonitorNode(1)
    >>> node.install(Install(1, {"a": 0, "b": 0}, top=frozenset({"a"})))
    >>> node.update("a", 3) is None
    True
    >>> req = node.update("b", 5)  # V_bj + δ_bj = 5 > 3 = V_aj + δ_aj: Phase 1
    >>> sorted(req.values.items()), req.border, req.phantom
    ([('a', (3, 0)), ('b', (5, 0))], 0, False)
    """

    def __init__(self, node: int) -> None:
        self.node = node
        self.values: dict[Obj, int] = {}  # V_ij
        self.deltas: dict[Obj, int] = {}  # δ_ij (explicit for every object seen or installed)
        self.default = 0  # d_j: adjustment factor of objects without an entry here
        self.top: frozenset[Obj] = frozenset()  # T
        self.updates = 0  # updates since the last message sent (proportional allocation)
        self._stamp: dict[Obj, int] = {}
        self._seq = 0
        self._top_heap: list[tuple[int, int, Obj]] = []  # (adjusted, stamp, O_t), min-heap
        self._rest_heap: list[tuple[int, int, Obj]] = []  # (-adjusted, stamp, O_s), max-heap

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

    def max_rest(self) -> int:
        """Largest adjusted value of an object outside ``T``, the phantom ``d_j`` included."""
        self._clean(self._rest_heap)
        best = -self._rest_heap[0][0] if self._rest_heap else self.default
        return max(best, self.default)

    def constraints_hold(self) -> bool:
        """``min_{O_t∈T} V_tj+δ_tj ≥ max_{O_s∉T} V_sj+δ_sj`` (§3), in ``O(log n)`` amortized."""
        low = self.min_top()
        return low is None or low >= self.max_rest()

    # -- protocol --------------------------------------------------------------------------

    def update(self, obj: Obj, delta: int) -> ResolutionRequest | None:
        """Apply ``(O_i, N_j, Δ)`` (§1.3); return the Phase 1 request if a constraint broke."""
        value = self.values.get(obj, 0) + delta
        if value < 0:
            raise ValueError(f"partial value of {obj!r} at node {self.node} would be {value} < 0")
        self._ensure(obj)
        self.values[obj] = value
        self.updates += 1
        self._push(obj)
        if self.constraints_hold():
            return None
        return self._request()

    def _violators(self, low: int) -> list[Obj]:
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
        """``B_j = min(min_{O_t∈T} V_tj+δ_tj, max_{O_s∈U−R} V_sj+δ_sj)`` (§3.1), phantom in U−R."""
        r = set(resolution)
        popped: list[tuple[int, int, Obj]] = []
        best = self.default
        while True:
            self._clean(self._rest_heap)
            if not self._rest_heap:
                break
            item = self._rest_heap[0]
            if item[2] not in r:
                best = max(best, -item[0])
                break
            popped.append(heapq.heappop(self._rest_heap))
        for item in popped:
            heapq.heappush(self._rest_heap, item)
        low = self.min_top()
        return best if low is None else min(low, best)

    def _take_updates(self) -> int:
        n, self.updates = self.updates, 0
        return n

    def _request(self) -> ResolutionRequest:
        low = self.min_top()
        assert low is not None
        resolution = set(self.top) | set(self._violators(low))
        return ResolutionRequest(
            self.node,
            {o: self.entry(o) for o in resolution},
            border=self.border(resolution),
            phantom=low < self.default,
            updates=self._take_updates(),
        )

    def reply(self, objects: frozenset[Obj] | None) -> ValueReply:
        """Phase 3: ``(V_ij, δ_ij)`` of ``objects`` and ``B_j``; every entry if ``None``."""
        if objects is None:
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

    def install(self, message: Install) -> None:
        """Take new adjustment factors (and ``T'``, ``d_j``) from the coordinator."""
        if message.default is not None:
            self.default = message.default
        for o, d in message.deltas.items():
            self.values.setdefault(o, 0)
            self.deltas[o] = d
        if message.top is not None and message.top != self.top:
            self.top = message.top
            for o in self.top:
                self._ensure(o)
            self._rebuild()
        else:
            for o in message.deltas:
                self._push(o)

    def snapshot(self) -> Mapping[Obj, tuple[int, int]]:
        """Every ``(V_ij, δ_ij)`` held (for tests and oracles)."""
        return {o: self.entry(o) for o in self.deltas}
