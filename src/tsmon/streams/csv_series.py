"""Reading recorded series from CSV: NAB's ``timestamp,value`` or long ``series,ts,value``.

Rows are handed to the monitor as they were recorded: timestamps and values stay the strings of
the file, so one unreadable timestamp or value is rejected on its own (to the dead letters, with
its reason) instead of aborting the file, and out-of-order rows stay out of order so that the
monitor's lateness handling sees them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from tsmon.core.textfile import read_text
from tsmon.core.timestamps import read_epoch_ms

Layout = Literal["long", "timestamp_value"]
_LONG = ("series", "ts", "value")
_NAB = ("timestamp", "value")


def _require_file(path: Path) -> None:
    if not path.is_file():
        raise FileNotFoundError(f"no such CSV file: {path}; pass the path of a recorded series")


def _read_csv(path: Path, **options: object) -> pd.DataFrame:
    """``pd.read_csv`` of every field as text, its errors naming the file and what to fix (a
    whole file is refused for these: no row of it is fed)."""
    try:
        return pd.read_csv(path, dtype=str, **options)
    except pd.errors.EmptyDataError:
        raise ValueError(
            f"{path}: empty file; a recorded series starts with the header line "
            "'timestamp,value' or 'series,ts,value'"
        ) from None
    except pd.errors.ParserError as e:  # a line with too many fields, an unclosed quote
        raise ValueError(
            f"{path}: not readable as CSV: {str(e).strip()}; fix or remove that line"
        ) from None
    except UnicodeDecodeError:
        read_text(path, "CSV file")  # raises, naming the line and column of the bad byte
        raise


def _layout_of(path: Path, columns: Sequence[str]) -> Layout:
    present = set(columns)
    if set(_LONG) <= present:
        return "long"
    if set(_NAB) <= present:
        return "timestamp_value"
    raise ValueError(
        f"{path}: expected columns 'timestamp,value' or 'series,ts,value', "
        f"found {', '.join(columns) or 'none'}"
    )


def csv_layout(path: str | Path) -> Layout:
    """Which of the two layouts a CSV has, from its header only (cheap, before reading it all).

    ``"long"`` for ``series,ts,value``; ``"timestamp_value"`` for NAB's ``timestamp,value``,
    whose rows all belong to one series. Raises ``ValueError`` for any other header.
    """
    path = Path(path)
    _require_file(path)
    header = _read_csv(path, nrows=0)
    return _layout_of(path, list(header.columns))


def read_series_csv(path: str | Path, series: str | None = None) -> pd.DataFrame:
    """Load a CSV as (series, ts, value) rows, in the file's row order, all as read.

    A two-column ``timestamp,value`` file (NAB's format) becomes one series named ``series`` or
    ``<folder>.<file stem>``; a file with ``series``, ``ts`` and ``value`` columns is taken as is.
    Timestamps and values are left as the file's strings: :meth:`tsmon.Monitor.ingest` reads
    them point by point (digit-only timestamps as epoch ms, others as ISO-8601 instants) and
    rejects unreadable ones to its dead letters, so one bad row costs that row only.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     p = Path(tmp) / "m.csv"
    ...     _ = p.write_text("series,ts,value\\na,2000,1\\na,oops,2\\na,1000,x\\n")
    ...     read_series_csv(p).values.tolist()
    [['a', '2000', '1'], ['a', 'oops', '2'], ['a', '1000', 'x']]
    """
    path = Path(path)
    _require_file(path)
    frame = _read_csv(path, keep_default_na=False)
    if _layout_of(path, list(frame.columns)) == "long":
        return frame[list(_LONG)].reset_index(drop=True)
    name = series or f"{path.absolute().parent.name}.{path.stem}"  # ./x.csv: <cwd's name>.x
    return pd.DataFrame(
        {"series": name, "ts": frame["timestamp"].to_numpy(), "value": frame["value"].to_numpy()}
    )


def merge_order_key(ts: object) -> np.ndarray:
    """A non-decreasing int64 key per row that a stable sort can merge files by.

    The key is the running maximum of the readable timestamps (epoch ms); an unreadable one
    takes its predecessor's key (the first readable one's when at the start of the file). As
    the key never decreases within a file, a stable sort of several files' rows on it keeps
    each file's own row order — a late row or one with a bad timestamp stays between the
    neighbours its file put it — while interleaving the files by time.

    Examples
    --------
    >>> merge_order_key(["oops", "5", "9", "7", "bad", "12"]).tolist()
    [5, 5, 9, 9, 9, 12]
    """
    millis, ok = read_epoch_ms(ts)
    floor = np.iinfo(np.int64).min
    key = np.maximum.accumulate(np.where(ok, millis, floor)) if len(millis) else millis
    if ok.any():
        key[key == floor] = millis[np.argmax(ok)]
    return key.astype(np.int64, copy=False)


def merge_by_time(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """The rows of several files in one stream, by time, each file's row order kept.

    One file is returned in its own order. Several are merged by a stable sort on
    :func:`merge_order_key` computed per file; equal keys keep the order in which the files
    were given.

    Examples
    --------
    >>> a = pd.DataFrame({"series": "a", "ts": ["1", "5", "3", "7"], "value": "0"})
    >>> b = pd.DataFrame({"series": "b", "ts": ["2", "4", "6"], "value": "0"})
    >>> merge_by_time([a, b])[["series", "ts"]].values.tolist()
    [['a', '1'], ['b', '2'], ['b', '4'], ['a', '5'], ['a', '3'], ['b', '6'], ['a', '7']]
    """
    if len(frames) == 1:
        return frames[0].reset_index(drop=True)
    keys = np.concatenate([merge_order_key(f["ts"].to_numpy()) for f in frames])
    points = pd.concat(frames, ignore_index=True)
    return points.iloc[np.argsort(keys, kind="stable")].reset_index(drop=True)
