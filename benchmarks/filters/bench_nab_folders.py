"""Adaptive filters vs uniform static vs the App. F optimum on every multi-series NAB folder.

Each folder of ``/work/shared/data/nab`` becomes one workload: every CSV one object on its own
source, aligned to a common start (``nab_workload(..., align="start")``, as the simulator's NAB
replay), with four queries: AVG over all objects, a weighted SUM (weights 1, 2, 3, …cycling)
over all objects, MIN over the first three and MAX over the last three. ``δ`` of each query is
a fraction (0.1 %, 1 %, 5 %) of its mean absolute exact answer over the replay. Costs are all
messages (streamed + growth + shrink) of the whole replay; the baselines replay the same data
through fixed widths: uniform static (§1.2.1) and the App. F optimum with step sizes estimated
from the whole series (``Workload.estimate_step_sizes``). Every adaptive answer is checked by
the exact oracle. ``hindsight`` is static widths chosen after the fact from every series'
real message counts (:func:`tsmon.sim.filters.hindsight.hindsight_static_widths`). ``floor``
is the fewest messages *any* width policy could send under the same constraints, even one
knowing the future (:mod:`tsmon.sim.filters.hindsight`: each object alone at its widest
allowed width, its values cut into the fewest runs a bound centred on each run's first value
holds); ``floor ÷ u`` (÷ uniform) above 0.8 means no width policy at all reaches 0.8 ×
uniform static on that workload. ``--quick`` runs the first 1,500 time units of each folder
at δ = 1 %.
"""

from __future__ import annotations

import csv
import statistics
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from tsmon.protocols.filters.queries import Query
from tsmon.sim.filters.baselines import (
    OptimizationWarning,
    constraint_matrix,
    optimized_static_widths,
    uniform_static_widths,
)
from tsmon.sim.filters.experiments import machine_line, parse_script_args, script_parser
from tsmon.sim.filters.hindsight import floor_messages, hindsight_static_widths, widest_widths
from tsmon.sim.filters.nab import nab_files, nab_workload
from tsmon.sim.filters.oracle import exact_aggregates
from tsmon.sim.filters.runner import run_adaptive
from tsmon.sim.filters.static import run_static
from tsmon.sim.filters.workload import Workload

NAB = Path("/work/shared/data/nab")
FOLDERS = (
    "artificialNoAnomaly",
    "artificialWithAnomaly",
    "realAWSCloudwatch",
    "realAdExchange",
    "realTweets",
)


def folder_workload(folder: str, fraction: float, units: int | None) -> Workload:
    """The folder's workload with its four queries at ``δ = fraction × mean |answer|``."""
    w = nab_workload(nab_files(NAB, folder), align="start").workload
    if units:
        w = w.slice_time(None, int(w.ts_ms[0]) + units * w.time_unit_ms)
    o = list(w.objects)
    shapes = [
        Query.avg("avg", o, 1.0),
        Query.sum("wsum", {x: float(1 + k % 3) for k, x in enumerate(o)}, 1.0),
        Query.min("min", o[:3], 1.0),
        Query.max("max", o[-3:], 1.0),
    ]
    exact, _ = exact_aggregates(w.with_queries(shapes))
    scale = np.nanmean(np.abs(exact), axis=0)
    return w.with_queries(
        q.with_delta(float(fraction * s)) for q, s in zip(shapes, scale, strict=True)
    )


def one(task: tuple[str, float, int | None, float, float]) -> dict:
    folder, fraction, units, period, shrink = task
    w = folder_workload(folder, fraction, units)
    uniform = run_static(w, uniform_static_widths(w)).streamed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OptimizationWarning)
        best = optimized_static_widths(w.with_step_sizes(w.estimate_step_sizes()))
    optimum = run_static(w, best.widths).streamed
    k, budgets = constraint_matrix(w.queries, w.objects)
    series = [w.values[w.object_updates(i)] for i in range(len(w.objects))]
    hindsight = run_static(w, hindsight_static_widths(series, k, budgets)).streamed
    widest = widest_widths(k, budgets)
    floor = sum(floor_messages(v, widest[i]) for i, v in enumerate(series))
    t = None if period == 0 else round(period * w.time_unit_ms)
    r = run_adaptive(w, period_ms=t, shrink=shrink, growth="capped")
    return {
        "folder": folder,
        "delta_pct": 100 * fraction,
        "objects": len(w.objects),
        "updates": len(w),
        "adaptive": r.counts.total,
        "streamed": r.counts.streamed,
        "growth": r.counts.growth,
        "shrink": r.counts.shrink,
        "uniform": uniform,
        "optimum": optimum,
        "hindsight": hindsight,
        "floor": floor,
        "vs_uniform": r.counts.total / uniform,
        "vs_optimum": r.counts.total / optimum,
        "vs_hindsight": r.counts.total / hindsight,
        "hindsight_vs_uniform": hindsight / uniform,
        "floor_vs_uniform": floor / uniform,
        "violations": r.violations,
        "checked": r.checked,
    }


def main(argv: list[str] | None = None) -> None:
    ap = script_parser(__doc__, __file__)
    ap.add_argument("--fractions", default="0.001,0.01,0.05", help="δ as fractions of |answer|")
    ap.add_argument("--units", type=int, default=0, help="time units per folder (0: all)")
    ap.add_argument("--period", type=float, default=0, help="T in time units (0: chosen online)")
    ap.add_argument("--shrink", type=float, default=0.05, help="S")
    args = parse_script_args(
        ap, argv, quick={"fractions": "0.01", "units": 1_500}, quick_help="1,500 units, δ = 1 %%"
    )
    tasks = [
        (f, float(x), args.units or None, args.period, args.shrink)
        for f in FOLDERS
        for x in args.fractions.split(",")
    ]
    with ProcessPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(one, tasks))
    table = Table(title="NAB folders: all messages of the replay (adaptive answers oracle-checked)")
    cols = ("folder", "δ %", "n", "adaptive", "uniform", "optimum", "hindsight", "floor")
    for col in (*cols, "÷ uniform", "÷ optimum", "÷ hindsight", "hindsight ÷ u", "floor ÷ u"):
        table.add_column(col, justify="left" if col == "folder" else "right")
    for r in rows:
        table.add_row(
            r["folder"],
            f"{r['delta_pct']:g}",
            str(r["objects"]),
            f"{r['adaptive']:,}",
            f"{r['uniform']:,}",
            f"{r['optimum']:,}",
            f"{r['hindsight']:,}",
            f"{r['floor']:,}",
            f"{r['vs_uniform']:.3f}",
            f"{r['vs_optimum']:.3f}",
            f"{r['vs_hindsight']:.3f}",
            f"{r['hindsight_vs_uniform']:.3f}",
            f"{r['floor_vs_uniform']:.3f}",
        )
    console = Console(width=160)
    console.print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "nab_folders.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    violations = sum(r["violations"] for r in rows)
    worst_u = max(r["vs_uniform"] for r in rows)
    worst_o = max(r["vs_optimum"] for r in rows)
    console.print(machine_line())
    print(
        f"RESULT adaptive/uniform worst {worst_u:.3f} median "
        f"{statistics.median(r['vs_uniform'] for r in rows):.3f} (target <= 0.8); "
        f"adaptive/optimum worst {worst_o:.3f} median "
        f"{statistics.median(r['vs_optimum'] for r in rows):.3f} (target <= 1.10); "
        f"adaptive/hindsight static worst {max(r['vs_hindsight'] for r in rows):.3f}; "
        f"floor/uniform best {min(r['floor_vs_uniform'] for r in rows):.3f}; "
        f"{sum(r['checked'] for r in rows):,} answers checked, {violations} violations"
    )
    sys.exit(1 if violations else 0)


if __name__ == "__main__":
    main()
