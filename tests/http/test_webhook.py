"""The webhook sink against a real HTTP server on 127.0.0.1 (http.server in a thread): events
delivered in order, retried with backoff, counted and dead-lettered when they cannot be, and
never holding up the caller."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.http.feed import batches
from tsmon.http.webhook import Webhook, alert_body
from tsmon.spark.sinks import BatchOutput


class Endpoint:
    """A local HTTP server that records each POST body; ``statuses`` are the answers to the
    first requests (then 200); while ``gate`` is clear a request waits for it."""

    def __init__(self, statuses: list[int] | None = None) -> None:
        self.bodies: list = []
        self.statuses = list(statuses or [])
        self.gate = threading.Event()
        self.gate.set()
        self.arrived = threading.Event()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                endpoint.arrived.set()
                endpoint.gate.wait(30)
                status = endpoint.statuses.pop(0) if endpoint.statuses else 200
                if status == 200:
                    endpoint.bodies.append(body)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                """Quiet."""

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.gate.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    e = Endpoint()
    yield e
    e.close()


def outputs() -> list[BatchOutput]:
    outs = batches(6)
    assert sum(len(o.events) for o in outs) >= 10
    return outs


def dead_letters(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_every_event_is_posted_once_in_order_as_json(endpoint, tmp_path):
    hook = Webhook(endpoint.url, "json", tmp_path / "dead.jsonl", job="fleet")
    outs = outputs()
    for out in outs:
        hook.feed(out)
    hook.close(timeout=30)
    expected = [alert_body(e, o.batch_id, "fleet", "json") for o in outs for e in o.events]
    assert endpoint.bodies == json.loads(json.dumps(expected))
    assert hook.stats() == {"sent": len(expected), "retried": 0, "failed": 0, "dropped": 0,
                            "stopped": 0, "queued": 0}  # fmt: skip
    assert dead_letters(tmp_path / "dead.jsonl") == []


def test_alertmanager_bodies_are_a_list_of_one_alert(endpoint, tmp_path):
    hook = Webhook(endpoint.url, "alertmanager", job="fleet")
    out = next(o for o in outputs() if o.events)
    hook.feed(out)
    hook.close(timeout=30)
    event = out.events[0]
    alert = endpoint.bodies[0]
    assert len(endpoint.bodies) == len(out.events) and len(alert) == 1
    assert alert[0]["labels"] == {"alertname": event["query"], "series": event["series"],
                                  "job": "fleet"}  # fmt: skip
    assert alert[0]["startsAt"].endswith("Z") and set(alert[0]) == {
        "labels", "annotations", "startsAt"
    }  # fmt: skip
    assert json.loads(alert[0]["annotations"]["payload"]) == event["payload"]


def test_alertmanager_receiver_bodies_carry_the_alert_firing(endpoint):
    hook = Webhook(endpoint.url, "alertmanager-webhook", job="fleet")
    out = next(o for o in outputs() if len(o.events) >= 2)
    hook.feed(out)
    hook.close(timeout=30)
    assert len(endpoint.bodies) == len(out.events)
    for body, event in zip(endpoint.bodies, out.events, strict=True):
        [alert] = body["alerts"]
        labels = {"alertname": event["query"], "series": event["series"], "job": "fleet"}
        assert (body["version"], body["status"], body["receiver"]) == ("4", "firing", "fleet")
        assert body["groupLabels"] == {"alertname": event["query"]}
        assert body["commonLabels"] == alert["labels"] == labels
        assert (alert["status"], alert["endsAt"]) == ("firing", "0001-01-01T00:00:00Z")
        assert alert["startsAt"] == alert_body(event, 0, "fleet", "json")["time"]
    prints = {b["alerts"][0]["fingerprint"] for b in endpoint.bodies}
    assert len(prints) == len({(e["query"], e["series"]) for e in out.events})


def test_a_failing_request_is_retried_until_it_is_accepted(tmp_path):
    endpoint = Endpoint(statuses=[503, 500, 429])
    try:
        hook = Webhook(endpoint.url, dead_letters=tmp_path / "dead.jsonl", backoff=0.01)
        out = next(o for o in outputs() if o.events)
        hook.put(out.batch_id, out.events[0])
        hook.close(timeout=30)
    finally:
        endpoint.close()
    assert len(endpoint.bodies) == 1
    stats = hook.stats()
    assert (stats["sent"], stats["retried"], stats["failed"]) == (1, 3, 0)
    assert dead_letters(tmp_path / "dead.jsonl") == []


def test_an_event_that_cannot_be_delivered_is_counted_and_dead_lettered(tmp_path):
    endpoint = Endpoint(statuses=[500] * 3 + [400])
    try:
        hook = Webhook(endpoint.url, dead_letters=tmp_path / "dead.jsonl", retries=2, backoff=0.01)
        out = next(o for o in outputs() if len(o.events) >= 2)
        hook.put(out.batch_id, out.events[0])  # 500, retried twice: given up
        hook.put(out.batch_id, out.events[1])  # 400: not retried
        hook.close(timeout=30)
    finally:
        endpoint.close()
    assert endpoint.bodies == []
    stats = hook.stats()
    assert (stats["sent"], stats["retried"], stats["failed"]) == (0, 2, 2)
    dead = dead_letters(tmp_path / "dead.jsonl")
    assert [(d["reason"], d["attempts"], d["detail"]) for d in dead] == [
        ("failed", 3, "HTTP 500 Internal Server Error"),
        ("failed", 1, "HTTP 400 Bad Request"),
    ]
    assert [d["event"]["ts_ms"] for d in dead] == [e["ts_ms"] for e in out.events[:2]]


def test_an_unreachable_endpoint_is_retried_then_dead_lettered(tmp_path):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    hook = Webhook(f"http://127.0.0.1:{port}/", dead_letters=tmp_path / "d.jsonl", retries=1,
                   backoff=0.01)  # fmt: skip
    out = next(o for o in outputs() if o.events)
    hook.put(out.batch_id, out.events[0])
    hook.close(timeout=30)
    [dead] = dead_letters(tmp_path / "d.jsonl")
    assert (dead["reason"], dead["attempts"]) == ("failed", 2)
    assert dead["detail"].startswith(f"cannot reach http://127.0.0.1:{port}/")


def test_a_stuck_endpoint_never_blocks_the_stream(endpoint, tmp_path):
    """While the endpoint holds the first request, feeding goes on: the queue takes
    ``capacity`` events and the others are dropped, counted and dead-lettered."""
    endpoint.gate.clear()
    hook = Webhook(endpoint.url, dead_letters=tmp_path / "dead.jsonl", capacity=3)
    events = [(o.batch_id, e) for o in outputs() for e in o.events][:10]
    hook.put(*events[0])
    assert endpoint.arrived.wait(30)  # the worker holds event 0, waiting for the endpoint
    for batch, event in events[1:]:
        hook.put(batch, event)  # returns at once: the test would hang here otherwise
    stats = hook.stats()
    assert (stats["queued"], stats["dropped"]) == (3, 6)
    endpoint.gate.set()
    hook.close(timeout=30)
    assert [b["ts_ms"] for b in endpoint.bodies] == [e["ts_ms"] for _, e in events[:4]]
    dead = dead_letters(tmp_path / "dead.jsonl")
    assert [d["reason"] for d in dead] == ["queue_full"] * 6
    assert [d["event"]["ts_ms"] for d in dead] == [e["ts_ms"] for _, e in events[4:]]


def test_what_is_still_queued_when_closing_runs_out_of_time_is_dead_lettered(endpoint, tmp_path):
    endpoint.gate.clear()
    hook = Webhook(endpoint.url, dead_letters=tmp_path / "dead.jsonl", timeout=1.0, retries=0)
    events = [(o.batch_id, e) for o in outputs() for e in o.events][:4]
    for batch, event in events:
        hook.put(batch, event)
    assert endpoint.arrived.wait(30)
    hook.close(timeout=0.1)  # the first request times out; the other three are never sent
    hook.put(*events[0])  # after close: not sent either
    endpoint.gate.set()
    dead = dead_letters(tmp_path / "dead.jsonl")
    assert [d["reason"] for d in dead] == ["failed", "stopped", "stopped", "stopped", "stopped"]
    assert hook.stats()["stopped"] == 4
