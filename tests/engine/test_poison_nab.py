"""Real NAB series with extreme values and timestamps mixed in (issue 16): no exception leaves
a batch, and every point is counted once — applied, stale (older than its series' newest: the
registers' too_late dead letter) or a dead letter of the node with a reason (bad_timestamp,
value_out_of_range, future_timestamp); no step fails."""

from __future__ import annotations

import functools
import sys
from collections import Counter

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.core.exact import NAB
from tsmon.core.moments import MAX_ABS_VALUE
from tsmon.core.timestamps import MAX_INSTANT_MS, MIN_INSTANT_MS
from tsmon.engine.batched import BatchedRuntime
from tsmon.engine.settings import DAY_MS, RegisterSettings

CLOCK = 1_764_000_000_000  # the batches' processing time (2025-11)
FILES = [
    "realAWSCloudwatch/ec2_cpu_utilization_5f5533.csv",
    "realAWSCloudwatch/ec2_cpu_utilization_24ae8d.csv",
    "realAWSCloudwatch/ec2_cpu_utilization_53ea38.csv",
    "realAWSCloudwatch/rds_cpu_utilization_cc0c53.csv",
]
POINTS = 150  # per series
BATCH = 60
QUERIES = """
QUERY all AS AVG(n0.cpu, n1.cpu, n2.cpu, n3.cpu) WITHIN 2
QUERY top AS TOP 2 OF n* BY cpu WITHIN 0
QUERY hot ON n*.cpu WHEN mean(1h) > 50 EMIT series, max(1h)
QUERY st AS AVG(n0.cpu, n1.cpu) WITHIN 5% CONFIDENCE 0.9
QUERY cnt AS APPROX COUNT(n2.cpu > 40) OVER 50 points WITHIN 10%
"""
VALUES = [1e308, -1e308, 1.8e302, 1e141, -1e141, 1e140, -1e140, 5e-324, -0.0, 2.0**53 + 2]
VALUES += [sys.float_info.max, -sys.float_info.max, 1e-300]
YEAR = 365 * DAY_MS


@functools.cache
def nab() -> tuple[tuple[str, str, int, float], ...]:
    if NAB is None:
        pytest.skip("NAB data not found (../shared/data/nab)")
    points = []
    for i, name in enumerate(FILES):
        frame = pd.read_csv(NAB / name, nrows=POINTS)
        ts = pd.to_datetime(frame["timestamp"]).astype("int64") // 1_000_000
        points += [
            (f"s{i}", f"n{i}.cpu", int(t), float(v))
            for t, v in zip(ts, frame["value"], strict=True)
        ]
    return tuple(sorted(points, key=lambda p: p[2]))


def timestamp(kind: str, ts: int) -> int:
    return {
        "same": ts,
        "zero": 0,
        "negative": -(2**62),
        "int64_max": 2**63 - 1,
        "year_9999": 253_402_300_799_999,
        "beyond_int64": 2**70,
        "at_limit": CLOCK + DAY_MS,
        "past_limit": CLOCK + DAY_MS + 1,
        "min_instant": MIN_INSTANT_MS,
        "max_instant": MAX_INSTANT_MS,
        "ten_years_on": ts + 10 * YEAR,  # before the clock: a jump, applied
        "a_year_back": ts - YEAR,
    }[kind]


injection = st.tuples(
    st.integers(0, 4 * POINTS - 1),  # where in the stream
    st.integers(0, 3),  # which series
    st.one_of(st.none(), st.sampled_from(VALUES)),  # its value (None: the real one's)
    st.sampled_from(
        [
            "same",
            "zero",
            "negative",
            "int64_max",
            "year_9999",
            "beyond_int64",
            "at_limit",
            "past_limit",
            "ten_years_on",
            "a_year_back",
            "min_instant",
            "max_instant",
        ]
    ),
)


@settings(max_examples=20, deadline=None)
@given(st.lists(injection, min_size=1, max_size=12), st.booleans())
def test_extreme_points_in_real_series_never_stop_a_batch_and_every_point_counts(
    injections: list[tuple[int, int, float | None, str]], limited: bool
) -> None:
    stream = list(nab())
    for where, i, value, ts_kind in sorted(injections, key=lambda j: j[0], reverse=True):
        _, _, ts, real = stream[where]
        point = (f"s{i}", f"n{i}.cpu", timestamp(ts_kind, ts), real if value is None else value)
        stream.insert(where, point)
    rt = BatchedRuntime(
        60_000,
        0.05,
        0,
        registers=RegisterSettings(retention="1h"),
        queries=QUERIES,
        source_of={f"n{i}.cpu": f"s{i}" for i in range(4)},
        max_future_ms=DAY_MS if limited else None,
    )
    batches = [stream[b : b + BATCH] for b in range(0, len(stream), BATCH)] + [[], []]
    for batch in batches:
        rt.run_batch(batch, clock_ms=CLOCK)  # raises nothing
        counted: Counter[str] = Counter()
        for row in rt.last_outputs:
            if row["kind"] == "heartbeat" and row["source"].startswith("s"):
                counted["applied"] += row["payload"]["points"]
                counted["stale"] += row["payload"]["stale"]
            elif row["kind"] == "dead":
                counted[row["payload"]["reason"]] += 1
        # a stale point (older than its series' newest) is also the registers' too_late dead
        # letter (no allowed lateness): counted once, as stale
        assert counted.pop("too_late", 0) == counted["stale"], counted
        assert counted == expected(batch, limited) + Counter(
            applied=counted["applied"], stale=counted["stale"]
        ), counted
        assert rt.errors == [] and rt.quarantined == []  # no step failed


def expected(batch: list[tuple[str, str, int, float]], limited: bool) -> Counter[str]:
    """The dead letters of a batch, by reason (the rest is applied or stale)."""
    out: Counter[str] = Counter()
    for _, _, ts, value in batch:
        if not MIN_INSTANT_MS <= ts <= MAX_INSTANT_MS:
            out["bad_timestamp"] += 1
        elif abs(value) > MAX_ABS_VALUE:
            out["value_out_of_range"] += 1
        elif limited and ts > CLOCK + DAY_MS:
            out["future_timestamp"] += 1
    return out
