"""A bounded-aggregate job on Spark equals the in-process batch runtime with the same control
delay, batch for batch, before and after a restart from its checkpoint; bad rows become dead
letters with their reason. Each input file is followed by ``processAllAvailable()``."""

from __future__ import annotations

import json
import math
import os
import random
from pathlib import Path

import pandas as pd
import pytest

from tsmon.engine.batched import BatchedRuntime
from tsmon.spark.job import load_job
from tsmon.spark.runtime import REASONS, JobRunner, job_queries

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SERIES = {"a.x": "A", "a.y": "A", "b.x": "B", "c.y": "C"}
JOB = """
queries = '''
QUERY s AS SUM(a.x, b.x) WITHIN 2
QUERY w AS AVG(2*a.y - c.y, b.x) WITHIN 1.5
QUERY m AS MAX(a.x, c.y) WITHIN 0.5
'''

[job]
checkpoint = "ckpt"

[input]
kind = "files"
path = "incoming"
format = "json"
columns = { series = "metric", ts = "time", value = "v" }

[sources]
"a.*" = "A"
"b.*" = "B"
"c.*" = "C"

[filters]
period = "1s"
shrink = 0.1
growth = "capped"

[[sinks]]
kind = "parquet"
path = "out"
"""
BAD = [
    {"metric": "a.x", "time": "999999999999", "v": "n/a"},
    {"metric": "a.x", "time": "999999999999", "v": "NaN"},
    {"metric": "b.x", "time": "999999999999", "v": "Infinity"},
    {"metric": "b.x", "time": "yesterday", "v": "1.0"},
    {"time": "5", "v": "1.0"},
]


def make_files(n: int, seed: int = 3) -> list[list[dict]]:
    """``n`` files of random-walk points; ts unique per series, growing across files."""
    rng = random.Random(seed)
    value = {s: rng.uniform(-5, 5) for s in SERIES}
    files = []
    for f in range(n):
        rows = []
        for k in range(40):
            series = rng.choice(list(SERIES))
            value[series] += rng.gauss(0, 0.4)
            ts = f * 2_000 + k * 50 + list(SERIES).index(series)
            rows.append({"metric": series, "time": str(ts), "v": repr(value[series])})
        files.append(rows)
    return files


def drop(directory: Path, name: str, rows: list[dict]) -> None:
    """Write a JSON-lines file under a hidden name, then rename it in (atomic for the stream)."""
    temp = directory / f".{name}.tmp"
    temp.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    os.replace(temp, directory / name)


def reference(files: list[list[dict]], job_path: Path) -> list[dict]:
    """Answers after each file from the pure batch runtime, batches as Spark runs them."""
    job = load_job(job_path)
    f = job.filters
    runtime = BatchedRuntime(f.period_ms, f.shrink, 0, source_of=SERIES, growth=f.growth)
    for query in job_queries(job):
        runtime.add_query(query)
    out = []
    for rows in files:
        good = [
            (SERIES[r["metric"]], r["metric"], int(r["time"]), float(r["v"]))
            for r in rows
            if "metric" in r and r["time"].isdigit() and math.isfinite(float(_num(r["v"])))
        ]
        runtime.run_batch(good)
        while runtime.control:  # control-only batches, as the file source sees ctrl files
            runtime.run_batch([])
        out.append(runtime.answers())
    return out


def _num(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def test_spark_job_equals_the_batch_runtime_and_survives_a_restart(spark, tmp_path):
    job_path = tmp_path / "job.toml"
    job_path.write_text(JOB, encoding="utf-8")
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    files = make_files(5)
    files[2] = files[2] + BAD
    expected = reference(files, job_path)

    seen = []
    runner = JobRunner(load_job(job_path), spark=spark)
    runner.start()
    for i, rows in enumerate(files[:3]):
        drop(incoming, f"part-{i:03d}.json", rows)
        runner.process_all_available()
        seen.append(runner.answers)
    runner.stop()

    runner = JobRunner(load_job(job_path), spark=spark)  # restart on the same checkpoint
    runner.start()
    for i, rows in enumerate(files[3:], start=3):
        drop(incoming, f"part-{i:03d}.json", rows)
        runner.process_all_available()
        seen.append(runner.answers)
    runner.stop()

    for got, want in zip(seen, expected, strict=True):
        assert got == want
    last = seen[-1]
    assert all(a.hi - a.lo <= q.delta * (1 + 1e-9) for q, a in zip(
        job_queries(load_job(job_path)), last.values(), strict=True))  # fmt: skip

    dead = pd.concat(pd.read_parquet(p) for p in (tmp_path / "out" / "dead_letters").iterdir())
    assert sorted(dead["reason"]) == sorted(REASONS)  # one bad row of each kind
    answers = pd.concat(pd.read_parquet(p) for p in (tmp_path / "out" / "answers").iterdir())
    assert answers.groupby("batch_id").size().eq(3).all()
    progress = [json.loads(line) for line in (tmp_path / "ckpt" / "progress.jsonl").open()]
    assert [p["batchId"] for p in progress] == list(range(len(progress)))  # none replayed twice
    points = sum(p["numInputRows"] for p in progress)
    assert points == sum(len(f) for f in files) - len(BAD)
    assert sum(p["rowsToCoordinator"] for p in progress) < points


def test_queries_added_altered_and_removed_while_the_job_runs(spark, tmp_path):
    """Live changes through the command log equal the same changes made to the reference
    between the same batches; a bad command is rejected and the job goes on."""
    from tsmon.engine.bounded import to_query
    from tsmon.query import parse_query
    from tsmon.query.aggregate import resolve_aggregate
    from tsmon.spark.commands import CommandLog

    job_path = tmp_path / "job.toml"
    job_path.write_text(JOB, encoding="utf-8")
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    files = make_files(4, seed=5)
    job = load_job(job_path)
    f = job.filters
    ref = BatchedRuntime(f.period_ms, f.shrink, 0, source_of=SERIES, growth=f.growth)
    for query in job_queries(job):
        ref.add_query(query)
    added = "QUERY n AS MIN(a.x, b.x) WITHIN 1"
    changes = {
        1: [("add", added)],
        2: [
            ("alter", "ALTER QUERY s WITHIN 0.5 IMMEDIATELY"),
            ("add", "QUERY S AS MAX(a.x) WITHIN 1"),  # a duplicate name: rejected
        ],
        3: [("remove", "w")],
    }

    runner = JobRunner(job, spark=spark)
    runner.start()
    log = CommandLog(job.checkpoint)
    for i, rows in enumerate(files):
        for op, text in changes.get(i, []):
            log.submit(op, text)
            if op == "add" and text == added:
                ref.add_query(to_query(resolve_aggregate(parse_query(text), ["a.x", "b.x"])))
            elif op == "alter":
                ref.alter_query("s", 0.5, immediately=True)
            elif op == "remove":
                ref.remove_query(text)
        drop(incoming, f"part-{i:03d}.json", rows)
        runner.process_all_available()
        good = [(SERIES[r["metric"]], r["metric"], int(r["time"]), float(r["v"])) for r in rows]
        ref.run_batch(good)
        while ref.control:
            ref.run_batch([])
        assert runner.answers == ref.answers(), i
    runner.stop()
    assert set(runner.answers) == {"s", "m", "n"}
    rejected = [s for s in log.states() if s["state"] == "rejected"]
    assert len(rejected) == 1 and "QUERY S" in rejected[0]["text"], log.states()  # duplicate
