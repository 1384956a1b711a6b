"""Throughput of tsmon's Spark runtime against a plain Structured Streaming window job.

Workload (the issue's; :mod:`spark_workload`): seeded random walks of ``--sources`` sources ×
``--series-per-source`` series, one point per series per 1 s tick, written as ``--files``
Parquet files of ``--ticks-per-file`` ticks before anything starts; the runtime reads with
``maxFilesPerTrigger`` 1, so each file is one micro-batch. tsmon runs ``--queries`` bounded
``AVG`` aggregates ``WITHIN --delta``, and with ``--variant watch`` also watch queries over
every series, with ``--variant topk-standing`` a ``TOP k`` and a standing query, with
:class:`tsmon.spark.runtime.JobRunner`. The baseline, in the same SparkSession and over the
same files, is what a user would write instead: the exact count/mean/min/max of every series
over 1-minute tumbling event-time windows, ``groupBy("series", window(...)).agg(...)`` with a
watermark and update mode, into a foreachBatch sink that only counts its rows (the rows that
would reach the driver if collected).

Batch durations are ``durationMs.triggerExecution`` from ``StreamingQuery.recentProgress``;
sustained points/s is the points of the data batches after the first (warm-up) one divided by
their summed durations; wall points/s is all points over the time from ``start()`` to the end
of ``processAllAvailable()``. tsmon's answers (bounded, top-k, standing) after the last batch
and its events over the run are cross-checked against the in-process reference
:class:`tsmon.engine.batched.BatchedRuntime` on the same batches, which also times the
protocol code alone on one core. The checkpoint's growth per batch is :mod:`spark_disk`'s.
``python benchmarks/bench_spark.py --quick`` is a smoke run.
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
from pathlib import Path
from time import perf_counter

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spark_disk import report as report_disk
from spark_runs import (
    Outputs,
    Run,
    cross_check,
    print_per_batch,
    run_baseline,
    run_reference,
    run_tsmon,
)
from spark_split import (
    STREAM_THREAD,
    ThreadSampler,
    by_batch,
    codegen_compiles,
    delta,
    families,
    per_batch_line,
    process_cpu,
    python_parts,
    spark_stages,
    split_rows,
    thread_rows,
    warm,
)
from spark_workload import add_flags, describe, make_job, make_workload
from tsmon.spark.job import Job

TARGET_PPS = 200_000
TARGET_BATCH_S = 2.0
TARGET_ROW_RATIO = 10.0


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


def _print_threads(console: Console, runs: list[tuple[dict[str, float], float, int]]) -> None:
    """The JVM's CPU µs per point by thread family (:mod:`spark_split`), tsmon's and the plain
    job's (which runs second, in a JVM tsmon's run warmed up), each over its whole run and
    over its data batches from batch 2 on (once the JIT has warmed up)."""
    table = Table(title="Where the JVM's CPU goes: µs per point by thread family (/proc)")
    for column in ("thread family", "tsmon", "tsmon, batches 2+", "plain job", "plain, 2+"):
        table.add_column(column, justify="left" if column == "thread family" else "right")
    for name, values in thread_rows(runs):
        table.add_row(name, *(f"{v:.2f}" for v in values))
    console.print(table)


def _print_answers(console: Console, outputs: Outputs) -> None:
    """What the variant's queries gave: events by query, and the top-k and standing answers."""
    by_query: dict[str, int] = {}
    for event in outputs.events:
        by_query[event["query"]] = by_query.get(event["query"], 0) + 1
    if by_query:
        console.print(
            f"events: {len(outputs.events):,} ("
            + ", ".join(f"{q} {n:,}" for q, n in sorted(by_query.items()))
            + ")"
        )
    for a in outputs.answers["topk"].values():
        console.print(
            f"top-k {a.name}: {len(a.members)} of k={a.k} members {', '.join(a.members)}; "
            f"epoch {a.epoch}, settled {a.settled}, {a.nodes} nodes, {a.messages:,} messages"
        )
    for a in outputs.answers["standing"].values():
        console.print(
            f"standing {a.name}: {a.value:.3f} at ts {a.ts_ms} (ε {a.eps:g}), next due at "
            f"{a.next_due_ms:.0f}, interrupted {a.interrupted}"
        )


def tree_bytes(path: Path) -> int:
    """Bytes of the files under ``path``."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def main(argv: list[str] | None = None) -> None:
    """Parse flags, write the files, run tsmon, the baseline and the reference, print figures."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_flags(ap)
    ap.add_argument("--window", default="1 minute", help="the baseline's tumbling window")
    ap.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE",
        help="a Spark setting for the session (repeatable), over tsmon's own",
    )  # fmt: skip
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
        f"workload ({args.variant}): {args.sources:,} sources x {args.series_per_source} "
        f"series = {w.n_series:,} series; {args.files} files (= batches) x {per_file:,} points "
        f"= {w.total:,} points ({args.ticks_per_file} s of event time per batch); "
        f"{describe(args)} (walk step {args.step:g}, {len(source_of):,} series in "
        f"aggregates); registers keep {args.retention}; "
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

    sampler = ThreadSampler(spark.sparkContext._gateway.proc.pid)
    cpu_start, threads_start = process_cpu(spark), sampler.snapshot()
    compiles_start = codegen_compiles(spark)
    ours, outputs = run_tsmon(spark, job, w, sampler)
    cpu_tsmon, threads_tsmon = process_cpu(spark), sampler.snapshot()
    compiles = codegen_compiles(spark) - compiles_start
    console.print(
        f"tsmon: {len(ours.batch_ids)} batches in {ours.wall_s:.1f} s wall; Spark compiled "
        f"{compiles} generated classes (a plan whose code differs per batch adds some each batch)"
    )
    base = run_baseline(spark, w, root, args.window, sampler)
    cpu_base, threads_base = delta(process_cpu(spark), cpu_tsmon), sampler.snapshot()
    sampler.close()
    jvm_batches = by_batch(threads_start, ours.threads)
    console.print(f"baseline: {len(base.batch_ids)} batches in {base.wall_s:.1f} s wall")

    check_ok = True
    ref_pps = float("nan")
    if not args.no_check:
        ref, ref_pps = run_reference(job, w, source_of, len(ours.batch_ids))
        check_ok, what = cross_check(outputs, ref)
        same = "equal" if check_ok else "[red]DIFFER[/]"
        console.print(
            f"cross-check: tsmon's {what} and those of the in-process BatchedRuntime on the "
            f"same batches are {same}"
        )
    _print_answers(console, outputs)

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

    stream_cpu = [
        [b.get(STREAM_THREAD, 0.0) * 1e3 for b in batches]
        for batches in (jvm_batches, by_batch(threads_tsmon, base.threads))
    ]
    print_per_batch(console, ours, base, stream_cpu)

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
    _print_threads(
        console,
        [
            (families(threads_tsmon, threads_start), cpu_tsmon["jvm"] - cpu_start["jvm"], w.total),
            warm(jvm_batches, ours.points),
            (families(threads_base, threads_tsmon), cpu_base["jvm"], sum(base.points)),
            warm(by_batch(threads_tsmon, base.threads), base.points),
        ],
    )
    console.print(per_batch_line(jvm_batches, w.total))
    inputs = dict(zip(ours.data(), (f.stat().st_size for f in w.files), strict=False))
    growth = report_disk(console, outputs.disk, ours.batch_ids, inputs, args.retention,
                args.ticks_per_file)  # fmt: skip
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
        f"checkpoint_mb={ckpt / 1e6:.1f} growth_x={growth:.2f} variant={args.variant}"
    )
    if not check_ok:
        console.print("[red bold]cross-check: FAILED[/]")
        sys.exit(1)
    print(f"ratio to plain aggregation: {ratio:.2f}")


if __name__ == "__main__":
    main()
