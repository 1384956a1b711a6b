"""Summary queries on Spark: each summary lives in its series' source node (RocksDB state) and
only answers leave it; after every input file the answers equal the in-process batch runtime's.
A downstream reader follows SWAT-ASR through the job's files: every answer it gets, from its
cache or from the source, lies within its bound of the exact inner product over the raw window
at the answer's arrival count."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.spark.test_runtime import batch_reference, drop, job_in
from tsmon.query import parse_query
from tsmon.spark.commands import CommandLog
from tsmon.spark.readers import JobReader
from tsmon.spark.runtime import JobRunner

pytestmark = [pytest.mark.spark, pytest.mark.slow]

N = 64
JOB = f"""
queries = '''
QUERY recent AS INNER(temp.v, [8, 4, 2, 1] AT [0, 1, 2, 3]) OVER {N} points
QUERY errs AS APPROX COUNT(err.n > 0) OVER 100 points WITHIN 10%
QUERY above AS COUNT(temp.v > AVG)
'''

[job]
checkpoint = "ckpt"

[input]
kind = "files"
path = "incoming"
format = "json"
columns = {{ series = "metric", source = "site", ts = "time", value = "v" }}

[replication]
phase = "1s"

[[sinks]]
kind = "parquet"
path = "out"
"""


def make_files(n: int, seed: int = 2) -> list[list[dict]]:
    """A temperature random walk at site s1 and error counts at s2, 40 points per second."""
    rng = random.Random(seed)
    temp = 20.0
    files = []
    for f in range(n):
        rows = []
        for step in range(40):
            ts = f * 1_000 + step * 25
            temp += rng.gauss(0, 0.5)
            rows.append({"metric": "temp.v", "site": "s1", "time": ts, "v": temp})
            rows.append({"metric": "err.n", "site": "s2", "time": ts, "v": rng.choice([0, 0, 1])})
        files.append(rows)
    return files


def test_summaries_and_a_reader_on_spark(spark, tmp_path: Path) -> None:
    job = job_in(tmp_path, JOB)
    ref = batch_reference(job)
    files = make_files(8)
    runner = JobRunner(job, spark=spark)
    runner.start()
    reader = JobReader(job.checkpoint, "dash", "temp.v", N, phase_ms=job.replica_phase_ms)
    rng = np.random.default_rng(0)
    temps: list[float] = []
    start: int | None = None
    asked: dict[int, tuple] = {}
    local = forwarded = 0

    def check(a) -> int:
        indices, weights, delta = asked.pop(a.qid)
        if math.isinf(a.bound):
            return 0  # expired: its positions left the window before the source got it
        values = np.array(temps[start:])
        exact = float(np.dot(weights, values[a.count - 1 - np.array(indices)]))
        assert abs(a.value - exact) <= a.bound + 1e-9, (a, exact)
        assert a.bound <= delta
        return 1

    for i, rows in enumerate(files):
        if i == 5:  # a summary query added live
            CommandLog(job.checkpoint).submit(
                "add", "QUERY late AS POINT(temp.v, 1) OVER 32 points"
            )
            ref.coordinator.add(parse_query("QUERY late AS POINT(temp.v, 1) OVER 32 points"))
        drop(tmp_path / "incoming", f"part-{i:03d}.json", rows)
        runner.process_all_available()
        ref.run_batch([(r["site"], r["metric"], r["time"], r["v"]) for r in rows])
        while ref.control:
            ref.run_batch([])
        assert runner.answers("summary") == ref.answers("summary"), i
        temps += [r["v"] for r in rows if r["metric"] == "temp.v"]
        forwarded += sum(check(a) for a in reader.poll())
        if reader.count == 0:
            continue
        if start is None:
            start = len(temps) - reader.count
        for _ in range(30):  # read-heavy: the source replicates segments to the reader
            held = min(reader.count, N)
            indices = sorted(rng.choice(held, 2, replace=False).tolist())
            weights = rng.normal(0, 1, 2).tolist()
            a = reader.query(indices, weights, 5.0)
            asked[reader.last_qid] = (indices, weights, 5.0)
            if a is not None:
                local += check(a)
    runner.process_all_available()
    forwarded += sum(check(a) for a in reader.poll())
    runner.stop()
    assert set(runner.answers("summary")) == {"recent", "errs", "above", "late"}
    assert local > 0 and forwarded > 0, (local, forwarded)
    out = tmp_path / "out" / "summaries"
    answers = pd.concat(pd.read_parquet(p) for p in sorted(out.iterdir()))
    assert set(answers["query"]) == {"recent", "errs", "above", "late"}
    replicas = sorted((tmp_path / "ckpt" / "replicas").iterdir())
    assert replicas and json.loads(replicas[-1].read_text())["clock"][0][:3] == ["temp.v", N, 1]
