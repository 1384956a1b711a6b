"""The HTTP API over an in-process feed: Live fed with the BatchOutputs of the real nodes and
coordinator (tests/http/feed.py), commands through a real command log in a temp directory,
requests through Starlette's TestClient."""

from __future__ import annotations

import json
import math
import threading

import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from tests.http.feed import batches, runtime
from tsmon.http.app import make_app
from tsmon.http.live import Live, json_safe
from tsmon.query import QuerySyntaxError
from tsmon.spark.commands import CommandError, CommandLog, apply, check
from tsmon.spark.sinks import BatchOutput


@pytest.fixture
def log(tmp_path):
    return CommandLog(tmp_path)


def client(live: Live, log: CommandLog, webhook=None) -> TestClient:
    return TestClient(make_app(live, log, webhook))


def fed(n: int) -> tuple[Live, list]:
    live = Live()
    outs = batches(n)
    for out in outs:
        live.feed(out)
    return live, outs


def test_health_says_starting_then_running(log):
    live = Live()
    c = client(live, log, webhook=lambda: {"sent": 3})
    assert c.get("/healthz").json()["status"] == "starting"
    live.feed(batches(1)[0])
    body = c.get("/healthz").json()
    assert (body["status"], body["batch"], body["webhook"]) == ("running", 0, {"sent": 3})


def test_answers_are_the_newest_of_every_part_as_plain_json(log):
    live, outs = fed(5)
    body = client(live, log).get("/answers").json()
    last = outs[-1]
    total = last.answers["bounded"]["total"]
    assert body["batch"] == 4
    assert body["answers"]["bounded"]["total"] == {
        "value": total.value, "lo": total.lo, "hi": total.hi, "as_of_ms": total.as_of_ms
    }  # fmt: skip
    assert body["answers"]["topk"]["top"]["members"] == list(last.answers["topk"]["top"].members)
    assert body["bands"]["total"] == {"part": "bounded", "value": total.value, "lo": total.lo,
                                      "hi": total.hi}  # fmt: skip
    assert "top" not in body["bands"]  # no number
    assert body["totals"]["numInputRows"] == sum(o.progress["numInputRows"] for o in outs)
    assert body["deadLetters"] == {"nan": 1}
    assert body["events"] == sum(len(o.events) for o in outs)


def test_history_keeps_each_batch_and_a_replayed_batch_replaces_its_point(log):
    live, outs = fed(4)
    live.feed(outs[-1])  # batch 3 again (Spark replays a batch after a crash)
    points = client(live, log).get("/answers/history").json()["total"]["points"]
    assert [p["batch"] for p in points] == [0, 1, 2, 3]
    for p, out in zip(points, outs, strict=True):
        a = out.answers["bounded"]["total"]
        assert (p["value"], p["lo"], p["hi"]) == tuple(json_safe([a.value, a.lo, a.hi]))


def test_not_finite_numbers_become_null():
    assert json_safe({"v": math.nan, "b": (math.inf, -math.inf, 1.5)}) == {
        "v": None, "b": [None, None, 1.5]
    }  # fmt: skip


def test_events_long_poll_from_a_sequence_number(log):
    live, outs = fed(6)
    everything = [e for o in outs for e in o.events]
    c = client(live, log)
    body = c.get("/events", params={"limit": 1000}).json()
    assert [
        {k: v for k, v in e.items() if k not in ("seq", "batch")} for e in body["events"]
    ] == json_safe(everything)
    assert [e["seq"] for e in body["events"]] == list(range(len(everything)))
    assert body["next"] == len(everything) - 1
    tail = c.get("/events", params={"since": 5, "limit": 2}).json()["events"]
    assert [e["seq"] for e in tail] == [len(everything) - 2, len(everything) - 1]


def test_a_long_poll_waits_for_the_next_batch(log):
    live, _ = fed(3)
    more = batches(6)[3:]
    seen = live.event_seq - 1
    c = client(live, log)
    feeder = threading.Timer(0.3, lambda: [live.feed(o) for o in more])
    feeder.start()
    body = c.get("/events", params={"since": seen, "timeout": 20}).json()
    feeder.join()
    assert body["events"] and body["events"][0]["seq"] == seen + 1
    assert (
        c.get("/events", params={"since": live.event_seq - 1, "timeout": 0}).json()["events"] == []
    )


def test_server_sent_events_replay_the_kept_events_then_the_batch(log):
    live, outs = fed(4)
    live.close()  # the stream ends after what is there
    text = client(live, log).get("/events", headers={"Accept": "text/event-stream"}).text
    records = [r for r in text.split("\n\n") if r]
    everything = [e for o in outs for e in o.events]
    assert len(records) == len(everything) + 1
    for i, record in enumerate(records[:-1]):
        lines = record.split("\n")
        assert lines[:2] == [f"id: {i}", "event: event"]
        assert json.loads(lines[2][len("data: ") :])["query"] == everything[i]["query"]
    assert records[-1].startswith("event: batch\ndata: ")
    assert json.loads(records[-1].split("data: ", 1)[1])["batchId"] == 3


def test_a_post_writes_the_same_command_as_tsmon_query_add(log):
    c = client(Live(), log)
    text = "QUERY d AS SUM(a.x, b.x) WITHIN 0.5"
    r = c.post("/queries", json={"text": text})
    assert r.status_code == 202
    body = r.json()
    assert (body["op"], body["text"], body["state"]) == ("add", text, "pending")
    assert [(cmd.id, cmd.op, cmd.text) for cmd in log.pending()] == [(body["id"], "add", text)]
    plain = c.post("/queries", content="QUERY e AS MAX(a.x) WITHIN 1",
                   headers={"Content-Type": "text/plain"})  # fmt: skip
    assert plain.status_code == 202 and plain.json()["op"] == "add"
    alter = c.post("/queries", json={"op": "alter", "text": "ALTER QUERY d WITHIN 0.1"})
    assert alter.status_code == 202 and alter.json()["op"] == "alter"
    gone = c.delete("/queries/d")
    assert gone.status_code == 202 and (gone.json()["op"], gone.json()["text"]) == ("remove", "d")
    assert [cmd.op for cmd in log.pending()] == ["add", "add", "alter", "remove"]
    assert c.get(f"/commands/{body['id']}").json()["state"] == "pending"
    assert c.get("/commands/cmd-nope").status_code == 404


@pytest.mark.parametrize(
    ("op", "text"),
    [
        ("add", "QUERY d AS SUM(a.x, b.x WITHIN 0.5"),  # a syntax error
        ("add", "ALTER QUERY d WITHIN 0.1"),  # not a definition
        ("alter", "QUERY d AS SUM(a.x) WITHIN 1"),  # not an alter
        ("add", "QUERY a AS MAX(x) WITHIN 1\nQUERY b AS MAX(y) WITHIN 1"),  # two statements
    ],
)
def test_a_bad_command_is_refused_with_the_cli_message_and_nothing_written(log, op, text):
    with pytest.raises((CommandError, QuerySyntaxError)) as cli:
        check(op, text)  # what `tsmon query add|alter` prints after "error:"
    r = client(Live(), log).post("/queries", json={"op": op, "text": text})
    assert r.status_code == 400
    assert r.json() == {"error": str(cli.value)}
    assert log.commands() == []


def test_bad_request_bodies_are_refused(log):
    c = client(Live(), log)
    not_json = c.post("/queries", content="{", headers={"Content-Type": "application/json"})
    assert not_json.status_code == 400
    assert c.post("/queries", json={"op": "remove", "text": "d"}).status_code == 400
    assert c.post("/queries", json=["QUERY"]).status_code == 400
    assert log.commands() == []


@pytest.mark.parametrize("wait", ["nan", "abc", ""])
def test_a_bad_wait_is_refused_before_the_command_is_written(log, wait):
    r = client(Live(), log).post(
        f"/queries?wait={wait}", json={"text": "QUERY d AS MAX(x) WITHIN 1"}
    )
    assert r.status_code == 400  # a NaN wait would have held the request for ever
    assert r.json() == {"error": f"?wait= takes seconds (at most 60), got {wait!r}"}
    assert log.commands() == []


@pytest.mark.parametrize("query", ["timeout=nan", "limit=-1", "since=x", "timeout=soon"])
def test_bad_long_poll_parameters_are_refused(log, query):
    r = client(Live(), log).get(f"/events?{query}")
    assert r.status_code == 400 and r.json()["error"]


def test_an_unforeseen_error_is_a_named_json_500_and_one_log_line(log, caplog):
    live, _ = fed(1)
    # a bug in a route, as the API would meet it
    live.snapshot = lambda checkpoint=None: {}["answers"]
    r = client(live, log).get("/answers")
    assert (r.status_code, r.json()) == (500, {"error": "internal error: KeyError: 'answers'"})
    errors = [rec for rec in caplog.records if rec.levelname == "ERROR"]
    assert [(rec.name, rec.getMessage(), rec.exc_info) for rec in errors] == [
        ("tsmon.http", "internal error in GET /answers: KeyError: 'answers'", None)
    ]
    assert client(live, log).get("/healthz").status_code == 200  # the server goes on


def test_wait_returns_the_outcome_once_a_batch_applied_the_command(log):
    """The job's side is played by the real driver steps: take, apply to a coordinator, record."""
    from tests.http.feed import runtime

    live, _ = fed(2)
    rt = runtime()
    c = client(live, log)

    def job_batch(batch_id: int, out) -> None:
        commands = log.take(batch_id)
        log.record(batch_id, apply(rt.coordinator, commands, lambda names: {}))
        live.feed(out)

    more = batches(4)
    timer = threading.Timer(0.3, job_batch, (2, more[2]))
    timer.start()
    r = c.post("/queries", params={"wait": 20}, json={"text": "QUERY total AS MIN(a.x) WITHIN 1"})
    timer.join()
    assert r.status_code == 422  # `total` exists: rejected, as `tsmon query list` shows it
    assert r.json()["state"] == "rejected" and "total" in r.json()["detail"]
    timer = threading.Timer(0.3, job_batch, (3, more[3]))
    timer.start()
    r = c.delete("/queries/TOTAL", params={"wait": 20})
    timer.join()
    assert (r.status_code, r.json()["state"], r.json()["batch"]) == (200, "applied", 3)
    assert r.json()["detail"] == "removed 'total'"


def test_list_shows_the_running_queries_and_the_commands(log):
    live, outs = fed(2)
    c = client(live, log)
    c.post("/queries", json={"text": "QUERY d AS SUM(a.x, b.x) WITHIN 0.5"})
    body = c.get("/queries").json()
    assert body["running"] == outs[-1].progress["queries"]
    assert body["waiting"] == {"ghost": "no series matches zz*.x (series now: 'a.x', 'b.x')"}
    assert [(s["op"], s["state"]) for s in body["commands"]] == [("add", "pending")]
    assert body["commands"] == json.loads(json.dumps(log.states()))


def test_a_damaged_command_record_is_named_in_a_json_error(log):
    live, _ = fed(1)
    c = client(live, log)
    c.post("/queries", json={"text": "QUERY d AS SUM(a.x, b.x) WITHIN 0.5"})
    log.take(0)
    record = log.applied_dir / "batch-0.json"
    record.write_text("{not json", encoding="utf-8")
    r = c.get("/queries")
    assert r.status_code == 500
    assert r.json()["error"].startswith(f"{record}: unreadable command record")


def test_metrics_in_the_prometheus_text_format(log):
    live, outs = fed(5)
    r = client(live, log, webhook=lambda: {"sent": 7, "failed": 1}).get("/metrics")
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(r.text)
        for s in family.samples
    }
    last = outs[-1]
    total = last.answers["bounded"]["total"]
    label = (("part", "bounded"), ("query", "total"))
    assert samples[("tsmon_answer", label)] == total.value
    assert samples[("tsmon_answer_lo", label)] == total.lo
    assert samples[("tsmon_answer_hi", label)] == total.hi
    assert samples[("tsmon_batch_id", ())] == 4
    assert samples[("tsmon_numInputRows", ())] == last.progress["numInputRows"]
    assert samples[("tsmon_watermark_ms", ())] == last.progress["watermark"]
    assert samples[("tsmon_input_rows_total", ())] == sum(o.progress["numInputRows"] for o in outs)
    assert samples[("tsmon_events_total", ())] == sum(len(o.events) for o in outs)
    assert samples[("tsmon_dead_letters_total", (("reason", "nan"),))] == 1
    assert samples[("tsmon_messages_total", (("kind", "batches"),))] == 5
    assert samples[("tsmon_webhook_total", (("outcome", "sent"),))] == 7
    assert not any(name == "tsmon_answer" and dict(lab)["query"] == "top" for name, lab in samples)


def test_the_dashboard_page_and_its_script_are_served(log):
    c = client(Live(), log)
    page = c.get("/")
    assert page.status_code == 200 and 'src="static/dashboard.js"' in page.text
    assert "EventSource" in c.get("/static/dashboard.js").text


def test_before_its_first_batch_a_restarted_job_lists_the_queries_of_its_checkpoint(tmp_path):
    rt = runtime()
    rt.run_batch([("a", "a.x", 0, 1.0), ("b", "b.x", 0, 2.0)])
    (tmp_path / "coordinator").mkdir()
    (tmp_path / "coordinator" / "coord-000000003.pkl").write_bytes(rt.coordinator.snapshot())
    body = client(Live(), CommandLog(tmp_path)).get("/queries").json()
    assert body["running"] == {
        "local": ["hot", "ghost"], "topk": ["top"], "bounded": ["total"]
    }  # fmt: skip
    assert body["waiting"] == {"ghost": "no series matches zz*.x (series now: 'a.x', 'b.x')"}
    assert client(Live(), CommandLog(tmp_path / "new")).get("/queries").json()["running"] == {}


def test_before_its_first_batch_a_restarted_job_answers_those_of_its_checkpoint(tmp_path):
    rt = runtime()
    for b in range(3):
        rt.run_batch([("a", "a.x", b * 1000, 1.0 + b), ("b", "b.x", b * 1000, 2.0 * b),
                      ("a", "a.x", b * 1000 + 200, 5.0)])  # fmt: skip
    (tmp_path / "coordinator").mkdir()
    (tmp_path / "coordinator" / "coord-000000002.pkl").write_bytes(rt.coordinator.snapshot())
    live = Live()
    c = client(live, CommandLog(tmp_path))
    body = c.get("/answers").json()
    total = rt.coordinator.part("bounded").answers()["total"]
    assert total.value == 5.0 + 2.0  # a.x (ts 1200) + b.x (ts 1000) as of 1999, its as_of_ms
    assert (body["batch"], body["fromCheckpoint"]) == (2, True)
    assert body["answers"]["bounded"]["total"] == {
        "value": total.value, "lo": total.lo, "hi": total.hi, "as_of_ms": 1_999
    }  # fmt: skip
    assert body["bands"]["total"] == {"part": "bounded", "value": total.value, "lo": total.lo,
                                      "hi": total.hi}  # fmt: skip
    assert body["answers"]["topk"]["top"]["members"] == ["a"]
    # what batch 2 served: its answers fed to a Live as the Spark runtime gives them
    served = Live()
    served.feed(
        BatchOutput(2, [], [], {}, {n: p.answers() for n, p in rt.coordinator.parts.items()})
    )
    assert (body["answers"], body["bands"]) == (
        served.snapshot()["answers"],
        served.snapshot()["bands"],
    )
    out = batches(2)[1]  # a batch of the restarted run
    live.feed(out)
    body = c.get("/answers").json()
    assert (body["batch"], body["fromCheckpoint"]) == (1, False)
    assert body["answers"] == json_safe(out.answers)
    assert body["bands"]["total"]["value"] == out.answers["bounded"]["total"].value != total.value
    empty = client(Live(), CommandLog(tmp_path / "new")).get("/answers").json()
    assert (empty["batch"], empty["answers"], empty["fromCheckpoint"]) == (None, {}, False)
