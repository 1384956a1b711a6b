"""``tsmon replay``: queries over recorded CSV series, in this process, with a progress bar.

Everything that can be checked cheaply is checked before the replay (the output paths, the CSV
headers, ``--series``, the query file), so a mistake costs no replay time. Rows keep their
file's order; several files are merged by time (:func:`~tsmon.streams.csv_series.merge_by_time`).
A line that is no record is a ``malformed_line`` dead letter, as on Spark.
"""

from __future__ import annotations

import argparse
import signal
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from tsmon import kinds
from tsmon.cli.commands import console
from tsmon.cli.report import events_table, format_event, summary_line
from tsmon.core.textfile import check_writable, read_text
from tsmon.engine.events import Event
from tsmon.engine.monitor import Monitor
from tsmon.query import parse_queries
from tsmon.spark.signals import INTERRUPTED
from tsmon.streams.csv_series import concat_rows, csv_layout, merge_order, read_series_csv

__all__ = ["run_replay"]


def run_replay(args: argparse.Namespace) -> int:
    """Feed recorded CSV rows to a :class:`Monitor` in batches, printing events as they come;
    then the events per query, the aggregates' answers, the counts, notes, and the files asked
    for."""
    outputs: dict[Path, str] = {}
    for option in ("events_out", "dead_letters_out"):
        path, flag = getattr(args, option), "--" + option.replace("_", "-")
        if path is not None:
            check_writable(path, flag, [*args.csv, args.queries])
            if path.resolve() in outputs:  # written second, it would replace the first
                raise OSError(f"{flag} {path} is {outputs[path.resolve()]} too; pass two files")
            outputs[path.resolve()] = flag
    layouts = [csv_layout(path) for path in args.csv]
    _check_series_option(args.series, args.csv, layouts)
    queries = read_text(args.queries, "query file")
    _check_replayable(args.queries, parse_queries(queries))  # syntax errors too, before the CSVs
    frames = [read_series_csv(path, args.series) for path in args.csv]
    order = merge_order(frames, args.ts_unit)  # by time, a batch at a time: no merged copy
    points = concat_rows(frames) if len(frames) > 1 else frames[0]
    monitor = Monitor(
        allowed_lateness=args.allowed_lateness,
        max_future=None if args.max_future == "off" else args.max_future,
    )
    for name in points["series"].dropna().unique():  # names, not globs: cpu[0], [prod].x
        monitor.add_series(name, literal=True)
    monitor.add_query(queries)
    for name, why in monitor.unmatched().items():  # before any point: the events table says
        console.print(f"query {name!r} waits: {why}", soft_wrap=True)  # which kept waiting
    counts: Counter[str] = Counter()
    collected: list[Event] = []
    taken: list[np.ndarray] = []  # row positions in the order the monitor numbered them
    with _deferred_interrupt() as interrupted:
        fed = _feed(monitor, points, order, args, counts, collected, interrupted, taken)
    if args.events_out is not None:
        _write_events(collected, args.events_out)
    numbered = np.concatenate(taken) if taken else np.zeros(0, dtype=np.int64)
    if args.dead_letters_out is not None:
        dead = monitor.dead_letters()
        at = numbered[dead["seq"].to_numpy(np.int64)]
        dead["origin"] = points["origin"].take(at).to_numpy()
        _write_dead_letters(dead, args.dead_letters_out)
    console.print(events_table(counts, monitor.queries(), monitor.unmatched()))
    by_part = {p.name: monitor.answers(p.name) for p in kinds.PARTS if p.line is not None}
    answered = kinds.answer_lines(by_part)  # aggregates answer, rather than emit events
    if answered:
        console.print("answers at the end of the replay:")
        for line in answered:
            console.print(f"  {line}", soft_wrap=True, markup=False)
    stats = monitor.stats()
    console.print(summary_line(stats), soft_wrap=True)
    malformed = numbered[points["reason"].notna().to_numpy()[numbered]]  # in the order fed
    _notes(points[["reason", "detail"]].iloc[malformed], stats, args.max_future)
    if interrupted.is_set():
        console.print(
            f"interrupted: replayed the first {fed} of {len(points)} rows; the counts above "
            "are theirs",
            soft_wrap=True,
        )
        return INTERRUPTED
    return 0


def _feed(
    monitor: Monitor,
    points: pd.DataFrame,
    order: np.ndarray | None,
    args: argparse.Namespace,
    counts: Counter[str],
    collected: list[Event],
    interrupted: threading.Event,
    taken: list[np.ndarray],
) -> int:
    """Feed ``points`` in ``order`` (None: their own) in batches of ``--batch`` rows until
    done or ``interrupted``: events counted per query, the first ``--show`` printed, all kept
    with ``--events-out``, the rows' positions appended to ``taken`` in the order the monitor
    numbers them (its ``seq``); the number of rows fed."""
    shown = fed = 0
    with _progress() as progress:
        task = progress.add_task("replaying", total=len(points))
        for lo in range(0, len(points), args.batch):
            if interrupted.is_set():
                break
            hi = min(lo + args.batch, len(points))
            at = np.arange(lo, hi) if order is None else order[lo:hi]
            rows = points.iloc[lo:hi] if order is None else points.iloc[at]
            malformed = rows["reason"].notna().to_numpy()
            if malformed.any():  # lines that are no records: dead letters, as on Spark
                monitor.refuse("malformed_line", rows["detail"][malformed].tolist())
            taken += [at[malformed], at[~malformed]]
            texts = (rows[c].to_numpy(dtype=object) for c in ("series", "ts", "value"))
            kept = (t[~malformed] for t in texts)  # Python strings, a batch's only
            monitor.ingest(*kept, ts_unit=args.ts_unit)
            fed += len(rows)
            for event in monitor.events():
                counts[event.query] += 1
                if shown < args.show:
                    shown += 1
                    progress.console.print(format_event(event), soft_wrap=True)
                if args.events_out is not None:
                    collected.append(event)
            progress.update(task, advance=len(rows))
    return fed


def _notes(fed: pd.DataFrame, stats: dict[str, Any], max_future: str) -> None:
    """What the counts alone do not say: the lines that were no records (the first named),
    rows dead-lettered only for being ahead of this machine's clock."""
    malformed = fed["detail"][fed["reason"].notna()]
    if len(malformed):
        console.print(
            f"note: {len(malformed)} line{'s are' if len(malformed) > 1 else ' is'} no "
            "record (malformed_line), e.g. "
            f"{malformed.iloc[0]}",
            soft_wrap=True,
        )
    future = cast("dict[str, int]", stats["rejected_by_reason"]).get("future_timestamp", 0)
    if future:
        console.print(
            f"note: {future} {'row is' if future == 1 else 'rows are'} stamped more than "
            f"{max_future} after this machine's clock (future_timestamp); --max-future off "
            "replays them",
            soft_wrap=True,
        )


@contextmanager
def _deferred_interrupt() -> Iterator[threading.Event]:
    """Ctrl-C (SIGINT) sets the event yielded instead of raising, until the block ends: a
    replay checks it between batches, so a batch is fed whole or not at all and the counts
    shown after it are those of the rows fed (a ``KeyboardInterrupt`` inside an ``ingest``
    would leave its batch half-applied)."""
    interrupted = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: interrupted.set())
    try:
        yield interrupted
    finally:
        signal.signal(signal.SIGINT, previous)


def _check_replayable(path: Path, statements: list[Any]) -> None:
    """Refuse a query file a replay cannot run: no query in it (the replay would show
    nothing), or an ``ALTER QUERY`` (it changes a query while a job runs; a replay has every
    query from its first row)."""
    from tsmon.kinds import kind_of

    if not statements:
        raise ValueError(
            f"query file {path} holds no query, so the replay would show nothing; "
            "write QUERY statements in it (tsmon check shows what a file holds)"
        )
    for statement in statements:
        if not kind_of(statement).defines(statement):
            raise ValueError(
                f"query file {path}: ALTER QUERY {statement.name} changes a running job's query "
                "(tsmon query alter); a replay runs each query from the first row, so write "
                "the new setting in its QUERY statement"
            )


def _check_series_option(series: str | None, paths: list[Path], layouts: list[str]) -> None:
    """Reject ``--series`` where it would be ignored or would merge several files into one.

    ``--series`` names the one series of a ``timestamp,value`` file; given with several such
    files it would silently make all of them one series, and with none it would do nothing.
    """
    if series is None:
        return
    if not series.strip():
        raise ValueError(
            f"--series {series!r} is no name; pass a series name, e.g. --series nab.cpu"
        )
    plain = [
        str(p) for p, layout in zip(paths, layouts, strict=True) if layout == "timestamp_value"
    ]
    if len(plain) > 1:
        raise ValueError(
            f"--series {series!r} would merge {len(plain)} timestamp,value files "
            f"({', '.join(plain)}) into one series; drop --series (each file is then named "
            "<folder>.<file stem>) or replay the files one at a time"
        )
    if not plain:
        raise ValueError(
            f"--series {series!r} names the series of a timestamp,value file, but every CSV "
            "given has a series column; drop --series"
        )


def _progress() -> Progress:
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("points"),
        TimeElapsedColumn(),
        console=console,
        transient=not console.is_terminal,
    )


def _write_events(events: list[Event], path: Path) -> None:
    """Write events as CSV: one row each, payload entries as ``payload.<name>`` columns."""
    rows = [
        {
            "query": e.query,
            "series": e.series,
            "ts_ms": e.ts_ms,
            "value": e.value,
            "coverage": e.coverage,
            "replayed": e.replayed,
            **{f"payload.{k}": v for k, v in e.payload.items()},
        }
        for e in events
    ]
    pd.DataFrame(rows).to_csv(path, index=False)
    console.print(f"wrote {len(rows)} events to {path}")


def _write_dead_letters(dead: pd.DataFrame, path: Path) -> None:
    """Write the rejected rows as CSV: seq (the order the monitor took them in: within each
    ``--batch`` chunk, its malformed lines before its records), series, ts_ms, value (as
    read), reason, detail (a malformed line's ``<file>:<line>: <what>``) and origin (every
    row's ``<file>:<line>``)."""
    dead.to_csv(path, index=False)
    console.print(f"wrote {len(dead)} dead letters to {path}")
