"""Fig. 4 (§4.4) of Babcock & Olston 2003: messages of top-k monitoring vs caching vs ε.

For every workload of :mod:`workloads` (a: popular documents, b: least-loaded server, c: busiest
destination, d1/d3: NAB tweets top-1/top-3) and every ε, one pass runs the protocol with the
default policy (``Policy()``: F_0 = ½, proportional, a Phase 3 probes the 2 busiest nodes
first; ``--policy paper`` is the paper's §4.3 choice: F_0 = ½ and proportional allocation when
ε ≤ max value / 1000, else F_0 = 0 and even, no probe; ``--policy 3/4-even`` and the like fix
F_0 and the allocation, ``@q,...`` the probe sizes, ``default@`` is the default without probe) and
Appendix C offloading with θ = 20 (``--theta none`` disables it; workload (b) runs the
bottom-k protocol), caching with the paper's threshold ε/m (valid
within 2ε) and with ε/(2m) (valid within ε), the exact oracle (every protocol answer checked,
caching every 5,000 updates; a bad answer aborts the run) and an offline lower bound on answer
changes (:mod:`harness`). Messages are counted from the first update (the initial gather is
free). Medians over seeds; ratios per seed, then the median.

``python benchmarks/topk/cost.py --quick`` is a smoke run (< 30 s); CSV + PNG go to
``benchmarks/topk/out/`` (``--name``: file prefix, default ``cost``).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import math
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from fractions import Fraction
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Result, machine, run
from rich.console import Console
from rich.table import Table
from workloads import (
    Workload,
    busiest_destination,
    least_loaded,
    popular_documents,
    tweets,
)

from tsmon.protocols.topk import Policy

OUT = Path(__file__).resolve().parent / "out"
TARGET_CACHING_RATIO = 10.0  # ≥ 10× fewer messages than caching at small ε on (a)


def make(name: str, seed: int, scale: float) -> Workload | None:
    """Workload ``name`` at ``scale`` × its default length."""
    if name == "a":
        return popular_documents(seed, requests=int(200_000 * scale))
    if name == "b":
        return least_loaded(seed, requests=int(60_000 * scale))
    if name == "c":
        return busiest_destination(seed, packets=int(100_000 * scale))
    if name in ("d1", "d3"):
        return tweets(seed, k=int(name[1]), days=7.0 * scale)
    raise ValueError(f"unknown workload {name!r}")


POLICIES = {"paper": Policy.paper(), "default": Policy()}


def parse_policy(text: str) -> Policy:
    """``paper``, ``default`` (``F_0 = 1/2`` proportional, probe 2) or ``F0-prop`` / ``F0-even``
    (e.g. ``3/4-even``), each with an optional ``@q1,q2,...`` for the probe sizes (``@``: no
    probe; without it ``F0-...`` keeps the default probe)."""
    text, at, sizes = text.partition("@")
    probe = tuple(int(q) for q in sizes.split(",") if q) if at else None
    if text in POLICIES:
        policy = POLICIES[text]
    else:
        f0, _, alloc = text.partition("-")
        if alloc not in ("prop", "even"):
            raise SystemExit(
                f"--policy must be paper, default or F0-prop/even [@q,...], got {text!r}"
            )
        policy = Policy(Fraction(f0), alloc == "prop")
    return policy if probe is None else dataclasses.replace(policy, probe=probe)


def job(
    name: str,
    seed: int,
    scale: float,
    eps: list[int],
    check_every: int,
    policy: str = "default",
    theta: int | None = 20,
    prefix: int | None = None,
) -> list[Result]:
    w = make(name, seed, scale)
    if w is None:
        return []
    if prefix is not None:  # the start of the stream only
        w = dataclasses.replace(w, updates=w.updates[:prefix])
    return run(w, eps, seed, parse_policy(policy), check_every=check_every, theta=theta)


def parse_theta(text: str) -> int | None:
    """``--theta`` value: an integer or ``none``."""
    return None if text.lower() == "none" else int(text)


def ratio(a: float, b: float) -> float:
    return a / b if b else math.inf


def summarize(results: list[Result]) -> list[dict[str, Any]]:
    """Medians over seeds per (workload, ε); ratios per seed, then the median."""
    groups: dict[tuple[str, int], list[Result]] = {}
    for r in results:
        groups.setdefault((r.workload, r.eps), []).append(r)
    rows = []
    for (name, eps), rs in groups.items():

        def med(f: Callable[[Result], float], rs: list[Result] = rs) -> float:
            return statistics.median(f(r) for r in rs)

        rows.append(
            {
                "workload": name,
                "eps": eps,
                "seeds": len(rs),
                "updates": med(lambda r: r.updates),
                "max_value": med(lambda r: r.max_value),
                "policy": f"F0={rs[0].f0} {'prop' if rs[0].proportional else 'even'}",
                "topk": med(lambda r: r.topk),
                "caching": med(lambda r: r.caching),
                "caching_strict": med(lambda r: r.caching_strict),
                "lower_bound": med(lambda r: r.lower_bound),
                "answer_changes": med(lambda r: r.answer_changes),
                "caching_over_topk": med(lambda r: ratio(r.caching, r.topk)),
                "strict_over_topk": med(lambda r: ratio(r.caching_strict, r.topk)),
                "topk_over_lb": med(lambda r: ratio(r.topk, r.lower_bound)),
                "entries_mean": med(lambda r: r.entries_mean),
                "entries_max": max(r.entries_max for r in rs),
                "phase2": med(lambda r: r.phase2),
                "probe": med(lambda r: r.probe),
                "phase3": med(lambda r: r.phase3),
                "refresh": med(lambda r: r.refresh),
                "offloads": med(lambda r: r.offloads),
                "theta": rs[0].theta,
                "checks": sum(r.checks for r in rs),
                "k": K[name],
            }
        )
    rows.sort(key=lambda r: (r["workload"], r["eps"]))
    return rows


K = {"a": 10, "b": 1, "c": 1, "d1": 1, "d3": 3}


def fmt_ratio(x: float) -> str:
    return "∞" if math.isinf(x) else f"{x:.2f}" if x < 100 else f"{x:,.0f}"


def print_table(rows: list[dict[str, Any]], console: Console) -> None:
    for name in dict.fromkeys(r["workload"] for r in rows):
        rs = [r for r in rows if r["workload"] == name]
        table = Table(
            title=f"workload {name} (k = {rs[0]['k']}, {rs[0]['updates']:,.0f} updates, "
            f"max value {rs[0]['max_value']:,.0f}, θ = {rs[0]['theta']}; medians over "
            f"{rs[0]['seeds']} seeds)"
        )
        cols = ("ε", "policy", "top-k", "caching ε/m", "caching ε/2m", "lower bd", "changes",
                "cach/top-k", "strict/top-k", "top-k/LB", "entries mean", "max", "ph2", "probe",
                "ph3", "refresh", "offload msgs")  # fmt: skip
        for c in cols:
            table.add_column(c, justify="right")
        for r in rs:
            table.add_row(
                str(r["eps"]),
                r["policy"],
                f"{r['topk']:,.0f}",
                f"{r['caching']:,.0f}",
                f"{r['caching_strict']:,.0f}",
                f"{r['lower_bound']:,.0f}",
                f"{r['answer_changes']:,.0f}",
                fmt_ratio(r["caching_over_topk"]),
                fmt_ratio(r["strict_over_topk"]),
                fmt_ratio(r["topk_over_lb"]),
                f"{r['entries_mean']:.2f}",
                str(r["entries_max"]),
                f"{r['phase2']:,.0f}",
                f"{r['probe']:,.0f}",
                f"{r['phase3']:,.0f}",
                f"{r['refresh']:,.0f}",
                f"{r['offloads']:,.0f}",
            )
        console.print(table)


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r["workload"] for r in rows))
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.8), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        rs = [r for r in rows if r["workload"] == name]
        x = list(range(len(rs)))
        for key, style, label in (
            ("topk", "o-", "top-k monitoring"),
            ("caching", "s-", "caching ε/m"),
            ("caching_strict", "s--", "caching ε/(2m)"),
            ("lower_bound", "v:", "lower bound (answer changes)"),
        ):
            y = [r[key] if r[key] > 0 else math.nan for r in rs]
            ax.plot(x, y, style, label=label)
        ax.set_yscale("log")
        ax.set_xticks(x, [str(r["eps"]) for r in rs], fontsize=7)
        ax.set_xlabel("ε (nonuniform scale)")
        ax.set_title(f"{name}: k = {rs[0]['k']}", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("messages")
    axes[0][0].legend(fontsize=7)
    fig.suptitle("Top-k monitoring vs caching (Babcock & Olston Fig. 4)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--workloads", default="a,b,c,d1,d3", help="comma-separated workloads")
    ap.add_argument("--eps", default="0,1,2,5,20,50,200,500", help="ε values")
    ap.add_argument("--seeds", type=int, default=1, help="seeds per workload (1..n)")
    ap.add_argument("--scale", type=float, default=1.0, help="stream length × default")
    ap.add_argument("--check-every", type=int, default=1, help="oracle check period (updates)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--policy", default="default",
                    help="default: F_0 = 1/2 proportional, probe 2 (Policy()); paper: the "
                    "§4.3 cutoff, no probe; F0-prop or F0-even, e.g. 3/4-even; @q,... sets "
                    "the probe sizes (@: none)")  # fmt: skip
    ap.add_argument("--theta", type=parse_theta, default=20,
                    help="Appendix C threshold θ (none: no offloading)")  # fmt: skip
    ap.add_argument("--prefix", type=int, default=None,
                    help="run only the first N updates of each stream (the start-up)")  # fmt: skip
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--name", default="cost", help="output file prefix")
    ap.add_argument("--quick", action="store_true", help="scale 0.2, 1 seed, 5 ε values")
    args = ap.parse_args(argv)
    parse_policy(args.policy)  # fail early on a bad name
    if args.quick:
        args.scale, args.seeds, args.eps = 0.2, 1, "0,2,10,50,200"
    eps = [int(e) for e in args.eps.split(",")]
    names = args.workloads.split(",")
    console = Console(width=200)
    start = time.perf_counter()
    tasks = [(n, s, args.scale, eps, args.check_every, args.policy, args.theta, args.prefix)
             for n in names
             for s in range(1, args.seeds + 1)]  # fmt: skip
    results: list[Result] = []
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            for rs in pool.map(job, *zip(*tasks, strict=True)):
                results += rs
    else:
        for t in tasks:
            results += job(*t)
    for n in names:
        if not any(r.workload == n for r in results):
            console.print(f"[yellow]workload {n} skipped (no data: {n!r} absent?)[/yellow]")
    rows = summarize(results)
    print_table(rows, console)
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / f"{args.name}.csv").open("w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=list(results[0].row()))
        wr.writeheader()
        wr.writerows(r.row() for r in results)
    with (args.out / f"{args.name}_summary.csv").open("w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)
    plot(rows, args.out / f"{args.name}.png")
    checks = sum(r.checks for r in results)
    console.print(
        f"oracle: {checks:,} protocol answers checked ε-valid, 0 violations (a violation "
        f"aborts); caching checked every 5,000 updates; answer changes ≥ lower bound everywhere"
    )
    a = [r for r in rows if r["workload"] == "a"]
    if a:
        small = [r for r in a if 1000 * r["eps"] <= r["max_value"]]
        console.print(
            "target (a) caching/top-k ≥ 10 at small ε (ε ≤ max/1000: "
            + ", ".join(f"ε={r['eps']}: {fmt_ratio(r['caching_over_topk'])}" for r in small)
            + ")"
        )
    worst = max(rows, key=lambda r: r["entries_mean"] - r["k"])
    console.print(
        "target mean entries ≤ k + 2: worst "
        f"{worst['workload']} ε={worst['eps']}: {worst['entries_mean']:.2f} (k = {worst['k']}); "
        f"max entries per message {max(r['entries_max'] for r in rows)}"
    )
    console.print(
        f"policy {args.policy}, θ = {args.theta}; wrote {args.out / args.name}.csv, "
        f"{args.name}_summary.csv, {args.name}.png; "
        f"{time.perf_counter() - start:.0f} s wall; {machine()}"
    )


if __name__ == "__main__":
    main()
