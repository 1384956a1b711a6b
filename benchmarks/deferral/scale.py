"""Fig. 7 (§6.2) of Zhu & Ravishankar 2004: standing linear aggregates under a CPU budget.

Workload: 1,000 drifting random walks (σ_i ~ U(0.5, 1.5) per √tick, |μ_i| ≤ 0.03 σ_i), one item
per stream per tick; a tick is 1 s of data time (``tick_ms = 1000``). ``Q`` standing queries,
each an AVG of 9 distinct random streams with ``ε = c · σ_A`` (its true ``σ_A``; c = 12 is the
moderate ε of the other benchmarks, mean deferral ≈ 40 ticks) and p = 0.9. One
:class:`DeferralEngine` (k = 100, parameters estimated online, no unit budget) on one core.

**Tick budget.** A tick's work must finish within B = 1 s of wall time, before the next tick's
items arrive (the paper's Fig. 7 breakdown at ~3,000 queries matches its ~0.3 ms per query and
a 1 s tick). Per tick the engine's wall time ``w_t`` (``time.perf_counter`` around
``engine.tick``: buffering, Algorithm 2, interruption test, release, EDF, evaluation and the
next deadlines) is measured after ``--warmup`` ticks (the start-up burst, when every query is due
because σ is still unknown, is reported separately). **Missed deadlines**: the measured ticks are
replayed in real time (tick t arrives at t·B, starts when it has arrived and tick t − 1 is done);
the evaluations of a tick are missed when it ends after ``(t + 1)·B`` (the engine's own
scheduler has no budget here, so its counter stays 0: the budget is wall time).

**Naive per-tick evaluation** of all Q queries, measured in the same process on the same data:
(1) through the engine (ε = 0: every query due every tick, known parameters), (2) one task per
query as in the paper (a Python loop evaluating ``Σ a_i S_i`` for each query and notifying when it
moved more than ε since the last notification), (3) one sparse
product ``W @ x`` for all queries (the best case for naive). Each breakdown point is
``B / (cost per query)`` from the largest measured Q (labelled as extrapolated where it lies
beyond it).

``--profile`` runs cProfile over ``--profile-ticks`` steady ticks at the largest Q and prints the
top functions. ``python benchmarks/deferral/scale.py --quick`` is a smoke run (< 60 s).
"""

from __future__ import annotations

import argparse
import cProfile
import csv
import inspect
import io
import pstats
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, machine_line, make_engine, parse_floats
from rich.console import Console
from rich.table import Table

from tsmon.protocols.deferral import DeferralEngine, QueryPartition, StandingQuery

N_STREAMS = 1_000
P = 0.9
TARGET_Q = 1_000_000
TARGET_MISSED = 1.0  # % of deadlines at moderate ε


class Walks:
    """1,000 DBM streams generated tick by tick (same seed → same data for every run)."""

    def __init__(self, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.sigma = rng.uniform(0.5, 1.5, N_STREAMS)
        self.mu = rng.choice([-1.0, 1.0], N_STREAMS) * rng.uniform(0, 0.03, N_STREAMS) * self.sigma
        self.rng = np.random.default_rng(seed + 1)
        self.x = np.full(N_STREAMS, 100.0)

    def step(self) -> np.ndarray:
        self.x = self.x + self.mu + self.sigma * self.rng.standard_normal(N_STREAMS)
        return self.x


def make_queries(q: int, seed: int, sigma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(cols (Q, 9), σ_A (Q,))`` of Q random AVG-of-9 queries (9 distinct streams each)."""
    rng = np.random.default_rng(seed + 7)
    cols = rng.integers(0, N_STREAMS, (q, 9))
    while True:  # redraw rows with a repeated stream (about 3.5 % per round)
        srt = np.sort(cols, axis=1)
        bad = (srt[:, 1:] == srt[:, :-1]).any(axis=1)
        if not bad.any():
            break
        cols[bad] = rng.integers(0, N_STREAMS, (int(bad.sum()), 9))
    sig_a = np.sqrt((sigma[cols] ** 2).sum(axis=1)) / 9
    return cols, sig_a


def build_engine(cols: np.ndarray, eps: np.ndarray, known: tuple | None = None) -> DeferralEngine:
    eng = make_engine(N_STREAMS, tick_ms=1000, max_dt=3_600, known=known)
    w = 1.0 / 9
    for j in range(len(cols)):
        eng.add_query(StandingQuery(f"q{j}", dict.fromkeys(cols[j].tolist(), w), eps=float(eps[j]),
                                    p=P))  # fmt: skip
    return eng


def replay(walls: list[float], evals: list[int], budget_s: float) -> tuple[float, float]:
    """Real-time replay: (% of evaluations in ticks that end after the next arrival, max lag)."""
    end, missed, lag = 0.0, 0, 0.0
    for t, (w, e) in enumerate(zip(walls, evals, strict=True)):
        start = max(t * budget_s, end)
        end = start + w
        lag = max(lag, end - (t + 1) * budget_s)
        if end > (t + 1) * budget_s:
            missed += e
    total = sum(evals)
    return (100.0 * missed / total if total else 0.0), max(lag, 0.0)


def run_deferral(
    q: int, c: float, args: argparse.Namespace, console: Console, profile: bool
) -> dict[str, Any]:
    walks = Walks(args.seed)
    cols, sig_a = make_queries(q, args.seed, walks.sigma)
    t0 = time.perf_counter()
    eng = build_engine(cols, c * sig_a)
    setup = time.perf_counter() - t0
    ids = np.arange(N_STREAMS)
    walls, evals = [], []
    for t in range(args.warmup + args.ticks):
        x = walks.step()
        ts = np.full(N_STREAMS, t * 1000)
        s = time.perf_counter()
        out = eng.tick(t * 1000, ids, ts, x)
        walls.append(time.perf_counter() - s)
        evals.append(len(out))
    warm_w, warm_e = walls[: args.warmup], evals[: args.warmup]
    w, e = walls[args.warmup :], evals[args.warmup :]
    res = {
        "Q": q,
        "c": c,
        "setup_s": setup,
        "warmup_ticks": args.warmup,
        "warmup_max_s": max(warm_w),
        "warmup_total_s": sum(warm_w),
        "warmup_evals": sum(warm_e),
        "ticks": len(w),
        "evals_per_tick": statistics.mean(e),
        "mean_interval": q / statistics.mean(e) if statistics.mean(e) else float("inf"),
        "wall_median_s": statistics.median(w),
        "wall_p90_s": float(np.percentile(w, 90)),
        "wall_max_s": max(w),
        "engine_missed": eng.counters.missed_deadlines,
    }
    for b in args.budgets:
        res[f"missed_pct_B{b:g}"], res[f"max_lag_s_B{b:g}"] = replay(w, e, b)
    if profile:
        pr = cProfile.Profile()
        for t in range(args.warmup + args.ticks, args.warmup + args.ticks + args.profile_ticks):
            x = walks.step()
            pr.enable()
            eng.tick(t * 1000, ids, np.full(N_STREAMS, t * 1000), x)
            pr.disable()
        res["profile"] = pr
    console.print(
        f"  Q={q:,} c={c:g}: setup {setup:.1f} s, warm-up max {max(warm_w):.2f} s, "
        f"median tick {res['wall_median_s'] * 1e3:.1f} ms, {res['evals_per_tick']:,.0f} evals/tick"
    )
    return res


def naive_engine(q: int, args: argparse.Namespace) -> float:
    """Median wall per tick of the engine with ε = 0 (all queries due every tick)."""
    walks = Walks(args.seed)
    cols, _ = make_queries(q, args.seed, walks.sigma)
    eng = build_engine(cols, np.zeros(q), known=(walks.mu, walks.sigma))
    ids = np.arange(N_STREAMS)
    walls = []
    for t in range(args.naive_ticks):
        x = walks.step()
        s = time.perf_counter()
        out = eng.tick(t * 1000, ids, np.full(N_STREAMS, t * 1000), x)
        walls.append(time.perf_counter() - s)
        assert len(out) == q
    return statistics.median(walls)


def naive_loop(q: int, args: argparse.Namespace) -> float:
    """Median wall per tick evaluating every query in its own task (Python loop).

    Each task computes ``Σ a_i S_i`` and notifies (counts) when it moved more than ε since the
    last notification, so the naive scheme's answers are always within ε.
    """
    walks = Walks(args.seed)
    cols, sig_a = make_queries(q, args.seed, walks.sigma)
    tasks = [(cols[j].tolist(), [1.0 / 9] * 9, float(12.0 * sig_a[j])) for j in range(q)]
    last = [float("nan")] * q
    notified = 0
    walls = []
    for _ in range(args.naive_ticks):
        x = walks.step().tolist()
        s = time.perf_counter()
        for j, (idx, wt, eps) in enumerate(tasks):
            v = sum(wi * x[i] for i, wi in zip(idx, wt, strict=True))
            if not abs(v - last[j]) <= eps:
                last[j] = v
                notified += 1
        walls.append(time.perf_counter() - s)
    assert notified >= q
    return statistics.median(walls)


def naive_matvec(q: int, args: argparse.Namespace) -> float:
    """Median wall per tick of one sparse product for all queries."""
    walks = Walks(args.seed)
    cols, _ = make_queries(q, args.seed, walks.sigma)
    w = sp.csr_array((np.full(q * 9, 1.0 / 9), cols.ravel(), np.arange(0, 9 * q + 1, 9)),
                     shape=(q, N_STREAMS))  # fmt: skip
    walls = []
    for _ in range(max(args.naive_ticks, 5)):
        x = walks.step()
        s = time.perf_counter()
        w @ x
        walls.append(time.perf_counter() - s)
    return statistics.median(walls)


def profile_split(pr: cProfile.Profile) -> dict[str, float]:
    """Shares of profiled time: per-query bookkeeping in the tick vs evaluation vs the rest.

    Bookkeeping is the own time of ``DeferralEngine.tick`` and of the partition's ``run``,
    ``_on_interruptions`` and ``_record_windows`` (and the comprehensions inside them): passes over
    *every* registered query, whether due or not. Evaluation is the cumulative time of
    ``_evaluate``.
    """
    partition = inspect.getsourcefile(QueryPartition)
    first = inspect.getsourcelines(QueryPartition.run)[1]
    last = inspect.getsourcelines(QueryPartition._extremum)[1]
    tick = inspect.getsourcelines(DeferralEngine.tick)
    st = pstats.Stats(pr, stream=io.StringIO())
    total = st.total_tt
    book = evaluate = 0.0
    for (fn, line, name), (_cc, _nc, tt, ct, _callers) in st.stats.items():
        in_run = fn == partition and first <= line < last
        in_tick = fn.endswith("deferral/engine.py") and tick[1] <= line < tick[1] + len(tick[0])
        if in_run or in_tick:
            book += tt
        if name == "_evaluate":
            evaluate = ct
    return {"bookkeeping_pct": 100 * book / total, "evaluate_pct": 100 * evaluate / total,
            "other_pct": 100 * (total - book - evaluate) / total}  # fmt: skip


def profile_table(pr: cProfile.Profile, console: Console, top: int) -> list[dict[str, Any]]:
    st = pstats.Stats(pr, stream=io.StringIO())
    total = st.total_tt
    rows = []
    for (fn, line, name), (_cc, nc, tt, ct, _callers) in st.stats.items():
        short = fn.split("/src/")[-1] if "/src/" in fn else Path(fn).name
        rows.append({"function": f"{short}:{line}({name})", "calls": nc, "tottime_s": tt,
                     "cumtime_s": ct, "share_pct": 100 * tt / total})  # fmt: skip
    rows.sort(key=lambda r: -r["tottime_s"])
    table = Table(title=f"cProfile, top {top} by own time (total {total:.2f} s)")
    for col in ("function", "calls", "own s", "cum s", "own %"):
        table.add_column(col, justify="right" if col != "function" else "left")
    for r in rows[:top]:
        table.add_row(r["function"], f"{r['calls']:,}", f"{r['tottime_s']:.3f}",
                      f"{r['cumtime_s']:.3f}", f"{r['share_pct']:.1f}")  # fmt: skip
    console.print(table)
    split = profile_split(pr)
    console.print(
        f"profile split: per-query bookkeeping in tick (loops over all Q) "
        f"{split['bookkeeping_pct']:.0f} %, evaluation (_evaluate, cumulative) "
        f"{split['evaluate_pct']:.0f} %, other (models, scheduler, ...) {split['other_pct']:.0f} %"
    )
    return rows[:top]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--queries", default="1000,10000,100000,1000000", help="Q values")
    ap.add_argument("--c", default="6,12,24", help="ε / σ_A values (all Q ≤ --all-c-max)")
    ap.add_argument("--all-c-max", type=int, default=100_000, help="above: only c = 12")
    ap.add_argument("--budgets", default="1,0.5,2", help="tick budgets B in wall seconds")
    ap.add_argument("--warmup", type=int, default=60)
    ap.add_argument("--ticks", type=int, default=60, help="measured ticks after warm-up")
    ap.add_argument("--naive-queries", default="1000,10000,100000", help="Q for naive (1), (2)")
    ap.add_argument("--naive-ticks", type=int, default=3)
    ap.add_argument("--profile", action="store_true", default=True)
    ap.add_argument("--no-profile", dest="profile", action="store_false")
    ap.add_argument("--profile-ticks", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--name", default="scale")
    ap.add_argument("--quick", action="store_true", help="Q ≤ 10,000, few ticks")
    args = ap.parse_args(argv)
    if args.quick:
        args.queries, args.c, args.warmup, args.ticks = "1000,10000", "12", 30, 20
        args.naive_queries, args.profile_ticks = "1000,10000", 5
    qs = [int(v) for v in args.queries.split(",")]
    cs = parse_floats(args.c)
    args.budgets = parse_floats(args.budgets)
    console = Console(width=200)
    start = time.perf_counter()
    rows = []
    for q in qs:
        for c in cs if q <= args.all_c_max else (12.0,):
            prof = args.profile and q == max(qs) and c == (12.0 if 12.0 in cs else cs[0])
            rows.append(run_deferral(q, c, args, console, prof))
    naive = []
    for q in [int(v) for v in args.naive_queries.split(",")]:
        naive.append({"Q": q, "engine_eps0_s": naive_engine(q, args),
                      "loop_s": naive_loop(q, args)})  # fmt: skip
        console.print(f"  naive Q={q:,}: engine ε=0 {naive[-1]['engine_eps0_s']:.3f} s/tick, "
                      f"loop {naive[-1]['loop_s']:.3f} s/tick")  # fmt: skip
    for q in qs:
        if not any(r["Q"] == q for r in naive):
            naive.append({"Q": q, "engine_eps0_s": float("nan"), "loop_s": float("nan")})
    for row in naive:  # every row, also a --naive-queries Q that is not in --queries
        row["matvec_s"] = naive_matvec(row["Q"], args)
    naive.sort(key=lambda r: r["Q"])

    b0 = args.budgets[0]
    table = Table(
        title=f"Deferral engine, {N_STREAMS:,} streams, p = {P}, tick budget B = {b0:g} s "
        f"(also {', '.join(f'{b:g}' for b in args.budgets[1:])} s); {args.ticks} measured ticks "
        f"after {args.warmup} warm-up; medians"
    )
    cols_ = ["Q", "c", "evals/tick", "mean Δt", "setup s", "warm-up max s", "tick median ms",
             "p90 ms", "max ms",
             *(f"missed % B={b:g}" for b in args.budgets)]  # fmt: skip
    for col in cols_:
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(
            f"{r['Q']:,}", f"{r['c']:g}", f"{r['evals_per_tick']:,.0f}",
            f"{r['mean_interval']:.1f}", f"{r['setup_s']:.1f}", f"{r['warmup_max_s']:.2f}",
            f"{1e3 * r['wall_median_s']:.1f}", f"{1e3 * r['wall_p90_s']:.1f}",
            f"{1e3 * r['wall_max_s']:.1f}",
            *(f"{r[f'missed_pct_B{b:g}']:.1f}" for b in args.budgets),
        )  # fmt: skip
    console.print(table)

    ntable = Table(title="Naive per-tick evaluation of all Q queries (median wall per tick)")
    for col in ("Q", "engine ε=0 s", "per-query loop s", "sparse W@x ms",
                "deferral c=12 median s", "deferral / loop", "deferral / W@x"):  # fmt: skip
        ntable.add_column(col, justify="right")
    for r in naive:
        d = next((x for x in rows if x["Q"] == r["Q"] and x["c"] == 12.0), None)
        dm = d["wall_median_s"] if d else float("nan")
        ntable.add_row(
            f"{r['Q']:,}", f"{r['engine_eps0_s']:.3f}", f"{r['loop_s']:.3f}",
            f"{1e3 * r['matvec_s']:.2f}", f"{dm:.3f}", f"{dm / r['loop_s']:.3f}",
            f"{dm / r['matvec_s']:.1f}",
        )  # fmt: skip
    console.print(ntable)
    breakdown = {}
    for key, label in (("engine_eps0_s", "engine ε=0"), ("loop_s", "per-query loop"),
                       ("matvec_s", "sparse W@x")):  # fmt: skip
        pts = [r for r in naive if np.isfinite(r[key])]
        big = max(pts, key=lambda r: r["Q"])
        per_q = big[key] / big["Q"]
        qstar = b0 / per_q
        inside = any(r[key] > b0 for r in pts)
        breakdown[label] = qstar
        console.print(
            f"naive breakdown ({label}): {per_q * 1e6:.2f} µs per query per tick at Q = "
            f"{big['Q']:,} → all Q fit in B = {b0:g} s up to Q ≈ {qstar:,.0f}"
            + ("" if inside or qstar <= big["Q"] else " (extrapolated beyond the measured Q)")
        )
    moderate = [r for r in rows if r["c"] == 12.0]
    if moderate:
        top = max(moderate, key=lambda r: r["Q"])
        key = f"missed_pct_B{b0:g}"
        verdict = "met" if top["Q"] >= TARGET_Q and top[key] < TARGET_MISSED else "missed"
        ok = [r["Q"] for r in moderate if r[key] < TARGET_MISSED]
        console.print(
            f"target {TARGET_Q:,} linear aggregates, < {TARGET_MISSED:g} % missed at c = 12, "
            f"B = {b0:g} s: {verdict} — largest Q measured {top['Q']:,}: {top[key]:.1f} % "
            f"missed (median tick {top['wall_median_s']:.2f} s); < 1 % up to Q = "
            f"{max(ok, default=0):,}"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / f"{args.name}.csv").open("w", newline="") as fh:
        fields = [k for k in rows[0] if k != "profile"]
        wr = csv.DictWriter(fh, fieldnames=fields, extrasaction="ignore")
        wr.writeheader()
        wr.writerows(rows)
    with (args.out / f"{args.name}_naive.csv").open("w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=list(naive[0]))
        wr.writeheader()
        wr.writerows(naive)
    prof_rows = []
    for r in rows:
        if "profile" in r:
            console.print(f"profile at Q = {r['Q']:,}, c = {r['c']:g}:")
            prof_rows = profile_table(r["profile"], console, 15)
    if prof_rows:
        with (args.out / f"{args.name}_profile.csv").open("w", newline="") as fh:
            wr = csv.DictWriter(fh, fieldnames=list(prof_rows[0]))
            wr.writeheader()
            wr.writerows(prof_rows)
    plot(rows, naive, args.budgets, args.out / f"{args.name}.png")
    console.print(
        f"wrote {args.out / args.name}.csv, {args.name}_naive.csv, {args.name}.png; "
        f"{machine_line(start)}"
    )


def plot(rows: list[dict], naive: list[dict], budgets: tuple, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for c in sorted({r["c"] for r in rows}):
        rs = sorted((r for r in rows if r["c"] == c), key=lambda r: r["Q"])
        ax1.plot([r["Q"] for r in rs], [r["wall_median_s"] for r in rs], "o-",
                 label=f"deferral c={c:g} (median)")  # fmt: skip
        ax2.plot([r["Q"] for r in rs], [r[f"missed_pct_B{budgets[0]:g}"] for r in rs], "o-",
                 label=f"deferral c={c:g}")  # fmt: skip
    for key, style, label in (("engine_eps0_s", "s--", "naive: engine ε=0"),
                              ("loop_s", "^--", "naive: per-query loop"),
                              ("matvec_s", "v:", "naive: sparse W@x")):  # fmt: skip
        rs = [r for r in naive if np.isfinite(r[key])]
        ax1.plot([r["Q"] for r in rs], [r[key] for r in rs], style, label=label)
        ax2.plot([r["Q"] for r in rs], [100.0 if r[key] > budgets[0] else 0.0 for r in rs],
                 style, label=label)  # fmt: skip
    ax1.axhline(budgets[0], color="k", lw=0.8, ls=":")
    ax1.set_xscale("log")
    ax1.set_yscale("log")
    ax1.set_xlabel("standing queries Q")
    ax1.set_ylabel("wall s per tick")
    ax2.set_xscale("log")
    ax2.set_xlabel("standing queries Q")
    ax2.set_ylabel(f"missed deadlines %, B = {budgets[0]:g} s")
    for ax in (ax1, ax2):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{N_STREAMS:,} streams, p = {P}: per-tick cost and missed deadlines (Fig. 7)",
                 fontsize=10)  # fmt: skip
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
