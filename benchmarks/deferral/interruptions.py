"""Fig. 8 (§4.5, §6.2) of Zhu & Ravishankar 2004: AVG answers while 2 or 3 of 9 streams are silent.

Groups of 9 streams each carry one standing ``AVG`` (ε = 12 s_A, p = 0.9; the paper's Fig. 8
used ε = 0.5 on stock prices, about 12 s_A for our GBM prices). In half of the groups 2 streams
go silent, in the other half 3, for ``--duration`` ticks per episode (default 240), one episode
every ``duration + 400`` ticks (400 ticks of normal data in between refill the k = 100 buffers).
The engine detects silence after 3 expected periods (3 ticks), answers with ``A_approx``
(Eq. 13: interrupted streams moved along their drift) and ``ε_intr``, and re-evaluates every
``T = 10`` ticks (Algorithm 1); interrupted streams keep their last ``μ̂, σ̂`` (Algorithm 2).

For every interrupted answer the benchmark records the gap (ticks since the interrupted
streams' last item), the error ``A_approx − A_true`` against the true (hidden) values, the
reported ``ε_intr``, and the error of the stale answer that ignores the drift (last values).
**Coverage** is how often ``|A_approx − A_true| ≤ ε_intr``; ``ε_intr`` is meant at belief p =
0.9. Two ways to combine the per-stream errors are run side by side on the same data:
``linear`` (the paper: ``|a_i|``-weighted sum, conservative for > 1 stream) and ``rss`` (root
sum of squares, exact for independent streams with known parameters).

Data: ``walk/known`` (DBM walks of :mod:`common`, true ``μ_i, σ_i`` fixed in the engine: a check
of Eq. 13 and ``ε_intr``), ``walk/est`` (same walks, estimated from k = 100 items: the estimate
``μ̂`` has standard error ``σ/√99`` per tick, and that bias grows linearly with the gap),
``gbm/est`` (GBM "prices", estimated).

``python benchmarks/deferral/interruptions.py --quick`` is a smoke run (< 60 s).
"""

from __future__ import annotations

import argparse
import csv
import itertools
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    GROUP,
    OUT,
    Dataset,
    gbm_prices,
    increment_scale,
    machine_line,
    make_engine,
    random_walks,
)
from rich.console import Console
from rich.table import Table

from tsmon.protocols.deferral import StandingQuery

P = 0.9
C = 12.0
T_INTR = 10
BINS = (0, 10, 30, 60, 120, 180, 10**9)
N_AGG = 9  # AVG over the first 9 streams of each group of 10


def schedule(ticks_between: int, duration: int, episodes: int) -> tuple[int, list[int]]:
    starts = [ticks_between + e * (duration + ticks_between) for e in range(episodes)]
    return starts[-1] + duration + ticks_between, starts


def run_case(
    label: str,
    ds: Dataset,
    known: bool,
    starts: list[int],
    duration: int,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One data set through two engines (linear and rss ε_intr); rows per interrupted answer."""
    t_len, n = ds.xs.shape
    groups = n // GROUP
    w = np.zeros((groups, n))
    n_intr = np.array([2 if g % 2 == 0 else 3 for g in range(groups)])
    silent = np.zeros(n, dtype=bool)
    for g in range(groups):
        w[g, g * GROUP : g * GROUP + N_AGG] = 1.0 / N_AGG
        silent[g * GROUP : g * GROUP + n_intr[g]] = True
    a_true = ds.xs @ w.T
    scale = increment_scale(a_true)
    eps = C * scale
    engines = {
        comb: make_engine(
            n, t_interrupt=T_INTR, combine=comb, known=(ds.mu, ds.sigma) if known else None
        )
        for comb in ("linear", "rss")
    }
    for eng in engines.values():
        for g in range(groups):
            eng.add_query(StandingQuery(f"g{g}", dict.fromkeys(
                range(g * GROUP, g * GROUP + N_AGG), 1.0 / N_AGG), eps=eps, p=P))  # fmt: skip
    in_episode = np.zeros(t_len, dtype=np.int64) - 1
    for s in starts:
        in_episode[s : s + duration] = s
    all_ids = np.arange(n)
    live_ids = np.flatnonzero(~silent)
    rows: list[dict[str, Any]] = []
    unflagged = {"linear": 0, "rss": 0}
    unflagged_miss = {"linear": 0, "rss": 0}
    wall = 0.0
    for t in range(t_len):
        ep = in_episode[t]
        ids = all_ids if ep < 0 else live_ids
        t0 = time.perf_counter()
        outs = {c: e.tick(t, ids, np.full(len(ids), t), ds.xs[t, ids]) for c, e in engines.items()}
        wall += time.perf_counter() - t0
        for comb, out in outs.items():
            for a in out:
                g = int(a.name[1:])
                truth = a_true[t, g]
                if not a.interrupted:
                    if ep >= 0:  # silent but not yet detected (≤ 3 periods)
                        unflagged[comb] += 1
                        unflagged_miss[comb] += abs(a.value - truth) > eps
                    continue
                last = ep - 1
                cols = np.arange(g * GROUP, g * GROUP + N_AGG)
                stale_x = np.where(silent[cols], ds.xs[last, cols], ds.xs[t, cols])
                rows.append(
                    {
                        "label": label,
                        "combine": comb,
                        "group": g,
                        "n_intr": int(n_intr[g]),
                        "t": t,
                        "gap": t - last,
                        "value": a.value,
                        "truth": truth,
                        "error": a.value - truth,
                        "eps_intr": a.eps_intr,
                        "stale_error": float(stale_x.mean()) - truth,
                    }
                )
    info = {
        "label": label,
        "eps": eps,
        "scale": scale,
        "wall": wall,
        "ticks": t_len,
        "groups": groups,
        "unflagged": unflagged,
        "unflagged_miss": unflagged_miss,
        "interruptions": engines["linear"].monitor.n_interruptions,
        "evaluations": {c: e.counters.evaluations for c, e in engines.items()},
    }
    return rows, info


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    keys = sorted({(r["label"], r["combine"], r["n_intr"]) for r in rows},
                  key=lambda k: (k[0], k[2], k[1]))  # fmt: skip
    for label, comb, k in keys:
        sel = [r for r in rows if (r["label"], r["combine"], r["n_intr"]) == (label, comb, k)]
        for lo, hi in [*itertools.pairwise(BINS), (0, 10**9)]:
            rs = [r for r in sel if lo <= r["gap"] < hi]
            if not rs:
                continue
            err = np.array([r["error"] for r in rs])
            eps_i = np.array([r["eps_intr"] for r in rs])
            stale = np.array([r["stale_error"] for r in rs])
            out.append(
                {
                    "label": label,
                    "combine": comb,
                    "n_intr": k,
                    "gap_bin": "all"
                    if lo == 0 and hi == 10**9
                    else f"≥ {lo}"
                    if hi == 10**9
                    else f"[{lo}, {hi})",
                    "answers": len(rs),
                    "median_gap": statistics.median(r["gap"] for r in rs),
                    "mean_abs_error": float(np.mean(np.abs(err))),
                    "rms_error": float(np.sqrt(np.mean(err**2))),
                    "mean_eps_intr": float(np.mean(eps_i)),
                    "coverage": 100 * float(np.mean(np.abs(err) <= eps_i)),
                    "stale_mean_abs_error": float(np.mean(np.abs(stale))),
                }
            )
    return out


def print_tables(summary: list[dict[str, Any]], infos: list[dict], console: Console) -> None:
    for info in infos:
        rs = [r for r in summary if r["label"] == info["label"]]
        table = Table(
            title=f"{info['label']}: {info['groups']} groups × {info['ticks']:,} ticks, ε = "
            f"{info['eps']:.4g} (12 s_A), p = {P}, T = {T_INTR}; {info['interruptions']} "
            f"stream interruptions; engines {info['wall']:.1f} s"
        )
        for col in ("streams off", "ε_intr rule", "gap (ticks)", "answers", "median gap",
                    "mean |err|", "RMS err", "mean ε_intr", "coverage %",
                    "stale mean |err|"):  # fmt: skip
            table.add_column(col, justify="right")
        for r in rs:
            table.add_row(
                f"{r['n_intr']} of 9",
                r["combine"],
                r["gap_bin"],
                f"{r['answers']:,}",
                f"{r['median_gap']:.0f}",
                f"{r['mean_abs_error']:.4g}",
                f"{r['rms_error']:.4g}",
                f"{r['mean_eps_intr']:.4g}",
                f"{r['coverage']:.1f}",
                f"{r['stale_mean_abs_error']:.4g}",
            )
        console.print(table)
        console.print(
            f"  answers during silence before detection (not flagged): "
            f"{info['unflagged']['linear']:,}, of which outside ε: "
            f"{info['unflagged_miss']['linear']:,}"
        )


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = list(dict.fromkeys(r["label"] for r in rows))
    fig, axes = plt.subplots(2, len(labels), figsize=(4.2 * len(labels), 6.4), squeeze=False)
    edges = np.arange(0, max(r["gap"] for r in rows) + 20, 20)
    mids = (edges[:-1] + edges[1:]) / 2
    for j, label in enumerate(labels):
        for k, color in ((2, "tab:blue"), (3, "tab:red")):
            for comb, ls in (("linear", "-"), ("rss", "--")):
                rs = [r for r in rows if (r["label"], r["n_intr"], r["combine"]) ==
                      (label, k, comb)]  # fmt: skip
                if not rs:
                    continue
                gap = np.array([r["gap"] for r in rs])
                err = np.abs([r["error"] for r in rs])
                eps = np.array([r["eps_intr"] for r in rs])
                idx = np.digitize(gap, edges) - 1
                ok = [i for i in range(len(mids)) if (idx == i).sum() >= 5]
                if comb == "linear":
                    axes[0][j].plot(mids[ok], [err[idx == i].mean() for i in ok], "o-",
                                    color=color, label=f"mean |error|, {k} of 9")  # fmt: skip
                axes[0][j].plot(mids[ok], [eps[idx == i].mean() for i in ok], ls, color=color,
                                alpha=0.6, label=f"mean ε_intr {comb}, {k} of 9")  # fmt: skip
                axes[1][j].plot(mids[ok], [100 * (err[idx == i] <= eps[idx == i]).mean()
                                           for i in ok], ls, color=color,
                                label=f"{comb}, {k} of 9")  # fmt: skip
        axes[1][j].axhline(100 * P, color="k", lw=0.8, ls=":")
        axes[0][j].set_title(label, fontsize=9)
        axes[1][j].set_xlabel("interruption gap (ticks)")
        for ax in axes[:, j]:
            ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("error of A_approx")
    axes[1][0].set_ylabel("coverage: |error| ≤ ε_intr, %")
    axes[0][0].legend(fontsize=6)
    axes[1][0].legend(fontsize=6)
    fig.suptitle("AVG over 9 streams while 2 / 3 are interrupted (Fig. 8; p = 0.9)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--groups", type=int, default=40, help="groups of 9 streams (even)")
    ap.add_argument("--episodes", type=int, default=20, help="interruptions per group")
    ap.add_argument("--duration", type=int, default=240, help="ticks of silence per episode")
    ap.add_argument("--between", type=int, default=400, help="normal ticks between episodes")
    ap.add_argument("--variants", default="walk/known,walk/est,gbm/est")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--name", default="interruptions")
    ap.add_argument("--quick", action="store_true", help="10 groups, 4 episodes")
    args = ap.parse_args(argv)
    if args.quick:
        args.groups, args.episodes = 10, 4
    console = Console(width=200)
    start = time.perf_counter()
    ticks, starts = schedule(args.between, args.duration, args.episodes)
    rows: list[dict[str, Any]] = []
    infos = []
    for label in args.variants.split(","):
        rng = np.random.default_rng(args.seed)
        kind, variant = label.split("/")
        ds = (random_walks if kind == "walk" else gbm_prices)(rng, args.groups, ticks)
        r, info = run_case(label, ds, variant == "known", starts, args.duration)
        console.print(f"{label}: {len(r):,} interrupted answers, engines {info['wall']:.1f} s")
        rows += r
        infos.append(info)
    summary = summarize(rows)
    print_tables(summary, infos, console)
    args.out.mkdir(parents=True, exist_ok=True)
    for suffix, data in (("", rows), ("_summary", summary)):
        with (args.out / f"{args.name}{suffix}.csv").open("w", newline="") as fh:
            wr = csv.DictWriter(fh, fieldnames=list(data[0]))
            wr.writeheader()
            wr.writerows(data)
    plot(rows, args.out / f"{args.name}.png")
    for r in (r for r in summary if r["gap_bin"] == "all"):
        console.print(
            f"coverage {r['label']} {r['n_intr']} of 9, {r['combine']}: {r['coverage']:.1f} % "
            f"(target belief {100 * P:.0f} %), mean |error| {r['mean_abs_error']:.4g} vs "
            f"stale {r['stale_mean_abs_error']:.4g}"
        )
    console.print(
        f"wrote {args.out / args.name}.csv, {args.name}_summary.csv, {args.name}.png; "
        f"{machine_line(start)}"
    )
    if not math.isfinite(sum(r["error"] for r in rows)):
        raise SystemExit("non-finite error in an interrupted answer")


if __name__ == "__main__":
    main()
