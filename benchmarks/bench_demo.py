"""Where ``tsmon demo``'s streaming time goes, batch by batch.

``PYTHONPATH=src:benchmarks .venv/bin/python benchmarks/bench_demo.py [--ticks-per-batch N]
[--trigger MS] [--conf KEY=VALUE] [--out FILE]``

Runs the demo's own job (:func:`tsmon.demos.spark.demo_job`: the same queries, data, live
changes and sinks; its console's lines come first) and prints, per batch: the points; Spark's
``durationMs`` (``triggerExecution``; ``latestOffset``, the generator's read; ``queryPlanning``;
``addBatch``; ``walCommit``; ``commitOffsets``) and the state operator's ``allUpdatesTimeMs``
(the Python host with its row and state transfer, summed over tasks) and ``commitTimeMs``;
tsmon's host parts in the workers (``pythonCpuMs``); and the CPU seconds of each process
(``/proc``) from one batch's end to the next's: the JVM, the generator's Python process (the
streaming source runner: it paces and plans), the other Python processes Spark started (the
host's workers, which also compute the generator's tick ranges, and the data source's
planning), this driver. Then the totals, the JVM's CPU by thread family
(:mod:`spark_split`), how long the query took to start, a timeline (in s from ``start()``:
when it returned, each trigger's start, the gap since the previous one, its length and when
its callback ran, when ``stop()`` began and returned), the classes Spark generated per batch,
and a last ``RESULT`` line. ``--out`` also writes the per-batch rows as JSON lines.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from spark_split import ThreadSampler, by_batch, codegen_compiles, families, per_batch_line
from tsmon.demos.spark import DemoSettings, _Live, demo_job, stream_to_end
from tsmon.spark.commands import CommandLog
from tsmon.spark.sinks import BatchOutput

TICKS = os.sysconf("SC_CLK_TCK")


def python_cpu(jvm: int) -> dict[str, float]:
    """CPU seconds (own + reaped children) of the JVM's Python descendants, by role: the
    streaming source runner (the generator's pacing and planning) and the rest (the host's
    workers, which also read the generator's tick ranges)."""
    stats: dict[int, tuple[int, float, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry}/stat").read_text()
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        f = text[text.rindex(")") + 2 :].split()
        stats[int(entry)] = (int(f[1]), sum(int(x) for x in f[11:15]) / TICKS, cmd)
    out: dict[str, float] = defaultdict(float)
    todo = [p for p, (pp, _, _) in stats.items() if pp == jvm]
    while todo:
        pid = todo.pop()
        _, cpu, cmd = stats[pid]
        out["source runner" if "streaming_source_runner" in cmd else "workers"] += cpu
        todo += [p for p, (pp, _, _) in stats.items() if pp == pid]
    jf = Path(f"/proc/{jvm}/stat").read_text()
    jf = jf[jf.rindex(")") + 2 :].split()
    out["jvm"] = (int(jf[11]) + int(jf[12])) / TICKS
    me = os.times()
    out["driver"] = me.user + me.system
    return dict(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ticks-per-batch", type=int, default=DemoSettings.ticks_per_batch)
    p.add_argument("--ticks", type=int, default=DemoSettings.ticks)
    p.add_argument("--hosts", type=int, default=DemoSettings.hosts)
    p.add_argument("--trigger", help="the job's trigger interval (default: the demo's)")
    p.add_argument("--conf", action="append", default=[], help="a Spark setting KEY=VALUE")
    p.add_argument("--out", type=Path, help="also write the per-batch records here (JSON lines)")
    args = p.parse_args()
    console = Console(highlight=False, width=220)
    s = replace(
        DemoSettings(), ticks_per_batch=args.ticks_per_batch, ticks=args.ticks, hosts=args.hosts
    )
    from tsmon.spark.runtime import JobRunner
    from tsmon.spark.session import spark_session

    with tempfile.TemporaryDirectory(prefix="tsmon-bench-demo-") as tmp:
        job = demo_job(s, Path(tmp))
        conf = dict(job.spark_conf) | dict(kv.split("=", 1) for kv in args.conf)
        job = replace(job, spark_conf=conf)
        if args.trigger:
            job = replace(job, trigger_ms=int(args.trigger))
        started = time.perf_counter()
        spark = spark_session(job.master, job.name, dict(job.spark_conf))
        up = time.perf_counter() - started
        jvm = spark.sparkContext._gateway.proc.pid
        sampler = ThreadSampler(jvm)
        live = _Live(CommandLog(job.checkpoint), s, job.input.start_ms)
        cpu: dict[int, dict[str, float]] = {}
        threads: dict[int, Any] = {}
        ended: dict[int, float] = {}
        compiled: dict[int, int] = {}

        def callback(out: BatchOutput) -> None:
            live(out)
            ended[out.batch_id] = time.perf_counter()
            cpu[out.batch_id] = python_cpu(jvm)
            threads[out.batch_id] = sampler.snapshot()
            compiled[out.batch_id] = codegen_compiles(spark)

        runner = JobRunner(job, spark=spark, callback=callback)
        marks: dict[str, float] = {}
        for name in ("start", "stop"):  # when each began and returned
            setattr(runner, name, _timed(getattr(runner, name), name, marks))
        cpu0, threads0, compiled0 = python_cpu(jvm), sampler.snapshot(), codegen_compiles(spark)
        began, began_utc = time.perf_counter(), time.time()
        stream_to_end(runner, live, s.points)
        elapsed = time.perf_counter() - began
        sampler.close()
        ours = [json.loads(x) for x in (job.checkpoint / "progress.jsonl").read_text().splitlines()]
        sparks = _spark_records(job.checkpoint / "spark_progress.jsonl")
        spark.stop()
    first_trigger = _utc_s(sparks[0]["timestamp"]) - began_utc
    console.print(f"query start: the first trigger began {first_trigger:.1f} s after start()")
    console.print(
        _timeline(
            sparks,
            {k: v - began for k, v in marks.items()},
            began_utc,
            {b: t - began for b, t in ended.items()},
            elapsed,
        )
    )
    counts = [compiled[b] for b in sorted(compiled)]
    console.print(
        "classes Spark generated per batch: "
        + " ".join(str(b - a) for a, b in zip([compiled0, *counts], counts, strict=False))
    )
    batches = sorted(ended)
    _report(
        console,
        s,
        up,
        elapsed,
        ended[batches[0]] - began,
        ours,
        sparks,
        [cpu0, *(cpu[b] for b in batches)],
        [threads0, *(threads[b] for b in batches)],
        args.out,
    )


def _timed(f: Any, name: str, marks: dict[str, float]) -> Any:
    def timed(*args: Any, **kwargs: Any) -> Any:
        marks[f"{name} began"] = time.perf_counter()
        try:
            return f(*args, **kwargs)
        finally:
            marks[f"{name} returned"] = time.perf_counter()

    return timed


def _timeline(
    sparks: dict[int, dict],
    marks: dict[str, float],
    began_utc: float,
    ended: dict[int, float],
    elapsed: float,
) -> str:
    """Where the streaming time went, in s from ``start()``: each trigger's start, its
    duration, when its callback ran, and the gaps between."""
    parts = [f"start() returned {marks['start returned']:.2f}"]
    last_end = marks["start returned"]
    for b, r in sorted(sparks.items()):
        t0 = _utc_s(r["timestamp"]) - began_utc
        d = r["durationMs"]["triggerExecution"] / 1000
        parts.append(
            f"b{b} +{t0 - last_end:.2f} @{t0:.2f} ran {d:.2f} cb {ended.get(b, float('nan')):.2f}"
        )
        last_end = t0 + d
    parts.append(
        f"stop() began {marks['stop began']:.2f} (+{marks['stop began'] - last_end:.2f}) "
        f"returned {marks['stop returned']:.2f}; streaming {elapsed:.2f}"
    )
    return "timeline (s from start()): " + "; ".join(parts)


def _utc_s(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _spark_records(path: Path) -> dict[int, dict]:
    out = {}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        out[r["batchId"]] = r
    return out


#: (column, where it comes from): Spark's durationMs and state operator, tsmon's pythonCpuMs
SPARK = (
    ("trigger", ("durationMs", "triggerExecution")),
    ("latestOffset", ("durationMs", "latestOffset")),
    ("planning", ("durationMs", "queryPlanning")),
    ("addBatch", ("durationMs", "addBatch")),
    ("walCommit", ("durationMs", "walCommit")),
    ("commitOffsets", ("durationMs", "commitOffsets")),
    ("allUpdates", ("state", "allUpdatesTimeMs")),
    ("stateCommit", ("state", "commitTimeMs")),
)
HOST = ("hostNode", "hostState", "hostRows", "hostConvert")
PROCESSES = ("jvm", "source runner", "workers", "driver")


def _record(p: dict, sp: dict, before: dict, after: dict) -> dict[str, float]:
    """One batch's row: Spark's times (ms), the host's CPU (ms), each process's CPU (s)."""
    where = {"durationMs": sp.get("durationMs", {}), "state": (sp.get("stateOperators") or [{}])[0]}
    rec: dict[str, float] = {"batch": p["batchId"], "points": p["numInputRows"]}
    rec |= {name: where[a].get(b) or 0 for name, (a, b) in SPARK}
    rec |= {k: p["pythonCpuMs"].get(k, 0.0) for k in HOST}
    return rec | {f"cpu {k}": after.get(k, 0.0) - before.get(k, 0.0) for k in PROCESSES}


def _report(
    console: Console,
    s: DemoSettings,
    up: float,
    elapsed: float,
    first: float,
    ours: list[dict],
    sparks: dict[int, dict],
    cpu: list[dict[str, float]],
    threads: list[Any],
    out: Path | None,
) -> None:
    """The per-batch table, the totals and the JVM's CPU by thread family; ``cpu`` and
    ``threads``: snapshots before the first batch and after each."""
    title = "per batch: Spark's times and tsmon's host CPU in ms, each process's CPU in s"
    table = Table(title=title)
    records = [
        _record(p, sparks.get(p["batchId"], {}), cpu[i], cpu[i + 1]) for i, p in enumerate(ours)
    ]
    for c in records[0]:
        table.add_column(c, justify="right")
    for r in records:
        table.add_row(*(f"{v:.2f}" if k.startswith("cpu") else f"{v:,.0f}" for k, v in r.items()))
    console.print(table)
    totals = {k: sum(r[k] for r in records) for k in records[0] if k != "batch"}
    console.print(
        "totals: "
        + ", ".join(f"{k} {v:,.0f} ms" for k, v in totals.items() if not k.startswith("cpu"))
        + "; CPU "
        + ", ".join(f"{k[4:]} {v:.1f} s" for k, v in totals.items() if k.startswith("cpu"))
    )
    fam = families(threads[-1], threads[0])
    top = sorted(fam.items(), key=lambda kv: -kv[1])[:10]
    console.print("JVM CPU s by thread family: " + ", ".join(f"{f} {v:.1f}" for f, v in top))
    points = sum(p["numInputRows"] for p in ours)
    console.print(per_batch_line(by_batch(threads[0], dict(enumerate(threads[1:]))), points))
    cpu_s = sum(v for k, v in totals.items() if k.startswith("cpu"))
    console.print(
        f"Spark up in {up:.1f} s; first answers {first:.1f} s after the query started; "
        f"{points:,} points in {len(ours)} batches ({s.ticks_per_batch} ticks per batch) in "
        f"{elapsed:.1f} s of streaming ({points / elapsed:,.0f} points/s), {cpu_s:.1f} CPU s "
        f"in all processes; load {os.getloadavg()[0]:.1f}"
    )
    print(
        f"RESULT demo streaming_s={elapsed:.1f} first_answers_s={first:.1f} spark_up_s={up:.1f} "
        f"cpu_s={cpu_s:.1f} batches={len(ours)} points={points}"
    )
    if out is not None:
        out.write_text("".join(json.dumps(r) + "\n" for r in records))
    if points != s.points:
        sys.exit(f"the demo saw {points:,} points, not {s.points:,}")


if __name__ == "__main__":
    main()
