"""Bad input never disappears: every rejected point is in the dead letters with its reason, and
received == accepted + rejected, checked against a plain per-point classifier."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tsmon import Monitor
from tsmon.core.timestamps import MAX_INSTANT_MS, MIN_INSTANT_MS
from tsmon.engine.settings import DAY_MS

T0 = 1_700_000_000_000
ISO0 = "2023-11-14T22:13:20Z"  # == T0


def _register_arrays(mon: Monitor, series: str) -> tuple[np.ndarray, np.ndarray]:
    """The stored points of a series, through the public ``Monitor.points``."""
    points = mon.points(series)
    return points["ts_ms"].to_numpy(), points["value"].to_numpy()


def assert_counts_add_up(mon: Monitor) -> None:
    stats = mon.stats()
    dead = mon.dead_letters()
    assert stats["received"] == stats["accepted"] + stats["rejected"]
    assert stats["rejected"] == len(dead)
    assert stats["rejected_by_reason"] == dead["reason"].value_counts().to_dict()


def test_each_reason_lands_in_dead_letters() -> None:
    mon = Monitor(["s", "g.*"], retention=None, allowed_lateness=1000, duplicates="keep_first")
    mon.ingest(["s", "s"], [T0, T0 + 5000], [1.0, 2.0])
    values = np.array(
        [None, "abc", float("nan"), float("inf"), -math.inf, 3.0, 4.0, 5.0, 6.0, True, 7.0],
        dtype=object,
    )
    ts = np.array(
        [
            T0 + 6000,
            T0 + 7000,
            T0 + 8000,
            T0 + 9000,
            T0 + 10_000,
            "not a time",
            T0 + 11_000,
            T0 + 3000,
            T0 + 5000,
            T0 + 12_000,
            T0 + 12_000,
        ],
        dtype=object,
    )
    series = ["s", "s", "s", "s", "s", "s", "nope", "s", "s", "s", "g.new"]
    report = mon.ingest(series, ts, values)
    want = [
        "missing",
        "not_numeric",
        "nan",
        "infinite",
        "infinite",
        "bad_timestamp",
        "unknown_series",
        "too_late",
        "duplicate",
        "not_numeric",
    ]
    assert (report.received, report.accepted, report.rejected) == (11, 1, 10)
    dead = mon.dead_letters()
    assert dead["seq"].tolist() == list(range(2, 12))
    assert dead["reason"].tolist() == want
    assert dead["series"].tolist() == series[:10]
    assert dead["value"].iloc[1] == "abc"
    assert dead["value"].iloc[0] is None
    assert pd.isna(dead["ts_ms"].iloc[5])
    assert dead["ts_ms"].iloc[7] == T0 + 3000
    assert all(isinstance(d, str) and d for d in dead["detail"])
    assert mon.stats()["rejected_by_reason"] == {r: want.count(r) for r in set(want)}
    assert_counts_add_up(mon)
    assert _register_arrays(mon, "s")[0].tolist() == [T0, T0 + 5000]
    assert _register_arrays(mon, "g.new")[0].tolist() == [T0 + 12_000]


def test_object_values_numeric_strings_accepted_others_rejected() -> None:
    mon = Monitor(["s"], retention=None)
    vals = np.array(
        [None, "abc", "1.5", " 2.5 ", "", "nan", "-inf", 7, np.float32(0.25)], dtype=object
    )
    ts = np.arange(T0, T0 + 9000, 1000, dtype=np.int64)
    report = mon.ingest(["s"] * 9, ts, vals)
    assert (report.accepted, report.rejected) == (4, 5)
    assert mon.dead_letters()["reason"].tolist() == [
        "missing",
        "not_numeric",
        "not_numeric",
        "nan",
        "infinite",
    ]
    t, v = _register_arrays(mon, "s")
    assert t.tolist() == [T0 + 2000, T0 + 3000, T0 + 7000, T0 + 8000]
    assert v.tolist() == [1.5, 2.5, 7.0, 0.25]
    assert_counts_add_up(mon)


@pytest.mark.parametrize(
    "values",
    [
        np.array([True, False]),
        np.array([True, 2.0], dtype=object),
        [True, False],
    ],
    ids=["bool-array", "object", "list-of-bools"],
)
def test_bools_are_not_numeric(values) -> None:
    mon = Monitor(["s"])
    report = mon.ingest(["s", "s"], [T0, T0 + 1], values)
    bools = sum(isinstance(v, bool | np.bool_) for v in values)
    assert report.rejected == bools
    assert mon.dead_letters()["reason"].tolist() == ["not_numeric"] * bools


def test_bool_in_a_plain_list_of_numbers_is_not_numeric() -> None:
    """``[True, 2.0]`` as a list: numpy turns True into 1.0 before tsmon sees it."""
    mon = Monitor(["s"])
    report = mon.ingest(["s", "s", "s"], [T0, T0 + 1, T0 + 2], [True, 2.0, False])
    assert mon.dead_letters()["reason"].tolist() == ["not_numeric", "not_numeric"]
    assert (report.accepted, report.rejected) == (1, 2)


def test_iso_timestamps_are_accepted() -> None:
    mon = Monitor(["s"], retention=None)
    ts = [
        "2023-11-14T22:13:20Z",
        "2023-11-14T22:13:21.250Z",
        "2023-11-14T23:13:22+01:00",
        "2023-11-14 22:13:23",
    ]
    report = mon.ingest(["s"] * 4, ts, [1.0, 2.0, 3.0, 4.0])
    assert report.accepted == 4
    assert _register_arrays(mon, "s")[0].tolist() == [T0, T0 + 1250, T0 + 2000, T0 + 3000]


def test_missing_timestamp_is_bad_timestamp() -> None:
    mon = Monitor(["s"], retention=None)
    report = mon.ingest(["s", "s"], np.array([None, T0], dtype=object), [1.0, 2.0])
    assert mon.dead_letters()["reason"].tolist() == ["bad_timestamp"]
    assert (report.accepted, report.rejected) == (1, 1)


@pytest.mark.parametrize("bad_name", [None, float("nan"), "", 7])
def test_missing_or_non_string_series_names_are_rejected(bad_name) -> None:
    mon = Monitor(["*"], retention=None)
    report = mon.ingest(["s", bad_name, "s"], [T0, T0 + 1, T0 + 2], [1.0, 2.0, 3.0])
    dead = mon.dead_letters()
    assert dead["reason"].tolist() == ["bad_series"]
    assert dead["seq"].tolist() == [1]
    assert (report.accepted, report.rejected) == (2, 1)
    assert mon.series() == ["s"]
    assert_counts_add_up(mon)


def test_a_bad_series_name_is_the_reason_before_a_bad_timestamp_or_value() -> None:
    """As on Spark (spark/points.py checks the series before the timestamp and the value),
    a point with no series name is bad_series whatever else is wrong with it."""
    mon = Monitor(["*"], retention=None, max_future="1d")
    names = ["", None, 7, "", "s"]
    ts = np.array(["garbage", 10**17, T0, T0 + 10 * DAY_MS, T0], dtype=object)
    report = mon.ingest(names, ts, [1.0, 2.0, "x", 3.0, 4.0], clock_ms=T0)
    dead = mon.dead_letters()
    assert dead["reason"].tolist() == ["bad_series"] * 4
    assert [None if pd.isna(t) else t for t in dead["ts_ms"]] == [
        None,
        10**17,
        T0,
        T0 + 10 * DAY_MS,
    ]
    assert dead["detail"].tolist()[:3] == [
        f"series name {n!r} is not a non-empty string" for n in names[:3]
    ]
    assert (report.accepted, report.rejected) == (1, 4)
    assert_counts_add_up(mon)


def test_integer_timestamps_in_an_object_array_are_milliseconds() -> None:
    mon = Monitor(["s"], retention=None)
    report = mon.ingest(["s", "s"], np.array([T0, T0 + 1000], dtype=object), [1.0, 2.0])
    assert report.accepted == 2
    assert _register_arrays(mon, "s")[0].tolist() == [T0, T0 + 1000]


def test_one_unreadable_timestamp_rejects_only_its_point() -> None:
    mon = Monitor(["s"], retention=None)
    report = mon.ingest(["s", "s", "s"], [T0, "not a time", T0 + 2000], [1.0, 2.0, 3.0])
    assert mon.dead_letters()["reason"].tolist() == ["bad_timestamp"]
    assert (report.accepted, report.rejected) == (2, 1)
    assert _register_arrays(mon, "s")[0].tolist() == [T0, T0 + 2000]


@pytest.mark.parametrize("lengths", [(2, 3, 3), (3, 2, 3), (3, 3, 2), (0, 1, 1)])
def test_mismatched_lengths_raise_and_count_nothing(lengths) -> None:
    mon = Monitor(["s"])
    mon.ingest(["s"], [T0], [1.0])
    before = mon.stats()
    ns, nt, nv = lengths
    with pytest.raises(ValueError, match=r"one entry per point.*lengths " + rf"{ns}, {nt}, {nv}"):
        mon.ingest(["s"] * ns, list(range(T0 + 1, T0 + 1 + nt)), [2.0] * nv)
    assert mon.stats() == before
    assert len(mon.dead_letters()) == 0


# ---- random mixes against a per-point classifier -------------------------------------------

GOOD_VALUES = [1.0, -2.5, 0, 7, "1.5", "-3e2", np.float64(4.25)]
BAD_VALUES = [
    (None, "missing"),
    ("abc", "not_numeric"),
    ("", "not_numeric"),
    (True, "not_numeric"),
    (False, "not_numeric"),
    (float("nan"), "nan"),
    ("NaN", "nan"),
    (float("inf"), "infinite"),
    (-math.inf, "infinite"),
    ("-inf", "infinite"),
]


@st.composite
def points(draw: st.DrawFn, i: int, ts_form: str):
    """One point at slot ``i``: (series, ts, value, expected reason or None)."""
    series = draw(st.sampled_from(["s.a", "s.b", "other"]))
    t = T0 + 1000 * i
    ts_reason = None
    if draw(st.integers(0, 7)) == 0:  # read, but no instant (as on Spark, a bad timestamp)
        t = draw(st.sampled_from([MIN_INSTANT_MS - 1, MAX_INSTANT_MS + 1, -(2**63), 2**63 - 1]))
        ts_reason = "bad_timestamp"
    elif ts_form == "object":
        kind = draw(st.sampled_from(["int", "iso", "bad", "bad"]))
        if kind == "iso":
            t = pd.Timestamp(t, unit="ms", tz="UTC").isoformat()
        elif kind == "bad":
            t, ts_reason = draw(st.sampled_from(["garbage", "2023-13-45", None])), "bad_timestamp"
    if draw(st.booleans()):
        value, value_reason = draw(st.sampled_from(GOOD_VALUES)), None
    else:
        value, value_reason = draw(st.sampled_from(BAD_VALUES))
    reason = ts_reason or value_reason or ("unknown_series" if series == "other" else None)
    return series, t, value, reason


@st.composite
def mixes(draw: st.DrawFn, ts_form: str):
    n = draw(st.integers(1, 40))
    pts = [draw(points(i, ts_form)) for i in range(n)]
    cuts = sorted({0, n, *draw(st.lists(st.integers(1, max(n - 1, 1)), max_size=4))})
    return pts, [c for c in cuts if c <= n]


def _check_mix(pts, cuts, ts_form: str) -> None:
    mon = Monitor(["s.*"], retention=None)
    for a, b in itertools.pairwise(cuts):
        chunk = pts[a:b]
        ts = (
            np.array([p[1] for p in chunk], dtype=np.int64)
            if ts_form == "int64"
            else np.array([p[1] for p in chunk], dtype=object)
        )
        vals = np.array([p[2] for p in chunk] + [None], dtype=object)[:-1]
        report = mon.ingest([p[0] for p in chunk], ts, vals)
        bad = sum(p[3] is not None for p in chunk)
        assert (report.received, report.accepted, report.rejected) == (b - a, b - a - bad, bad)
    assert_counts_add_up(mon)
    dead = mon.dead_letters()
    want = [(i, p[3]) for i, p in enumerate(pts) if p[3] is not None]
    assert list(zip(dead["seq"].tolist(), dead["reason"].tolist(), strict=True)) == want
    for name in ("s.a", "s.b"):
        good = [
            (T0 + 1000 * i, float(p[2])) for i, p in enumerate(pts) if p[3] is None and p[0] == name
        ]
        if good:
            t, v = _register_arrays(mon, name)
            assert list(zip(t.tolist(), v.tolist(), strict=True)) == good
        else:
            assert name not in mon.series()


MIX_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@MIX_SETTINGS
@given(data=mixes("int64"))
def test_random_mix_int_timestamps_matches_classifier(data) -> None:
    _check_mix(*data, "int64")


@MIX_SETTINGS
@given(data=mixes("object"))
def test_random_mix_object_timestamps_matches_classifier(data) -> None:
    _check_mix(*data, "object")
