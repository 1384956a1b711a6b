"""The three runs of ``bench_spark.py`` over the same files: tsmon's job on Spark, the plain
``groupBy(window).agg`` job in the same SparkSession, and the in-process reference
(:class:`tsmon.engine.batched.BatchedRuntime`) whose answers and events tsmon's must equal."""

from __future__ import annotations

import json
import math
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

from rich.console import Console
from rich.table import Table

from spark_disk import DiskCurve
from spark_workload import Workload
from tsmon.engine.batched import BatchedRuntime
from tsmon.spark.driver import JobQueries
from tsmon.spark.job import Job
from tsmon.spark.runtime import JobRunner
from tsmon.spark.sinks import BatchOutput

INPUT_DDL = "series STRING, source STRING, ts BIGINT, value DOUBLE"
KINDS = ("bounded", "topk", "standing")  # the answers cross-checked (watch queries: events)
#: A trigger's parts outside ``addBatch`` (ms, from ``durationMs``): the sources' new offsets,
#: planning the batch, and writing the offset log before it and the commit log after it.
OUTSIDE = {
    "latestOffset": ("latestOffset",),
    "queryPlanning": ("queryPlanning",),
    "commits": ("walCommit", "commitOffsets"),
}


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
    outside_ms: list[dict[str, int]] = field(default_factory=list)  # OUTSIDE's parts, by batch
    run_id: str = ""  # the query run's id (the group of its Spark jobs)
    records: list[Any] = field(default_factory=list)  # StreamingQueryProgress, by batch
    threads: dict[int, Any] = field(default_factory=dict)  # the JVM's threads after each batch

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

    def add(self, progress: Any) -> None:
        """Record Spark's figures of one batch (its id and durations)."""
        ms = progress.durationMs
        self.batch_ids.append(progress.batchId)
        self.duration_s.append(ms.get("triggerExecution", 0) / 1000)
        self.add_batch_s.append(ms.get("addBatch", 0) / 1000)
        self.outside_ms.append({k: sum(ms.get(n, 0) for n in v) for k, v in OUTSIDE.items()})

    def outside(self) -> dict[str, float]:
        """Median ms of each part of :data:`OUTSIDE` over the data batches after the first."""
        idx = self.data()[1:]
        return {
            k: statistics.median(self.outside_ms[i][k] for i in idx) if idx else float("nan")
            for k in OUTSIDE
        }


@dataclass
class Outputs:
    """What tsmon's job gave the driver: the events of every batch, the checkpoint's files
    after every batch, and the answers after the last."""

    disk: DiskCurve | None = None  # tsmon's run only
    sampler: Any = None  # a spark_split.ThreadSampler: the JVM's threads after each batch
    snapshots: dict[int, Any] = field(default_factory=dict)  # by batch id
    events: list[Any] = field(default_factory=list)
    answers: dict[str, Any] = field(default_factory=dict)

    def __call__(self, out: BatchOutput) -> None:
        if self.disk is not None:
            self.disk.measure(out.batch_id)
        if self.sampler is not None:
            self.snapshots[out.batch_id] = self.sampler.snapshot()
        self.events += out.events


def _progress(query: Any) -> list[Any]:
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


def run_tsmon(spark: Any, job: Job, w: Workload, sampler: Any = None) -> tuple[Run, Outputs]:
    """Run the job over every file; the coordinator step is timed by wrapping it; the JVM's
    threads are sampled at the end of each batch's ``foreachBatch`` (``sampler``)."""
    outputs = Outputs(DiskCurve(job.checkpoint), sampler)
    runner = JobRunner(job, spark=spark, callback=outputs)
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
    records = _progress(nodes)
    run_id = str(nodes.runId)
    runner.stop()
    outputs.answers = {kind: runner.answers(kind) for kind in KINDS}
    lines = (job.checkpoint / "progress.jsonl").read_text(encoding="utf-8").splitlines()
    ours = {p["batchId"]: p for p in map(json.loads, lines)}
    run = Run("tsmon", wall, run_id=run_id, records=records, threads=outputs.snapshots)
    for p in records:
        run.add(p)
        mine = ours.get(p.batchId, {})
        # tsmon's own count: Spark's numInputRows counts files (they are read as bytes)
        run.points.append(mine.get("inputRows", 0))
        run.to_driver.append(mine.get("rowsToCoordinator", 0))
        run.driver_s.append(mine.get("driverMs", 0.0) / 1000)
        run.coordinator_s.append(coordinator_s.get(p.batchId, 0.0))
    if sum(run.points) != w.total:
        sys.exit(f"tsmon read {sum(run.points):,} points, the files hold {w.total:,}")
    return run, outputs


def run_baseline(spark: Any, w: Workload, root: Path, window: str, sampler: Any = None) -> Run:
    """Exact per-series window statistics with built-in Structured Streaming operators; the
    JVM's threads are sampled at the end of each batch (``sampler``)."""
    from pyspark.sql import functions as F

    out_rows: dict[int, int] = {}
    threads: dict[int, Any] = {}

    def count_rows(df: Any, batch_id: int) -> None:
        out_rows[batch_id] = df.count()
        if sampler is not None:
            threads[batch_id] = sampler.snapshot()

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
    records = _progress(query)
    run_id = str(query.runId)
    query.stop()
    run = Run("baseline", wall, run_id=run_id, records=records, threads=threads)
    for p in records:
        run.add(p)
        run.points.append(_input_rows(p, w.directory))
        run.to_driver.append(out_rows.get(p.batchId, 0))
    if sum(run.points) != w.total:
        sys.exit(f"the baseline read {sum(run.points):,} points, the files hold {w.total:,}")
    return run


def run_reference(
    job: Job, w: Workload, source_of: dict[str, str], batches: int
) -> tuple[Outputs, float]:
    """The in-process runtime on the same batches (control one batch late, as on Spark, plus
    the control-only batches Spark ran after the last file); returns its events and answers,
    and its points/s on the data batches after the first."""
    queries = JobQueries.of(job)
    ref = BatchedRuntime.from_settings(queries.settings(job), source_of=source_of)
    queries.register(ref.coordinator, job)
    out = Outputs()
    seconds = 0.0
    for i in range(batches):
        points = w.points[i] if i < len(w.points) else []
        start = perf_counter()
        ref.run_batch(points)
        if 0 < i < len(w.points):
            seconds += perf_counter() - start
        out.events += [e["payload"] for e in ref.events()]
    out.answers = {kind: ref.answers(kind) for kind in KINDS}
    timed = w.total - len(w.points[0])
    return out, timed / seconds if seconds > 0 else float("nan")


def cross_check(ours: Outputs, ref: Outputs) -> tuple[bool, str]:
    """Whether tsmon's answers after the last batch and its events over the run equal the
    reference's, and what was compared."""
    counts = [f"{len(ref.answers[k])} {k}" for k in KINDS if ref.answers[k]]
    ok = ours.answers == ref.answers and ours.events == ref.events
    what = f"answers ({', '.join(counts)}) after the last batch and {len(ref.events):,} events"
    return ok, what


def _ms(values: list[float], i: int) -> str:
    """``values[i]`` as whole ms, '' past its end."""
    return f"{values[i]:.0f}" if i < len(values) else ""


def print_per_batch(console: Console, ours: Run, base: Run, stream_cpu: list[list[float]]) -> None:
    """Both jobs batch by batch, with the trigger's parts outside ``addBatch`` and the stream
    execution thread's CPU (ms per batch, ``stream_cpu``: tsmon's, the plain job's), then
    their medians over the data batches after the first."""
    per_batch = Table(
        title="per batch (s; points and rows; outside addBatch, ms: offsets = latestOffset, "
        "plan = queryPlanning, commits = walCommit + commitOffsets, stream CPU = the CPU of the "
        "stream execution thread from one batch's end to the next's)"
    )
    for column in (
        "batch", "tsmon points", "trigger", "addBatch", "foreachBatch", "coordinator",
        "rows to coord.", "offsets", "plan", "commits", "stream CPU", "baseline points",
        "trigger ", "output rows", "offsets ", "plan ", "commits ", "stream CPU ",
    ):  # fmt: skip
        per_batch.add_column(column, justify="right")
    for i in range(max(len(ours.batch_ids), len(base.batch_ids))):
        a = (
            [f"{ours.points[i]:,}", f"{ours.duration_s[i]:.2f}", f"{ours.add_batch_s[i]:.2f}",
             f"{ours.driver_s[i]:.2f}", f"{ours.coordinator_s[i]:.3f}", f"{ours.to_driver[i]:,}",
             *(str(v) for v in ours.outside_ms[i].values()), _ms(stream_cpu[0], i)]
            if i < len(ours.batch_ids) else [""] * 10
        )  # fmt: skip
        b = (
            [f"{base.points[i]:,}", f"{base.duration_s[i]:.2f}", f"{base.to_driver[i]:,}",
             *(str(v) for v in base.outside_ms[i].values()), _ms(stream_cpu[1], i)]
            if i < len(base.batch_ids) else [""] * 7
        )  # fmt: skip
        per_batch.add_row(str(i), *a, *b)
    width, console.width = console.width, 190  # the table's 18 columns
    console.print(per_batch)
    console.width = width
    for run, cpu, label in ((ours, stream_cpu[0], "tsmon"), (base, stream_cpu[1], "plain job")):
        parts = ", ".join(f"{k} {v:.0f}" for k, v in run.outside().items())
        idx = [i for i in run.data()[1:] if i < len(cpu)]
        thread = statistics.median(cpu[i] for i in idx) if idx else math.nan
        console.print(
            f"{label}, median ms of the data batches after the first: outside addBatch {parts}; "
            f"stream execution thread CPU {thread:.0f}"
        )
