"""A row-level dead letter's ``detail`` on Spark (``tsmon.spark.points``) says what was wrong
in the words ``read_batch`` (in-process) uses: after ``<file>:<line>: `` for a file's row,
alone for rows of another input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tsmon.engine.deadletters import DeadLetters
from tsmon.engine.points import bad_series, read_batch
from tsmon.spark.filerows import DETAIL, FILE, LINE, REASON

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROWS = [  # series, ts, value: one reason each
    ("", "1000", "1"),  # bad_series
    (None, "1000", "1"),  # bad_series
    ("a", "oops", "1"),  # bad_timestamp: unread
    ("a", None, "1"),  # bad_timestamp: unread
    ("a", "99999999999999999", "1"),  # bad_timestamp: outside the instants
    ("a", "1000", None),  # missing
    ("a", "1000", "x"),  # not_numeric
    ("a", "1000", ""),  # not_numeric
    ("a", "1000", "nan"),  # nan
    ("a", "1000", "-inf"),  # infinite
    ("a", "1000", "1e300"),  # value_out_of_range
]


def in_process(row: tuple) -> tuple[str, str]:
    """The reason and detail of the one dead letter ``read_batch`` makes of ``row``, or the
    store (``engine/store.py``: a good point without a name is ``bad_series``)."""
    dead = DeadLetters()
    read_batch(*(np.array([item], dtype=object) for item in row), first_seq=0, dead=dead)
    letters = list(dead.frame().itertuples())
    if not letters:
        return "bad_series", bad_series(row[0])
    (letter,) = letters
    return letter.reason, letter.detail


def dead_letters(spark, tmp_path: Path, frame: pd.DataFrame) -> list[tuple[str, str]]:
    """``(reason, detail)`` of each row of ``frame`` read by ``point_rows`` as a stream."""
    from tsmon.spark.points import point_rows

    frame.to_parquet(tmp_path / "in" / "rows.parquet")
    stream = spark.readStream.schema(spark.read.parquet(str(tmp_path / "in")).schema)
    rows = point_rows(stream.parquet(str(tmp_path / "in")), {}, {})
    query = rows.writeStream.format("memory").queryName("details").trigger(availableNow=True)
    query.start().awaitTermination()
    got = spark.table("details").orderBy("detail").collect()
    return sorted((r.reason, r.detail) for r in got)


@pytest.fixture
def rows_dir(tmp_path: Path) -> Path:
    (tmp_path / "in").mkdir()
    return tmp_path


def test_a_file_row_says_where_it_was_and_what_was_wrong_as_in_process(spark, rows_dir) -> None:
    frame = pd.DataFrame(ROWS, columns=["series", "ts", "value"])
    frame.insert(0, FILE, "/data/a.csv")
    frame.insert(1, LINE, range(2, 2 + len(ROWS)))
    frame[REASON] = None
    frame[DETAIL] = ""
    frame = frame.astype({REASON: "string", DETAIL: "string"})
    want = [(r, f"/data/a.csv:{line}: {d}") for line, (r, d) in enumerate(map(in_process, ROWS), 2)]
    assert dead_letters(spark, rows_dir, frame) == sorted(want)
    assert (
        "value_out_of_range",
        "/data/a.csv:12: value '1e300' is beyond +-1e+140, where sums overflow; rescale it",
    ) in want


def test_a_row_of_another_input_says_what_was_wrong_alone(spark, rows_dir) -> None:
    frame = pd.DataFrame(ROWS, columns=["series", "ts", "value"])
    assert dead_letters(spark, rows_dir, frame) == sorted(map(in_process, ROWS))
