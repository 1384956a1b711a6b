"""Cost of one precision-manager adjustment against the paper's Figure 2 (§3.2.2).

Workload (the paper's Figure 2 setting, synthetic inputs): 200 objects, ``m`` AVG queries each
over a random 5 % (10) or 25 % (50) of them, unit weights and costs, ``δ_j = 1`` (budget
``|S_j|``). Each setting runs a short simulation of adjustment periods ``T = 10 s``: widths shrink
by ``S``, every object reports ``N_i ~ Poisson(σ_i²·T/(W_i/2)²)`` updates (a random walk escaping
its bound), then one adjustment runs and its growth is applied. One adjustment is the four
steps the coordinator runs every period: ``burden_scores``, ``burden_targets``, ``deviations``,
``grow_greedily`` (through the public functions, i.e. with the memoized ``PrecisionPlan``, whose
one-off build per query-set change is reported apart). Every timed adjustment is checked: the
relative residual of the App. B system, the gap to ``numpy.linalg.lstsq`` and ``K @ W ≤ β``.
Baselines in the same process, same systems: a dense ``lstsq`` solve per adjustment and sparse
GMRES from zero (the pre-plan code path; LSQR when GMRES fails).
``python benchmarks/filters/bench_precision.py --quick`` is a smoke run. On a busy machine,
``OPENBLAS_NUM_THREADS=1`` keeps multi-threaded BLAS from oversubscribing the cores (it slows
the SVD build and the lstsq baseline most).
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter

import numpy as np
import scipy
import scipy.sparse as sp
from rich.console import Console
from rich.table import Table
from scipy.sparse.linalg import gmres, lsqr

from tsmon.protocols.filters import precision
from tsmon.protocols.filters.precision import (
    burden_scores,
    burden_targets,
    deviations,
    grow_greedily,
    initial_widths,
    plan_for,
)
from tsmon.sim.filters.experiments import parse_script_args, script_parser

TARGET_MS = 10.0  # the issue: one adjustment, 200 AVG queries over 25 % of 200 objects
STEPS = ("scores", "targets", "deviations", "grow")
RESIDUAL_MAX = 1e-9  # relative residual of the App. B system
VIOLATION_MAX = 1e-9  # relative excess of Σ|K|·W over β after growth


@dataclass
class Setting:
    """Results for one (fraction, m): per-step times in ms and the correctness checks."""

    fraction: float
    per_query: int
    m: int
    rank: int
    build_ms: float
    steps_ms: dict[str, list[float]]
    dense_ms: list[float]
    gmres_ms: list[float]
    residual: float  # worst relative residual ‖A·T − rhs‖/‖rhs‖ over the timed adjustments
    lstsq_gap: float  # worst ‖T − T_lstsq‖/‖T_lstsq‖
    violation: float  # worst max_j (K·W − β)_j / β_j after growth
    grown: float  # mean number of objects grown per adjustment

    @property
    def total_ms(self) -> list[float]:
        return [sum(t) for t in zip(*self.steps_ms.values(), strict=True)]


def p95(xs: list[float]) -> float:
    return float(np.percentile(xs, 95))


def random_queries(n: int, m: int, per_query: int, rng: np.random.Generator) -> sp.csr_matrix:
    """``|K|`` of ``m`` unit-weight AVG queries, each over ``per_query`` random objects."""
    cols = np.concatenate([rng.choice(n, per_query, replace=False) for _ in range(m)])
    rows = np.repeat(np.arange(m), per_query)
    return sp.csr_matrix((np.ones(m * per_query), (rows, cols)), shape=(m, n))


def pre_plan_targets(k: sp.csr_matrix, burdens: np.ndarray) -> np.ndarray:
    """``burden_targets`` before PrecisionPlan: build the App. B system, sparse GMRES from zero,
    LSQR when GMRES fails (copied from the previous precision.py, as the iterative baseline)."""
    k = sp.csr_matrix(k, dtype=float)
    inv = k.copy()
    inv.data = 1.0 / inv.data
    system = (inv @ k.T).tocsr()
    rhs = inv @ burdens
    diag = system.diagonal()
    if system.nnz == np.count_nonzero(diag) or not rhs.any():
        return rhs / diag
    scale = float(np.abs(rhs).max())
    targets, info = gmres(system, rhs, rtol=1e-10, atol=1e-12 * scale, maxiter=1000)
    if info != 0 or np.linalg.norm(system @ targets - rhs) > 1e-8 * scale:
        targets = lsqr(system, rhs, atol=1e-12, btol=1e-12, iter_lim=10_000)[0]
    return np.asarray(targets, dtype=float)


def run_setting(
    n: int, m: int, fraction: float, args: argparse.Namespace, rng: np.random.Generator
) -> Setting:
    """Simulate ``args.warmup + args.repeat`` periods and time the last ``args.repeat``."""
    per_query = max(1, round(fraction * n))
    k = random_queries(n, m, per_query, rng)
    budgets = np.full(m, float(per_query))  # App. B: δ_j·|S_j| with δ_j = 1
    period_ms = int(args.period_s * 1000)
    builds = []
    for _ in range(3):  # once per query-set change: the App. B system and its SVD
        start = perf_counter()
        precision.PrecisionPlan(k)
        builds.append((perf_counter() - start) * 1e3)
    build_ms = statistics.median(builds)
    plan = plan_for(k)  # the plan the public functions below fetch from the memo
    dense = plan.system.toarray()
    queried = np.flatnonzero(np.diff(k.tocsc().indptr) > 0)
    widths = initial_widths(k, budgets)
    escape = np.exp(rng.uniform(np.log(0.5), np.log(50.0), n))  # 4σ²T: updates/period at W=1
    costs = np.ones(n)
    steps: dict[str, list[float]] = {s: [] for s in STEPS}
    dense_ms, gmres_ms = [], []
    residual = lstsq_gap = violation = 0.0
    grown_total = 0
    timed = []  # (B, T, W after growth) of every timed adjustment, checked afterwards
    for period in range(args.warmup + args.repeat):
        widths[queried] *= 1 - args.shrink  # §3.1
        lam = np.minimum(escape / np.square(widths), 1e4)
        counts = rng.poisson(lam).astype(np.int64)
        t0 = perf_counter()
        b = burden_scores(counts, widths, costs, period_ms)
        t1 = perf_counter()
        targets = burden_targets(k, b)
        t2 = perf_counter()
        devs = deviations(k, b, targets)
        t3 = perf_counter()
        grown = grow_greedily(k, budgets, widths, devs, queried, rng)
        t4 = perf_counter()
        for i, w in grown.items():
            widths[i] = w
        if period < args.warmup:
            continue
        for name, dt in zip(STEPS, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
            steps[name].append(dt * 1e3)
        grown_total += len(grown)
        timed.append((b, targets, widths.copy()))
    # baselines and checks after the timed loop, so their BLAS threads do not disturb it
    for b, targets, after in timed:
        t5 = perf_counter()
        rhs = plan.inv @ b
        exact = np.linalg.lstsq(dense, rhs, rcond=None)[0]  # baseline: dense direct solve
        dense_ms.append((perf_counter() - t5) * 1e3)
        norm = max(float(np.linalg.norm(rhs)), np.finfo(float).tiny)
        residual = max(residual, float(np.linalg.norm(dense @ targets - rhs)) / norm)
        scale = max(float(np.linalg.norm(exact)), np.finfo(float).tiny)
        lstsq_gap = max(lstsq_gap, float(np.linalg.norm(targets - exact)) / scale)
        violation = max(violation, float(np.max((k @ after - budgets) / budgets)))
    for b, _, _ in timed[: args.gmres_repeat]:
        t6 = perf_counter()
        pre_plan_targets(k, b)
        gmres_ms.append((perf_counter() - t6) * 1e3)
    rank = int(np.linalg.matrix_rank(dense))
    return Setting(
        fraction, per_query, m, rank, build_ms, steps, dense_ms, gmres_ms,
        residual, lstsq_gap, violation, grown_total / args.repeat,
    )  # fmt: skip


def write_csv(results: list[Setting], path: Path, period_s: float) -> None:
    """One row per setting: medians and p95 per step, baselines, checks."""
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(
            ["fraction", "objects_per_query", "queries", "rank", "plan_build_ms"]
            + [f"{s}_{q}_ms" for s in (*STEPS, "total") for q in ("median", "p95")]
            + ["fraction_of_period", "dense_lstsq_median_ms", "gmres_cold_median_ms"]
            + ["ratio_targets_vs_dense", "ratio_gmres_vs_dense", "max_rel_residual"]
            + ["max_rel_gap_to_lstsq", "max_rel_violation", "mean_grown"]
        )
        for r in results:
            times = [*r.steps_ms.values(), r.total_ms]
            dense = statistics.median(r.dense_ms)
            gm = statistics.median(r.gmres_ms) if r.gmres_ms else float("nan")
            out.writerow(
                [r.fraction, r.per_query, r.m, r.rank, f"{r.build_ms:.4f}"]
                + [f"{f(t):.5f}" for t in times for f in (statistics.median, p95)]
                + [f"{statistics.median(r.total_ms) / (period_s * 1e3):.3e}", f"{dense:.5f}"]
                + [f"{gm:.4f}", f"{statistics.median(r.steps_ms['targets']) / dense:.5f}"]
                + [f"{gm / dense:.3f}", f"{r.residual:.2e}", f"{r.lstsq_gap:.2e}"]
                + [f"{r.violation:.2e}", f"{r.grown:.2f}"]
            )


def plot(results: list[Setting], path: Path, period_s: float) -> None:
    """Time per adjustment vs m, one panel per query size; right axis: fraction of ``T``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fractions = sorted({r.fraction for r in results})
    fig, axes = plt.subplots(1, len(fractions), figsize=(6 * len(fractions), 4.8), sharey=True)
    for ax, frac in zip(np.atleast_1d(axes), fractions, strict=True):
        rows = [r for r in results if r.fraction == frac]
        ms = [r.m for r in rows]
        med = [statistics.median(r.total_ms) for r in rows]
        hi = [p95(r.total_ms) for r in rows]
        ax.plot(ms, med, "o-", label="tsmon adjustment (4 steps), median")
        ax.fill_between(ms, med, hi, alpha=0.25, label="… up to p95")
        ax.plot(
            ms,
            [statistics.median(r.dense_ms) for r in rows],
            "s--",
            label="dense lstsq (targets step only)",
        )
        gm = [(r.m, statistics.median(r.gmres_ms)) for r in rows if r.gmres_ms]
        if gm:
            ax.plot(
                *zip(*gm, strict=True), "^:", label="sparse GMRES, cold (pre-plan targets step)"
            )
        ax.plot(ms, [r.build_ms for r in rows], "x-.", label="plan build (per query set)")
        ax.axhline(TARGET_MS, color="red", lw=0.8, label=f"target {TARGET_MS:g} ms")
        ax.set_yscale("log")
        ax.set_xlabel("number of queries m")
        ax.set_title(f"queries over {frac:.0%} ({rows[0].per_query}) of the objects")
        ax.grid(True, which="both", alpha=0.3)
        share = ax.secondary_yaxis(
            "right", functions=(lambda t: t / (period_s * 10), lambda f: f * period_s * 10)
        )
        share.set_ylabel(f"% of T = {period_s:g} s")
    first = np.atleast_1d(axes)[0]
    first.set_ylabel("ms per adjustment")
    fig.legend(*first.get_legend_handles_labels(), loc="lower center", ncol=3, fontsize=8)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    """Parse flags, run every (fraction, m), print the table, write CSV and PNG."""
    ap = script_parser(__doc__, __file__)
    ap.add_argument("--objects", type=int, default=200)
    ap.add_argument("--queries", default="10,25,50,100,150,200,300,400", help="values of m")
    ap.add_argument("--fractions", default="0.05,0.25", help="share of objects per query")
    ap.add_argument("--repeat", type=int, default=101, help="timed adjustments per setting")
    ap.add_argument("--warmup", type=int, default=10, help="untimed periods first")
    ap.add_argument("--gmres-repeat", type=int, default=3, help="cold GMRES solves per setting")
    ap.add_argument("--period-s", type=float, default=10.0, help="adjustment period T")
    ap.add_argument("--shrink", type=float, default=0.05, help="shrink percentage S")
    ap.add_argument("--seed", type=int, default=7)
    quick = {"queries": "10,50,200", "repeat": 15, "warmup": 3, "gmres_repeat": 1}
    args = parse_script_args(
        ap, argv, quick=quick, quick_help="m in 10,50,200; 15 adjustments", jobs=None
    )
    console = Console(width=140)
    load_before = os.getloadavg()[0]  # other processes on the machine skew the timings
    rng = np.random.default_rng(args.seed)
    ms = [int(x) for x in args.queries.split(",")]
    fractions = [float(x) for x in args.fractions.split(",")]
    console.print(
        f"workload: {args.objects} objects, m in {ms} AVG queries over {fractions} of them, "
        f"T = {args.period_s:g} s, S = {args.shrink:g}, {args.repeat} timed adjustments each "
        f"after {args.warmup} untimed; solver {precision.PrecisionPlan.__name__} "
        f"(svd up to m = {precision.DENSE_MAX_CONSTRAINTS})"
    )
    results = [run_setting(args.objects, m, f, args, rng) for f in fractions for m in ms]

    table = Table(title="ms per adjustment (one adjustment = the 4 steps); medians unless p95")
    cols = ("share", "m", "rank", *STEPS, "total", "p95", "% of T", "build", "lstsq", "GMRES")
    for c in (*cols, "÷lstsq", "residual", "violation"):
        table.add_column(c, justify="right")
    for r in results:
        dense = statistics.median(r.dense_ms)
        gm = f"{statistics.median(r.gmres_ms):,.1f}" if r.gmres_ms else "-"
        table.add_row(
            f"{r.fraction:.0%}", str(r.m), str(r.rank),
            *(f"{statistics.median(t):.3f}" for t in (*r.steps_ms.values(), r.total_ms)),
            f"{p95(r.total_ms):.3f}",
            f"{statistics.median(r.total_ms) / (args.period_s * 10):.4f}%", f"{r.build_ms:.1f}",
            f"{dense:.3f}", gm, f"{statistics.median(r.steps_ms['targets']) / dense:.3f}",
            f"{r.residual:.0e}", f"{r.violation:.0e}",
        )  # fmt: skip
    console.print(table)
    console.print(
        "build = PrecisionPlan once per query-set change (median of 3); lstsq = dense direct "
        "solve of the same system per adjustment; GMRES = sparse GMRES from zero with LSQR "
        "fallback (the pre-plan path); ÷lstsq = targets step / lstsq; residual = worst "
        "‖A·T − rhs‖/‖rhs‖; violation = worst max_j (K·W − β)_j/β_j after growth"
    )
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(results, args.out / "fig2_precision.csv", args.period_s)
    plot(results, args.out / "fig2_precision.png", args.period_s)
    console.print(f"wrote {args.out / 'fig2_precision.csv'} and {args.out / 'fig2_precision.png'}")
    console.print(
        f"machine: {os.cpu_count()} cores (os.cpu_count), {platform.machine()}, Python "
        f"{platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
        f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}, "
        f"1-min load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after the run"
    )

    bad = [r for r in results if r.residual > RESIDUAL_MAX or r.violation > VIOLATION_MAX]
    for r in bad:
        console.print(
            f"[red]check FAILED[/] at {r.fraction:.0%}, m = {r.m}: residual {r.residual:.1e} "
            f"(max {RESIDUAL_MAX:g}), violation {r.violation:.1e} (max {VIOLATION_MAX:g})"
        )
    head = next((r for r in results if r.m == 200 and r.fraction == 0.25), None)
    if head is None:
        console.print("no m = 200 at 25 % in this run: no RESULT line")
        sys.exit(1 if bad else 0)
    med, dense = statistics.median(head.total_ms), statistics.median(head.dense_ms)
    met = "[green]met[/]" if med < TARGET_MS else "[red]NOT met[/]"
    console.print(
        f"target < {TARGET_MS:g} ms per adjustment, 200 queries over 25 % of "
        f"{args.objects} objects: {med:.3f} ms median ({p95(head.total_ms):.3f} ms p95), {met}"
    )
    gm = statistics.median(head.gmres_ms) if head.gmres_ms else float("nan")
    print(
        f"RESULT adjust_ms_m200_25pct={med:.4f} p95_ms={p95(head.total_ms):.4f} "
        f"targets_ms={statistics.median(head.steps_ms['targets']):.4f} dense_lstsq_ms={dense:.4f} "
        f"gmres_cold_ms={gm:.2f} ratio_targets_vs_dense="
        f"{statistics.median(head.steps_ms['targets']) / dense:.4f} "
        f"share_of_T={med / (args.period_s * 1e3):.2e} target_ms={TARGET_MS:g} "
        f"checks={'ok' if not bad else 'FAILED'}"
    )
    if bad:
        sys.exit(1)


if __name__ == "__main__":
    main()
