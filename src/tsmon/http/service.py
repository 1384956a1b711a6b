"""Serve a running job over HTTP from a thread of the job's process, and send its alerts.

:func:`serve` starts what a job's ``[http]`` table asks for: the API of :mod:`tsmon.http.app`
on ``listen`` (uvicorn in a daemon thread, on a socket bound before the thread starts, so a
busy port is an ``OSError`` at once) and the :class:`Webhook`; :meth:`Service.subscribe` feeds
them a :class:`~tsmon.spark.runtime.JobRunner`'s batches (its sinks'
:meth:`~tsmon.spark.sinks.Sinks.subscribe`). :func:`attach` does both.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn

from tsmon.http.app import make_app
from tsmon.http.live import Live
from tsmon.http.webhook import Webhook
from tsmon.spark.commands import CommandLog
from tsmon.spark.job import HttpSpec, Job, listen_address

__all__ = ["HttpServer", "Service", "attach", "serve"]


class HttpServer:
    """The API over ``live`` and the commands of ``checkpoint``, served on ``host:port``
    (port 0: a free one, see :attr:`url`) until :meth:`stop`."""

    def __init__(
        self,
        live: Live,
        checkpoint: Path,
        host: str,
        port: int,
    ) -> None:
        self.live, self.checkpoint = live, checkpoint
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._socket = socket.socket(family, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._socket.bind((host, port))
        except OSError as e:
            self._socket.close()
            raise OSError(f"cannot serve HTTP on {host}:{port}: {e.strerror or e}") from None
        bound = self._socket.getsockname()
        shown = f"[{bound[0]}]" if family == socket.AF_INET6 else bound[0]
        self.url = f"http://{shown}:{bound[1]}"
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(
        self, webhook: Callable[[], Mapping[str, int]] | None = None, timeout: float = 10.0
    ) -> None:
        """Serve from a daemon thread (``webhook()``: its delivery counts); return once it
        accepts connections."""
        app = make_app(self.live, CommandLog(self.checkpoint), webhook)
        config = uvicorn.Config(
            app, log_level="warning", lifespan="off", timeout_graceful_shutdown=2
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self._socket]},
            name="tsmon-http",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise OSError(f"the HTTP server on {self.url} did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        """Wake every waiting request, stop serving, close the socket."""
        self.live.close()
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(10)
        self._socket.close()


@dataclass
class Service:
    """What :func:`serve` started: the server (``url``) and the webhook, either may be None."""

    live: Live
    server: HttpServer | None
    webhook: Webhook | None

    @property
    def url(self) -> str | None:
        return None if self.server is None else self.server.url

    def subscribe(self, sinks: Any) -> None:
        """Take every batch of a job's :class:`~tsmon.spark.sinks.Sinks` from now on."""
        if self.server is not None:
            sinks.subscribe(self.live.feed)
        if self.webhook is not None:
            sinks.subscribe(self.webhook.feed)

    def close(self) -> None:
        """Stop serving; send what the webhook has queued (a few seconds at most)."""
        if self.server is not None:
            self.server.stop()
        if self.webhook is not None:
            self.webhook.close()


def serve(job: Job, spec: HttpSpec, options: Mapping[str, Any] | None = None) -> Service:
    """Start what ``spec`` asks for ``job`` (before Spark, so a busy port fails at once and
    ``/healthz`` says ``starting`` meanwhile); :meth:`Service.subscribe` feeds it.

    ``options`` are extra :class:`Webhook` arguments (``retries``, ``backoff``, ...).
    """
    live = Live()
    server = None
    if spec.listen is not None:
        host, port = listen_address(spec.listen)
        server = HttpServer(live, job.checkpoint, host, port)
    webhook = None
    if spec.webhook is not None:
        webhook = Webhook(
            spec.webhook,
            spec.webhook_format,
            job.checkpoint / "webhook" / "dead_letters.jsonl",
            job.name,
            **dict(options or {}),
        )
    if server is not None:
        server.start(None if webhook is None else webhook.stats)
    return Service(live, server, webhook)


def attach(runner: Any, spec: HttpSpec, options: Mapping[str, Any] | None = None) -> Service:
    """:func:`serve` ``runner``'s job and subscribe to its batches (call before
    ``runner.start()`` to see the first batch; ``close()`` the result after ``runner.stop()``)."""
    service = serve(runner.job, spec, options)
    service.subscribe(runner.sinks)
    return service
