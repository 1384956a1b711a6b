"""The ``tsmon`` command: ``demo``, ``check FILE``, ``replay CSV --queries FILE``, ``run JOB``,
``query add|alter|remove|list --job DIR``, ``show answers|events|dead-letters --job JOB`` and
``plot --job JOB --query Q``.

Errors a user can fix (a malformed query, a bad file, bad options) print one clear message and
exit with status 2; Ctrl-C ends a command with one line and status 130 (``tsmon replay`` first
prints what it replayed, ``show --follow`` stops with status 0); any other exception is
tsmon's bug: one line naming it, status 1. Nothing prints a bare traceback unless ``--debug``
is given.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path

from rich.markup import escape

from tsmon import __version__
from tsmon.cli.commands import (
    _check,
    _cluster,
    _demo,
    _query_list,
    _query_submit,
    _run,
    console,
)
from tsmon.cli.replay import run_replay
from tsmon.cli.results import add_parsers as add_result_parsers
from tsmon.core.timestamps import EPOCH_UNITS
from tsmon.core.units import UnitError, parse_duration_ms
from tsmon.query import QuerySyntaxError
from tsmon.spark.session import JavaError
from tsmon.spark.signals import INTERRUPTED

_USER_ERRORS = (QuerySyntaxError, UnitError, ValueError, KeyError, OSError, JavaError)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``tsmon`` console script.

    User errors (bad query, bad file, unwritable output path) print one ``error:`` line and
    return 2; Ctrl-C (SIGINT) prints ``interrupted`` and returns 130, the shell's status for
    it; ``--debug`` shows the traceback instead. Bad option values are rejected by argparse
    before anything runs (also status 2).
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
    except KeyboardInterrupt:
        if args.debug:
            raise
        console.print("interrupted")
        return INTERRUPTED
    except Exception as exc:  # not the user's mistake: tsmon's; one line, the trace on demand
        if args.debug:
            raise
        first = (str(exc).strip().splitlines() or [""])[0]
        console.print(
            f"[bold red]error:[/] tsmon failed ({escape(type(exc).__name__)}: {escape(first)}); "
            "this is a bug in tsmon: run the command again with --debug for the traceback and "
            "report it",
            markup=True,
            soft_wrap=True,
        )
        return 1


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


def _duration_or_off(text: str) -> str:
    """A duration (:func:`_duration`, > 0) or ``off``."""
    if text == "off":
        return text
    try:
        parse_duration_ms(text)
    except UnitError as exc:
        raise argparse.ArgumentTypeError(f"{exc}, or 'off' for no limit") from None
    return text


VERBOSE_HELP = (
    "show Spark's own messages (JVM warnings, log lines, Python workers) on the console instead "
    "of writing them to spark.log"
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tsmon", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    parser.add_argument("--version", action="version", version=f"tsmon {__version__}")
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
    demo.add_argument("--verbose", action="store_true", help=VERBOSE_HELP)
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
    run.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve the HTTP API, /metrics and the dashboard here, e.g. 127.0.0.1:8080 "
        "(overrides [http] listen; docs/http.md)",
    )
    run.add_argument("--verbose", action="store_true", help=VERBOSE_HELP)
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
    add_result_parsers(sub, console)

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
        "--dead-letters-out",
        type=Path,
        help="write every rejected row, with its reason and detail, to this CSV",
    )
    replay.add_argument(
        "--allowed-lateness",
        type=_duration,
        default="0ms",
        help="how far behind its series' newest point a point may arrive, e.g. 5m (default: 0ms)",
    )
    replay.add_argument(
        "--ts-unit",
        choices=list(EPOCH_UNITS),
        default="ms",
        help="the unit of epoch numbers in the timestamp column (a fraction, 1704067200.5, is "
        "floored to the ms; ISO-8601 text is read as the instant it is whatever the unit; "
        "default: ms)",
    )
    replay.add_argument(
        "--max-future",
        type=_duration_or_off,
        default="1d",
        help="reject rows stamped more than this after this machine's clock as "
        "future_timestamp, or 'off' (default: 1d)",
    )
    replay.set_defaults(run=run_replay)
    return parser


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
    job_help = "the job's checkpoint directory ([job] checkpoint in the job file), or the job file"
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
