"""The input files, the queries and the job of ``bench_spark.py``, by variant.

Input: seeded random walks (Gaussian steps of ``--step``) for ``--sources`` sources ×
``--series-per-source`` series (``s0001.m0`` of source ``s0001``), one point per series per
1 s tick, written as ``--files`` Parquet files of ``--ticks-per-file`` ticks; each file is one
micro-batch. Every variant runs ``--queries`` bounded aggregates, each the ``AVG`` of
``--terms`` series of distinct sources ``WITHIN --delta`` (a few walk steps); the variants add:

- ``avg``: nothing (the issue's workload);
- ``watch``: watch queries over every series, with time windows of a few minutes
  (:data:`WATCH`), on registers of ``--retention`` (1 h by default);
- ``topk-standing``: one ``TOP k`` query over the ``m0`` series of the sources matching
  ``--topk-of`` (object ``s0001``, metric ``m0``; a sliding window) and one standing aggregate
  (deferred evaluation) of the first ``AVG`` query's series. Top-k values are counts
  (negative points are ignored with a reason), so this variant's walks start at ``--level``
  1,000 instead of 0. The pattern takes 10 sources by default: every source whose object
  appeared before ``T`` held k objects gets its own Phase 3, one after the other, two
  micro-batches each, so a query over all 100 sources of ``--quick`` ran 198 control-only
  batches after the 4 files (see benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tsmon.spark.job import Job, parse_job

T0_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z
VARIANTS = ("avg", "watch", "topk-standing")

#: The watch variant's queries: each over every series, firing on a few per cent of points at
#: most (a walk leaving its recent range), so events stay far fewer than points.
WATCH = (
    "QUERY breakout ON * WHEN last > max(5m) - 0.5 AND last - mean(2m) > 15 "
    "EMIT series, last, mean(2m), max(5m)",
    "QUERY slump ON * WHEN mean(1m) < mean(5m) - 20 EMIT series, mean(1m), mean(5m), min(5m)",
    "QUERY swing ON *.m0, *.m1 WHEN max(3m) - min(3m) > 45 EMIT series, max(3m), min(3m)",
)
TOPK = "QUERY top AS TOP {k} OF {of} BY m0 OVER {over} WITHIN {eps:g}"
STANDING = "QUERY stand AS AVG({series}) WITHIN {eps:g} CONFIDENCE 0.9"


@dataclass
class Workload:
    """The input files and, per file, its points as ``(source, series, ts, value)`` tuples."""

    directory: Path
    files: list[Path]
    points: list[list[tuple[str, str, int, float]]]
    n_series: int

    @property
    def total(self) -> int:
        return sum(len(p) for p in self.points)


def add_flags(ap: argparse.ArgumentParser) -> None:
    """The workload's and the job's flags."""
    ap.add_argument("--variant", choices=VARIANTS, default="avg", help="queries besides AVG")
    ap.add_argument("--sources", type=int, default=1_000)
    ap.add_argument("--series-per-source", type=int, default=10)
    ap.add_argument("--files", type=int, default=8, help="input files = micro-batches")
    ap.add_argument("--ticks-per-file", type=int, default=30, help="1 s ticks of every series")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--terms", type=int, default=10, help="series per AVG query")
    ap.add_argument("--step", type=float, default=1.0, help="stddev of a walk step")
    ap.add_argument("--level", type=float, help="walks start at level + N(0, 10) "
                    "(default 0; 1000 for topk-standing)")  # fmt: skip
    ap.add_argument("--delta", type=float, default=5.0, help="δ of every query")
    ap.add_argument("--period", default="10s", help="filter period T")
    ap.add_argument("--k", type=int, default=3, help="topk-standing: k of the TOP k query")
    ap.add_argument("--topk-of", default="s000*", help="topk-standing: the objects (sources)")
    ap.add_argument("--over", default="5m", help="topk-standing: the TOP k query's window")
    ap.add_argument("--eps", type=float, default=100.0, help="topk-standing: ε of TOP k")
    ap.add_argument(
        "--retention", default="1h", help="[registers] retention: the points each node stores"
    )
    ap.add_argument("--buckets", type=int, help="[job] buckets (default: 8x shuffle partitions)")
    ap.add_argument("--max-future", default="1d", help='[job] max_future ("off": no check)')
    ap.add_argument("--seed", type=int, default=42)


def make_workload(args: argparse.Namespace, root: Path) -> Workload:
    """Seeded random walks written as Parquet files, one per micro-batch, oldest first."""
    rng = np.random.default_rng(args.seed)
    n_src, per = args.sources, args.series_per_source
    n_series = n_src * per
    source = np.repeat([f"s{i:04d}" for i in range(n_src)], per).astype(object)
    series = np.array([f"s{i:04d}.m{j}" for i in range(n_src) for j in range(per)], dtype=object)
    # unique timestamps within a source: the order of its points is the order of ts alone
    offset = (np.arange(n_src).repeat(per) % 90) * 10 + np.tile(np.arange(per), n_src)
    level = args.level if args.level is not None else 1000.0 * (args.variant == "topk-standing")
    value = level + rng.normal(0.0, 10.0, n_series)
    directory = root / "input"
    directory.mkdir(parents=True)
    files, points = [], []
    mtime = 1_700_000_000
    for f in range(args.files):
        k = args.ticks_per_file
        steps = rng.normal(0.0, args.step, (k, n_series))
        values = value + np.cumsum(steps, axis=0)
        value = values[-1]
        ticks = np.arange(f * k, (f + 1) * k, dtype=np.int64)
        ts = (T0_MS + ticks[:, None] * 1_000 + offset[None, :]).ravel()
        col_series, col_source = np.tile(series, k), np.tile(source, k)
        flat = values.ravel()
        table = pa.table(
            {
                "series": pa.array(col_series, pa.string()),
                "source": pa.array(col_source, pa.string()),
                "ts": pa.array(ts, pa.int64()),
                "value": pa.array(flat, pa.float64()),
            }
        )
        path = directory / f"part-{f:05d}.parquet"
        pq.write_table(table, path)
        os.utime(path, (mtime + f, mtime + f))  # the file source takes the oldest first
        files.append(path)
        columns = (col_source.tolist(), col_series.tolist(), ts.tolist(), flat.tolist())
        points.append(list(zip(*columns, strict=True)))
    return Workload(directory, files, points, n_series)


def make_queries(args: argparse.Namespace) -> tuple[str, dict[str, str]]:
    """The variant's statements; also series → source of every series a bounded or standing
    aggregate names."""
    rng = np.random.default_rng(args.seed + 1)
    lines, source_of, first = [], {}, ""
    for q in range(args.queries):
        sources = rng.choice(args.sources, size=min(args.terms, args.sources), replace=False)
        names = []
        for i in sorted(sources):
            name = f"s{i:04d}.m{rng.integers(args.series_per_source)}"
            names.append(name)
            source_of[name] = f"s{i:04d}"
        first = first or ", ".join(names)
        lines.append(f"QUERY q{q:03d} AS AVG({', '.join(names)}) WITHIN {args.delta:g}")
    if args.variant == "watch":
        lines += WATCH
    elif args.variant == "topk-standing":
        lines.append(TOPK.format(k=args.k, of=args.topk_of, over=args.over, eps=args.eps))
        lines.append(STANDING.format(series=first, eps=args.delta / 2))
    return "\n".join(lines), source_of


def describe(args: argparse.Namespace) -> str:
    """The variant's queries in words."""
    avg = f"{args.queries} queries AVG of {args.terms} series WITHIN {args.delta:g}"
    return {
        "avg": avg,
        "watch": f"{avg}, and {len(WATCH)} watch queries over every series (windows 1-5 min)",
        "topk-standing": f"{avg}, TOP {args.k} OF {args.topk_of} BY m0 OVER {args.over} WITHIN "
        f"{args.eps:g} and one standing AVG of q000's series WITHIN {args.delta / 2:g} "
        "CONFIDENCE 0.9",
    }[args.variant]


def make_job(args: argparse.Namespace, w: Workload, root: Path) -> tuple[Job, dict[str, str]]:
    """The job, as ``tsmon run`` would read it from a TOML file."""
    text, source_of = make_queries(args)
    raw = {
        "queries": text,
        "job": {
            "name": "bench",
            "checkpoint": str(root / "tsmon-ckpt"),
            "trigger": "1ms",
            "max_future": args.max_future,
            **({} if args.buckets is None else {"buckets": args.buckets}),
        },
        "input": {
            "kind": "files",
            "path": str(w.directory),
            "format": "parquet",
            "columns": {"series": "series", "source": "source", "ts": "ts", "value": "value"},
        },
        "filters": {"period": args.period, "shrink": 0.05, "growth": "capped"},
        "registers": {"retention": args.retention},
        # one standing evaluation tick per batch: the event time a file spans
        "standing": {"tick": f"{args.ticks_per_file}s"},
        "sinks": [{"kind": "callback"}],
    }
    return parse_job(raw, root, "bench job"), source_of
