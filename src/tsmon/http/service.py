"""Serve a running job over HTTP from a thread of the job's process, and send its alerts.

:func:`attach` subscribes to a :class:`~tsmon.spark.runtime.JobRunner`'s batches (its sinks'
:meth:`~tsmon.spark.sinks.Sinks.subscribe`) what the job's ``[http]`` table asks for: the API
of :mod:`tsmon.http.app` on ``listen`` (uvicorn in a daemon thread, on a socket bound before
the thread starts, so a busy port is an ``OSError`` at once) and the :class:`Webhook`.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn

from tsmon.http.app import make_app
from tsmon.http.live import Live
from tsmon.http.webhook import Webhook
from tsmon.spark.commands import CommandLog
from tsmon.spark.job import HttpSpec, listen_address

__all__ = ["HttpServer", "Service", "attach"]


class HttpServer:
    """The API over ``live`` and the commands of ``checkpoint``, served on ``host:port``
    (port 0: a free one, see :attr:`url`) until :meth:`stop`."""

    def __init__(
        self,
        live: Live,
        checkpoint: Path,
        host: str,
        port: int,
        webhook: Webhook | None = None,
    ) -> None:
        self.live = live
        app = make_app(live, CommandLog(checkpoint), None if webhook is None else webhook.stats)
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

    def start(self, timeout: float = 10.0) -> None:
        """Serve from a daemon thread; return once it accepts connections."""
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise OSError(f"the HTTP server on {self.url} did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        """Wake every waiting request, stop serving, close the socket."""
        self.live.close()
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(10)
        self._socket.close()


@dataclass
class Service:
    """What :func:`attach` started: the server (``url``) and the webhook, either may be None."""

    live: Live
    server: HttpServer | None
    webhook: Webhook | None

    @property
    def url(self) -> str | None:
        return None if self.server is None else self.server.url

    def close(self) -> None:
        """Stop serving; send what the webhook has queued (a few seconds at most)."""
        if self.server is not None:
            self.server.stop()
        if self.webhook is not None:
            self.webhook.close()


def attach(runner: Any, spec: HttpSpec, options: Mapping[str, Any] | None = None) -> Service:
    """Serve ``runner``'s job as ``spec`` says and subscribe to its batches.

    ``options`` are extra :class:`Webhook` arguments (retries, backoff, ...). Call before
    ``runner.start()`` to see the first batch; ``close()`` the result after ``runner.stop()``.
    """
    job = runner.job
    live = Live()
    webhook = None
    if spec.webhook is not None:
        webhook = Webhook(
            spec.webhook,
            spec.webhook_format,
            job.checkpoint / "webhook" / "dead_letters.jsonl",
            job.name,
            **dict(options or {}),
        )
        runner.sinks.subscribe(webhook.feed)
    server = None
    if spec.listen is not None:
        host, port = listen_address(spec.listen)
        server = HttpServer(live, job.checkpoint, host, port, webhook)
        runner.sinks.subscribe(live.feed)
        server.start()
    return Service(live, server, webhook)
