"""The ``tsmon`` command: ``demo``, ``check FILE`` and ``replay CSV --queries FILE``.

Errors a user can fix (a malformed query, a bad file, bad options) print one clear message and
exit with status 2; nothing prints a bare traceback unless ``--debug`` is given.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from tsmon.core.units import UnitError
from tsmon.engine.events import Event
from tsmon.engine.monitor import Monitor
from tsmon.query import QuerySyntaxError, compile_query, parse_queries

console = Console(highlight=False)
_USER_ERRORS = (QuerySyntaxError, UnitError, ValueError, KeyError, FileNotFoundError)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``tsmon`` console script."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except _USER_ERRORS as exc:
        if args.debug:
            raise
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        console.print(f"[bold red]error:[/] {message}", markup=True, soft_wrap=True)
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tsmon", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(required=True, metavar="COMMAND")

    demo = sub.add_parser("demo", help="run the main job on a built-in generator of host metrics")
    demo.add_argument("--hosts", type=int, default=100, help="hosts (3 series each)")
    demo.add_argument("--hours", type=float, default=24.0, help="event time to generate")
    demo.set_defaults(run=_demo)

    check = sub.add_parser("check", help="validate a query file")
    check.add_argument("file", type=Path)
    check.set_defaults(run=_check)

    replay = sub.add_parser("replay", help="run queries over a recorded series (CSV)")
    replay.add_argument("csv", type=Path, nargs="+", help="timestamp,value or series,ts,value")
    replay.add_argument("--queries", type=Path, required=True, help="query file")
    replay.add_argument("--series", help="series name for a timestamp,value file")
    replay.add_argument("--batch", type=int, default=2_000, help="points per ingest call")
    replay.add_argument("--show", type=int, default=20, help="events to print (0: none)")
    replay.add_argument("--events-out", type=Path, help="write every event to this CSV")
    replay.add_argument(
        "--allowed-lateness",
        default="0ms",
        help="how far behind its series' newest point a point may arrive, e.g. 5m (default: 0ms)",
    )
    replay.set_defaults(run=_replay)
    return parser


def _read_text(path: Path) -> str:
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    return path.read_text(encoding="utf-8")


def _check(args: argparse.Namespace) -> int:
    compiled = [compile_query(q) for q in parse_queries(_read_text(args.file))]
    table = Table(title=f"{args.file}: {len(compiled)} queries OK")
    for column in ("query", "on", "windows", "since"):
        table.add_column(column)
    for query in compiled:
        table.add_row(
            query.name,
            ", ".join(query.triggers),
            ", ".join(sorted(str(w) for w in query.windows)) or "-",
            f"-{query.since_ms} ms" if query.since_ms else "-",
        )
    console.print(table)
    return 0


def _replay(args: argparse.Namespace) -> int:
    import pandas as pd

    from tsmon.sim.replay import read_series_csv

    frames = [read_series_csv(path, args.series) for path in args.csv]
    points = pd.concat(frames, ignore_index=True).sort_values("ts", kind="stable")
    monitor = Monitor(points["series"].unique(), allowed_lateness=args.allowed_lateness)
    monitor.add_query(_read_text(args.queries))
    shown: list[Event] = []
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
                if len(shown) < args.show:
                    shown.append(event)
                    progress.console.print(_format_event(event))
                if args.events_out:
                    collected.append(event)
            progress.update(task, advance=len(chunk))
    if args.events_out:
        _write_events(collected, args.events_out)
    _print_summary(monitor, counts)
    return 0


def _demo(args: argparse.Namespace) -> int:
    from tsmon.sim.demo import run_demo

    return run_demo(console, hosts=args.hosts, hours=args.hours)


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


def _format_event(event: Event) -> str:
    import pandas as pd

    when = pd.Timestamp(event.ts_ms, unit="ms", tz="UTC").strftime("%Y-%m-%d %H:%M:%S")
    payload = ", ".join(f"{k}={_short(v)}" for k, v in event.payload.items())
    flags = "" if event.coverage >= 1 else f" [coverage {event.coverage:.2f}]"
    flags += " [replayed]" if event.replayed else ""
    return f"{when}  {event.query:<14} {event.series:<28} {payload}{flags}"


def _short(value: object) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _write_events(events: list[Event], path: Path) -> None:
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


def _print_summary(monitor: Monitor, counts: Counter[str]) -> None:
    stats = monitor.stats()
    table = Table(title="events per query")
    table.add_column("query")
    table.add_column("events", justify="right")
    for name in monitor.queries():
        table.add_row(name, str(counts[name]))
    console.print(table)
    rejected = ", ".join(f"{k}: {v}" for k, v in sorted(stats["rejected_by_reason"].items()))
    console.print(
        f"points received {stats['received']}, accepted {stats['accepted']}, "
        f"rejected {stats['rejected']}{f' ({rejected})' if rejected else ''}; "
        f"late inserted {stats['late_inserted']}, duplicates replaced "
        f"{stats['duplicates_replaced']}; series {stats['series']}, windows {stats['windows']}"
    )


if __name__ == "__main__":
    sys.exit(main())
