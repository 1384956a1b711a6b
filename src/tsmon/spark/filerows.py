"""Rows of one CSV, JSON-lines or Parquet input file, read permissively: a bad file is data.

Spark's own CSV reader maps columns by position (a header in another order fails the query,
and the offset log makes every restart fail again), its Parquet reader fails the query on one
corrupt file (again at every restart), and its readers know no line numbers. So a files input
streams each new file's bytes (Spark's ``binaryFile`` source) and :func:`file_rows` reads them
here, in the executors:

- CSV columns are found **by name** in the header (line 1): any order, extra columns ignored;
  a mapped column the header lacks gives null in every row (the runtime then dead-letters the
  row as ``bad_series``, ``bad_timestamp`` or ``not_numeric``, the detail naming the column);
- JSON lines are objects read by key; numbers keep their text (as Spark's reader gives them
  for a STRING column); a missing key is null, as above;
- a line that is no record (a CSV line with another number of fields than the header, text
  that is not a JSON object, bytes that are not UTF-8) is one ``malformed_line`` row;
- a file that is no text at all (a NUL byte: binary, compressed) is one ``unreadable_file``
  row, as is a CSV file whose header cannot be read;
- a Parquet file is read by pyarrow, its mapped columns as text (:func:`text_columns`;
  instants as epoch ms), one row per record, numbered from 1 in :data:`LINE`; a mapped column
  it lacks is null, as above; a file pyarrow cannot read (truncated, not Parquet, a column
  that is no scalar) is one ``unreadable_file`` row with pyarrow's error. For Spark
  (:func:`arrow_rows`), the ``ts`` and ``value`` columns of a file that holds them as numbers
  go typed instead (:data:`TYPED_TS`, :data:`TYPED_VALUE`; :func:`typed_arrays`), their text
  null, so Spark neither reads nor parses text for them.

Every row carries its file and line (:data:`FILE`, :data:`LINE`; 1-based physical lines,
blank lines skipped) and a ``detail`` that dead letters show as ``<file>:<line>: <what>``. So
rows in = accepted + dead letters, whatever the file holds.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from tsmon.core.timestamps import epoch_to_ms, float_texts
from tsmon.engine.deadletters import Reason
from tsmon.spark.csvlines import CsvLines, csv_fields, csv_header, decoded

__all__ = [
    "DETAIL",
    "FILE",
    "LINE",
    "REASON",
    "TYPED_TS",
    "TYPED_VALUE",
    "arrow_rows",
    "csv_fields",
    "csv_header",
    "file_batches",
    "file_origin",
    "file_rows",
    "file_table",
    "json_object",
    "json_text",
    "schema",
    "text_arrays",
    "text_columns",
    "typed_arrays",
]

FILE, LINE, REASON, DETAIL = "__file", "__line", "__reason", "__detail"
"""The columns a file's rows carry besides the mapped ones."""
TYPED_TS, TYPED_VALUE = "__ts", "__value"
"""The typed ``ts`` (epoch ms) and ``value`` columns of Parquet rows (:func:`typed_arrays`)."""


def schema(names: Sequence[str], typed: bool = False) -> str:
    """The DDL of :func:`file_rows`' rows: file, line, the mapped columns as text, (with
    ``typed``, Parquet's: the typed ``ts`` and ``value``), a reason (null for a record) and a
    detail."""
    mapped = ", ".join(f"`{n}` STRING" for n in names)
    numbers = f", {TYPED_TS} BIGINT, {TYPED_VALUE} DOUBLE" if typed else ""
    return f"{FILE} STRING, {LINE} BIGINT, {mapped}{numbers}, {REASON} STRING, {DETAIL} STRING"


def file_rows(path: str, content: bytes, fmt: str, names: Sequence[str]) -> Iterator[tuple]:
    """The rows of one file: ``(file, line, *values of names, reason, detail)``.

    Examples
    --------
    >>> data = b"value,ts,series,extra\\n1.5,10,a,x\\n2,oops\\n\\n3,30,b,y\\n"
    >>> for row in file_rows("in/f.csv", data, "csv", ["series", "ts", "value"]):
    ...     print(row)
    ('in/f.csv', 2, 'a', '10', '1.5', None, '')
    ('in/f.csv', 3, None, None, None, 'malformed_line', '2 fields, the header has 4')
    ('in/f.csv', 5, 'b', '30', '3', None, '')
    >>> for row in file_rows("g.json", b'{"series": "a", "ts": 5}\\n[1]\\n', "json", ["ts", "value"]):
    ...     print(row)
    ('g.json', 1, '5', None, None, "no key 'value'")
    ('g.json', 2, None, None, 'malformed_line', 'not a JSON object')
    >>> print(*file_rows("x.csv", b"\\x00\\x01\\xff", "csv", ["series"]))
    ('x.csv', None, None, 'unreadable_file', 'binary content (a NUL byte at offset 0), not csv text')
    """  # noqa: E501
    table = file_table(path, content, fmt, names)
    yield from zip(*(c.to_pylist() for c in table.columns), strict=True)


def file_table(path: str, content: bytes, fmt: str, names: Sequence[str]) -> Any:
    """The rows of :func:`file_rows` as a pyarrow table of :func:`schema`."""
    import pyarrow as pa

    batches = list(file_batches(path, content, fmt, names))
    return pa.Table.from_batches(batches, schema=_table([], names).schema)


def file_batches(
    path: str, content: bytes, fmt: str, names: Sequence[str], block: int = 1 << 16
) -> Iterator[Any]:
    """The rows of :func:`file_rows` as pyarrow record batches of :func:`schema`. A CSV file's
    usual lines are split without a Python object per line or field (:class:`CsvLines`),
    ``block`` lines at a time, one batch each: a reader that takes the batches one by one
    holds one block's worth besides what it keeps of them."""
    if fmt == "parquet":
        yield from _parquet(path, content, names, None).to_batches()
        return
    empty = (None,) * len(names)
    if b"\x00" in content:
        at = content.index(b"\x00")
        detail = f"binary content (a NUL byte at offset {at}), not {fmt} text"
        row = (path, None, *empty, Reason.UNREADABLE_FILE.value, detail)
        yield from _table([row], names).to_batches()
        return
    if fmt == "csv":
        yield from _csv(path, content, names, block)
        return
    rows = []
    for n, raw in enumerate(content.splitlines(), 1):
        if not raw.strip():
            continue
        text = decoded(raw)
        record = None if text is None else json_object(text)
        if record is None:
            what = "not UTF-8 text" if text is None else "not a JSON object"
            rows.append((path, n, *empty, Reason.MALFORMED_LINE.value, what))
            continue
        missing = [k for k in names if k not in record]
        detail = f"no key {missing[0]!r}" if missing else ""
        rows.append((path, n, *(json_text(record.get(k)) for k in names), None, detail))
    yield from _table(rows, names).to_batches()


def _csv(path: str, content: bytes, names: Sequence[str], block: int) -> Iterator[Any]:
    """:func:`file_batches` of a CSV file (no NUL byte in it)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    lines = CsvLines(content)
    first = lines.header()
    if first is None:
        return
    at, header = first
    if isinstance(header, str):
        row = (path, at, *(None,) * len(names), Reason.UNREADABLE_FILE.value)
        yield from _table([(*row, f"its header is {header}")], names).to_batches()
        return
    index = {h: i for i, h in reversed(list(enumerate(header)))}  # a name twice: the first
    present = [n for n in dict.fromkeys(names) if n in index]
    missing = [n for n in names if n not in index]
    detail = f"the header has no column {missing[0]!r} (it has {header})" if missing else ""
    text = pa.string()
    malformed, none = pa.scalar(Reason.MALFORMED_LINE.value, text), pa.scalar(None, text)
    for numbers, fields, what in lines.records(len(header), [index[n] for n in present], block):
        columns, n = dict(zip(present, fields, strict=True)), len(numbers)
        bad = pa.array([w is not None for w in what], type=pa.bool_())
        arrays = [
            pa.repeat(pa.scalar(path, text), n),
            pa.array(numbers, type=pa.int64()),
            *(columns[c] if c in columns else pa.nulls(n, text) for c in names),
            pc.if_else(bad, malformed, none),
            pc.if_else(bad, pa.array(what, type=text), pa.scalar(detail, text)),
        ]
        yield pa.RecordBatch.from_arrays(arrays, names=_columns(names))


def arrow_rows(
    batches: Iterator[Any],
    fmt: str,
    names: list[str],
    cpu: Any = None,
    typed: tuple[str | None, str | None] = (None, None),
    ts_unit: str = "ms",
) -> Iterator[Any]:
    """``mapInArrow`` over Spark's ``binaryFile`` rows: batches of ``(path, content)`` in,
    the files' rows (:func:`schema`, typed for Parquet) out. A Parquet file's columns go from
    pyarrow to Arrow batches without a Python object per value, its ``typed`` columns (the
    ``ts`` and ``value`` columns' names, None for one Spark must read as text) as numbers
    when the file holds numbers (:func:`typed_arrays`); a CSV file's usual lines too
    (:func:`file_batches`), JSON files line by line. ``ts_unit``: the unit of epoch numbers
    (a typed integer ``ts`` is scaled to ms here, its text by Spark). ``cpu``: an accumulator
    the reader adds its CPU time to (``fileReader``, :class:`tsmon.spark.cpu.CpuTimes`)."""
    from tsmon.spark.cpu import Clock, settle_worker

    settle_worker()
    for batch in batches:
        for uri, content in zip(
            batch.column("path").to_pylist(), batch.column("content").to_pylist(), strict=True
        ):
            path = uri.removeprefix("file://").removeprefix("file:")
            clock = Clock(cpu)
            if fmt == "parquet":
                out = _parquet(path, content, names, typed, ts_unit).to_batches()
            else:
                out = list(file_batches(path, content, fmt, names))
            clock.lap("fileReader")
            clock.send()
            yield from out


def _table(
    rows: list[tuple], names: Sequence[str], numbers: Mapping[str, Any] | None = None
) -> Any:
    """Rows of :func:`file_rows` as a pyarrow table of :func:`schema` (with the typed
    columns of ``numbers``, name to type, after the mapped ones)."""
    import pyarrow as pa

    numbers = numbers or {}
    header = _columns(names, numbers)
    columns = zip(*rows, strict=True) if rows else ([] for _ in header)
    kinds = {LINE: pa.int64(), **numbers}
    return pa.Table.from_arrays(
        [
            pa.array(list(c), type=kinds.get(n, pa.string()))
            for n, c in zip(header, columns, strict=True)
        ],
        names=header,
    )


def _columns(names: Sequence[str], numbers: Iterable[str] = ()) -> list[str]:
    return [FILE, LINE, *names, *numbers, REASON, DETAIL]


def file_origin(columns: list[str]) -> tuple[Any, Any]:
    """Spark columns for an input with ``columns``: the reason a file's line could not be read
    (null for a record) and where a dead letter came from, ``<file>:<line>`` and what was
    wrong with the line, if anything (null and None for inputs that are no files)."""
    from pyspark.sql import functions as F

    if REASON not in columns:
        return F.lit(None).cast("string"), None
    where = F.concat_ws(":", F.col(FILE), F.col(LINE).cast("string"))
    return F.col(REASON), F.concat_ws(": ", where, F.when(F.col(DETAIL) != "", F.col(DETAIL)))


def _parquet(
    path: str,
    content: bytes,
    names: Sequence[str],
    typed: tuple[str | None, str | None] | None,
    ts_unit: str = "ms",
) -> Any:
    """The rows of one Parquet file as a pyarrow table of :func:`schema` (columns cast to
    text by Arrow, no Python object per value; with ``typed``, the ``ts`` and ``value``
    columns it names as numbers where the file holds numbers): one ``unreadable_file`` row
    if pyarrow cannot read it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    numbers = {} if typed is None else {TYPED_TS: pa.int64(), TYPED_VALUE: pa.float64()}
    try:
        parquet = pq.ParquetFile(pa.BufferReader(content))
        header = parquet.schema_arrow.names
        present = [n for n in dict.fromkeys(names) if n in header]
        table = parquet.read(columns=present)
        typed_columns = {} if typed is None else typed_arrays(table, *typed, ts_unit)
        roles = {} if typed is None else dict(zip(numbers, typed, strict=True))
        textual = [n for n in present if _textual(n, roles, typed_columns)]
        columns = text_arrays(table, textual, ts_unit)
    except Exception as e:  # pyarrow's many errors: the file is one dead letter, not a crash
        what = f"not a readable Parquet file ({type(e).__name__}: {str(e).splitlines()[0]})"
        row = (path, None, *(None,) * (len(names) + len(numbers)), Reason.UNREADABLE_FILE.value)
        return _table([(*row, what)], names, numbers)
    missing = [n for n in names if n not in header]
    detail = f"the file has no column {missing[0]!r} (it has {header})" if missing else ""
    n = table.num_rows
    text = pa.string()
    return pa.Table.from_arrays(
        [
            pa.repeat(pa.scalar(path, text), n),
            pa.array(np.arange(1, n + 1, dtype=np.int64)),
            *(columns[c] if c in columns else pa.nulls(n, text) for c in names),
            *(typed_columns.get(c, pa.nulls(n, t)) for c, t in numbers.items()),
            pa.nulls(n, text),
            pa.repeat(pa.scalar(detail, text), n),
        ],
        names=_columns(names, numbers),
    )


def _textual(name: str, roles: Mapping[str, str | None], typed: Mapping[str, Any]) -> bool:
    """Whether Spark needs a column's text: it plays no typed role, or one it plays was left
    as text (:func:`typed_arrays`)."""
    played = [role for role, column in roles.items() if column == name]
    return not played or any(role not in typed for role in played)


def typed_arrays(
    table: Any, ts: str | None, value: str | None, ts_unit: str = "ms"
) -> dict[str, Any]:
    """The ``ts`` and ``value`` columns of a pyarrow table that hold numbers, typed as Spark
    would read their text, keyed :data:`TYPED_TS` (epoch ms: an instant, as exactly as
    :func:`text_arrays`, or an integer up to 64 bits signed, an epoch number in ``ts_unit``:
    null where it is none in ms, as the runtime reads digits) and :data:`TYPED_VALUE` (a
    double: a double, or an integer rounded to the nearest double, as Spark parses its
    text). Other columns (text, ``float32`` whose shortest text is another double, decimals,
    unsigned 64 bits, ...) are left out: Spark reads them as text."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out = {}
    names = set(table.column_names)
    if ts in names:
        column = table.column(ts)
        if pa.types.is_timestamp(column.type):
            column = pc.cast(pc.cast(column, pa.timestamp("ms", "UTC")), pa.int64())
            out[TYPED_TS] = column.combine_chunks()
        elif _fits_int64(column.type) and ts_unit == "ms":  # as they are: no copy per batch
            out[TYPED_TS] = pc.cast(column, pa.int64()).combine_chunks()
        elif _fits_int64(column.type):
            numbers = pc.cast(column, pa.int64()).combine_chunks()
            valid = numbers.is_valid().to_numpy(zero_copy_only=False)
            filled = numbers.fill_null(0).to_numpy(zero_copy_only=False)
            ms, ok = epoch_to_ms(filled, valid, ts_unit)
            out[TYPED_TS] = pa.array(ms, pa.int64(), mask=~ok)
    if value in names:
        column = table.column(value)
        if pa.types.is_float64(column.type) or _fits_int64(column.type):
            out[TYPED_VALUE] = pc.cast(column, pa.float64(), safe=False).combine_chunks()
    return out


def _fits_int64(kind: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_signed_integer(kind) or kind in (pa.uint8(), pa.uint16(), pa.uint32())


def text_arrays(table: Any, names: Sequence[str], ts_unit: str = "ms") -> dict[str, Any]:
    """The named columns of a pyarrow table as Arrow text arrays: numbers as their shortest
    text, but a whole float within int64 as its digits (``1e+10`` is no epoch number; the
    runtime reads the float as one) and a non-whole float as the text the runtime reads it
    by (:func:`~tsmon.core.timestamps.float_texts`, on those rows only), instants as epoch
    milliseconds (exact), or when epoch numbers are in another ``ts_unit`` than ms, as
    ISO-8601 text to the millisecond (which is read as an instant whatever the unit); a
    column that is no scalar raises ``pyarrow.ArrowNotImplementedError``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out = {}
    for n in names:
        column = table.column(n)
        if pa.types.is_timestamp(column.type):  # instants, exactly
            column = pc.cast(column, pa.timestamp("ms", "UTC"))
            if ts_unit == "ms":
                column = pc.cast(column, pa.int64())
        if pa.types.is_float32(column.type) or pa.types.is_float64(column.type):
            column = _float_text(column)
        out[n] = pc.cast(column, pa.string()).combine_chunks()
    return out


def _float_text(column: Any) -> Any:
    """:func:`text_arrays` of a float column (a ``ChunkedArray``, as it came): Arrow's
    digits of a whole float within int64, else (finite) the text the runtime reads it by
    (:func:`~tsmon.core.timestamps.float_texts`, made for those rows only)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    whole = pc.and_(pc.equal(pc.floor(column), column), pc.less(pc.abs(column), 2.0**63))
    digits = pc.cast(pc.cast(pc.if_else(whole, column, 0), pa.int64()), pa.string())
    text = pc.if_else(whole, digits, pc.cast(column, pa.string()))
    other = pc.fill_null(pc.and_(pc.is_finite(column), pc.invert(whole)), False).combine_chunks()
    if not pc.any(other).as_py():  # whole floats within int64: no Python object per value
        return text
    texts = pa.array(float_texts(pc.filter(column, other).to_numpy()), pa.string())
    return pa.chunked_array([pc.replace_with_mask(text.combine_chunks(), other, texts)])


def text_columns(
    table: Any, names: Sequence[str], ts_unit: str = "ms"
) -> dict[str, list[str | None]]:
    """The named columns of a pyarrow table as text (None for null), as
    :func:`text_arrays` gives them."""
    return {n: c.to_pylist() for n, c in text_arrays(table, names, ts_unit).items()}


def json_object(line: str) -> dict[str, Any] | None:
    """One JSON-lines record with numbers kept as their text; None if it is no object."""
    try:
        record = json.loads(line, parse_float=str, parse_int=str, parse_constant=str)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def json_text(value: Any) -> str | None:
    """A JSON value as the text Spark's JSON reader would give for a STRING column."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value, separators=(",", ":"))
