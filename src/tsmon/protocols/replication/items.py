"""Per-item interval caching, the frame of both baselines of §4 (Bulut & Singh).

"We run Divergence Caching and Adaptive Precision Setting caching algorithms independently for
each data item in the window" (§5): item ``i`` is the value ``i`` positions back in time, so
every arrival writes every item. A client caches ``[c_i - W_i/2, c_i + W_i/2]`` per item and
answers with the centres. The source sends a new interval when a value leaves the cached one
(value-initiated / unsolicited refresh) and when a read finds it too wide (query-initiated
refresh, a read miss); a :class:`~tsmon.protocols.replication.policies.WidthPolicy` sets its
width. Pure logic: values and messages in, messages out; time is an argument.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tsmon.protocols.replication.directory import Reaction
from tsmon.protocols.replication.messages import Answer, Message, ReadRequest, Refresh
from tsmon.protocols.replication.policies import WidthPolicy

__all__ = ["ItemClient", "ItemServer"]


@dataclass
class _Pending:
    value: float  # the cached part of the answer
    bound: float
    weights: dict[int, float]  # missed item -> summed weight
    waiting: set[int]


class ItemClient:
    """A client's per-item interval cache over a window of ``window`` positions (§4).

    A query ``(I, W, delta)`` is answered from the cache when ``sum |W_i| W_i/2 <= delta``;
    otherwise the items contributing most are refreshed (a read miss each) until the rest is
    within ``delta``, and their exact values complete the answer. Each read is logged with its
    tolerance ``2 delta / sum |W|`` (the widest interval that meets ``delta`` when shared evenly)
    and the log of a missed item (its last ``log_size`` reads) travels with the request
    (Divergence Caching's read rates).

    Examples
    --------
    >>> c = ItemClient(2, window=4)
    >>> req = c.query([0, 1], [1.0, 1.0], delta=1.0, count=9, now_ms=0).messages[0]
    >>> req.items, req.reads[0]
    ((0, 1), ((0, 1.0),))
    >>> _ = c.on_message(Refresh(0, 2, item=0, count=9, value=5.0, width=2.0, qid=req.qid), 0)
    >>> done = c.on_message(Refresh(0, 2, item=1, count=9, value=7.0, width=0.0, qid=req.qid), 0)
    >>> done.answers[0].value
    12.0
    >>> c.query([0, 1], [1.0, 1.0], delta=1.0, count=9, now_ms=0).answers[0].bound  # cached now
    1.0
    """

    def __init__(self, site: int, window: int, server: int = 0, log_size: int = 23) -> None:
        self.site, self.server, self.log_size = site, server, log_size
        self.center = np.zeros(window)
        self.width = np.full(window, math.inf)
        self._log: dict[int, deque[tuple[int, float]]] = {}
        self._pending: dict[tuple[int, int], _Pending] = {}
        self._seq = 0

    def __repr__(self) -> str:
        cached = int(np.isfinite(self.width).sum())
        return f"ItemClient(site={self.site}, cached={cached}/{len(self.width)})"

    def query(
        self,
        positions: Sequence[int],
        weights: Sequence[float],
        delta: float,
        count: int,
        now_ms: int,
    ) -> Reaction:
        """Answer from the cache, or send one read request for the items it must refresh."""
        qid = (self.site, self._seq)
        self._seq += 1
        p = np.asarray(positions, dtype=np.int64)
        w = np.asarray(weights, dtype=float)
        aw = np.abs(w)
        share = 2 * float(delta) / float(aw.sum()) if aw.sum() > 0 else math.inf
        for i in np.unique(p[aw > 0]).tolist():
            self._log.setdefault(i, deque(maxlen=self.log_size)).append((now_ms, share))
        contrib = np.zeros(len(p))
        contrib[aw > 0] = aw[aw > 0] * self.width[p[aw > 0]] / 2
        miss = np.zeros(len(p), dtype=bool)
        if contrib.sum() > delta:  # refresh the largest contributions until the rest fits
            order = np.argsort(-contrib, kind="stable")
            rest = np.concatenate([np.cumsum(contrib[order][::-1])[::-1][1:], [0.0]])
            cut = int(np.argmax(rest <= delta))
            miss[order[: cut + 1]] = True
        items = sorted(set(p[miss].tolist()))
        miss = np.isin(p, items)  # a position asked twice is refreshed once, for both terms
        value = float(w[~miss] @ self.center[p[~miss]])
        bound = float(contrib[~miss].sum())
        if not items:
            return Reaction(answers=(Answer(self.site, self.site, qid, value, bound, self.site),))
        merged: dict[int, float] = {}
        for i, wi in zip(p[miss].tolist(), w[miss].tolist(), strict=True):
            merged[i] = merged.get(i, 0.0) + wi
        self._pending[qid] = _Pending(value, bound, merged, set(items))
        reads = tuple(tuple(self._log.pop(i, ())) for i in items)
        return Reaction((ReadRequest(self.site, self.server, qid, count, tuple(items), reads),))

    def on_message(self, m: Message, now_ms: int) -> Reaction:
        """Cache a refresh; the last refresh of a read miss completes its answer."""
        if not isinstance(m, Refresh):
            raise TypeError(f"an item client takes Refresh messages, got {type(m).__name__}")
        self.center[m.item] = m.value if m.center is None else m.center
        self.width[m.item] = m.width
        pending = self._pending.get(m.qid) if m.qid is not None else None
        if pending is None or m.item not in pending.waiting:
            return Reaction()
        pending.value += pending.weights[m.item] * m.value
        pending.waiting.discard(m.item)
        if pending.waiting:
            return Reaction()
        del self._pending[m.qid]
        answer = Answer(m.sender, self.site, m.qid, pending.value, pending.bound, m.sender)
        return Reaction(answers=(answer,))


class ItemServer:
    """The source of the item-caching baselines: raw window, each client's intervals, a policy.

    The server knows every interval it sent, so it sends a value-initiated refresh exactly when
    an item's new value leaves the interval that client holds.

    Examples
    --------
    >>> from tsmon.protocols.replication.policies import AdaptivePrecision
    >>> srv = ItemServer([1], window=4, policy=AdaptivePrecision())
    >>> for x in [10.0, 11.0, 12.0, 13.0]:
    ...     _ = srv.on_value(x, now_ms=0)
    >>> r = srv.on_message(ReadRequest(1, 0, (1, 0), count=4, items=(0,)), now_ms=0).messages[0]
    >>> r.value, r.width  # first read: cached with tau_0
    (13.0, 2.0)
    >>> [m.item for m in srv.on_value(15.0, now_ms=0).messages]  # 15 left [12, 14]
    [0]
    """

    def __init__(self, clients: Sequence[int], window: int, policy: WidthPolicy, site: int = 0):
        self.site, self.window, self.policy = site, window, policy
        self.count = 0
        self._ring = np.zeros(window)
        self.center = {c: np.zeros(window) for c in clients}
        self.width = {c: np.full(window, math.inf) for c in clients}

    def values(self) -> np.ndarray:
        """The raw window, most recent first (unseen positions read 0)."""
        return self._ring[(self.count - 1 - np.arange(self.window)) % self.window]

    def on_value(self, x: float, now_ms: int) -> Reaction:
        """A new value shifts every item; refresh the intervals it leaves."""
        self.count += 1
        self._ring[(self.count - 1) % self.window] = float(x)
        self.policy.on_write(now_ms)
        vals = self.values()
        out: list[Message] = []
        for c in self.center:
            center, width = self.center[c], self.width[c]
            leave = np.flatnonzero(np.abs(vals - center) > width / 2)  # inf width: never
            for i in leave.tolist():
                new = self.policy.value_width(c, i, float(width[i]), now_ms)
                out.append(self._refresh(c, i, float(vals[i]), new, None))
        return Reaction(tuple(out))

    def on_message(self, m: Message, now_ms: int) -> Reaction:
        """A read miss: one query-initiated refresh per item named."""
        if not isinstance(m, ReadRequest):
            raise TypeError(f"an item server takes ReadRequest messages, got {type(m).__name__}")
        if m.count != self.count:
            raise ValueError(
                f"read request {m.qid} is for count {m.count}, the server is at {self.count}; "
                "deliver requests before the next value (zero-latency model)"
            )
        vals = self.values()
        out: list[Message] = []
        for j, i in enumerate(m.items):
            if j < len(m.reads):
                self.policy.on_reads(m.sender, i, m.reads[j])
            new = self.policy.read_width(m.sender, i, float(self.width[m.sender][i]), now_ms)
            out.append(self._refresh(m.sender, i, float(vals[i]), new, m.qid))
        return Reaction(tuple(out))

    def _refresh(self, client: int, item: int, value: float, width: float, qid) -> Refresh:
        """Record and build a refresh; an interval as wide as the policy's domain is the
        domain (it then holds every value)."""
        center = None
        dom = self.policy.domain
        if dom is not None and width >= dom[1] - dom[0] and dom[0] <= value <= dom[1]:
            center = (dom[0] + dom[1]) / 2
        self.center[client][item] = value if center is None else center
        self.width[client][item] = width
        return Refresh(self.site, client, item, self.count, value, width, qid, center)
