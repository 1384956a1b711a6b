"""Fig. 3 (§4.3) of Babcock & Olston 2003: cost vs the allocation parameter F_0.

Workload (a) (popular documents, :func:`workloads.popular_documents`), even and proportional
allocation of the remaining 1 − F_0 among the monitor nodes, one small and one large ε,
Appendix C offloading with θ = 20 (``--theta none`` disables it). Every answer is checked
against the exact sums (a violation aborts). Messages counted from the first update; medians
over seeds.

``python benchmarks/topk/policy.py --quick`` is a smoke run (< 30 s); CSV + PNG go to
``benchmarks/topk/out/``.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cost import parse_theta
from harness import machine, run
from rich.console import Console
from rich.table import Table
from workloads import popular_documents

from tsmon.protocols.topk import Policy

OUT = Path(__file__).resolve().parent / "out"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--f0", default="0,1/4,1/2,3/4,1", help="F_0 values")
    ap.add_argument("--eps", default="1,50", help="a small and a large ε")
    ap.add_argument("--requests", type=int, default=50_000, help="requests of workload (a)")
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--check-every", type=int, default=10, help="oracle check period")
    ap.add_argument("--theta", type=parse_theta, default=20,
                    help="Appendix C threshold θ (none: no offloading)")  # fmt: skip
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--quick", action="store_true", help="10,000 requests, F_0 ∈ {0, ½, 1}")
    args = ap.parse_args(argv)
    if args.quick:
        args.requests, args.f0, args.seeds = 10_000, "0,1/2,1", 1
    f0s = [Fraction(f) for f in args.f0.split(",")]
    eps = [int(e) for e in args.eps.split(",")]
    console = Console(width=160)
    start = time.perf_counter()
    rows = []
    max_value = 0
    for seed in range(1, args.seeds + 1):
        w = popular_documents(seed, requests=args.requests)
        for prop in (False, True):
            for f0 in f0s:
                policy = Policy(f0, prop)
                for r in run(
                    w, eps, seed, policy, args.check_every, baselines=False, theta=args.theta
                ):
                    max_value = r.max_value
                    rows.append(
                        {
                            "seed": seed,
                            "eps": r.eps,
                            "f0": str(f0),
                            "f0_float": float(f0),
                            "allocation": "proportional" if prop else "even",
                            "messages": r.topk,
                            "resolutions": r.resolutions,
                            "phase2": r.phase2,
                            "phase3": r.phase3,
                            "refresh": r.refresh,
                            "offloads": r.offloads,
                            "theta": r.theta,
                            "entries_mean": r.entries_mean,
                            "entries_max": r.entries_max,
                            "checks": r.checks,
                        }
                    )
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "policy.csv").open("w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)

    def med(e: int, alloc: str, f0: Fraction, key: str) -> float:
        return statistics.median(
            r[key] for r in rows if r["eps"] == e and r["allocation"] == alloc
            and r["f0"] == str(f0)
        )  # fmt: skip

    table = Table(
        title=f"workload (a), {args.requests:,} requests, max value {max_value:,}, "
        f"θ = {args.theta}: messages vs F_0 (medians over {args.seeds} seeds; paper cutoff "
        f"ε ≤ max/1000 = {max_value / 1000:g})"
    )
    table.add_column("F_0", justify="right")
    for e in eps:
        for alloc in ("even", "proportional"):
            table.add_column(f"ε={e} {alloc}", justify="right")
            table.add_column("ph2/ph3", justify="right")
    for f0 in f0s:
        cells = [str(f0)]
        for e in eps:
            for alloc in ("even", "proportional"):
                cells.append(f"{med(e, alloc, f0, 'messages'):,.0f}")
                cells.append(
                    f"{med(e, alloc, f0, 'phase2'):,.0f}/{med(e, alloc, f0, 'phase3'):,.0f}"
                )
        table.add_row(*cells)
    console.print(table)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(eps), figsize=(4.5 * len(eps), 3.8), squeeze=False)
    for ax, e in zip(axes[0], eps, strict=True):
        for alloc, style in (("even", "o-"), ("proportional", "s--")):
            ax.plot([float(f) for f in f0s], [med(e, alloc, f, "messages") for f in f0s], style,
                    label=alloc)  # fmt: skip
        ax.set_yscale("log")
        ax.set_xlabel("F_0")
        ax.set_title(f"workload (a), ε = {e}", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("messages")
    axes[0][0].legend(fontsize=8)
    fig.suptitle("Effect of allocation parameters (Babcock & Olston Fig. 3)", fontsize=10)
    fig.tight_layout()
    fig.savefig(args.out / "policy.png", dpi=120)
    plt.close(fig)
    console.print(
        f"oracle: {sum(r['checks'] for r in rows):,} answers checked ε-valid, 0 violations; "
        f"wrote {args.out / 'policy.csv'}, policy.png; {time.perf_counter() - start:.0f} s wall; "
        f"{machine()}"
    )


if __name__ == "__main__":
    main()
