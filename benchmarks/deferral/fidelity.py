"""Fig. 5 / Table 2 (§6.1) of Zhu & Ravishankar 2004: fidelity of deferred AVG queries vs ε, p.

Every data set of :mod:`common` runs once through one :class:`DeferralEngine` (k = 100,
Algorithm 2 at least every 100 ticks, Eq. 6-7 with the estimated drift as in the paper's
experiments) holding every query ``AVG over 9 of 10 streams`` × ε × p at once (no CPU limit).
``walk/known`` fixes the true ``μ_i, σ_i`` in the engine; every other variant estimates them.
Each answer is checked against the exact aggregate (max |value − truth| is printed).

Both readings of the paper's fidelity are reported (:func:`common.fidelity`): **time** (the
fraction of ticks whose cached answer is within ε of the truth, "total time") and **end** (the
fraction of deferred intervals still within ε at the tick of the next evaluation, which is the
event Eq. 7 gives probability p). For walks, "model" is the expectation of the end reading given
the chosen intervals, ``mean F(Δt)`` with the true ``μ_A, σ_A``: it is ``p`` plus the rounding of
deadlines down to whole ticks (and plus the shortening by a noisy ``μ̂`` in ``walk/est``).
"±" is the standard error over groups of 10 streams (their 10 queries are correlated), or the
binomial one for one group.

``python benchmarks/deferral/fidelity.py --quick`` is a smoke run (< 60 s); CSV + PNG go to
``benchmarks/deferral/out/``.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    CS,
    GROUP,
    MODERATE_C,
    NAB,
    OUT,
    PAPER_TABLE2,
    PS,
    VARIANTS,
    Sim,
    fidelity,
    machine_line,
    parse_floats,
    simulate,
    true_params,
)
from rich.console import Console
from rich.table import Table

TARGET_POINTS = 1.5  # |fidelity − p| ≤ 1.5 points on random walks


def per_query(sim: Sim) -> list[dict[str, Any]]:
    rows = []
    for q in sim.queries:
        mu_a, sig_a = true_params(sim, q.base)
        ev = sim.run.evals[q.name]
        f = fidelity(sim.a_true[:, q.base], ev, q.eps, mu_a, sig_a)
        rows.append(
            {
                "label": sim.label,
                "query": q.name,
                "group": q.base // GROUP,
                "c": q.c,
                "eps": q.eps,
                "p": q.p,
                "ticks": sim.run.ticks,
                "evaluations": len(ev),
                "time_hits": f.time_hits,
                "time_n": f.time_n,
                "end_hits": f.end_hits,
                "end_n": f.end_n,
                "time_expected": f.time_expected if mu_a is not None else math.nan,
                "end_expected": f.end_expected if mu_a is not None else math.nan,
            }
        )
    return rows


def _se(groups: dict[int, list[float]], hits: float, n: float) -> float:
    vals = [h / m for h, m in groups.values() if m]
    if len(vals) >= 3:
        mean = sum(vals) / len(vals)
        return math.sqrt(sum((v - mean) ** 2 for v in vals) / (len(vals) - 1) / len(vals))
    f = hits / n if n else math.nan
    return math.sqrt(f * (1 - f) / n) if n else math.nan


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    keys = dict.fromkeys((r["label"], r["c"], r["p"]) for r in rows)
    for label, c, p in keys:
        rs = [r for r in rows if (r["label"], r["c"], r["p"]) == (label, c, p)]
        th, tn = sum(r["time_hits"] for r in rs), sum(r["time_n"] for r in rs)
        eh, en = sum(r["end_hits"] for r in rs), sum(r["end_n"] for r in rs)
        tg: dict[int, list[float]] = {}
        eg: dict[int, list[float]] = {}
        for r in rs:
            tg.setdefault(r["group"], [0, 0])
            eg.setdefault(r["group"], [0, 0])
            tg[r["group"]][0] += r["time_hits"]
            tg[r["group"]][1] += r["time_n"]
            eg[r["group"]][0] += r["end_hits"]
            eg[r["group"]][1] += r["end_n"]
        evals = sum(r["evaluations"] for r in rs)
        out.append(
            {
                "label": label,
                "c": c,
                "eps": rs[0]["eps"],
                "p": p,
                "queries": len(rs),
                "evals_per_query": evals / len(rs),
                "mean_interval": sum(r["ticks"] for r in rs) / evals,
                "time_fid": 100 * th / tn,
                "time_se": 100 * _se(tg, th, tn),
                "time_model": 100 * sum(r["time_expected"] for r in rs) / tn,
                "end_fid": 100 * eh / en if en else math.nan,
                "end_se": 100 * _se(eg, eh, en),
                "end_model": 100 * sum(r["end_expected"] for r in rs) / en if en else math.nan,
                "intervals": en,
            }
        )
    return out


def fmt(x: float, nd: int = 2) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{nd}f}"


def print_tables(rows: list[dict[str, Any]], sims: list[Sim], console: Console) -> None:
    for sim in sims:
        rs = [r for r in rows if r["label"] == sim.label]
        table = Table(
            title=f"{sim.label}: {sim.ds.note}; {sim.ds.xs.shape[1]} streams, "
            f"{sim.run.ticks:,} ticks, s_A = {sim.scale:.4g}; engine {sim.run.wall_s:.1f} s, "
            f"max |answer − truth| = {sim.run.max_value_error:.1e}"
        )
        for col in ("c = ε/s_A", "ε", "p", "evals/query", "mean Δt", "time fid %", "±",
                    "model", "end fid %", "±", "model", "end − p", "intervals"):  # fmt: skip
            table.add_column(col, justify="right")
        for r in rs:
            table.add_row(
                f"{r['c']:g}",
                f"{r['eps']:.4g}",
                f"{r['p']:.2f}",
                f"{r['evals_per_query']:,.0f}",
                f"{r['mean_interval']:.1f}",
                fmt(r["time_fid"]),
                fmt(r["time_se"]),
                fmt(r["time_model"]),
                fmt(r["end_fid"]),
                fmt(r["end_se"]),
                fmt(r["end_model"]),
                fmt(r["end_fid"] - 100 * r["p"], 2),
                f"{r['intervals']:,}",
            )
        console.print(table)


def print_table2(rows: list[dict[str, Any]], console: Console, c: float) -> None:
    """Table 2 layout: fidelity per p at moderate ε (both readings), paper row for reference."""
    table = Table(title=f"Table 2 layout: fidelity % at ε = {c:g} s_A (time / end of interval)")
    table.add_column("data set", justify="left")
    for p in sorted(PS, reverse=True):
        table.add_column(f"p = {p:.2f}", justify="right")
    table.add_row("paper AVG/stock (Table 2)", *(f"{PAPER_TABLE2[p]:.2f}" for p in sorted(
        PS, reverse=True)))  # fmt: skip
    for label in dict.fromkeys(r["label"] for r in rows):
        cells = []
        for p in sorted(PS, reverse=True):
            r = next((r for r in rows if (r["label"], r["c"], r["p"]) == (label, c, p)), None)
            cells.append("–" if r is None else f"{r['time_fid']:.2f} / {fmt(r['end_fid'])}")
        table.add_row(label, *cells)
    console.print(table)


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = list(dict.fromkeys(r["label"] for r in rows))
    fig, axes = plt.subplots(1, len(labels), figsize=(3.6 * len(labels), 3.6), squeeze=False)
    colors = dict(zip(PS, ("tab:blue", "tab:orange", "tab:green"), strict=True))
    for ax, label in zip(axes[0], labels, strict=True):
        for p in PS:
            rs = sorted((r for r in rows if r["label"] == label and r["p"] == p),
                        key=lambda r: r["c"])  # fmt: skip
            if not rs:
                continue
            x = [r["c"] for r in rs]
            ax.plot(x, [r["time_fid"] for r in rs], "o-", color=colors[p], label=f"time, p={p}")
            ax.plot(x, [r["end_fid"] for r in rs], "s--", color=colors[p], label=f"end, p={p}")
            ax.axhline(100 * p, color=colors[p], lw=0.8, ls=":")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("ε / s_A")
        ax.set_title(label, fontsize=9)
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("fidelity %")
    axes[0][0].legend(fontsize=6)
    fig.suptitle("Fidelity of deferred AVG over 9 streams (Zhu & Ravishankar Fig. 5)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def targets(rows: list[dict[str, Any]], console: Console, c: float) -> None:
    for label in ("walk/known", "walk/est"):
        for reading in ("time", "end"):
            parts, ok = [], True
            for p in PS:
                r = next((r for r in rows if (r["label"], r["c"], r["p"]) == (label, c, p)), None)
                if r is None:
                    continue
                d = r[f"{reading}_fid"] - 100 * p
                ok &= abs(d) <= TARGET_POINTS
                parts.append(f"p={p}: {r[f'{reading}_fid']:.2f} ({d:+.2f})")
            if parts:
                verdict = "met" if ok else "missed"
                console.print(
                    f"target |fidelity − p| ≤ {TARGET_POINTS} points, {label}, {reading} "
                    f"reading, ε = {c:g} s_A: {verdict} — " + ", ".join(parts)
                )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated variants")
    ap.add_argument("--c", default=",".join(f"{c:g}" for c in CS), help="ε / s_A values")
    ap.add_argument("--p", default=",".join(f"{p:g}" for p in PS), help="belief thresholds")
    ap.add_argument("--walk-groups", type=int, default=10, help="groups of 10 random walks")
    ap.add_argument("--walk-ticks", type=int, default=20_000)
    ap.add_argument("--gbm-groups", type=int, default=5, help="groups of 10 GBM prices")
    ap.add_argument("--gbm-ticks", type=int, default=30_000)
    ap.add_argument("--nab-ticks", type=int, default=0, help="0: whole NAB series")
    ap.add_argument("--nab", type=Path, default=NAB, help="NAB data directory")
    ap.add_argument("--k", type=int, default=100, help="buffer size k of the estimator")
    ap.add_argument(
        "--drift-z",
        type=float,
        default=None,
        help="drift test of the stream models (StreamModels.drift_z); default: none, the paper's",
    )
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--name", default="fidelity", help="output file prefix")
    ap.add_argument("--quick", action="store_true", help="short series, few groups")
    args = ap.parse_args(argv)
    if args.quick:
        args.walk_groups, args.walk_ticks, args.gbm_groups, args.gbm_ticks = 3, 4_000, 2, 4_000
        args.nab_ticks = 4_032
    cs, ps = parse_floats(args.c), parse_floats(args.p)
    console = Console(width=200)
    start = time.perf_counter()
    sims: list[Sim] = []
    for label in args.variants.split(","):
        name = VARIANTS[label][0]
        ticks, groups = {
            "walk": (args.walk_ticks, args.walk_groups),
            "gbm": (args.gbm_ticks, args.gbm_groups),
        }.get(name, (args.nab_ticks, 1))
        sim = simulate(
            label,
            seed=args.seed,
            ticks=ticks,
            groups=groups,
            nab_root=args.nab,
            cs=cs,
            ps=ps,
            k=args.k,
            drift_z=args.drift_z,
        )
        if sim is None:
            console.print(f"[yellow]{label} skipped: no data under {args.nab}[/yellow]")
            continue
        console.print(f"{label}: {sim.run.ticks:,} ticks, engine {sim.run.wall_s:.1f} s")
        sims.append(sim)
    rows = [r for sim in sims for r in per_query(sim)]
    summary = summarize(rows)
    print_tables(summary, sims, console)
    moderate = MODERATE_C if MODERATE_C in cs else cs[len(cs) // 2]
    print_table2(summary, console, moderate)
    args.out.mkdir(parents=True, exist_ok=True)
    for suffix, data in (("", rows), ("_summary", summary)):
        with (args.out / f"{args.name}{suffix}.csv").open("w", newline="") as fh:
            wr = csv.DictWriter(fh, fieldnames=list(data[0]))
            wr.writeheader()
            wr.writerows(data)
    plot(summary, args.out / f"{args.name}.png")
    targets(summary, console, moderate)
    worst = max(s.run.max_value_error for s in sims)
    console.print(
        f"oracle: {sum(len(v) for s in sims for v in s.run.evals.values()):,} answers checked "
        f"against the exact AVG, max |error| {worst:.1e}; wrote {args.out / args.name}.csv, "
        f"{args.name}_summary.csv, {args.name}.png; {machine_line(start)}"
    )


if __name__ == "__main__":
    main()
