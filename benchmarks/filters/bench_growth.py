"""Paper growth vs capped growth (beyond §3.2) on the walk and traffic workloads.

The paper's greedy growth hands all the leftover width to the object of highest deviation;
with one AVG query over many objects only one object grows per period while all others
shrink by ``S``. ``growth="capped"`` first grows every overburdened object until its
modelled burden meets its target (App. C model, :func:`~tsmon.protocols.filters.precision.
growth_caps`), then hands out the rest as the paper does. Costs are messages per time unit
(streamed + growth + shrink) after a warm-up, every answer checked by the exact oracle;
ratios capped / paper per workload and seed, median over seeds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from functools import partial

from rich.console import Console
from rich.table import Table

from tsmon.sim.filters import fig3_workload, fig4_workload, fig7_workload, fig8_workload
from tsmon.sim.filters.runner import run_adaptive

T_MS, S = 10_000, 0.05


def workloads(quick: bool) -> dict[str, tuple[object, int]]:
    """name -> (builder of a seeded workload, warm-up in ms)."""
    steps, seconds = (2_000, 900) if quick else (10_000, 3_600)
    return {
        "fig3 δ=2": (partial(fig3_workload, 2.0, steps=steps), 1_000_000),
        "fig3 δ=8": (partial(fig3_workload, 8.0, steps=steps), 1_000_000),
        "fig4 δmax=8": (partial(fig4_workload, 8.0, steps=steps), 1_000_000),
        "fig7 δ=5": (partial(fig7_workload, 5.0, duration_s=seconds), 300_000),
        "fig8 δ=4": (partial(fig8_workload, 4.0, duration_s=seconds, aggregate="avg"), 300_000),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="short streams, 1 seed")
    args = ap.parse_args(argv)
    seeds = range(1 if args.quick else args.seeds)
    table = Table(title="growth allocation: paper vs capped (messages per time unit)")
    for col in ("workload", "paper", "capped", "capped/paper", "violations"):
        table.add_column(col, justify="left" if col == "workload" else "right")
    result = []
    for name, (make, warmup_ms) in workloads(args.quick).items():
        cost = {"paper": [], "capped": []}
        violations = 0
        for seed in seeds:
            w = make(seed=seed)
            for growth in cost:
                r = run_adaptive(
                    w, period_ms=T_MS, shrink=S, seed=seed, warmup_ms=warmup_ms, growth=growth
                )
                cost[growth].append(r.per_time_unit)
                violations += r.violations
        ratio = statistics.median(c / p for c, p in zip(cost["capped"], cost["paper"], strict=True))
        paper, capped = statistics.median(cost["paper"]), statistics.median(cost["capped"])
        table.add_row(name, f"{paper:.3f}", f"{capped:.3f}", f"{ratio:.3f}", str(violations))
        result.append(f"{name.replace(' ', '_')}={ratio:.3f}")
    Console().print(table)
    print(f"RESULT growth capped/paper {' '.join(result)} seeds={len(seeds)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
