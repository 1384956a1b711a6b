"""How tsmon shows events and counts on a console: one implementation for every command.

``tsmon replay`` and ``tsmon demo`` print the same things (an event line, a payload, the
events-per-query table, the received = accepted + rejected summary). They used to format them
separately and drifted apart; everything that turns an event or the monitor's counts into text
lives here so both commands show the same figures the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import cast

import pandas as pd
from rich.table import Table

from tsmon.core.units import format_value
from tsmon.engine.events import Event
from tsmon.protocols.filters import Answer


def format_payload(payload: Mapping[str, object]) -> str:
    """An event's payload as ``name=value`` pairs in emission order.

    Examples
    --------
    >>> format_payload({"series": "a.cpu", "mean(15m)": 0.912345, "n": 4})
    'series=a.cpu, mean(15m)=0.9123, n=4'
    """
    return ", ".join(f"{name}={format_value(value)}" for name, value in payload.items())


def format_time(ts_ms: int) -> str:
    """Epoch milliseconds as a UTC time to the second.

    Examples
    --------
    >>> format_time(1704067201500)
    '2024-01-01 00:00:01'
    """
    return pd.Timestamp(ts_ms, unit="ms", tz="UTC").strftime("%Y-%m-%d %H:%M:%S")


def format_event(event: Event) -> str:
    """One event as a line: time, query, series, payload, then its flags.

    The flags say when an answer is not over a full window (``[coverage 0.50]``) and when the
    event came from a ``SINCE`` query's pass over stored history (``[replayed]``).

    Examples
    --------
    >>> format_event(Event("hot", "h1.cpu", 1704067200000, 0.95, {"peak": 0.97}, 0.5, True))
    '2024-01-01 00:00:00  hot            h1.cpu                       peak=0.97 [coverage 0.50] [replayed]'
    """  # noqa: E501
    flags = "" if event.coverage >= 1 else f" [coverage {event.coverage:.2f}]"
    flags += " [replayed]" if event.replayed else ""
    return (
        f"{format_time(event.ts_ms)}  {event.query:<14} {event.series:<28} "
        f"{format_payload(event.payload)}{flags}"
    )


def summary_line(stats: Mapping[str, object]) -> str:
    """The monitor's counts (:meth:`tsmon.Monitor.stats`) as one line.

    Shows that every point is accounted for (received = accepted + rejected, rejections by
    reason), how many accepted points were late inserts or replaced duplicates, and the size of
    the state (series, shared windows, watch queries: the aggregates' answers are shown apart).

    Examples
    --------
    >>> summary_line({"received": 10, "accepted": 8, "rejected": 2,
    ...               "rejected_by_reason": {"too_late": 1, "nan": 1}, "late_inserted": 1,
    ...               "duplicates_replaced": 0, "series": 2, "windows": 3, "queries": 1})
    'points received 10 = accepted 8 + rejected 2 (nan: 1, too_late: 1); late inserted 1, duplicates replaced 0; series 2, windows 3, watch queries 1'
    """  # noqa: E501
    by_reason = cast("Mapping[str, int]", stats.get("rejected_by_reason") or {})
    reasons = ", ".join(f"{reason}: {n}" for reason, n in sorted(by_reason.items()))
    return (
        f"points received {stats['received']} = accepted {stats['accepted']} + rejected "
        f"{stats['rejected']}{f' ({reasons})' if reasons else ''}; "
        f"late inserted {stats['late_inserted']}, duplicates replaced "
        f"{stats['duplicates_replaced']}; series {stats['series']}, windows {stats['windows']}, "
        f"watch queries {stats['queries']}"
    )


def events_table(
    counts: Mapping[str, int],
    queries: Iterable[str] | None = None,
    unmatched: Mapping[str, str] | None = None,
) -> Table:
    """A table of events per query.

    ``queries`` gives the rows and their order (so registered queries that never fired show
    0); without it, the queries in ``counts`` in name order. ``unmatched`` (query -> why, from
    :meth:`tsmon.Monitor.unmatched`) adds a note to the queries no series triggered, so 0 events
    never goes unexplained.
    """
    notes = unmatched or {}
    table = Table(title="events per query")
    table.add_column("query")
    table.add_column("events", justify="right")
    if notes:
        table.add_column("note")
    for name in sorted(counts) if queries is None else queries:
        table.add_row(name, str(counts.get(name, 0)), *([notes.get(name, "")] if notes else []))
    return table


def answers_table(answers: Mapping[str, Answer], exact: Mapping[str, float]) -> Table:
    """Bounded answers ``[lo, hi]`` next to the exact value they must contain."""
    table = Table(title="bounded aggregates")
    for column in ("query", "lo", "value", "hi", "width", "exact", "as of"):
        table.add_column(column, justify="left" if column in ("query", "as of") else "right")
    for name, a in answers.items():
        as_of = format_time(a.as_of_ms) if a.as_of_ms is not None else "-"
        table.add_row(
            name,
            format_value(a.lo),
            format_value(a.value),
            format_value(a.hi),
            format_value(a.hi - a.lo),
            format_value(exact.get(name, float("nan"))),
            as_of,
        )
    return table
