"""Throughput of tsmon's vectorized ingest against a naive per-point evaluator and pandas.

Workload (the issue's): seeded random walks with jittered ~1 s steps, interleaved in time order
as a collector delivers them; every series triggers 10 queries over 3 shared windows
(``100 points``, ``5m``, ``1h``) that fire on ~0.1-1 % of points. tsmon ingests in batches and
drains ``events()`` after each call; the naive evaluator recomputes every statistic from scratch
per point (timed on the last ``--naive-points`` points, i.e. full windows, and extrapolated);
pandas computes ``rolling`` statistics only. Naive and tsmon event counts must agree per query
on the first and the last ``--naive-points`` points, which keeps the baseline honest.
``python benchmarks/bench_windows.py --quick`` is a smoke run.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter, process_time

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

from tsmon import Monitor
from tsmon.core.window_spec import WindowKind, WindowSpec
from tsmon.query import compile_query
from tsmon.streams.fleet import random_walks

TARGET_PPS = 1_000_000
C, F, H = WindowSpec.count(100), WindowSpec.time(300_000), WindowSpec.time(3_600_000)
Stats = dict[object, float]
#: (name, WHEN clause, EMIT clause, the same condition in Python over naive statistics)
QUERIES: tuple[tuple[str, str, str, Callable[[Stats], bool]], ...] = (
    ("jump", f"abs(last - mean({C})) > 3.2 * stddev({C})", f"series, mean({C}), stddev({C})",
     lambda s: abs(s["last"] - s["mean", C]) > 3.2 * s["stddev", C]),
    ("breakout", f"last >= max({H}) AND count({H}) > 3000", f"series, max({H})",
     lambda s: s["last"] >= s["max", H] and s["count", H] > 3000),
    ("trend", f"abs(slope({H}) * 1h) > 180 AND count({H}) > 3000", "",
     lambda s: abs(s["slope", H] * 3600.0) > 180 and s["count", H] > 3000),
    ("fall", f"rate({F}) * 5m < -45 AND count({F}) > 250", f"series, first({F}), rate({F})",
     lambda s: s["rate", F] * 300.0 < -45 and s["count", F] > 250),
    ("gap", f"count({F}) < 288 AND count({H}) > 3000", f"series, count({F})",
     lambda s: s["count", F] < 288 and s["count", H] > 3000),
    ("spread", f"max({F}) - min({F}) > 55", "",
     lambda s: s["max", F] - s["min", F] > 55),
    ("volatile", f"stddev({F}) > 1.15 * stddev({H})", "",
     lambda s: s["stddev", F] > 1.15 * s["stddev", H]),
    ("drift", f"mean({F}) - mean({H}) > 80", f"series, mean({F}), mean({H})",
     lambda s: s["mean", F] - s["mean", H] > 80),
    ("sunk", f"sum({C}) - 100 * mean({H}) < -8800 AND count({H}) > 3000", "",
     lambda s: s["sum", C] - 100 * s["mean", H] < -8800 and s["count", H] > 3000),
    ("noisy", f"var({C}) > 95", "",
     lambda s: s["var", C] > 95),
)  # fmt: skip
#: The statistics the naive evaluator computes per window: the union of what the queries read.
NEEDS = {C: ("mean", "stddev", "sum", "var"), F: ("count", "first", "rate", "min", "max",
         "mean", "stddev"), H: ("count", "max", "mean", "stddev", "slope")}  # fmt: skip


def query_text() -> str:
    """The 10 queries in tsmon's language, all triggered by every ``bench.*`` series."""
    return "\n".join(
        f"QUERY {name} ON bench.* WHEN {when}" + (f" EMIT {emit}" if emit else "")
        for name, when, emit, _ in QUERIES
    )


@dataclass
class Workload:
    """Points in arrival order, plus each series' history for the naive evaluator."""

    series: np.ndarray  # object: name per point
    ts: np.ndarray  # int64 epoch ms
    value: np.ndarray  # float64
    code: np.ndarray  # series number per point
    pos: np.ndarray  # index of the point within its series
    hist_ts: list[np.ndarray]
    hist_value: list[np.ndarray]


def make_workload(n_series: int, n_points: int) -> Workload:
    """Seeded random walks from :func:`tsmon.streams.fleet.random_walks`, renamed ``bench.*``."""
    frame = random_walks(n_series, n_points, seed=42)
    code, names = pd.factorize(frame["series"])
    names = np.array([f"bench.{name}" for name in names], dtype=object)
    ts, value = frame["ts"].to_numpy(np.int64), frame["value"].to_numpy(np.float64)
    order = np.argsort(code, kind="stable")  # per series, in arrival (= time) order
    pos = np.empty(len(code), dtype=np.int64)
    pos[order] = np.arange(len(code)) - np.repeat(np.arange(n_series) * n_points, n_points)
    hist = order.reshape(n_series, n_points)
    return Workload(names[code], ts, value, code, pos, list(ts[hist]), list(value[hist]))


def run_tsmon(
    w: Workload, batch: int, keep_from: int
) -> tuple[tuple[float, float], Counter[str], list]:
    """Ingest everything in batches, draining events; return (wall, CPU) seconds, the events
    per query and the events of points from arrival index ``keep_from`` on (a superset: whole
    batches), for the cross-check."""
    mon = Monitor(["bench.*"], retention="2h")
    mon.add_query(query_text())
    n_events: Counter[str] = Counter()
    kept = []
    start, start_cpu = perf_counter(), process_time()
    for lo in range(0, len(w.ts), batch):
        hi = min(lo + batch, len(w.ts))
        mon.ingest(w.series[lo:hi], w.ts[lo:hi], w.value[lo:hi])
        drained = mon.events()
        n_events.update(e.query for e in drained)
        if hi > keep_from:
            kept.extend(drained)
    elapsed = perf_counter() - start, process_time() - start_cpu
    if mon.stats()["rejected"]:
        sys.exit(f"tsmon rejected points: {mon.stats()['rejected_by_reason']}")
    return elapsed, n_events, kept


def _var(wx: np.ndarray) -> float:
    return float(wx.var(ddof=1)) if len(wx) > 1 else math.nan


def _rate(wt: np.ndarray, wx: np.ndarray) -> float:
    span_s = (int(wt[-1]) - int(wt[0])) / 1000.0
    return (float(wx[-1]) - float(wx[0])) / span_s if span_s > 0 else math.nan


def _slope(wt: np.ndarray, wx: np.ndarray) -> float:
    tau = (wt - wt.mean()) / 1000.0
    den = float(tau @ tau)
    return float(tau @ (wx - wx.mean())) / den if len(wx) > 1 and den > 0 else math.nan


#: Each statistic of a window's timestamps and values, from scratch (tsmon's definitions).
STAT_FNS: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "count": lambda wt, wx: float(len(wx)), "sum": lambda wt, wx: float(wx.sum()),
    "mean": lambda wt, wx: float(wx.mean()), "var": lambda wt, wx: _var(wx),
    "stddev": lambda wt, wx: math.sqrt(_var(wx)), "min": lambda wt, wx: float(wx.min()),
    "max": lambda wt, wx: float(wx.max()), "first": lambda wt, wx: float(wx[0]),
    "rate": _rate, "slope": _slope,
}  # fmt: skip


def naive_stats(ts: np.ndarray, x: np.ndarray) -> Stats:
    """The statistics in NEEDS as of the newest point of ``ts``/``x``, from scratch."""
    out: Stats = {"last": float(x[-1])}
    for spec, wanted in NEEDS.items():
        if spec.kind is WindowKind.COUNT:
            lo = max(0, len(x) - spec.size)
        else:  # time window: ts in (t - size, t]
            lo = int(np.searchsorted(ts, ts[-1] - spec.size, side="right"))
        wt, wx = ts[lo:], x[lo:]
        out.update({(name, spec): STAT_FNS[name](wt, wx) for name in wanted})
    return out


def run_naive(w: Workload, lo: int, hi: int) -> tuple[float, Counter[str]]:
    """Evaluate points ``[lo, hi)`` in arrival order from scratch; return time and events."""
    fired: Counter[str] = Counter()
    start = perf_counter()
    for i in range(lo, hi):
        s, k = w.code[i], w.pos[i] + 1
        stats = naive_stats(w.hist_ts[s][:k], w.hist_value[s][:k])
        fired.update(name for name, _, _, cond in QUERIES if cond(stats))
    return perf_counter() - start, fired


def run_pandas(w: Workload) -> tuple[float, float]:
    """Rolling mean/std/min/max over the 3 windows of every series (pre-split per series);
    (wall, CPU) seconds."""
    start, start_cpu = perf_counter(), process_time()
    for ts, value in zip(w.hist_ts, w.hist_value, strict=True):
        frame = pd.Series(value, index=pd.to_datetime(ts, unit="ms"))
        for window in (100, "5min", "1h"):
            rolling = frame.rolling(window, min_periods=1)
            for stat in ("mean", "std", "min", "max"):
                getattr(rolling, stat)()
    return perf_counter() - start, process_time() - start_cpu


def cross_check(w: Workload, n: int, tail_events: list, console: Console) -> None:
    """Per-query event counts of tsmon and the naive evaluator must agree on the first and on
    the last ``n`` points; exit 1 otherwise."""
    mon = Monitor(["bench.*"], retention="2h")
    mon.add_query(query_text())
    mon.ingest(w.series[:n], w.ts[:n], w.value[:n])
    head = Counter(e.query for e in mon.events())
    tail_keys = set(zip(w.series[-n:].tolist(), w.ts[-n:].tolist(), strict=True))
    tail = Counter(e.query for e in tail_events if (e.series, e.ts_ms) in tail_keys)
    naive = run_naive(w, 0, n)[1], run_naive(w, len(w.ts) - n, len(w.ts))[1]
    for label, ours, theirs in (("first", head, naive[0]), ("last", tail, naive[1])):
        same = "agree per query" if ours == theirs else f"[red]DIFFER[/]: {ours} != {theirs}"
        console.print(
            f"events on the {label} {n:,} points, tsmon vs naive: {ours.total():,} "
            f"vs {theirs.total():,}, {same}"
        )
    if (head, tail) != naive:
        console.print("[red bold]cross-check: FAILED[/]")
        sys.exit(1)
    console.print("cross-check: ok")


def main(argv: list[str] | None = None) -> None:
    """Parse flags, build the workload, time the three contenders and print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--series", type=int, default=1_000)
    ap.add_argument("--points-per-series", type=int, default=10_000)
    ap.add_argument("--batch", type=int, default=1_000_000, help="points per ingest call")
    ap.add_argument("--naive-points", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=3, help="report the median of this many")
    ap.add_argument("--quick", action="store_true", help="100 series x 2,000 points (smoke run)")
    args = ap.parse_args(argv)
    if args.quick:
        vars(args).update(series=100, points_per_series=2_000, batch=20_000, naive_points=5_000)
    console = Console(width=120)
    compiled = [compile_query(q) for q in query_text().splitlines()]
    read = {(stat, spec) for q in compiled for stat, spec in q.needs}
    assert read == {(s, win) for win, stats in NEEDS.items() for s in stats}, "NEEDS is stale"

    w = make_workload(args.series, args.points_per_series)
    total = len(w.ts)
    n_naive = min(args.naive_points, total)
    console.print(
        f"workload: {args.series:,} series x {args.points_per_series:,} points = {total:,}, "
        f"3 windows and {len(QUERIES)} queries per series, batches of {args.batch:,}"
    )
    tsmon_runs = [run_tsmon(w, args.batch, total - n_naive) for _ in range(args.repeat)]
    cross_check(w, n_naive, tsmon_runs[0][2], console)
    tsmon_pps, tsmon_cpu = (total / statistics.median(r[0][k] for r in tsmon_runs) for k in (0, 1))
    by_query = tsmon_runs[0][1]
    naive_pps = n_naive / statistics.median(
        run_naive(w, total - n_naive, total)[0] for _ in range(args.repeat)
    )
    pandas_runs = [run_pandas(w) for _ in range(args.repeat)]
    pandas_pps, pandas_cpu = (total / statistics.median(r[k] for r in pandas_runs) for k in (0, 1))

    table = Table(title=f"points/s (wall clock, and per CPU second), median of {args.repeat} runs")
    columns = ("contender", "computes", "points/s", "tsmon ÷ this", "per CPU s", "tsmon ÷ this")
    for column in columns:
        table.add_column(column, justify="left" if column in ("contender", "computes") else "right")
    for name, what, pps, cpu in (
        ("tsmon ingest", f"stats + {len(QUERIES)} queries, per-point events", tsmon_pps, tsmon_cpu),
        ("naive per-point", f"the same from scratch; last {n_naive:,} points", naive_pps, None),
        ("pandas rolling", "mean/std/min/max x 3 windows, no events", pandas_pps, pandas_cpu),
    ):
        per_cpu = ("–", "–") if cpu is None else (f"{cpu:,.0f}", f"{tsmon_cpu / cpu:,.2f}x")
        table.add_row(name, what, f"{pps:,.0f}", f"{tsmon_pps / pps:,.2f}x", *per_cpu)
    console.print(table)
    # on a shared machine the wall clock counts other jobs' time too: the CPU time of this
    # single-threaded process is what one core spends
    met = "[green]met[/]" if tsmon_cpu >= TARGET_PPS else "[red]NOT met[/]"
    console.print(
        f"target >= {TARGET_PPS:,} points per CPU second (one core) with per-point events: {met}"
    )
    rates = ", ".join(f"{q} {by_query[q] / total:.2%}" for q, *_ in QUERIES)
    console.print(f"events: {by_query.total():,} per run; share of points by query: {rates}")
    console.print(
        f"machine: {os.cpu_count()} cores (os.cpu_count), {platform.machine()}, Python "
        f"{platform.python_version()}, numpy {np.__version__}, pandas {pd.__version__}"
    )
    print(
        f"RESULT tsmon_pps={tsmon_pps:.0f} naive_pps={naive_pps:.0f} "
        f"pandas_pps={pandas_pps:.0f} ratio_naive={tsmon_pps / naive_pps:.2f} "
        f"ratio_pandas={tsmon_pps / pandas_pps:.3f} tsmon_cpu_pps={tsmon_cpu:.0f} "
        f"pandas_cpu_pps={pandas_cpu:.0f} ratio_pandas_cpu={tsmon_cpu / pandas_cpu:.3f}"
    )


if __name__ == "__main__":
    main()
