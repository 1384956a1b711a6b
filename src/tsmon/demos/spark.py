"""``tsmon demo``: the main job on Spark Structured Streaming, locally, on the built-in generator.

A fleet of ``hosts`` sources × ``metrics`` series (random walks with daily cycles and bursts,
:class:`~tsmon.streams.fleet.FleetStream`) streams one point per series every ``step`` of
event time into the same pipeline ``tsmon run`` runs: watch queries at the source nodes,
bounded aggregates (with globs) at the coordinator from adaptive filters, a standing aggregate
evaluated when its Brownian model says it is due (query partitions), and a SWAT summary kept at
its series' node. While it runs, the
demo changes queries through the command log, as ``tsmon query ... --job DIR`` would: a third
of the way in it adds a watch query with ``SINCE`` (first evaluated over the nodes' stored
history) and tightens a precision ``IMMEDIATELY``; two thirds in it adds a glob aggregate and
removes a watch query. The answers show live with their bounds; at the end every bounded answer
is checked against the exact aggregate recomputed from the generator, and a summary gives the
points seen, the rows that reached the coordinator, the control rows and the savings ratio.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tsmon.core.timestamps import format_instant_ms
from tsmon.core.units import format_value, parse_duration_ms
from tsmon.protocols.filters import Answer
from tsmon.spark.commands import CommandLog
from tsmon.spark.job import Job, parse_job
from tsmon.spark.signals import INTERRUPTED
from tsmon.spark.sinks import BatchOutput
from tsmon.streams.fleet import FleetStream

QUERIES = """
QUERY hot_cpu ON host*.cpu WHEN mean(30m) > 0.8 AND max(3 points) > 0.85
      EMIT series, mean(30m), max(2h) AS peak
QUERY latency_spike ON host*.latency_ms
      WHEN last > mean(2h) + 3 * stddev(2h) AND count(2h) >= 12
      EMIT series, last, mean(2h), stddev(2h)
QUERY error_burst ON host*.errors WHEN last > 4 EMIT series, last, max(1h)
QUERY fleet_latency AS AVG(host*.latency_ms) WITHIN 2
QUERY cpu_gap AS SUM(host000.cpu - host001.cpu) WITHIN 0.05
QUERY coolest AS MIN(host00*.temp_c) WITHIN 0.5
QUERY busiest AS MAX(host00*.requests) WITHIN 40
QUERY cpu_trio AS AVG(host000.cpu, host001.cpu, host002.cpu) WITHIN 0.05 CONFIDENCE 0.9
QUERY recent_latency AS INNER(host000.latency_ms, [4, 3, 2, 1]) OVER 64 points
"""
STANDING = {"cpu_trio": {"host000.cpu": 1 / 3, "host001.cpu": 1 / 3, "host002.cpu": 1 / 3}}
SUMMARY = {"recent_latency": ("host000.latency_ms", [4.0, 3.0, 2.0, 1.0])}

#: (fraction of the ticks done, op, text): the live changes the demo submits.
LIVE_CHANGES = (
    (
        1 / 3,
        "add",
        "QUERY mem_climb ON host*.mem WHEN slope(2h) * 1h > 0.04 "
        "EMIT series, slope(2h) * 1h AS per_hour SINCE -2h",
    ),
    (1 / 3, "alter", "ALTER QUERY fleet_latency WITHIN 0.5 IMMEDIATELY"),
    (2 / 3, "add", "QUERY queue_total AS SUM(host0*.queue) WITHIN 20"),
    (2 / 3, "remove", "error_burst"),
)


@dataclass(frozen=True)
class DemoSettings:
    """The size of the demo: ``hosts`` × ``metrics`` series over ``ticks`` steps."""

    hosts: int = 200
    metrics: int = 15
    ticks: int = 288
    step: str = "5m"
    # 4 h of event time (144,000 points) per micro-batch: each batch has a fixed cost (Spark's
    # planning and state commit, every node unpickled and pickled, numpy calls per series and
    # window) that batches of 1 h spent 24 times (benchmarks/README.md, "tsmon demo")
    ticks_per_batch: int = 48
    master: str = "local[2]"

    @property
    def series(self) -> int:
        return self.hosts * self.metrics

    @property
    def points(self) -> int:
        return self.series * self.ticks


def demo_job(settings: DemoSettings, directory: Path) -> Job:
    """The demo's job: the generator as fast as Spark takes it, at most ``ticks_per_batch``
    steps per micro-batch; filter period T = 10 steps (the paper's T = 10 time units)."""
    step_ms = parse_duration_ms(settings.step)
    raw = {
        "queries": QUERIES,
        "job": {
            "name": "tsmon-demo",
            "checkpoint": "checkpoint",
            "trigger": "100ms",
            "master": settings.master,
        },
        "input": {
            "kind": "generator",
            "sources": settings.hosts,
            "metrics": settings.metrics,
            "step": settings.step,
            "ticks": settings.ticks,
            "speedup": 1e9,
            "max_ticks_per_batch": settings.ticks_per_batch,
        },
        "registers": {"retention": "3h"},
        "filters": {"period": f"{10 * step_ms}ms", "shrink": 0.05, "growth": "capped"},
        "standing": {"tick": f"{settings.ticks_per_batch * step_ms}ms", "partitions": 2},
        "sinks": [{"kind": "console"}, {"kind": "parquet", "path": "out"}],
    }
    return parse_job(raw, directory, "demo job")


@dataclass
class _Live:
    """Submits the live changes as the ticks go by, keeps what the summary needs and says how
    far the run has got (:meth:`headline`)."""

    log: CommandLog
    settings: DemoSettings
    start_ms: int  # the generator's first tick
    points: int = 0
    data_batches: int = 0
    events: Counter[str] = field(default_factory=Counter)
    samples: list[Mapping[str, Any]] = field(default_factory=list)
    submitted: int = 0
    last: BatchOutput | None = None

    @property
    def total(self) -> int:
        return self.settings.points

    def __call__(self, out: BatchOutput) -> None:
        points = int(out.progress.get("numInputRows", 0))
        self.points += points
        self.data_batches += points > 0
        for e in out.events:
            self.events[e["query"]] += 1
            if self.events[e["query"]] <= 2 and len(self.samples) < 10:
                self.samples.append(e)
        while (
            self.submitted < len(LIVE_CHANGES)
            and self.points >= LIVE_CHANGES[self.submitted][0] * self.total
        ):
            _, op, text = LIVE_CHANGES[self.submitted]
            self.log.submit(op, text)
            self.submitted += 1
        self.last = out

    def headline(self, out: BatchOutput) -> str:
        """``progress: data batch 3 of 6, 432,000 of 864,000 points (50%), event time reached
        2024-01-01T11:55:00Z (tick 144 of 288)``; a batch without points (control only) says
        so."""
        s = self.settings
        planned = max(-(-s.ticks // s.ticks_per_batch), self.data_batches)
        ticks = self.points // s.series
        line = (
            f"progress: data batch {self.data_batches} of {planned}, "
            f"{self.points:,} of {s.points:,} points ({100 * self.points / s.points:.0f}%)"
        )
        if ticks:
            reached = self.start_ms + (ticks - 1) * parse_duration_ms(s.step)
            line += f", event time reached {format_instant_ms(reached)} (tick {ticks} of {s.ticks})"
        if not out.progress.get("numInputRows"):
            line += "; no new points in this batch (control only)"
        return line


def run_spark_demo(
    console: Console,
    settings: DemoSettings,
    directory: Path | None = None,
    verbose: bool = False,
) -> int:
    """Run the demo; returns the exit status. ``directory`` keeps the checkpoint and the
    Parquet output (a temporary directory otherwise). Spark's own output (the JVM's warnings
    and log lines, the Python workers') goes to :func:`spark_log`, unless ``verbose``."""
    from tsmon.spark.session import SHORT_RUN_JVM_OPTIONS, spark_session

    with tempfile.TemporaryDirectory(prefix="tsmon-demo-") as tmp:
        where = Path(directory) if directory is not None else Path(tmp)
        if (where / "checkpoint").exists():
            raise ValueError(
                f"--dir {where} holds the checkpoint of an earlier demo (its generator has "
                "finished there); pass a new directory"
            )
        where.mkdir(parents=True, exist_ok=True)
        job = demo_job(settings, where)
        console.print(
            f"tsmon demo: {settings.hosts} sources × {settings.metrics} metrics = "
            f"{settings.series:,} series, {settings.ticks} steps of {settings.step} "
            f"({settings.points:,} points) on Spark {settings.master}; starting Spark ...",
            soft_wrap=True,
        )
        started = time.perf_counter()
        live = _Live(CommandLog(job.checkpoint), settings, job.input.start_ms)
        log = None if verbose else spark_log(directory)
        # a one-minute job: C1 only, unless TSMON_JVM_OPTIONS says otherwise (docs/running.md)
        jvm = os.environ.get("TSMON_JVM_OPTIONS", SHORT_RUN_JVM_OPTIONS)
        spark = spark_session(job.master, job.name, dict(job.spark_conf), log, jvm)
        try:
            return _stream(spark, job, settings, live, console, log, started)
        finally:  # before the checkpoint goes: Spark's state-store maintenance writes into it
            spark.stop()


def _stream(
    spark: Any,
    job: Job,
    settings: DemoSettings,
    live: _Live,
    console: Console,
    log: Path | None,
    started: float,
) -> int:
    """Run the demo's job on ``spark`` until its input is done and it is quiet, then the
    summary (status 0); Ctrl-C or SIGTERM stops it first (status :data:`INTERRUPTED`)."""
    from tsmon.spark.runtime import JobRunner

    runner = JobRunner(job, spark=spark, callback=live)
    if runner.sinks.console is not None:
        runner.sinks.console.headline = live.headline
    console.print(f"Spark up in {time.perf_counter() - started:.1f} s; streaming ...")
    if log is not None:
        console.print(f"Spark's own messages go to {log} (--verbose shows them here)")
    began = time.perf_counter()
    if stream_to_end(runner, live, settings.points):
        console.print(f"interrupted: stopped after {live.points:,} of {settings.points:,} points")
        return INTERRUPTED
    elapsed = time.perf_counter() - began
    _summary(console, job, settings, live, runner, elapsed)
    return 0


def spark_log(directory: Path | None) -> Path:
    """Where the demo's Spark writes its own output: ``<directory>/spark.log``, or a file in
    the temp directory named after this process (kept after the demo, unlike its temporary
    checkpoint)."""
    if directory is not None:
        return Path(directory) / "spark.log"
    return Path(tempfile.gettempdir()) / f"tsmon-demo-{os.getpid()}-spark.log"


def stream_to_end(runner: Any, live: _Live, points: int) -> bool:
    """Start ``runner`` and run batches until ``live`` has seen ``points`` points and a batch
    wrote no control rows (the job is quiet), or Ctrl-C / SIGTERM (then True), then stop it
    (:func:`tsmon.spark.signals.run_until_signalled`: no Py4J call interrupted half-way)."""
    from tsmon.spark.signals import run_until_signalled

    def work(signalled: threading.Event) -> None:
        runner.start()
        while (live.points < points or _control_pending(live)) and not signalled.is_set():
            runner.process_all_available()
            time.sleep(0.05)

    return run_until_signalled(work, runner.stop)


def _control_pending(live: _Live) -> bool:
    """Whether the last batch wrote control rows (the job is not quiet yet)."""
    return live.last is not None and bool(live.last.progress.get("controlRows"))


def _summary(
    console: Console, job: Job, s: DemoSettings, live: _Live, runner: Any, elapsed: float
) -> None:
    """Events per query, live changes, answers vs the exact aggregate, and the data movement."""
    events = Table(title="events per watch query", title_justify="left")
    events.add_column("query")
    events.add_column("events", justify="right")
    for query, n in sorted(live.events.items()):
        events.add_row(Text(query), f"{n:,}")
    console.print(events)
    for e in live.samples:
        payload = ", ".join(f"{k}={_short(v)}" for k, v in e["payload"].items())
        flag = " [replayed]" if e["replayed"] else ""
        console.print(Text(f"  {e['query']} {e['series']} @ {e['ts_ms']}: {payload}{flag}"))
    for outcome in CommandLog(job.checkpoint).states():
        console.print(
            Text(
                f"live change {outcome['op']} in batch {outcome['batch']}: {outcome['state']} "
                f"- {outcome['detail'] or outcome['text']}"
            ),
            soft_wrap=True,
        )
    last = live.last
    assert last is not None
    queries = runner.coordinator.node_for(last.batch_id + 1).part("bounded").coordinator.queries
    console.print(_answers_table(last.answers.get("bounded", {}), queries, job, s))
    console.print(_deferred_table(last, job, s))
    lines = [json.loads(x) for x in (job.checkpoint / "progress.jsonl").read_text().splitlines()]
    points = sum(p["numInputRows"] for p in lines)
    to_coordinator = sum(p["rowsToCoordinator"] for p in lines)
    control = sum(p["controlRows"] for p in lines)
    m = lines[-1]["messages"]
    console.print(
        f"points seen {points:,} in {len(lines)} batches ({elapsed:.1f} s, "
        f"{points / max(elapsed, 1e-9):,.0f} points/s); rows to the coordinator {to_coordinator:,} "
        f"({m['streamed']:,} filter updates, {m['heartbeats']:,} heartbeats, "
        f"{sum(live.events.values()):,} events); control rows {control:,} "
        f"({m['growth']:,} growth, {m['shrink']:,} shrink); savings "
        f"{points / max(to_coordinator, 1):.1f}× fewer rows to the driver than points; "
        f"dead letters {runner.dead_letters:,}",
        soft_wrap=True,
    )


def _answers_table(
    answers: Mapping[str, Answer], queries: Mapping[str, Any], job: Job, s: DemoSettings
) -> Table:
    """Each bounded answer beside the exact aggregate of the generator's values at its time."""
    spec = job.input
    fleet = FleetStream(s.hosts, s.metrics, spec.step_ms, spec.start_ms, spec.seed)
    values = fleet.values(0, s.ticks)
    column = {name: i for i, name in enumerate(fleet.series())}
    table = Table(title="bounded answers vs exact", title_justify="left")
    for name in ("query", "low", "high", "width", "exact", "inside", "as of tick"):
        table.add_column(name, justify="left" if name == "query" else "right")
    for name, a in answers.items():
        tick = (a.as_of_ms - spec.start_ms) // spec.step_ms
        if name not in queries or not 0 <= tick < s.ticks:
            table.add_row(Text(name), "-", "-", "-", "-", "no value yet", "-")
            continue
        current = {obj: float(values[tick, column[obj]]) for obj in queries[name].objects}
        exact = queries[name].exact(current)
        inside = bool(a.lo - 1e-9 <= exact <= a.hi + 1e-9)
        table.add_row(
            Text(name),
            format_value(a.lo),
            format_value(a.hi),
            format_value(a.hi - a.lo),
            format_value(exact),
            "yes" if inside else "NO",
            str(tick),
        )
    return table


def _deferred_table(last: BatchOutput, job: Job, s: DemoSettings) -> Table:
    """The standing query's last evaluation beside the exact aggregate at its time, and the
    summary's answer beside the exact inner product over the last values."""
    spec = job.input
    fleet = FleetStream(s.hosts, s.metrics, spec.step_ms, spec.start_ms, spec.seed)
    values = fleet.values(0, s.ticks)
    column = {name: i for i, name in enumerate(fleet.series())}
    table = Table(title="standing and summary answers vs exact", title_justify="left")
    for name in ("query", "value", "±", "exact", "inside", "as of tick"):
        table.add_column(name, justify="left" if name == "query" else "right")
    for name, weights in STANDING.items():
        a = last.answers.get("standing", {}).get(name)
        missing = sorted(set(weights) - column.keys())  # a fleet of fewer hosts
        if a is None or missing:
            why = f"{missing[0]} is not in this fleet" if missing else "no value yet"
            table.add_row(Text(name), "-", "-", "-", why, "-")
            continue
        tick = (a.ts_ms - spec.start_ms) // spec.step_ms
        exact = sum(w * float(values[tick, column[n]]) for n, w in weights.items())
        inside = "yes" if abs(a.value - exact) <= 1e-9 else "NO"
        cells = (a.value, a.eps, exact)
        table.add_row(Text(name), *map(format_value, cells), inside, str(tick))
    for name, (series, weights) in SUMMARY.items():
        answer = last.answers.get("local", {}).get(name)
        if answer is None or answer.bound is None:
            table.add_row(Text(name), "-", "-", "-", "no value yet", "-")
            continue
        newest = values[: answer.points, column[series]][::-1]
        exact = float(np.dot(weights, newest[: len(weights)]))
        inside = "yes" if abs(answer.value - exact) <= answer.bound + 1e-9 else "NO"
        cells = (answer.value, answer.bound, exact)
        table.add_row(Text(name), *map(format_value, cells), inside, str(answer.points - 1))
    return table


def _short(value: Any) -> str:
    return format_value(value) if isinstance(value, float) and np.isfinite(value) else str(value)
