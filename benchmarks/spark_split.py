"""Where tsmon's Spark CPU goes, per point (``bench_spark.py``): CPU time, not wall time, so
that the split holds on a machine shared with other jobs (wall times there stretch with the
load; CPU times do not).

- **Processes** (``/proc/<pid>/stat``, user + system, snapshots around each job): the JVM
  (Spark's driver and executor threads, RocksDB, GC), its Python workers (every descendant of
  the JVM, with the children they reaped) and the driver's Python process (``collect``, the
  coordinator, the sinks);
- **the JVM's threads** (:class:`ThreadSampler`, ``/proc/<pid>/task/*/stat`` every 0.5 s),
  by family of thread names (:data:`FAMILIES`: JIT compilers, GC, task threads, the stream
  execution thread, py4j's ``Thread-N``, the listener bus, the UI, RocksDB, ...);
- **Spark's stages** (the status REST API, ``/api/v1/applications/<id>/stages``; the benchmark
  turns the UI on for it): ``executorCpuTime``, the CPU of the tasks' JVM threads, of the
  *read* stage (scan the input and control files, normalise, write the shuffle) and of the
  *host* stage (read the shuffle, feed the Python host, the state store);
- **tsmon's Python parts** in the workers (``pythonCpuMs`` of ``progress.jsonl``,
  :mod:`tsmon.spark.cpu`): the file reader, and the host's ``hostRows`` (pyspark's Arrow to
  pandas of a bucket's rows), ``hostConvert`` (rows to numpy columns by source),
  ``hostNode`` (the nodes' steps) and ``hostState`` (unpickling and pickling nodes);
- the coordinator's step, timed around it on the driver.
"""

from __future__ import annotations

import json
import os
import re
import threading
import urllib.request
from collections import defaultdict
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

BATCH = re.compile(r"batch = (\d+)")
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class StageTimes:
    """Summed over the tasks of one kind of stage, in ms."""

    run_ms: float = 0.0  # executorRunTime (wall)
    jvm_cpu_ms: float = 0.0  # executorCpuTime (JVM task thread only)
    gc_ms: float = 0.0  # jvmGcTime (wall, while the task ran)
    tasks: int = 0


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
        t = out["host" if st.get("shuffleReadBytes", 0) else "read"]
        t.run_ms += st["executorRunTime"]
        t.jvm_cpu_ms += st["executorCpuTime"] / 1e6
        t.gc_ms += st.get("jvmGcTime", 0)
        t.tasks += st["numTasks"]
    return dict(out)


def _stat(pid: int) -> tuple[int, float, float]:
    """``(ppid, own CPU s, reaped children's CPU s)`` of a live process."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()  # after "pid (comm) "
    utime, stime, cutime, cstime = (int(f) for f in fields[11:15])
    return int(fields[1]), (utime + stime) / TICKS, (cutime + cstime) / TICKS


STREAM_THREAD = "stream execution thread (micro-batch driver)"
"""The family of the thread that runs a query's triggers (offsets, planning, commits)."""
FAMILIES = (  # (prefix of a thread's name, family); Linux keeps 15 characters of a name
    ("C2 CompilerThre", "JIT: C2 compiler"),
    ("C1 CompilerThre", "JIT: C1 compiler"),
    ("GC Thread", "GC: worker threads (G1, Parallel)"),
    ("G1 ", "GC: G1 concurrent, refine"),
    ("VM Thread", "VM Thread (safepoints)"),
    ("Executor task ", "tasks: Executor task threads"),
    ("stream executio", STREAM_THREAD),
    ("Thread-", "Thread-N (py4j calls from Python)"),
    ("spark-listener-", "spark-listener-group (listener bus)"),
    ("SparkUI", "SparkUI (web UI, REST API)"),
    ("dispatcher-", "dispatcher-* (RPC)"),
    ("rocksdb", "RocksDB native (flush, compaction)"),
    ("state-store-mai", "state store maintenance"),
    ("shuffle-", "shuffle-* (netty)"),
    ("map-output-disp", "map-output-dispatcher"),
    ("task-result-get", "task-result-getter"),
    ("dag-scheduler-e", "dag-scheduler-event-loop"),
)


def family(name: str) -> str:
    """A thread's family: :data:`FAMILIES`' name for its prefix, else its name without the
    digits (``QueryStageCreat``, ``block-manager-s``, ...)."""
    for prefix, fam in FAMILIES:
        if name.lower().startswith(prefix.lower()):
            return fam
    return re.sub(r"\d+", "", name).strip(" -#:_") or name


class ThreadSampler:
    """CPU of each of a process's threads (``/proc/<pid>/task/<tid>/stat``, user + system),
    sampled every ``every_s`` by a daemon thread and kept by ``(tid, start time)`` with its
    last value, so that a thread that ended still counts up to its last sample: only threads
    that live less than ``every_s`` between two samples are lost (:func:`thread_rows` shows
    the rest of the process's CPU as such). :meth:`snapshot` samples at once."""

    def __init__(self, pid: int, every_s: float = 0.5) -> None:
        self.pid = pid
        self.seen: dict[tuple[str, str], tuple[str, float]] = {}  # (tid, start) -> name, CPU s
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(every_s,), daemon=True)
        self._thread.start()

    def _run(self, every_s: float) -> None:
        while not self._stop.wait(every_s):
            self._sample()

    def _sample(self) -> None:
        task = f"/proc/{self.pid}/task"
        now: dict[tuple[str, str], tuple[str, float]] = {}
        for tid in os.listdir(task):
            try:
                text = Path(f"{task}/{tid}/stat").read_text()
            except OSError:
                continue  # ended meanwhile
            fields = text[text.rindex(")") + 2 :].split()  # from field 3 (state) on
            cpu = (int(fields[11]) + int(fields[12])) / TICKS
            now[(tid, fields[19])] = (text[text.index("(") + 1 : text.rindex(")")], cpu)
        with self._lock:
            self.seen.update(now)

    def snapshot(self) -> dict[tuple[str, str], tuple[str, float]]:
        """Every thread seen so far with its CPU seconds at its last sample (taken now)."""
        self._sample()
        with self._lock:
            return dict(self.seen)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


def families(after: dict, before: dict) -> dict[str, float]:
    """CPU seconds by :func:`family` between two :meth:`ThreadSampler.snapshot`s."""
    out: dict[str, float] = defaultdict(float)
    for key, (name, cpu) in after.items():
        out[family(name)] += cpu - before.get(key, (name, 0.0))[1]
    return dict(out)


def by_batch(start: dict, after: dict[int, dict]) -> list[dict[str, float]]:
    """:func:`families` of each batch, from the snapshot before it (``start`` for the first)
    to the one after it; ``after``: a snapshot by batch id, taken as each batch ended."""
    ordered = [start, *(after[b] for b in sorted(after))]
    return [families(b, a) for a, b in pairwise(ordered)]


def warm(batches: list[dict[str, float]], points: list[int], first: int = 2) -> tuple:
    """``(families, their CPU s, points)`` over the data batches from ``first`` on: the JVM
    once the JIT has warmed up (the 1st batch of a job compiles most, the 2nd much less)."""
    idx = [i for i, n in enumerate(points[: len(batches)]) if n and i >= first]
    out: dict[str, float] = defaultdict(float)
    for i in idx:
        for f, s in batches[i].items():
            out[f] += s
    return dict(out), sum(out.values()), sum(points[i] for i in idx)


def per_batch_line(batches: list[dict[str, float]], n: int) -> str:
    """tsmon's JVM CPU seconds per batch (from one batch's end to the next's) of the thread
    families that took over 0.5 µs per point (of ``n``) in all: does it fall as the JVM warms?"""
    total: dict[str, float] = defaultdict(float)
    for b in batches:
        for f, s in b.items():
            total[f] += s
    big = sorted((f for f, s in total.items() if s * 1e6 / n > 0.5), key=lambda f: -total[f])
    parts = (f"{f} " + " ".join(f"{b.get(f, 0.0):.2f}" for b in batches) for f in big)
    return "tsmon's JVM, CPU s per batch by thread family (over 0.5 µs/point in all): " + "; ".join(
        parts
    )


def thread_rows(
    runs: list[tuple[dict[str, float], float, int]], top: int = 14
) -> list[tuple[str, list[float]]]:
    """``(family, [CPU µs per point of each run])`` of the ``top`` families (by the first
    run's), the rest summed, the process CPU no sample saw (threads that lived < a sampling
    interval), and the JVM's total; ``runs``: ``(families, process CPU s, points)`` each."""
    order = sorted({f for fam, _, _ in runs for f in fam}, key=lambda f: -runs[0][0].get(f, 0))
    shown = order[:top]
    rows = [(f, [fam.get(f, 0.0) * 1e6 / n for fam, _, n in runs]) for f in shown]
    rest = [sum(v for f, v in fam.items() if f not in shown) * 1e6 / n for fam, _, n in runs]
    unseen = [(total - sum(fam.values())) * 1e6 / n for fam, total, n in runs]
    return [
        *rows,
        ("other families", rest),
        ("threads ended between samples", unseen),
        ("JVM process", [total * 1e6 / n for _, total, n in runs]),
    ]


def codegen_compiles(spark: Any) -> int:
    """Classes Spark's code generator has compiled so far (Janino, ``CodegenMetrics``): its
    cache is keyed by the generated source, so a plan whose code differs every batch (a
    literal that changes) is compiled again, and JIT-compiled again, every batch."""
    metrics = spark._jvm.org.apache.spark.metrics.source.CodegenMetrics
    return int(metrics.METRIC_COMPILATION_TIME().getCount())


def process_cpu(spark: Any) -> dict[str, float]:
    """CPU seconds so far of the JVM, of its Python workers and of this (driver) process."""
    jvm = spark.sparkContext._gateway.proc.pid
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stats[int(entry)] = _stat(int(entry))
            except (OSError, ValueError, IndexError):
                continue  # gone meanwhile
    children: dict[int, list[int]] = defaultdict(list)
    for pid, (ppid, _, _) in stats.items():
        children[ppid].append(pid)
    workers, todo = 0.0, list(children[jvm])
    while todo:
        pid = todo.pop()
        workers += stats[pid][1] + stats[pid][2]
        todo += children[pid]
    me = os.times()
    return {"jvm": stats[jvm][1], "workers": workers, "driver": me.user + me.system}


def delta(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    """CPU seconds between two snapshots of :func:`process_cpu`."""
    return {k: v - before.get(k, 0.0) for k, v in after.items()}


def python_parts(progress_lines: list[dict], batches: set[int]) -> dict[str, float]:
    """tsmon's Python parts (``pythonCpuMs``) summed over ``batches``, in ms."""
    out: dict[str, float] = defaultdict(float)
    for p in progress_lines:
        if p["batchId"] in batches:
            for part, ms in p.get("pythonCpuMs", {}).items():
                out[part] += ms
    return dict(out)


def split_rows(
    cpu: dict[str, float],
    stages: dict[str, StageTimes],
    parts: dict[str, float],
    coordinator_s: float,
    n: int,
) -> list[tuple[str, float, str]]:
    """The split as ``(part, CPU µs per point, how it is measured)`` rows over a whole run
    (``n`` points; the warm-up batch included): ``cpu`` is the processes' CPU µs per point,
    ``stages`` and ``parts`` (ms) those of all its batches."""
    us = 1e3 / n  # ms summed over the batches -> µs per point
    read, hosted = stages.get("read", StageTimes()), stages.get("host", StageTimes())
    host = {k: parts.get(k, 0.0) * us for k in ("hostRows", "hostConvert", "hostNode", "hostState")}
    tasks = (read.jvm_cpu_ms + hosted.jvm_cpu_ms) * us
    python = parts.get("fileReader", 0.0) * us + sum(host.values())
    return [
        ("JVM process (whole run)", cpu["jvm"], "/proc CPU"),
        ("  read stage tasks: scan, normalise, shuffle write", read.jvm_cpu_ms * us,
         f"executorCpuTime, {read.tasks} tasks"),
        ("  host stage tasks: shuffle, Arrow, state store", hosted.jvm_cpu_ms * us,
         f"executorCpuTime, {hosted.tasks} tasks"),
        ("  other threads: JIT, GC, driver (by family below)", cpu["jvm"] - tasks,
         f"difference; tasks' GC wall {(read.gc_ms + hosted.gc_ms) * us:.2f}"),
        ("Python workers (whole run)", cpu["workers"], "/proc CPU"),
        ("  file reader", parts.get("fileReader", 0.0) * us, "pythonCpuMs"),
        ("  host: rows to pandas (pyspark)", host["hostRows"], "pythonCpuMs"),
        ("  host: convert to columns", host["hostConvert"], "pythonCpuMs"),
        ("  host: node logic", host["hostNode"], "pythonCpuMs"),
        ("  host: state (pickle)", host["hostState"], "pythonCpuMs"),
        ("  pyspark: worker start, Arrow and state serde", cpu["workers"] - python,
         "difference"),
        ("Driver Python (whole run)", cpu["driver"], "/proc CPU"),
        ("  coordinator", coordinator_s * 1e6 / n, "timed around its step (wall)"),
    ]  # fmt: skip
