"""Soak: a Spark job on a steady input for N minutes, with bad rows, a time jump, an idle
source and bad files; are batch time, checkpoint size and memory flat, and do counts add up?

Input: a ``files`` job (CSV, a ``source`` column) fed by a writer thread in this process: every
``--interval`` seconds one file with one point per second of wall time for each of
``--hosts`` × 5 metrics (``h000.cpu``, ...) and the sources ``quiet`` and ``jumper`` (5 metrics
each), stamped with the wall clock. Registers keep ``--retention`` (default 1 h, the issue 16
target: the nodes' state grows until the registers hold that much); the job has a bounded SUM
over four sources (``quiet`` and ``jumper`` among them) and a watch query over every ``*.cpu``
series. Faults, on schedule:

- every file from the second on: a value that is no number, an unreadable timestamp, and a
  point 10 minutes older than its series' newest (dead letters ``not_numeric``,
  ``bad_timestamp``, ``too_late``);
- after 1/4 of the run the source ``quiet`` stops for good (idle after ``idle_timeout``);
- after 1/3 the source ``jumper`` jumps 6 h ahead in event time and stays there, and one
  point 10 years ahead arrives (``future_timestamp``);
- after 1/2 a binary garbage file (``unreadable_file``), and a file with its header in another
  order and two malformed lines (``malformed_line``).

Printed: per tenth of the run, the batches and their time (Spark's ``triggerExecution``) p50
and p95; samples every ``--sample`` seconds of the checkpoint size (total, ``nodes/state``,
``coordinator``), the RSS of the driver's Python process, of Spark's JVM and of its Python
workers, and the files waiting; finally whether every batch's ``inputRows`` = ``numInputRows``
+ ``deadLetters`` and whether the totals equal what the writer wrote, by reason.

    PYTHONPATH=src python benchmarks/robustness/bench_soak.py [--minutes 30]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_checkpoint_disk import sizes
from tsmon.spark.job import parse_job
from tsmon.spark.runtime import JobRunner
from tsmon.spark.session import spark_session

METRICS = ("cpu", "mem", "disk", "net", "load")
JUMP_MS = 6 * 3_600_000
TEN_YEARS_MS = 10 * 365 * 86_400_000


class Writer:
    """Writes the input files on schedule and counts what it wrote (rows in, dead letters by
    reason)."""

    def __init__(self, directory: Path, hosts: int, interval_s: float, minutes: float) -> None:
        self.directory = directory
        self.sources = [f"h{i:03d}" for i in range(hosts)] + ["quiet", "jumper"]
        self.interval_s = interval_s
        self.span_s = minutes * 60
        self.rng = random.Random(7)
        self.level = {(s, m): 50.0 for s in self.sources for m in METRICS}
        self.newest: dict[str, int] = {}
        self.rows_in = 0
        self.dead: Counter[str] = Counter()
        self.files = 0
        self.stop = threading.Event()
        self._began = time.monotonic()
        self._done_once: set[str] = set()

    def run(self) -> None:
        while not self.stop.is_set():
            self.write(time.monotonic() - self._began)
            self.stop.wait(self.interval_s)

    def _drop(self, content: bytes) -> None:
        name = f"in-{self.files:06d}.csv"
        temp = self.directory / f".{name}.tmp"
        temp.write_bytes(content)
        os.replace(temp, self.directory / name)
        self.files += 1

    def _once(self, what: str, elapsed: float, at: float) -> bool:
        if elapsed < at * self.span_s or what in self._done_once:
            return False
        self._done_once.add(what)
        return True

    def write(self, elapsed: float) -> None:
        now = int(time.time() * 1000)
        rows = []
        for source in self.sources:
            if source == "quiet" and elapsed >= self.span_s / 4:
                continue  # stopped for good
            shift = JUMP_MS if source == "jumper" and elapsed >= self.span_s / 3 else 0
            for k in range(max(1, round(self.interval_s))):
                ts = now - 1000 * k + shift
                for metric in METRICS:
                    key = (source, metric)
                    self.level[key] += self.rng.gauss(0, 2) + 0.02 * (50 - self.level[key])
                    series = f"{source}.{metric}"
                    rows.append((source, series, str(ts), f"{self.level[key]:.4f}"))
                    self.newest[series] = max(self.newest.get(series, ts), ts)
        if self.files:  # bad rows, once the series have a newest point
            h = self.sources[0]
            rows.append((h, f"{h}.cpu", str(now), "abc"))
            rows.append((h, f"{h}.mem", "yesterday", "1.0"))
            rows.append((h, f"{h}.disk", str(self.newest[f"{h}.disk"] - 600_000), "1.0"))
            self.dead.update(["not_numeric", "bad_timestamp", "too_late"])
        if self._once("future", elapsed, 1 / 3):
            rows.append(("jumper", "jumper.net", str(now + TEN_YEARS_MS), "1.0"))
            self.dead["future_timestamp"] += 1
        self.rows_in += len(rows)
        lines = ["host,series,ts,value"] + [",".join(r) for r in rows]
        self._drop(("\n".join(lines) + "\n").encode())
        if self._once("bad files", elapsed, 1 / 2):
            garbage = bytes(self.rng.randrange(256) for _ in range(4096)) + b"\x00"
            self._drop(garbage)
            self.rows_in += 1
            self.dead["unreadable_file"] += 1
            h = self.sources[1]
            lines = ["value,series,extra,ts,host", f"1.5,{h}.cpu,x,{now},{h}", "a,b", "1,2,3"]
            self._drop(("\n".join(lines) + "\n").encode())
            self.rows_in += 3
            self.dead["malformed_line"] += 2


def job_table(hosts: int, retention: str) -> dict:
    return {
        "queries": (
            "QUERY s AS SUM(h000.cpu, h001.cpu, quiet.cpu, jumper.cpu) WITHIN 5\n"
            "QUERY hot ON *.cpu WHEN mean(5m) > 90 EMIT series, mean(5m)\n"
        ),
        "job": {"checkpoint": "ckpt", "trigger": "500ms"},
        "input": {
            "kind": "files",
            "path": "incoming",
            "format": "csv",
            "columns": {"source": "host", "series": "series", "ts": "ts", "value": "value"},
        },
        "registers": {"retention": retention},
        "filters": {"period": "10s"},
        "sinks": [{"kind": "callback"}],
    }


def rss_mb(pid: int) -> float:
    """Resident memory of a process (MB), 0 if it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc)."""
    parent: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parent[int(stat.parent.name)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        todo += kids
    return out


def jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x] if path.exists() else []


def batches_read(path: Path) -> tuple[int, int]:
    """The batches in ``progress.jsonl`` and those that read input, one line at a time: parsing
    the whole growing file at every sample raised this process's RSS by ~9 KB per batch (the
    allocator keeps the biggest parse's memory), the driver's "creep" the runs before showed."""
    if not path.exists():
        return 0, 0
    with open(path, encoding="utf-8") as f:
        rows = [json.loads(x)["inputRows"] for x in f if x.strip()]
    return len(rows), sum(n > 0 for n in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--hosts", type=int, default=40, help="steady sources (5 series each)")
    parser.add_argument("--interval", type=float, default=5.0, help="seconds between files")
    parser.add_argument("--sample", type=float, default=30.0, help="seconds between samples")
    parser.add_argument("--retention", default="1h", help="the registers' retention")
    args = parser.parse_args()
    temp = Path(tempfile.mkdtemp(prefix="tsmon-soak-"))
    incoming = temp / "incoming"
    incoming.mkdir()
    job = parse_job(job_table(args.hosts, args.retention), temp, "soak job")
    spark = spark_session(app_name="bench-soak")
    jvm = spark.sparkContext._gateway.proc.pid  # the JVM Spark runs in
    reasons: Counter[str] = Counter()  # the dead letters written, by reason
    runner = JobRunner(
        job, spark=spark, callback=lambda o: reasons.update(r["reason"] for r in o.rejected)
    )
    writer = Writer(incoming, args.hosts, args.interval, args.minutes)
    series = (args.hosts + 2) * len(METRICS)
    print(
        f"soak: {args.minutes:g} min, {series} series, a file every {args.interval:g} s "
        f"(each series a point per second), registers {args.retention}; {temp}"
    )
    runner.start()
    thread = threading.Thread(target=writer.run, daemon=True)
    thread.start()
    began = time.monotonic()
    print(" min  batches  files waiting  ckpt MB  state MB  coord KB  py MB  jvm MB  workers MB")
    while True:
        elapsed = time.monotonic() - began
        ckpt = sizes(job.checkpoint)
        state = sum(v for k, v in ckpt.items() if k.startswith("nodes/state"))
        workers = [p for p in descendants(jvm) if p != jvm]
        batches, read = batches_read(job.checkpoint / "progress.jsonl")  # a file: >= 1 row
        print(
            f"{elapsed / 60:4.1f}  {batches:7d}  {writer.files - read:13d}  "
            f"{sum(ckpt.values()) / 1e6:7.1f}  {state / 1e6:8.1f}  "
            f"{ckpt.get('coordinator', 0) / 1e3:8.1f}  {rss_mb(os.getpid()):5.0f}  "
            f"{rss_mb(jvm):6.0f}  {sum(rss_mb(p) for p in workers):10.0f}",
            flush=True,
        )
        if elapsed >= args.minutes * 60 or not runner.node_query.isActive:
            break
        time.sleep(min(args.sample, max(0.0, args.minutes * 60 - elapsed)))
    writer.stop.set()
    thread.join()
    runner.process_all_available()  # the files still waiting
    runner.close()
    report(job.checkpoint, writer, reasons, args.minutes)
    shutil.rmtree(temp, ignore_errors=True)


def report(ckpt: Path, writer: Writer, reasons: Counter[str], minutes: float) -> None:
    progress = jsonl(ckpt / "progress.jsonl")
    spark_progress = jsonl(ckpt / "spark_progress.jsonl")
    durations = {p["batchId"]: p["durationMs"]["triggerExecution"] for p in spark_progress}
    data = [p for p in progress if p["inputRows"]]  # batches that read a file
    print("batch time (ms) of the batches that read a file, per tenth of the run:")
    print("tenth  batches    p50    p95")
    for tenth in range(10):
        part = data[tenth * len(data) // 10 : (tenth + 1) * len(data) // 10]
        times = sorted(durations[p["batchId"]] for p in part if p["batchId"] in durations)
        if times:
            p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
            print(f"{tenth + 1:5d}  {len(times):7d}  {statistics.median(times):5.0f}  {p95:5.0f}")
    every = all(p["inputRows"] == p["numInputRows"] + p["deadLetters"] for p in progress)
    rows_in = sum(p["inputRows"] for p in progress)
    dead = sum(p["deadLetters"] for p in progress)
    accepted = sum(p["numInputRows"] for p in progress)
    expected_dead = sum(writer.dead.values())
    print(
        f"{len(progress)} batches in {minutes:g} min; {writer.files} files; every batch "
        f"inputRows = numInputRows + deadLetters: {every}"
    )
    print(
        f"rows in {rows_in} (written {writer.rows_in}), accepted {accepted} "
        f"(written good {writer.rows_in - expected_dead}), dead letters {dead} "
        f"(written bad {expected_dead})"
    )
    print(f"dead letters by reason {dict(sorted(reasons.items()))}")
    print(f"written bad by reason  {dict(sorted(writer.dead.items()))}")
    adds_up = every and rows_in == writer.rows_in and reasons == writer.dead
    print(f"counts add up: {adds_up}")


if __name__ == "__main__":
    main()
