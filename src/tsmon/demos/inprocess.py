"""The in-process demo job: a fleet of hosts, queries of every kind, dynamic changes, bad input.

Until the Spark runtime lands, ``tsmon demo`` runs this in-process (the issue allows it). It
shows, on a built-in generator: shared windows with online statistics, persistent queries, a
query added mid-stream that first runs over stored history (``SINCE``) with a window populated
from history, a query altered and one removed while running, and rejected points landing in the
dead letters with their reasons.
"""

from __future__ import annotations

import time
from collections import Counter

import numpy as np
import pandas as pd
from rich.console import Console

from tsmon.cli.report import answers_table, events_table, format_event, summary_line
from tsmon.engine.events import Event
from tsmon.engine.monitor import Monitor
from tsmon.streams.fleet import Fleet

QUERIES = """
QUERY hot_cpu ON host*.cpu WHEN mean(15m) > 0.85 AND max(5 points) > 0.9
      EMIT series, mean(15m), max(1h) AS peak
QUERY latency_spike ON host*.latency_ms
      WHEN last > mean(1h) + 4 * stddev(1h) AND count(1h) >= 30
      EMIT series, last, mean(1h), stddev(1h)
QUERY mem_climb ON host*.mem WHEN slope(2h) * 1h > 0.08 EMIT series, slope(2h) * 1h AS per_hour
"""
LATE_QUERY = (
    "QUERY cpu_jump ON host*.cpu WHEN abs(last - mean(30m)) > 4 * stddev(30m) "
    "EMIT series, last, mean(30m), coverage(30m) SINCE -2h"
)
ALTERED = "QUERY hot_cpu ON host*.cpu WHEN mean(15m) > 0.9 EMIT series, mean(15m), max(1h) AS peak"
BOUNDED = """
QUERY fleet_latency AS AVG(host*.latency_ms) WITHIN 2
QUERY cpu_gap AS SUM(host000.cpu - host001.cpu) WITHIN 0.05
QUERY coolest AS MIN(host00*.mem) WITHIN 0.02
"""
TIGHTER = "ALTER QUERY fleet_latency WITHIN 0.5 IMMEDIATELY"


def run_demo(console: Console, hosts: int = 100, hours: float = 24.0) -> int:
    """Run the demo and print what happened; returns the exit status."""
    fleet = Fleet(hosts=hosts)
    steps = max(int(hours * 60), 1)
    chunk = 60  # one hour of points per ingest call
    # filter period T = 10 sampling intervals, as the paper's T = 10 time units
    monitor = Monitor(["host*"], retention="6h", allowed_lateness="5m", filter_period="10m")
    monitor.add_query(QUERIES)
    counts: Counter[str] = Counter()
    samples: list[Event] = []
    started = time.perf_counter()
    console.print(
        f"tsmon demo: {len(fleet.series())} series, {steps} steps of 1 min, "
        f"{len(monitor.queries())} queries"
    )
    for offset in range(0, steps, chunk):
        frame = fleet.points(min(chunk, steps - offset), offset)
        if offset == chunk * 3:
            frame = _with_bad_points(frame)
        monitor.ingest(
            frame["series"].to_numpy(), frame["ts"].to_numpy(), frame["value"].to_numpy()
        )
        hour = (offset + chunk) // 60
        if offset == 0:
            monitor.add_query(BOUNDED)  # globs expand over the series seen in the first hour
            console.print("at hour 1: added 3 bounded aggregates (adaptive filters)")
        if hour == steps // 120:
            monitor.add_query(LATE_QUERY)
            console.print(f"at hour {hour}: added cpu_jump (SINCE -2h): history replayed first")
        if hour == steps * 3 // 240:
            monitor.alter_query(ALTERED)
            monitor.remove_query("mem_climb")
            monitor.alter_query(TIGHTER)
            console.print(f"at hour {hour}: altered hot_cpu, removed mem_climb; {TIGHTER}")
        for event in monitor.events():
            counts[event.query] += 1
            if len(samples) < 8 and counts[event.query] <= 2:
                samples.append(event)
    elapsed = time.perf_counter() - started
    _report(console, monitor, counts, samples, elapsed)
    return 0


def _with_bad_points(frame: pd.DataFrame) -> pd.DataFrame:
    """Append one point of each kind the monitor must reject or repair."""
    last_ts = int(frame["ts"].max())
    bad = pd.DataFrame(
        {
            "series": [
                "host000.cpu",
                "host001.cpu",
                "host002.cpu",
                "nosuch.metric",
                "host003.cpu",
                "host004.cpu",
                "host005.cpu",
            ],
            "ts": [
                last_ts + 1,
                last_ts + 1,
                last_ts + 1,
                last_ts,
                last_ts - 90_000,
                last_ts - 3_570_000,
                last_ts,
            ],
            "value": [np.nan, "n/a", np.inf, 0.5, 0.42, 0.42, 0.99],
        }
    )  # NaN, text, inf, unknown series, late within 5m, too late, duplicate (kept last)
    return pd.concat([frame.astype({"value": object}), bad], ignore_index=True)


def _report(
    console: Console, monitor: Monitor, counts: Counter[str], samples: list[Event], elapsed: float
) -> None:
    """Print the events per query, sample events, the dead letters and the counts summary."""
    console.print(events_table(counts))
    for event in samples:
        console.print(f"  {format_event(event)}", soft_wrap=True)
    dead = monitor.dead_letters()
    console.print(f"dead letters ({len(dead)}):")
    for row in dead.itertuples():
        console.print(f"  {row.series}: {row.reason} - {row.detail}", soft_wrap=True)
    console.print(answers_table(monitor.answers(), monitor.exact_answers()))
    sent = monitor.filter_messages()
    points = monitor.stats()["bounded_points"]
    console.print(
        f"adaptive filters: {sent.streamed:,} streamed updates, {sent.growth:,} growth and "
        f"{sent.shrink:,} shrink messages for {points:,} points of the series they read "
        f"({sent.total / max(points, 1):.1%} of streaming every point)",
        soft_wrap=True,
    )
    stats = monitor.stats()
    rate = stats["received"] / elapsed if elapsed > 0 else float("nan")
    console.print(f"{summary_line(stats)}; {elapsed:.1f} s ({rate:,.0f} points/s)", soft_wrap=True)
