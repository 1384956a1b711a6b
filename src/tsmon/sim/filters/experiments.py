"""Shared sweep code of the figure scripts in ``benchmarks/filters/`` (§3.3, §5).

One *cost point* is a workload run through the adaptive filters and the static baselines, every
cost counted after the same warm-up and divided by the same number of time units, so that the
ratios compare like with like. The scripts run points over δ, seeds or ``(T, S)`` and take
medians.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import platform
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from rich.console import Console

from tsmon.sim.filters.baselines import (
    OptimizationWarning,
    optimized_static_widths,
    uniform_static_widths,
)
from tsmon.sim.filters.runner import run_adaptive
from tsmon.sim.filters.static import run_static
from tsmon.sim.filters.workload import Workload

T_ = TypeVar("T_")
R_ = TypeVar("R_")

#: The paper's settings (§5): adjustment period 10 time units, shrink percentage 5 %.
PAPER_T_UNITS = 10
PAPER_S = 0.05


@dataclass(frozen=True)
class CostPoint:
    """Costs per time unit of one workload after the warm-up; ``nan`` when not computed.

    ``adaptive`` counts every message (streamed, growth, shrink), ``idealized`` only the
    streamed updates (§3.3: growth messages free); ``violations`` is the oracle's count over
    the whole run (``checked`` pairs).
    """

    label: str
    delta: float
    seed: int
    adaptive: float
    idealized: float
    growth: float
    optimized: float = math.nan
    uniform: float = math.nan
    none: float = math.nan
    model_optimized: float = math.nan
    model_uniform: float = math.nan
    checked: int = 0
    violations: int = 0
    extra: Mapping[str, float] = field(default_factory=dict)


def static_cost(workload: Workload, widths: np.ndarray, warm_at_ms: int) -> float:
    """Streamed updates per time unit of fixed ``widths``, counted from ``warm_at_ms`` on.

    The replay starts at the first update (so the filters are in steady state at the warm-up)
    and the time units are those of :func:`steady_time_units`.
    """
    sent = run_static(workload, widths).sent
    count = int(sent[workload.ts_ms >= warm_at_ms].sum())
    units = steady_time_units(workload, warm_at_ms)
    return count / units if units else math.nan


def no_filter_cost(workload: Workload, warm_at_ms: int) -> float:
    """Updates per time unit from ``warm_at_ms`` on: the cost of not filtering (§5.2)."""
    units = steady_time_units(workload, warm_at_ms)
    return int((workload.ts_ms >= warm_at_ms).sum()) / units if units else math.nan


def steady_time_units(workload: Workload, warm_at_ms: int) -> float:
    """Time units from ``warm_at_ms`` to the last update (the divisor of every cost)."""
    return max(int(workload.ts_ms[-1]) - warm_at_ms, 0) / workload.time_unit_ms


def cost_point(
    workload: Workload,
    *,
    label: str,
    delta: float,
    seed: int,
    warmup_units: float,
    period_units: float = PAPER_T_UNITS,
    shrink: float = PAPER_S,
    optimized: bool = False,
    uniform: bool = True,
    none: bool = False,
    check: bool = True,
    growth: str = "paper",
) -> CostPoint:
    """Adaptive and static costs of ``workload`` per time unit after ``warmup_units``.

    ``optimized`` needs the workload's random-walk step sizes (App. F). The adaptive run uses
    ``T = period_units`` time units, ``S = shrink`` and tie-break seed ``seed``.
    """
    unit = workload.time_unit_ms
    warmup_ms = round(warmup_units * unit)
    warm_at = int(workload.ts_ms[0]) + warmup_ms
    r = run_adaptive(
        workload,
        period_ms=round(period_units * unit),
        shrink=shrink,
        seed=seed,
        warmup_ms=warmup_ms,
        check=check,
        growth=growth,
    )
    units = steady_time_units(workload, warm_at)
    out: dict[str, Any] = {
        "adaptive": r.counts.total / units,
        "idealized": r.counts.streamed / units,
        "growth": (r.counts.growth + r.counts.shrink) / units,
        "checked": r.checked,
        "violations": r.violations,
    }
    if optimized:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OptimizationWarning)
            opt = optimized_static_widths(workload)
        out["optimized"] = static_cost(workload, opt.widths, warm_at)
        out["model_optimized"] = opt.model_cost
    if uniform:
        widths = uniform_static_widths(workload)
        out["uniform"] = static_cost(workload, widths, warm_at)
        if workload.step_sizes is not None:
            from tsmon.sim.filters.baselines import model_cost

            out["model_uniform"] = model_cost(widths, workload.step_sizes)
    if none:
        out["none"] = no_filter_cost(workload, warm_at)
    return CostPoint(label, float(delta), int(seed), **out)


def parallel_map(fn: Callable[[T_], R_], items: Sequence[T_], jobs: int) -> list[R_]:
    """``[fn(x) for x in items]``, in ``jobs`` processes when ``jobs > 1`` (order kept)."""
    if jobs <= 1 or len(items) <= 1:
        return [fn(x) for x in items]
    with ProcessPoolExecutor(max_workers=min(jobs, len(items))) as pool:
        return list(pool.map(fn, items))


def median_ratio(points: Iterable[CostPoint], num: str, den: Callable[[CostPoint], float]) -> float:
    """Median over points of ``getattr(p, num) / den(p)``: a ratio per seed, then the median."""
    ratios = [getattr(p, num) / den(p) for p in points]
    return statistics.median(ratios) if ratios else math.nan


# ----------------------------------------------------------------- sweeps over δ and seeds


@dataclass(frozen=True)
class Sweep:
    """What a figure runs: ``make(delta, seed=seed)`` for every δ and seed.

    Costs are counted after ``warmup`` time units; the uniform static baseline always runs,
    ``optimized`` adds App. F's (it needs step sizes), ``none`` the cost of not filtering.
    """

    name: str
    make: Callable[..., Workload]
    deltas: Sequence[float]
    seeds: Sequence[int]
    warmup: int
    x_label: str
    title: str
    optimized: bool = False
    none: bool = False
    growth: str = "paper"
    period_units: float = PAPER_T_UNITS
    shrink: float = PAPER_S


def _sweep_point(sweep: Sweep, task: tuple[float, int]) -> CostPoint:
    delta, seed = task
    return cost_point(
        sweep.make(delta, seed=seed),
        label=sweep.name,
        delta=delta,
        seed=seed,
        warmup_units=sweep.warmup,
        optimized=sweep.optimized,
        uniform=True,
        none=sweep.none,
        growth=sweep.growth,
        period_units=sweep.period_units,
        shrink=sweep.shrink,
    )


def run_sweep(sweep: Sweep, jobs: int) -> list[CostPoint]:
    """Cost points of every (δ, seed), in ``jobs`` processes."""
    tasks = [(d, s) for d in sweep.deltas for s in sweep.seeds]
    return parallel_map(partial(_sweep_point, sweep), tasks, jobs)


#: The cost fields of :class:`CostPoint` whose medians a sweep row holds.
COST_FIELDS = (
    "adaptive", "idealized", "growth", "optimized", "uniform", "none", "model_optimized",
    "model_uniform",
)  # fmt: skip


def sweep_rows(
    points: Iterable[CostPoint], ratios: Mapping[str, tuple[str, Callable[[CostPoint], float]]]
) -> list[dict[str, Any]]:
    """One row per δ, ascending: ``delta``, the median of every cost field, every ratio.

    ``ratios`` maps a row key to ``(num, den)`` of :func:`median_ratio` (a ratio per seed, then
    the median); ``checked`` and ``violations`` are summed.
    """
    groups: dict[float, list[CostPoint]] = {}
    for p in points:
        groups.setdefault(p.delta, []).append(p)
    rows = []
    for delta, ps in sorted(groups.items()):
        row: dict[str, Any] = {"delta": delta}
        row |= {k: statistics.median(getattr(p, k) for p in ps) for k in COST_FIELDS}
        row |= {k: median_ratio(ps, num, den) for k, (num, den) in ratios.items()}
        row |= {"checked": sum(p.checked for p in ps), "violations": sum(p.violations for p in ps)}
        rows.append(row)
    return rows


@dataclass(frozen=True)
class SweepPlot:
    """The PNG of a sweep: median costs per ``unit`` (log scale) left, ratios right.

    Each line is ``(row key, matplotlib style, label)``; ``target`` adds a red line to the
    ratios, and the ratio panel says so when its first line has undefined values.
    """

    unit: str
    costs: Sequence[tuple[str, str, str]]
    ratios: Sequence[tuple[str, str, str]]
    target: float | None = None


def write_sweep(
    sweep: Sweep,
    points: Sequence[CostPoint],
    rows: Sequence[Mapping[str, Any]],
    plot: SweepPlot,
    out: Path,
    console: Console,
) -> None:
    """Write ``out/<name>.csv`` (every point) and ``out/<name>.png`` (``plot``), and say so."""
    out.mkdir(parents=True, exist_ok=True)
    csv_path, png_path = out / f"{sweep.name}.csv", out / f"{sweep.name}.png"
    write_points_csv(points, csv_path)
    plt = pyplot()
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.6))
    x = [r["delta"] for r in rows]
    for key, style, label in plot.costs:
        ax.plot(x, [r[key] for r in rows], style, label=label)
    ax.set_yscale("log")
    ax.set_xlabel(sweep.x_label)
    ax.set_ylabel(f"messages per {plot.unit} (median)")
    ax.set_title(sweep.title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    for key, style, label in plot.ratios:
        ax2.plot(x, [r[key] for r in rows], style, label=label)
    if plot.target is not None:
        ax2.axhline(plot.target, color="red", lw=0.8, label=f"target {plot.target}")
    ax2.axhline(1.0, color="grey", lw=0.6)
    ax2.set_xlabel(sweep.x_label)
    ax2.set_ylabel("cost ratio (median over seeds)")
    ax2.grid(True, alpha=0.3)
    ax2.legend(fontsize=8)
    if any(math.isnan(r[plot.ratios[0][0]]) for r in rows):
        ax2.set_title("some ratios undefined")
    fig.tight_layout()
    fig.savefig(png_path, dpi=110)
    plt.close(fig)
    console.print(f"wrote {csv_path} and {png_path}")


def write_points_csv(points: Sequence[CostPoint], path: Path) -> None:
    """One row per cost point, every field."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [asdict(p) for p in points]
    extra_keys = sorted({k for r in rows for k in r["extra"]})
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        keys = [k for k in rows[0] if k != "extra"] if rows else []
        w.writerow(keys + extra_keys)
        for r in rows:
            w.writerow([r[k] for k in keys] + [r["extra"].get(k, "") for k in extra_keys])


def write_rows_csv(rows: Sequence[Mapping[str, Any]], path: Path) -> None:
    """Rows of dicts with the same keys as CSV."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


# ----------------------------------------------------------------- the scripts' skeleton


def script_parser(doc: str, script: str) -> argparse.ArgumentParser:
    """A script's parser: the first paragraph of ``doc``, and ``--out`` (``out/`` beside it)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path(script).parent / "out", help="CSV, PNG")
    return ap


def parse_script_args(
    ap: argparse.ArgumentParser,
    argv: Sequence[str] | None,
    *,
    quick: Mapping[str, Any],
    quick_help: str,
    jobs: int | None = 2,
) -> argparse.Namespace:
    """Add ``--jobs`` (unless ``jobs`` is None) and ``--quick``, parse ``argv``.

    ``--quick`` (a smoke run) sets the flags in ``quick``, whatever the command line says.
    """
    if jobs is not None:
        ap.add_argument("--jobs", type=int, default=jobs, help="worker processes")
    ap.add_argument("--quick", action="store_true", help=quick_help)
    args = ap.parse_args(argv)
    if args.quick:
        vars(args).update(quick)
    return args


def machine_line() -> str:
    """Cores, platform and library versions, for the benchmark footer."""
    import scipy

    return (
        f"machine: {os.cpu_count()} cores, {platform.machine()}, Python "
        f"{platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
        f"1-min load {os.getloadavg()[0]:.2f}"
    )


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
