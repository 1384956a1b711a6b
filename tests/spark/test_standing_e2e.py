"""Standing queries on Spark: stream models in the source nodes' state, queries in partition
keys of the same stateful operator, the snapshot through the control channel. After every
input file the evaluations equal the in-process batch runtime's with the same one-batch delay,
and every linear evaluation equals the aggregate of the newest values at its tick."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pandas as pd
import pytest

from tests.spark.test_runtime import batch_reference, drop, job_in
from tsmon.kinds.standing.partition import PARTITION_PREFIX
from tsmon.query import parse_query
from tsmon.spark.commands import CommandLog
from tsmon.spark.runtime import JobRunner

pytestmark = [pytest.mark.spark, pytest.mark.slow]

JOB = """
queries = '''
QUERY port AS SUM(0.3*ibm.px + 0.7*msft.px) WITHIN 0.5 CONFIDENCE 0.9
QUERY all AS AVG(ibm.px, msft.px, aapl.px) WITHIN 1% CONFIDENCE 0.95
QUERY peak AS MAX OVER 3s OF AVG(ibm.px, aapl.px) WITHIN 0.5 CONFIDENCE 0.9
'''

[job]
checkpoint = "ckpt"

[input]
kind = "files"
path = "incoming"
format = "json"
columns = { series = "metric", source = "site", ts = "time", value = "v" }

[standing]
tick = "1s"
partitions = 3
k = 10

[[sinks]]
kind = "parquet"
path = "out"
"""
SITE = {"ibm.px": "ny", "msft.px": "ny", "aapl.px": "sf"}
WEIGHTS = {
    "port": {"ibm.px": 0.3, "msft.px": 0.7},
    "all": dict.fromkeys(SITE, 1 / 3),
    "late": {"ibm.px": 1.0, "aapl.px": -1.0},
}


def make_files(n: int, seed: int = 5) -> list[list[dict]]:
    """Geometric-Brownian-like prices every 50 ms, one file per second of event time."""
    rng = random.Random(seed)
    price = {"ibm.px": 100.0, "msft.px": 50.0, "aapl.px": 80.0}
    files = []
    for f in range(n):
        rows = []
        for step in range(20):
            for series, site in SITE.items():
                price[series] *= 1 + rng.gauss(0.0005, 0.004)
                ts = f * 1_000 + step * 50
                rows.append({"metric": series, "site": site, "time": ts, "v": price[series]})
        files.append(rows)
    return files


def newest(rows: list[dict], ts_ms: int) -> dict[str, float]:
    """Each series' newest value at or before ``ts_ms``."""
    out: dict[str, tuple[int, float]] = {}
    for r in rows:
        if r["time"] <= ts_ms and r["time"] >= out.get(r["metric"], (-1, 0.0))[0]:
            out[r["metric"]] = (r["time"], r["v"])
    return {s: v for s, (_, v) in out.items()}


def test_standing_queries_on_spark_equal_the_batch_runtime(spark, tmp_path: Path) -> None:
    job = job_in(tmp_path, JOB)
    ref = batch_reference(job)
    files = make_files(6)
    runner = JobRunner(job, spark=spark)
    runner.start()
    log = CommandLog(job.checkpoint)
    added = "QUERY late AS SUM(ibm.px, -1*aapl.px) WITHIN 0.2 CONFIDENCE 0.9"
    seen: list[dict] = []
    checked = 0
    for i, rows in enumerate(files):
        if i == 2:  # a live change: both apply it before the same batch
            log.submit("add", added)
            ref.coordinator.add(parse_query(added))
        if i == 4:
            log.submit("alter", "ALTER QUERY port WITHIN 0.05")
            ref.coordinator.alter_precision("port", 0.05)
        bad = [{"metric": "ibm.px", "site": PARTITION_PREFIX + "0", "time": 1, "v": 1.0}]
        drop(tmp_path / "incoming", f"part-{i:03d}.json", rows + (bad if i == 1 else []))
        runner.process_all_available()
        ref.run_batch([(r["site"], r["metric"], r["time"], r["v"]) for r in rows])
        while ref.control:  # the control-only batches Spark runs for the ctrl files
            ref.run_batch([])
        assert runner.answers("standing") == ref.answers("standing"), i
        seen += rows
        for name, weights in WEIGHTS.items():
            a = runner.answers("standing").get(name)
            if a is None:
                continue
            values = newest(seen, a.ts_ms)
            assert a.value == pytest.approx(sum(w * values[s] for s, w in weights.items()))
            checked += 1
    runner.stop()
    assert checked >= 12
    assert set(runner.answers("standing")) == {"port", "all", "peak", "late"}
    assert runner.answers("standing")["port"].eps == 0.05
    out = tmp_path / "out"
    evaluations = pd.concat(pd.read_parquet(p) for p in sorted((out / "standing").iterdir()))
    assert set(evaluations["query"]) == {"port", "all", "peak", "late"}
    dead = pd.concat(pd.read_parquet(p) for p in sorted((out / "dead_letters").iterdir()))
    assert list(dead["reason"]) == ["bad_source"]
    progress = [json.loads(x) for x in (tmp_path / "ckpt" / "progress.jsonl").open()]
    totals = progress[-1]["standing"]
    assert totals["evaluations"] == len(evaluations)
    assert totals["estimations"] > 0 and totals["missed_deadlines"] == 0
