"""Update streams and the exact oracle for the top-k tests."""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterator

from tsmon.protocols.topk.coordinator import PHANTOM, Coordinator
from tsmon.sim.topk.network import TopKNetwork, _Network


def stream(
    seed: int,
    m: int,
    n: int,
    steps: int,
    zipf: float,
    window: int | None,
    max_delta: int = 1,
) -> Iterator[tuple[int, int, int]]:
    """``steps`` updates ``(node, object, Δ)``: arrivals of Zipf(``zipf``) objects (uniform if
    0) at skewed nodes; once ``window`` arrivals are live each arrival also cancels the oldest."""
    rng = random.Random(seed)
    cum, total = [], 0.0
    for i in range(n):
        total += 1.0 / (i + 1) ** zipf
        cum.append(total)
    node_cum = [float(j + 1) ** 1.5 for j in range(m)]
    node_cum = [sum(node_cum[: j + 1]) for j in range(m)]
    live: deque[tuple[int, int, int]] = deque()
    emitted = 0
    while emitted < steps:
        node = rng.choices(range(1, m + 1), cum_weights=node_cum)[0]
        obj = rng.choices(range(n), cum_weights=cum)[0]
        delta = rng.randint(1, max_delta)
        live.append((node, obj, delta))
        yield node, obj, delta
        emitted += 1
        if window is not None and len(live) > window and emitted < steps:
            old_node, old_obj, old_delta = live.popleft()
            yield old_node, old_obj, -old_delta
            emitted += 1


class Oracle:
    """Exact ``V_i = Σ_j V_ij`` of every object updated so far."""

    def __init__(self) -> None:
        self.totals: dict[int, int] = {}

    def apply(self, obj: int, delta: int) -> None:
        self.totals[obj] = self.totals.get(obj, 0) + delta

    def valid(self, top: frozenset, eps: int, k: int | None = None, bottom: bool = False) -> bool:
        """``V_t + ε ≥ V_s`` for every ``O_t ∈ T`` and ``O_s ∉ T`` (top-k: unseen objects are
        0; bottom-k: ``V_t ≤ V_s + ε`` over the objects seen); with fewer than ``k`` members,
        ``T`` must hold every object seen."""
        if k is not None and len(top) < k:
            return set(self.totals) <= set(top)
        if bottom:
            high = max(self.totals[t] for t in top)
            low = min((v for o, v in self.totals.items() if o not in top), default=high)
            return high <= low + eps
        low = min(self.totals.get(t, 0) for t in top)
        high = max((v for o, v in self.totals.items() if o not in top), default=0)
        return low + eps >= max(high, 0)


def check_invariants(net: TopKNetwork | _Network) -> None:
    """Invariants 1 and 2 (§3) exactly, every constraint at every node, one T everywhere."""
    c = net.coordinator
    known = set(c.delta0) | set(c.top)
    for node in net.nodes:
        known |= set(node.deltas)
        assert node.top == c.top
        assert node.constraints_hold(), node.node
    for i in known:
        assert sum(node.deltas.get(i, node.default) for node in net.nodes) + c.d0(i) == 0, i
    assert sum(node.default for node in net.nodes) + c.default0 == 0  # the phantom
    if not c.top:
        return
    lowest = min(c.d0(t) for t in c.top)
    outside = [c.d0(s) for s in known if s not in c.top]
    if not c.bottom:  # unseen objects are candidates only for top-k
        outside.append(c.d0(PHANTOM))
    if not outside:
        return
    assert lowest + c.eps >= max(outside)


def check_invariant_2(c: Coordinator) -> None:
    """Invariant 2 (§3) at the coordinator alone: ``δ_t0 + ε ≥ δ_s0`` for every ``O_t ∈ T`` and
    every object ``O_s`` outside ``T`` it knows (top-k: the phantom ``d_0`` too)."""
    if not c.top:
        return
    outside = [c.d0(s) for s in {*c.delta0, *c.known} - c.top]
    if not c.bottom:
        outside.append(c.d0(PHANTOM))
    assert not outside or min(c.d0(t) for t in c.top) + c.eps >= max(outside)
