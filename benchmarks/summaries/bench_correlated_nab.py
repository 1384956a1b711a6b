"""Correlated COUNT{x > AVG} on the real NAB series: focused histogram vs trivial vs checked.

For every series of ``/work/shared/data/nab/real*/`` (AWS CloudWatch metrics, ad-exchange
prices, tweet counts) and every scope (landmark, and the last ``--windows`` points), the
script prints the RMSE against the exact two-pass answer (§2.3 of Gehrke, Korn & Srivastava)
of:

- ``histogram``: :class:`~tsmon.core.correlated.CorrelatedAggregate`, 10 buckets, piecemeal
  (the paper's algorithm alone);
- ``trivial``: half the scope, the answer that needs no summary;
- ``checked``: :class:`~tsmon.core.correlated_check.CheckedAggregate`, the same histogram plus
  a check sample of 512 tuples, answering with the candidate of least tracked error (what
  ``COUNT(x > AVG)`` queries of the engine use);
- ``sample``: the check sample's own estimate, for reference;

with ``mean exact`` (the mean exact answer, for scale), the share of steps ``checked``
answered from each candidate and the time per tuple of both summaries. Target (issue 17):
``checked`` no worse than ``trivial`` on every series and scope.

``python benchmarks/summaries/bench_correlated_nab.py --quick`` runs 4 series, the first 3,000
points each. CSV goes to ``benchmarks/summaries/out/correlated_nab.csv``.
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import numpy as np

from tsmon.core.correlated import CorrelatedAggregate, CorrelatedQuery
from tsmon.core.correlated_check import CANDIDATES, CheckedAggregate
from tsmon.sim.correlated import exact_correlated, rmse

OUT = Path(__file__).resolve().parent / "out"
NAB = Path("/work/shared/data/nab")
QUERY = CorrelatedQuery("avg", "count")


def run(x: np.ndarray, window: int | None) -> dict[str, object]:
    exact = exact_correlated(QUERY, x, window=window)
    t0 = time.perf_counter()
    hist = CorrelatedAggregate(QUERY, 10, window=window).extend(x)
    t1 = time.perf_counter()
    agg = CheckedAggregate(QUERY, 10, window=window)
    checked, sampled, chosen = np.empty(x.size), np.empty(x.size), []
    for i, v in enumerate(x.tolist()):
        checked[i] = agg.update(v).get()
        chosen.append(agg.chosen)
        sampled[i] = agg._candidates()[0]["sample"] if agg.hist is not None else checked[i]
    t2 = time.perf_counter()
    scope = np.minimum(np.arange(1, x.size + 1), window or x.size)
    row: dict[str, object] = {"n": x.size, "mean_exact": round(float(exact.mean()), 1)}
    for name, est in (("histogram", hist), ("trivial", scope / 2), ("checked", checked)):
        row[f"rmse_{name}"] = round(rmse(est, exact), 2)
    row["rmse_sample"] = round(rmse(sampled, exact), 2)
    row |= {f"share_{c}": round(chosen.count(c) / x.size, 3) for c in CANDIDATES}
    row["us_per_tuple_histogram"] = round((t1 - t0) / x.size * 1e6, 1)
    row["us_per_tuple_checked"] = round((t2 - t1) / x.size * 1e6, 1)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 series, 3,000 points each")
    parser.add_argument("--windows", type=int, nargs="*", default=[500, 2000])
    args = parser.parse_args()
    files = sorted(NAB.glob("real*/*.csv"))
    if not files:
        raise SystemExit(f"no NAB series under {NAB}/real*/: nothing to measure")
    if args.quick:
        files = files[:: max(1, len(files) // 4)][:4]
    rows = []
    for f in files:
        x = np.loadtxt(f, delimiter=",", skiprows=1, usecols=1, dtype=np.float64)
        x = x[:3000] if args.quick else x
        for window in [None, *args.windows]:
            row = {"series": f"{f.parent.name}/{f.stem}", "scope": window or "landmark"}
            row |= run(x, window)
            rows.append(row)
            print(
                f"{row['series'][:44]:44} {row['scope']!s:>8} n={row['n']:6} "
                f"exact~{row['mean_exact']:8} RMSE histogram {row['rmse_histogram']:8} "
                f"trivial {row['rmse_trivial']:8} checked {row['rmse_checked']:8} "
                f"(sample {row['rmse_sample']:8}; answered by hist/triv/sample "
                f"{row['share_histogram']:.0%}/{row['share_trivial']:.0%}/"
                f"{row['share_sample']:.0%})",
                flush=True,
            )
    OUT.mkdir(parents=True, exist_ok=True)
    with (OUT / "correlated_nab.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(
        "\n| scope | series | histogram worse than trivial | checked worse than trivial "
        "| median checked/trivial | median checked/histogram | us/tuple hist → checked |"
    )
    print("|---|---|---|---|---|---|---|")
    for scope in ["landmark", *args.windows]:
        sel = [r for r in rows if r["scope"] == scope]
        triv = np.array([max(float(r["rmse_trivial"]), 1e-9) for r in sel])
        hist = np.array([max(float(r["rmse_histogram"]), 1e-9) for r in sel])
        chk = np.array([float(r["rmse_checked"]) for r in sel])
        speed = (
            np.median([r["us_per_tuple_histogram"] for r in sel]),
            np.median([r["us_per_tuple_checked"] for r in sel]),
        )
        print(
            f"| {scope} | {len(sel)} | {int((hist > triv).sum())} | {int((chk > triv).sum())} "
            f"| {np.median(chk / triv):.3f} | {np.median(chk / hist):.3f} "
            f"| {speed[0]:.0f} → {speed[1]:.0f} |"
        )


if __name__ == "__main__":
    main()
