"""Messages of SWAT-ASR (Bulut & Singh, §3, Fig. 8) and of the item-caching baselines (§4).

Sites are numbered, the source ``S`` is site 0. Every message goes between two sites and counts
once per hop it travels; its size is :attr:`entries` (one per range, value or query term).

SWAT-ASR, always between adjacent sites of the tree:

* :class:`Query` — Fig. 8(a) "forward query to parent": a query a site could not satisfy.
* :class:`Answer` — the answer, walked back down the query's route.
* :class:`Update` — Fig. 8(a)/(b) ``update(S, R)``: a new data range for a subscribed child.
* :class:`Insert` — Fig. 8(b) "send insert message to v": a replica for a newly subscribed child.
* :class:`Decache` — a fringe site dropped its replica (contraction test, Fig. 8b); tells the
  parent to take it off the subscription list (implicit in [16]'s replication scheme).

Divergence Caching and Adaptive Precision Setting (§4), between a client and the source:

* :class:`ReadRequest` — a read miss: the items whose cached intervals were too wide.
* :class:`Refresh` — one item's value and new interval (query- or value-initiated refresh).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tsmon.protocols.replication.segments import Approx, Segment

__all__ = [
    "Answer",
    "Decache",
    "Insert",
    "MessageCounts",
    "Query",
    "ReadRequest",
    "Refresh",
    "Update",
]

QueryId = tuple[int, int]  # (origin site, sequence number at the origin)


@dataclass(frozen=True)
class Query:
    """An inner-product query ``(I, W, delta)`` (§2.1) posed at ``count`` arrivals.

    ``route`` lists the sites it went through, its origin first and ``sender`` last.

    Examples
    --------
    >>> q = Query(3, 1, (3, 0), count=40, positions=(3,), weights=(1.0,), delta=20.0, route=(3,))
    >>> q.entries
    1
    """

    sender: int
    receiver: int
    qid: QueryId
    count: int
    positions: tuple[int, ...]
    weights: tuple[float, ...]
    delta: float
    route: tuple[int, ...]

    @property
    def entries(self) -> int:
        """Query terms ``(I[i], W[i])``."""
        return len(self.positions)


@dataclass(frozen=True)
class Answer:
    """The answer ``value`` (within ``bound`` of the exact one) of query ``qid``.

    ``route`` holds the sites still to visit after ``receiver`` (empty: ``receiver`` is the
    origin); ``site`` answered it, ``exact`` says it came from the source's raw values.

    Examples
    --------
    >>> Answer(0, 1, (3, 0), value=35.0, bound=5.0, site=0, route=(3,)).entries
    1
    """

    sender: int
    receiver: int
    qid: QueryId
    value: float
    bound: float
    site: int
    route: tuple[int, ...] = ()
    exact: bool = False

    @property
    def entries(self) -> int:
        """One value (with its bound)."""
        return 1


@dataclass(frozen=True)
class Update:
    """Fig. 8 ``update(S, R)``: segment ``segment`` now has data range ``approx``.

    Examples
    --------
    >>> Update(0, 1, Segment(0, "L"), Approx((32.0,), (38.0,))).entries
    1
    """

    sender: int
    receiver: int
    segment: Segment
    approx: Approx

    @property
    def entries(self) -> int:
        """Ranges carried (one per block)."""
        return self.approx.entries


@dataclass(frozen=True)
class Insert:
    """Fig. 8(b) insert: ``receiver`` joins the replication scheme of ``segment``.

    Examples
    --------
    >>> Insert(1, 3, Segment(0, "L"), Approx((30.0,), (40.0,))).entries
    1
    """

    sender: int
    receiver: int
    segment: Segment
    approx: Approx

    @property
    def entries(self) -> int:
        """Ranges carried (one per block)."""
        return self.approx.entries


@dataclass(frozen=True)
class Decache:
    """``sender`` dropped its replica of ``segment`` (contraction test, Fig. 8b).

    Examples
    --------
    >>> Decache(3, 1, Segment(0, "L")).entries
    1
    """

    sender: int
    receiver: int
    segment: Segment

    @property
    def entries(self) -> int:
        """The segment named."""
        return 1


@dataclass(frozen=True)
class ReadRequest:
    """§4 read miss at client ``sender``: refresh ``items`` (positions) for query ``qid``.

    ``reads`` carries, per item, the client's read tolerances since its last request as
    ``(time_ms, tolerance)`` pairs: Divergence Caching estimates read rates from them (§4.1).

    Examples
    --------
    >>> ReadRequest(2, 0, (2, 7), count=50, items=(4, 5)).entries
    2
    """

    sender: int
    receiver: int
    qid: QueryId
    count: int
    items: tuple[int, ...]
    reads: tuple[tuple[tuple[int, float], ...], ...] = ()

    @property
    def entries(self) -> int:
        """Items named (the piggybacked read statistics are not counted)."""
        return len(self.items)


@dataclass(frozen=True)
class Refresh:
    """§4 refresh of ``item``: exact ``value`` and the interval ``center ± width/2`` to cache
    (``center`` None: the value).

    ``qid`` is set for a query-initiated refresh (a read miss), ``None`` for a value-initiated
    (APS) or unsolicited (DC) one. ``width`` is ``inf`` when the item is no longer cached.

    Examples
    --------
    >>> Refresh(0, 2, item=4, count=50, value=61.0, width=4.0).entries
    1
    """

    sender: int
    receiver: int
    item: int
    count: int
    value: float
    width: float
    qid: QueryId | None = None
    center: float | None = None

    @property
    def entries(self) -> int:
        """One interval."""
        return 1


Message = Query | Answer | Update | Insert | Decache | ReadRequest | Refresh
_KINDS = {
    Query: "queries",
    Answer: "answers",
    Update: "updates",
    Insert: "inserts",
    Decache: "decaches",
    ReadRequest: "read_requests",
    Refresh: "refreshes",
}


@dataclass
class MessageCounts:
    """Messages sent, by kind, counted once per link crossed (``total``) and once end to end.

    ``packets`` counts a handler's messages to the same neighbour as one (per link crossed):
    the cost if a site batched what it sends at one moment to one site.

    Examples
    --------
    >>> counts = MessageCounts()
    >>> counts.add(Update(0, 1, Segment(0, "R"), Approx((1.0,), (2.0,))))
    >>> counts.add(Refresh(0, 3, item=0, count=9, value=1.0, width=0.0), hops=2)
    >>> counts.total, counts.end_to_end, counts.packets, counts.by_kind
    (3, 2, 3, {'updates': 1, 'refreshes': 2})
    >>> counts.add_all([Refresh(0, 3, item=i, count=9, value=1.0, width=0.0) for i in range(4)],
    ...                hops=lambda m: 2)
    >>> counts.total, counts.packets
    (11, 5)
    """

    total: int = 0
    end_to_end: int = 0
    packets: int = 0
    entries: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)

    def add(self, message: Message, hops: int = 1) -> None:
        """Count ``message`` travelling ``hops`` links of the tree (one packet)."""
        self._count(message, hops)
        self.packets += hops

    def add_all(self, messages: Sequence[Message], hops: Callable[[Message], int]) -> None:
        """Count the messages one handler sent; those to the same site share a packet."""
        seen: set[tuple[int, int]] = set()
        for m in messages:
            h = hops(m)
            self._count(m, h)
            if (m.sender, m.receiver) not in seen:
                seen.add((m.sender, m.receiver))
                self.packets += h

    def _count(self, message: Message, hops: int) -> None:
        kind = _KINDS.get(type(message))
        if kind is None:
            raise TypeError(f"cannot count {type(message).__name__}; pass a replication message")
        if hops < 1:
            raise ValueError(f"a message travels at least one hop, got hops={hops}")
        self.total += hops
        self.end_to_end += 1
        self.entries += hops * message.entries
        self.by_kind[kind] = self.by_kind.get(kind, 0) + hops

    def copy(self) -> MessageCounts:
        """An independent copy (to measure after a warm-up)."""
        return MessageCounts(
            self.total, self.end_to_end, self.packets, self.entries, dict(self.by_kind)
        )

    def __sub__(self, other: MessageCounts) -> MessageCounts:
        kinds = {k: v - other.by_kind.get(k, 0) for k, v in self.by_kind.items()}
        return MessageCounts(
            self.total - other.total,
            self.end_to_end - other.end_to_end,
            self.packets - other.packets,
            self.entries - other.entries,
            {k: v for k, v in kinds.items() if v},
        )
