"""Summary readers of a running job: SWAT-ASR clients with a cache (Bulut & Singh 2003, §3).

The source node of a series keeps its SWAT and the source site's directory
(:class:`~tsmon.engine.replicas.ReplicaHost`); a :class:`JobReader` is a downstream reader in
any Python process that can reach the job's checkpoint directory. It answers inner-product
queries ``(I, W, δ)`` over the series' last ``N`` values from its cache when the cached data
ranges meet ``δ``, and forwards the rest to the source, which replicates segments towards
readers that read them more than they change (the phase-end tests of Fig. 8b).

Transport (files, like the rest of the job's control):

* **to the source**: the reader's requests (join, forwarded queries, decaches) are ``replica``
  commands in the job's command log (:mod:`tsmon.spark.commands`); the coordinator takes them at
  the start of a batch and sends each to its series' source node with the next control, so a
  request made after batch ``N`` is applied at the start of batch ``N + 2``, before its values;
* **to the readers**: after every batch in which a source site runs, the driver writes
  ``<checkpoint>/replicas/batch-<N>.json`` (atomically): the messages for readers and each
  summary key's arrival count and time (the clock §3's sites share). :meth:`JobReader.poll`
  reads the files it has not seen, in order.

A forwarded query is answered for the arrival count at which it was asked; when its positions
have left the window by the time the source gets it, the answer says so (``nan`` within
``inf``) and the reader may ask again. The driver keeps the last :data:`RETAIN_BATCHES` files;
a reader further behind is told so (:class:`ReaderBehindError` from :meth:`JobReader.poll`:
its cache can no longer follow the source) and must come back under a new name.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tsmon.engine.replicas import DEFAULT_PHASE_MS, ReaderAnswer, SummaryReader, phase_ends
from tsmon.kinds.replication import ReplicaPart
from tsmon.spark.commands import CommandLog
from tsmon.spark.files import atomic_write

__all__ = ["RETAIN_BATCHES", "JobReader", "ReaderBehindError", "write_replicas"]

RETAIN_BATCHES = 1_000
"""How many batches of reader messages the driver keeps."""


class ReaderBehindError(RuntimeError):
    """A reader polled after the driver dropped messages it had not read: its cache can no
    longer follow the source; it must join again under a new name."""


def _directory(checkpoint: Path) -> Path:
    return Path(checkpoint) / "replicas"


def _batch_of(path: Path) -> int:
    return int(path.stem.split("-")[1])


def _files(checkpoint: Path) -> list[Path]:
    """The batch files of reader messages kept now, oldest first."""
    directory = _directory(checkpoint)
    return sorted(directory.glob("batch-*.json")) if directory.is_dir() else []


def write_replicas(checkpoint: Path, batch_id: int, replicas: ReplicaPart) -> None:
    """Write batch ``batch_id``'s messages for readers and the keys' clocks (a replay writes
    the same file again); drop files older than :data:`RETAIN_BATCHES` batches."""
    directory = _directory(checkpoint)
    directory.mkdir(parents=True, exist_ok=True)
    clock = [[*key, count, now] for key, (count, now) in sorted(replicas.clock.items())]
    record = {"batch": batch_id, "messages": replicas.out, "clock": clock}
    atomic_write(directory / f"batch-{batch_id:09d}.json", json.dumps(record, sort_keys=True))
    for old in directory.glob("batch-*.json"):
        if _batch_of(old) <= batch_id - RETAIN_BATCHES:
            old.unlink(missing_ok=True)


class JobReader:
    """A reader of the summary ``(series, window, k)`` of the job at ``checkpoint``.

    ``phase_ms`` must be the job's ``[replication] phase``. The reader joins at once (the
    source site starts summarising when the join reaches it).
    """

    def __init__(
        self,
        checkpoint: str | Path,
        name: str,
        series: str,
        window: int,
        k: int = 1,
        phase_ms: int = DEFAULT_PHASE_MS,
    ) -> None:
        self.checkpoint = Path(checkpoint)
        self.reader = SummaryReader(name, series, window, k)
        self.log = CommandLog(self.checkpoint)
        self.phase_ms = phase_ms
        self.batch = -1  # the last batch file read
        # the newest batch file when the reader joined: its messages come after it
        self._joined = max(map(_batch_of, _files(self.checkpoint)), default=-1)
        self._last_ms: int | None = None
        self.reader.subscribe()
        self.flush()

    @property
    def answers(self) -> dict[int, ReaderAnswer]:
        """Every answer so far, by query id."""
        return self.reader.answers

    @property
    def count(self) -> int:
        """The arrival count the cache reflects (0 before the source site's first value)."""
        return self.reader.count

    def poll(self) -> list[ReaderAnswer]:
        """Read the batch files not seen yet: apply the messages, run the phase ends they
        pass, send what that produced; return the answers to forwarded queries that came."""
        new: list[ReaderAnswer] = []
        files = _files(self.checkpoint)
        if files:
            self._check_kept(_batch_of(files[-1]))
        for path in [p for p in files if _batch_of(p) > self.batch]:
            try:
                text = path.read_text(encoding="utf-8")
            except FileNotFoundError:  # dropped since the listing: newer batches were written
                self._check_kept(_batch_of(path) + RETAIN_BATCHES)
                continue  # a batch from before the reader joined
            record = json.loads(text)
            clock = {(s, w, k): (count, now) for s, w, k, count, now in record["clock"]}
            if self.reader.key in clock:
                count, now = clock[self.reader.key]
                new += self.reader.deliver(record["messages"], count, now)
                for end in phase_ends(self._last_ms, now, self.phase_ms):
                    self.reader.end_phase(end)
                self._last_ms = now
            self.batch = _batch_of(path)
        self.flush()
        return new

    def _check_kept(self, newest: int) -> None:
        """Raise :class:`ReaderBehindError` if the batch files after the last one this reader
        read (or after its join) are no longer all kept, ``newest`` the newest written."""
        needed = max(self.batch, self._joined) + 1
        if needed <= newest - RETAIN_BATCHES:
            raise ReaderBehindError(
                f"reader {self.reader.name!r} fell behind: it needs the messages of batch "
                f"{needed} on, the job keeps the last {RETAIN_BATCHES} batches (now up to "
                f"{newest}); poll more often, and join again under a new name"
            )

    def query(
        self, indices: Sequence[int], weights: Sequence[float], delta: float
    ) -> ReaderAnswer | None:
        """``(I, W, δ)`` over positions back in time (0: the newest value): from the cache,
        or ``None`` when forwarded (its answer arrives through :meth:`poll`, under
        ``last_qid``)."""
        answer = self.reader.query(indices, weights, delta)
        self.flush()
        return answer

    @property
    def last_qid(self) -> int | None:
        """The id of the last query asked."""
        return self.reader.last_qid

    def flush(self) -> None:
        """Submit the queued requests as ``replica`` commands."""
        for row in self.reader.drain():
            self.log.submit("replica", json.dumps(row, sort_keys=True))

    def stats(self) -> dict[str, Any]:
        """Messages this reader sent and received, by kind."""
        return {"messages": self.reader.traffic.total, "by_kind": dict(self.reader.traffic.by_kind)}
