"""``[http]`` in a job file and ``tsmon run --http``: bad values refused before Spark starts
(one ``error:`` line), and a ``tsmon run --once`` whose webhook gets every event."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pandas as pd
import pytest

from tests.http.test_webhook import Endpoint
from tests.test_cli import tsmon
from tsmon.spark.job import HttpSpec, JobError, parse_job

BASE = {"job": {"checkpoint": "ck"}, "input": {"kind": "generator"}}
JOB = """
queries = '''
QUERY s AS SUM(a.x, b.x) WITHIN 2
QUERY big ON *.x WHEN last > 1.5 EMIT series, last
'''
[job]
name = "cli-http"
checkpoint = "ckpt"
[input]
kind = "files"
path = "incoming"
format = "csv"
columns = { series = "metric", ts = "time", value = "v" }
[registers]
retention = "10s"
[[sinks]]
kind = "parquet"
path = "out"
"""


def test_the_http_table_is_read_with_its_defaults():
    job = parse_job({**BASE, "http": {"listen": "127.0.0.1:8080"}}, Path("."))
    assert job.http == HttpSpec("127.0.0.1:8080", None, "json")
    assert parse_job(BASE, Path(".")).http == HttpSpec()
    hook = {"webhook": "http://h:9093/api/v2/alerts", "webhook_format": "alertmanager"}
    assert parse_job({**BASE, "http": hook}, Path(".")).http == HttpSpec(None, *hook.values())


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"listen": "8080"}, "[http] listen must be host:port, e.g. 127.0.0.1:8080, got '8080'"),
        ({"listen": "h:99999"}, "[http] listen must be host:port"),
        ({"webhook": "h:9093/hook"}, "[http] webhook must be an http(s):// URL"),
        ({"webhook_format": "slack"}, "webhook_format must be one of ['json', 'alertmanager', "),
        ({"port": 8080}, "unknown key 'port' in [http]"),
    ],
)
def test_a_bad_http_table_names_the_key(table, message):
    with pytest.raises(JobError, match=re.escape(message)):
        parse_job({**BASE, "http": table}, Path("."), "job.toml")


def test_a_bad_address_is_refused_before_spark_starts(tmp_path: Path):
    (tmp_path / "job.toml").write_text(JOB, encoding="utf-8")
    (tmp_path / "incoming").mkdir()  # the job is fine but for the address
    run = tsmon("run", str(tmp_path / "job.toml"), "--http", "localhost")
    assert run.returncode == 2
    assert "error: --http must be host:port, e.g. 127.0.0.1:8080, got 'localhost'" in run.stdout
    assert "starting Spark" not in run.stdout and "Traceback" not in run.stdout + run.stderr


def test_a_busy_port_is_refused_before_spark_starts(tmp_path: Path):
    (tmp_path / "job.toml").write_text(JOB, encoding="utf-8")
    (tmp_path / "incoming").mkdir()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        run = tsmon("run", str(tmp_path / "job.toml"), "--http", f"127.0.0.1:{port}")
    assert run.returncode == 2
    assert f"error: cannot serve HTTP on 127.0.0.1:{port}: Address already in use" in run.stdout
    assert "starting Spark" not in run.stdout and "Traceback" not in run.stdout + run.stderr
    assert not (tmp_path / "ckpt" / "job-queries.json").exists()  # no start: nothing recorded


@pytest.mark.slow
@pytest.mark.spark
def test_run_once_serves_http_and_posts_every_event_to_the_webhook(tmp_path: Path):
    endpoint = Endpoint()
    try:
        text = JOB + f'[http]\nwebhook = "{endpoint.url}"\n'
        (tmp_path / "job.toml").write_text(text, encoding="utf-8")
        (tmp_path / "incoming").mkdir()
        rows = "".join(
            f"{s},{t},{v}\n" for t in range(0, 4000, 500) for s, v in [("a.x", 1), ("b.x", 2)]
        )
        (tmp_path / "incoming" / "p0.csv").write_text("metric,time,v\n" + rows)
        run = tsmon("run", str(tmp_path / "job.toml"), "--once", "--http", "127.0.0.1:0",
                    timeout=300)  # fmt: skip
    finally:
        endpoint.close()
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    served = r"HTTP API, /metrics and the dashboard on http://127\.0\.0\.1:\d+/"
    assert re.search(served, run.stdout)
    events = pd.concat(
        pd.read_parquet(p) for p in sorted((tmp_path / "out" / "events").glob("*.parquet"))
    )
    assert len(events) == 8  # every b.x point
    got = [(b["series"], b["ts_ms"], b["batch"], b["payload"]) for b in endpoint.bodies]
    assert got == [
        (e.series, e.ts_ms, e.batch_id, json.loads(e.payload)) for e in events.itertuples()
    ]
