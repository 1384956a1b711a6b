"""Messages of the embedded Monitor's bounded aggregates on a NAB folder, against the per-point
simulator of the same protocol.

The workload is one folder of ``bench_nab_folders.py`` (its four queries at ``δ`` = 1 % of
each mean absolute answer), replayed through ``tsmon.Monitor`` in ingest calls of ``--batch``
points each (one call is one batch of the Monitor's host), with ``T`` chosen online (the
Monitor's default) or fixed by ``--period`` (time units). Every answer after every ingest is
checked against the exact aggregate of the newest values. The baseline, in the same process,
is :func:`tsmon.sim.filters.runner.run_adaptive` (a ``FilterNetwork``: one update at a time,
zero latency) with the same settings; the table prints the Monitor's messages over it.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_nab_folders import folder_workload

from tsmon import Monitor
from tsmon.sim.filters.experiments import machine_line, parse_script_args, script_parser
from tsmon.sim.filters.runner import run_adaptive
from tsmon.sim.filters.workload import Workload

AGG = {"avg": "AVG", "sum": "SUM", "min": "MIN", "max": "MAX"}


def statement(query) -> str:
    """The query language text of a protocol query over NAB objects."""
    terms = " + ".join(f"{w!r}*{o}" for o, w in query.weights.items())
    if query.aggregate.value in ("min", "max"):
        terms = ", ".join(query.objects)
    return f"QUERY {query.name} AS {AGG[query.aggregate.value]}({terms}) WITHIN {query.delta!r}"


def run_monitor(w: Workload, period: str | None, batch: int) -> tuple[dict, int, int]:
    """The Monitor's message counts, the answers checked and the violations."""
    mon = Monitor(list(w.objects), retention=None, filter_period=period, filter_growth="capped")
    mon.add_query("\n".join(statement(q) for q in w.queries))
    newest = np.full(len(w.objects), np.nan)
    checked = violations = 0
    clock = int(w.ts_ms[-1]) + 1
    for lo in range(0, len(w), batch):
        sl = slice(lo, lo + batch)
        obj = w.obj[sl]
        mon.ingest([w.objects[i] for i in obj], w.ts_ms[sl], w.values[sl], clock_ms=clock)
        newest[obj] = w.values[sl]  # in time order: the last of each object is its newest
        values = dict(zip(w.objects, newest.tolist(), strict=True))
        answers = mon.answers()
        for q in w.queries:
            a = answers[q.name]
            if np.isnan(a.value):
                continue
            exact = q.exact(values)
            checked += 1
            violations += not (
                a.lo - 1e-9 <= exact <= a.hi + 1e-9 and a.width <= q.delta * 1.000001
            )
    c = mon.filter_messages()
    counts = {"streamed": c.streamed, "growth": c.growth, "shrink": c.shrink, "total": c.total}
    return counts, checked, violations


def main(argv: list[str] | None = None) -> None:
    ap = script_parser(__doc__, __file__)
    ap.add_argument("--folder", default="realAWSCloudwatch")
    ap.add_argument("--units", type=int, default=3_000, help="time units (0: all)")
    ap.add_argument("--batch", type=int, default=50, help="points per ingest call")
    ap.add_argument("--period", type=float, default=0, help="T in time units (0: chosen online)")
    args = parse_script_args(ap, argv, quick={"units": 500}, quick_help="500 units", jobs=None)
    w = folder_workload(args.folder, 0.01, args.units or None)
    t_ms = None if args.period == 0 else round(args.period * w.time_unit_ms)
    cpu = time.process_time()
    mine, checked, violations = run_monitor(w, None if t_ms is None else f"{t_ms}ms", args.batch)
    cpu_mine = time.process_time() - cpu
    cpu = time.process_time()
    base = run_adaptive(w, period_ms=t_ms, shrink=0.05, growth="capped", check=False).counts
    cpu_base = time.process_time() - cpu
    table = Table(title=f"{args.folder}: {len(w.objects)} series, {len(w)} points, δ = 1 %")
    for col in ("host", "streamed", "growth", "shrink", "total", "÷ per point"):
        table.add_column(col, justify="left" if col == "host" else "right")
    table.add_row(
        "per point (FilterNetwork)",
        *map(str, (base.streamed, base.growth, base.shrink)),
        str(base.total),
        "1.00",
    )
    table.add_row(
        f"Monitor, {args.batch} points per ingest",
        *(str(mine[k]) for k in ("streamed", "growth", "shrink", "total")),
        f"{mine['total'] / base.total:.2f}",
    )
    console = Console()
    console.print(table)
    console.print(f"Monitor answers checked: {checked}, violations: {violations}")
    console.print(
        f"CPU: Monitor {cpu_mine:.2f} s (its oracle checks included), per point "
        f"{cpu_base:.2f} s (no oracle): {cpu_mine / cpu_base:.2f}×"
    )
    console.print(machine_line())


if __name__ == "__main__":
    main()
