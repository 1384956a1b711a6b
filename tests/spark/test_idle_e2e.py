"""Issue 16 on Spark: one of four sources stops; once it is idle the answers over the other
three advance with every file, the progress names it, and the job equals the in-process batch
runtime batch for batch. A point stamped two days after the batch's clock is a dead letter."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.spark.test_runtime import drop, progress_lines, reference_runtime, run_file
from tsmon.spark.job import load_job
from tsmon.spark.runtime import JobRunner

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SOURCES = {"a.x": "A", "b.x": "B", "c.x": "C", "d.x": "D"}
JOB = """
queries = '''
QUERY three AS AVG(a.x, b.x, c.x) WITHIN 1
QUERY four AS AVG(a.x, b.x, c.x, d.x) WITHIN 1
'''

[job]
checkpoint = "ckpt"
idle_timeout = "3s"

[input]
kind = "files"
path = "incoming"
format = "json"
columns = { series = "metric", ts = "time", value = "v" }

[sources]
"a.*" = "A"
"b.*" = "B"
"c.*" = "C"
"d.*" = "D"

[filters]
period = "1s"
shrink = 0.1

[[sinks]]
kind = "parquet"
path = "out"
"""
FILES = 7
STOP_AFTER = 1  # d.x sends nothing after file 1


def files() -> list[list[dict]]:
    out = []
    for f in range(FILES):
        rows = []
        for k in range(8):  # 2 s of event time per file
            ts = f * 2_000 + k * 250
            for i, series in enumerate(SOURCES):
                if series != "d.x" or f <= STOP_AFTER:
                    value = 10 * i + ((ts // 250 + i) % 7) * 0.4
                    rows.append({"metric": series, "time": str(ts), "v": repr(value)})
        out.append(rows)
    return out


def test_answers_over_the_other_sources_advance_once_one_is_idle(spark, tmp_path: Path) -> None:
    job_path = tmp_path / "job.toml"
    job_path.write_text(JOB, encoding="utf-8")
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    data = files()
    future = {"metric": "a.x", "time": str(int(time.time() * 1000) + 2 * 86_400_000), "v": "1"}
    reference = reference_runtime(load_job(job_path))
    runner = JobRunner(load_job(job_path), spark=spark)
    runner.start()
    seen, expected = [], []
    for n, rows in enumerate(data):
        drop(incoming, f"part-{n:03d}.json", rows + ([future] if n == 3 else []))
        runner.process_all_available()
        seen.append(runner.answers())
        good = [(SOURCES[r["metric"]], r["metric"], int(r["time"]), float(r["v"])) for r in rows]
        run_file(reference, good)
        expected.append(reference.answers())
    runner.stop()
    assert seen == expected  # batch for batch, the idle decision included
    stopped_at = STOP_AFTER * 2_000 + 1_750  # D's newest time
    # file 2: D is 2 s behind (< 3 s), answers wait for it; from file 3 on it is idle
    as_of = [n * 2_000 + 1_749 if n != 2 else stopped_at - 1 for n in range(FILES)]
    assert [a["three"].as_of_ms for a in seen] == as_of
    assert [a["four"].as_of_ms for a in seen] == as_of
    progress = [json.loads(line) for line in progress_lines(tmp_path)]
    assert progress[-1]["idleSources"] == {"D": stopped_at}
    assert progress[-1]["waitingOn"] == {"four": ["D"]}
    dead = pd.concat(pd.read_parquet(p) for p in (tmp_path / "out" / "dead_letters").iterdir())
    assert dead[["series", "reason"]].values.tolist() == [["a.x", "future_timestamp"]]
