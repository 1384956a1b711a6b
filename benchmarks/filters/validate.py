"""Zero-violation check of the adaptive filters over ≥ 10^6 updates with the exact oracle.

Every answer of every query after every update must contain the exact aggregate of the
objects' current values and be at most δ wide (zero latency, ``T = 10`` time units, ``S = 0.05``).
Workloads: Figure 3 random walks (several seeds and δ), Figure 4 (five overlapping AVG),
overlapping mixed queries on 20 walks (AVG, weighted SUM with negative weights, MIN, MAX, a
single-object AVG), the traffic workloads of Figures 7 and 8, and a replay of NAB files
(AVG, MIN and MAX over them). ``--exhaustive`` records answers after every update instead of
only when a message or boundary can change them (slower, same verdicts).
``python benchmarks/filters/validate.py --quick`` is a smoke run (< 30 s).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from tsmon.protocols.filters.queries import Query
from tsmon.sim.filters.experiments import (
    machine_line,
    parallel_map,
    parse_script_args,
    script_parser,
    write_rows_csv,
)
from tsmon.sim.filters.nab import nab_workload
from tsmon.sim.filters.runner import run_adaptive
from tsmon.sim.filters.traffic import fig7_workload, fig8_workload
from tsmon.sim.filters.walks import fig3_workload, fig4_workload, mixed_workload
from tsmon.sim.filters.workload import Workload

NAB = Path("/work/shared/data/nab")
NAB_FILES = (
    "realAWSCloudwatch/ec2_cpu_utilization_24ae8d.csv",
    "realAWSCloudwatch/ec2_cpu_utilization_5f5533.csv",
    "realAWSCloudwatch/rds_cpu_utilization_cc0c53.csv",
    "realAWSCloudwatch/ec2_network_in_257a54.csv",
    "realTweets/Twitter_volume_AAPL.csv",
    "realTweets/Twitter_volume_GOOG.csv",
    "realTweets/Twitter_volume_IBM.csv",
)


def nab(limit: int | None) -> Workload:
    paths = [NAB / f for f in NAB_FILES if (NAB / f).exists()]
    w = nab_workload(paths, align="start").workload
    if limit:
        w = w.slice_time(None, int(w.ts_ms[0]) + limit * w.time_unit_ms)
    spread = np.array([np.std(w.values[w.obj == i]) for i in range(len(w.objects))])
    o = w.objects
    return w.with_queries([
        Query.avg("avg", o, float(0.5 * spread.mean())),
        Query.min("min", o[:4], float(0.5 * spread[:4].min())),
        Query.max("max", o[2:], float(0.5 * spread[2:].min())),
        Query.sum("diff", {o[0]: 1.0, o[1]: -1.0}, float(spread[:2].sum())),
    ])  # fmt: skip


def build(name: str, scale: float) -> Workload:
    steps = int(10_000 * scale)
    kind, _, arg = name.partition(":")
    if kind == "fig3":
        delta, seed = arg.split("/")
        return fig3_workload(float(delta), steps=steps, seed=int(seed))
    if kind == "fig4":
        return fig4_workload(float(arg), steps=steps, seed=1)
    if kind == "mixed":
        return mixed_workload(int(arg), steps)
    if kind == "fig7":
        return fig7_workload(5.0, n_hosts=100, duration_s=int(1_800 * scale), seed=1)
    if kind == "fig8":
        return fig8_workload(4.0, duration_s=int(1_200 * scale), aggregate="avg", seed=1)
    if kind == "nab":
        return nab(None if scale >= 1 else int(4_000 * scale))
    raise ValueError(name)


def one(task: tuple[str, float, bool]) -> dict:
    name, scale, exhaustive = task
    w = build(name, scale)
    t0 = time.perf_counter()
    r = run_adaptive(w, period_ms=10 * w.time_unit_ms, shrink=0.05, exhaustive=exhaustive)
    return {
        "workload": name, "objects": len(w.objects), "queries": len(w.queries),
        "updates": len(w), "updates_checked": r.updates_checked, "pairs_checked": r.checked,
        "violations": r.violations, "messages": r.counts.total,
        "seconds": round(time.perf_counter() - t0, 2),
    }  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    ap = script_parser(__doc__, __file__)
    ap.add_argument("--scale", type=float, default=1.0, help="length of every workload")
    ap.add_argument("--exhaustive", action="store_true", help="record answers after every update")
    args = parse_script_args(
        ap, argv, quick={"scale": 0.05}, quick_help="every workload at 1/20 length"
    )
    names = [f"fig3:{d}/{s}" for d in (0.5, 2.0, 8.0) for s in (0, 1, 2)]
    names += ["fig4:6", "mixed:0", "mixed:1", "fig7", "fig8", "nab"]
    console = Console(width=150)
    t0 = time.perf_counter()
    rows = parallel_map(one, [(n, args.scale, args.exhaustive) for n in names], args.jobs)
    table = Table(title="exact-oracle validation (zero latency, T = 10, S = 0.05)")
    for c in rows[0]:
        table.add_column(c, justify="right")
    for r in rows:
        table.add_row(*(f"{v:,}" if isinstance(v, int) else str(v) for v in r.values()))
    console.print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    write_rows_csv(rows, args.out / "validate.csv")
    updates = sum(r["updates_checked"] for r in rows)
    pairs = sum(r["pairs_checked"] for r in rows)
    violations = sum(r["violations"] for r in rows)
    console.print(
        f"{updates:,} updates ({pairs:,} update×query answers) checked, {violations} violations, "
        f"{time.perf_counter() - t0:.0f} s wall; wrote {args.out / 'validate.csv'}"
    )
    console.print(machine_line())
    print(
        f"RESULT validate updates_checked={updates} answers_checked={pairs} "
        f"violations={violations} workloads={len(rows)} target_updates=1000000 "
        f"{'ok' if violations == 0 and (updates >= 1_000_000 or args.quick) else 'FAILED'}"
    )
    sys.exit(0 if violations == 0 else 1)


if __name__ == "__main__":
    main()
