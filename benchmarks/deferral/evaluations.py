"""Fig. 6 (§6.1) of Zhu & Ravishankar 2004: AVG evaluations, deferral vs naive vs offline minimum.

The same engine runs as ``fidelity.py`` (same data, seeds and queries; see :mod:`common`).
Per query and ``(ε, p)``:

* **deferral**: evaluations the engine ran (warm-up included: while a stream has < 3 items
  ``σ`` is unknown and every query over it is due at every tick);
* **naive**: one evaluation per tick (the series length);
* **offline minimum**: the fewest evaluations such that *every* tick's cached answer is within
  ε of the truth, computed greedily in hindsight (:func:`common.offline_min`; it does not
  depend on p). It guarantees 100 % time fidelity, deferral only aims at ``p`` at the end of
  each interval, so deferral can go below it at large ε and small p.

Ratios are taken per query, then the median over the queries (counts are medians too).
``python benchmarks/deferral/evaluations.py --quick`` is a smoke run (< 60 s).
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    CS,
    MODERATE_C,
    NAB,
    OUT,
    PS,
    VARIANTS,
    Sim,
    fidelity,
    machine_line,
    offline_min,
    parse_floats,
    simulate,
)
from rich.console import Console
from rich.table import Table

TARGET_RATIO = 10.0  # ≥ 10× fewer evaluations than per-tick at moderate ε


def per_query(sim: Sim) -> list[dict[str, Any]]:
    opt: dict[tuple[int, float], int] = {}
    rows = []
    for q in sim.queries:
        key = (q.base, q.c)
        if key not in opt:
            opt[key] = offline_min(sim.a_true[:, q.base], q.eps)
        ev = sim.run.evals[q.name]
        f = fidelity(sim.a_true[:, q.base], ev, q.eps)
        rows.append(
            {
                "label": sim.label,
                "query": q.name,
                "c": q.c,
                "eps": q.eps,
                "p": q.p,
                "deferral": len(ev),
                "naive": sim.run.ticks,
                "optimal": opt[key],
                "naive_over_deferral": sim.run.ticks / len(ev),
                "deferral_over_optimal": len(ev) / opt[key],
                "time_fid": 100 * f.time,
                "end_fid": 100 * f.end,
            }
        )
    return rows


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for label, c, p in dict.fromkeys((r["label"], r["c"], r["p"]) for r in rows):
        rs = [r for r in rows if (r["label"], r["c"], r["p"]) == (label, c, p)]

        def med(key: str, rs: list[dict[str, Any]] = rs) -> float:
            return statistics.median(r[key] for r in rs)

        out.append(
            {
                "label": label,
                "c": c,
                "eps": rs[0]["eps"],
                "p": p,
                "queries": len(rs),
                "deferral": med("deferral"),
                "naive": med("naive"),
                "optimal": med("optimal"),
                "naive_over_deferral": med("naive_over_deferral"),
                "deferral_over_optimal": med("deferral_over_optimal"),
                "time_fid": statistics.fmean(r["time_fid"] for r in rs),
                "end_fid": statistics.fmean(
                    r["end_fid"] for r in rs if not math.isnan(r["end_fid"])
                ),
            }
        )
    return out


def print_tables(rows: list[dict[str, Any]], sims: list[Sim], console: Console) -> None:
    for sim in sims:
        rs = [r for r in rows if r["label"] == sim.label]
        table = Table(
            title=f"{sim.label}: {sim.ds.note}; {sim.run.ticks:,} ticks, "
            f"{len(sim.queries) // len({(r['c'], r['p']) for r in rs})} queries per (ε, p); "
            f"medians over queries"
        )
        for col in ("c = ε/s_A", "ε", "p", "deferral", "naive", "offline min", "naive/deferral",
                    "deferral/min", "time fid %", "end fid %"):  # fmt: skip
            table.add_column(col, justify="right")
        for r in rs:
            table.add_row(
                f"{r['c']:g}",
                f"{r['eps']:.4g}",
                f"{r['p']:.2f}",
                f"{r['deferral']:,.0f}",
                f"{r['naive']:,.0f}",
                f"{r['optimal']:,.0f}",
                f"{r['naive_over_deferral']:.1f}",
                f"{r['deferral_over_optimal']:.2f}",
                f"{r['time_fid']:.2f}",
                f"{r['end_fid']:.2f}",
            )
        console.print(table)


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = list(dict.fromkeys(r["label"] for r in rows))
    fig, axes = plt.subplots(1, len(labels), figsize=(3.6 * len(labels), 3.6), squeeze=False)
    for ax, label in zip(axes[0], labels, strict=True):
        rs = [r for r in rows if r["label"] == label]
        for p, color in zip(PS, ("tab:blue", "tab:orange", "tab:green"), strict=True):
            sel = sorted((r for r in rs if r["p"] == p), key=lambda r: r["c"])
            if sel:
                ax.plot([r["c"] for r in sel], [r["deferral"] for r in sel], "o-", color=color,
                        label=f"deferral p={p}")  # fmt: skip
        base = sorted((r for r in rs if r["p"] == rs[0]["p"]), key=lambda r: r["c"])
        ax.plot([r["c"] for r in base], [r["naive"] for r in base], "k--", label="naive")
        ax.plot([r["c"] for r in base], [r["optimal"] for r in base], "kv:", label="offline min")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("ε / s_A")
        ax.set_title(label, fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("evaluations per query")
    axes[0][0].legend(fontsize=6)
    fig.suptitle("AVG evaluations: deferral vs naive vs offline minimum (Fig. 6)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated variants")
    ap.add_argument("--c", default=",".join(f"{c:g}" for c in CS), help="ε / s_A values")
    ap.add_argument("--p", default=",".join(f"{p:g}" for p in PS), help="belief thresholds")
    ap.add_argument("--walk-groups", type=int, default=10)
    ap.add_argument("--walk-ticks", type=int, default=20_000)
    ap.add_argument("--gbm-groups", type=int, default=5)
    ap.add_argument("--gbm-ticks", type=int, default=30_000)
    ap.add_argument("--nab-ticks", type=int, default=0, help="0: whole NAB series")
    ap.add_argument("--nab", type=Path, default=NAB)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--name", default="evaluations")
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
            label, seed=args.seed, ticks=ticks, groups=groups, nab_root=args.nab, cs=cs, ps=ps
        )
        if sim is None:
            console.print(f"[yellow]{label} skipped: no data under {args.nab}[/yellow]")
            continue
        console.print(f"{label}: {sim.run.ticks:,} ticks, engine {sim.run.wall_s:.1f} s")
        sims.append(sim)
    rows = [r for sim in sims for r in per_query(sim)]
    summary = summarize(rows)
    print_tables(summary, sims, console)
    args.out.mkdir(parents=True, exist_ok=True)
    for suffix, data in (("", rows), ("_summary", summary)):
        with (args.out / f"{args.name}{suffix}.csv").open("w", newline="") as fh:
            wr = csv.DictWriter(fh, fieldnames=list(data[0]))
            wr.writeheader()
            wr.writerows(data)
    plot(summary, args.out / f"{args.name}.png")
    moderate = MODERATE_C if MODERATE_C in cs else cs[len(cs) // 2]
    for label in dict.fromkeys(r["label"] for r in summary):
        rs = [r for r in summary if r["label"] == label and r["c"] == moderate]
        ok = all(r["naive_over_deferral"] >= TARGET_RATIO for r in rs)
        console.print(
            f"target naive/deferral ≥ {TARGET_RATIO:g} at ε = {moderate:g} s_A, {label}: "
            f"{'met' if ok else 'missed'} — "
            + ", ".join(
                f"p={r['p']}: {r['naive_over_deferral']:.1f}× (deferral/min "
                f"{r['deferral_over_optimal']:.2f})"
                for r in rs
            )
        )
    console.print(
        f"wrote {args.out / args.name}.csv, {args.name}_summary.csv, {args.name}.png; "
        f"{machine_line(start)}"
    )


if __name__ == "__main__":
    main()
