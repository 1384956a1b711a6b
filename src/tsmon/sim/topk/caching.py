"""Caching baseline of Babcock & Olston 2003, §4.4.

The coordinator caches every partial value; node ``N_j`` refreshes its cached ``V_ij`` (one
message, one entry) when the value moved by more than ``threshold`` since it was last sent,
and the coordinator answers the top-k of the cached sums. With the paper's threshold ``ε/m``
each cached sum is within ε of ``V_i``, so the answer is valid within ``2ε`` (within ε with
``threshold = ε/(2m)``); at ε = 0 every update that changes a value is sent.

An update ``Δ = 0`` (a point of value 0) changes no partial value, so it sends nothing and
counts no message at any ε; the coordinator keeps treating the object as it did (an object it
never heard of stays at 0 outside its cache, which is what a cached 0 would say of it).
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from fractions import Fraction

from tsmon.protocols.topk.messages import CacheUpdate, MessageCounts, Obj


class CachingNetwork:
    """Caching of all partial values at the coordinator (§4.4), counted like the protocol.

    Examples
    --------
    >>> net = CachingNetwork(2, 1, eps=2)   # threshold ε/m = 1
    >>> net.update(1, "a", 1); net.counts.total
    0
    >>> net.update(1, "a", 1); net.counts.total, net.answer()
    (1, frozenset({'a'}))
    >>> net.update(2, "b", 0); net.counts.total  # Δ = 0: nothing moved, nothing sent
    1
    """

    def __init__(self, m: int, k: int, eps: int, threshold: Fraction | None = None) -> None:
        self.m, self.k, self.eps = m, k, eps
        self.threshold = Fraction(eps, m) if threshold is None else Fraction(threshold)
        self.values: list[dict[Obj, int]] = [defaultdict(int) for _ in range(m)]
        self.sent: list[dict[Obj, int]] = [defaultdict(int) for _ in range(m)]
        self.cache: dict[Obj, int] = defaultdict(int)  # Σ_j cached V_ij
        self.counts = MessageCounts()

    def update(self, node: int, obj: Obj, delta: int) -> None:
        """``(O_i, N_j, Δ)``; sends the new ``V_ij`` if it moved more than the threshold."""
        if delta == 0:
            return  # no value moved
        values, sent = self.values[node - 1], self.sent[node - 1]
        values[obj] += delta
        if abs(values[obj] - sent[obj]) > self.threshold:
            self.counts.add(CacheUpdate(node, obj, values[obj]))
            self.cache[obj] += values[obj] - sent[obj]
            sent[obj] = values[obj]

    def answer(self) -> frozenset[Obj]:
        """Top-k of the cached sums."""
        return frozenset(heapq.nlargest(self.k, self.cache, key=self.cache.__getitem__))
