"""Figure 7 (§5.1): adaptive vs uniform static widths, one AVG query over 200 traffic sources.

Workload: ``fig7_workload`` — 200 hosts of synthetic wide-area traffic (Pareto on/off sessions,
0..~150 packets/s, standing in for the [PF95] trace), each object the one-minute moving average
of its packet rate, updated every second; one AVG query with precision δ (packets/s). Adaptive
filters with ``T = 10`` s, ``S = 0.05``, all messages counted (§5.1: "accounting for all
communication costs") after a warm-up; uniform static widths (``W = δ``) and not filtering on
the same data in the same process. Every adaptive answer is checked against the exact oracle.
``python benchmarks/filters/fig7.py --quick`` is a smoke run (< 30 s).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from functools import partial
from pathlib import Path

from rich.console import Console

from tsmon.sim.filters.experiments import machine_line
from tsmon.sim.filters.traffic import fig7_workload
from tsmon.sim.filters.trafficfigs import TrafficSweep, report_traffic_sweep, run_traffic_sweep
from tsmon.sim.filters.workload import Workload


def make(hosts: int, duration_s: int, delta: float, seed: int) -> Workload:
    return fig7_workload(delta, n_hosts=hosts, duration_s=duration_s, seed=seed)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--deltas", default="0.5,1,2,5,10,20", help="precision constraints δ")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--hosts", type=int, default=200)
    ap.add_argument("--duration", type=int, default=7_200, help="seconds (paper: 2 hours)")
    ap.add_argument("--warmup", type=int, default=600, help="seconds not counted")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    ap.add_argument("--quick", action="store_true", help="50 hosts, 15 min, δ in 1,5; 1 seed")
    args = ap.parse_args(argv)
    if args.quick:
        vars(args).update(deltas="1,5", seeds=1, hosts=50, duration=900, warmup=120)
    console = Console(width=150)
    sweep = TrafficSweep(
        name="fig7",
        make=partial(make, args.hosts, args.duration),
        deltas=[float(x) for x in args.deltas.split(",")],
        seeds=list(range(args.seeds)),
        warmup_s=args.warmup,
        x_label="precision constraint δ (packets/s)",
        title=f"Fig. 7: one AVG over {args.hosts} traffic sources",
    )
    console.print(
        f"workload: fig7_workload, {args.hosts} hosts, {args.duration} s, warm-up {args.warmup} s, "
        f"seeds {sweep.seeds}, T = 10 s, S = 0.05"
    )
    rows = report_traffic_sweep(sweep, run_traffic_sweep(sweep, args.jobs), console, args.out)
    console.print(machine_line())
    violations = sum(r["violations"] for r in rows)
    print(
        "RESULT fig7 "
        + " ".join(f"adapt_unif@{r['delta']:g}={r['adapt_unif']:.3f}" for r in rows)
        + f" median_adapt_unif={statistics.median(r['adapt_unif'] for r in rows):.3f}"
        f" seeds={len(sweep.seeds)} checked={sum(r['checked'] for r in rows)}"
        f" violations={violations}"
    )
    sys.exit(0 if violations == 0 else 1)


if __name__ == "__main__":
    main()
