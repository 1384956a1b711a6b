"""Throughput of tsmon's Spark runtime against a plain Structured Streaming window job.

Workload (the issue's): seeded random walks (Gaussian steps of ``--step``) for ``--sources``
sources × ``--series-per-source`` series (``s0001.m0`` of source ``s0001``), one point per
series per 1 s tick, written as ``--files`` Parquet files of ``--ticks-per-file`` ticks before
anything starts; the runtime reads with ``maxFilesPerTrigger`` 1, so each file is one
micro-batch. tsmon runs ``--queries`` bounded aggregates, each the ``AVG`` of ``--terms``
series of distinct sources ``WITHIN --delta`` (a few walk steps), with
:class:`tsmon.spark.runtime.JobRunner`. The baseline, in the same SparkSession and over the
same files, is what a user would write instead: the exact count/mean/min/max of every series
over 1-minute tumbling event-time windows, ``groupBy("series", window(...)).agg(...)`` with a
watermark and update mode, into a foreachBatch sink that only counts its rows (the rows that
would reach the driver if collected).

Batch durations are ``durationMs.triggerExecution`` from ``StreamingQuery.recentProgress``;
sustained points/s is the points of the data batches after the first (warm-up) one divided by
their summed durations; wall points/s is all points over the time from ``start()`` to the end
of ``processAllAvailable()``. tsmon's answers are cross-checked against the in-process
reference :class:`tsmon.engine.batched.BatchedRuntime` on the same batches, which also times
the protocol code alone on one core. ``python benchmarks/bench_spark.py --quick`` is a smoke
run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spark_split import (
    codegen_compiles,
    delta,
    jvm_threads,
    process_cpu,
    python_parts,
    spark_stages,
    split_rows,
)
from tsmon.engine.batched import BatchedRuntime
from tsmon.spark.driver import JobQueries
from tsmon.spark.job import Job, parse_job
from tsmon.spark.runtime import JobRunner

TARGET_PPS = 200_000
TARGET_BATCH_S = 2.0
TARGET_ROW_RATIO = 10.0
T0_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z
INPUT_DDL = "series STRING, source STRING, ts BIGINT, value DOUBLE"


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


@dataclass
class Run:
    """What one streaming query did, batch by batch (from ``recentProgress``)."""

    name: str
    wall_s: float
    batch_ids: list[int] = field(default_factory=list)
    duration_s: list[float] = field(default_factory=list)  # triggerExecution
    add_batch_s: list[float] = field(default_factory=list)
    points: list[int] = field(default_factory=list)  # rows read from the input files
    to_driver: list[int] = field(default_factory=list)  # rows reaching the driver
    driver_s: list[float] = field(default_factory=list)  # tsmon: foreachBatch (collect + step)
    coordinator_s: list[float] = field(default_factory=list)  # tsmon: CoordinatorNode step
    run_id: str = ""  # the query run's id (the group of its Spark jobs)
    records: list[Any] = field(default_factory=list)  # StreamingQueryProgress, by batch

    def data(self) -> list[int]:
        """Indices of the batches that read input points."""
        return [i for i, n in enumerate(self.points) if n > 0]

    def sustained(self, skip_first: bool = True) -> float:
        """Points over summed durations of the data batches (after the warm-up one)."""
        idx = self.data()[1:] if skip_first else self.data()
        seconds = sum(self.duration_s[i] for i in idx)
        return sum(self.points[i] for i in idx) / seconds if seconds > 0 else float("nan")

    def durations(self) -> list[float]:
        """Durations of the data batches after the warm-up one."""
        return [self.duration_s[i] for i in self.data()[1:]]


def make_workload(args: argparse.Namespace, root: Path) -> Workload:
    """Seeded random walks written as Parquet files, one per micro-batch, oldest first."""
    rng = np.random.default_rng(args.seed)
    n_src, per = args.sources, args.series_per_source
    n_series = n_src * per
    source = np.repeat([f"s{i:04d}" for i in range(n_src)], per).astype(object)
    series = np.array([f"s{i:04d}.m{j}" for i in range(n_src) for j in range(per)], dtype=object)
    # unique timestamps within a source: the order of its points is the order of ts alone
    offset = (np.arange(n_src).repeat(per) % 90) * 10 + np.tile(np.arange(per), n_src)
    value = rng.normal(0.0, 10.0, n_series)
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
    """``AVG`` of ``--terms`` series of distinct random sources per query; also series → source
    of every queried series."""
    rng = np.random.default_rng(args.seed + 1)
    lines, source_of = [], {}
    for q in range(args.queries):
        sources = rng.choice(args.sources, size=min(args.terms, args.sources), replace=False)
        names = []
        for i in sorted(sources):
            name = f"s{i:04d}.m{rng.integers(args.series_per_source)}"
            names.append(name)
            source_of[name] = f"s{i:04d}"
        lines.append(f"QUERY q{q:03d} AS AVG({', '.join(names)}) WITHIN {args.delta:g}")
    return "\n".join(lines), source_of


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
        "sinks": [{"kind": "callback"}],
    }
    return parse_job(raw, root, "bench job"), source_of


def _progress(query: Any, input_dir: Path) -> list[Any]:
    """The query's progress records in batch order, checked to be complete."""
    records = sorted(query.recentProgress, key=lambda p: p.batchId)
    ids = [p.batchId for p in records]
    if ids != list(range(len(ids))):
        sys.exit(f"progress records are missing: batch ids {ids}")
    return records


def _input_rows(progress: Any, input_dir: Path) -> int:
    """Rows the batch read from the input directory (not from the control files)."""
    name = input_dir.name
    return sum(
        s.numInputRows for s in progress.sources if s.description.rstrip("]/").endswith(name)
    )


def run_tsmon(spark: Any, job: Job, w: Workload) -> tuple[Run, JobRunner]:
    """Run the job over every file; the coordinator step is timed by wrapping it."""
    runner = JobRunner(job, spark=spark)
    coordinator_s: dict[int, float] = {}
    step = runner.coordinator.step

    def timed_step(batch_id: int, rows: list[dict], prepare: Any) -> Any:
        start = perf_counter()
        out = step(batch_id, rows, prepare)
        coordinator_s[batch_id] = perf_counter() - start
        return out

    runner.coordinator.step = timed_step  # type: ignore[method-assign]
    start = perf_counter()
    runner.start()
    runner.process_all_available()
    wall = perf_counter() - start
    nodes = runner.node_query
    records = _progress(nodes, w.directory)
    run_id = str(nodes.runId)
    runner.stop()
    lines = (job.checkpoint / "progress.jsonl").read_text(encoding="utf-8").splitlines()
    ours = {p["batchId"]: p for p in map(json.loads, lines)}
    run = Run("tsmon", wall, run_id=run_id, records=records)
    for p in records:
        run.batch_ids.append(p.batchId)
        run.duration_s.append(p.durationMs.get("triggerExecution", 0) / 1000)
        run.add_batch_s.append(p.durationMs.get("addBatch", 0) / 1000)
        mine = ours.get(p.batchId, {})
        # tsmon's own count: Spark's numInputRows counts files (they are read as bytes)
        run.points.append(mine.get("inputRows", 0))
        run.to_driver.append(mine.get("rowsToCoordinator", 0))
        run.driver_s.append(mine.get("driverMs", 0.0) / 1000)
        run.coordinator_s.append(coordinator_s.get(p.batchId, 0.0))
    if sum(run.points) != w.total:
        sys.exit(f"tsmon read {sum(run.points):,} points, the files hold {w.total:,}")
    return run, runner


def run_baseline(spark: Any, w: Workload, root: Path, window: str) -> Run:
    """Exact per-series window statistics with built-in Structured Streaming operators."""
    from pyspark.sql import functions as F

    out_rows: dict[int, int] = {}

    def count_rows(df: Any, batch_id: int) -> None:
        out_rows[batch_id] = df.count()

    points = (
        spark.readStream.schema(INPUT_DDL)
        .option("maxFilesPerTrigger", 1)
        .parquet(str(w.directory))
        .withColumn("ts_timestamp", F.timestamp_millis("ts"))
    )
    stats = (
        points.withWatermark("ts_timestamp", window)
        .groupBy("series", F.window("ts_timestamp", window))
        .agg(
            F.count("value").alias("n"),
            F.avg("value").alias("mean"),
            F.min("value").alias("min"),
            F.max("value").alias("max"),
        )
    )
    start = perf_counter()
    query = (
        stats.writeStream.outputMode("update")
        .foreachBatch(count_rows)
        .option("checkpointLocation", str(root / "baseline-ckpt"))
        .trigger(processingTime="1 millisecond")
        .start()
    )
    query.processAllAvailable()
    wall = perf_counter() - start
    records = _progress(query, w.directory)
    run_id = str(query.runId)
    query.stop()
    run = Run("baseline", wall, run_id=run_id, records=records)
    for p in records:
        run.batch_ids.append(p.batchId)
        run.duration_s.append(p.durationMs.get("triggerExecution", 0) / 1000)
        run.add_batch_s.append(p.durationMs.get("addBatch", 0) / 1000)
        run.points.append(_input_rows(p, w.directory))
        run.to_driver.append(out_rows.get(p.batchId, 0))
    if sum(run.points) != w.total:
        sys.exit(f"the baseline read {sum(run.points):,} points, the files hold {w.total:,}")
    return run


def run_reference(
    job: Job, w: Workload, source_of: dict[str, str], batches: int
) -> tuple[dict[str, Any], float]:
    """The in-process runtime on the same batches (control one batch late, as on Spark, plus
    the control-only batches Spark ran after the last file); returns its answers and points/s
    on the data batches after the first."""
    queries = JobQueries.of(job)
    ref = BatchedRuntime.from_settings(queries.settings(job), source_of=source_of)
    queries.register(ref.coordinator, job)
    seconds = 0.0
    for i, points in enumerate(w.points):
        start = perf_counter()
        ref.run_batch(points)
        if i > 0:
            seconds += perf_counter() - start
    for _ in range(batches - len(w.points)):
        ref.run_batch([])
    timed = w.total - len(w.points[0])
    return ref.answers(), timed / seconds if seconds > 0 else float("nan")


def _print_split(
    console: Console,
    ours: Run,
    base: Run,
    job: Job,
    cpu: dict[str, float],
    base_cpu: dict[str, float],
) -> float:
    """The CPU µs per point of the tsmon run, part by part (:mod:`spark_split`), next to the
    baseline's; returns the ratio of the baseline's CPU per point to tsmon's."""
    from tsmon.spark.session import spark_session

    spark = spark_session()  # the running one
    n, b_n = sum(ours.points), sum(base.points)
    lines = (job.checkpoint / "progress.jsonl").read_text(encoding="utf-8").splitlines()
    rows = split_rows(
        {k: v * 1e6 / n for k, v in cpu.items()},
        spark_stages(spark, ours.run_id, set(ours.batch_ids)),
        python_parts([json.loads(x) for x in lines], set(ours.batch_ids)),
        sum(ours.coordinator_s),
        n,
    )
    table = Table(title=f"CPU µs per point, all {len(ours.batch_ids)} batches ({n:,} points)")
    for column in ("part", "µs/point", "measured by"):
        table.add_column(column, justify="right" if column == "µs/point" else "left")
    for part, value, how in rows:
        table.add_row(part, f"{value:.2f}", how)
    total = sum(cpu.values()) * 1e6 / n
    table.add_row("tsmon: all three processes", f"{total:.2f}", "/proc CPU")
    b_stages = spark_stages(spark, base.run_id, set(base.batch_ids))
    b_total = sum(base_cpu.values()) * 1e6 / b_n
    for kind, t in sorted(b_stages.items()):
        what = {"read": "read stage", "host": "aggregation stages"}[kind]
        table.add_row(f"baseline: {what} tasks", f"{t.jvm_cpu_ms * 1e3 / b_n:.2f}",
                      "executorCpuTime")  # fmt: skip
    table.add_row(
        "baseline: all processes",
        f"{b_total:.2f}",
        ", ".join(f"{k} {v * 1e6 / b_n:.2f}" for k, v in base_cpu.items()),
    )
    console.print(table)
    state: dict[str, float] = {}
    for p in ours.records:
        for op in p.stateOperators:
            for k, v in {**op.customMetrics, "commitTimeMs": op.commitTimeMs}.items():
                if k.endswith(("LatencyMs", "TimeMs")) or "Compaction" in k:
                    state[k] = state.get(k, 0) + v
    console.print(
        "tsmon's state store, summed over the batches: "
        + ", ".join(f"{k} {v:,.0f}" for k, v in sorted(state.items()) if v)
    )
    return b_total / total


def tree_bytes(path: Path) -> int:
    """Bytes of the files under ``path``."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def main(argv: list[str] | None = None) -> None:
    """Parse flags, write the files, run tsmon, the baseline and the reference, print figures."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sources", type=int, default=1_000)
    ap.add_argument("--series-per-source", type=int, default=10)
    ap.add_argument("--files", type=int, default=8, help="input files = micro-batches")
    ap.add_argument("--ticks-per-file", type=int, default=30, help="1 s ticks of every series")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--terms", type=int, default=10, help="series per AVG query")
    ap.add_argument("--step", type=float, default=1.0, help="stddev of a walk step")
    ap.add_argument("--delta", type=float, default=5.0, help="δ of every query")
    ap.add_argument("--period", default="10s", help="filter period T")
    ap.add_argument("--window", default="1 minute", help="the baseline's tumbling window")
    ap.add_argument(
        "--retention", default="1h", help="[registers] retention: the points each node stores"
    )
    ap.add_argument("--buckets", type=int, help="[job] buckets (default: 8x shuffle partitions)")
    ap.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE",
        help="a Spark setting for the session (repeatable), over tsmon's own",
    )  # fmt: skip
    ap.add_argument("--max-future", default="1d", help='[job] max_future ("off": no check)')
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--out", type=Path, help="work directory (default: a temp dir, removed)")
    ap.add_argument("--no-check", action="store_true", help="skip the in-process reference")
    ap.add_argument("--quick", action="store_true", help="100 sources, 4 files (smoke run)")
    args = ap.parse_args(argv)
    if args.quick:
        vars(args).update(sources=100, files=4, ticks_per_file=20, queries=10)
    console = Console(width=120)
    root = Path(tempfile.mkdtemp(prefix="tsmon-bench-spark-")) if args.out is None else args.out
    if args.out is not None:
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
    try:
        _bench(args, root, console)
    finally:
        if args.out is None:
            shutil.rmtree(root, ignore_errors=True)


def _bench(args: argparse.Namespace, root: Path, console: Console) -> None:
    from tsmon.spark.session import spark_session

    start = perf_counter()
    w = make_workload(args, root)
    job, source_of = make_job(args, w, root)
    per_file = len(w.points[0])
    console.print(
        f"workload: {args.sources:,} sources x {args.series_per_source} series = "
        f"{w.n_series:,} series; {args.files} files (= batches) x {per_file:,} points = "
        f"{w.total:,} points ({args.ticks_per_file} s of event time per batch); "
        f"{args.queries} queries AVG of {args.terms} series WITHIN {args.delta:g} "
        f"(walk step {args.step:g}, {len(source_of):,} queried series); registers keep "
        f"{args.retention}; "
        f"written in {perf_counter() - start:.1f} s"
    )
    start = perf_counter()
    spark = spark_session(
        "local[2]",
        "tsmon-bench",
        {
            "spark.sql.streaming.numRecentProgressUpdates": "10000",
            # the status REST API (stage metrics for the split); a free port from 4050 on
            "spark.ui.enabled": "true",
            "spark.ui.port": "4050",
            "spark.ui.retainedJobs": "100000",
            "spark.ui.retainedStages": "100000",
            **dict(kv.split("=", 1) for kv in args.conf),
        },
    )
    console.print(f"SparkSession up in {perf_counter() - start:.1f} s (local[2])")

    cpu_start, threads_start = process_cpu(spark), jvm_threads(spark)
    compiles_start = codegen_compiles(spark)
    ours, runner = run_tsmon(spark, job, w)
    cpu_tsmon = process_cpu(spark)
    threads = delta(jvm_threads(spark), threads_start)
    compiles = codegen_compiles(spark) - compiles_start
    console.print(
        f"tsmon: {len(ours.batch_ids)} batches in {ours.wall_s:.1f} s wall; Spark compiled "
        f"{compiles} generated classes (a plan whose code differs per batch adds some each batch)"
    )
    base = run_baseline(spark, w, root, args.window)
    cpu_base = delta(process_cpu(spark), cpu_tsmon)
    console.print(f"baseline: {len(base.batch_ids)} batches in {base.wall_s:.1f} s wall")

    check_ok = True
    ref_pps = float("nan")
    if not args.no_check:
        answers, ref_pps = run_reference(job, w, source_of, len(ours.batch_ids))
        check_ok = answers == runner.answers()
        same = "equal" if check_ok else "[red]DIFFER[/]"
        console.print(
            f"cross-check: the {len(answers)} answers after the last batch and those of the "
            f"in-process BatchedRuntime on the same batches are {same}"
        )

    table = Table(title=f"{w.total:,} points in {args.files} batches; 'sustained' skips batch 0")
    columns = (
        "job", "sustained pts/s", "incl. warm-up", "wall pts/s", "p50 batch s", "p95 batch s",
        "max batch s", "rows to driver", "points ÷ rows",
    )  # fmt: skip
    for column in columns:
        table.add_column(column, justify="left" if column == "job" else "right")
    for run, label in ((ours, "tsmon (applyInPandasWithState)"), (base, "groupBy(window).agg")):
        d = run.durations()
        rows = sum(run.to_driver)
        table.add_row(
            label,
            f"{run.sustained():,.0f}",
            f"{run.sustained(skip_first=False):,.0f}",
            f"{w.total / run.wall_s:,.0f}",
            f"{statistics.median(d):.2f}",
            f"{_pct(d, 95):.2f}",
            f"{max(d):.2f}",
            f"{rows:,}",
            f"{w.total / rows:,.1f}" if rows else "inf",
        )
    console.print(table)

    per_batch = Table(title="per batch (s; points and rows)")
    for column in (
        "batch", "tsmon points", "trigger", "addBatch", "foreachBatch", "coordinator",
        "rows to coord.", "baseline points", "trigger ", "output rows",
    ):  # fmt: skip
        per_batch.add_column(column, justify="right")
    for i in range(max(len(ours.batch_ids), len(base.batch_ids))):
        a = (
            [f"{ours.points[i]:,}", f"{ours.duration_s[i]:.2f}", f"{ours.add_batch_s[i]:.2f}",
             f"{ours.driver_s[i]:.2f}", f"{ours.coordinator_s[i]:.3f}", f"{ours.to_driver[i]:,}"]
            if i < len(ours.batch_ids) else [""] * 6
        )  # fmt: skip
        b = (
            [f"{base.points[i]:,}", f"{base.duration_s[i]:.2f}", f"{base.to_driver[i]:,}"]
            if i < len(base.batch_ids)
            else [""] * 3
        )
        per_batch.add_row(str(i), *a, *b)
    console.print(per_batch)

    idx = ours.data()[1:]
    if idx:
        n = sum(ours.points[i] for i in idx)
        trig = sum(ours.duration_s[i] for i in idx)
        fb = sum(ours.driver_s[i] for i in idx)
        co = sum(ours.coordinator_s[i] for i in idx)
        console.print(
            f"tsmon, where the time of the data batches after warm-up goes "
            f"({n:,} points, {trig:.1f} s): foreachBatch {fb / trig:.0%} of it "
            f"(Spark executing read → normalise → shuffle → Python applyInPandasWithState → "
            f"collect, plus the driver), of which the coordinator step {co / trig:.1%}; "
            f"outside foreachBatch (planning, offsets, commits) {(trig - fb) / trig:.0%}; "
            f"{2 * trig / n * 1e6:.1f} core-µs per point on 2 cores"
        )
    cpu_ratio = _print_split(console, ours, base, job, delta(cpu_tsmon, cpu_start), cpu_base)
    top = sorted(threads.items(), key=lambda kv: -kv[1])[:8]
    console.print(
        "tsmon's JVM threads, CPU µs per point by thread name (live threads): "
        + ", ".join(f"{name!r} {s * 1e6 / w.total:.2f}" for name, s in top)
    )
    ckpt, base_ckpt = tree_bytes(job.checkpoint), tree_bytes(root / "baseline-ckpt")
    console.print(
        f"checkpoint after the run: tsmon {ckpt / 1e6:,.1f} MB (state, offsets, control, "
        f"coordinator snapshots), baseline {base_ckpt / 1e6:,.1f} MB; input "
        f"{tree_bytes(w.directory) / 1e6:,.1f} MB of Parquet"
    )
    if not args.no_check:
        console.print(
            f"in-process reference (BatchedRuntime: every node and the coordinator, one core, "
            f"no Spark): {ref_pps:,.0f} points/s = {1e6 / ref_pps:.1f} µs per point"
        )

    pps = ours.sustained()
    d = ours.durations()
    p50, p95 = statistics.median(d), _pct(d, 95)
    rows = sum(ours.to_driver)
    row_ratio = w.total / rows if rows else float("inf")
    base_pps = base.sustained()
    ratio = pps / base_pps
    for ok, what in (
        (pps >= TARGET_PPS, f">= {TARGET_PPS:,} points/s sustained: {pps:,.0f}"),
        (p95 <= TARGET_BATCH_S, f"batches <= {TARGET_BATCH_S:g} s: p95 {p95:.2f} s, "
                                f"max {max(d):.2f} s"),
        (row_ratio >= TARGET_ROW_RATIO, f">= {TARGET_ROW_RATIO:g}x fewer rows to the driver "
                                        f"than points: {row_ratio:,.1f}x"),
    ):  # fmt: skip
        console.print(f"target {what}: " + ("[green]met[/]" if ok else "[red]MISSED[/]"))
    console.print(
        f"CPU per point (all processes, whole runs; holds under load, unlike wall time): "
        f"the baseline's is {cpu_ratio:.3f}x tsmon's"
    )
    slower = f"{1 / ratio:.1f}x slower than" if ratio < 1 else f"{ratio:.1f}x faster than"
    console.print(
        f"tsmon is {slower} the plain groupBy(window).agg job "
        f"({pps:,.0f} vs {base_pps:,.0f} points/s sustained); the baseline shipped "
        f"{sum(base.to_driver):,} rows (exact per-series window statistics, not query answers)"
    )
    import pyspark

    console.print(
        f"machine: {os.cpu_count()} cores (os.cpu_count), {platform.machine()}, Python "
        f"{platform.python_version()}, pyspark {pyspark.__version__}, local[2]"
    )
    print(
        f"RESULT spark points_per_s={pps:.0f} p50_batch_s={p50:.2f} p95_batch_s={p95:.2f} "
        f"rows_to_driver_ratio={row_ratio:.1f} baseline_points_per_s={base_pps:.0f} "
        f"ratio_to_baseline={ratio:.3f} cpu_ratio_to_baseline={cpu_ratio:.3f} "
        f"checkpoint_mb={ckpt / 1e6:.1f}"
    )
    if not check_ok:
        console.print("[red bold]cross-check: FAILED[/]")
        sys.exit(1)
    print(f"ratio to plain aggregation: {ratio:.2f}")


if __name__ == "__main__":
    main()
