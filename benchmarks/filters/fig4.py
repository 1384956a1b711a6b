"""Figure 4 (§3.3): adaptive vs optimized static (App. F) vs uniform static, five AVG queries.

Workload: ``fig4_workload`` — five AVG queries over random subsets (sizes 2–5) of 10 random walks,
δ_j uniform in (0, δmax] (the x-axis is δmax); step sizes
uniform in (0.1, 2.0), moving ±s_i once per time unit. Adaptive filters with the paper's
``T = 10`` time units and ``S = 0.05``; costs are messages per time unit counted after a
warm-up (steady state), for several seeds (data, step sizes and tie-breaks), medians reported.
"Idealized" counts streamed updates only (growth messages free, as in §3.3); "full" adds the
growth messages. Baselines in the same process on the same data: the optimized static widths
of App. F (SLSQP on ``Σ (2s_i)²/W_i²``) and the uniform widths, replayed through fixed filters.
Every adaptive answer is checked against the exact oracle (violations must be 0).
``python benchmarks/filters/fig4.py --quick`` is a smoke run (< 30 s).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from tsmon.sim.filters.experiments import machine_line
from tsmon.sim.filters.walkfigs import WalkSweep, report_walk_sweep, run_walk_sweep
from tsmon.sim.filters.walks import fig4_workload
from tsmon.sim.filters.workload import Workload


def make(delta: float, steps: int, seed: int) -> Workload:
    return fig4_workload(delta, steps=steps, seed=seed)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--deltas", default="2,4,6,8,12,16,20,30", help="δmax values")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=10_000, help="time units per run")
    ap.add_argument("--warmup", type=int, default=1_000, help="time units not counted")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    ap.add_argument("--quick", action="store_true", help="δmax in 4,8,16; 2 seeds; 3,000 steps")
    args = ap.parse_args(argv)
    if args.quick:
        vars(args).update(deltas="4,8,16", seeds=2, steps=3_000, warmup=500)
    console = Console(width=150)
    sweep = WalkSweep(
        name="fig4",
        make=make,
        deltas=[float(x) for x in args.deltas.split(",")],
        seeds=list(range(args.seeds)),
        steps=args.steps,
        warmup=args.warmup,
        x_label="δmax (δ_j uniform in (0, δmax])",
        title="Fig. 4: five AVG queries over 10 random walks",
    )
    console.print(
        f"workload: fig4_workload (5 AVG, sets of 2–5 of 10 walks, δ_j ~ U(0, δmax]), "
        f"{args.steps} time units, warm-up {args.warmup}, seeds {sweep.seeds}, T = 10, S = 0.05"
    )
    points = run_walk_sweep(sweep, args.jobs)
    ok = report_walk_sweep(sweep, points, console, args.out)
    console.print(machine_line())
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
