"""Fig. 8 workload: the paper's algorithm, and it combined with the beyond-the-paper options.

The issue's target for the overlapping multi-query workload is adaptive ≤ 1/3 of uniform
static's messages at moderate δ. This script measures, on ``fig8_workload(aggregate="avg")``
(10 hosts × 31 measurement groups, five overlapping queries, 2 h), messages per second after a
warm-up for: the plain algorithm (T = 10 s, S = 0.05); with T and S calibrated on the first
30 % of the stream (:func:`~tsmon.sim.filters.beyond.calibrate`; the recorded prefix is not
charged); with automatic source aggregation (App. G, chosen on the same prefix); and with
both. Uniform static allocation over the raw objects is the baseline, replayed on the same
stream. Every adaptive answer is checked by the exact oracle.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from rich.console import Console
from rich.table import Table

from tsmon.protocols.filters.aggregation import aggregate_sources
from tsmon.sim.filters import fig8_workload, run_static, uniform_static_widths
from tsmon.sim.filters.beyond import aggregated_workload, calibrate, choose_aggregation
from tsmon.sim.filters.runner import run_adaptive

T_MS, S = 10_000, 0.05


def costs(delta: float, seed: int, seconds: int, warmup_ms: int) -> dict[str, float]:
    """Messages per second of every variant, and of uniform static, for one δ and seed."""
    w = fig8_workload(delta, duration_s=seconds, seed=seed, aggregate="avg")
    pilot_ms = int(0.3 * seconds * 1000)
    cal = calibrate(w, pilot_ms=pilot_ms, seed=seed)
    agg = aggregated_workload(
        w,
        aggregate_sources(w.queries, w.source_of, choose_aggregation(w, prefix_ms=pilot_ms).chosen),
    )
    runs = {
        "plain": (w, T_MS, S),
        "calibrated": (w, cal.period_ms, cal.shrink),
        "aggregated": (agg, T_MS, S),
        "both": (agg, cal.period_ms, cal.shrink),
    }
    out = {}
    for name, (workload, period, shrink) in runs.items():
        r = run_adaptive(workload, period_ms=period, shrink=shrink, seed=seed, warmup_ms=warmup_ms)
        if r.violations:
            raise AssertionError(f"{name}: {r.violations} answers missed the exact value")
        out[name] = r.per_time_unit
    out["uniform"] = run_static(w, uniform_static_widths(w)).per_time_unit
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--deltas", type=float, nargs="+", default=[1.0, 2.0, 4.0, 8.0])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--duration", type=int, default=7200, help="seconds (paper: 23 h)")
    ap.add_argument("--quick", action="store_true", help="δ = 4, one seed, 20 minutes")
    args = ap.parse_args(argv)
    if args.quick:
        args.deltas, args.seeds, args.duration = [4.0], 1, 1200
    warmup_ms = min(600_000, args.duration * 100)
    table = Table(title="Fig. 8 workload: messages per second, ratio to uniform static")
    names = ("plain", "calibrated", "aggregated", "both")
    for col in ("δ", "uniform", *names):
        table.add_column(col, justify="right")
    result = []
    for delta in args.deltas:
        runs = [costs(delta, seed, args.duration, warmup_ms) for seed in range(args.seeds)]
        uniform = statistics.median(r["uniform"] for r in runs)
        cells = []
        for name in names:
            ratio = statistics.median(r[name] / r["uniform"] for r in runs)
            value = statistics.median(r[name] for r in runs)
            cells.append(f"{value:.3f} ({ratio:.3f})")
            result.append(f"{name}@{delta:g}={ratio:.3f}")
        table.add_row(f"{delta:g}", f"{uniform:.3f}", *cells)
    Console().print(table)
    print(f"RESULT fig8_combined ratio_to_uniform {' '.join(result)} seeds={args.seeds}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
