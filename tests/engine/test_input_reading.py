"""Reading timestamps, values and durations at the edges: what counts as epoch ms, what is
rejected, zero lateness, and reading stored points back through ``Monitor.points``."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pytest

from tsmon import Monitor
from tsmon.core.timestamps import as_column, read_epoch_ms
from tsmon.core.units import UnitError, parse_duration_ms

T0 = 1_700_000_000_000


def test_read_epoch_ms_object_items_one_by_one() -> None:
    items = np.array(
        [
            T0,
            np.int32(7),
            2.0,
            "1700000000000",
            "2023-11-14T22:13:20Z",
            dt.datetime(2023, 11, 14, 22, 13, 20),
            np.datetime64(T0, "ms"),
            1.5,
            None,
            np.nan,
            pd.NaT,
            np.datetime64("NaT"),
            True,
            np.bool_(False),
            2**70,
            "x",
        ],
        dtype=object,
    )
    millis, ok = read_epoch_ms(items)
    assert ok.tolist() == [True] * 8 + [False] * 8
    assert millis[:8].tolist() == [T0, 7, 2, T0, T0, T0, T0, 1]
    assert not millis[~ok].any()


@pytest.mark.parametrize(
    "ts",
    [
        np.array([T0, T0 + 1], dtype=np.int64),
        np.array([T0, T0 + 1], dtype=np.float64),
        np.array([T0, T0 + 1], dtype="datetime64[ms]"),
        [T0, T0 + 1],
        pd.Series(pd.to_datetime([T0, T0 + 1], unit="ms", utc=True).tz_convert("Asia/Tokyo")),
    ],
    ids=["int64", "float64", "datetime64", "list", "tz-aware-series"],
)
def test_read_epoch_ms_typed_inputs(ts: object) -> None:
    millis, ok = read_epoch_ms(ts)
    assert millis.dtype == np.int64
    assert millis.tolist() == [T0, T0 + 1]
    assert ok.all()


def test_read_epoch_ms_float_array_floors_fractions_and_rejects_nan() -> None:
    millis, ok = read_epoch_ms(np.array([1.0, 1.5, -1.5, np.nan, np.inf, 1e30]))
    assert ok.tolist() == [True, True, True, False, False, False]
    assert millis.tolist() == [1, 1, -2, 0, 0, 0]


def test_monitor_ingests_float_seconds_at_the_ms_of_their_decimal() -> None:
    """``time.time()`` floats in seconds are stored at the ms their shortest text says
    (1.001 s is 1001 ms, though 1.001 * 1000 is 1000.9999999999999); NaN is a bad_timestamp
    (were: every non-whole float a bad_timestamp)."""
    mon = Monitor(["s"], retention=None)
    ts = np.array([1.001, 1_700_000_000.001, 1_700_000_000.5, 1_700_000_001.999, np.nan])
    report = mon.ingest(["s"] * 5, ts, [0.0, 1.0, 2.0, 3.0, 4.0], ts_unit="s")
    points = mon.points("s")
    assert points["ts_ms"].tolist() == [1001, T0 + 1, T0 + 500, T0 + 1999]
    assert points["value"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert report.rejected == 1
    assert mon.dead_letters()["reason"].tolist() == ["bad_timestamp"]


def test_as_column_keeps_mixed_lists_as_objects() -> None:
    assert as_column([1, 2]).dtype == np.int64
    assert as_column([1.0, 2.0]).dtype == np.float64
    assert as_column([True, 2.0]).tolist() == [True, 2.0]
    assert as_column([T0, "x"]).tolist() == [T0, "x"]
    assert as_column([T0, 2**70]).dtype == object


def test_zero_durations_only_where_allowed() -> None:
    with pytest.raises(UnitError, match="> 0 ms"):
        parse_duration_ms("0ms")
    assert parse_duration_ms("0s", allow_zero=True) == 0
    assert parse_duration_ms("5m", allow_zero=True) == 300_000


@pytest.mark.parametrize("lateness", [0, "0ms", "0s"])
def test_zero_allowed_lateness(lateness: object) -> None:
    mon = Monitor(["s"], allowed_lateness=lateness)
    report = mon.ingest(["s"] * 3, [T0, T0 + 2000, T0 + 1000], [1.0, 2.0, 3.0])
    assert (report.accepted, report.rejected) == (2, 1)
    assert mon.dead_letters()["reason"].tolist() == ["too_late"]


def test_zero_retention_is_still_an_error() -> None:
    with pytest.raises(UnitError, match="> 0 ms"):
        Monitor(["s"], retention="0s")


def test_bool_timestamps_are_bad() -> None:
    mon = Monitor(["s"])
    report = mon.ingest(["s", "s"], [True, T0], [1.0, 2.0])
    assert mon.dead_letters()["reason"].tolist() == ["bad_timestamp"]
    assert report.accepted == 1


def test_points_returns_a_time_ordered_copy() -> None:
    mon = Monitor(["s"], retention=None, allowed_lateness="5s")
    mon.ingest(["s"] * 3, [T0, T0 + 2000, T0 + 1000], [1.0, 2.0, 3.0])
    points = mon.points("s")
    assert list(points.columns) == ["ts_ms", "value"]
    assert points["ts_ms"].tolist() == [T0, T0 + 1000, T0 + 2000]
    assert points["value"].tolist() == [1.0, 3.0, 2.0]
    points.loc[0, "value"] = 99.0
    mon.ingest(["s"], [T0 + 3000], [4.0])
    assert mon.points("s")["value"].tolist() == [1.0, 3.0, 2.0, 4.0]


def test_points_of_unknown_series_is_a_clear_key_error() -> None:
    mon = Monitor(["s"])
    with pytest.raises(KeyError, match="unknown series 'nope'"):
        mon.points("nope")


def test_value_text_spark_does_not_read_is_not_numeric() -> None:
    """Python's float takes "1_000" and digits of other scripts; Spark's cast to double (the
    job's reading of a text value) gives null, a dead letter not_numeric: so does the Monitor.
    """
    mon = Monitor(["s"])
    texts = ["1_000", "\u0661\u0662", "\uff15", " 5 ", "+5", ".5"]  # 1_000, ١٢, ５, read: 3
    report = mon.ingest(["s"] * len(texts), [T0 + i for i in range(len(texts))], texts)
    assert (report.accepted, report.rejected) == (3, 3)
    dead = mon.dead_letters()
    assert dead["value"].tolist() == texts[:3]
    assert set(dead["reason"]) == {"not_numeric"}
    assert mon.points("s")["value"].tolist() == [5.0, 5.0, 0.5]
