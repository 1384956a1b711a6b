"""``tsmon show answers|events|dead-letters`` and ``tsmon plot``: a job's Parquet outputs read
back as tables and pictures, without pandas on the user's side.

``--job`` is the job file (its ``parquet`` sink is read) or the sink's directory (the one
holding ``answers/``, ``events/``, ...). Times are shown in UTC beside the exact milliseconds;
event payloads and JSON lists are decoded. ``--since`` takes an ISO-8601 instant or a
look-back such as ``--since=-1h`` (with ``=``: argparse reads ``-1h`` alone as an option)
from the newest row shown. Answers and events are selected by their event time; dead letters by
when the job wrote their batch (its file's modification time, :data:`WRITTEN`): a dead letter's
own timestamp is often missing, unreadable or absurd — the reason it is one — and would hide it
or every other row. ``--follow`` keeps printing the rows of new batches until Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
from rich.console import Console
from rich.table import Table

from tsmon.core.textfile import check_writable
from tsmon.core.timestamps import format_instant_ms, parse_instant_ms
from tsmon.core.units import format_value, parse_duration_ms

#: The time a row's batch file was written (epoch ms): what ``--since`` selects dead letters by.
WRITTEN = "__written_ms"
#: What ``show`` can show: the sink directories read, and the column holding each row's time.
SHOWN = {
    "answers": (
        ("answers", "as_of_ms"),
        ("standing", "ts_ms"),
        ("summaries", None),
        ("topk", None),
    ),
    "events": (("events", "ts_ms"),),
    "dead-letters": (("dead_letters", WRITTEN),),
}
#: The colour of exact values in plots (the recomputed line, and answers with no width).
EXACT_COLOR = "#d62728"
#: The answer sinks with a value and a band to plot: (directory, time, value, low, high).
PLOTTED = (
    ("answers", "as_of_ms", "value", "lo", "hi"),
    ("standing", "ts_ms", "value", "eps", None),
    ("summaries", None, "value", "lower", "upper"),
)


def output_directory(job: Path) -> Path:
    """The Parquet sink directory of ``job`` (a job file, or the directory itself)."""
    if job.is_file():
        from tsmon.spark.job import load_job

        spec = load_job(job)
        paths = [s.path for s in spec.sinks if s.kind == "parquet" and s.path is not None]
        if not paths:
            raise ValueError(f"--job {job}: the job has no parquet sink, so nothing to show")
        return Path(paths[0])
    known = {d for rows in SHOWN.values() for d, _ in rows}
    if job.is_dir() and any((job / d).is_dir() for d in known):
        return job
    raise ValueError(
        f"--job {job}: not a job file nor a job's Parquet output directory (with answers/ or "
        "events/ in it); pass the job file (TOML) or its [[sinks]] parquet path"
    )


def read_batches(
    directory: Path, seen: set[Path] | None = None, written: bool = False
) -> pd.DataFrame:
    """Every ``batch-N.parquet`` of ``directory`` not in ``seen`` (which is updated), in batch
    order, with ``written`` also the column :data:`WRITTEN`; empty when there are none."""
    files = sorted(p for p in directory.glob("batch-*.parquet") if seen is None or p not in seen)
    if seen is not None:
        seen.update(files)
    frames = []
    for path in files:
        # one thread: pyarrow's pool threads can abort the process at exit (apache/arrow#34314)
        frame = pq.read_table(path, use_threads=False).to_pandas()
        if written:
            frame[WRITTEN] = path.stat().st_mtime_ns // 1_000_000
        frames.append(frame)
    frames = [f for f in frames if not f.empty]
    if not frames:
        return pd.DataFrame()
    with warnings.catch_warnings():  # batches whose column is all null (dead letters of a
        # malformed line have no series): pandas warns that it will keep their dtype one day
        warnings.simplefilter("ignore", FutureWarning)
        return pd.concat(frames, ignore_index=True)


def since_ms(text: str, newest: int | None) -> int | None:
    """``--since``: an ISO-8601 instant, or ``-<duration>`` back from ``newest``.

    Examples
    --------
    >>> since_ms("2024-01-01T00:00:00Z", None), since_ms("-1h", 7_200_000)
    (1704067200000, 3600000)
    """
    if text.startswith("-"):
        return None if newest is None else newest - parse_duration_ms(text[1:])
    return parse_instant_ms(text)


def select(frame: pd.DataFrame, when: str | None, args: argparse.Namespace) -> pd.DataFrame:
    """The rows of ``--query`` and ``--since``."""
    if frame.empty:
        return frame
    if args.query is not None and "query" in frame:
        frame = frame[frame["query"].str.casefold() == args.query.casefold()]
    if args.since is not None and when is not None and not frame.empty:
        times = pd.to_numeric(frame[when], errors="coerce")
        start = since_ms(args.since, None if times.isna().all() else int(times.max()))
        if start is not None:
            frame = frame[times >= start]
    return frame


def _cell(column: str, value: Any) -> str:
    """One cell: JSON payloads and lists decoded, times in UTC, epoch ms whole, numbers short.

    Examples
    --------
    >>> _cell("ts", 1392389100000.0), _cell("ts_utc", pd.NaT), _cell("value", 1392389100000.0)
    ('1392389100000', '-', '1.392e+12')
    """
    if value is None or value is pd.NaT or (isinstance(value, float) and pd.isna(value)):
        return "-"
    if (column == "ts" or column.endswith("_ms")) and isinstance(value, float):
        return str(int(value))  # a column with nulls holds its epoch ms as floats
    if isinstance(value, pd.Timestamp):
        return format_instant_ms(int(value.value) // 1_000_000)  # .value is in ns
    if column in ("payload", "members", "positions", "possible") and isinstance(value, str):
        decoded = json.loads(value)
        if isinstance(decoded, dict):
            return ", ".join(f"{k}={format_value(v)}" for k, v in decoded.items())
        return ", ".join(str(v) for v in decoded)
    if isinstance(value, float):
        return format_value(value)
    return str(value)


def table_of(title: str, frame: pd.DataFrame) -> Table:
    """``frame`` as a rich table, UTC twins of epoch-ms columns added where missing."""
    from tsmon.spark.sinks import with_utc

    missing = [c for c in frame.columns if (c.endswith("_ms") or c == "ts")]
    if any(f"{c.removesuffix('_ms')}_utc" not in frame for c in missing):
        frame = with_utc(frame.drop(columns=[c for c in frame if c.endswith("_utc")]))
    table = Table(title=f"{title} ({len(frame)} rows)", title_justify="left")
    for column in frame.columns:
        table.add_column(column, overflow="fold")
    for row in frame.itertuples(index=False):
        table.add_row(*(_cell(c, v) for c, v in zip(frame.columns, row, strict=True)))
    return table


def run_show(args: argparse.Namespace, console: Console) -> int:
    """Print the rows asked for; with ``--follow``, then those of every new batch until
    Ctrl-C (status 0)."""
    out = output_directory(args.job)
    seen: dict[str, set[Path]] = {d: set() for d, _ in SHOWN[args.what]}
    shown = 0
    try:
        while True:
            for directory, when in SHOWN[args.what]:
                rows = read_batches(out / directory, seen[directory], when == WRITTEN)
                frame = select(rows, when, args).drop(columns=WRITTEN, errors="ignore")
                if not frame.empty:
                    console.print(table_of(directory, frame))
                    shown += len(frame)
            if not args.follow:
                break
            time.sleep(args.interval)
    except KeyboardInterrupt:
        if not args.follow:
            raise
        # Ctrl-C is how --follow ends: not an interruption of the command
    if shown == 0:
        which = f" of query {args.query!r}" if args.query else ""
        console.print(f"no {args.what}{which} in {out}")
    return 0


def run_plot(args: argparse.Namespace, console: Console) -> int:
    """Write a PNG of one query's answers over time, with their bounds as a band, to exactly
    the path given (matplotlib would add ``.png`` to a path without a suffix, and write
    another format for another suffix); the path is checked before anything is read."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = args.out or Path(f"{args.query}.png")
    check_writable(path, "--out", [args.job])
    out = output_directory(args.job)
    for directory, when, value, low, high in PLOTTED:
        frame = select(read_batches(out / directory), when, args)
        if frame.empty:
            continue
        x = (
            pd.to_datetime(frame[when], unit="ms", utc=True)
            if when is not None
            else frame["batch_id"]
        )
        y = frame[value].astype(float)
        lo = frame[low].astype(float) if high is not None else y - frame[low].astype(float)
        hi = frame[high].astype(float) if high is not None else y + frame[low].astype(float)
        figure, axes = plt.subplots(figsize=(10, 4))
        axes.fill_between(x, lo, hi, step="post", alpha=0.3, label="bounds")
        axes.plot(x, y, drawstyle="steps-post", label="answer")
        exact = lo.to_numpy() == hi.to_numpy()  # answers the job recorded as exact
        if exact.any():
            axes.scatter(x[exact], y[exact], color=EXACT_COLOR, zorder=3, label="exact answer")
        if directory == "answers":
            line = _exact_line(args.job, args.query, frame[when].to_numpy(), lo, hi)
            if line is not None:
                axes.plot(x, line[0], drawstyle="steps-post", color=EXACT_COLOR, label=line[1])
                console.print(line[2])
        axes.set_title(f"{args.query} ({directory})")
        axes.set_xlabel("event time (UTC)" if when is not None else "batch")
        axes.legend()
        figure.autofmt_xdate()
        figure.savefig(path, dpi=100, format="png")
        plt.close(figure)
        console.print(
            f"wrote {path}: {len(frame)} answers of {args.query!r} from {out / directory}"
        )
        return 0
    if not select(read_batches(out / "events"), None, args).empty:
        raise ValueError(
            f"query {args.query!r} has events, not answers (a watch query), so there is no "
            f"answer to plot; list them with tsmon show events --job {args.job} "
            f"--query {args.query}"
        )
    raise ValueError(
        f"no answers of query {args.query!r} in {out} (bounded, standing or summary answers); "
        "check the name with tsmon show answers"
    )


def _exact_line(
    job: Path, query: str, times: Any, lo: pd.Series, hi: pd.Series
) -> tuple[Any, str, str] | None:
    """The exact values of bounded query ``query`` at ``times`` recomputed from the input files
    of job file ``job`` (:mod:`tsmon.cli.oracle`), its legend and what the console says about
    them; None when ``job`` is a directory, reads no files or has no snapshot of the query."""
    if not job.is_file():
        return None
    from tsmon.cli.oracle import bounded_query, exact_over_time, input_points
    from tsmon.spark.driver import latest_snapshot
    from tsmon.spark.job import load_job

    spec = load_job(job)
    snapshot = latest_snapshot(spec.checkpoint)
    definition = None if snapshot is None else bounded_query(snapshot[1], query)
    points = None if definition is None else input_points(spec.input)
    if points is None:
        return None
    exact = exact_over_time(definition, points, times)
    lo_, hi_ = lo.to_numpy(dtype=float), hi.to_numpy(dtype=float)
    unknown = ~(np.isfinite(lo_) & np.isfinite(hi_))  # [-inf, inf]: not known yet, no bound
    known = ~np.isnan(exact) & ~unknown
    inside = known & (lo_ - 1e-9 <= exact) & (exact <= hi_ + 1e-9)
    said = (
        f"exact values recomputed from the input files in {spec.input.path}: inside the "
        f"bounds in {int(inside.sum())} of {int(known.sum())} known answers"
    )
    if unknown.any():
        n = int(unknown.sum())
        said += f" ({n} answer{'s' if n > 1 else ''} not known yet)"
    return exact, "exact (from the input files)", said


def add_parsers(sub: argparse._SubParsersAction, console: Console) -> None:
    """``tsmon show`` and ``tsmon plot``, printing to ``console``."""
    job_help = "the job file, or its Parquet output directory ([[sinks]] parquet path)"
    parser = sub.add_parser("show", help="print a job's answers, events or dead letters")
    parser.add_argument("what", choices=sorted(SHOWN))
    parser.add_argument("--job", type=Path, required=True, metavar="JOB", help=job_help)
    parser.add_argument("--query", help="only this query (names ignore case)")
    parser.add_argument(
        "--since",
        help="an ISO-8601 instant, or =-DURATION back from the newest row (--since=-1h); "
        "dead letters by when their batch was written",
    )
    parser.add_argument("--follow", action="store_true", help="keep printing new batches")
    parser.add_argument("--interval", type=float, default=1.0, help=argparse.SUPPRESS)
    parser.set_defaults(run=partial(run_show, console=console))
    plotting = sub.add_parser("plot", help="write a PNG of a query's answers over time")
    plotting.add_argument("--job", type=Path, required=True, metavar="JOB", help=job_help)
    plotting.add_argument("--query", required=True, help="the query (names ignore case)")
    plotting.add_argument("--since", help="an ISO-8601 instant, or -DURATION from the newest")
    plotting.add_argument("--out", type=Path, help="the PNG to write (default: QUERY.png)")
    plotting.set_defaults(run=partial(run_plot, console=console))
