"""Reading one input file permissively (no Spark): whatever the bytes, every line is one row,
a record or a dead letter with its reason and line; columns are found by name."""

from __future__ import annotations

import csv
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.core.epochs import decimal_oracle
from tsmon.spark.filerows import csv_fields, csv_header, file_batches, file_rows

NAMES = ["series", "ts", "value"]
# text lines: no newline characters, no NUL (a NUL makes the whole file unreadable)
LINE = st.binary(max_size=40).map(
    lambda b: b.replace(b"\n", b"").replace(b"\r", b"").replace(b"\x00", b"").replace(b"\x0b", b"")
)
RECORD = st.tuples(
    st.sampled_from(["a", "b.x", "c y"]),
    st.integers(0, 10**13),
    st.floats(allow_nan=False, allow_infinity=False),
)


def blank(line: bytes) -> bool:
    return not line.strip()


@given(
    order=st.permutations(["series", "ts", "value", "extra"]),
    records=st.lists(RECORD, max_size=10),
    noise=st.lists(st.tuples(st.integers(0, 10), LINE), max_size=6),
)
def test_csv_columns_by_name_and_every_line_accounted(order, records, noise) -> None:
    text = {"extra": "z"}
    lines = [",".join(order).encode()]
    for series, ts, value in records:
        fields = {**text, "series": series, "ts": str(ts), "value": repr(value)}
        lines.append(",".join(fields[c] for c in order).encode())
    good_at = list(range(2, len(lines) + 1))  # 1-based line numbers of the records
    for at, line in sorted(noise, reverse=True):  # noise inserted after the header
        position = 1 + min(at, len(lines) - 1)
        lines.insert(position, line)
        good_at = [n + 1 if n > position else n for n in good_at]
    rows = list(file_rows("f.csv", b"\n".join(lines), "csv", NAMES))
    counted = sum(not blank(line) for line in lines[1:])
    assert len(rows) == counted  # one row per non-blank line after the header
    assert all(r[0] == "f.csv" for r in rows)
    by_line = {r[1]: r for r in rows}
    for n, (series, ts, value) in zip(good_at, records, strict=True):
        assert by_line[n][2:] == (series, str(ts), repr(value), None, "")
    for row in rows:  # the rest are records too (noise that parses) or malformed lines
        assert row[5] in (None, "malformed_line")


@given(lines=st.lists(LINE, max_size=12))
def test_json_lines_every_line_accounted(lines) -> None:
    rows = list(file_rows("f.json", b"\n".join(lines), "json", NAMES))
    assert len(rows) == sum(not blank(line) for line in lines)
    for row in rows:
        assert row[5] in (None, "malformed_line")


@given(content=st.binary(max_size=300), at=st.integers(0, 300))
def test_a_nul_byte_makes_one_unreadable_file_row(content: bytes, at: int) -> None:
    data = content[:at] + b"\x00" + content[at:]
    for fmt in ("csv", "json"):
        rows = list(file_rows("g", data, fmt, NAMES))
        assert len(rows) == 1 and rows[0][5] == "unreadable_file"
        assert rows[0][6].startswith(f"binary content (a NUL byte at offset {data.index(0)})")


def test_json_records_keep_number_text_and_name_a_missing_key() -> None:
    data = (
        "\n".join(
            json.dumps(r)
            for r in [{"series": "a", "ts": 5, "value": 1.50}, {"series": "b", "ts": 6}]
        ).encode()
        + b"\n{not json\n"
    )
    rows = list(file_rows("h.json", data, "json", NAMES))
    assert rows == [
        ("h.json", 1, "a", "5", "1.5", None, ""),
        ("h.json", 2, "b", "6", None, None, "no key 'value'"),
        ("h.json", 3, None, None, None, "malformed_line", "not a JSON object"),
    ]


def test_parquet_files_by_name_and_unreadable_ones_are_one_row() -> None:
    import io

    import pandas as pd

    frame = pd.DataFrame({"value": [1.5, 0.1], "series": ["a", "b"], "extra": ["x", "y"]})
    frame["ts"] = pd.to_datetime([1_000, 2_500], unit="ms", utc=True)
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    content = buffer.getvalue()
    assert list(file_rows("f.parquet", content, "parquet", NAMES)) == [
        ("f.parquet", 1, "a", "1000", "1.5", None, ""),
        ("f.parquet", 2, "b", "2500", "0.1", None, ""),
    ]
    no_value = "the file has no column 'v' (it has ['value', 'series', 'extra', 'ts'])"
    assert list(file_rows("f.parquet", content, "parquet", ["series", "v"])) == [
        ("f.parquet", 1, "a", None, None, no_value),
        ("f.parquet", 2, "b", None, None, no_value),
    ]
    for bad in (content[: len(content) // 2], b"series,ts,value\na,1,2\n", b""):
        (row,) = file_rows("g.parquet", bad, "parquet", NAMES)
        assert row[:5] == ("g.parquet", None, None, None, None) and row[5] == "unreadable_file"
        assert row[6].startswith("not a readable Parquet file (ArrowInvalid: ")


def test_parquet_numbers_go_typed_to_spark_and_other_columns_as_text() -> None:
    """For Spark, a file's ``ts`` and ``value`` that hold numbers are typed columns (their
    text null); columns Spark must read as text (strings, float32, a column also read as
    text) keep their text, and a file pyarrow cannot read is one row of the typed schema."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    from tsmon.spark.filerows import TYPED_TS, TYPED_VALUE, arrow_rows, schema

    def rows(table: pa.Table | bytes, names: list[str], typed: tuple) -> list[dict]:
        buffer = io.BytesIO()
        if isinstance(table, bytes):
            buffer.write(table)
        else:
            pq.write_table(table, buffer)
        files = pa.RecordBatch.from_pydict({"path": ["file:/in/f"], "content": [buffer.getvalue()]})
        out = pa.Table.from_batches(list(arrow_rows(iter([files]), "parquet", names, None, typed)))
        ddl = [c.split(" ")[0].strip("`") for c in schema(names, True).split(", ")]
        assert out.column_names == ddl and ddl[-4:-2] == [TYPED_TS, TYPED_VALUE]
        return out.drop_columns(["__file", "__detail"]).to_pylist()

    instants = pa.array([1_000, 2_500, None], pa.timestamp("ms", "UTC"))
    table = pa.table(
        {
            "s": ["a", "b", "c"],
            "t": instants.cast(pa.timestamp("us", "UTC")),
            "v": pa.array([1.5, float("nan"), None], pa.float64()),
        }
    )
    names = ["s", "t", "v"]
    got = rows(table, names, ("t", "v"))
    assert [(r["__line"], r["s"], r["t"], r["v"], r["__ts"], r["__reason"]) for r in got] == [
        (1, "a", None, None, 1_000, None),
        (2, "b", None, None, 2_500, None),
        (3, "c", None, None, None, None),
    ]
    assert got[0]["__value"] == 1.5 and got[2]["__value"] is None
    assert got[1]["__value"] != got[1]["__value"]  # NaN stays NaN
    # integers: ts as epoch ms, values as the nearest double; text where Spark reads text
    table = pa.table(
        {
            "s": ["a"],
            "t": pa.array([7], pa.uint32()),
            "v": pa.array([2**53 + 1], pa.int64()),
            "w": pa.array([1.1], pa.float32()),
            "u": pa.array([2**64 - 1], pa.uint64()),
            "x": ["3.5"],
        }
    )
    (got,) = rows(table, ["s", "t", "v"], ("t", "v"))
    assert (got["t"], got["v"], got["__ts"], got["__value"]) == (None, None, 7, float(2**53))
    for name, text in (("w", "1.1"), ("x", "3.5")):
        (got,) = rows(table, ["s", "t", name], ("t", name))
        assert (got[name], got["__value"]) == (text, None)
    (got,) = rows(table, ["s", "u", "v"], ("u", "v"))
    assert (got["u"], got["__ts"]) == (str(2**64 - 1), None)
    (got,) = rows(table, ["s", "t"], ("t", "t"))  # one column as ts and value: both typed
    assert (got["t"], got["__ts"], got["__value"]) == (None, 7, 7.0)
    (got,) = rows(table, ["s", "t", "v"], (None, "v"))  # ts also the series: text
    assert (got["t"], got["__ts"], got["__value"]) == ("7", None, float(2**53))
    (got,) = rows(b"not parquet", names, ("t", "v"))
    assert got["__reason"] == "unreadable_file" and got["__ts"] is got["__value"] is None


def _bare_quote(text: str) -> bool:
    """Whether a field of ``text`` holds a quote without being quoted whole (RFC 4180), by a
    scan of it character by character."""
    i, n = 0, len(text)
    while True:  # at the start of a field
        if i < n and text[i] == '"':
            i += 1
            while i < n and not (text[i] == '"' and text[i + 1 : i + 2] != '"'):
                i += 2 if text[i] == '"' else 1
            i += 1  # the closing quote (an unclosed one is csv.reader's error)
            if i < n and text[i] != ",":
                return True
        else:
            while i < n and text[i] != ",":
                if text[i] == '"':
                    return True
                i += 1
        if i >= n:
            return False
        i += 1  # the comma


@settings(max_examples=500)
@given(st.text(st.sampled_from(list("ab,\"\x00\r\n \t\x0b\x0c\x85\u2028é;'\\")), max_size=12))
def test_csv_fields_are_those_of_a_strict_csv_reader(text: str) -> None:
    """Whatever the line (quotes or none, line breaks, NUL, other separators), its fields are
    those of Python's strict CSV reader, or its error: a line without quotes is split on commas
    without one, and must read the same. A quote inside a field that does not start with one
    (which the reader keeps as a character) makes the line malformed: it is how the second
    half of a quoted field broken over two lines looks."""
    try:
        want: list[str] | str = next(csv.reader([text], strict=True))
    except csv.Error as e:
        want = f"not CSV ({e}"
    else:
        if _bare_quote(text):
            want = "not CSV (a quote inside a field that does not start with one"
    got = csv_fields(text.encode())
    assert got == want if isinstance(want, list) else got.startswith(want), (got, want)


def test_parquet_epoch_numbers_in_a_unit_go_typed_as_ms_and_instants_are_not_scaled() -> None:
    """With ``ts_unit``, a Parquet file's integer ``ts`` reaches Spark typed in ms (null
    beyond int64, as the runtime reads digits); a timestamp column stays the same instant,
    typed, and as text it is ISO-8601, which no unit scales."""
    import io

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tsmon.core.timestamps import read_epoch_ms
    from tsmon.spark.filerows import TYPED_TS, arrow_rows, text_columns

    seconds = [1_704_067_200, -1, 2**62, None]
    instants = pa.array([1_704_067_200_007, -5, 0, None], pa.timestamp("ms", "UTC"))
    table = pa.table({"s": ["a"] * 4, "t": pa.array(seconds, pa.int64()), "i": instants})
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    files = pa.RecordBatch.from_pydict({"path": ["file:/in/f"], "content": [buffer.getvalue()]})

    def typed_ts(ts: str, unit: str) -> list[int | None]:
        rows = arrow_rows(iter([files]), "parquet", ["s", ts], None, (ts, None), unit)
        return pa.Table.from_batches(list(rows)).column(TYPED_TS).to_pylist()

    assert typed_ts("t", "s") == [1_704_067_200_000, -1000, None, None]
    assert typed_ts("t", "ns") == [1_704, -1, 2**62 // 1_000_000, None]
    assert typed_ts("i", "s") == typed_ts("i", "ms") == [1_704_067_200_007, -5, 0, None]
    text = text_columns(table, ["i"], "s")["i"]
    assert text[0] == "2024-01-01 00:00:00.007Z" and text[-1] is None
    millis, ok = read_epoch_ms(np.array(text[:-1], dtype=object), "s")
    assert ok.all() and millis.tolist() == [1_704_067_200_007, -5, 0]
    assert text_columns(table, ["i"])["i"][:2] == ["1704067200007", "-5"]  # ms: digits


@pytest.mark.parametrize("unit", ["s", "ms", "ns"])
def test_a_parquet_float_ts_reaches_spark_as_text_the_runtime_reads_alike(unit: str) -> None:
    """A Parquet ``ts`` of floats (pandas writes float64 for integers with a gap) goes to
    Spark as text: a whole float is its digits, read as the epoch number the runtime reads
    from the float itself; Arrow's shortest text (``1e+10``, ``1.704067200123e+12``) was no
    timestamp on Spark, so every such row was a bad_timestamp dead letter."""
    import numpy as np
    import pyarrow as pa

    from tsmon.core.timestamps import read_epoch_ms
    from tsmon.spark.filerows import text_columns

    numbers = [1e10, 1.7e9, 1_704_067_200_123.0, 1.7e18, -5.0, -0.0, 2.0**62, 2.0**63, 1.5]
    numbers += [float("nan"), float("inf"), 1704067200.5, 1.001, -1e-7, 0.1 + 0.2, 5e-324]
    for kind in (pa.float64(), pa.float32()):
        column = pa.array([*numbers, None], kind)
        text = text_columns(pa.table({"t": column}), ["t"], unit)["t"]
        on_spark = read_epoch_ms(np.array(text, dtype=object), unit)  # as on Spark
        in_process = read_epoch_ms(column.to_numpy(zero_copy_only=False), unit)
        assert [m.tolist() for m in on_spark] == [m.tolist() for m in in_process], text
        assert on_spark[1][-8:].tolist() == [False, False, True, True, True, True, True, False]
        if kind == pa.float64():
            assert text[-6:] == [
                "1704067200.5",
                "1.001",
                "-1e-07",
                "0.30000000000000004",
                "5e-324",
                None,
            ]
    assert text[-6:-1] == ["1704067200", "1.001", "-1e-07", "0.3", "0"]  # float32's text


@settings(max_examples=300, deadline=None)
@given(
    floats=st.lists(
        st.floats(allow_nan=False, allow_infinity=False) | st.floats(0, 2e9), max_size=30
    ),
    unit=st.sampled_from(["s", "ms", "us", "ns"]),
    single=st.booleans(),
)
def test_a_parquet_file_of_non_whole_floats_is_read_as_in_process(
    floats: list[float], unit: str, single: bool
) -> None:
    """Any float ``ts`` (a ``time.time()`` column in seconds, float32 too) reaches Spark as
    the text the runtime reads the float by: the same epoch ms, the decimal of its shortest
    text (Arrow's own text was unread by Spark whenever the float was not whole)."""
    import io

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tsmon.core.timestamps import read_epoch_ms
    from tsmon.spark.filerows import text_columns

    column = pa.array(floats, pa.float32() if single else pa.float64())
    buffer = io.BytesIO()
    pq.write_table(pa.table({"t": column}), buffer)
    table = pq.read_table(io.BytesIO(buffer.getvalue()))
    text = text_columns(table, ["t"], unit)["t"]
    on_spark = read_epoch_ms(np.array(text, dtype=object), unit)
    in_process = read_epoch_ms(table.column("t").to_numpy(), unit)
    assert [m.tolist() for m in on_spark] == [m.tolist() for m in in_process], text
    fraction = [math.isfinite(x) and not x.is_integer() for x in table.column("t").to_pylist()]
    stored = [x for x, f in zip(table.column("t").to_pylist(), fraction, strict=True) if f]
    exact = [str(np.float32(x)) if single else repr(x) for x in stored]
    millis, ok = (m[np.array(fraction, dtype=bool)] for m in in_process)
    assert [int(t) if read else None for t, read in zip(millis, ok, strict=True)] == [
        decimal_oracle(t, unit) for t in exact
    ]


def line_by_line(path: str, content: bytes, names: list[str]) -> list[tuple]:
    """The rows of a CSV file (no NUL byte) read one line at a time with :func:`csv_fields`,
    as file_rows read them before it split the usual lines by numpy and Arrow."""
    lines = [(n, raw) for n, raw in enumerate(content.splitlines(), 1) if raw.strip()]
    if not lines:
        return []
    empty = (None,) * len(names)
    header = csv_header(lines[0][1])
    if isinstance(header, str):
        return [(path, lines[0][0], *empty, "unreadable_file", f"its header is {header}")]
    index = {h: i for i, h in reversed(list(enumerate(header)))}
    missing = [n for n in names if n not in index]
    detail = f"the header has no column {missing[0]!r} (it has {header})" if missing else ""
    rows = []
    for n, raw in lines[1:]:
        fields = csv_fields(raw)
        if isinstance(fields, list) and len(fields) != len(header):
            fields = f"{len(fields)} fields, the header has {len(header)}"
        if isinstance(fields, str):
            rows.append((path, n, *empty, "malformed_line", fields))
        else:
            rows.append((path, n, *(fields[index[k]] if k in index else None for k in names)))
            rows[-1] += (None, detail)
    return rows


CSV_LINE = st.lists(
    st.sampled_from([b"a", b"1.5", b",", b",", b'"', b" ", b"\t", b"\x0b", "é".encode(), b"\xff"]),
    max_size=8,
).map(b"".join)


@settings(max_examples=400)
@given(
    header=st.one_of(
        st.permutations(["series", "ts", "value", "x"]).map(lambda h: ",".join(h).encode()),
        st.sampled_from([b"ts,value", b"\xef\xbb\xbfseries , value,ts", b'"ts",value,"x"']),
        CSV_LINE,
    ),
    lines=st.lists(
        st.one_of(CSV_LINE, st.sampled_from([b"a,1,2,3", b"b,2,3", b'"c,d",3,4,5', b"", b" "])),
        max_size=12,
    ),
    breaks=st.lists(st.sampled_from([b"\n", b"\r\n", b"\r"]), min_size=13, max_size=13),
    last=st.sampled_from([b"", b"\n", b"\r\n", b"\r", b"\n\n"]),
    before=st.sampled_from([b"", b"\n", b" \r\n"]),
    block=st.integers(1, 14),
)
def test_csv_rows_are_those_of_reading_line_by_line(
    header, lines, breaks, last, before, block
) -> None:
    """Whatever the lines (quotes, commas, bytes beyond ASCII or UTF-8, blank ones, LF, CRLF
    or CR), file_rows gives the rows of csv_fields applied to each line in turn, and so does
    file_batches whatever the number of lines it splits at a time."""
    body = b"".join(line + brk for line, brk in zip([header, *lines], breaks, strict=False))
    content = before + body.removesuffix(breaks[len(lines)]) + last
    want = line_by_line("f.csv", content, NAMES)
    assert list(file_rows("f.csv", content, "csv", NAMES)) == want
    batches = file_batches("f.csv", content, "csv", NAMES, block)
    rows = [row for b in batches for row in zip(*(c.to_pylist() for c in b.columns), strict=True)]
    assert rows == want
