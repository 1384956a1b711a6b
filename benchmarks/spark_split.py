"""Where tsmon's Spark time goes, per point: Spark's own stage metrics, and the Python work of
the file reader and the host timed in-process on the same batches (``bench_spark.py``).

On Spark (the session's status REST API, ``/api/v1/applications/<id>/stages``; the benchmark
turns the UI on for it), per stage of the node query's data batches after warm-up:

- ``executorRunTime``: task wall time summed over tasks (a task holds a core, so this is core
  time); ``executorCpuTime``: the CPU of the task's JVM thread only. The Python workers
  (``mapInArrow``, ``applyInPandasWithState``) run in other processes: their time is in the
  run time, not in the JVM CPU;
- the *read* stage scans the input and control files, reads them (the file reader, Python),
  normalises the rows and writes the shuffle; the *host* stage reads the shuffle, runs the
  Python host with its state (RocksDB) and hands the output to the driver's ``collect``.

From the progress of the stateful operator: ``allUpdatesTimeMs`` (the Python function and the
Arrow transfer of rows and state) and ``commitTimeMs`` (RocksDB commit and changelog).

In-process, on one core (same files, same buckets; ``crc32`` here, not Spark's xxhash64: the
sizes are the same): the file reader (:func:`tsmon.spark.filerows.arrow_rows`) and the host's
``convert`` (rows split by source and sorted into numpy columns), ``node`` (the nodes'
``step_columns``) and ``state`` (unpickling and pickling the nodes and the bucket's map).
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections import defaultdict
from dataclasses import dataclass
from functools import partial
from time import perf_counter
from typing import Any

import numpy as np

from tsmon.engine.node import new_node
from tsmon.spark.driver import JobQueries
from tsmon.spark.job import Job

BATCH = re.compile(r"batch = (\d+)")


@dataclass
class StageTimes:
    """Summed over the tasks of one kind of stage, in ms."""

    run_ms: float = 0.0  # executorRunTime
    jvm_cpu_ms: float = 0.0  # executorCpuTime (JVM task thread only)
    tasks: int = 0
    shuffle_bytes: int = 0  # written (read stage) or read (host stage)


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)


def spark_stages(spark: Any, run_id: str, batches: set[int]) -> dict[str, StageTimes]:
    """Stage metrics of the query run ``run_id`` (its jobs' group), summed over ``batches``,
    by kind: ``read`` (stages that scan the input), ``host`` (stages that read a shuffle)."""
    base = spark.sparkContext.uiWebUrl
    if base is None:
        raise SystemExit("the split needs the Spark UI's REST API (spark.ui.enabled)")
    app = f"{base}/api/v1/applications/{spark.sparkContext.applicationId}"
    stage_batch: dict[int, int] = {}
    for job in _get(f"{app}/jobs"):
        found = BATCH.search(job.get("description", "") or "")
        if job.get("jobGroup") == run_id and found:
            for sid in job["stageIds"]:
                stage_batch[sid] = int(found.group(1))
    out: dict[str, StageTimes] = defaultdict(StageTimes)
    for st in _get(f"{app}/stages"):
        if st["status"] != "COMPLETE" or stage_batch.get(st["stageId"]) not in batches:
            continue
        written, read = st.get("shuffleWriteBytes", 0), st.get("shuffleReadBytes", 0)
        t = out["host" if read else "read"]
        t.run_ms += st["executorRunTime"]
        t.jvm_cpu_ms += st["executorCpuTime"] / 1e6
        t.tasks += st["numTasks"]
        t.shuffle_bytes += written or read
    return dict(out)


def state_operator(records: list[Any], batches: set[int]) -> dict[str, float]:
    """``allUpdatesTimeMs``, ``commitTimeMs`` and the state's memory, summed over
    ``batches`` (memory: the last one's), from the stateful operator's progress."""
    out = {"allUpdatesTimeMs": 0.0, "commitTimeMs": 0.0, "memoryUsedBytes": 0.0}
    for p in records:
        if p.batchId not in batches or not p.stateOperators:
            continue
        op = p.stateOperators[0]
        out["allUpdatesTimeMs"] += op.allUpdatesTimeMs
        out["commitTimeMs"] += op.commitTimeMs
        out["memoryUsedBytes"] = op.memoryUsedBytes
    return out


def reader_us(files: list[Any], fmt: str, names: list[str]) -> float:
    """CPU µs per point, in-process on one core, of the file reader on ``files`` (all but
    the first, as on Spark after warm-up)."""
    import pyarrow as pa

    from tsmon.spark.filerows import arrow_rows

    seconds, rows = 0.0, 0
    for path in files[1:]:
        content = path.read_bytes()
        batch = pa.RecordBatch.from_arrays(
            [pa.array([f"file:{path}"]), pa.array([content], pa.binary())], ["path", "content"]
        )
        start = perf_counter()
        rows += sum(b.num_rows for b in arrow_rows(iter([batch]), fmt=fmt, names=names))
        seconds += perf_counter() - start
    return seconds / rows * 1e6


def host_split(job: Job, points: list[list[tuple]], buckets: int) -> dict[str, float]:
    """CPU µs per point, in-process on one core, of the Python work the Spark host does per
    bucket and batch (:class:`tsmon.spark.host.BucketHost`): ``convert``, ``node``, ``state``
    (see the module doc), over the batches after the first."""
    import pickle
    import zlib

    import pandas as pd

    from tsmon.spark.host import _call, _data  # the host's own steps, timed apart

    new = partial(new_node, settings=JobQueries.of(job).settings(job))
    states: dict[int, bytes] = {}
    spent = dict.fromkeys(("convert", "node", "state"), 0.0)
    seq = 0
    for i, batch in enumerate(points):
        source, series, ts, value = (list(c) for c in zip(*batch, strict=True))
        frame = pd.DataFrame(
            {
                "source": source, "series": series, "ts": np.array(ts, np.int64),
                "value": np.array(value), "seq": np.arange(seq, seq + len(ts), dtype=np.int64),
            }
        )  # fmt: skip
        seq += len(ts)
        frame["bucket"] = [zlib.crc32(s.encode()) % buckets for s in source]
        timed = i > 0
        for b, rows in frame.groupby("bucket"):
            t0 = perf_counter()
            columns = _data(rows)
            t1 = perf_counter()
            nodes = pickle.loads(states[b]) if b in states else {}
            loaded = {k: new(k) if k not in nodes else pickle.loads(nodes[k]) for k in columns}
            t2 = perf_counter()
            for k, node in loaded.items():
                _call(node, [], columns[k])
            t3 = perf_counter()
            nodes.update({k: pickle.dumps(n, protocol=5) for k, n in loaded.items()})
            states[b] = pickle.dumps(nodes, protocol=5)
            t4 = perf_counter()
            if timed:
                spent["convert"] += t1 - t0
                spent["state"] += (t2 - t1) + (t4 - t3)
                spent["node"] += t3 - t2
    n = sum(len(p) for p in points[1:])
    return {k: v / n * 1e6 for k, v in spent.items()}


def split_lines(
    stages: dict[str, StageTimes],
    operator: dict[str, float],
    n: int,
    trigger_s: float,
    coordinator_s: float,
    reader: float,
    host: dict[str, float],
) -> list[tuple[str, float, str]]:
    """The split as ``(part, core-µs per point, how it is measured)`` rows; the first is
    the total of 2 cores over the batches' trigger time."""
    us = 1e3 / n  # ms summed over the batches -> µs per point
    read, hosted = stages.get("read", StageTimes()), stages.get("host", StageTimes())
    python_host = sum(host.values())
    update, commit = operator["allUpdatesTimeMs"] * us, operator["commitTimeMs"] * us
    total = 2 * trigger_s * 1e3 * us
    tasks = (read.run_ms + hosted.run_ms) * us
    return [
        ("all: 2 cores x trigger time", total, "durationMs.triggerExecution"),
        ("read stage (tasks)", read.run_ms * us, f"executorRunTime, {read.tasks} tasks"),
        ("  Spark JVM: scan, normalise, shuffle write", read.jvm_cpu_ms * us, "executorCpuTime"),
        ("  file reader (Python)", reader, "in-process, arrow_rows"),
        ("  rest (Arrow to/from Python, waits)", read.run_ms * us - read.jvm_cpu_ms * us - reader,
         "difference"),
        ("host stage (tasks)", hosted.run_ms * us, f"executorRunTime, {hosted.tasks} tasks"),
        ("  Spark JVM: shuffle read, Arrow, state store", hosted.jvm_cpu_ms * us,
         "executorCpuTime"),
        ("  stateful operator: updates", update, "allUpdatesTimeMs (Python + transfer)"),
        ("  stateful operator: commit", commit, "commitTimeMs (RocksDB, changelog)"),
        ("  host: convert", host["convert"], "in-process"),
        ("  host: node logic", host["node"], "in-process"),
        ("  host: state (pickle)", host["state"], "in-process"),
        ("  rest of updates (Arrow rows+state, pandas)", update - python_host, "difference"),
        ("coordinator (driver)", coordinator_s * 1e6 / n, "timed around its step"),
        ("idle cores, driver, planning, commits", total - tasks - coordinator_s * 1e6 / n,
         "difference"),
    ]  # fmt: skip
