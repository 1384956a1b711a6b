"""The HTTP API, /metrics, the webhook and the dashboard of a real job on Spark.

One job (files input, bounded aggregates and watch queries, ``[http]`` in its job file with
``listen`` on a free port and a ``webhook`` to a local http.server) runs over a few input
files, each followed by ``processAllAvailable()``; queries are added, refused and removed over
HTTP between files. After every file the API must show exactly what the runner holds; the
dashboard is then opened in a real headless Chromium (selenium), checked against the API and
photographed into docs/img/dashboard.png.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.http.test_webhook import Endpoint
from tsmon.http import Service, attach
from tsmon.http.live import json_safe
from tsmon.http.webhook import alert_body
from tsmon.spark.job import load_job
from tsmon.spark.runtime import JobRunner
from tsmon.spark.sinks import BatchOutput

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SERIES = ("a.x", "a.y", "b.x", "c.y")
JOB = """
queries = '''
QUERY s AS SUM(a.x, b.x) WITHIN 2
QUERY m AS MAX(a.x, c.y) WITHIN 0.5
QUERY g AS AVG(*.x) WITHIN 1
QUERY rise ON a.* WHEN last > mean(4 points) + 0.3 EMIT series, last, mean(4 points)
'''

[job]
name = "http-test"
checkpoint = "ckpt"
trigger = "200ms"

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

[[sinks]]
kind = "callback"

[http]
listen = "127.0.0.1:0"
webhook = "WEBHOOK"
"""
FILES = 7
BAD = [{"metric": "a.x", "time": "999999999999", "v": "n/a"}, {"time": "5", "v": "1.0"}]


def make_files(n: int, seed: int = 3) -> list[list[dict]]:
    """``n`` files of random-walk points; ts unique per series, growing across files."""
    rng = random.Random(seed)
    value = {s: rng.uniform(-5, 5) for s in SERIES}
    files = []
    for f in range(n):
        rows = []
        for k in range(40):
            series = rng.choice(SERIES)
            value[series] += rng.gauss(0, 0.4)
            ts = f * 2_000 + k * 50 + SERIES.index(series)
            rows.append({"metric": series, "time": str(ts), "v": repr(value[series])})
        files.append(rows + (BAD if f == 1 else []))
    return files


@dataclass
class Served:
    runner: JobRunner
    service: Service
    endpoint: Endpoint
    outputs: list[BatchOutput]
    checkpoint: Path
    seen: list[tuple[Any, Any, dict]] = field(default_factory=list)  # per file
    replies: dict[str, tuple[int, dict]] = field(default_factory=dict)

    @property
    def url(self) -> str:
        assert self.service.url is not None
        return self.service.url

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=60) as r:
            body = r.read().decode()
            is_json = r.headers["Content-Type"].startswith("application/json")
            return json.loads(body) if is_json else body

    def send(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=90) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())


def drop(directory: Path, name: str, rows: list[dict]) -> None:
    temp = directory / f".{name}.tmp"
    temp.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    os.replace(temp, directory / name)


@pytest.fixture(scope="module")
def served(spark, tmp_path_factory):
    """The job run over every file, with HTTP commands between them; stays served after."""
    tmp = tmp_path_factory.mktemp("job")
    endpoint = Endpoint()
    (tmp / "job.toml").write_text(JOB.replace("WEBHOOK", endpoint.url), encoding="utf-8")
    (tmp / "incoming").mkdir()
    job = load_job(tmp / "job.toml")
    outputs: list[BatchOutput] = []
    runner = JobRunner(job, spark=spark, callback=outputs.append)
    service = attach(runner, job.http, {"backoff": 0.01})
    s = Served(runner, service, endpoint, outputs, job.checkpoint)
    runner.start()

    def during_next_batch(key: str, method: str, path: str, body: dict | None = None):
        def go() -> None:
            s.replies[key] = s.send(method, path, body)

        thread = threading.Thread(target=go)
        thread.start()
        while not any(c["state"] == "pending" for c in s.get("/queries")["commands"]):
            time.sleep(0.05)  # submitted: the next batch takes it
        return thread

    waiting = []
    for i, rows in enumerate(make_files(FILES)):
        if i == 0:
            s.replies["bad"] = s.send("POST", "/queries", {"text": "QUERY n AS MIN(a.x WITHIN 1"})
        if i == 2:
            add = {"text": "QUERY n AS MIN(a.x, b.x) WITHIN 1"}
            waiting.append(during_next_batch("add", "POST", "/queries?wait=120", add))
        if i == 3:
            s.replies["dup"] = s.send("POST", "/queries", {"text": "QUERY S AS MAX(a.x) WITHIN 1"})
        if i == 4:
            waiting.append(during_next_batch("remove", "DELETE", "/queries/g?wait=120"))
        drop(tmp / "incoming", f"part-{i:03d}.json", rows)
        runner.process_all_available()
        for thread in waiting:
            thread.join(120)
        waiting.clear()
        s.seen.append((s.get("/answers"), json_safe(runner.latest), s.get("/metrics")))
    runner.stop()
    yield s
    service.close()
    endpoint.close()


def samples(text: str) -> dict:
    return {
        (x.name, tuple(sorted(x.labels.items()))): x.value
        for family in text_string_to_metric_families(text)
        for x in family.samples
    }


def test_answers_and_metrics_equal_the_runner_after_every_file(served):
    assert len(served.seen) == FILES
    for i, (api, latest, metrics) in enumerate(served.seen):
        assert api["answers"] == latest, i
        m = samples(metrics)
        for query, a in latest["bounded"].items():
            label = (("part", "bounded"), ("query", query))
            for suffix, key in (("", "value"), ("_lo", "lo"), ("_hi", "hi")):
                assert m.get((f"tsmon_answer{suffix}", label)) == a[key], (i, query, key)
        assert m[("tsmon_batch_id", ())] == api["batch"] == api["progress"]["batchId"]
    progress = [json.loads(line) for line in (served.checkpoint / "progress.jsonl").open()]
    last = samples(served.seen[-1][2])
    assert last[("tsmon_numInputRows", ())] == progress[-1]["numInputRows"]
    assert last[("tsmon_input_rows_total", ())] == sum(p["numInputRows"] for p in progress)
    assert last[("tsmon_rows_to_coordinator_total", ())] == sum(
        p["rowsToCoordinator"] for p in progress
    )
    reasons: dict[str, int] = {}
    for out in served.outputs:
        for r in out.rejected:
            reasons[r["reason"]] = reasons.get(r["reason"], 0) + 1
    assert reasons == {"not_numeric": 1, "bad_series": 1}
    for reason, n in reasons.items():
        assert last[("tsmon_dead_letters_total", (("reason", reason),))] == n
    assert (
        last[("tsmon_messages_total", (("kind", "streamed"),))]
        == (progress[-1]["messages"]["streamed"])
    )


def test_query_commands_over_http_have_the_cli_outcomes(served):
    status, body = served.replies["bad"]
    assert status == 400 and "line 1" in body["error"]
    status, body = served.replies["add"]
    assert (status, body["state"]) == (200, "applied"), body
    assert "n" in served.seen[2][0]["answers"]["bounded"]
    status, body = served.replies["dup"]
    assert (status, body["state"]) == (202, "pending")
    states = {s["id"]: s for s in served.get("/queries")["commands"]}
    assert states[body["id"]]["state"] == "rejected"
    assert states[body["id"]]["detail"] == served.get(f"/commands/{body['id']}")["detail"]
    status, body = served.replies["remove"]
    assert (status, body["state"], body["detail"]) == (200, "applied", "removed 'g'")
    assert set(served.seen[-1][0]["answers"]["bounded"]) == {"s", "m", "n"}
    running = served.get("/queries")["running"]
    assert running == served.outputs[-1].progress["queries"]
    assert set(running["bounded"]) == {"s", "m", "n"} and running["local"] == ["rise"]


def test_events_and_the_webhook_have_every_event_in_order(served):
    events = [(o.batch_id, e) for o in served.outputs for e in o.events]
    assert len(events) >= 5
    body = served.get("/events?limit=10000")
    assert [(e["batch"], e["query"], e["series"], e["ts_ms"]) for e in body["events"]] == [
        (b, e["query"], e["series"], e["ts_ms"]) for b, e in events
    ]
    deadline = time.monotonic() + 60
    while served.service.webhook.stats()["sent"] < len(events) and time.monotonic() < deadline:
        time.sleep(0.05)
    expected = [alert_body(e, b, "http-test", "json") for b, e in events]
    assert served.endpoint.bodies == json.loads(json.dumps(expected))
    assert served.get("/healthz")["webhook"]["sent"] == len(events)


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium through chromedriver (Debian's packages, installed when missing by
    scripts/check_chromium.sh)."""
    check = subprocess.run(["bash", str(ROOT / "scripts" / "check_chromium.sh")],
                           capture_output=True, text=True)  # fmt: skip
    if check.returncode != 0:
        pytest.skip(check.stderr.strip())
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service as DriverService

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1300,1250"):  # fmt: skip
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=DriverService(shutil.which("chromedriver")))
    yield driver
    driver.quit()


def test_the_dashboard_shows_the_answers_their_history_the_events_and_progress(served, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    api = served.get("/answers")
    history = served.get("/answers/history")
    events = served.get("/events?limit=10000")["events"]
    browser.get(served.url + "/")
    wait = WebDriverWait(browser, 60)
    wait.until(lambda d: d.find_element(By.ID, "progress").get_attribute("data-batch"))
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#events tbody tr")) > 0)
    assert browser.find_element(By.ID, "progress").get_attribute("data-batch") == str(api["batch"])
    rows = browser.find_elements(By.CSS_SELECTOR, "#answers tbody tr")
    shown = {r.get_attribute("data-query"): r for r in rows}
    assert set(shown) == {q for answers in api["answers"].values() for q in answers}
    for query, band in api["bands"].items():
        for key in ("value", "lo", "hi"):
            cell = shown[query].find_element(By.CSS_SELECTOR, f"td.{key}")
            exact = cell.get_attribute("data-exact")
            assert (None if exact is None else float(exact)) == band[key], (query, key)
    figures = browser.find_elements(By.TAG_NAME, "figure")
    charts = {f.get_attribute("data-query"): f for f in figures}
    assert set(charts) == set(history)
    for query, h in history.items():
        assert charts[query].get_attribute("data-points") == str(len(h["points"]))
    first = browser.find_element(By.CSS_SELECTOR, "#events tbody tr")
    assert first.get_attribute("data-seq") == str(events[-1]["seq"])  # newest first
    out = ROOT / "docs" / "img" / "dashboard.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(out))
    assert out.stat().st_size > 10_000
