"""The cost-vs-δ figures: random walks of §3.3 (Figures 3, 4) and traffic of §5 (Figures 7, 8).

Shared by ``benchmarks/filters/fig3.py``, ``fig4.py``, ``fig7.py`` and ``fig8.py``: command
line, sweep, table, CSV, PNG and RESULT line. For every δ and seed, the adaptive filters with
the paper's ``T = 10`` time units and ``S = 0.05`` run against static baselines on the same
data in the same process, every cost counted after the same warm-up (steady state); ratios are
taken per seed, then the median. Every adaptive answer is checked against the exact oracle
(violations must be 0).

- Walks: the optimized widths of App. F (SLSQP on ``Σ (2s_i)²/W_i²``) and the uniform widths,
  replayed through fixed filters. "Idealized" counts streamed updates only (growth messages
  free, as in §3.3); "full" adds the growth messages.
- Traffic (one time unit = 1 s): all messages counted (§5.1), against uniform static widths
  and not filtering.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from tsmon.sim.filters.experiments import (
    CostPoint,
    Sweep,
    SweepPlot,
    machine_line,
    parse_script_args,
    run_sweep,
    script_parser,
    sweep_rows,
    write_sweep,
)
from tsmon.sim.filters.workload import Workload

#: The issue's target: adaptive ≤ 1.10 × optimized static in steady state ("on par", §3.3).
TARGET_RATIO = 1.10

WALK_PLOT = SweepPlot(
    unit="time unit",
    costs=(
        ("adaptive", "o-", "adaptive (all messages)"),
        ("idealized", "o--", "adaptive, idealized (streamed)"),
        ("optimized", "s-", "optimized static (App. F)"),
        ("uniform", "^-", "uniform static"),
    ),
    ratios=(
        ("ideal_opt", "o--", "idealized / optimized"),
        ("full_opt", "o-", "full / optimized"),
        ("ideal_best", "x:", "idealized / min(opt, unif)"),
    ),
    target=TARGET_RATIO,
)

TRAFFIC_PLOT = SweepPlot(
    unit="second",
    costs=(
        ("adaptive", "o-", "adaptive (all messages)"),
        ("uniform", "^-", "uniform static"),
        ("none", "k:", "no filtering"),
    ),
    ratios=(("adapt_unif", "o-", "adaptive / uniform static"),),
)


def best_static(p: CostPoint) -> float:
    """The cheaper measured static allocation of the two."""
    return min(p.optimized, p.uniform)


def _parser(
    doc: str, script: str, *, deltas: str, deltas_help: str, seeds: int, warmup: int, unit: str
) -> argparse.ArgumentParser:
    """:func:`script_parser` with the sweep's ``--deltas``, ``--seeds`` and ``--warmup``."""
    ap = script_parser(doc, script)
    ap.add_argument("--deltas", default=deltas, help=deltas_help)
    ap.add_argument("--seeds", type=int, default=seeds)
    ap.add_argument("--warmup", type=int, default=warmup, help=f"{unit} not counted")
    ap.add_argument(
        "--growth",
        choices=("paper", "capped"),
        default="paper",
        help="growth allocation (paper: §3.2; capped: beyond the paper, see Coordinator)",
    )
    ap.add_argument("--period", type=float, default=10.0, help="T in time units (paper: 10)")
    ap.add_argument("--shrink", type=float, default=0.05, help="S (paper: 0.05)")
    return ap


def _settings(sweep: Sweep) -> str:
    """The algorithm settings of a sweep, for its header line."""
    return f"T = {sweep.period_units:g} time units, S = {sweep.shrink:g}, growth {sweep.growth}"


def _sweep(args: argparse.Namespace, **fields: Any) -> Sweep:
    """The sweep over the flags ``--deltas``, ``--seeds`` and ``--warmup``."""
    deltas = [float(x) for x in args.deltas.split(",")]
    return Sweep(
        deltas=deltas,
        seeds=list(range(args.seeds)),
        warmup=args.warmup,
        growth=args.growth,
        period_units=args.period,
        shrink=args.shrink,
        **fields,
    )


# ----------------------------------------------------------------- random walks (§3.3)


def report_walk_sweep(
    sweep: Sweep, points: Sequence[CostPoint], console: Console, out: Path
) -> bool:
    """Print the table and RESULT line, write CSV and PNG; returns whether the oracle held."""
    rows = sweep_rows(
        points,
        {
            "ideal_opt": ("idealized", lambda p: p.optimized),
            "full_opt": ("adaptive", lambda p: p.optimized),
            "ideal_best": ("idealized", best_static),
            "full_best": ("adaptive", best_static),
        },
    )
    table = Table(
        title=f"{sweep.title}: messages per time unit after warm-up (medians over "
        f"{len(sweep.seeds)} seeds; ratios per seed, then median)"
    )
    cols = ("δ", "adaptive", "idealized", "growth", "optimized", "uniform", "model opt")
    for c in (*cols, "ideal/opt", "full/opt", "ideal/best", "full/best", "viol."):
        table.add_column(c, justify="right")
    for r in rows:
        keys = ("adaptive", "idealized", "growth", "optimized", "uniform", "model_optimized")
        ratios = ("ideal_opt", "full_opt", "ideal_best", "full_best")
        table.add_row(
            f"{r['delta']:g}", *(f"{r[k]:.3f}" for k in (*keys, *ratios)), str(r["violations"])
        )
    console.print(table)
    console.print(
        "adaptive = all messages (streamed + growth); idealized = streamed only (§3.3); "
        "growth = growth/shrink messages; optimized = App. F static widths replayed; model opt = "
        "App. F model cost Σ(2s)²/W² of those widths; best = min(optimized, uniform) measured; "
        f"target ratio ≤ {TARGET_RATIO}"
    )
    write_sweep(sweep, points, rows, WALK_PLOT, out, console)
    violations = sum(r["violations"] for r in rows)
    checked = sum(r["checked"] for r in rows)
    met_ideal = [r["delta"] for r in rows if r["ideal_opt"] <= TARGET_RATIO]
    met_full = [r["delta"] for r in rows if r["full_opt"] <= TARGET_RATIO]
    console.print(
        f"target idealized/optimized ≤ {TARGET_RATIO}: met at δ in {met_ideal} of "
        f"{[r['delta'] for r in rows]}; full (with growth) at {met_full}"
    )
    worst = max(rows, key=lambda r: r["ideal_opt"])
    print(
        f"RESULT {sweep.name} "
        + " ".join(f"ideal_opt@{r['delta']:g}={r['ideal_opt']:.3f}" for r in rows)
        + " "
        + " ".join(f"full_opt@{r['delta']:g}={r['full_opt']:.3f}" for r in rows)
        + f" median_ideal_opt={statistics.median(r['ideal_opt'] for r in rows):.3f}"
        f" worst_ideal_opt={worst['ideal_opt']:.3f}@{worst['delta']:g}"
        f" seeds={len(sweep.seeds)} checked={checked} violations={violations}"
    )
    return violations == 0


def walk_figure(
    argv: Sequence[str] | None,
    doc: str,
    script: str,
    *,
    name: str,
    make: Callable[..., Workload],
    delta_name: str,
    deltas: str,
    quick_deltas: str,
    workload: str,
    x_label: str,
    title: str,
) -> None:
    """The whole script: flags, sweep, report; exits 1 if the oracle found a violation.

    ``make(delta, steps=…, seed=…)`` builds a workload; ``deltas`` and ``quick_deltas`` are the
    default and ``--quick`` values of ``delta_name``; ``workload`` describes it in one line.
    """
    ap = _parser(
        doc, script, deltas=deltas, deltas_help=f"values of {delta_name}", seeds=5, warmup=1_000,
        unit="time units",
    )  # fmt: skip
    ap.add_argument("--steps", type=int, default=10_000, help="time units per run")
    quick = {"deltas": quick_deltas, "seeds": 2, "steps": 3_000, "warmup": 500}
    quick_help = f"{delta_name} in {quick_deltas}; 2 seeds; 3,000 steps"
    args = parse_script_args(ap, argv, quick=quick, quick_help=quick_help)
    console = Console(width=150)
    sweep = _sweep(
        args, name=name, make=partial(make, steps=args.steps), x_label=x_label, title=title,
        optimized=True,
    )  # fmt: skip
    console.print(
        f"workload: {workload}, {args.steps} time units, warm-up {args.warmup}, "
        f"seeds {sweep.seeds}, {_settings(sweep)}"
    )
    ok = report_walk_sweep(sweep, run_sweep(sweep, args.jobs), console, args.out)
    console.print(machine_line())
    sys.exit(0 if ok else 1)


# ----------------------------------------------------------------- traffic (§5)


def report_traffic_sweep(
    sweep: Sweep, points: Sequence[CostPoint], console: Console, out: Path
) -> list[dict[str, Any]]:
    """Print the table, write CSV and PNG; returns one row of medians per δ."""
    rows = sweep_rows(
        points,
        {
            "adapt_unif": ("adaptive", lambda p: p.uniform),
            "adapt_none": ("adaptive", lambda p: p.none),
        },
    )
    table = Table(
        title=f"{sweep.title}: messages per second after {sweep.warmup} s warm-up "
        f"(medians over {len(sweep.seeds)} seeds; ratio per seed, then median)"
    )
    for c in ("δ", "adaptive", "streamed", "growth", "uniform", "no filter", "adapt/unif",
              "adapt/none", "checked", "viol."):  # fmt: skip
        table.add_column(c, justify="right")
    for r in rows:
        table.add_row(
            f"{r['delta']:g}",
            *(f"{r[k]:.3f}" for k in ("adaptive", "idealized", "growth", "uniform", "none")),
            f"{r['adapt_unif']:.3f}",
            f"{r['adapt_none']:.4f}",
            f"{r['checked']:,}",
            str(r["violations"]),
        )
    console.print(table)
    console.print(
        "adaptive = all messages (streamed + growth + shrink, §5.1); streamed = updates only; "
        "uniform = uniform static widths replayed; no filter = every update sent"
    )
    write_sweep(sweep, points, rows, TRAFFIC_PLOT, out, console)
    return rows


def traffic_figure(
    argv: Sequence[str] | None,
    doc: str,
    script: str,
    *,
    name: str,
    make: Callable[..., Workload],
    hosts: int,
    deltas: str,
    deltas_help: str,
    quick: Mapping[str, Any],
    quick_help: str,
    workload: str,
    x_label: str,
    title: str,
) -> tuple[Sweep, list[dict[str, Any]]]:
    """Flags, sweep and report of a traffic figure; the script adds its RESULT line.

    ``make(delta, n_hosts=…, duration_s=…, seed=…)`` builds a workload; ``workload`` (one line)
    and ``title`` may name ``{hosts}``; ``quick`` holds the flags of ``--quick``.
    """
    ap = _parser(
        doc, script, deltas=deltas, deltas_help=deltas_help, seeds=2, warmup=600, unit="seconds"
    )
    ap.add_argument("--hosts", type=int, default=hosts)
    ap.add_argument("--duration", type=int, default=7_200, help="seconds (paper: 2 hours)")
    args = parse_script_args(ap, argv, quick=quick, quick_help=quick_help)
    console = Console(width=150)
    make = partial(make, n_hosts=args.hosts, duration_s=args.duration)
    sweep = _sweep(
        args, name=name, make=make, x_label=x_label, title=title.format(hosts=args.hosts),
        none=True,
    )  # fmt: skip
    console.print(
        f"workload: {workload.format(hosts=args.hosts)}, {args.duration} s, warm-up "
        f"{args.warmup} s, seeds {sweep.seeds}, {_settings(sweep)}"
    )
    rows = report_traffic_sweep(sweep, run_sweep(sweep, args.jobs), console, args.out)
    console.print(machine_line())
    return sweep, rows


def traffic_result(sweep: Sweep, rows: Sequence[Mapping[str, Any]], middle: str) -> None:
    """Print ``RESULT <name> adapt_unif@δ=… <middle> seeds= checked= violations=`` and exit.

    Exits 1 if the oracle found a violation.
    """
    violations = sum(r["violations"] for r in rows)
    print(
        f"RESULT {sweep.name} "
        + " ".join(f"adapt_unif@{r['delta']:g}={r['adapt_unif']:.3f}" for r in rows)
        + f" {middle} seeds={len(sweep.seeds)} checked={sum(r['checked'] for r in rows)}"
        f" violations={violations}"
    )
    sys.exit(0 if violations == 0 else 1)
