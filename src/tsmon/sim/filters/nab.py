"""Replay of real series from the Numenta Anomaly Benchmark (NAB) as a filter workload.

Every CSV file (``timestamp,value``) becomes one object on its own source; the files are merged
by timestamp. Files are read where they are (never copied): pass their paths, e.g. from
:func:`nab_files`. Rows that cannot be replayed are skipped *and counted* in
:attr:`NabReplay.skipped`:

- ``bad_timestamp``: the timestamp cannot be read;
- ``bad_value``: the value is not a finite number;
- ``out_of_order``: the timestamp is earlier than the file's previous kept row (a late row;
  a filter sees values in time order).

Rows repeating the previous timestamp are kept: two updates at the same instant, in file order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Literal

import numpy as np
import pandas as pd

from tsmon.core.timestamps import read_epoch_ms
from tsmon.protocols.filters.queries import Query
from tsmon.sim.filters.workload import Workload
from tsmon.streams.csv_series import read_series_csv

REASONS = ("bad_timestamp", "bad_value", "out_of_order")


@dataclass(frozen=True)
class NabReplay:
    """A workload read from NAB files and, per object, the rows skipped by reason."""

    workload: Workload
    skipped: Mapping[str, Mapping[str, int]]
    paths: tuple[Path, ...]

    @property
    def n_skipped(self) -> int:
        """Rows skipped over all files."""
        return sum(sum(r.values()) for r in self.skipped.values())

    def summary(self) -> str:
        """One line: objects, updates, and the skipped rows by file and reason."""
        bad = {
            obj: {k: v for k, v in r.items() if v}
            for obj, r in self.skipped.items()
            if any(r.values())
        }
        return (
            f"{len(self.workload.objects)} NAB objects, {len(self.workload)} updates, "
            f"{self.n_skipped} rows skipped" + (f": {bad}" if bad else "")
        )


def nab_files(root: str | Path, folder: str, pattern: str = "*.csv") -> list[Path]:
    """The CSV files of one NAB folder (e.g. ``"realTweets"``), sorted by name.

    Examples
    --------
    >>> nab_files("/nonexistent", "realTweets")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    FileNotFoundError: no NAB folder /nonexistent/realTweets; pass the directory ...
    """
    path = Path(root) / folder
    if not path.is_dir():
        raise FileNotFoundError(f"no NAB folder {path}; pass the directory that holds {folder}/")
    return sorted(path.glob(pattern))


def _read(path: Path, name: str) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    frame = read_series_csv(path, series=name)
    millis, ok_ts = read_epoch_ms(frame["ts"].to_numpy())
    values = pd.to_numeric(frame["value"], errors="coerce").to_numpy(dtype=float)
    ok_value = np.isfinite(values)
    readable = ok_ts & ok_value
    ts = millis[readable]
    # a row earlier than the running maximum of the kept timestamps is late: skip it
    floor = np.maximum.accumulate(ts) if len(ts) else ts
    in_order = ts >= np.concatenate([[np.iinfo(np.int64).min], floor[:-1]])
    skipped = {
        "bad_timestamp": int((~ok_ts).sum()),
        "bad_value": int((ok_ts & ~ok_value).sum()),
        "out_of_order": int((~in_order).sum()),
    }
    return ts[in_order], values[readable][in_order], skipped


def nab_workload(
    paths: Sequence[str | Path],
    delta: float | None = None,
    *,
    names: Sequence[str] | None = None,
    align: Literal["absolute", "start"] = "absolute",
    time_unit_ms: int | None = None,
) -> NabReplay:
    """A :class:`Workload` replaying NAB files, one object (and source) per file.

    Parameters
    ----------
    paths
        CSV files with a ``timestamp,value`` header.
    delta
        If given, register one AVG query ``"avg"`` over all objects with this precision.
    names
        Object ids, one per file; default ``<folder>.<file stem>``.
    align
        ``"absolute"`` keeps the recorded times; ``"start"`` shifts every file to start at the
        earliest first timestamp of all files, so that series recorded at different dates
        overlap.
    time_unit_ms
        One time unit; default the median step between consecutive rows (5 min for most files).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     a, b = Path(tmp, "a.csv"), Path(tmp, "b.csv")
    ...     _ = a.write_text("timestamp,value\\n1970-01-01 00:00:01,1\\n1970-01-01 00:00:03,x\\n")
    ...     _ = b.write_text("timestamp,value\\n1970-01-01 00:00:02,5\\n1970-01-01 00:00:01,6\\n")
    ...     r = nab_workload([a, b], delta=1.0, names=["a", "b"])
    >>> r.workload.ts_ms.tolist(), r.workload.values.tolist(), r.n_skipped
    ([1000, 2000], [1.0, 5.0], 2)
    >>> r.summary()
    "2 NAB objects, 2 updates, 2 rows skipped: {'a': {'bad_value': 1}, 'b': {'out_of_order': 1}}"
    """
    files = [Path(p) for p in paths]
    if not files:
        raise ValueError("no NAB files given; pass at least one CSV path, e.g. from nab_files()")
    if names is None:
        names = [f"{p.parent.name}.{p.stem}" for p in files]
    if len(names) != len(files):
        raise ValueError(f"need one name per file: {len(files)} files, {len(names)} names")
    if align not in ("absolute", "start"):
        raise ValueError(f"align must be 'absolute' or 'start', got {align!r}")
    series = [_read(p, n) for p, n in zip(files, names, strict=True)]
    if align == "start":
        starts = [ts[0] for ts, _, _ in series if len(ts)]
        origin = min(starts) if starts else 0
        series = [(ts - ts[0] + origin if len(ts) else ts, v, s) for ts, v, s in series]
    ts = np.concatenate([s[0] for s in series])
    values = np.concatenate([s[1] for s in series])
    obj = np.repeat(np.arange(len(files)), [len(s[0]) for s in series])
    order = np.argsort(ts, kind="stable")  # merge by time; ties keep the order of the files
    if time_unit_ms is None:
        steps = np.concatenate([np.diff(s[0]) for s in series])
        steps = steps[steps > 0]
        time_unit_ms = int(np.median(steps)) if len(steps) else 1_000
    queries = () if delta is None else (Query.avg("avg", list(names), delta),)
    workload = Workload(
        tuple(names),
        {n: n for n in names},
        ts[order],
        obj[order],
        values[order],
        queries,
        None,
        time_unit_ms,
    )
    skipped = MappingProxyType(
        {n: MappingProxyType(s[2]) for n, s in zip(names, series, strict=True)}
    )
    return NabReplay(workload, skipped, tuple(files))
