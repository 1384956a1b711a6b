"""Standing AVGs in a ``Monitor`` with 5-minute ticks on NAB series (issue 17): deferral at real
tick sizes, and the cap on ``Δt`` that makes it possible.

Data and queries are those of :mod:`common`: ten NAB series per set (``realAWSCloudwatch`` CPU,
``realTweets`` volumes), aligned by sample index and stamped every 5 minutes; leave-one-out
AVG-of-9 queries (10 per ``p``), all in one ``Monitor(standing_tick="5m")`` per variant, fed
tick by tick through ``Monitor.ingest``. ε = ``--c`` × s_A (12: the "moderate ε" of the other
deferral benchmarks).

Per set, variant and ``p``:

* **evaluations / ticks**: evaluations summed over the 10 queries, over 10 × ticks (each query
  could be evaluated once per tick);
* **per-tick fidelity**: the fraction of (query, tick) pairs whose current answer (the last
  evaluation's ``value``, as ``Monitor.answers("standing")`` gives it) is within ε of the exact AVG
  of the series' values at that tick; pooled over the 10 queries, and the worst query's;
* every evaluation is checked against the exact AVG at its tick (the largest error is printed);
* what the data allow: the fraction of (query, tick) pairs whose AVG moved by more than ε since
  the tick before (**jumps > ε**), and the fewest evaluations that keep *every* tick within ε,
  over 10 × ticks (**offline min**, greedy in hindsight: ``common.offline_min``).

Variants (``--variants``): ``default`` (``max_dt`` and ``reestimate`` 100 sampling intervals,
``jump_test = 3``), ``nocap`` (``max_dt = inf``), ``cap10`` (``max_dt = 10``), ``re10``
(``reestimate = 10``), ``nojump`` (``jump_test = false``: deadlines only), and ``old``: the
settings before issue 17 (``max_dt = "60s"``, ``reestimate = "60s"``), the baseline, run in
the same process.

``python benchmarks/deferral/real_ticks.py --quick`` is a smoke run (1,000 ticks per set).
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    MODERATE_C,
    NAB,
    OUT,
    PS,
    base_weights,
    increment_scale,
    machine_line,
    nab,
    offline_min,
    parse_floats,
)
from rich.console import Console
from rich.table import Table

from tsmon.engine.monitor import Monitor

TICK_MS = 300_000  # NAB's 5-minute samples
START_MS = 1_399_999_800_000  # a multiple of the tick: samples fall on tick boundaries
VARIANTS = {
    "old": {"max_dt": "60s", "reestimate": "60s"},
    "default": {},
    "nocap": {"max_dt": float("inf")},
    "cap10": {"max_dt": 10},
    "re10": {"reestimate": 10},
    "nojump": {"jump_test": False},
}
TARGET_RATIO = 0.5  # evaluations ≤ 0.5 × ticks at moderate ε, with per-tick fidelity ≥ p


def run(kind: str, variant: str, c: float, ps: tuple[float, ...], ticks: int | None) -> list:
    ds = nab(kind, NAB, ticks)
    if ds is None:
        return []
    w = base_weights(ds)
    a_true = ds.xs @ w.T
    eps = c * increment_scale(a_true)
    names = [f"{kind.split('-')[1]}{i}.v" for i in range(ds.xs.shape[1])]
    mon = Monitor(names, standing_tick="5m", standing=VARIANTS[variant])
    queries = []  # (name, base, p)
    for b in range(w.shape[0]):
        cols = np.flatnonzero(w[b])
        for p in ps:
            q = f"q{b}_{round(p * 100)}"
            series = ", ".join(names[i] for i in cols)
            mon.add_query(f"QUERY {q} AS AVG({series}) WITHIN {eps!r} CONFIDENCE {p}")
            queries.append((q, b, p))
    hits = dict.fromkeys((q for q, _, _ in queries), 0)
    evals = dict.fromkeys(hits, 0)
    worst = 0.0
    start = time.perf_counter()
    for t in range(len(ds.xs)):
        now = START_MS + t * TICK_MS
        mon.ingest(names, [now] * len(names), ds.xs[t].tolist())
        answers = mon.answers("standing")
        for q, b, _ in queries:
            a = answers[q]
            if a.ts_ms == now:
                evals[q] += 1
                worst = max(worst, abs(a.value - a_true[t, b]))
            hits[q] += abs(a.value - a_true[t, b]) <= eps
    wall = time.perf_counter() - start
    jumps = float((np.abs(np.diff(a_true, axis=0)) > eps).sum() / a_true.size)
    least = sum(offline_min(a_true[:, b], eps) for b in range(w.shape[0])) / a_true.size
    rows = []
    for p in ps:
        mine = [q for q, _, qp in queries if qp == p]
        fid = np.array([hits[q] for q in mine]) / len(ds.xs)
        n_eval = sum(evals[q] for q in mine)
        rows.append({
            "set": kind, "variant": variant, "p": p, "c": c, "ticks": len(ds.xs),
            "queries": len(mine), "evaluations": n_eval,
            "ratio": n_eval / (len(mine) * len(ds.xs)),
            "fidelity": float(fid.mean()), "fidelity_min": float(fid.min()),
            "max_error": worst, "wall_s": wall, "jumps": jumps, "offline_min": least,
        })  # fmt: skip
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default="nab-cpu,nab-tweets")
    ap.add_argument("--variants", default="old,default,nocap,cap10,re10")
    ap.add_argument("--c", type=float, default=MODERATE_C, help="ε / s_A")
    ap.add_argument("--ps", type=parse_floats, default=PS)
    ap.add_argument("--ticks", type=int, default=None, help="first N samples of each set")
    ap.add_argument("--quick", action="store_true", help="1,000 ticks per set")
    ap.add_argument("--name", default="real_ticks")
    args = ap.parse_args()
    ticks = 1_000 if args.quick else args.ticks
    start = time.perf_counter()
    rows = []
    for kind in args.sets.split(","):
        for variant in args.variants.split(","):
            rows += run(kind, variant, args.c, tuple(args.ps), ticks)
    table = Table(title=f"standing AVGs, 5-minute ticks, ε = {args.c:g} s_A")
    for col in ("set", "variant", "p", "ticks", "evaluations", "evals / ticks", "per-tick "
                "fidelity % (worst query)", "target", "jumps > ε", "offline min", "max |error|",
                "wall s"):  # fmt: skip
        table.add_column(col, justify="left" if col in ("set", "variant") else "right")
    for r in rows:
        met = r["ratio"] <= TARGET_RATIO and r["fidelity_min"] >= r["p"]
        table.add_row(
            r["set"], r["variant"], f"{r['p']:g}", f"{r['ticks']:,}", f"{r['evaluations']:,}",
            f"{r['ratio']:.3f}", f"{100 * r['fidelity']:.2f} ({100 * r['fidelity_min']:.2f})",
            "met" if met else "MISSED", f"{r['jumps']:.3f}", f"{r['offline_min']:.3f}",
            f"{r['max_error']:.1e}", f"{r['wall_s']:.0f}",
        )  # fmt: skip
    Console(width=160).print(table)
    OUT.mkdir(exist_ok=True)
    with open(OUT / f"{args.name}.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {OUT / f'{args.name}.csv'}; {machine_line(start)}")


if __name__ == "__main__":
    main()
