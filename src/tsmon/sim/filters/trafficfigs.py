"""The traffic figures of §5 (Figures 7 and 8): sweep, table, CSV, PNG, RESULT line.

Shared by ``benchmarks/filters/fig7.py`` and ``fig8.py``: for every δ and seed, the adaptive
filters (``T = 10`` s, ``S = 0.05``, all messages counted, §5.1) against uniform static widths
and not filtering, counted after the same warm-up. Ratios are per seed, then the median.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from rich.console import Console
from rich.table import Table

from tsmon.sim.filters.experiments import (
    CostPoint,
    cost_point,
    parallel_map,
    pyplot,
    write_points_csv,
)
from tsmon.sim.filters.workload import Workload


@dataclass(frozen=True)
class TrafficSweep:
    """What to run: ``make(delta, seed)`` for every δ and seed."""

    name: str
    make: Callable[[float, int], Workload]
    deltas: Sequence[float]
    seeds: Sequence[int]
    warmup_s: int
    x_label: str
    title: str


def _one(sweep: TrafficSweep, task: tuple[float, int]) -> CostPoint:
    delta, seed = task
    return cost_point(
        sweep.make(delta, seed),
        label=sweep.name,
        delta=delta,
        seed=seed,
        warmup_units=sweep.warmup_s,
        uniform=True,
        none=True,
    )


def run_traffic_sweep(sweep: TrafficSweep, jobs: int) -> list[CostPoint]:
    """Cost points of every (δ, seed)."""
    tasks = [(d, s) for d in sweep.deltas for s in sweep.seeds]
    return parallel_map(partial(_one, sweep), tasks, jobs)


def report_traffic_sweep(
    sweep: TrafficSweep, points: list[CostPoint], console: Console, out: Path
) -> list[dict]:
    """Print the table, write CSV and PNG; returns one row of medians per δ."""
    by_delta: dict[float, list[CostPoint]] = {}
    for p in points:
        by_delta.setdefault(p.delta, []).append(p)
    table = Table(
        title=f"{sweep.title}: messages per second after {sweep.warmup_s} s warm-up "
        f"(medians over {len(sweep.seeds)} seeds; ratio per seed, then median)"
    )
    for c in ("δ", "adaptive", "streamed", "growth", "uniform", "no filter", "adapt/unif",
              "adapt/none", "checked", "viol."):  # fmt: skip
        table.add_column(c, justify="right")
    rows = []
    for delta, ps in sorted(by_delta.items()):
        med = {k: statistics.median(getattr(p, k) for p in ps)
               for k in ("adaptive", "idealized", "growth", "uniform", "none")}  # fmt: skip
        r = {
            "delta": delta,
            **med,
            "adapt_unif": statistics.median(p.adaptive / p.uniform for p in ps),
            "adapt_none": statistics.median(p.adaptive / p.none for p in ps),
            "checked": sum(p.checked for p in ps),
            "violations": sum(p.violations for p in ps),
        }
        rows.append(r)
        table.add_row(
            f"{delta:g}",
            *(f"{med[k]:.3f}" for k in ("adaptive", "idealized", "growth", "uniform", "none")),
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
    out.mkdir(parents=True, exist_ok=True)
    write_points_csv(points, out / f"{sweep.name}.csv")
    _plot(sweep, rows, out / f"{sweep.name}.png")
    console.print(f"wrote {out / (sweep.name + '.csv')} and {out / (sweep.name + '.png')}")
    return rows


def _plot(sweep: TrafficSweep, rows: list[dict], path: Path) -> None:
    plt = pyplot()
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.6))
    x = [r["delta"] for r in rows]
    ax.plot(x, [r["adaptive"] for r in rows], "o-", label="adaptive (all messages)")
    ax.plot(x, [r["uniform"] for r in rows], "^-", label="uniform static")
    ax.plot(x, [r["none"] for r in rows], "k:", label="no filtering")
    ax.set_yscale("log")
    ax.set_xlabel(sweep.x_label)
    ax.set_ylabel("messages per second (median)")
    ax.set_title(sweep.title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax2.plot(x, [r["adapt_unif"] for r in rows], "o-", label="adaptive / uniform static")
    ax2.axhline(1.0, color="grey", lw=0.6)
    ax2.set_xlabel(sweep.x_label)
    ax2.set_ylabel("cost ratio (median over seeds)")
    ax2.grid(True, alpha=0.3)
    ax2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
