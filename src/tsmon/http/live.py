"""What the HTTP API serves: the newest state of a running job, fed one batch at a time.

:class:`Live` subscribes to a job's batches (:meth:`tsmon.spark.sinks.Sinks.subscribe`, or any
caller of :meth:`Live.feed` with a :class:`~tsmon.spark.sinks.BatchOutput`) and keeps, under
one lock: every query's newest answer, a bounded history of each numeric answer's value and
bounds (``Part.band``), the newest events numbered in arrival order, the newest progress
record, and running totals (input rows, events, dead letters by reason). Feeding only keeps
references (answers are frozen dataclasses): turning them into JSON is left to the readers
(the Starlette app, the Prometheus collector), in the server's thread, not the batch's;
:meth:`Live.wait` lets a long poll or an event stream sleep until a batch newer than the one it
has seen arrives.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections import Counter, deque
from collections.abc import Iterator, Mapping
from typing import Any

from tsmon import kinds
from tsmon.spark.sinks import BatchOutput

__all__ = ["Live", "json_safe"]


def json_safe(value: Any) -> Any:
    """``value`` as plain JSON: dataclasses as dicts, tuples as lists, NaN and ±inf as None
    (JSON has no such numbers; a bound of ±inf means "not bounded yet")."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset, deque)):
        return [json_safe(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if hasattr(value, "item"):  # numpy scalars
        return json_safe(value.item())
    return value


Band = tuple[float | None, float | None, float | None]  # value, lo, hi; None: not a number


def _bands(answers: Mapping[str, Mapping[str, Any]]) -> Iterator[tuple[str, str, Band]]:
    """``(part, query, band)`` of each numeric answer of ``answers`` (part -> query -> answer),
    by its part's ``band``."""
    for part in kinds.PARTS:
        if part.band is not None:
            for query, answer in answers.get(part.name, {}).items():
                value, lo, hi = (None if b is None else float(b) for b in part.band(answer))
                yield part.name, query, (value, lo, hi)


class Live:
    """The newest state of a job, fed by :meth:`feed` after every batch.

    Parameters
    ----------
    history
        Points kept per answer for ``/answers/history`` and the dashboard's bands.
    events
        Newest events kept for ``/events``.
    """

    def __init__(self, history: int = 600, events: int = 500) -> None:
        self._lock = threading.Condition()
        self.batches = 0  # batches fed; a waiter compares against it
        self.batch_id: int | None = None
        self.progress: Mapping[str, Any] = {}
        self.answers: dict[str, dict[str, Any]] = {}  # part -> query -> answer
        self.bands: dict[str, tuple[str, float, float | None, float | None]] = {}
        self.history: dict[str, deque[tuple[int, int, Any, Any, Any]]] = {}
        self._history_len = history
        self.events: deque[dict[str, Any]] = deque(maxlen=events)
        self.event_seq = 0  # number of events fed so far; an event's ``seq`` is its position
        self.totals: Counter[str] = Counter()
        self.dead_letters: Counter[str] = Counter()
        self.started = time.time()
        self.last_batch_at: float | None = None
        self.closed = False

    def feed(self, out: BatchOutput) -> None:
        """Take one batch's output (a :class:`~tsmon.spark.sinks.Sinks` subscriber)."""
        now = time.time()
        with self._lock:
            self.batch_id = out.batch_id
            self.progress = out.progress
            self.totals["numInputRows"] += int(out.progress.get("numInputRows", 0))
            self.totals["rowsToCoordinator"] += int(out.progress.get("rowsToCoordinator", 0))
            self.totals["events"] += len(out.events)
            self.dead_letters.update(str(r["reason"]) for r in out.rejected)
            for part in kinds.PARTS:
                if part.name in out.answers:
                    self.answers[part.name] = dict(out.answers[part.name])
            for part_name, query, band in _bands(out.answers):
                self._record(part_name, query, band, out.batch_id, now)
            for name in [q for q, (p, *_) in self.bands.items() if q not in self._named(p)]:
                del self.bands[name]  # a removed query: its history stays for the page
            for event in out.events:
                self.events.append({"seq": self.event_seq, "batch": out.batch_id, **event})
                self.event_seq += 1
            self.batches += 1
            self.last_batch_at = now
            self._lock.notify_all()

    def _named(self, part: str) -> Mapping[str, Any]:
        return self.answers.get(part, {})

    def _record(self, part: str, query: str, band: Band, batch: int, now: float) -> None:
        value, lo, hi = band
        self.bands[query] = (part, value, lo, hi)
        history = self.history.setdefault(query, deque(maxlen=self._history_len))
        if history and history[-1][0] == batch:
            history.pop()  # a replayed batch replaces its point
        history.append((batch, round(now * 1000), value, lo, hi))

    # -- readers ---------------------------------------------------------------------------
    def wait(self, seen: int, timeout: float) -> int:
        """Block until more than ``seen`` batches were fed (or ``timeout`` s, or :meth:`close`);
        return the number fed."""
        with self._lock:
            self._lock.wait_for(lambda: self.batches > seen or self.closed, timeout)
            return self.batches

    def close(self) -> None:
        """Wake every waiter for good (the server is stopping)."""
        with self._lock:
            self.closed = True
            self._lock.notify_all()

    def events_after(self, seq: int, limit: int) -> list[dict[str, Any]]:
        """The kept events numbered above ``seq`` (-1: all kept), oldest first, at most
        ``limit`` (the newest ones if there are more)."""
        with self._lock:
            out = [e for e in self.events if e["seq"] > seq]
        return json_safe(out[-limit:] if limit else [])  # events are not changed once fed

    def snapshot(
        self, checkpoint: tuple[int, Mapping[str, Mapping[str, Any]]] | None = None
    ) -> dict[str, Any]:
        """The newest answers (by part), progress and totals as one JSON object. Before the
        first batch, ``checkpoint`` (a batch id and its answers by part: a restarted job's
        newest coordinator snapshot) gives the answers and bands, ``fromCheckpoint`` true."""
        with self._lock:
            batch, answers, bands = self.batch_id, self.answers, self.bands
            restored = batch is None and checkpoint is not None
            if restored:
                batch, answers = checkpoint
                bands = {q: (p, *band) for p, q, band in _bands(answers)}
            snap = {
                "batch": batch,
                "fromCheckpoint": restored,
                "answers": {part: dict(a) for part, a in answers.items()},
                "bands": {
                    q: {"part": p, "value": v, "lo": lo, "hi": hi}
                    for q, (p, v, lo, hi) in bands.items()
                },
                "progress": self.progress,
                "totals": dict(self.totals),
                "deadLetters": dict(self.dead_letters),
                "events": self.event_seq,
            }
        return json_safe(snap)  # outside the lock: what it reads is not changed once fed

    def last_progress(self) -> dict[str, Any]:
        """The last batch's progress record as JSON (``{}`` before the first batch)."""
        with self._lock:
            progress = self.progress
        return json_safe(progress)

    def history_of(self) -> dict[str, Any]:
        """Every numeric answer's kept history: ``{query: {"part", "points": [...]}}`` where a
        point is ``{"batch", "t" (wall ms), "value", "lo", "hi"}``."""
        keys = ("batch", "t", "value", "lo", "hi")
        with self._lock:
            part_of = {q: b[0] for q, b in self.bands.items()}
            history = {q: list(h) for q, h in self.history.items()}
        return {
            q: {
                "part": part_of.get(q),
                "running": q in part_of,
                "points": [json_safe(dict(zip(keys, p, strict=True))) for p in points],
            }
            for q, points in history.items()
        }

    def metrics_view(self) -> dict[str, Any]:
        """What the Prometheus collector reads, copied under the lock."""
        with self._lock:
            return {
                "batch": self.batch_id,
                "progress": self.progress,
                "totals": dict(self.totals),
                "deadLetters": dict(self.dead_letters),
                "bands": dict(self.bands),
                "lastBatchAt": self.last_batch_at,
            }
