"""The HTTP API of a running job (Starlette): queries, answers, events, health, metrics, page.

=====================================  ===========================================================
``GET /``                              the dashboard (static HTML + JS, ``static/``)
``GET /healthz``                       ``{"status": "starting"|"running", "batch", ...}``
``GET /queries``                       the queries running now (by part, as of the last batch)
                                       and those that wait for their series (name -> why)
                                       and every command with its state
``POST /queries``                      ``{"text": "QUERY ...", "op": "add"|"alter"}`` (or the
                                       statement as a text/plain body: ``add``); ``?wait=S``
``DELETE /queries/{name}``             remove a query; ``?wait=S``
``GET /commands/{id}``                 one command's state
``GET /answers``                       every query's newest answer by part, progress, totals
                                       (before a restart's first batch: the checkpoint's)
``GET /answers/history``               each numeric answer's value and bounds, batch by batch
``GET /events``                        server-sent events (``Accept: text/event-stream``), else
                                       a long poll: ``?since=SEQ&timeout=S&limit=N``
``GET /metrics``                       Prometheus text format (:mod:`tsmon.http.metrics`)
=====================================  ===========================================================

Commands go through the job's command log (:class:`tsmon.spark.commands.CommandLog`), exactly
as ``tsmon query add|alter|remove`` does: checked when submitted (a bad one is refused with 400
and nothing is written), applied by the job at its next batch. The reply is ``202`` with the
command's id and state ``pending``; with ``?wait=S`` the request waits up to ``S`` seconds
for the batch that applies it and answers ``200`` (applied, with what happened) or ``422``
(rejected, with why), or ``202`` if no batch took it in time.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from tsmon.engine.hub import CoordinatorNode
from tsmon.http.live import Live
from tsmon.http.metrics import CONTENT_TYPE, metrics_text
from tsmon.spark.commands import CommandError, CommandLog
from tsmon.spark.driver import latest_answers, latest_snapshot, running_queries

__all__ = ["make_app"]

STATIC = Path(__file__).parent / "static"
LOG = logging.getLogger("tsmon.http")
MAX_WAIT_S = 60.0
KEEPALIVE_S = 15.0


def make_app(
    live: Live,
    commands: CommandLog,
    webhook: Callable[[], Mapping[str, int]] | None = None,
) -> _Guard:
    """The API over ``live`` (fed by the job's batches) and the job's ``commands`` log;
    ``webhook()`` gives the webhook's delivery counts for ``/metrics`` and ``/healthz``."""

    async def healthz(request: Request) -> Response:
        body: dict[str, Any] = {
            "status": "starting" if live.batch_id is None else "running",
            "batch": live.batch_id,
            "secondsSinceLastBatch": None
            if live.last_batch_at is None
            else round(time.time() - live.last_batch_at, 3),
        }
        if webhook is not None:
            body["webhook"] = dict(webhook())
        return JSONResponse(body)

    async def _restored() -> tuple[int, CoordinatorNode] | None:
        """Before the first batch (of a job restarted on its checkpoint), the batch and
        coordinator of the checkpoint's newest snapshot; None after, or with none."""
        if live.batch_id is not None:
            return None
        return await anyio.to_thread.run_sync(latest_snapshot, commands.directory.parent)

    async def list_queries(request: Request) -> Response:
        progress = live.last_progress()
        running = progress.get("queries", {})
        waiting = progress.get("unmatchedQueries", {})
        snapshot = await _restored()
        if snapshot is not None:
            running, waiting = running_queries(snapshot[1]), dict(snapshot[1].waiting.notes)
        states = await anyio.to_thread.run_sync(commands.states)
        return JSONResponse({"running": running, "waiting": waiting, "commands": states})

    async def post_query(request: Request) -> Response:
        raw = (await request.body()).decode("utf-8", errors="replace")
        if request.headers.get("content-type", "").startswith("application/json"):
            try:
                body = json.loads(raw)
            except ValueError as e:
                return _error(400, f"the body is not JSON: {e}")
            if not isinstance(body, dict) or not isinstance(body.get("text"), str):
                return _error(400, 'send {"text": "QUERY ...", "op": "add"|"alter"}')
            op, text = body.get("op", "add"), body["text"]
            if op not in ("add", "alter"):
                return _error(400, f"op must be add or alter, got {op!r}; remove with DELETE")
        else:
            op, text = "add", raw
        return await _submit(request, op, text)

    async def delete_query(request: Request) -> Response:
        return await _submit(request, "remove", request.path_params["name"])

    async def _submit(request: Request, op: str, text: str) -> Response:
        try:
            wait = _seconds(request, "wait")
            command_id = commands.submit(op, text)
        except ValueError as e:  # a bad ?wait, CommandError, QuerySyntaxError, a kind's check
            return _error(400, str(e))
        state = await _state(command_id, wait)
        status = {"applied": 200, "rejected": 422}.get(state["state"], 202)
        return JSONResponse(state, status_code=status)

    async def _state(command_id: str, wait: float) -> dict[str, Any]:
        deadline = time.monotonic() + wait
        seen = live.batches
        while True:
            states = await anyio.to_thread.run_sync(commands.states)
            state = next(s for s in states if s["id"] == command_id)
            left = deadline - time.monotonic()
            if state["state"] in ("applied", "rejected") or left <= 0 or live.closed:
                return state
            seen = await anyio.to_thread.run_sync(live.wait, seen, min(left, 1.0))

    async def command(request: Request) -> Response:
        states = await anyio.to_thread.run_sync(commands.states)
        for state in states:
            if state["id"] == request.path_params["id"]:
                return JSONResponse(state)
        return _error(404, f"no command {request.path_params['id']!r}")

    async def answers(request: Request) -> Response:
        snapshot = await _restored()
        checkpoint = None if snapshot is None else (snapshot[0], latest_answers(snapshot[1]))
        return JSONResponse(live.snapshot(checkpoint))

    async def history(request: Request) -> Response:
        return JSONResponse(live.history_of())

    async def events(request: Request) -> Response:
        try:
            since = int(request.query_params.get("since", -1))
            limit = int(request.query_params.get("limit", 100))
            if limit < 0:
                raise ValueError
        except ValueError:
            return _error(400, "since is an integer, limit an integer >= 0")
        try:
            timeout = _seconds(request, "timeout")
        except ValueError as e:
            return _error(400, str(e))
        if "text/event-stream" in request.headers.get("accept", ""):
            last = request.headers.get("last-event-id", "")
            since = int(last) if last.lstrip("-").isdigit() else since
            return StreamingResponse(
                _stream(request, since, limit),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            )
        deadline = time.monotonic() + timeout
        seen = live.batches
        while True:
            found = live.events_after(since, limit)
            left = deadline - time.monotonic()
            if found or left <= 0 or live.closed:
                return JSONResponse({"events": found, "next": live.event_seq - 1})
            seen = await anyio.to_thread.run_sync(live.wait, seen, min(left, 1.0))

    async def _stream(request: Request, since: int, limit: int) -> AsyncIterator[str]:
        seen = -1
        while True:
            for event in live.events_after(since, limit):
                since = event["seq"]
                yield f"id: {since}\nevent: event\ndata: {json.dumps(event)}\n\n"
            if live.batches != seen:
                seen = live.batches
                progress = json.dumps(live.last_progress())
                yield f"event: batch\ndata: {progress}\n\n"
            if live.closed or await request.is_disconnected():
                return
            now = await anyio.to_thread.run_sync(live.wait, seen, KEEPALIVE_S)
            if now == seen:
                yield ": keepalive\n\n"

    async def metrics(request: Request) -> Response:
        return Response(metrics_text(live, webhook), media_type=CONTENT_TYPE)

    async def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html")

    app = Starlette(
        routes=[
            Route("/", index),
            Route("/healthz", healthz),
            Route("/queries", list_queries, methods=["GET"]),
            Route("/queries", post_query, methods=["POST"]),
            Route("/queries/{name}", delete_query, methods=["DELETE"]),
            Route("/commands/{id}", command),
            Route("/answers", answers),
            Route("/answers/history", history),
            Route("/events", events),
            Route("/metrics", metrics),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        exception_handlers={CommandError: damaged, Exception: internal},
    )
    return _Guard(app)


class _Guard:
    """ASGI middleware: an error the API did not foresee (a bug) is answered by
    :func:`internal` (a JSON 500 naming it) and logged in one line, not a traceback in the job's
    console. The ``tsmon.http`` logger at DEBUG logs the traceback too."""

    def __init__(self, app: Starlette) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await self.app(scope, receive, send)
        except Exception as e:  # answered by internal(); Starlette raises it again after
            LOG.error(
                "internal error in %s %s: %s", scope.get("method"), scope.get("path"), _named(e)
            )
            LOG.debug("traceback", exc_info=True)


async def internal(request: Request, exc: Exception) -> Response:
    """An error no route foresaw: named in a JSON 500, not Starlette's bare one."""
    return _error(500, f"internal error: {_named(exc)}")


def _named(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"


async def damaged(request: Request, exc: Exception) -> Response:
    """A command record the API cannot read (damaged by hand): its message, not a bare 500."""
    return _error(500, str(exc))


def _seconds(request: Request, name: str) -> float:
    """The query parameter ``name`` as seconds to wait: a finite number, at most MAX_WAIT_S
    (negative: none); ValueError naming it otherwise (a NaN would wait for ever)."""
    raw = request.query_params.get(name, "0")
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if math.isnan(seconds):
        raise ValueError(f"?{name}= takes seconds (at most {MAX_WAIT_S:g}), got {raw!r}")
    return max(0.0, min(seconds, MAX_WAIT_S))


def _error(status: int, detail: str) -> JSONResponse:
    return JSONResponse({"error": detail}, status_code=status)
