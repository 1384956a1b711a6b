"""The serializing queue in front of the CQ evaluator (Olston, Jiang, Widom 2003, §4, Fig. 5).

Updates are released in timestamp order, each once the coordinator's time reaches
``t_U + λ`` (``λ`` the latency tolerance). An update that arrives after that deadline is *late*:
it is released at once, out of order, and counted; the bound cache keeps the newest value by
timestamp, so a late update never overwrites a newer one.

Beyond §4, the queue can be bounded per object (``backlog``): a source far *ahead* of the
coordinator's time (its clock, or its data, hours ahead of the others) sends updates the queue
must hold until the others reach them, however many. With a backlog of ``n``, once the
coordinator's time has moved (:meth:`SerializingQueue.trim`), while an object has more than
``n`` records still waiting, the two adjacent ones whose values span the least are folded
into one record, a *hull* (:class:`Queued`): from the first one's time until the next record
of the object, the object's value is within ``[lo − W/2, hi + W/2]``, ``lo`` and ``hi`` the
least and greatest value it stands for, since each of them was within ``W/2`` of the value
until the next (§1.2.3). So the answer is wider than ``δ`` while a hull is in force and exact
again from the next record on; the newest record is never folded (the answer is as precise as
the widths make it once time reaches it). :attr:`merged` counts the folds.
"""

from __future__ import annotations

import bisect
import heapq
import math
import operator
from dataclasses import dataclass, fields
from typing import Any

from tsmon.protocols.filters.messages import StreamedUpdate


@dataclass(slots=True)
class Queued:
    """Streamed updates of one object, consecutive in timestamp order, queued as one record.

    A record of one update is that update (``lo == hi``, its value). A record of several (a
    hull, see the module docstring) keeps what the coordinator needs of them: the first one's
    time, ``seq`` and ``width_seq`` (the shrinks the later ones confirm are confirmed by the
    record after it: later, so the coordinator assumes the wider bound longer), the value span,
    the last one's time and ``seq`` (the cache keeps the newest value by them), how many updates
    and streamed (not forced) ones, the smallest escape ``|V_j − V_{j−1}|`` of the streamed ones
    after the first and the smallest positive gap between their times (for the period chooser),
    and the newest safety-net count (``shadow``) with its time.
    """

    object_id: str
    ts_ms: int
    seq: int
    arrival: int
    width_seq: int | None
    forced: bool
    first: float
    lo: float
    hi: float
    last: float
    last_ts: int
    last_seq: int
    updates: int
    streamed: int
    escape: float
    gap: int
    shadow: int | None
    shadow_ts: int

    @classmethod
    def of(cls, u: StreamedUpdate, arrival: int) -> Queued:
        """The record of one update."""
        return cls.one(
            u.object_id, u.ts_ms, u.seq, arrival, u.width_seq, u.forced, u.value, u.shadow
        )

    @classmethod
    def one(
        cls,
        object_id: str,
        ts_ms: int,
        seq: int,
        arrival: int,
        width_seq: int | None,
        forced: bool,
        v: float,
        shadow: int | None,
    ) -> Queued:
        """The record of one update, from its fields."""
        streamed = 0 if forced else 1
        return cls(
            object_id, ts_ms, seq, arrival, width_seq, forced, v, v, v, v, ts_ms, seq, 1,
            streamed, math.inf, 0, shadow, ts_ms,
        )  # fmt: skip

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # compact: the coordinator's snapshot holds every queued record
        if self.updates == 1:
            single = (self.ts_ms, self.seq, self.arrival, self.width_seq, self.forced)
            return Queued.one, (self.object_id, *single, self.first, self.shadow)
        return Queued, tuple(getattr(self, f.name) for f in fields(self))

    @property
    def value(self) -> float:
        """The centre the coordinator takes: the value, or the middle of a hull's span."""
        return self.lo if self.lo == self.hi else (self.lo + self.hi) / 2

    @property
    def spread(self) -> float:
        """``hi − lo``: how much wider than the bound the object's interval is (0: exact)."""
        return self.hi - self.lo

    def span_with(self, later: Queued) -> float:
        """The value span of this record and ``later`` folded together."""
        return max(self.hi, later.hi) - min(self.lo, later.lo)

    def absorb(self, later: Queued) -> None:
        """Fold ``later``, the next record of the same object, into this one."""
        if not later.forced:
            self.escape = min(self.escape, abs(later.first - self.last))
        self.escape = min(self.escape, later.escape)
        gaps = [g for g in (self.gap, later.gap, later.ts_ms - self.last_ts) if g > 0]
        self.gap = min(gaps, default=0)
        self.lo, self.hi = min(self.lo, later.lo), max(self.hi, later.hi)
        self.last, self.last_ts, self.last_seq = later.last, later.last_ts, later.last_seq
        self.updates += later.updates
        self.streamed += later.streamed
        if later.shadow is not None and (self.shadow is None or later.shadow >= self.shadow):
            self.shadow, self.shadow_ts = later.shadow, later.shadow_ts


#: Release order of a :class:`Queued` record: timestamp, the source's ``seq``, arrival.
release_order = operator.attrgetter("ts_ms", "seq", "arrival")


class SerializingQueue:
    """Orders streamed updates by timestamp and holds each until ``now ≥ t_U + λ`` (§4); with a
    ``backlog``, holds at most that many records per object (see the module docstring).

    Examples
    --------
    >>> q = SerializingQueue(latency_ms=100)
    >>> q.push(StreamedUpdate("b", 2.0, 50), arrival_ms=60)
    >>> q.push(StreamedUpdate("a", 1.0, 10), arrival_ms=90)      # arrives second, older
    >>> [u.object_id for u in q.release(until_ms=40)]            # horizon = now − λ
    ['a']
    >>> q.push(StreamedUpdate("c", 3.0, 5), arrival_ms=200)      # 195 ms on the way: late
    >>> [u.object_id for u in q.release(until_ms=100)], q.late
    (['c', 'b'], 1)

    A source far ahead, with a backlog of 3: the two closest values fold into a hull.

    >>> q = SerializingQueue(latency_ms=0, backlog=3)
    >>> for ts, v in [(100, 5.0), (200, 9.0), (300, 8.0), (400, 1.0)]:
    ...     q.push(StreamedUpdate("a", v, ts), arrival_ms=0)
    >>> q.trim()
    >>> [(r.ts_ms, r.lo, r.hi, r.updates) for r in q.release(until_ms=400)], q.merged
    ([(100, 5.0, 5.0, 1), (200, 8.0, 9.0, 2), (400, 1.0, 1.0, 1)], 1)
    """

    def __init__(self, latency_ms: int, backlog: int | None = None) -> None:
        if not (math.isfinite(latency_ms) and latency_ms >= 0 and latency_ms == int(latency_ms)):
            raise ValueError(
                f"latency tolerance λ must be a whole number of ms >= 0, got {latency_ms}"
            )
        if backlog is not None and not (isinstance(backlog, int) and backlog >= 2):
            raise ValueError(f"backlog must be a whole number >= 2 or None, got {backlog!r}")
        self.latency_ms = int(latency_ms)
        self.backlog = backlog
        self._heap: list[tuple[int, int, int, Queued]] = []
        self._of: dict[str, list[Queued]] = {}  # per object, its records in release order
        self._gone: set[int] = set()  # arrivals of records folded into another, still in _heap
        self._arrivals = 0  # a plain int: itertools.count does not pickle from Python 3.14
        self.late = 0
        self.released = 0
        self.merged = 0

    def __len__(self) -> int:
        return len(self._heap) - len(self._gone)

    def push(self, update: StreamedUpdate, arrival_ms: int) -> None:
        """Queue ``update``, which reached the coordinator at ``arrival_ms``."""
        if arrival_ms - update.ts_ms > self.latency_ms:
            self.late += 1  # §4: a message slower than λ; precision may be violated briefly
        # §4: timestamp order; the source's seq orders its updates with the same timestamp
        self._arrivals += 1
        record = Queued.of(update, self._arrivals)
        heapq.heappush(self._heap, (*release_order(record), record))
        if self.backlog is not None:
            bisect.insort(self._of.setdefault(record.object_id, []), record, key=release_order)

    def trim(self) -> None:
        """Fold the records of every object holding more than ``backlog`` (see the module
        docstring); call it once the coordinator's time has moved, so that only records still
        waiting for a time not reached yet are folded."""
        if self.backlog is None:
            return
        for mine in self._of.values():
            while len(mine) > self.backlog:
                self._fold(mine)
        if len(self._gone) > len(self):  # the heap stays within twice the records held
            self._heap = [e for e in self._heap if e[2] not in self._gone]
            heapq.heapify(self._heap)
            self._gone.clear()

    def _fold(self, mine: list[Queued]) -> None:
        """Fold the adjacent pair of records, the newest left out, whose values span the least
        (the earliest of equals)."""
        j = min(range(len(mine) - 2), key=lambda j: (mine[j].span_with(mine[j + 1]), j))
        later = mine.pop(j + 1)
        mine[j].absorb(later)
        self._gone.add(later.arrival)
        self.merged += 1

    def _drop_gone(self) -> None:
        while self._heap and self._heap[0][2] in self._gone:
            self._gone.discard(heapq.heappop(self._heap)[2])

    def next_ts(self) -> int | None:
        """Timestamp of the oldest queued update."""
        self._drop_gone()
        return self._heap[0][0] if self._heap else None

    def release(self, until_ms: int, before_ms: int | None = None) -> list[Queued]:
        """Pop, in timestamp order, every record with ``t_U ≤ until_ms`` (and ``< before_ms``)."""
        out: list[Queued] = []
        self._drop_gone()
        while self._heap and self._heap[0][0] <= until_ms:
            if before_ms is not None and self._heap[0][0] >= before_ms:
                break
            record = heapq.heappop(self._heap)[3]
            if self.backlog is not None:
                mine = self._of[record.object_id]
                assert mine[0] is record  # both in release order
                del mine[0]
                if not mine:
                    del self._of[record.object_id]
            out.append(record)
            self._drop_gone()
        self.released += sum(r.updates for r in out)
        return out
