"""The exact answers of a job's bounded queries, recomputed from its input files: the line
``tsmon plot`` draws beside the bounds the job recorded.

A bounded answer as of ``t`` bounds the aggregate of its series' current values at ``t``: each
series' newest point stamped at or before ``t``. A point that reached its node after a newer
one of its series was stale and ignored by the job; this recomputation cannot know the order
of arrival and takes every point, the last of equal stamps in file order. The job does not
record the exact value (the coordinator never sees it: that is the point of the filters), but
a job that reads files still has them: :func:`input_points` reads them as the job does (with
:func:`tsmon.spark.filerows.file_rows`, its format and column mapping; digits-only timestamps
are epoch ms, others parsed as instants; a value as :func:`tsmon.engine.points.read_batch`
reads it; unreadable rows left out, as they were dead letters:
a malformed line costs that line, not its file), and :func:`exact_over_time` evaluates
the query's definition, taken from the job's newest coordinator snapshot, at each answer's
time.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tsmon.engine.deadletters import DeadLetters
from tsmon.engine.points import read_batch

__all__ = ["bounded_query", "exact_over_time", "input_points"]

_FORMATS = ("csv", "json", "parquet")


def input_points(spec: Any) -> pd.DataFrame | None:
    """``series, ts, value`` of every readable input row of a ``files`` or ``replay`` input
    (``spec``: the job's :class:`~tsmon.spark.input_spec.InputSpec`); None for other inputs or when
    the files are gone."""
    from tsmon.spark.filerows import DETAIL, FILE, LINE, REASON, file_rows

    if spec.kind not in ("files", "replay") or spec.path is None or spec.format not in _FORMATS:
        return None
    path = Path(spec.path)
    files = [path] if path.is_file() else sorted(path.rglob("*")) if path.is_dir() else []
    names = list(dict.fromkeys(spec.columns.values()))
    rows = []
    for file in files:
        if file.is_file() and not file.name.startswith((".", "_")):
            try:
                content = file.read_bytes()
            except OSError:  # gone since the job read it
                continue
            rows.extend(file_rows(str(file), content, spec.format, names))
    raw = pd.DataFrame(rows, columns=[FILE, LINE, *names, REASON, DETAIL])
    raw = raw[raw[REASON].isna()]  # the job's dead letters malformed_line, unreadable_file
    if raw.empty:
        return None
    cols = spec.columns
    one = spec.series  # a replay's one series, else each row's
    series = raw[cols["series"]] if one is None else pd.Series(one, index=raw.index)
    texts = (raw[cols[role]].to_numpy(dtype=object) for role in ("ts", "value"))
    read = read_batch(series.to_numpy(dtype=object), *texts, 0, DeadLetters())  # as the job
    out = pd.DataFrame({"series": read.series, "ts": read.ts_ms, "value": read.values})
    return out[out["series"].notna()].reset_index(drop=True)


def bounded_query(hub: Any, name: str) -> Any:
    """The definition of bounded query ``name`` (names ignore case) at coordinator ``hub`` (a
    job's snapshot), or None."""
    planned = hub.part("bounded").planned()
    return next((q for n, q in planned.items() if n.casefold() == name.casefold()), None)


def exact_over_time(query: Any, points: pd.DataFrame, times: Sequence[int]) -> np.ndarray:
    """The exact aggregate of ``query`` over its series' current values at each of ``times``
    (NaN while one of them has no point yet)."""
    current = {}
    for series in query.objects:
        mine = points[points["series"] == series].sort_values("ts", kind="stable")
        ts, values = mine["ts"].to_numpy(), mine["value"].to_numpy(dtype=float)
        at = np.searchsorted(ts, np.asarray(times), side="right") - 1
        current[series] = (
            np.where(at >= 0, values[np.maximum(at, 0)], np.nan)
            if len(ts)
            else (np.full(len(times), np.nan))
        )
    out = np.full(len(times), np.nan)
    for i in range(len(times)):
        values = {s: float(v[i]) for s, v in current.items()}
        if not any(np.isnan(v) for v in values.values()):
            out[i] = query.exact(values)
    return out
