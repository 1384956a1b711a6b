"""Reading recorded series from CSV: NAB's ``timestamp,value`` or long ``series,ts,value``.

Rows are handed to the monitor as they were recorded: timestamps and values stay the strings of
the file, so one unreadable timestamp or value is rejected on its own (to the dead letters, with
its reason) instead of aborting the file, and out-of-order rows stay out of order so that the
monitor's lateness handling sees them. Lines are read as the Spark job reads a CSV input
(:func:`tsmon.spark.filerows.file_rows`): columns by name, and a line that is no record (another
number of fields than the header, an unclosed quote, bytes that are not UTF-8) is one row with
the reason ``malformed_line``, costing that line only.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from tsmon.core.timestamps import read_epoch_ms
from tsmon.engine.deadletters import Reason

Layout = Literal["long", "timestamp_value"]
_NAB = ("timestamp", "value")


def _require_file(path: Path) -> None:
    if not path.is_file():
        raise FileNotFoundError(f"no such CSV file: {path}; pass the path of a recorded series")


def _header(path: Path) -> list[str]:
    """The fields of a CSV file's first line that is not blank, read as
    :func:`tsmon.spark.filerows.file_rows` reads it; ``ValueError`` naming what to fix if there
    is none or it is no CSV text."""
    from tsmon.spark.filerows import csv_header

    with path.open("rb") as f:  # lines split as file_rows splits them: LF, CRLF or a lone CR
        first = next((part for line in f for part in line.splitlines() if part.strip()), None)
    if first is None:
        raise ValueError(
            f"{path}: empty file; a recorded series starts with the header line "
            "'timestamp,value' or 'series,ts,value'"
        )
    fields = csv_header(first)
    if isinstance(fields, str) or b"\x00" in first:
        what = "binary content" if b"\x00" in first else fields
        raise ValueError(f"{path}: its header line is {what}; is it a CSV file?")
    return fields


def _layout_of(path: Path, columns: Sequence[str]) -> Layout:
    present = set(columns)
    if {"series", "value"} <= present and present & {"ts", "timestamp"}:
        return "long"
    if set(_NAB) <= present:
        return "timestamp_value"
    raise ValueError(
        f"{path}: expected columns 'timestamp,value' or 'series,ts,value', "
        f"found {', '.join(columns) or 'none'}"
    )


def _names(layout: Layout, columns: Sequence[str]) -> list[str]:
    """The columns read for ``series`` (a long file's), ``ts`` and ``value``: a long file's
    time is its ``ts`` column, or its ``timestamp`` column when it has no ``ts``."""
    if layout == "timestamp_value":
        return list(_NAB)
    return ["series", "ts" if "ts" in columns else "timestamp", "value"]


def csv_layout(path: str | Path) -> Layout:
    """Which of the two layouts a CSV has, from its header only (cheap, before reading it all).

    ``"long"`` for ``series,ts,value`` (or ``series,timestamp,value``); ``"timestamp_value"``
    for NAB's ``timestamp,value``, whose rows all belong to one series. Raises ``ValueError``
    for any other header.
    """
    path = Path(path)
    _require_file(path)
    return _layout_of(path, _header(path))


def read_series_csv(path: str | Path, series: str | None = None) -> pd.DataFrame:
    """Load a CSV as ``series, ts, value, reason, detail, origin`` rows, in the file's line
    order; ``origin`` is each row's ``<file>:<line>``. The columns are Arrow text
    (``string[pyarrow]``, null as ``<NA>``): the file's text stays in Arrow's buffers, not a
    Python string per field, and a replay makes Python strings one batch at a time.

    A two-column ``timestamp,value`` file (NAB's format) becomes one series named ``series`` or
    ``<folder>.<file stem>``; a file with ``series``, ``ts`` (or ``timestamp``) and ``value``
    columns is taken as is.
    Timestamps and values are left as the file's strings: :meth:`tsmon.Monitor.ingest` reads
    them point by point (digit-only timestamps as epoch ms, others as ISO-8601 instants) and
    rejects unreadable ones to its dead letters, so one bad row costs that row only. A record's
    ``reason`` is None; a line that is no record has ``reason`` ``malformed_line``, no series,
    timestamp or value, and the ``detail`` ``<file>:<line>: <what>`` (for
    :meth:`tsmon.Monitor.refuse`). A file that is no text at all is refused whole
    (``ValueError``).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     p = Path(tmp) / "m.csv"
    ...     _ = p.write_text("series,ts,value\\na,2000,1\\na,oops,2,3\\na,1000,x\\n")
    ...     rows = read_series_csv(p)
    >>> rows[["series", "ts", "value", "reason"]].values.tolist()
    [['a', '2000', '1', <NA>], [<NA>, <NA>, <NA>, 'malformed_line'], ['a', '1000', 'x', <NA>]]
    >>> rows["detail"][1].endswith("m.csv:3: 4 fields, the header has 3")
    True
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from tsmon.spark.filerows import DETAIL, LINE, REASON, file_batches

    path = Path(path)
    _require_file(path)
    header = _header(path)  # read once: the layout and the columns both come from it
    layout = _layout_of(path, header)
    names = _names(layout, header)
    try:
        content = path.read_bytes()
    except OSError as e:
        raise ValueError(f"{path}: cannot be read: {e.strerror or e}") from None
    name = series or f"{path.absolute().parent.name}.{path.stem}"  # ./x.csv: <cwd's name>.x
    text = pa.string()
    chunks: dict[str, list] = {c: [] for c in _COLUMNS}
    for rows in file_batches(str(path), content, "csv", names):  # a block of lines at a time
        reason = rows.column(REASON)
        if reason[0].as_py() == Reason.UNREADABLE_FILE.value:  # then the file's one row
            raise ValueError(f"{path}: not a CSV file: {rows.column(DETAIL)[0]}")
        bad = pc.is_valid(reason)
        origin = pc.binary_join_element_wise(path.as_posix(), pc.cast(rows.column(LINE), text), ":")
        named = pa.scalar(name) if layout == "timestamp_value" else rows.column("series")
        columns = {
            "series": pc.if_else(bad, pa.scalar(None, text), named),
            "ts": rows.column(names[-2]),
            "value": rows.column("value"),
            "reason": reason,
            "detail": pc.if_else(bad, pc.binary_join_element_wise(origin, rows[DETAIL], ": "), ""),
            "origin": origin,
        }
        for column, array in columns.items():
            chunks[column].append(array)
        pa.default_memory_pool().release_unused()  # else Arrow keeps the freed temporaries
    return pd.DataFrame(
        {c: pd.arrays.ArrowExtensionArray(pa.chunked_array(a, text)) for c, a in chunks.items()}
    )


_COLUMNS = ("series", "ts", "value", "reason", "detail", "origin")


def merge_order_key(ts: object, ts_unit: str = "ms") -> np.ndarray:
    """A non-decreasing int64 key per row that a stable sort can merge files by.

    The key is the running maximum of the readable timestamps (epoch ms; epoch numbers in
    ``ts_unit``, as the monitor reads them); an unreadable one takes its predecessor's key
    (the first readable one's when at the start of the file). As the key never decreases
    within a file, a stable sort of several files' rows on it keeps each file's own row order
    — a late row or one with a bad timestamp stays between the neighbours its file put it —
    while interleaving the files by time.

    Examples
    --------
    >>> merge_order_key(["oops", "5", "9", "7", "bad", "12"]).tolist()
    [5, 5, 9, 9, 9, 12]
    """
    millis, ok = read_epoch_ms(ts, ts_unit)
    floor = np.iinfo(np.int64).min
    key = np.maximum.accumulate(np.where(ok, millis, floor)) if len(millis) else millis
    if ok.any():
        key[key == floor] = millis[np.argmax(ok)]
    return key.astype(np.int64, copy=False)


def merge_by_time(frames: Sequence[pd.DataFrame], ts_unit: str = "ms") -> pd.DataFrame:
    """The rows of several files in one stream, by time, each file's row order kept.

    One file is returned in its own order. Several are merged by a stable sort on
    :func:`merge_order_key` computed per file (:func:`merge_order`); equal keys keep the order
    in which the files were given.

    Examples
    --------
    >>> a = pd.DataFrame({"series": "a", "ts": ["1", "5", "3", "7"], "value": "0"})
    >>> b = pd.DataFrame({"series": "b", "ts": ["2", "4", "6"], "value": "0"})
    >>> merge_by_time([a, b])[["series", "ts"]].values.tolist()
    [['a', '1'], ['b', '2'], ['b', '4'], ['a', '5'], ['a', '3'], ['b', '6'], ['a', '7']]
    """
    if len(frames) == 1:
        return frames[0].reset_index(drop=True)
    points = pd.concat(frames, ignore_index=True)
    return points.iloc[merge_order(frames, ts_unit)].reset_index(drop=True)


def concat_rows(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The rows of :func:`read_series_csv` frames end to end, each column one Arrow array (a
    take of a batch's rows from it is cheap, from many chunks it costs a copy of them); the
    frames are emptied column by column as they are copied, so their rows are held once."""
    columns = {}
    for c in list(frames[0].columns):
        rows = pd.concat([f.pop(c) for f in frames], ignore_index=True).array
        columns[c] = pd.arrays.ArrowExtensionArray(rows.__arrow_array__().combine_chunks())
    return pd.DataFrame(columns)


def merge_order(frames: Sequence[pd.DataFrame], ts_unit: str = "ms") -> np.ndarray | None:
    """Where :func:`merge_by_time` takes its rows from in the frames put end to end (None for
    one frame: its own order); a reader that takes them a batch at a time holds no merged
    copy of the rows.

    Examples
    --------
    >>> a = pd.DataFrame({"ts": ["1", "5", "3", "7"]})
    >>> merge_order([a, pd.DataFrame({"ts": ["2", "4", "6"]})]).tolist()
    [0, 4, 5, 1, 2, 6, 3]
    """
    if len(frames) == 1:
        return None
    ts = (f["ts"].to_numpy(dtype=object, na_value=None) for f in frames)
    keys = np.concatenate([merge_order_key(t, ts_unit) for t in ts])
    return np.argsort(keys, kind="stable")
