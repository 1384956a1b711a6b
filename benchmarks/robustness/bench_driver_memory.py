"""The driver's Python memory over many batches, and what the soak's sampling adds to it.

A Spark job (the soak's queries, ``--hosts`` sources of 5 series, one point per series per
second, 5 s per file) runs in this process, driven file by file with
``processAllAvailable``. Every 10 files the progress file is read the way a monitoring loop
in the same process reads it: ``--read whole`` parses all of ``progress.jsonl`` into a list
(what ``bench_soak.py`` did at every sample), ``--read lines`` goes through it one line at a
time (what it does now), ``--read none`` does not read it. Prints the driver's RSS every 50
files, and its growth from file 50 to the end per 100 batches.

    PYTHONPATH=src python benchmarks/robustness/bench_driver_memory.py [--files 300]
        [--read whole|lines|none] [--hosts 4]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_soak import METRICS, job_table, rss_mb

from tsmon.spark.job import parse_job
from tsmon.spark.runtime import JobRunner
from tsmon.spark.session import spark_session

START_MS = 1_700_000_000_000


def read_progress(path: Path, how: str) -> int:
    """The batches that read input, read as ``how`` says."""
    if how == "whole":
        progress = [json.loads(x) for x in path.read_text().splitlines() if x]
        return sum(p["inputRows"] > 0 for p in progress)
    if how == "lines":
        with open(path, encoding="utf-8") as f:
            return sum(json.loads(x)["inputRows"] > 0 for x in f if x.strip())
    return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=300)
    ap.add_argument("--read", choices=("whole", "lines", "none"), default="whole")
    ap.add_argument("--hosts", type=int, default=4)
    args = ap.parse_args()
    temp = Path(tempfile.mkdtemp(prefix="tsmon-driver-memory-"))
    incoming = temp / "incoming"
    incoming.mkdir()
    job = parse_job(job_table(args.hosts, "10m"), temp, "driver memory job")
    runner = JobRunner(job, spark=spark_session(app_name="bench-driver-memory"))
    runner.start()
    rng = random.Random(1)
    values: dict[str, float] = {}
    sources = [f"h{i:03d}" for i in range(args.hosts)] + ["quiet", "jumper"]
    samples: list[tuple[int, float]] = []
    print(f"read progress.jsonl: {args.read}\n file  batches  driver RSS MB")
    for n in range(args.files):
        lines = ["host,series,ts,value"]
        for source in sources:
            for metric in METRICS:
                series = f"{source}.{metric}"
                for k in range(5):
                    values[series] = values.get(series, 50.0) + rng.gauss(0, 1)
                    ts = START_MS + n * 5_000 + k * 1_000
                    lines.append(f"{source},{series},{ts},{values[series]:.3f}")
        temp_file = incoming / f".{n}.tmp"
        temp_file.write_text("\n".join(lines) + "\n")
        os.replace(temp_file, incoming / f"f{n:06d}.csv")
        with contextlib.redirect_stdout(io.StringIO()):  # no console lines per batch
            runner.process_all_available()
        if n % 10 == 0:
            read_progress(job.checkpoint / "progress.jsonl", args.read)
        if n % 50 == 0 or n == args.files - 1:
            samples.append((runner.batches, rss_mb(os.getpid())))
            print(f"{n:5d}  {runner.batches:7d}  {samples[-1][1]:13.1f}", flush=True)
    runner.close()
    shutil.rmtree(temp, ignore_errors=True)
    (b0, r0), (b1, r1) = samples[1], samples[-1]
    print(
        f"from file 50 on: {r1 - r0:+.1f} MB over {b1 - b0} batches, "
        f"{100 * (r1 - r0) / (b1 - b0):+.2f} MB per 100 batches"
    )


if __name__ == "__main__":
    main()
