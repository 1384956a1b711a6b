"""SWAT-ASR between a batch runtime's source nodes and downstream readers (Bulut & Singh, §3).

:class:`ReplicaHost` lives in a source node: one :class:`SourceSite` (a SWAT whose slots are the
*window segments*, with their *data ranges* and *subscription lists*, Table 1) per followed
summary key ``(series, window, k)``. :class:`SummaryReader` is a reader with a cache: a
:class:`ClientSite` whose parent is the source. Readers are the source's children, numbered
``1, 2, ...`` by the host in the order it first hears from them: a star (one hop, no relaying;
§3 allows any tree). Both are pure and picklable: dicts in, dicts out, time is an argument.

Batch semantics. In batch ``N`` the host applies the readers' requests (written after batch
``N-1``), then batch ``N``'s values, then a *phase* end (Fig. 8b) for every multiple of
``phase_ms`` passed (the values carry no timestamps: a phase ends after its batch). The
transport then gives each reader the host's messages and the arrival count
(:meth:`ReplicaHost.counts`, the clock §3's sites share); the reader queries and runs its own
phase end for the same :func:`phase_ends`. So a request meets the host's state as of the end of
batch ``N-1``: the state the reader's cache reflected when it made the request. That is §3's
zero-latency model, one batch wide. (The reader's contraction test reaches the host a batch
after the host's phase end, the reverse of the simulator's bottom-up order; the host's tests
only look at children it lists, so nothing depends on that order.)

In-flight choices (each keeps every answer within its bound of the exact one):

* **Decache crossing Updates.** A reader that drops a segment (contraction test) ignores the
  Updates for it still on the way (:class:`ClientSite` does); the host stops once it applies
  the Decache. They did cross, so they are counted. A Decache never crosses an Insert of the
  same segment: the host inserts only to a reader it does not list, a reader decaches only what
  it holds, and both links are in order (the host lists it from the Insert to the Decache).
* **Query forwarded while Inserts are in flight.** It is answered at the host against the state
  as of the query's count (positions shifted by the arrivals since, §2.3), so it does not matter
  what the reader's cache is about to hold; the Insert lands after and serves later queries. A
  query applied after its positions left the window (control applied late) gets an *expired*
  answer (``nan`` within ``inf``) instead of failing the batch; the reader may ask again.
* **A reader that joins late** (``subscribe``; any first request joins too) gets an id and, if
  nobody followed the key, a new SourceSite that summarises from that batch on (count 0). It may
  only ask positions below ``min(count, window)`` of the count it has been delivered.
* **Redelivery and loss.** Host messages are numbered per reader and key (``"n"``): a message
  delivered twice (a retried batch) is skipped; a gap raises, as §3 (after [16]) assumes
  reliable in-order links. A reader that lost its state must come back under a new name.

Counting: each message crossing the batch boundary counts once at each end: the host when it
emits or applies it (``traffic``; ``sent`` for its own), a reader when it delivers or drains it.
Joins are not protocol messages and are not counted. Non-finite values are skipped (``skipped``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tsmon.protocols.replication.client import ClientSite
from tsmon.protocols.replication.codec import from_dict, to_dict
from tsmon.protocols.replication.directory import Reaction
from tsmon.protocols.replication.messages import (
    Answer,
    Decache,
    Message,
    MessageCounts,
    Query,
)
from tsmon.protocols.replication.source import SourceSite

__all__ = [
    "DEFAULT_PHASE_MS",
    "READER_SITE",
    "Key",
    "ReaderAnswer",
    "ReplicaHost",
    "SummaryReader",
    "phase_ends",
]

Key = tuple[str, int, int]  # (series, window N, k blocks per segment)
Row = dict[str, Any]
READER_SITE = 1
"""What a reader's ClientSite calls itself; the host rewrites senders to the id it assigned."""
DEFAULT_PHASE_MS = 10_000
"""Default phase length (event time) between expansion/contraction tests (Fig. 8b)."""


def _one(m: Message) -> int:
    return 1


def phase_ends(last_ms: int | None, now_ms: int, phase_ms: int) -> list[int]:
    """The multiples of ``phase_ms`` in ``(last_ms, now_ms]``: the phase ends due (§3, Fig. 8b).

    >>> phase_ends(None, 2500, 1000), phase_ends(900, 3000, 1000), phase_ends(3000, 3000, 1000)
    ([], [1000, 2000, 3000], [])
    """
    if last_ms is None or now_ms <= last_ms:
        return []
    return list(range((last_ms // phase_ms + 1) * phase_ms, now_ms + 1, phase_ms))


def _check_key(series: Any, window: Any, k: Any) -> Key:
    ok = isinstance(series, str) and all(
        isinstance(v, int) and not isinstance(v, bool) and v > 0 and v & (v - 1) == 0
        for v in (window, k)
    )
    if not ok or window < 4:
        raise ValueError(
            "a summary key is (series, window = 2**j >= 4, k = 2**i), "
            f"got {series!r}, {window!r}, {k!r}"
        )
    return series, window, k


def _row(name: str, key: Key, message: Row | None, **extra: int) -> Row:
    series, window, k = key
    return {"reader": name, "series": series, "window": window, "k": k, "message": message, **extra}


class ReplicaHost:
    """A source node's side: the SourceSites of the followed keys and the readers' ids.

    >>> host, r = ReplicaHost(phase_ms=1000), SummaryReader("r", "cpu", window=4)
    >>> r.subscribe()
    >>> out = host.step(1000, r.drain(), {"cpu": np.array([3.0, 5.0, 4.0, 6.0])})
    >>> r.deliver(out, count=host.counts()[r.key], as_of_ms=1000)
    []
    >>> r.query([0, 1], [1.0, 1.0], delta=0.0) is None  # nothing cached: forwarded
    True
    >>> out = host.step(2000, r.drain(), {})
    >>> [a.value for a in r.deliver(out, count=4, as_of_ms=2000)], r.answers[0].count
    ([10.0], 4)
    """

    def __init__(self, phase_ms: int) -> None:
        if phase_ms <= 0:
            raise ValueError(f"phase_ms must be > 0, got {phase_ms}")
        self.phase_ms = phase_ms
        self.sites: dict[Key, SourceSite] = {}
        self.ids: dict[str, int] = {}  # reader name -> child site id
        self.traffic, self.sent = MessageCounts(), MessageCounts()
        self.skipped = 0  # non-finite values
        self._names: dict[int, str] = {}
        self._last_ms: int | None = None
        self._numbered: dict[tuple[str, Key], int] = {}  # messages sent per reader and key

    def counts(self) -> dict[Key, int]:
        """Per followed key, the values its SourceSite has received (the shared count)."""
        return {key: site.count for key, site in self.sites.items()}

    def step(
        self, now_ms: int, requests: Sequence[Mapping[str, Any]], values: Mapping[str, Any]
    ) -> list[Row]:
        """One batch: requests (in order), then each series' values (in order), then phase
        ends; the messages for the readers, in order, as dicts with ``"n"``."""
        parsed = [self._parse(i, r) for i, r in enumerate(requests)]  # all valid, or none applied
        out: list[tuple[Key, Message]] = []
        for name, key, message in parsed:
            rid = self.ids.setdefault(name, len(self.ids) + 1)
            self._names[rid] = name
            if key not in self.sites:
                self.sites[key] = SourceSite(key[1], key[2])
            site = self.sites[key]
            if message is None:
                continue
            message = dataclasses.replace(message, sender=rid, receiver=site.site)
            self.traffic.add(message)
            if isinstance(message, Decache):
                site.on_message(message, now_ms)
            else:
                out += [(key, m) for m in self._answer(site, message, rid, now_ms)]
        for series, xs in values.items():
            x = np.asarray(xs, dtype=float).reshape(-1)
            finite = x[np.isfinite(x)].tolist()
            self.skipped += len(x) - len(finite)
            for key in [k for k in self.sites if k[0] == series]:
                for v in finite:
                    out += [(key, m) for m in self._sent(self.sites[key].on_value(v, now_ms))]
        for end in phase_ends(self._last_ms, now_ms, self.phase_ms):
            for key in sorted(self.sites):
                out += [(key, m) for m in self._sent(self.sites[key].end_phase(end))]
        self._last_ms = now_ms if self._last_ms is None else max(self._last_ms, now_ms)
        return [self._emit(key, m) for key, m in out]

    def _answer(self, site: SourceSite, q: Query, rid: int, now_ms: int) -> tuple[Message, ...]:
        """Fig. 8(a) at the source, or an expired answer if the positions left the window."""
        q = dataclasses.replace(q, route=(rid,))
        shift, held = site.count - q.count, min(site.count, site.window)
        if shift < 0 or (q.positions and max(q.positions) + shift >= held):
            expired = Answer(site.site, rid, q.qid, math.nan, math.inf, site.site)
            return self._sent(Reaction((expired,)))
        return self._sent(site.on_message(q, now_ms))

    def _sent(self, reaction: Reaction) -> tuple[Message, ...]:
        self.sent.add_all(reaction.messages, _one)
        self.traffic.add_all(reaction.messages, _one)
        return reaction.messages

    def _emit(self, key: Key, m: Message) -> Row:
        name = self._names[m.receiver]
        n = self._numbered[name, key] = self._numbered.get((name, key), 0) + 1
        return _row(name, key, to_dict(m), n=n)

    @staticmethod
    def _parse(i: int, r: Mapping[str, Any]) -> tuple[str, Key, Query | Decache | None]:
        try:
            if not isinstance(r, Mapping) or not isinstance(r.get("reader"), str):
                raise ValueError("a request is a dict with a str 'reader'")
            key = _check_key(r.get("series"), r.get("window"), r.get("k"))
            m = None if r.get("message") is None else from_dict(r["message"])
            if m is not None and not isinstance(m, Query | Decache):
                raise ValueError(
                    f"a source takes Query and Decache messages, got {type(m).__name__}"
                )
            return r["reader"], key, m
        except ValueError as e:
            raise ValueError(f"request {i} ({r!r}): {e}") from None


@dataclass(frozen=True)
class ReaderAnswer:
    """An answer to query ``qid``: ``value`` within ``bound`` of the exact inner product over
    the window at arrival ``count`` (delivered ``as_of_ms``); ``local``: from the cache."""

    qid: int
    value: float
    bound: float
    as_of_ms: int | None
    count: int
    local: bool


class SummaryReader:
    """A reader of one summary key: a cache (its ClientSite's replicas) and an outbox.

    ``answers`` collects every answer by query id (``last_qid`` is the latest query's);
    ``pending`` maps forwarded query ids to their ``(count, as_of_ms)``.
    """

    def __init__(self, name: str, series: str, window: int, k: int = 1) -> None:
        self.name, self.key = name, _check_key(series, window, k)
        self.client = ClientSite(READER_SITE, parent=0)
        self.count, self.as_of_ms, self.seen = 0, None, 0
        self.outbox: list[Row] = []
        self.answers: dict[int, ReaderAnswer] = {}
        self.pending: dict[int, tuple[int, int | None]] = {}
        self.last_qid: int | None = None
        self.traffic = MessageCounts()

    def subscribe(self) -> None:
        """Queue the join request (the host starts the key's SourceSite if none runs)."""
        self.outbox.append(_row(self.name, self.key, None))

    def deliver(
        self, messages: Sequence[Mapping[str, Any]], count: int, as_of_ms: int
    ) -> list[ReaderAnswer]:
        """Apply the host's messages for this reader and key (others are skipped), in order;
        the cache now reflects arrival ``count`` at ``as_of_ms``. Returns the new answers."""
        if count < self.count:
            raise ValueError(
                f"{self.name}: the arrival count went back from {self.count} to {count}"
            )
        new: list[ReaderAnswer] = []
        for row in messages:
            if (
                row.get("reader") != self.name
                or (row.get("series"), row.get("window"), row.get("k")) != self.key
            ):
                continue
            n = row.get("n", self.seen + 1)
            if n <= self.seen:
                continue  # redelivered
            if n != self.seen + 1:
                raise ValueError(
                    f"{self.name}: message {n} arrived after {self.seen}; one was lost"
                )
            self.seen = n
            m = from_dict(row["message"])
            self.traffic.add(m)
            for a in self.client.on_message(m, as_of_ms).answers:
                at, ms = self.pending.pop(a.qid[1], (count, as_of_ms))
                new.append(ReaderAnswer(a.qid[1], a.value, a.bound, ms, at, local=False))
        self.count, self.as_of_ms = count, as_of_ms
        self.answers.update((a.qid, a) for a in new)
        return new

    def query(
        self, indices: Sequence[int], weights: Sequence[float], delta: float
    ) -> ReaderAnswer | None:
        """``(I, W, delta)`` over positions back in time (0: newest) at the delivered count:
        answered from the cache if its ranges meet ``delta`` (Fig. 8a), else forwarded."""
        held = min(self.count, self.key[1])
        if any(not 0 <= p < held for p in indices):
            raise ValueError(f"{self.name}: positions must lie in [0, {held}), got {list(indices)}")
        r = self.client.query(indices, weights, delta, self.count, self.as_of_ms or 0)
        if r.answers:
            a = r.answers[0]
            self.last_qid = a.qid[1]
            self.answers[a.qid[1]] = ReaderAnswer(
                a.qid[1], a.value, a.bound, self.as_of_ms, self.count, local=True
            )
            return self.answers[a.qid[1]]
        (q,) = r.messages
        self.last_qid = q.qid[1]
        self.pending[q.qid[1]] = (self.count, self.as_of_ms)
        self.outbox.append(_row(self.name, self.key, to_dict(q)))
        return None

    def end_phase(self, now_ms: int) -> None:
        """Fig. 8(b): the contraction test; a dropped segment's Decache goes to the outbox."""
        for m in self.client.end_phase(now_ms).messages:
            self.outbox.append(_row(self.name, self.key, to_dict(m)))

    def drain(self) -> list[Row]:
        """The queued requests, in order (counted as sent now), and an empty outbox."""
        out, self.outbox = self.outbox, []
        for row in out:
            if row["message"] is not None:
                self.traffic.add(from_dict(row["message"]))
        return out
