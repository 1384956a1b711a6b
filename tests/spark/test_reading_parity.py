"""A text timestamp or value is read the same way by a job on Spark (``tsmon.spark.points``:
SQL on the input rows) and in-process (``tsmon.core.timestamps``, ``tsmon.engine.points``),
so a CSV row is accepted or dead-lettered alike by ``tsmon run`` and ``tsmon replay``."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core.epochs import decimal_oracle, decimal_texts
from tsmon.core.timestamps import read_epoch_ms
from tsmon.engine.points import _read_value

pytestmark = [pytest.mark.spark, pytest.mark.slow]

TIMESTAMPS = [
    "1000",
    "-1000",
    " 1000 ",  # Spark read these two as the year 1000
    "+1000",
    "\u00a01000",  # Unicode spaces (Python's \s): in-process read 1000, Spark did not
    "1000\u3000",
    "\x011000",  # what Spark trims (0x00-0x20, 0x7f): it read these as the year 1000
    "\x1c1000",
    "1000\x7f",
    "1000\x85",  # Java's $ matches before it
    "\u0661\u0662\u0663",  # Arabic-Indic digits: in-process read 123
    "\uff11\uff12",  # fullwidth digits
    "1_000",
    "1000.0",
    "1e3",
    "20140101",
    "2014-01-01",
    " 2014-01-01 ",
    "\x012014-01-01\x7f",  # Spark trims these around an instant too
    "2014-01-01 00:00",
    "2014-01-01T00:00:00.123456789Z",
    "2014-01-01T00:00:00+05:00",
    "2014-01-01 00:00:00 UTC",
    "2014-1-1",
    pytest.param("01/02/2014", marks=pytest.mark.xfail(strict=True, reason="pandas reads it")),
]

VALUES = [
    "1",
    " 5 ",
    "+5",
    "5.",
    ".5",
    "-0",
    "1e-400",
    "1e999",
    "inf",
    "-Infinity",
    "nan",
    "NaN",
    "+inf",
    "1e5\t",
    "5\x85",
    "INF",
    "-nan",
    "1e",
    ".e5",
    "1_000",  # in-process read 1000
    "\x015",  # what Spark's cast trims (0x00-0x20): in-process read no number
    "5\x00",
    "\x1f5",
    "\x7f5",
    "\u0661\u0662",  # in-process read 12
    "\uff15",  # in-process read 5
    "1,5",
    "0x10",
    "--5",
    "1d",  # Java's number syntax: Spark's cast read it
    "5f",  # Java's number syntax: Spark's cast read it
    "0x1p3",  # Java's number syntax: Spark's cast read it
]


def _spark_one(spark, expression, text: str):
    from pyspark.sql import functions as F

    frame = spark.createDataFrame([(text,)], "v string")
    return frame.select(expression(F.col("v")).alias("x")).collect()[0].x


@pytest.mark.parametrize("text", TIMESTAMPS)
def test_a_text_timestamp_is_read_alike(spark, text: str) -> None:
    from tsmon.spark.points import _timestamp

    on_spark = _spark_one(spark, lambda c: _timestamp(c, "string", None)[0], text)
    millis, ok = read_epoch_ms(np.array([text], dtype=object))
    assert on_spark == (int(millis[0]) if ok[0] else None)


@pytest.mark.parametrize("text", VALUES)
def test_a_text_value_is_read_alike(spark, text: str) -> None:
    from tsmon.spark.points import _value

    on_spark = _spark_one(spark, lambda c: _value(c, "string", None)[0], text)
    number, reason = _read_value(text)
    if on_spark is None:
        assert reason == "not_numeric", number
    else:
        assert reason == "" and (number == on_spark or math.isnan(number) == math.isnan(on_spark))


EPOCH_NUMBERS = [
    0,
    1,
    -1,
    999,
    -999,
    1_704_067_200,
    1_704_067_200_123_456_789,
    -1_704_067_200_123_456_789,
    2**63 - 1,
    -(2**63),
    (2**63 - 1) // 1000,
    (2**63 - 1) // 1000 + 1,
    -((2**63 - 1) // 1000) - 1,
]


@pytest.mark.parametrize("unit", ["s", "us", "ns"])
def test_epoch_numbers_in_a_unit_are_read_alike(spark, unit: str) -> None:
    """An integer column and digits in text, in seconds, micro- or nanoseconds, are the same
    epoch ms on Spark as in-process (floored; null beyond BIGINT); an instant is not scaled."""
    from pyspark.sql import functions as F

    from tsmon.spark.points import _timestamp

    texts = [*(str(n) for n in EPOCH_NUMBERS), " +42 ", "2024-01-01T00:00:00.007Z"]
    frame = spark.createDataFrame(
        [(t, n) for t, n in zip(texts, [*EPOCH_NUMBERS, None, None], strict=True)],
        "t string, n bigint",
    )
    rows = frame.select(
        _timestamp(F.col("t"), "string", None, unit)[0].alias("t"),
        _timestamp(F.col("n"), "bigint", None, unit)[0].alias("n"),
    ).collect()
    millis, ok = read_epoch_ms(np.array(texts, dtype=object), unit)
    in_process = [int(m) if read else None for m, read in zip(millis, ok, strict=True)]
    assert [r.t for r in rows] == in_process
    numbers, fine = read_epoch_ms(np.array(EPOCH_NUMBERS, dtype=np.int64), unit)
    assert [r.n for r in rows[: len(EPOCH_NUMBERS)]] == [
        int(m) if read else None for m, read in zip(numbers, fine, strict=True)
    ]
    assert in_process[-1] == 1_704_067_200_007


UNITS = ("s", "ms", "us", "ns")
DECIMAL_TIMESTAMPS = [
    "1704067200.5",
    "1704067200.123456789",
    "-1.25",
    ".5",
    "5.",
    "+.5",
    "-.5e-3",
    "1.7040672005e9",
    "1E3",
    "1e+3",
    "1.5e0003",
    "2024.5",  # pandas read it as an instant (2024-05-01): a number now, on both
    "0.0009999999995",  # rounded half up to 9 places: 0.001
    "0.00099999999949999",
    "-0.0009999999995",
    "99999999999999999999999999999.9999999994",  # DECIMAL(38, 9) holds it
    "99999999999999999999999999999.9999999995",  # rounded to 10**29: it does not
    "0e9999",  # zero whatever its exponent
    "1e-9999",
    "1e9999",
    "1e12345",  # a 5-digit exponent: no number (then no instant either)
    "9223372036854775.807",  # the greatest ms in seconds
    "9223372036854775.808",
    "-9223372036854775.808",
    "-9223372036854775.8085",
    "9223372036854775807.5",
    "9223372036854775808.5",
    "\x7f1.5\x01",  # what Spark trims around digits, not Java's String.trim
    " 1.5\t",
    "1.5\x85",
    "\u0661.\u0665",
    "1.5e",
    "e5",
    ".",
    "1_0.5",
    "0x1.8p1",
    "1.5d",
    "1,5",
    "inf",
    "NaN",
]


def _read_in_all_units(spark, texts: list[str]) -> tuple[dict, dict]:
    """Epoch ms (None: unread) of each text in every unit, on Spark and in-process."""
    from pyspark.sql import functions as F

    from tsmon.spark.points import _timestamp

    frame = spark.createDataFrame([(t,) for t in texts], "t string")
    columns = [_timestamp(F.col("t"), "string", None, u)[0].alias(u) for u in UNITS]
    rows = frame.select(*columns).collect()
    on_spark = {u: [r[u] for r in rows] for u in UNITS}
    in_process = {}
    for u in UNITS:
        millis, ok = read_epoch_ms(np.array(texts, dtype=object), u)
        in_process[u] = [int(m) if read else None for m, read in zip(millis, ok, strict=True)]
    return on_spark, in_process


def test_decimal_epoch_numbers_are_read_alike_in_every_unit(spark) -> None:
    """A decimal epoch number's text (a point, an exponent) is the same epoch ms on Spark
    (cast to DECIMAL(38, 9), half up) as in-process, in every unit; beyond DECIMAL(38, 9) or
    int64 ms it is unread on both (were: unread on both, every one)."""
    on_spark, in_process = _read_in_all_units(spark, DECIMAL_TIMESTAMPS)
    assert on_spark == in_process
    assert in_process["s"][:3] == [1_704_067_200_500, 1_704_067_200_123, -1250]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(decimal_texts(), min_size=1, max_size=40))
def test_random_decimal_epoch_numbers_are_read_alike_in_every_unit(spark, texts) -> None:
    """Random decimal texts (long fractions, runs of 9s, exponents, signs, 32 integer
    digits, characters Spark trims): Spark's epoch ms equal the in-process ones, those of the
    rule (docs/inputs.md)."""
    on_spark, in_process = _read_in_all_units(spark, texts)
    assert on_spark == in_process
    assert in_process == {u: [decimal_oracle(t, u) for t in texts] for u in UNITS}
