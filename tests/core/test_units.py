"""Limits of durations, instants and window sizes, and the one window formatter."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.core.epochs import decimal_oracle, decimal_texts
from tsmon.core.timestamps import (
    MAX_INSTANT_MS,
    MIN_INSTANT_MS,
    format_instant_ms,
    parse_instant_ms,
    read_epoch_ms,
)
from tsmon.core.units import (
    MAX_DURATION_MS,
    UNIT_MS,
    UnitError,
    abbreviate,
    format_duration_ms,
    parse_duration_ms,
)
from tsmon.core.window_spec import MAX_POINTS, WindowSpec


def test_limits_are_the_documented_values() -> None:
    assert MAX_DURATION_MS == parse_duration_ms("36525d") == 3_155_760_000_000
    assert MAX_POINTS == 1_099_511_627_776
    assert format_instant_ms(MIN_INSTANT_MS) == "1677-09-21T00:12:43.146Z"
    assert format_instant_ms(MAX_INSTANT_MS) == "2262-04-11T23:47:16.854Z"


@pytest.mark.parametrize(
    "text", ["36526d", "36525.0001d", "99999999999999w", "9" * 400 + "ms", "1" + "0" * 309 + "s"]
)
def test_too_long_durations_are_unit_errors(text: str) -> None:
    with pytest.raises(UnitError, match=r"is too long; the limit is 36525d \(100 years") as info:
        parse_duration_ms(text)
    assert len(str(info.value)) < 120  # the huge value is abbreviated


@given(st.integers(1, MAX_DURATION_MS), st.sampled_from(list(UNIT_MS)))
@settings(max_examples=200)
def test_durations_up_to_the_limit_read_back(millis: int, unit: str) -> None:
    assert parse_duration_ms(format_duration_ms(millis)) == millis
    if millis % UNIT_MS[unit] == 0:
        assert parse_duration_ms(f"{millis // UNIT_MS[unit]}{unit}") == millis


@given(st.integers(MIN_INSTANT_MS, MAX_INSTANT_MS))
@settings(max_examples=200)
def test_instants_format_and_read_back(millis: int) -> None:
    text = format_instant_ms(millis)
    assert text.endswith("Z")
    assert parse_instant_ms(text) == millis


@pytest.mark.parametrize("millis", [MIN_INSTANT_MS - 1, MAX_INSTANT_MS + 1])
def test_format_instant_outside_the_range_is_an_error(millis: int) -> None:
    with pytest.raises(UnitError, match="outside the supported range"):
        format_instant_ms(millis)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("2262-04-11T23:47:16.855Z", "outside the supported range"),
        ("1677-09-21", "outside the supported range"),
        ("9999-12-31T23:59:59+01:00", "outside the supported range"),
        (str(MAX_INSTANT_MS + 1), "outside the supported range"),
        ("2024-02-30", "cannot read instant"),
        ("soon", "cannot read instant"),
    ],
)
def test_unreadable_instants(text: str, message: str) -> None:
    with pytest.raises(UnitError, match=message):
        parse_instant_ms(text)


def test_huge_digit_strings_as_timestamps_are_unread_not_a_crash() -> None:
    millis, ok = read_epoch_ms(["9" * 5000, "5", "-" + "9" * 30])
    assert ok.tolist() == [False, True, False]
    assert millis.tolist() == [0, 5, 0]


def test_abbreviate_keeps_both_ends() -> None:
    assert abbreviate("x" * 40) == "x" * 40
    cut = abbreviate("a" + "5" * 100 + "z", 20)
    assert len(cut) == 20 and cut.startswith("a5") and cut.endswith("5z") and "..." in cut


@pytest.mark.parametrize(
    ("spec", "text"),
    [
        (WindowSpec.count(1), "1 point"),
        (WindowSpec.count(2), "2 points"),
        (WindowSpec.time(1500), "1500ms"),
        (WindowSpec.time(MAX_DURATION_MS), "36525d"),
        (WindowSpec.landmark(1_704_067_200_000), "since 2024-01-01T00:00:00Z"),
        (WindowSpec.landmark(1_704_067_200_007), "since 2024-01-01T00:00:00.007Z"),
        (WindowSpec.landmark(-1), "since 1969-12-31T23:59:59.999Z"),
    ],
)
def test_window_text_is_query_syntax(spec: WindowSpec, text: str) -> None:
    assert str(spec) == text


@pytest.mark.parametrize(
    "make",
    [
        lambda: WindowSpec.count(0),
        lambda: WindowSpec.count(MAX_POINTS + 1),
        lambda: WindowSpec.time(0),
        lambda: WindowSpec.time(MAX_DURATION_MS + 1),
        lambda: WindowSpec.landmark(MIN_INSTANT_MS - 1),
        lambda: WindowSpec.landmark(MAX_INSTANT_MS + 1),
    ],
)
def test_window_sizes_outside_the_limits_are_rejected(make: object) -> None:
    with pytest.raises(ValueError, match="window size must be in"):
        make()  # type: ignore[operator]


INT64 = st.integers(-(2**63), 2**63 - 1)


def _ms_of(n: int, unit: str) -> int | None:
    """The oracle of an epoch number in ``unit``: exact integer arithmetic, floored; None
    where the result leaves int64 (Spark's ``try_multiply`` gives null there)."""
    ms = {"s": n * 1000, "ms": n, "us": n // 1000, "ns": n // 1_000_000}[unit]
    return ms if -(2**63) <= ms < 2**63 else None


@settings(max_examples=200, deadline=None)
@given(
    numbers=st.lists(
        st.one_of(INT64, st.integers(-(10**16), 10**16), st.integers(-3000, 3000)), max_size=20
    ),
    unit=st.sampled_from(["s", "ms", "us", "ns"]),
    as_text=st.booleans(),
)
@example(numbers=[-(2**63)], unit="s", as_text=False)  # no absolute value in int64
def test_epoch_numbers_in_a_unit_are_floored_to_ms_and_instants_are_not_scaled(
    numbers: list[int], unit: str, as_text: bool
) -> None:
    """Integers (as an int64 array, or as digits in text next to an instant) are epoch numbers
    in ``unit``; an instant's text is read as the same ms whatever the unit."""
    given_ts: object = [str(n) for n in numbers] if as_text else np.array(numbers, np.int64)
    if as_text:
        given_ts = [*given_ts, "2024-01-01T00:00:00.007Z"]
    millis, ok = read_epoch_ms(given_ts, unit)
    expected = [_ms_of(n, unit) for n in numbers]
    if as_text:
        expected.append(1_704_067_200_007)
    assert [int(m) if read else None for m, read in zip(millis, ok, strict=True)] == expected


def test_an_unknown_epoch_unit_is_refused_with_the_units() -> None:
    with pytest.raises(ValueError, match=r"unknown epoch unit 'sec'; use one of s, ms, us, ns"):
        read_epoch_ms([1], "sec")


@settings(max_examples=500, deadline=None)
@given(
    texts=st.lists(decimal_texts(), min_size=1, max_size=8),
    unit=st.sampled_from(["s", "ms", "us", "ns"]),
)
@example(texts=["99999999999999999999999999999.9999999995", "0.0009999999995", "0e9999"], unit="s")
@example(texts=["9223372036854775.807", "9223372036854775.808", "-9223372036854775.8085"], unit="s")
@example(texts=["-.5e-3", "5.e3", "+.5", "1.7040672005e9", "1e-9999"], unit="ms")
def test_decimal_epoch_numbers_are_rounded_to_nanoseconds_then_floored_to_ms(
    texts: list[str], unit: str
) -> None:
    """A decimal epoch number's text (a point, an exponent) in any unit is read as its exact
    decimal rounded half up to 9 places, then floored to the ms (was: no timestamp)."""
    millis, ok = read_epoch_ms(np.array(texts, dtype=object), unit)
    got = [int(m) if read else None for m, read in zip(millis, ok, strict=True)]
    assert got == [decimal_oracle(t, unit) for t in texts]


def test_non_whole_floats_are_the_decimal_of_their_shortest_text() -> None:
    """A non-whole float is the decimal its shortest text says (1.001 s is 1001 ms, though
    1.001 * 1000 is 1000.9999999999999), as a float64 or float32 array and item by item; NaN
    and infinities are no timestamp (were: every non-whole float no timestamp)."""
    floats = [1.001, 1704067200.5, -0.0005, 1e-07, 0.1 + 0.2, float("nan"), float("inf"), 2.0]
    expected = [1001, 1704067200500, -1, 0, 300, None, None, 2000]
    for ts in (np.array(floats), np.array(floats, dtype=object), floats):
        millis, ok = read_epoch_ms(ts, "s")
        assert [int(m) if read else None for m, read in zip(millis, ok, strict=True)] == expected
    single = np.array([1.1, 16777215.5], np.float32)  # 16777215.5 is 16777216 in float32
    assert read_epoch_ms(single, "s")[0].tolist() == [1100, 16777216000]
    assert read_epoch_ms(np.array(single, dtype=object), "s")[0].tolist() == [1100, 16777216000]
