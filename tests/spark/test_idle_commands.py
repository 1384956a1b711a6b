"""Commands on an idle job: a real ``tsmon run`` whose input has gone quiet applies ``tsmon
query add|alter`` in the next batch (a wake file in its control channel makes one), says so on
its console, and brings a watch query to the nodes with no new input (its ``SINCE`` history is
evaluated there, and the events reach the Parquet sink)."""

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

from tests.test_cli import REPO, tsmon
from tsmon.spark.commands import CommandLog

TRIGGER_S = 1
JOB = f"""
queries = "QUERY s AS SUM(a.x, b.x) WITHIN 2"
[job]
checkpoint = "ckpt"
trigger = "{TRIGGER_S}s"
[input]
kind = "files"
path = "incoming"
format = "csv"
columns = {{ series = "metric", ts = "time", value = "v" }}
[[sinks]]
kind = "parquet"
path = "out"
[[sinks]]
kind = "console"
"""
A_X = [0.5, 1.5, 0.2, 2.5, 0.9]  # a.x, one point a minute: two are above 1


def progress(root: Path) -> list[dict]:
    path = root / "ckpt" / "progress.jsonl"
    return [json.loads(line) for line in path.open()] if path.exists() else []


def wait_for(what, timeout: float = 240.0, every: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = what()
        if found is not None:
            return found
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout} s waiting for {what.__doc__}")


def quiet(root: Path) -> int:
    """The last batch, once the job is idle: its last batch wrote no control and no batch
    came in two trigger intervals since."""

    def settled() -> int | None:
        """the job to go idle"""
        records = progress(root)
        if not records or records[-1]["controlRows"] != 0:
            return None
        last = records[-1]["batchId"]
        time.sleep(2 * TRIGGER_S)
        return last if progress(root)[-1]["batchId"] == last else None

    return wait_for(settled)


def applied(log: CommandLog, command_id: str) -> dict:
    def state() -> dict | None:
        """the command to be applied"""
        row = {s["id"]: s for s in log.states()}[command_id]
        return row if row["state"] in ("applied", "rejected") else None

    return wait_for(state)


@pytest.mark.slow
@pytest.mark.spark
def test_commands_on_an_idle_job_are_applied_in_the_next_batch(tmp_path: Path) -> None:
    (tmp_path / "job.toml").write_text(JOB, encoding="utf-8")
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    rows = [f"a.x,{60_000 * i},{v}" for i, v in enumerate(A_X)] + ["b.x,0,1", "b.x,240000,2"]
    (incoming / "p0.csv").write_text("metric,time,v\n" + "\n".join(rows) + "\n")
    console = (tmp_path / "console.txt").open("w")
    job = subprocess.Popen(
        [sys.executable, "-m", "tsmon.cli", "run", str(tmp_path / "job.toml")],
        stdout=console,
        stderr=subprocess.STDOUT,
        cwd=REPO,
        env=dict(os.environ, COLUMNS="200"),
    )
    try:
        last = quiet(tmp_path)
        log = CommandLog(tmp_path / "ckpt")
        # a watch query with SINCE: evaluated at the nodes over their stored history
        started = time.monotonic()
        added = tsmon(
            "query", "add", "--job", str(tmp_path / "ckpt"),
            "QUERY late ON a.x WHEN last > 1 EMIT last SINCE -1h",
        )  # fmt: skip
        assert added.returncode == 0, added.stdout + added.stderr
        command_id = added.stdout.split(" as ")[1].split(";")[0]
        outcome = applied(log, command_id)
        latency = time.monotonic() - started
        assert (outcome["state"], outcome["batch"]) == ("applied", last + 1), outcome
        print(f"add applied {latency:.2f} s after it was submitted (trigger {TRIGGER_S} s)")

        def events() -> pd.DataFrame | None:
            """the replayed events of 'late'"""
            files = sorted((tmp_path / "out" / "events").glob("*.parquet"))
            frames = [pd.read_parquet(p) for p in files]
            found = pd.concat(frames) if frames else None
            return found if found is not None and len(found) else None

        found = wait_for(events)
        assert found["query"].tolist() == ["late", "late"]
        assert found["ts_ms"].tolist() == [60_000 * i for i, v in enumerate(A_X) if v > 1]
        assert found["value"].tolist() == [v for v in A_X if v > 1]
        assert found["replayed"].all()
        # an alter, once the job is idle again: the next batch again
        last = quiet(tmp_path)
        command_id = log.submit("alter", "ALTER QUERY s WITHIN 0.5")
        outcome = applied(log, command_id)
        assert (outcome["state"], outcome["batch"]) == ("applied", last + 1), outcome
        assert outcome["detail"] == "altered 's' to within 0.5"
        assert all(r["numInputRows"] == 0 for r in progress(tmp_path)[1:])  # no new input
    finally:
        job.send_signal(signal.SIGINT)
        job.wait(timeout=120)
        console.close()
    text = (tmp_path / "console.txt").read_text()
    assert "tsmon: batch" in text and "applied add command" in text, text[-3000:]
    assert "applied alter command" in text
    # Spark's own start-up lines are in the checkpoint's spark.log, not on the console
    assert "Setting default log level" not in text
    assert "Setting default log level" in (tmp_path / "ckpt" / "spark.log").read_text()
