"""Where a job's batches go: Parquet files, a live console table, a user callback.

Every micro-batch of the node query gives one :class:`BatchOutput` on the driver: the bounded
answers as of the coordinator's time, the events of the watch queries (in
:func:`~tsmon.engine.watch.event_order`), the points the nodes rejected (late, duplicate) and
the batch's progress record. The Parquet sink writes one file per batch id and kind, under a
temporary name and renamed, so a batch Spark replays after a crash replaces its files instead
of adding to them::

    <path>/answers/batch-<N>.parquet          batch_id, query, value, lo, hi, as_of_ms
    <path>/events/batch-<N>.parquet           batch_id, query, series, ts_ms, value,
                                              payload (JSON), coverage, replayed
    <path>/dead_letters/batch-<N>.parquet     source, series, ts, value, raw_ts, raw_value,
                                              reason, detail
    <path>/topk/batch-<N>.parquet             batch_id, query, members (JSON list), k, eps,
                                              bottom, epoch, settled, nodes, messages, ignored
    <path>/standing/batch-<N>.parquet         batch_id, query, ts_ms, value, mu_a, eps,
                                              interrupted, eps_intr, next_due_ms, late
                                              (evaluations received in the batch)
    <path>/summaries/batch-<N>.parquet        batch_id, query, value, bound, points, positions,
                                              possible (JSON lists), ignored, satisfied,
                                              lower, upper (answers received)

Dead letters are input rows that could not be read (``bad_source`` for a source named like a
query partition, ``bad_series``, ``unreadable_ts``,
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
from dataclasses import astuple, dataclass, field, fields
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from tsmon.engine.standing import StandingAnswer
from tsmon.engine.summaries import SummaryAnswer
from tsmon.engine.topk import TopKAnswer
from tsmon.protocols.filters import Answer
from tsmon.report import format_value
from tsmon.spark.files import atomic_file
from tsmon.spark.job import SinkSpec

__all__ = ["DEAD_LETTER_COLUMNS", "BatchOutput", "Callback", "ConsoleView", "Sinks"]

#: The columns of both kinds of dead-letter files.
DEAD_LETTER_COLUMNS = ["source", "series", "ts", "value", "raw_ts", "raw_value", "reason", "detail"]


@dataclass(frozen=True)
class BatchOutput:
    """What one micro-batch produced on the driver."""

    batch_id: int
    answers: Mapping[str, Answer]
    events: Sequence[Mapping[str, Any]]  # {"query", "series", "ts_ms", "value", "payload", ...}
    rejected: Sequence[Mapping[str, Any]]  # dead letters, keyed by DEAD_LETTER_COLUMNS
    progress: Mapping[str, Any]
    topk: Mapping[str, TopKAnswer] = field(default_factory=dict)  # top-k sets, by query
    # standing queries: the last evaluation of each, and those that arrived in this batch
    standing: Mapping[str, StandingAnswer] = field(default_factory=dict)
    evaluated: Sequence[StandingAnswer] = ()
    # summary queries: the newest answer of each, and those that arrived in this batch
    summaries: Mapping[str, SummaryAnswer] = field(default_factory=dict)
    summarized: Sequence[SummaryAnswer] = ()


#: ``callback(output)`` is called on the driver after every batch (the ``callback`` sink).
Callback = Callable[[BatchOutput], None]


class Sinks:
    """The job's sinks, given every batch's output by :meth:`emit`."""

    def __init__(self, specs: Sequence[SinkSpec], callback: Callback | None = None) -> None:
        self.paths = [s.path for s in specs if s.kind == "parquet" and s.path is not None]
        self.callback = callback
        self.console = ConsoleView() if any(s.kind == "console" for s in specs) else None

    def start(self) -> None:
        """Begin the live console table (if any)."""
        if self.console is not None:
            self.console.start()

    def stop(self) -> None:
        """End the live console table (if any), leaving its last state on screen."""
        if self.console is not None:
            self.console.stop()

    def emit(self, out: BatchOutput) -> None:
        """Write one batch's answers, events and dead letters to every sink."""
        for path in self.paths:
            _write_batch(path, out)
        if self.callback is not None:
            self.callback(out)
        if self.console is not None:
            self.console.update(out)


def _write(path: Path, frame: pd.DataFrame) -> None:
    atomic_file(path, partial(frame.to_parquet, index=False))


def _write_batch(path: Path, out: BatchOutput) -> None:
    n = out.batch_id
    answers = pd.DataFrame(
        [(n, q, a.value, a.lo, a.hi, a.as_of_ms) for q, a in out.answers.items()],
        columns=["batch_id", "query", "value", "lo", "hi", "as_of_ms"],
    )
    _write(path / "answers" / f"batch-{n:09d}.parquet", answers)
    if out.events:
        events = pd.DataFrame(
            [
                (
                    n,
                    e["query"],
                    e["series"],
                    e["ts_ms"],
                    e["value"],
                    json.dumps(e["payload"], sort_keys=True),
                    e["coverage"],
                    e["replayed"],
                )
                for e in out.events
            ],
            columns=[
                "batch_id",
                "query",
                "series",
                "ts_ms",
                "value",
                "payload",
                "coverage",
                "replayed",
            ],
        )
        _write(path / "events" / f"batch-{n:09d}.parquet", events)
    if out.rejected:
        frame = pd.DataFrame([dict(r) for r in out.rejected], columns=DEAD_LETTER_COLUMNS)
        _write(path / "dead_letters" / f"batch-{n:09d}.parquet", frame)
    if out.topk:
        columns = [f.name for f in fields(TopKAnswer)]
        rows = [(n, *astuple(a)) for a in out.topk.values()]
        frame = pd.DataFrame(rows, columns=["batch_id", *columns]).rename(columns={"name": "query"})
        frame["members"] = frame["members"].map(lambda m: json.dumps(list(m)))
        _write(path / "topk" / f"batch-{n:09d}.parquet", frame)
    if out.evaluated:
        columns = [f.name for f in fields(StandingAnswer)]
        rows = [(n, *astuple(a)) for a in out.evaluated]
        frame = pd.DataFrame(rows, columns=["batch_id", *columns]).rename(columns={"name": "query"})
        _write(path / "standing" / f"batch-{n:09d}.parquet", frame)
    if out.summarized:
        columns = [f.name for f in fields(SummaryAnswer)]
        rows = [(n, *astuple(a)) for a in out.summarized]
        frame = pd.DataFrame(rows, columns=["batch_id", *columns]).rename(columns={"name": "query"})
        for column in ("positions", "possible"):
            frame[column] = frame[column].map(lambda m: json.dumps(list(m)))
        _write(path / "summaries" / f"batch-{n:09d}.parquet", frame)


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
        p = out.progress
        self.console.print(
            f"batch {out.batch_id}: {p.get('numInputRows', 0)} points, "
            f"{p.get('rowsToCoordinator', 0)} rows to the coordinator, "
            f"{len(out.events)} events, {len(out.answers)} answers",
            markup=False,
        )
        for name, a in out.answers.items():
            self.console.print(
                f"  {name}: {format_value(a.value)} in [{format_value(a.lo)}, "
                f"{format_value(a.hi)}] as of {a.as_of_ms}",
                markup=False,
            )
        for name, t in out.topk.items():
            self.console.print(f"  {name}: {_topk_line(t)}", markup=False)
        for name, a in out.standing.items():
            self.console.print(f"  {name}: {_standing_line(a)}", markup=False)
        for name, a in out.summaries.items():
            self.console.print(f"  {name}: {_summary_line(a)}", markup=False)

    def render(self, out: BatchOutput) -> Group:
        """The table of answers, the newest events and a progress line."""
        answers = Table(title=f"bounded answers after batch {out.batch_id}", title_justify="left")
        for column in ("query", "value", "low", "high", "width", "as of (ms)"):
            answers.add_column(column, justify="left" if column == "query" else "right")
        for name, a in out.answers.items():
            cells = (a.value, a.lo, a.hi, a.hi - a.lo)
            answers.add_row(Text(name), *map(format_value, cells), str(a.as_of_ms))
        events = Table(title=f"newest events ({self.events} so far)", title_justify="left")
        for column in ("query", "series", "ts (ms)", "payload"):
            events.add_column(column)
        for e in self.recent:
            payload = ", ".join(f"{k}={_short(v)}" for k, v in e["payload"].items())
            events.add_row(Text(e["query"]), Text(e["series"]), str(e["ts_ms"]), Text(payload))
        parts: list[Any] = [answers]
        if out.topk:
            topk = Table(title="top-k sets", title_justify="left")
            for column in ("query", "set", "epoch", "nodes", "messages"):
                topk.add_column(column)
            for name, t in out.topk.items():
                cells = (_topk_line(t), str(t.epoch), str(t.nodes), str(t.messages))
                topk.add_row(Text(name), *map(Text, cells))
            parts.append(topk)
        if out.standing:
            lines = {name: _standing_line(a) for name, a in out.standing.items()}
            parts.append(_answer_table("standing queries (deferred)", lines))
        if out.summaries:
            lines = {name: _summary_line(a) for name, a in out.summaries.items()}
            parts.append(_answer_table("summary queries", lines))
        p = out.progress
        line = (
            f"points {p.get('numInputRows', 0)} · rows to coordinator "
            f"{p.get('rowsToCoordinator', 0)} · control rows {p.get('controlRows', 0)} · "
            f"watermark {p.get('watermark')} · driver {p.get('driverMs', 0):.0f} ms"
        )
        if p.get("previousBatchDurationMs") is not None:
            line += f" · previous batch {p['previousBatchDurationMs']} ms"
        return Group(*parts, events, Text(line))


def _topk_line(t: TopKAnswer) -> str:
    """``TOP 3 within 2: a, b, c`` (and ``(resolving)`` while a resolution runs)."""
    word = "BOTTOM" if t.bottom else "TOP"
    line = f"{word} {t.k} within {format_value(t.eps)}: {', '.join(t.members) or '(none yet)'}"
    return line if t.settled else f"{line} (resolving)"


def _answer_table(title: str, lines: Mapping[str, str]) -> Table:
    """A two-column table: each query and its answer as one line."""
    table = Table(title=title, title_justify="left")
    table.add_column("query")
    table.add_column("answer")
    for name, line in lines.items():
        table.add_row(Text(name), Text(line))
    return table


def _standing_line(a: StandingAnswer) -> str:
    """``12.5 ±0.5 at 1000 ms, next 1800 ms`` (and the interruption error if any)."""
    line = (
        f"{format_value(a.value)} ±{format_value(a.eps)} at {a.ts_ms} ms, "
        f"next {format_value(a.next_due_ms)} ms"
    )
    return f"{line} (interrupted: ±{format_value(a.eps_intr)})" if a.interrupted else line


def _summary_line(a: SummaryAnswer) -> str:
    """``41.5 ±0.8 over 1024 points`` (no ``±`` when the summary gives no bound; ``, wider
    than WITHIN`` when the bound did not meet the query's precision)."""
    bound = "" if a.bound is None else f" ±{format_value(a.bound)}"
    missed = ", wider than WITHIN" if a.satisfied is False else ""
    return f"{format_value(a.value)}{bound} over {a.points} points{missed}"


def _short(value: Any) -> str:
    return format_value(value) if isinstance(value, float) else str(value)
