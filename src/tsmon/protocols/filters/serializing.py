"""The serializing queue in front of the CQ evaluator (Olston, Jiang, Widom 2003, §4, Fig. 5).

Updates are released in timestamp order, each once the coordinator's time reaches
``t_U + λ`` (``λ`` the latency tolerance). An update that arrives after that deadline is *late*:
it is released at once, out of order, and counted; the bound cache keeps the newest value by
timestamp, so a late update never overwrites a newer one.
"""

from __future__ import annotations

import heapq
import math

from tsmon.protocols.filters.messages import StreamedUpdate


class SerializingQueue:
    """Orders streamed updates by timestamp and holds each until ``now ≥ t_U + λ`` (§4).

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
    """

    def __init__(self, latency_ms: int) -> None:
        if not (math.isfinite(latency_ms) and latency_ms >= 0 and latency_ms == int(latency_ms)):
            raise ValueError(
                f"latency tolerance λ must be a whole number of ms >= 0, got {latency_ms}"
            )
        self.latency_ms = int(latency_ms)
        self._heap: list[tuple[int, int, int, StreamedUpdate]] = []
        self._arrivals = 0  # a plain int: itertools.count does not pickle from Python 3.14
        self.late = 0
        self.released = 0

    def __len__(self) -> int:
        return len(self._heap)

    def push(self, update: StreamedUpdate, arrival_ms: int) -> None:
        """Queue ``update``, which reached the coordinator at ``arrival_ms``."""
        if arrival_ms - update.ts_ms > self.latency_ms:
            self.late += 1  # §4: a message slower than λ; precision may be violated briefly
        # §4: timestamp order; the source's seq orders its updates with the same timestamp
        self._arrivals += 1
        heapq.heappush(self._heap, (update.ts_ms, update.seq, self._arrivals, update))

    def next_ts(self) -> int | None:
        """Timestamp of the oldest queued update."""
        return self._heap[0][0] if self._heap else None

    def release(self, until_ms: int, before_ms: int | None = None) -> list[StreamedUpdate]:
        """Pop, in timestamp order, every update with ``t_U ≤ until_ms`` (and ``< before_ms``)."""
        out: list[StreamedUpdate] = []
        while self._heap and self._heap[0][0] <= until_ms:
            if before_ms is not None and self._heap[0][0] >= before_ms:
                break
            out.append(heapq.heappop(self._heap)[3])
        self.released += len(out)
        return out
