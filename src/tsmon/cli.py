"""The ``tsmon`` command: ``demo``, ``check FILE``, ``replay CSV --queries FILE``, ``run JOB``
and ``query add|alter|remove|list --job DIR``.

Errors a user can fix (a malformed query, a bad file, bad options) print one clear message and
exit with status 2; nothing prints a bare traceback unless ``--debug`` is given.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from tsmon.core.units import UnitError, format_duration_ms, parse_duration_ms
from tsmon.engine.events import Event
from tsmon.engine.monitor import Monitor
from tsmon.query import (
    AggregateDef,
    AlterPrecision,
    AlterTopK,
    QuerySyntaxError,
    TopKDef,
    compile_query,
    format_terms,
    parse_queries,
)
from tsmon.report import events_table, format_event, summary_line
from tsmon.spark.session import JavaError

console = Console(highlight=False, markup=False)  # data text may hold [brackets]
_USER_ERRORS = (QuerySyntaxError, UnitError, ValueError, KeyError, OSError, JavaError)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``tsmon`` console script.

    User errors (bad query, bad file, unwritable output path) print one ``error:`` line and
    return 2; ``--debug`` shows the traceback instead. Bad option values are rejected by
    argparse before anything runs (also status 2).
    """
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except _USER_ERRORS as exc:
        if args.debug:
            raise
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        text = escape(str(message))  # a message may hold brackets ([input], [[sinks]])
        console.print(f"[bold red]error:[/] {text}", markup=True, soft_wrap=True)
        return 2


def _int_at_least(minimum: int, hint: str) -> Callable[[str], int]:
    """An argparse ``type=`` reading an int >= ``minimum``; ``hint`` says what to pass instead.

    argparse prefixes the message with the option (``argument --batch: ...``) and exits with
    status 2 before any work is done.
    """
    what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"

    def read(text: str) -> int:
        try:
            number = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}; {hint}") from None
        if number < minimum:
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}; {hint}")
        return number

    read.__name__ = f"int_at_least_{minimum}"
    return read


def _positive_finite_float(hint: str) -> Callable[[str], float]:
    """An argparse ``type=`` reading a float > 0 that is neither inf nor NaN."""

    def read(text: str) -> float:
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if not (math.isfinite(number) and number > 0):
            raise argparse.ArgumentTypeError(
                f"must be a positive finite number, got {text!r}; {hint}"
            )
        return number

    read.__name__ = "positive_finite_float"
    return read


def _duration(text: str) -> str:
    """An argparse ``type=`` checking a duration such as ``5m`` (0 allowed) before any work."""
    try:
        parse_duration_ms(text, allow_zero=True)
    except UnitError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tsmon", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(required=True, metavar="COMMAND")

    demo = sub.add_parser(
        "demo",
        help="run the main job on Spark, locally, on a built-in generator of host metrics",
        description=(
            "Run the main job on Spark Structured Streaming (local mode) on a built-in fleet "
            "of hosts: watch queries at the source nodes, bounded aggregates from adaptive "
            "filters, live query changes, answers checked against the exact values. "
            "--in-process runs the same kinds of queries in this process, without Spark."
        ),
    )
    demo.add_argument(
        "--hosts",
        type=_int_at_least(2, "pass the number of hosts, e.g. --hosts 100"),
        default=None,
        help="hosts, each a source with 15 metrics on Spark, 3 in-process (default: 200 on "
        "Spark, 100 in-process)",
    )
    demo.add_argument(
        "--ticks",
        type=_int_at_least(1, "pass the number of time steps, e.g. --ticks 288"),
        default=288,
        help="time steps of 5 minutes on Spark (288: a day)",
    )
    demo.add_argument("--dir", type=Path, help="keep the checkpoint and Parquet output here")
    demo.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    demo.add_argument("--in-process", action="store_true", help="run without Spark (the Monitor)")
    demo.add_argument(
        "--hours",
        type=_positive_finite_float("pass the event time to generate in hours, e.g. --hours 24"),
        default=24.0,
        help="event time to generate, in-process",
    )
    demo.set_defaults(run=_demo)

    check = sub.add_parser("check", help="validate a query file")
    check.add_argument("file", type=Path)
    check.set_defaults(run=_check)

    run = sub.add_parser("run", help="run a job file on Spark Structured Streaming")
    run.add_argument("job", type=Path, help="the job file (TOML), see tsmon.spark.job")
    run.add_argument(
        "--once",
        action="store_true",
        help="process the input available now (and the control it causes), then stop",
    )
    run.set_defaults(run=_run)

    cluster = sub.add_parser(
        "cluster",
        help="run a standalone Spark master and workers on 127.0.0.1 until Ctrl-C",
        description=(
            "Start a standalone Spark master and workers from the installed PySpark, all on "
            "127.0.0.1, print the spark:// URL for [job] master in a job file, and run until "
            "Ctrl-C (see tsmon.spark.standalone and docs/cluster.md)."
        ),
    )
    cluster.add_argument(
        "--workers",
        type=_int_at_least(1, "pass the number of workers, e.g. --workers 2"),
        default=1,
        help="workers (default: 1)",
    )
    cluster.add_argument(
        "--cores",
        type=_int_at_least(1, "pass the cores of each worker, e.g. --cores 1"),
        default=1,
        help="cores per worker (default: 1)",
    )
    cluster.add_argument("--memory", default="1g", help="memory per worker (default: 1g)")
    cluster.add_argument(
        "--port",
        type=_int_at_least(0, "pass a port, e.g. --port 7077, or 0 for a free one"),
        default=7077,
        help="the master's port (default: 7077; 0: a free one)",
    )
    cluster.add_argument(
        "--work-dir",
        type=Path,
        help="logs and worker directories (default: tsmon-cluster-<pid> in the temp dir)",
    )
    cluster.set_defaults(run=_cluster)

    _query_parser(sub)

    replay = sub.add_parser(
        "replay",
        help="run queries over recorded series (CSV)",
        description=(
            "Run queries over recorded series. Each file's rows are fed in the file's own order, "
            "so out-of-order rows arrive late: within --allowed-lateness they are inserted (and "
            "counted as late inserted), older ones are rejected as too_late. Several files are "
            "merged by timestamp with a stable merge that keeps each file's row order (a row "
            "that is late or has an unreadable timestamp stays between its file's neighbours). "
            "Unreadable timestamps and values are rejected one by one to the dead letters."
        ),
    )
    replay.add_argument("csv", type=Path, nargs="+", help="timestamp,value or series,ts,value")
    replay.add_argument("--queries", type=Path, required=True, help="query file")
    replay.add_argument(
        "--series", help="series name for a timestamp,value file (only with one such file)"
    )
    replay.add_argument(
        "--batch",
        type=_int_at_least(1, "pass the number of points per ingest call, e.g. --batch 2000"),
        default=2_000,
        help="points per ingest call",
    )
    replay.add_argument(
        "--show",
        type=_int_at_least(0, "pass how many events to print, 0 for none, e.g. --show 20"),
        default=20,
        help="events to print (0: none)",
    )
    replay.add_argument(
        "--events-out", type=Path, help="write every event to this CSV (checked before replaying)"
    )
    replay.add_argument(
        "--allowed-lateness",
        type=_duration,
        default="0ms",
        help="how far behind its series' newest point a point may arrive, e.g. 5m (default: 0ms)",
    )
    replay.set_defaults(run=_replay)
    return parser


def _run(args: argparse.Namespace) -> int:
    """Run a job file on Spark: until interrupted, or over the available input (``--once``).

    The job file is checked completely before Spark starts (:func:`tsmon.spark.job.load_job`).
    """
    from tsmon.spark.job import load_job
    from tsmon.spark.runtime import JobRunner

    job = load_job(args.job)
    console.print(f"tsmon run {job.name}: starting Spark ({job.master}) ...")
    runner = JobRunner(job)
    runner.start()
    try:
        if args.once:
            runner.process_all_available()
        else:
            runner.await_termination()
    except KeyboardInterrupt:
        console.print("interrupted: stopping (state is in the checkpoint)")
    finally:
        runner.stop()
    console.print(
        f"done: {len(runner.answers)} answers, {runner.dead_letters} dead letters; progress in "
        f"{job.checkpoint / 'progress.jsonl'}"
    )
    return 0


def _cluster(args: argparse.Namespace) -> int:
    """Run a standalone master and workers on loopback in the foreground until Ctrl-C.

    Start-up problems (Java, a busy port, a worker that does not register) are a
    :class:`~tsmon.spark.standalone.ClusterError` (an ``OSError``): one ``error:`` line.
    """
    import signal
    import tempfile

    from tsmon.spark.standalone import StandaloneCluster

    signal.signal(signal.SIGTERM, signal.default_int_handler)  # `kill` stops it as Ctrl-C does
    work_dir = args.work_dir or Path(tempfile.gettempdir()) / f"tsmon-cluster-{os.getpid()}"
    cluster = StandaloneCluster(work_dir, args.workers, args.cores, args.memory, args.port)
    console.print(f"starting a Spark master and {args.workers} worker(s); logs in {work_dir} ...")
    try:
        with cluster:
            partitions = 2 * args.workers * args.cores  # each is a state store per batch
            console.print(
                f"master {cluster.url} (web UI {cluster.webui_url}); in a job file:\n"
                f'  [job]\n  master = "{cluster.url}"\n  [job.spark_conf]\n'
                f'  "spark.sql.shuffle.partitions" = "{partitions}"  # about 2 per core\n'
                "Ctrl-C stops the master and workers (see docs/cluster.md)",
                soft_wrap=True,
            )
            cluster.wait()
    except KeyboardInterrupt:
        console.print("interrupted: master and workers stopped")
    return 0


def _query_parser(sub: argparse._SubParsersAction) -> None:
    """``tsmon query add|alter|remove|list --job DIR``: manage the queries of a running job."""
    query = sub.add_parser(
        "query",
        help="add, alter, remove or list the queries of a running job",
        description=(
            "Manage the queries of a running Spark job without restarting it. Each command is "
            "checked, then written to DIR/commands/; the job applies it at its next batch "
            "(see tsmon.spark.commands). 'list' shows each command's state."
        ),
    )
    ops = query.add_subparsers(required=True, metavar="OP")
    job_help = "the job's checkpoint directory ([job] checkpoint in the job file)"
    for op, arg, help_text, arg_help in (
        ("add", "statement", "add a query", "QUERY name AS AGG(...) WITHIN δ"),
        ("alter", "statement", "change a query's δ", "ALTER QUERY name WITHIN δ [IMMEDIATELY]"),
        ("remove", "name", "remove a query", "the query's name"),
    ):
        parser = ops.add_parser(op, help=help_text)
        parser.add_argument("--job", type=Path, required=True, metavar="DIR", help=job_help)
        parser.add_argument("text", metavar=arg.upper(), help=arg_help)
        parser.set_defaults(run=_query_submit, op=op)
    listing = ops.add_parser("list", help="list the commands and their state")
    listing.add_argument("--job", type=Path, required=True, metavar="DIR", help=job_help)
    listing.set_defaults(run=_query_list)


def _query_submit(args: argparse.Namespace) -> int:
    """Check a command (syntax errors with line:column, nothing written) and submit it."""
    from tsmon.spark.commands import CommandLog, job_directory

    command_id = CommandLog(job_directory(args.job)).submit(args.op, args.text)
    console.print(
        f"submitted {args.op} as {command_id}; the job applies it at its next batch",
        soft_wrap=True,
    )
    return 0


def _query_list(args: argparse.Namespace) -> int:
    """Print every command of a job with its state: pending, applied or rejected in batch N."""
    from tsmon.spark.commands import CommandLog, job_directory

    rows = CommandLog(job_directory(args.job)).states()
    if not rows:
        console.print(f"no commands submitted to {args.job}")
        return 0
    table = Table(title=f"{args.job}: {len(rows)} commands")
    table.add_column("id (cmd-<UTC time>-<pid>-<n>)", no_wrap=True)
    for column in ("op", "text", "state"):
        table.add_column(column)
    for row in rows:
        state = row["state"]
        if row["batch"] is not None:
            state += f" in batch {row['batch']}"
        if row["state"] == "rejected":
            state += f": {row['detail']}"
        table.add_row(row["id"], row["op"], row["text"], state)
    console.print(table)
    return 0


def _read_text(path: Path) -> str:
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    return path.read_text(encoding="utf-8")


def _check(args: argparse.Namespace) -> int:
    from tsmon.core.timestamps import format_instant_ms
    from tsmon.query import (
        ApproxDef,
        CorrelatedDef,
        StandingDef,
        WaveletDef,
        format_approx_call,
        format_correlated_call,
        format_percent,
        format_points,
        format_wavelet_call,
    )

    statements = parse_queries(_read_text(args.file))
    table = Table(title=f"{args.file}: {len(statements)} statements OK")
    for column in ("query", "on / as", "windows", "since / within"):
        table.add_column(column)
    for statement in statements:
        if isinstance(statement, AggregateDef):
            of = f"{statement.aggregate.upper()}({format_terms(statement.terms)})"
            table.add_row(statement.name, of, "-", f"WITHIN {statement.delta:g}")
        elif isinstance(statement, AlterPrecision):
            now = " IMMEDIATELY" if statement.immediately else ""
            table.add_row(statement.name, "ALTER", "-", f"WITHIN {statement.delta:g}{now}")
        elif isinstance(statement, TopKDef):
            word = "BOTTOM" if statement.bottom else "TOP"
            rank = f"{word} {statement.k} OF {statement.objects} BY {statement.metric}"
            over = "-" if statement.window_ms is None else format_duration_ms(statement.window_ms)
            table.add_row(statement.name, rank, over, f"WITHIN {statement.eps:g}")
        elif isinstance(statement, AlterTopK):
            word = "BOTTOM" if statement.bottom else "TOP"
            within = "-" if statement.eps is None else f"WITHIN {statement.eps:g}"
            table.add_row(statement.name, f"ALTER {word} {statement.k}", "-", within)
        elif isinstance(statement, StandingDef):
            of = f"{statement.aggregate.upper()}({format_terms(statement.terms)})"
            window = "-"
            if statement.extremum is not None:
                if statement.window is not None:
                    window = statement.window
                elif statement.landmark_ms is not None:
                    window = f"since {format_instant_ms(statement.landmark_ms)}"
                else:
                    window = "since START"
                of = f"{statement.extremum.upper()} OF {of}"
            eps = (
                f"{format_percent(statement.eps)}%" if statement.relative else f"{statement.eps:g}"
            )
            within = f"WITHIN {eps} CONFIDENCE {statement.confidence:g}"
            table.add_row(statement.name, of, window, within)
        elif isinstance(statement, WaveletDef):
            within = "-" if statement.within is None else f"WITHIN {statement.within:g}"
            window = format_points(statement.window_points)
            table.add_row(statement.name, format_wavelet_call(statement), window, within)
        elif isinstance(statement, ApproxDef):
            within = f"WITHIN {format_percent(statement.eps)}%"
            if statement.max_value is not None:
                within += f" MAX {statement.max_value}"
            window = format_points(statement.window_points)
            table.add_row(statement.name, format_approx_call(statement), window, within)
        elif isinstance(statement, CorrelatedDef):
            window = "since START"
            if statement.window_points is not None:
                window = format_points(statement.window_points)
            table.add_row(statement.name, format_correlated_call(statement), window, "-")
        else:
            query = compile_query(statement)
            table.add_row(
                query.name,
                "ON " + ", ".join(query.triggers),
                ", ".join(sorted(str(w) for w in query.windows)) or "-",
                f"-{query.since_ms} ms" if query.since_ms else "-",
            )
    console.print(table)
    return 0


def _replay(args: argparse.Namespace) -> int:
    """Feed recorded CSV rows to a :class:`Monitor` in batches, printing events as they come.

    Everything that can be checked cheaply is checked before the replay (the events output
    path, the CSV headers, ``--series``, the query file), so a mistake costs no replay time.
    Rows keep their file's order; several files are merged by time (:func:`merge_by_time`).
    """
    from tsmon.sim.replay import csv_layout, merge_by_time, read_series_csv

    if args.events_out is not None:
        _check_writable(args.events_out)
    layouts = [csv_layout(path) for path in args.csv]
    _check_series_option(args.series, args.csv, layouts)
    queries = _read_text(args.queries)
    points = merge_by_time([read_series_csv(path, args.series) for path in args.csv])
    monitor = Monitor(points["series"].unique(), allowed_lateness=args.allowed_lateness)
    monitor.add_query(queries)
    shown = 0
    counts: Counter[str] = Counter()
    collected: list[Event] = []
    with _progress() as progress:
        task = progress.add_task("replaying", total=len(points))
        for lo in range(0, len(points), args.batch):
            chunk = points.iloc[lo : lo + args.batch]
            monitor.ingest(
                chunk["series"].to_numpy(), chunk["ts"].to_numpy(), chunk["value"].to_numpy()
            )
            for event in monitor.events():
                counts[event.query] += 1
                if shown < args.show:
                    shown += 1
                    progress.console.print(format_event(event), soft_wrap=True)
                if args.events_out is not None:
                    collected.append(event)
            progress.update(task, advance=len(chunk))
    if args.events_out is not None:
        _write_events(collected, args.events_out)
    console.print(events_table(counts, monitor.queries()))
    console.print(summary_line(monitor.stats()), soft_wrap=True)
    return 0


def _check_writable(path: Path) -> None:
    """Raise ``OSError`` with the fix unless ``path`` can be written as a file.

    Run before the replay: finding out afterwards would cost the whole replay and its events.
    (Permission checks use ``os.access``; a superuser passes them, and the write itself is
    still guarded by the ``OSError`` handler in :func:`main`.)
    """
    fix = "pass a file path in an existing, writable folder to --events-out"
    if path.is_dir():
        raise OSError(f"--events-out {path} is a folder, not a file; {fix}")
    parent = path.parent
    if not parent.exists():
        raise OSError(f"--events-out {path}: folder {parent} does not exist; {fix}")
    if not parent.is_dir():
        raise OSError(f"--events-out {path}: {parent} is not a folder; {fix}")
    if path.exists() and not os.access(path, os.W_OK):
        raise OSError(f"--events-out {path}: no permission to overwrite the file; {fix}")
    if not path.exists() and not os.access(parent, os.W_OK | os.X_OK):
        raise OSError(f"--events-out {path}: no permission to create files in {parent}; {fix}")


def _check_series_option(series: str | None, paths: list[Path], layouts: list[str]) -> None:
    """Reject ``--series`` where it would be ignored or would merge several files into one.

    ``--series`` names the one series of a ``timestamp,value`` file; given with several such
    files it would silently make all of them one series, and with none it would do nothing.
    """
    if series is None:
        return
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


def _demo(args: argparse.Namespace) -> int:
    """The Spark demo (:mod:`tsmon.spark.demo`), or the in-process one with ``--in-process``."""
    if args.in_process:
        from tsmon.sim.demo import run_demo

        return run_demo(console, hosts=args.hosts or 100, hours=args.hours)
    from tsmon.spark.demo import DemoSettings, run_spark_demo

    settings = DemoSettings(hosts=args.hosts or 200, ticks=args.ticks, master=args.master)
    return run_spark_demo(Console(highlight=False), settings, args.dir)


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
    import pandas as pd

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


if __name__ == "__main__":
    sys.exit(main())
