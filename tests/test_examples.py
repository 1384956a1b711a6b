"""Every example in ``examples/`` run as a user runs it (real processes, the shipped NAB data),
its outputs checked against oracles recomputed here.

Each run works on a copy of ``examples/`` in ``<tmp>/repo/examples`` beside a link
``<tmp>/shared`` to the shared data, so the examples' relative paths
(``../shared/data/nab`` beside the repository) are used verbatim and their checkpoints and
outputs stay out of the source tree."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.engine.test_before_windows import spikes_oracle
from tests.test_cli import REPO, tsmon
from tsmon.core.window_spec import WindowSpec

SHARED = (REPO / ".." / "shared").resolve()
NAB = SHARED / "data" / "nab" / "realAWSCloudwatch"
BEFORE_1H = WindowSpec.time(3_600_000, before=True)


@pytest.fixture
def examples(tmp_path: Path) -> Path:
    if not NAB.is_dir():
        pytest.skip(f"NAB data not found at {NAB} (shared data checkout missing)")
    shutil.copytree(REPO / "examples", tmp_path / "repo" / "examples")
    (tmp_path / "shared").symlink_to(SHARED)
    return tmp_path / "repo" / "examples"


def nab(instance: str) -> tuple[np.ndarray, np.ndarray]:
    frame = pd.read_csv(NAB / f"ec2_cpu_utilization_{instance}.csv")
    ts = pd.to_datetime(frame["timestamp"], utc=True).astype("int64").to_numpy() // 1_000_000
    return ts, frame["value"].to_numpy(dtype=np.float64)


def events_of(out: Path, query: str) -> pd.DataFrame:
    frames = [pd.read_parquet(p) for p in sorted((out / "events").glob("*.parquet"))]
    events = pd.concat(frames) if frames else pd.DataFrame(columns=["query"])
    return events[events["query"] == query]


@pytest.mark.slow
@pytest.mark.spark
def test_nab_spikes_job(examples: Path) -> None:
    job = examples / "nab_spikes" / "job.toml"
    check = tsmon("check", str(examples / "nab_spikes" / "spikes.tsq"))
    assert check.returncode == 0 and "3 statements OK" in check.stdout, check.stdout
    run = tsmon("run", str(job), "--once", timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    out = " ".join(run.stdout.split())
    assert "query 'hot_hosts' waits: no series matches host*.cpu (series now: 'nab.cpu')" in out
    spikes = events_of(examples / "nab_spikes" / "out", "spikes")
    expected, closest = spikes_oracle(*nab("5f5533"), BEFORE_1H)
    assert closest > 1e-6 and len(expected) == 25
    assert spikes["ts_ms"].tolist() == expected
    shown = tsmon("show", "events", "--job", str(job), "--query", "spikes")
    assert "events (25 rows)" in shown.stdout, shown.stdout
    png = examples / "cpu_max.png"
    plot = tsmon("plot", "--job", str(job), "--query", "cpu_max", "--out", str(png))
    assert plot.returncode == 0, plot.stdout + plot.stderr
    said = " ".join(plot.stdout.split())
    inside = re.search(r"inside the bounds in (\d+) of (\d+) known answers", said)
    assert inside and inside.group(1) == inside.group(2) != "0", plot.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_monitor_script(examples: Path) -> None:
    script = examples / "monitor_nab.py"
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=REPO, timeout=600
    )
    assert run.returncode == 0, run.stdout + run.stderr
    counts = dict(re.findall(r"spikes on (\S+): (\d+)", run.stdout))
    for instance in ("24ae8d", "53ea38", "5f5533", "fe7f93"):
        expected, _ = spikes_oracle(*nab(instance), BEFORE_1H)
        assert int(counts[f"ec2.{instance}.cpu"]) == len(expected), instance
    lo, hi, exact = map(
        float, re.search(r"fleet: \S+ in \[(\S+), (\S+)\], exact (\S+)", run.stdout).groups()
    )
    series = {i: nab(i) for i in ("24ae8d", "53ea38", "5f5533", "fe7f93")}
    last = np.mean([values[-1] for _, values in series.values()])
    assert exact == pytest.approx(last, abs=1e-4) and lo - 1e-4 <= last <= hi + 1e-4
    # the busiest over the hour before the newest point (both ends of the window agree)
    now = max(ts[-1] for ts, _ in series.values())
    for after in (now - 3_600_000, now - 3_600_000 - 1):
        sums = {i: values[ts > after].sum() for i, (ts, values) in series.items()}
        busiest = re.search(r"busiest: (\S+),", run.stdout)[1]
        assert busiest == f"ec2.{max(sums, key=sums.get)}"


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.spark
def test_http_alerts_job(examples: Path) -> None:
    directory = examples / "http_alerts"
    port = int(re.search(r"127\.0\.0\.1:(\d+)/alerts", (directory / "job.toml").read_text())[1])
    receiver = subprocess.Popen(
        [sys.executable, str(directory / "receiver.py"), str(port)],
        stdout=subprocess.PIPE,
        text=True,
    )
    log = (directory / "job.log").open("w")
    api = free_port()  # the job file's 8080, moved to a free port for the test
    job = subprocess.Popen(
        [sys.executable, "-m", "tsmon.cli", "run", str(directory / "job.toml"), "--http",
         f"127.0.0.1:{api}"],
        stdout=log, stderr=subprocess.STDOUT, cwd=REPO, env=dict(os.environ, COLUMNS="200"),
    )  # fmt: skip
    base = f"http://127.0.0.1:{api}"
    try:
        assert receiver.stdout.readline().startswith("receiving alerts on")
        alerts = []
        while len(alerts) < 25:  # the 25 spikes of the recording, as they are replayed
            line = receiver.stdout.readline()
            assert line, "the receiver stopped"
            alerts.append(line.split())
        queries = json.loads(urllib.request.urlopen(f"{base}/queries", timeout=30).read())
        assert queries["waiting"] == {
            "hot_hosts": "no series matches host*.cpu (series now: 'nab.cpu')"
        }
        # a query added over HTTP on the job, idle once the replay is done
        wait_for_rows(directory / "ckpt", 4032)
        request = urllib.request.Request(
            f"{base}/queries?wait=60",
            data=b"QUERY low ON nab.* WHEN last < 1 SINCE -1h",
            headers={"Content-Type": "text/plain"},
            method="POST",
        )
        reply = json.loads(urllib.request.urlopen(request, timeout=90).read())
        assert (reply["state"], reply["detail"]) == (
            "applied",
            "added watch query 'low' at every source node",
        )
    finally:
        job.send_signal(signal.SIGINT)
        job.wait(timeout=120)
        receiver.send_signal(signal.SIGINT)
        receiver.communicate(timeout=30)  # drains its pipe: wait() on a full one hangs
        log.close()
    expected, _ = spikes_oracle(*nab("5f5533"), BEFORE_1H)
    times = [pd.Timestamp(t, unit="ms", tz="UTC") for t in expected]
    assert [a[1:3] for a in alerts] == [["spikes", "nab.cpu"]] * 25
    assert [pd.Timestamp(a[3]) for a in alerts] == times  # in order, each once
    spikes = events_of(directory / "out", "spikes")
    assert spikes["ts_ms"].tolist() == expected


def wait_for_rows(checkpoint: Path, rows: int, timeout: float = 300.0) -> None:
    """Until ``rows`` input rows were read and the job wrote no control in its last batch."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        progress = checkpoint / "progress.jsonl"  # written after the job's first batch
        lines = progress.read_text().splitlines() if progress.exists() else []
        records = [json.loads(line) for line in lines]
        done = records and records[-1]["controlRows"] == 0
        if done and sum(r["numInputRows"] for r in records) == rows:
            return
        time.sleep(0.5)
    raise AssertionError(f"the job did not read {rows} rows")


@pytest.mark.slow
@pytest.mark.spark
def test_fleet_generator_job(examples: Path) -> None:
    from tsmon.streams.fleet import STREAM_START_MS, FleetStream

    job = examples / "fleet" / "job.toml"
    run = tsmon("run", str(job), "--once", timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    fleet = FleetStream(10, 15, 300_000, STREAM_START_MS, 7)
    values = fleet.values(0, 144)
    ts = fleet.ts(0, 144)
    column = {name: i for i, name in enumerate(fleet.series())}
    out = examples / "fleet" / "out"
    # top-k: the final set is the exact top 3 by requests over the hour before the newest point
    topk = pd.concat(pd.read_parquet(p) for p in sorted((out / "topk").glob("*.parquet")))
    final = topk[topk["query"] == "busiest"].iloc[-1]
    assert final["settled"]
    for after in (ts[-1] - 3_600_000, ts[-1] - 3_600_000 - 1):  # either end of the window
        sums = {
            f"host{h:03d}": values[ts > after, column[f"host{h:03d}.requests"]].sum()
            for h in range(10)
        }
        assert json.loads(final["members"]) == sorted(sorted(sums, key=sums.get)[-3:])
    # bounded: every answer holds the exact average latency at its time
    answers = pd.concat(pd.read_parquet(p) for p in sorted((out / "answers").glob("*.parquet")))
    latency = [column[f"host{h:03d}.latency_ms"] for h in range(10)]
    checked = 0
    for a in answers[answers["query"] == "fleet_latency"].itertuples():
        if np.isnan(a.value):
            continue
        exact = values[np.searchsorted(ts, a.as_of_ms, side="right") - 1, latency].mean()
        assert a.lo - 1e-9 <= exact <= a.hi + 1e-9
        checked += 1
    assert checked > 0
    # standing: each evaluation is the exact average CPU of the three at its time
    standing = pd.concat(pd.read_parquet(p) for p in sorted((out / "standing").glob("*.parquet")))
    trio = [column[f"host00{h}.cpu"] for h in range(3)]
    for a in standing[standing["query"] == "cpu_trio"].itertuples():
        exact = values[np.searchsorted(ts, a.ts_ms, side="right") - 1, trio].mean()
        assert a.value == pytest.approx(exact, abs=1e-9)
    assert len(standing) > 0


#: The NAB files of examples/nab_csv_dir (its job file's comment), and the rows taken of each.
CSV_DIR_FILES = ("ec2_cpu_utilization_24ae8d", "ec2_cpu_utilization_53ea38",
                 "ec2_cpu_utilization_fe7f93", "rds_cpu_utilization_cc0c53")  # fmt: skip
CSV_DIR_ROWS = 300


def nab_file(stem: str, rows: int) -> tuple[np.ndarray, np.ndarray]:
    frame = pd.read_csv(NAB / f"{stem}.csv").head(rows)
    ts = pd.to_datetime(frame["timestamp"], utc=True).astype("int64").to_numpy() // 1_000_000
    return ts, frame["value"].to_numpy(dtype=np.float64)


def run_csv_dir_job(directory: Path) -> None:
    """Drop the NAB slices into the job's ``incoming/`` with ``drop.py``, run the job with
    ``--once``, and check its spikes (exact, per series) and its bounded average (every known
    answer holds the exact average of the EC2 series' latest values at its time)."""
    files = [f"../shared/data/nab/realAWSCloudwatch/{stem}.csv" for stem in CSV_DIR_FILES]
    drop = subprocess.run(
        [sys.executable, str(directory.parent / "nab_csv_dir" / "drop.py"), "--rows",
         str(CSV_DIR_ROWS), "--to", str(directory / "incoming"), *files],
        capture_output=True, text=True, cwd=directory.parents[1], timeout=60,
    )  # fmt: skip
    assert drop.returncode == 0, drop.stdout + drop.stderr
    assert len(list((directory / "incoming").glob("nab-*.csv"))) == 5  # 25 h in slices of 6 h
    run = tsmon("run", str(directory / "job.toml"), "--once", timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    total = CSV_DIR_ROWS * len(CSV_DIR_FILES)
    assert f"rows in ({total} accepted, 0 dead letters)" in " ".join(run.stdout.split())
    series = {f"aws.{stem}": nab_file(stem, CSV_DIR_ROWS) for stem in CSV_DIR_FILES}
    spikes = events_of(directory / "out", "spikes")
    for name, (ts, values) in series.items():
        expected, closest = spikes_oracle(ts, values, BEFORE_1H)
        assert closest > 1e-6 and expected, name
        assert spikes[spikes["series"] == name]["ts_ms"].tolist() == expected, name
    assert len(spikes) == 54
    out = directory / "out" / "answers"
    answers = pd.concat(pd.read_parquet(p) for p in sorted(out.glob("*.parquet")))
    known = answers[(answers["query"] == "ec2_cpu") & answers["value"].notna()]
    ec2 = [s for name, s in series.items() if name.startswith("aws.ec2_")]
    for a in known.itertuples():
        exact = np.mean([v[np.searchsorted(t, a.as_of_ms, side="right") - 1] for t, v in ec2])
        assert a.lo - 1e-9 <= exact <= a.hi + 1e-9 and a.hi - a.lo <= 2 + 1e-9, a
    assert len(known) >= 4  # from the second file on (the first one's values set the filters)


@pytest.mark.slow
@pytest.mark.spark
def test_nab_csv_dir_job(examples: Path) -> None:
    check = tsmon("check", str(examples / "nab_csv_dir" / "aws.tsq"))
    assert check.returncode == 0 and "2 statements OK" in check.stdout, check.stdout
    run_csv_dir_job(examples / "nab_csv_dir")


@pytest.mark.slow
@pytest.mark.spark
def test_socket_jsonl_job(examples: Path) -> None:
    directory = examples / "socket_jsonl"
    job_file = directory / "job.toml"
    port = free_port()  # the job file's 9999, moved to a free port for the test
    text = job_file.read_text()
    assert text.count("port = 9999\n") == 1
    job_file.write_text(text.replace("port = 9999\n", f"port = {port}\n"))
    stems = ("ec2_cpu_utilization_24ae8d", "ec2_cpu_utilization_fe7f93")
    feeder = subprocess.Popen(
        [sys.executable, str(directory / "feed.py"), "--port", str(port), "--rows", "300",
         "--rate", "40", "--wait", "300",
         *(f"../shared/data/nab/realAWSCloudwatch/{stem}.csv" for stem in stems)],
        stdout=subprocess.PIPE, text=True, cwd=examples.parent,
    )  # fmt: skip
    log_path = directory / "job.log"
    try:
        assert feeder.stdout.readline() == f"serving 600 lines on 127.0.0.1:{port}\n"
        with log_path.open("w") as log:
            job = subprocess.Popen(
                [sys.executable, "-m", "tsmon.cli", "run", str(job_file)],
                stdout=log, stderr=subprocess.STDOUT, cwd=REPO, env=dict(os.environ, COLUMNS="200"),
            )  # fmt: skip
            try:
                assert feeder.stdout.readline() == "sent 600 lines\n"
                wait_for_rows(directory / "ckpt", 600)
            finally:
                job.send_signal(signal.SIGTERM)  # a socket job runs until stopped
                assert job.wait(timeout=120) == 0
        assert feeder.wait(timeout=30) == 0  # it ends when the job closes the connection
    finally:
        if feeder.poll() is None:
            feeder.kill()
    said = " ".join(log_path.read_text().split())
    assert "interrupted: stopped" in said
    assert re.search(r"done: \d+ batches, 600 rows in \(600 accepted, 0 dead letters\)", said)
    series = {f"aws.{stem}": nab_file(stem, 300) for stem in stems}
    spikes = events_of(directory / "out", "spikes")
    for name, (ts, values) in series.items():
        expected, closest = spikes_oracle(ts, values, BEFORE_1H)
        assert closest > 1e-6 and expected, name
        assert spikes[spikes["series"] == name]["ts_ms"].tolist() == expected, name
    progress = [json.loads(line) for line in (directory / "ckpt" / "progress.jsonl").open()]
    out = directory / "out" / "answers"
    answers = pd.concat(pd.read_parquet(p) for p in sorted(out.glob("*.parquet")))
    known = answers[(answers["query"] == "cpu_max") & answers["value"].notna()]
    for a in known.itertuples():  # the highest latest value of the two at the answer's time
        exact = max(v[np.searchsorted(t, a.as_of_ms, side="right") - 1] for t, v in series.values())
        assert a.lo - 1e-9 <= exact <= a.hi + 1e-9 and a.hi - a.lo <= 2 + 1e-9, a
    # known from the batch after the first points on (that one's values set the filters)
    assert len(known) > 0 or sum(p["numInputRows"] > 0 for p in progress) < 2


@pytest.mark.slow
@pytest.mark.spark
def test_standalone_job(examples: Path, tmp_path: Path) -> None:
    from tests.spark.test_standalone import completed_apps, need_java
    from tsmon.spark.standalone import StandaloneCluster

    need_java()
    directory = examples / "standalone"
    job_file = directory / "job.toml"
    text = job_file.read_text()
    master = 'master = "spark://127.0.0.1:7077"'
    assert text.count(master) == 1
    with StandaloneCluster(tmp_path / "cluster", workers=1, cores=1, memory="1g") as cluster:
        job_file.write_text(text.replace(master, f'master = "{cluster.url}"'))  # a free port
        run_csv_dir_job(directory)  # the answers of examples/nab_csv_dir, on the cluster
        apps = completed_apps(cluster)
    assert [(app["name"], app["state"]) for app in apps] == [("nab-standalone", "FINISHED")]
    assert list((tmp_path / "cluster" / "worker-0" / apps[0]["id"]).glob("*/stderr"))
