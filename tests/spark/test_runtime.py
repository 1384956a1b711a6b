"""A job of bounded aggregates and watch queries on Spark equals the in-process batch runtime
with the same control delay, batch for batch (answers and events), before and after a restart
from its checkpoint; bad rows and late points become dead letters with their reason. Each
input file is followed by ``processAllAvailable()``."""

from __future__ import annotations

import json
import math
import os
import random
from pathlib import Path

import pandas as pd
import pytest

from tests.spark.test_dead_letter_details import in_process
from tsmon.engine.batched import BatchedRuntime
from tsmon.spark.driver import JobQueries
from tsmon.spark.job import Job, load_job
from tsmon.spark.runtime import REASONS, JobRunner
from tsmon.spark.sinks import BatchOutput

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SERIES = {"a.x": "A", "a.y": "A", "b.x": "B", "c.y": "C"}
JOB = """
queries = '''
QUERY s AS SUM(a.x, b.x) WITHIN 2
QUERY w AS AVG(2*a.y - c.y, b.x) WITHIN 1.5
QUERY m AS MAX(a.x, c.y) WITHIN 0.5
QUERY g AS AVG(*.x) WITHIN 1
QUERY rise ON a.* WHEN last > mean(4 points) + 0.3 EMIT series, last, mean(4 points)
QUERY wide ON *.x WHEN max(1s) - min(1s) > 1 EMIT series, max(1s), min(1s) AS low
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

[registers]
retention = "10s"

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


def walk_files(n: int, seed: int = 3) -> list[list[tuple[str, int, float]]]:
    """``n`` files of random-walk points ``(series, ts ms, value)`` of :data:`SERIES`; ts
    unique per series, growing across files."""
    rng = random.Random(seed)
    value = {s: rng.uniform(-5, 5) for s in SERIES}
    files = []
    for f in range(n):
        rows = []
        for k in range(40):
            series = rng.choice(list(SERIES))
            value[series] += rng.gauss(0, 0.4)
            rows.append((series, f * 2_000 + k * 50 + list(SERIES).index(series), value[series]))
        files.append(rows)
    return files


def make_files(n: int, seed: int = 3) -> list[list[dict]]:
    """:func:`walk_files` as JSON-lines records of text."""
    return [
        [{"metric": s, "time": str(ts), "v": repr(v)} for s, ts, v in rows]
        for rows in walk_files(n, seed)
    ]


def drop(directory: Path, name: str, rows: list[dict]) -> None:
    """Write a JSON-lines file under a hidden name, then rename it in (atomic for the stream)."""
    temp = directory / f".{name}.tmp"
    temp.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    os.replace(temp, directory / name)


def job_in(directory: Path, text: str) -> Job:
    """Write ``text`` as ``directory/job.toml`` with an empty ``incoming/``; load it."""
    path = directory / "job.toml"
    path.write_text(text, encoding="utf-8")
    (directory / "incoming").mkdir()
    return load_job(path)


def batch_reference(job: Job) -> BatchedRuntime:
    """The in-process batch runtime of any job: its filters, registers and every query kind
    (bounded, watch and summary, top-k, standing) with their settings."""
    queries = JobQueries.of(job)
    runtime = BatchedRuntime.from_settings(queries.settings(job))
    queries.register(runtime.coordinator, job)
    return runtime


LATE = {"metric": "a.x", "time": "100", "v": "0.5"}  # older than a.x's newest: too late


def reference_runtime(job: Job) -> BatchedRuntime:
    """The in-process batch runtime of ``job``: its filters, registers, queries."""
    queries = JobQueries.of(job)
    runtime = BatchedRuntime.from_settings(queries.settings(job), source_of=SERIES)
    queries.register(runtime.coordinator, job)
    return runtime


def run_file(runtime: BatchedRuntime, good: list[tuple]) -> list[dict]:
    """One file's batch and the control-only batches after it; returns their events."""
    runtime.run_batch(good)
    events = [e["payload"] for e in runtime.events()]
    while runtime.control:  # control-only batches, as the file source sees ctrl files
        runtime.run_batch([])
        events += [e["payload"] for e in runtime.events()]
    return events


def reference(files: list[list[dict]], job_path: Path) -> tuple[list[dict], list[list[dict]]]:
    """Answers and events after each file from the pure batch runtime, batches as Spark runs
    them."""
    runtime = reference_runtime(load_job(job_path))
    out, events = [], []
    for rows in files:
        good = [
            (SERIES[r["metric"]], r["metric"], int(r["time"]), float(r["v"]))
            for r in rows
            if "metric" in r and r["time"].isdigit() and math.isfinite(float(_num(r["v"])))
        ]
        events.append(run_file(runtime, good))
        out.append(runtime.answers())
    return out, events


def progress_lines(tmp_path: Path) -> list[str]:
    return (tmp_path / "ckpt" / "progress.jsonl").read_text(encoding="utf-8").splitlines()


def _num(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


@pytest.mark.parametrize("period", ["1s", "auto"])  # auto: T chosen online, told in control
def test_spark_job_equals_the_batch_runtime_and_survives_a_restart(spark, tmp_path, period):
    job_path = tmp_path / "job.toml"
    job_path.write_text(JOB.replace('period = "1s"', f'period = "{period}"'), encoding="utf-8")
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    files = make_files(5)
    files[2] = files[2] + BAD
    files[3] = files[3] + [LATE]
    expected, expected_events = reference(files, job_path)
    assert sum(map(len, expected_events)) > 5  # the watch queries fire

    seen, seen_events = [], []
    outputs: list[BatchOutput] = []
    for part in (files[:3], files[3:]):  # a restart on the same checkpoint in between
        runner = JobRunner(load_job(job_path), spark=spark, callback=outputs.append)
        runner.start()
        for rows in part:
            i = len(seen)
            drop(incoming, f"part-{i:03d}.json", rows)
            outputs.clear()
            runner.process_all_available()
            seen.append(runner.answers())
            seen_events.append([e for out in outputs for e in out.events])
        runner.stop()

    for got, want in zip(seen, expected, strict=True):
        assert got == want
    assert seen_events == expected_events
    last = seen[-1]
    deltas = {"s": 2, "w": 1.5, "m": 0.5, "g": 1}
    assert set(last) == set(deltas)
    assert all(a.hi - a.lo <= deltas[q] * (1 + 1e-9) for q, a in last.items())
    x_series = sorted(s for s in SERIES if s.endswith(".x"))
    state = runner.coordinator.node_for(len(progress_lines(tmp_path)))  # after the last batch
    assert (
        state.part("bounded").coordinator.queries["g"].objects == x_series
    )  # every .x series rows showed
    chosen = state.part("bounded").coordinator.period_ms
    assert chosen == 1_000 if period == "1s" else chosen is not None

    dead = pd.concat(pd.read_parquet(p) for p in (tmp_path / "out" / "dead_letters").iterdir())
    assert sorted(dead["reason"]) == sorted([*REASONS, "too_late"])  # one bad row of each kind
    unread = dead[dead["reason"] != "too_late"]  # file rows: the file and line, then what was
    path = tmp_path / "incoming" / "part-002.json"  # wrong as in-process (+ the reader's word)
    lines = range(len(files[2]) - len(BAD) + 1, len(files[2]) + 1)
    assert sorted(unread["detail"]) == sorted(
        f"{path}:{line}: "
        + ("" if "metric" in b else "no key 'metric': ")
        + in_process((b.get("metric"), b["time"], b["v"]))[1]
        for line, b in zip(lines, BAD, strict=True)
    )
    late = dead[dead["reason"] == "too_late"].iloc[0]
    assert (late["series"], late["ts"], late["source"]) == ("a.x", 100, "A")
    events = pd.concat(pd.read_parquet(p) for p in (tmp_path / "out" / "events").iterdir())
    assert len(events) == sum(map(len, expected_events))
    answers = pd.concat(pd.read_parquet(p) for p in (tmp_path / "out" / "answers").iterdir())
    assert answers.groupby("batch_id").size().eq(4).all()
    progress = [json.loads(line) for line in (tmp_path / "ckpt" / "progress.jsonl").open()]
    assert [p["batchId"] for p in progress] == list(range(len(progress)))  # none replayed twice
    points = sum(p["numInputRows"] for p in progress)
    assert points == sum(len(f) for f in files) - len(BAD) - 1  # the late point changes nothing
    assert sum(p["rowsToCoordinator"] for p in progress) < points
    for p in progress:  # the Python workers' CPU by part (tsmon.spark.cpu), batch by batch
        if p["inputRows"]:
            assert {"fileReader", "hostRows", "hostNode", "hostState"} <= set(p["pythonCpuMs"])
        assert all(ms >= 0 for ms in p["pythonCpuMs"].values())
    watermarks = [p["watermark"] for p in progress]
    assert watermarks == sorted(watermarks) and watermarks[-1] == last["s"].as_of_ms
    spark_lines = (tmp_path / "ckpt" / "spark_progress.jsonl").read_text().splitlines()
    spark_batches = [json.loads(line)["batchId"] for line in spark_lines]
    assert spark_batches and set(spark_batches) <= {p["batchId"] for p in progress}
    assert all("triggerExecution" in json.loads(line)["durationMs"] for line in spark_lines)


def test_queries_added_altered_and_removed_while_the_job_runs(spark, tmp_path):
    """Live changes through the command log equal the same changes made to the reference
    between the same batches; a bad command is rejected and the job goes on."""
    from tsmon.kinds.bounded.queries import to_query
    from tsmon.query import parse_query
    from tsmon.query.aggregate import resolve_aggregate
    from tsmon.spark.commands import CommandLog

    job_path = tmp_path / "job.toml"
    job_path.write_text(JOB, encoding="utf-8")
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    files = make_files(4, seed=5)
    job = load_job(job_path)
    ref = reference_runtime(job)
    added = "QUERY n AS MIN(a.x, b.x) WITHIN 1"
    dip = "QUERY dip ON *.y WHEN last < mean(1s) - 0.2 EMIT series, last SINCE -3s"
    rise = "QUERY rise ON a.* WHEN last > mean(4 points) EMIT series, last"
    changes = {
        1: [("add", added), ("add", dip)],
        2: [
            ("alter", "ALTER QUERY s WITHIN 0.5 IMMEDIATELY"),
            ("add", "QUERY S AS MAX(a.x) WITHIN 1"),  # a duplicate name: rejected
            ("alter", rise),
        ],
        3: [("remove", "w"), ("remove", "wide")],
    }

    outputs: list[BatchOutput] = []
    queries: set[str] = set()
    runner = JobRunner(job, spark=spark, callback=outputs.append)
    runner.start()
    log = CommandLog(job.checkpoint)
    for i, rows in enumerate(files):
        for op, text in changes.get(i, []):
            log.submit(op, text)
            if text == added:
                ref.add_query(to_query(resolve_aggregate(parse_query(text), ["a.x", "b.x"])))
            elif text == dip:
                ref.coordinator.add(parse_query(text))
            elif text == rise:
                ref.coordinator.alter(parse_query(text))
            elif op == "alter":
                ref.alter_query("s", 0.5, immediately=True)
            elif text == "wide":
                ref.coordinator.remove_query(text)
            elif op == "remove":
                ref.remove_query(text)
        drop(incoming, f"part-{i:03d}.json", rows)
        outputs.clear()
        runner.process_all_available()
        good = [(SERIES[r["metric"]], r["metric"], int(r["time"]), float(r["v"])) for r in rows]
        events = run_file(ref, good)
        assert runner.answers() == ref.answers(), i
        assert [e for out in outputs for e in out.events] == events, i
        queries.update(e["query"] for e in events)
    runner.stop()
    assert set(runner.answers()) == {"s", "m", "n", "g"}
    assert {"dip", "rise", "wide"} <= queries  # each watch query fired at least once
    rejected = [s for s in log.states() if s["state"] == "rejected"]
    assert len(rejected) == 1 and "QUERY S" in rejected[0]["text"], log.states()  # duplicate
