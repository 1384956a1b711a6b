"""Checkpoint size of a running job over many micro-batches: tsmon's settings vs Spark's.

Workload: the built-in generator (``--hosts`` × ``--metrics`` series, one point per series
per 1 s of event time, ``--ticks`` ticks per micro-batch), a bounded SUM and a watch query
over a 1-minute register retention, ``--batches`` micro-batches per run, in one SparkSession.

- **baseline**: Spark's defaults for what a checkpoint keeps: ``minBatchesToRetain`` 100 (state
  versions, offsets and commits), RocksDB not compacted at commit, and every ``ctrl-N.json``
  control file kept;
- **tsmon**: :func:`tsmon.spark.session.spark_session`'s settings
  (:data:`~tsmon.spark.session.MIN_BATCHES_TO_RETAIN`, compaction at commit) and control
  files deleted once the batch that read them is committed
  (:class:`tsmon.spark.control.ControlChannel`).

Both runs share the session's state-store maintenance interval (tsmon's 15 s: when old
versions are deleted), which a running session cannot change.

After every batch the callback sink measures the checkpoint's bytes on disk (file sizes, by
top-level directory). Printed: the size after the warm-up, at the middle and at the end, the
growth per batch over the second half, and tsmon / baseline ratios. ``--quick``: a smoke run.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import tempfile
import time
from pathlib import Path

from tsmon.spark.control import ControlChannel
from tsmon.spark.job import parse_job
from tsmon.spark.runtime import JobRunner
from tsmon.spark.session import MIN_BATCHES_TO_RETAIN, spark_session
from tsmon.spark.sinks import BatchOutput


def job_table(hosts: int, metrics: int, ticks: int) -> dict:
    return {
        "queries": (
            "QUERY s AS SUM(host000.cpu, host001.cpu) WITHIN 0.5\n"
            "QUERY hot ON *.cpu WHEN mean(30s) > 0.95 EMIT series, mean(30s)\n"
        ),
        "job": {"checkpoint": "ckpt", "trigger": "100ms"},
        "input": {
            "kind": "generator",
            "sources": hosts,
            "metrics": metrics,
            "step": "1s",
            "speedup": 1e9,
            "max_ticks_per_batch": ticks,
        },
        "registers": {"retention": "1m"},
        "filters": {"period": "10s"},
        "sinks": [{"kind": "callback"}],
    }


def sizes(ckpt: Path) -> dict[str, int]:
    """Bytes of the files under each top-level directory of the checkpoint (``nodes/*``, the
    Spark query's, one level deeper)."""
    out: dict[str, int] = {}
    for path in ckpt.rglob("*"):
        parts = path.relative_to(ckpt).parts
        top = "/".join(parts[:2]) if parts[0] == "nodes" and len(parts) > 2 else parts[0]
        with contextlib.suppress(FileNotFoundError):  # deleted by Spark while we list
            if path.is_file():
                out[top] = out.get(top, 0) + path.stat().st_size
    return out


def run(
    spark, table: dict, batches: int, conf: dict[str, str], clean: str, directory: Path
) -> list[dict]:
    """Sizes after every batch of one run of the job in ``directory``."""
    job = parse_job(table, directory, "bench job")
    for key, value in conf.items():
        spark.conf.set(key, value)
    curve: list[dict[str, int]] = []

    def measure(out: BatchOutput) -> None:
        curve.append(sizes(job.checkpoint))

    runner = JobRunner(job, spark=spark, callback=measure)
    runner.channel = ControlChannel(job.checkpoint / "control", clean_source=clean)
    runner.start()
    while len(curve) < batches and runner.node_query.isActive:
        time.sleep(0.05)
    runner.stop()
    return curve[:batches]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--metrics", type=int, default=5)
    parser.add_argument("--ticks", type=int, default=30, help="ticks per micro-batch")
    parser.add_argument("--batches", type=int, default=150)
    parser.add_argument("--quick", action="store_true", help="a smoke run (30 batches)")
    args = parser.parse_args()
    batches = 30 if args.quick else args.batches
    spark = spark_session(app_name="bench-checkpoint-disk")
    table = job_table(args.hosts, args.metrics, args.ticks)
    rows = args.hosts * args.metrics * args.ticks
    print(f"{batches} batches of {rows} points; checkpoint bytes after batch k")
    spark_defaults = {
        "spark.sql.streaming.minBatchesToRetain": "100",
        "spark.sql.streaming.stateStore.rocksdb.compactOnCommit": "false",
    }
    ours = {k: spark.conf.get(k) for k in spark_defaults}
    assert ours["spark.sql.streaming.minBatchesToRetain"] == str(MIN_BATCHES_TO_RETAIN)
    # removed at the end: Spark's listener events of a stopped query may still arrive
    temp = Path(tempfile.mkdtemp(prefix="tsmon-disk-"))
    curves = {
        "baseline": run(spark, table, batches, spark_defaults, "off", temp / "baseline"),
        "tsmon": run(spark, table, batches, ours, "delete", temp / "tsmon"),
    }
    spark.stop()
    shutil.rmtree(temp, ignore_errors=True)
    warm, mid, end = 10, batches // 2, batches - 1
    peaks = {}
    for name, curve in curves.items():
        total = [sum(c.values()) for c in curve]
        first, second = max(total[warm:mid]), max(total[mid:])
        peaks[name] = second
        slope = (total[end] - total[mid]) / (end - mid)
        print(
            f"{name:9s} k={warm}: {total[warm] / 1e6:7.2f} MB  k={mid}: {total[mid] / 1e6:7.2f} MB"
            f"  k={end}: {total[end] / 1e6:7.2f} MB  growth {slope / 1e3:8.1f} KB/batch (2nd half)"
        )
        print(
            f"{'':9s} largest in batches {warm}-{mid - 1}: {first / 1e6:.2f} MB, "
            f"in {mid}-{end}: {second / 1e6:.2f} MB (ratio {second / first:.2f}; 1: flat)"
        )
        print(f"{'':9s} every 10th batch, MB: {[round(t / 1e6, 1) for t in total[::10]]}")
        parts = ", ".join(f"{k} {v / 1e6:.2f}" for k, v in sorted(curve[end].items()))
        print(f"{'':9s} at the end, MB by directory: {parts}")
    base, ours = (sum(curves[n][end].values()) for n in ("baseline", "tsmon"))
    print(f"tsmon / baseline checkpoint size after {batches} batches: {ours / base:.3f}")
    ratio = peaks["tsmon"] / peaks["baseline"]
    print(f"tsmon / baseline largest size in the 2nd half: {ratio:.3f}")


if __name__ == "__main__":
    main()
