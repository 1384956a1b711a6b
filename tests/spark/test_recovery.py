"""Recovery (issue item 7): ``tsmon run`` killed with SIGKILL mid-stream and restarted from its
checkpoint gives the answers and events of an uninterrupted run — no point lost, none counted twice.

The job runs in a subprocess (a real process to kill). Each input file is dropped once the job
is quiet (its last batch wrote no control), so batches are one file then control-only batches,
the composition the in-process reference :class:`BatchedRuntime` replays.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.spark.test_runtime import JOB as RUNTIME_JOB
from tests.spark.test_runtime import drop, make_files, reference

pytestmark = [pytest.mark.spark, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
JOB = RUNTIME_JOB.replace('checkpoint = "ckpt"', 'checkpoint = "ckpt"\ntrigger = "200ms"')


def start(job: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tsmon.cli", "run", str(job)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def progress(ckpt: Path) -> list[dict]:
    path = ckpt / "progress.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def wait_quiet(ckpt: Path, points: int, timeout: float = 120) -> list[dict]:
    """Wait until ``points`` input points were processed and the last batch wrote no control."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = progress(ckpt)
        if (
            lines
            and sum(p["numInputRows"] for p in lines) == points
            and not lines[-1]["controlRows"]
        ):
            return lines
        time.sleep(0.2)
    raise AssertionError(f"job not quiet after {timeout} s: {progress(ckpt)[-3:]}")


def test_sigkill_mid_stream_then_restart_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    job = tmp_path / "job.toml"
    job.write_text(JOB, encoding="utf-8")
    (tmp_path / "incoming").mkdir()
    files = make_files(5, seed=9)
    expected, expected_events = reference(files, job)
    ckpt = tmp_path / "ckpt"

    proc = start(job)
    done = 0
    try:
        for i, rows in enumerate(files):
            drop(tmp_path / "incoming", f"part-{i:03d}.json", rows)
            done += len(rows)
            if i == 2:  # kill while this file is being picked up, then restart
                time.sleep(0.5)
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
                proc = start(job)
            wait_quiet(ckpt, done)
    finally:
        proc.kill()
        proc.wait(timeout=30)

    lines = progress(ckpt)
    assert [p["batchId"] for p in lines] == list(range(len(lines)))  # one line per batch
    assert sum(p["numInputRows"] for p in lines) == sum(len(f) for f in files)
    answers = pd.read_parquet(
        ckpt.parent / "out" / "answers" / f"batch-{lines[-1]['batchId']:09d}.parquet"
    )
    got = {r.query: (r.value, r.lo, r.hi, r.as_of_ms) for r in answers.itertuples()}
    want = {q: (a.value, a.lo, a.hi, a.as_of_ms) for q, a in expected[-1].items()}
    assert got.keys() == want.keys()
    for q in want:  # nan == nan for unbounded values
        assert pd.Series(got[q]).equals(pd.Series(want[q])), (q, got[q], want[q])
    events = pd.concat(
        pd.read_parquet(p) for p in sorted((ckpt.parent / "out" / "events").iterdir())
    )  # one file per batch, replaced when a batch is replayed: in batch order
    got_events = [
        (e.query, e.series, e.ts_ms, e.value, json.loads(e.payload)) for e in events.itertuples()
    ]
    want_events = [
        (e["query"], e["series"], e["ts_ms"], e["value"], e["payload"])
        for batch in expected_events
        for e in batch
    ]
    assert got_events == want_events  # none lost, none duplicated
