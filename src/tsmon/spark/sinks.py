"""Where a job's batches go: Parquet files, a live console table, a user callback.

Every micro-batch of the node query gives one :class:`BatchOutput` on the driver: the bounded
answers as of the coordinator's time, the events of the watch queries (in
:func:`~tsmon.engine.events.event_order`), the points the nodes rejected (late, duplicate) and
the batch's progress record. The Parquet sink writes one file per batch id and kind, under a
temporary name and renamed, so a batch Spark replays after a crash replaces its files instead
of adding to them::

    <path>/answers/batch-<N>.parquet          batch_id, query, value, lo, hi, as_of_ms, as_of_utc
    <path>/events/batch-<N>.parquet           batch_id, query, series, ts_ms, ts_utc, value,
                                              payload (JSON), coverage, replayed
    <path>/dead_letters/batch-<N>.parquet     source, series, ts, ts_utc, value, raw_ts, raw_value,
                                              reason, detail
    <path>/topk/batch-<N>.parquet             batch_id, query, members (JSON list), k, eps,
                                              bottom, epoch, settled, nodes, messages, ignored
    <path>/standing/batch-<N>.parquet         batch_id, query, ts_ms, value, mu_a, eps,
                                              interrupted, eps_intr, next_due_ms, late
                                              (evaluations received in the batch)
    <path>/summaries/batch-<N>.parquet        batch_id, query, value, bound, points, positions,
                                              possible (JSON lists), ignored, satisfied,
                                              lower, upper (answers received)

Beside every epoch-ms column is its UTC timestamp (``<name>_utc``; ``ts_utc`` beside the
``ts`` of dead letters), for readers that want times rather than milliseconds.

Dead letters are input rows that could not be read (``bad_source`` for a source named like a
query partition, ``bad_series``, ``bad_timestamp``,
``not_numeric``, ``nan``, ``infinite``; ``ts``/``value`` null when unreadable) and points the
source nodes rejected (``too_late``, ``duplicate`` under ``keep_first``, with a ``detail``).
The console sink is a live table (rich) of the answers with their bounds, the newest events and
the batch's progress, redrawn after every batch; without a terminal it prints a few lines per
batch instead.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from tsmon import kinds
from tsmon.core.timestamps import (
    MAX_INSTANT_MS,
    MIN_INSTANT_MS,
    format_instant_and_ms,
    format_instant_ms,
)
from tsmon.core.units import format_value
from tsmon.spark.files import atomic_file
from tsmon.spark.job import SinkSpec

__all__ = [
    "DEAD_LETTER_COLUMNS",
    "EVENT_COLUMNS",
    "BatchOutput",
    "Callback",
    "ConsoleView",
    "Sinks",
    "answer_frame",
    "dead_letter_frame",
    "event_frame",
    "event_rows",
    "with_utc",
]

#: The columns of both kinds of dead-letter files.
DEAD_LETTER_COLUMNS = ["source", "series", "ts", "value", "raw_ts", "raw_value", "reason", "detail"]
#: The columns of event files.
EVENT_COLUMNS = ["batch_id", "query", "series", "ts_ms", "value", "payload", "coverage", "replayed"]


@dataclass(frozen=True)
class BatchOutput:
    """What one micro-batch produced on the driver.

    ``answers`` maps a part name (:data:`tsmon.kinds.PARTS`: ``bounded``, ``topk``,
    ``standing``, ``local`` for summary queries) to every query's newest answer; ``arrived``
    maps it to the ``(query, answer)`` pairs received in this batch (for bounded and top-k
    queries: every answer, each batch).
    """

    batch_id: int
    events: Sequence[Mapping[str, Any]]  # {"query", "series", "ts_ms", "value", "payload", ...}
    rejected: Sequence[Mapping[str, Any]]  # dead letters, keyed by DEAD_LETTER_COLUMNS
    progress: Mapping[str, Any]
    answers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    arrived: Mapping[str, Sequence[tuple[str, Any]]] = field(default_factory=dict)


#: ``callback(output)`` is called on the driver after every batch (the ``callback`` sink).
Callback = Callable[[BatchOutput], None]


class Sinks:
    """The job's sinks, given every batch's output by :meth:`emit`."""

    def __init__(self, specs: Sequence[SinkSpec], callback: Callback | None = None) -> None:
        self.paths = [s.path for s in specs if s.kind == "parquet" and s.path is not None]
        self.subscribers: list[Callback] = [] if callback is None else [callback]
        self.console = ConsoleView() if any(s.kind == "console" for s in specs) else None

    def start(self) -> None:
        """Begin the live console table (if any)."""
        if self.console is not None:
            self.console.start()

    def stop(self) -> None:
        """End the live console table (if any), leaving its last state on screen."""
        if self.console is not None:
            self.console.stop()

    def subscribe(self, callback: Callback) -> None:
        """Give every later batch's output to ``callback`` too (the HTTP API, the webhook)."""
        self.subscribers.append(callback)

    def emit(self, out: BatchOutput) -> None:
        """Write one batch's answers, events and dead letters to every sink."""
        for path in self.paths:
            _write_batch(path, out)
        for callback in self.subscribers:
            callback(out)
        if self.console is not None:
            self.console.update(out)


def _write(path: Path, frame: pd.DataFrame) -> None:
    atomic_file(path, partial(with_utc(frame).to_parquet, index=False))


def with_utc(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with a UTC timestamp column ``<name>_utc`` after each epoch-ms column
    (``<name>_ms``, and the ``ts`` of dead letters): the readable time beside the exact one;
    null where the time is none or outside what a timestamp column holds (a dead letter
    ``bad_timestamp`` of the year 2999 keeps its exact ``ts``).

    Examples
    --------
    >>> with_utc(pd.DataFrame({"ts_ms": [1704067200000], "v": [1.0]})).columns.tolist()
    ['ts_ms', 'ts_utc', 'v']
    >>> str(with_utc(pd.DataFrame({"ts": [1704067200500]}))["ts_utc"][0])
    '2024-01-01 00:00:00.500000+00:00'
    >>> with_utc(pd.DataFrame({"ts": [32475998400000, None]}))["ts_utc"].isna().tolist()
    [True, True]
    """
    out = frame.copy()
    for column in [c for c in frame.columns if c.endswith("_ms") or c == "ts"]:
        twin = f"{column.removesuffix('_ms')}_utc"
        millis = pd.to_numeric(frame[column], errors="coerce")
        millis = millis.where(millis.between(MIN_INSTANT_MS, MAX_INSTANT_MS))
        stamps = pd.to_datetime(millis, unit="ms", utc=True)
        out.insert(out.columns.get_loc(column) + 1, twin, stamps)
    return out


def _write_batch(path: Path, out: BatchOutput) -> None:
    n = out.batch_id
    if out.events:
        _write(path / "events" / f"batch-{n:09d}.parquet", event_frame(out))
    if out.rejected:
        _write(path / "dead_letters" / f"batch-{n:09d}.parquet", dead_letter_frame(out))
    for part in kinds.PARTS:
        arrived = out.arrived.get(part.name)
        if part.sink is not None and arrived:
            _write(path / part.sink / f"batch-{n:09d}.parquet", answer_frame(n, arrived))


def event_frame(out: BatchOutput) -> pd.DataFrame:
    """A batch's events, :data:`EVENT_COLUMNS`."""
    return pd.DataFrame(event_rows(out), columns=EVENT_COLUMNS)


def event_rows(out: BatchOutput) -> list[tuple]:
    """A batch's events as tuples of :data:`EVENT_COLUMNS` (the payload as JSON)."""
    return [
        (
            out.batch_id,
            e["query"],
            e["series"],
            e["ts_ms"],
            e["value"],
            json.dumps(e["payload"], sort_keys=True),
            e["coverage"],
            e["replayed"],
        )
        for e in out.events
    ]


def dead_letter_frame(out: BatchOutput) -> pd.DataFrame:
    """A batch's dead letters, :data:`DEAD_LETTER_COLUMNS`."""
    return pd.DataFrame([dict(r) for r in out.rejected], columns=DEAD_LETTER_COLUMNS)


def answer_frame(batch_id: int, answers: Sequence[tuple[str, Any]]) -> pd.DataFrame:
    """``batch_id, query`` and the answers' fields (a dataclass, ``name`` left out); tuple
    fields as JSON lists."""
    names = [f.name for f in fields(answers[0][1]) if f.name != "name"]
    rows = [(batch_id, q, *(getattr(a, f) for f in names)) for q, a in answers]
    frame = pd.DataFrame(rows, columns=["batch_id", "query", *names])
    for column in names:
        if isinstance(getattr(answers[0][1], column), tuple):
            frame[column] = frame[column].map(lambda m: json.dumps(list(m)))
    return frame


class ConsoleView:
    """A live table of the answers with their bounds, the newest events and the progress.

    On a terminal it redraws in place (rich ``Live``); otherwise (a pipe, a log file) it
    prints a few lines per batch.
    """

    def __init__(self, console: Console | None = None, events_shown: int = 8) -> None:
        self.console = console or Console(highlight=False)
        self.recent: deque[Mapping[str, Any]] = deque(maxlen=events_shown)
        self.events = 0
        self.live: Live | None = None
        #: ``headline(output)``: a line shown first for each batch (how far a run has got)
        self.headline: Callable[[BatchOutput], str] | None = None

    def start(self) -> None:
        """Start redrawing in place, if the console is a terminal."""
        if self.console.is_terminal and self.live is None:
            self.live = Live(console=self.console, auto_refresh=False, transient=False)
            self.live.start()

    def stop(self) -> None:
        """Stop redrawing; the last table stays."""
        if self.live is not None:
            self.live.stop()
            self.live = None

    def update(self, out: BatchOutput) -> None:
        """Show one batch."""
        self.events += len(out.events)
        self.recent.extend(out.events)
        if self.live is not None:
            self.live.update(self.render(out), refresh=True)
            return
        if self.headline is not None:
            self.console.print(self.headline(out), markup=False, soft_wrap=True)
        p = out.progress
        self.console.print(
            f"batch {out.batch_id}: {p.get('numInputRows', 0)} points, "
            f"{p.get('rowsToCoordinator', 0)} rows to the coordinator, "
            f"{len(out.events)} events, "
            f"{sum(len(a) for a in out.answers.values())} answers",
            markup=False,
            soft_wrap=True,  # a log line stays one line, whatever the width
        )
        for line in kinds.answer_lines(out.answers):
            self.console.print(f"  {line}", markup=False, soft_wrap=True)
        for name, why in _waiting(p).items():
            self.console.print(f"  {name} waits: {why}", markup=False, soft_wrap=True)

    def render(self, out: BatchOutput) -> Group:
        """The table of answers, the newest events and a progress line."""
        parts: list[Any] = []
        for part in kinds.PARTS:
            answers = out.answers.get(part.name)
            if part.title is not None and answers:
                lines = {name: part.line(a) for name, a in answers.items()}
                parts.append(_answer_table(f"{part.title} after batch {out.batch_id}", lines))
        events = Table(title=f"newest events ({self.events} so far)", title_justify="left")
        for column in ("query", "series", "time (UTC)", "ts (ms)", "payload"):
            events.add_column(column)
        for e in self.recent:
            payload = ", ".join(f"{k}={_short(v)}" for k, v in e["payload"].items())
            when, ms = format_instant_ms(e["ts_ms"]), str(e["ts_ms"])
            events.add_row(Text(e["query"]), Text(e["series"]), when, ms, Text(payload))
        p = out.progress
        watermark = p.get("watermark")
        watermark = "none yet" if watermark is None else format_instant_and_ms(watermark)
        line = (
            f"points {p.get('numInputRows', 0)} · rows to coordinator "
            f"{p.get('rowsToCoordinator', 0)} · control rows {p.get('controlRows', 0)} · "
            f"watermark {watermark} · driver {p.get('driverMs', 0):.0f} ms"
        )
        if p.get("previousBatchDurationMs") is not None:
            line += f" · previous batch {p['previousBatchDurationMs']} ms"
        waiting = [Text(f"{name} waits: {why}") for name, why in _waiting(p).items()]
        head = [] if self.headline is None else [Text(self.headline(out))]
        return Group(*head, *parts, events, Text(line), *waiting)


def _waiting(progress: Mapping[str, Any]) -> dict[str, str]:
    """The queries no series matches yet (name -> why), from a batch's progress."""
    return dict(progress.get("unmatchedQueries") or {})


def _answer_table(title: str, lines: Mapping[str, str]) -> Table:
    """A two-column table: each query and its answer as one line."""
    table = Table(title=title, title_justify="left")
    table.add_column("query")
    table.add_column("answer")
    for name, line in lines.items():
        table.add_row(Text(name), Text(line))
    return table


def _short(value: Any) -> str:
    return format_value(value) if isinstance(value, float) else str(value)
