"""The PySpark API's output rows (without Spark): every part's answers in one schema, specs
checked before a query starts."""

from __future__ import annotations

import functools
import json

import pytest

from tsmon.kinds.topk.coordinator import TopKAnswer
from tsmon.protocols.filters.coordinator import Answer
from tsmon.spark.job import JobError
from tsmon.spark.outputs import SCHEMAS, answer_rows, answers_frame, output


def test_answers_of_every_part_share_one_schema() -> None:
    bounded = Answer(value=2.0, lo=1.5, hi=2.5, as_of_ms=1000)
    topk = TopKAnswer("t", ("a", "b"), k=2, eps=0.5, bottom=False, epoch=3, settled=True,
                      nodes=2, messages=9)  # fmt: skip
    rows = answer_rows(
        7, {"bounded": [("s", bounded)], "topk": [("t", topk)], "replica": [("r", 1)]}
    )
    by_part = {r[1]: r for r in rows}  # in the order of tsmon.kinds.PARTS
    assert set(by_part) == {"bounded", "topk"}  # the replica part has no answers to give
    assert by_part["bounded"][:7] == (7, "bounded", "s", 2.0, 1.5, 2.5, 1000)
    assert by_part["topk"][:7] == (7, "topk", "t", None, None, None, None)  # no such fields
    assert json.loads(by_part["topk"][7])["members"] == ["a", "b"]
    assert all(len(r) == len(SCHEMAS["answers"].split(", ")) for r in rows)
    frame = answers_frame(7, {"bounded": [("s", bounded)]})
    assert frame.columns.tolist()[6:8] == ["as_of_ms", "as_of_utc"]
    assert str(frame["as_of_utc"][0]) == "1970-01-01 00:00:01+00:00"


@pytest.mark.parametrize("spec", ["nowhere", ":out", "parquet:", 3])
def test_an_output_is_a_function_or_a_format_and_path(spec) -> None:
    with pytest.raises(JobError, match="events: give a function f"):
        output(spec, "events")
    assert output(None, "events") is None and output(print, "events") is print
    assert callable(output("parquet:out/events", "events"))


def _with_table(f):
    """A decorator that supplies f's first argument: the wrapper takes (df, batch_id), f
    does not (functools.wraps sets __wrapped__, which inspect.signature follows)."""

    @functools.wraps(f)
    def wrapper(df, batch_id):
        return f("answers", df, batch_id)

    return wrapper


def test_a_decorated_output_is_checked_by_the_signature_it_is_called_with() -> None:
    @_with_table
    def write(table, df, batch_id):
        return table, df, batch_id

    assert output(write, "answers") is write
    assert write(None, 0) == ("answers", None, 0)

    @functools.wraps(write.__wrapped__)
    def wrong(df):
        return df

    with pytest.raises(JobError, match=r"answers: \S*write must take \(df, batch_id\)"):
        output(wrong, "answers")


@pytest.mark.spark
def test_a_dead_letter_of_any_timestamp_can_be_collected(spark) -> None:
    """An output's ``ts_utc`` is null outside the instants tsmon reads, as in the Parquet
    sinks: a ``bad_timestamp`` stamped in the year 33658 (beyond a Python datetime) or at
    10**17 ms (beyond Spark's TIMESTAMP) does not make the user's ``df.collect()`` raise."""
    from tsmon.spark.outputs import Outputs

    stamps = [1_704_067_200_000, 10**15, 10**17, 2**63 - 1, -(2**63), None]
    rows = [(0, "s", "s", ts, 1.0, str(ts), "1", "bad_timestamp", "") for ts in stamps]
    got = Outputs(spark, {}).frame("dead_letters", rows).collect()
    assert [r.ts for r in got] == stamps
    assert [r.ts_utc is None for r in got] == [False, True, True, True, True, True]
    assert got[0].ts_utc.timestamp() == 1_704_067_200
