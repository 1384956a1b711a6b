"""Alerts: POST every event of a job to a webhook, from a background thread.

:class:`Webhook` is a subscriber of a job's batches (:meth:`tsmon.spark.sinks.Sinks.subscribe`):
:meth:`Webhook.feed` only puts each event on a bounded queue and returns, so a slow or dead
endpoint never holds up the stream. One worker thread POSTs the events in order, one request
per event, as JSON:

``json``
    the event as the job records it (``query``, ``series``, ``ts_ms``, ``value``, ``payload``,
    ``coverage``, ``replayed``) with ``job``, ``batch`` and ``time`` (ISO-8601 UTC of ``ts_ms``).
``alertmanager``
    a list of one alert as Alertmanager's ``POST /api/v2/alerts`` takes it (so ``webhook`` may
    be ``http://alertmanager:9093/api/v2/alerts``): labels ``alertname`` (the query),
    ``series``, ``job``; annotations ``value``, ``payload``, ``summary``; ``startsAt`` the
    event's time.
``alertmanager-webhook``
    what Alertmanager itself POSTs to a webhook receiver (payload version 4: ``status``
    ``firing``, ``groupLabels``, ``commonLabels``, ``alerts`` with that one alert), for
    receivers written for Alertmanager.

A request that fails (no connection, a timeout, status 408, 429 or 5xx) is retried after
``backoff``, ``2 × backoff``, ... (at most ``max_backoff`` s) up to ``retries`` times; another
4xx is not retried. An event that could not be delivered is counted and *dead-lettered*: a line
``{"reason", "detail", "attempts", "event"}`` in ``dead_letters`` (JSON lines), with reason
``failed`` (the last error in ``detail``), ``queue_full`` (more than ``capacity`` events waiting)
or ``stopped`` (still waiting when the job stopped and :meth:`close` ran out of time).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import queue
import threading
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tsmon.http.live import json_safe
from tsmon.spark.job import WEBHOOK_FORMATS
from tsmon.spark.sinks import BatchOutput

__all__ = ["OUTCOMES", "Webhook", "alert_body"]

#: What became of the events: delivered, a retry, given up, dropped (queue full), not sent.
OUTCOMES = ("sent", "retried", "failed", "dropped", "stopped")
_RETRY_STATUS = {408, 429}


def alert_body(event: Mapping[str, Any], batch: int, job: str, fmt: str) -> Any:
    """The JSON body POSTed for one event in format ``fmt`` (:data:`WEBHOOK_FORMATS`).

    >>> e = {"query": "hot", "series": "h1.cpu", "ts_ms": 0, "value": 0.97,
    ...      "payload": {"series": "h1.cpu"}, "coverage": 1.0, "replayed": False}
    >>> alert_body(e, 3, "fleet", "json")["time"]
    '1970-01-01T00:00:00.000Z'
    >>> [a["labels"] for a in alert_body(e, 3, "fleet", "alertmanager")]
    [{'alertname': 'hot', 'series': 'h1.cpu', 'job': 'fleet'}]
    >>> body = alert_body(e, 3, "fleet", "alertmanager-webhook")
    >>> body["version"], body["status"], body["groupLabels"], len(body["alerts"])
    ('4', 'firing', {'alertname': 'hot'}, 1)
    """
    at = datetime.datetime.fromtimestamp(event["ts_ms"] / 1000, datetime.timezone.utc)
    time = at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return _BODIES[fmt](event, batch, job, time)


def _json(event: Mapping[str, Any], batch: int, job: str, time: str) -> Any:
    return json_safe({**event, "job": job, "batch": batch, "time": time})


def _alert(event: Mapping[str, Any], job: str, time: str) -> dict[str, Any]:
    """One alert as Alertmanager's API v2 takes it (labels, annotations, startsAt)."""
    return {
        "labels": {"alertname": event["query"], "series": event["series"], "job": job},
        "annotations": {
            "summary": f"{event['query']} on {event['series']} at {time}",
            "value": str(event["value"]),
            "payload": json.dumps(json_safe(event["payload"]), sort_keys=True),
        },
        "startsAt": time,
    }


def _alertmanager(event: Mapping[str, Any], batch: int, job: str, time: str) -> Any:
    return [_alert(event, job, time)]


def _receiver(event: Mapping[str, Any], batch: int, job: str, time: str) -> Any:
    """What Alertmanager's webhook_config POSTs to a receiver (payload version 4), with the
    one alert, firing."""
    alert = _alert(event, job, time)
    labels = alert["labels"]
    fingerprint = hashlib.sha256(json.dumps(labels, sort_keys=True).encode()).hexdigest()[:16]
    return {
        "version": "4",
        "groupKey": f"{{}}:{{alertname={json.dumps(labels['alertname'])}}}",
        "truncatedAlerts": 0,
        "status": "firing",
        "receiver": job,
        "groupLabels": {"alertname": labels["alertname"]},
        "commonLabels": labels,
        "commonAnnotations": alert["annotations"],
        "externalURL": "",
        "alerts": [
            {
                **alert,
                "status": "firing",
                "endsAt": "0001-01-01T00:00:00Z",
                "generatorURL": "",
                "fingerprint": fingerprint,
            }
        ],
    }


_BODIES = {"json": _json, "alertmanager": _alertmanager, "alertmanager-webhook": _receiver}


class Webhook:
    """POST each event to ``url`` from a worker thread (see the module docstring).

    Parameters
    ----------
    url
        Where to POST.
    fmt
        ``json`` or ``alertmanager``.
    dead_letters
        JSON-lines file of the events that could not be delivered (None: only counted).
    job
        The job's name, in every body.
    capacity, retries, backoff, max_backoff, timeout
        Events waiting at most; retries of a failed request; the first wait before a retry,
        doubled each time up to ``max_backoff``; seconds per request.
    """

    def __init__(
        self,
        url: str,
        fmt: str = "json",
        dead_letters: Path | None = None,
        job: str = "tsmon",
        capacity: int = 1000,
        retries: int = 5,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        timeout: float = 5.0,
    ) -> None:
        if fmt not in WEBHOOK_FORMATS:
            raise ValueError(f"webhook format must be one of {list(WEBHOOK_FORMATS)}, got {fmt!r}")
        self.url, self.fmt, self.path, self.job = url, fmt, dead_letters, job
        self.retries, self.backoff, self.max_backoff, self.timeout = (
            retries,
            backoff,
            max_backoff,
            timeout,
        )
        self._queue: queue.Queue[tuple[int, Mapping[str, Any]]] = queue.Queue(maxsize=capacity)
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._stop = threading.Event()  # no more retries: close() ran out of time
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="tsmon-webhook", daemon=True)
        self._thread.start()

    def feed(self, out: BatchOutput) -> None:
        """Queue one batch's events; never blocks (a full queue dead-letters the event)."""
        for event in out.events:
            self.put(out.batch_id, event)

    def put(self, batch: int, event: Mapping[str, Any]) -> None:
        """Queue one event (dead-lettered as ``queue_full`` when the queue is full)."""
        if self._closing:
            self._count("stopped")
            self._dead(event, "stopped", "the job stopped before it was sent", 0)
            return
        try:
            self._queue.put_nowait((batch, event))
        except queue.Full:
            self._count("dropped")
            self._dead(event, "queue_full", f"{self._queue.maxsize} events already waiting", 0)

    def stats(self) -> dict[str, int]:
        """Deliveries so far: ``sent``, ``retried``, ``failed``, ``dropped`` (queue full),
        ``stopped`` (not sent when the job stopped), and ``queued`` now."""
        with self._lock:
            counts = {k: self._counts[k] for k in OUTCOMES}
        return {**counts, "queued": self._queue.qsize()}

    def close(self, timeout: float = 5.0) -> None:
        """Send what is queued for up to ``timeout`` s, then stop; the rest is dead-lettered
        as ``stopped``."""
        self._closing = True
        self._thread.join(timeout)
        self._stop.set()
        self._thread.join()

    # -- the worker ------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            try:
                batch, event = self._queue.get(timeout=0.1)
            except queue.Empty:
                if self._closing:
                    return
                continue
            if self._stop.is_set():
                self._count("stopped")
                self._dead(event, "stopped", "the job stopped before it was sent", 0)
                continue
            self._deliver(batch, event)

    def _deliver(self, batch: int, event: Mapping[str, Any]) -> None:
        body = json.dumps(alert_body(event, batch, self.job, self.fmt)).encode("utf-8")
        attempts = 0
        while True:
            attempts += 1
            retry, detail = self._post(body)
            if detail is None:
                self._count("sent")
                return
            if not retry or attempts > self.retries or self._stop.is_set():
                self._count("failed")
                self._dead(event, "failed", detail, attempts)
                return
            self._count("retried")
            delay = min(self.backoff * 2 ** (attempts - 1), self.max_backoff)
            if self._stop.wait(delay):
                self._count("stopped")
                self._dead(event, "stopped", f"stopped while retrying: {detail}", attempts)
                return

    def _post(self, body: bytes) -> tuple[bool, str | None]:
        """``(retry, None)`` when delivered; ``(retry?, what went wrong)`` else."""
        request = urllib.request.Request(
            self.url, data=body, method="POST", headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                response.read()
            return False, None
        except urllib.error.HTTPError as e:
            retry = e.code >= 500 or e.code in _RETRY_STATUS
            return retry, f"HTTP {e.code} {e.reason}"
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            return True, f"cannot reach {self.url}: {reason}"

    def _count(self, what: str) -> None:
        with self._lock:
            self._counts[what] += 1

    def _dead(self, event: Mapping[str, Any], reason: str, detail: str, attempts: int) -> None:
        if self.path is None:
            return
        line = {"reason": reason, "detail": detail, "attempts": attempts, "event": event}
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps(json_safe(line), sort_keys=True) + "\n")
