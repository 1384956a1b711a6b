"""Sensitivity of the adaptive filters to ``T`` and ``S`` (§5: "T = 10, S = 0.05 ... work well").

Grid over the adjustment period ``T`` (time units) and the shrink percentage ``S`` on two
workloads: ``fig3_workload(δ = 4)`` (one AVG over 10 random walks) and ``fig7_workload(δ = 5)``
with fewer hosts (one AVG over traffic sources). Cost = all messages per time unit after a
warm-up, median over seeds, shown relative to the paper's ``(T, S) = (10, 0.05)`` cell of the
same workload and seed, and the uniform static cost for scale. Every answer is checked.
``python benchmarks/filters/sensitivity.py --quick`` is a smoke run (< 30 s).
"""

from __future__ import annotations

import statistics
import sys

from rich.console import Console
from rich.table import Table

from tsmon.sim.filters.experiments import (
    cost_point,
    machine_line,
    parallel_map,
    parse_script_args,
    pyplot,
    script_parser,
    write_points_csv,
)
from tsmon.sim.filters.traffic import fig7_workload
from tsmon.sim.filters.walks import fig3_workload


def one(task: tuple[str, float, float, int, int, int]) -> object:
    kind, t_units, s, seed, size, length = task
    if kind == "walks":
        w, warm = fig3_workload(4.0, steps=length, seed=seed), length // 10
    else:
        w, warm = fig7_workload(5.0, n_hosts=size, duration_s=length, seed=seed), 300
    p = cost_point(w, label=kind, delta=w.queries[0].delta, seed=seed, warmup_units=warm,
                   period_units=t_units, shrink=s, uniform=True)  # fmt: skip
    return (kind, t_units, s, p)


def main(argv: list[str] | None = None) -> None:
    ap = script_parser(__doc__, __file__)
    ap.add_argument("--periods", default="2,5,10,20,50", help="T in time units")
    ap.add_argument("--shrinks", default="0.01,0.02,0.05,0.1,0.2", help="S values")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10_000, help="walk time units")
    ap.add_argument("--hosts", type=int, default=50, help="traffic sources")
    ap.add_argument("--duration", type=int, default=3_600, help="traffic seconds")
    quick = {"periods": "5,10,20", "shrinks": "0.02,0.05,0.1", "seeds": 1, "steps": 2_000,
             "hosts": 20, "duration": 900}  # fmt: skip
    args = parse_script_args(ap, argv, quick=quick, quick_help="3×3 grid, 1 seed, short runs")
    console = Console(width=150)
    periods = [float(x) for x in args.periods.split(",")]
    shrinks = [float(x) for x in args.shrinks.split(",")]
    for ref in ((10.0, 0.05),):
        if ref[0] not in periods or ref[1] not in shrinks:
            sys.exit("the grid must contain the paper's T = 10, S = 0.05 (the reference cell)")
    size = {"walks": 10, "traffic": args.hosts}
    length = {"walks": args.steps, "traffic": args.duration}
    tasks = [(k, t, s, seed, size[k], length[k]) for k in ("walks", "traffic")
             for t in periods for s in shrinks for seed in range(args.seeds)]  # fmt: skip
    results = parallel_map(one, tasks, args.jobs)
    rows, summary = [], {}
    for kind in ("walks", "traffic"):
        ref = {p.seed: p.adaptive for k, t, s, p in results
               if k == kind and (t, s) == (10.0, 0.05)}  # fmt: skip
        table = Table(title=f"{kind}: cost relative to (T, S) = (10, 0.05), median over seeds")
        table.add_column("T \\ S", justify="right")
        for s in shrinks:
            table.add_column(f"{s:g}", justify="right")
        grid = {}
        for t in periods:
            cells = []
            for s in shrinks:
                ps = [p for k, tt, ss, p in results if (k, tt, ss) == (kind, t, s)]
                rel = statistics.median(p.adaptive / ref[p.seed] for p in ps)
                grid[(t, s)] = rel
                rows.extend(ps)
                cells.append(f"{rel:.3f}")
            table.add_row(f"{t:g}", *cells)
        console.print(table)
        refs = [p for k, t, s, p in results if k == kind and (t, s) == (10.0, 0.05)]
        console.print(
            f"{kind}: (10, 0.05) costs {statistics.median(p.adaptive for p in refs):.3f} msg/unit, "
            f"uniform static {statistics.median(p.uniform for p in refs):.3f}; violations "
            f"{sum(p.violations for _, _, _, p in results if _ == kind)}"
        )
        best = min(grid, key=grid.get)  # type: ignore[arg-type]
        summary[kind] = (best, grid[best], max(grid.values()))
    write_points_csv([p for *_, p in results], args.out / "sensitivity.csv")
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    for ax, kind in zip(axes, ("walks", "traffic"), strict=True):
        for t in periods:
            ys = []
            for s in shrinks:
                ps = [p for k, tt, ss, p in results if (k, tt, ss) == (kind, t, s)]
                ys.append(statistics.median(p.adaptive for p in ps))
            ax.plot(shrinks, ys, "o-", label=f"T = {t:g}")
        ax.set_xscale("log")
        ax.set_xlabel("shrink percentage S")
        ax.set_ylabel("messages per time unit (median)")
        ax.set_title(f"{kind}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out / "sensitivity.png", dpi=110)
    plt.close(fig)
    console.print(f"wrote {args.out / 'sensitivity.csv'} and sensitivity.png")
    console.print(machine_line())
    violations = sum(p.violations for *_, p in results)
    print(
        "RESULT sensitivity "
        + " ".join(
            f"{k}_best=T{b[0]:g}/S{b[1]:g}:{v:.3f} {k}_worst_rel={worst:.3f}"
            for k, (b, v, worst) in summary.items()
        )
        + f" seeds={args.seeds} violations={violations}"
    )
    sys.exit(0 if violations == 0 else 1)


if __name__ == "__main__":
    main()
