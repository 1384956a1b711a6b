"""Scale-out: ``tsmon run job.toml --once`` against a standalone master and worker on loopback
(:class:`tsmon.spark.standalone.StandaloneCluster`) runs on the worker's executor and gives,
batch for batch, the answers of the in-process reference
:class:`~tsmon.engine.batched.BatchedRuntime`.

The job runs in a subprocess: the test session may already hold a local SparkSession (the
``spark`` fixture), and a process has one SparkContext. All input files are in place before
the job starts, so ``--once`` runs batch ``k`` = file ``k`` (files are taken one per batch in
modification-time order, made distinct here) with the control written by batch ``k − 1``, then
control-only batches until the coordinator writes none; :func:`reference_once` replays that.
"""

from __future__ import annotations

import csv
import json
import math
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.spark.test_runtime import JOB as RUNTIME_JOB
from tests.spark.test_runtime import SERIES, make_files, reference_runtime
from tsmon.spark.job import load_job
from tsmon.spark.session import JavaError, check_java
from tsmon.spark.standalone import ClusterError, StandaloneCluster

REPO = Path(__file__).resolve().parents[2]
NAME = "tsmon-standalone-test"
CONF = """
[job.spark_conf]
"spark.sql.shuffle.partitions" = "2"
"spark.driver.host" = "127.0.0.1"
"""


def job_text(master: str) -> str:
    """The job of ``test_runtime`` on CSV input, named, on ``master``, with few partitions."""
    head = f'name = "{NAME}"\ncheckpoint = "ckpt"\nmaster = "{master}"\ntrigger = "200ms"\n{CONF}'
    text = RUNTIME_JOB.replace('format = "json"', 'format = "csv"')
    assert text.count('checkpoint = "ckpt"\n') == 1, "test_runtime.JOB changed: adapt job_text"
    return text.replace('checkpoint = "ckpt"\n', head)


def write_csv(path: Path, rows: list[dict], mtime: float) -> None:
    """Rows as a CSV file with header ``metric,time,v``, modified at ``mtime``."""
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, ["metric", "time", "v"])
        writer.writeheader()
        writer.writerows(rows)
    os.utime(path, (mtime, mtime))


def reference_once(files: list[list[dict]], job_path: Path) -> list[dict[str, tuple]]:
    """Answers per batch, ``(value, lo, hi, as_of_ms)`` by query, as ``--once`` runs ``files``."""
    runtime = reference_runtime(load_job(job_path))
    batches = [
        [(SERIES[r["metric"]], r["metric"], int(r["time"]), float(r["v"])) for r in rows]
        for rows in files
    ]
    out = []
    for points in batches:
        runtime.run_batch(points)  # with the control of the batch before
        out.append(runtime.answers())
    while runtime.control:
        runtime.run_batch([])
        out.append(runtime.answers())
    return [{q: (a.value, a.lo, a.hi, a.as_of_ms) for q, a in ans.items()} for ans in out]


def sink_answers(out: Path, batch_id: int) -> dict[str, tuple]:
    """The answers the parquet sink wrote for one batch."""
    frame = pd.read_parquet(out / "answers" / f"batch-{batch_id:09d}.parquet")
    return {r.query: (r.value, r.lo, r.hi, r.as_of_ms) for r in frame.itertuples()}


def same(got: dict[str, tuple], want: dict[str, tuple]) -> bool:
    """Exactly equal answers, NaN equal to NaN (an unbounded value)."""
    return got.keys() == want.keys() and all(
        x == y or (math.isnan(x) and math.isnan(y))
        for q in want
        for x, y in zip(got[q], want[q], strict=True)
    )


def completed_apps(cluster: StandaloneCluster, timeout: float = 20) -> list[dict[str, Any]]:
    """The master's completed applications, once there is one (the master learns of the end
    of a driver asynchronously)."""
    deadline = time.monotonic() + timeout
    while not (apps := cluster.status()["completedapps"]) and time.monotonic() < deadline:
        time.sleep(0.2)
    return apps


def need_java() -> None:
    """Skip the test, with the reason, when Java 17+ is missing."""
    try:
        check_java()
    except JavaError as e:
        pytest.skip(str(e))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"workers": 0}, "workers >= 1"),
        ({"memory": "1x"}, "like 512m or 1g"),
        ({"port": 70000}, "port must be in 0..65535"),
        ({"port": 7077, "webui_port": 7077}, "must differ"),
    ],
)
def test_bad_arguments_are_value_errors(options: dict, message: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=message):
        StandaloneCluster(tmp_path, **options)


def test_a_busy_port_is_one_clear_error_before_any_jvm_starts(tmp_path: Path) -> None:
    need_java()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(ClusterError, match=f"master port {port} on 127.0.0.1 is in use"):
            StandaloneCluster(tmp_path, port=port).start()
        cli = subprocess.run(
            [sys.executable, "-m", "tsmon.cli", "cluster", "--port", str(port), "--work-dir", "w"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )
    assert cli.returncode == 2
    assert not list(tmp_path.iterdir())  # nothing was started, no directory made
    assert cli.stdout.splitlines()[-1].startswith(f"error: the master port {port}")


@pytest.mark.spark
@pytest.mark.slow
def test_job_file_runs_on_a_standalone_cluster_and_equals_the_batch_runtime(
    tmp_path: Path,
) -> None:
    need_java()
    files = make_files(2, seed=5)
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    first = time.time() - 60
    for i, rows in enumerate(files):
        write_csv(incoming / f"part-{i:03d}.csv", rows, mtime=first + i)

    with StandaloneCluster(tmp_path / "cluster", workers=1, cores=1, memory="1g") as cluster:
        job = tmp_path / "job.toml"
        job.write_text(job_text(cluster.url), encoding="utf-8")
        run = subprocess.run(
            [sys.executable, "-m", "tsmon.cli", "run", str(job), "--once"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        apps = completed_apps(cluster)

    # (a) the application ran on the cluster: the master lists it as finished, and the
    # worker launched its executor (a directory with the executor's stderr)
    assert [(app["name"], app["state"]) for app in apps] == [(NAME, "FINISHED")]
    assert list((tmp_path / "cluster" / "worker-0" / apps[0]["id"]).glob("*/stderr"))

    # (b) every batch's answers equal the in-process reference on the same batches
    expected = reference_once(files, job)
    lines = (tmp_path / "ckpt" / "progress.jsonl").read_text(encoding="utf-8").splitlines()
    progress = [json.loads(line) for line in lines]
    assert [p["batchId"] for p in progress] == list(range(len(expected)))
    assert [p["numInputRows"] for p in progress[: len(files)]] == [len(f) for f in files]
    for batch_id, want in enumerate(expected):
        got = sink_answers(tmp_path / "out", batch_id)
        assert same(got, want), (batch_id, got, want)
