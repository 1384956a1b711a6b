"""The paper's future work, measured against the plain adaptive algorithm (Olston et al. 2003).

Cost is messages (streamed + growth + shrink) per time unit of the adaptive protocol
(zero latency, ``T = 10`` time units, ``S = 0.05`` unless calibrated), counted after a warm-up of
the first fifth of the stream; ratios are against the plain algorithm on the same data and seed,
medians over seeds.

- **(b) source aggregation** (§5.2.1, App. G): none / all / auto (:func:`choose_aggregation` on
  the first third of the stream, step sizes estimated there) on the Fig. 8 workload
  (``aggregate="avg"``) and on App. G workloads where each side should win.
- **(a) batching** (§3 footnote): envelopes (one per source, instant and direction) against
  messages on Fig. 8 (10 sources × 31 objects) and Fig. 7 (one object per source), and a run
  whose ``C_i`` are the pilot's "travelled alone" fractions (:func:`batching_costs`).
- **(c) automatic T and S** (§5): pilot runs of a 4×4 grid on the first 30 % of the stream, the
  cheapest kept for the rest; compared there with ``T = 10``, ``S = 0.05``.

``python benchmarks/filters/bench_beyond.py --quick`` is a smoke run (< 30 s).
"""

from __future__ import annotations

import statistics
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from rich.console import Console
from rich.table import Table

from tsmon.protocols.filters.aggregation import aggregate_sources, all_pairs
from tsmon.sim.filters import fig7_workload, fig8_workload
from tsmon.sim.filters.beyond import (
    aggregated_workload,
    appendix_g_workload,
    batching_costs,
    calibrate,
    choose_aggregation,
)
from tsmon.sim.filters.experiments import parse_script_args, script_parser, write_rows_csv
from tsmon.sim.filters.runner import AdaptiveResult, run_adaptive
from tsmon.sim.filters.walks import fig3_workload, fig4_workload
from tsmon.sim.filters.workload import Workload

PERIOD_MS, SHRINK = 10_000, 0.05


def warmup(w: Workload) -> int:
    return w.duration_ms // 5


def adaptive_run(
    w: Workload,
    seed: int,
    warmup_ms: int,
    *,
    period_ms: int = PERIOD_MS,
    shrink: float = SHRINK,
    costs: dict[str, float] | None = None,
) -> AdaptiveResult:
    """The adaptive run of every experiment: messages and envelopes, no oracle check."""
    return run_adaptive(w, period_ms=period_ms, shrink=shrink, seed=seed, warmup_ms=warmup_ms,
                        check=False, costs=costs)  # fmt: skip


def aggregation_rows(quick: bool, seeds: list[int]) -> list[dict]:
    rows = []
    duration = 600 if quick else 3_600
    cases: list[tuple[str, callable]] = [
        (f"fig8 δ={d:g}", lambda s, d=d: fig8_workload(d, duration_s=duration, seed=s,
                                                        aggregate="avg"))
        for d in ((4.0,) if quick else (2.0, 4.0, 8.0))
    ]  # fmt: skip
    steps = 1_500 if quick else 6_000
    cases += [
        ("G disparity", lambda s: appendix_g_workload(["private"] * 6, disparity=10.0,
                                                       delta=6.0, steps=steps, seed=s)),
        ("G shared", lambda s: appendix_g_workload(["shared"] * 6, disparity=1.0,
                                                    delta=6.0, steps=steps, seed=s)),
        ("G mixed", lambda s: appendix_g_workload(["private"] * 3 + ["shared"] * 3,
                                                   disparity=1.0, delta=6.0, steps=steps,
                                                   seed=s)),
    ]  # fmt: skip
    for name, make in cases:
        for seed in seeds:
            w = make(seed).with_step_sizes(None)  # the choice sees estimated steps only
            choice = choose_aggregation(w, prefix_ms=w.duration_ms // 3)
            configs = {
                "none": set(),
                "all": all_pairs(w.queries, w.source_of),
                "auto": choice.chosen,
            }
            plain = None
            for config, chosen in configs.items():
                aw = aggregated_workload(w, aggregate_sources(w.queries, w.source_of, chosen))
                r = adaptive_run(aw, seed, warmup(aw))
                plain = plain or r.per_time_unit
                rows.append({
                    "experiment": "aggregation", "workload": name, "seed": seed,
                    "config": config, "cost": r.per_time_unit,
                    "envelopes": r.envelopes_per_time_unit, "ratio": r.per_time_unit / plain,
                    "note": f"{len(chosen)}/{len(configs['all'])} pairs; "
                            f"model {choice.model[config if config != 'auto' else 'chosen']:.3g}",
                })  # fmt: skip
    return rows


def batching_rows(quick: bool, seeds: list[int]) -> list[dict]:
    rows = []
    cases = [
        ("fig8 δ=4", lambda s: fig8_workload(4.0, duration_s=600 if quick else 3_600, seed=s,
                                              aggregate="avg")),
        ("fig7 δ=5", lambda s: fig7_workload(5.0, n_hosts=20 if quick else 200,
                                              duration_s=600 if quick else 3_600, seed=s)),
    ]  # fmt: skip
    for name, make in cases:
        for seed in seeds:
            w = make(seed)
            plain = adaptive_run(w, seed, warmup(w))
            aware = adaptive_run(w, seed, warmup(w), costs=batching_costs(plain))
            base = plain.per_time_unit
            for config, r, cost in (
                ("messages", plain, plain.per_time_unit),
                ("envelopes", plain, plain.envelopes_per_time_unit),
                ("envelopes, C_i batch-aware", aware, aware.envelopes_per_time_unit),
            ):
                rows.append({
                    "experiment": "batching", "workload": name, "seed": seed, "config": config,
                    "cost": cost, "envelopes": r.envelopes_per_time_unit, "ratio": cost / base,
                    "note": f"streamed {r.counts.streamed}, growth {r.counts.growth}",
                })  # fmt: skip
    return rows


def calibration_rows(quick: bool, seeds: list[int]) -> list[dict]:
    rows = []
    steps = 2_000 if quick else 10_000
    cases = [
        ("fig3 walks δ=2", lambda s: fig3_workload(2.0, steps=steps, seed=s)),
        ("fig4 walks δmax=2", lambda s: fig4_workload(2.0, steps=steps, seed=s)),
        ("fig7 traffic δ=5", lambda s: fig7_workload(5.0, n_hosts=10 if quick else 50,
                                                      duration_s=steps // 2 if quick else 3_600,
                                                      seed=s)),
    ]  # fmt: skip
    grid = ((5, 20), (0.02, 0.1)) if quick else ((5, 10, 20, 40), (0.02, 0.05, 0.1, 0.2))
    for name, make in cases:
        for seed in seeds:
            w = make(seed)
            pilot_ms = int(w.duration_ms * 0.3)
            cal = calibrate(w, pilot_ms=pilot_ms, periods=grid[0], shrinks=grid[1], seed=seed)
            rest = w.slice_time(int(w.ts_ms[0]) + pilot_ms, carry=True)
            plain = adaptive_run(rest, seed, rest.duration_ms // 10)
            tuned = adaptive_run(rest, seed, rest.duration_ms // 10, period_ms=cal.period_ms,
                           shrink=cal.shrink)  # fmt: skip
            for config, r in (("T=10 S=0.05", plain), ("calibrated", tuned)):
                rows.append({
                    "experiment": "calibration", "workload": name, "seed": seed,
                    "config": config, "cost": r.per_time_unit,
                    "envelopes": r.envelopes_per_time_unit,
                    "ratio": r.per_time_unit / plain.per_time_unit,
                    "note": f"T={cal.period_ms // w.time_unit_ms} S={cal.shrink}",
                })  # fmt: skip
    return rows


def summarize(rows: list[dict]) -> list[tuple[str, str, str, float, float, str]]:
    keys: dict[tuple[str, str, str], list[dict]] = {}
    for r in rows:
        keys.setdefault((r["experiment"], r["workload"], r["config"]), []).append(r)
    out = []
    for (exp, wl, config), rs in keys.items():
        notes = sorted({r["note"].split(";")[0] for r in rs})
        out.append((exp, wl, config, statistics.median(r["cost"] for r in rs),
                    statistics.median(r["ratio"] for r in rs), ", ".join(notes[:3])))  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> None:
    ap = script_parser(__doc__, __file__)
    ap.add_argument("--seeds", type=int, default=None, help="seeds per setting")
    args = parse_script_args(ap, argv, quick={}, quick_help="smoke run, < 30 s", jobs=None)
    seeds = list(range(args.seeds or (1 if args.quick else 3)))
    started = time.perf_counter()
    rows = aggregation_rows(args.quick, seeds)
    rows += batching_rows(args.quick, seeds)
    rows += calibration_rows(args.quick, seeds)
    write_rows_csv(rows, args.out / "beyond.csv")
    summary = summarize(rows)
    table = Table(title=f"Beyond the paper: medians over {len(seeds)} seed(s)")
    for col in ("experiment", "workload", "config", "cost / time unit", "ratio", "note"):
        table.add_column(col, justify="right" if col in ("cost / time unit", "ratio") else "left")
    for exp, wl, config, cost, ratio, note in summary:
        table.add_row(exp, wl, config, f"{cost:.3f}", f"{ratio:.3f}", note)
    Console().print(table)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    for ax, exp in zip(axes, ("aggregation", "batching", "calibration"), strict=True):
        sub = [s for s in summary if s[0] == exp]
        ax.barh([f"{s[1]} · {s[2]}" for s in sub], [s[4] for s in sub])
        ax.axvline(1.0, color="k", lw=0.8)
        ax.set_title(f"{exp}: cost ratio vs plain (median)")
        ax.tick_params(axis="y", labelsize=7)
        ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(args.out / "beyond.png", dpi=120)
    for exp, wl, config, cost, ratio, note in summary:
        print(f"RESULT {exp} | {wl} | {config} | cost={cost:.4f}/tu | ratio={ratio:.3f} | {note}")
    print(f"wrote {args.out / 'beyond.csv'} and {args.out / 'beyond.png'} "
          f"in {time.perf_counter() - started:.1f} s")  # fmt: skip


if __name__ == "__main__":
    main()
