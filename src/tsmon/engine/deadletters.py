"""Rejected points, kept with their reason so that nothing is dropped silently."""

from __future__ import annotations

from collections import Counter
from enum import Enum
from typing import Any

import numpy as np
import pandas as pd


class Reason(str, Enum):
    """Why a point was rejected: one list for the embedded engine, the source nodes and the
    Spark job's input rows (the ``reason`` column of every dead-letter output)."""

    MISSING = "missing"  # None / empty value
    NOT_NUMERIC = "not_numeric"  # a string or object that is no number
    NAN = "nan"
    INFINITE = "infinite"
    VALUE_OUT_OF_RANGE = "value_out_of_range"  # |value| > tsmon.core.moments.MAX_ABS_VALUE
    BAD_TIMESTAMP = "bad_timestamp"
    FUTURE_TIMESTAMP = "future_timestamp"  # beyond the batch's clock + max_future
    BAD_SERIES = "bad_series"  # a series name that is missing or no string
    UNKNOWN_SERIES = "unknown_series"
    TOO_LATE = "too_late"  # older than the allowed lateness, or than the retained history
    DUPLICATE = "duplicate"  # timestamp already stored, policy keep_first
    BAD_SOURCE = "bad_source"  # a source named like a reserved node key (a query partition's)
    QUARANTINED = "quarantined"  # a step failed on it for an unforeseen reason (tsmon.engine.guard)
    MALFORMED_LINE = "malformed_line"  # an input file's line that is no record (tsmon.spark)
    UNREADABLE_FILE = "unreadable_file"  # an input file that is no text (binary, compressed)


_COLUMNS = ["seq", "series", "ts_ms", "value", "reason", "detail"]


class DeadLetters:
    """An append-only record of rejected points with counts per reason.

    Examples
    --------
    >>> dl = DeadLetters()
    >>> dl.add(np.array([3]), np.array(["cpu"]), np.array([5]), np.array(["x"], dtype=object),
    ...        Reason.NOT_NUMERIC, "value 'x' is not a number")
    >>> dl.counts()
    {'not_numeric': 1}
    >>> dl.frame()[["series", "reason"]].values.tolist()
    [['cpu', 'not_numeric']]
    """

    def __init__(self) -> None:
        # column chunks, turned into one frame only when read: a flood of single late points
        # must not build a DataFrame each (0.3 ms apiece)
        self._chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str, Any]] = []
        self._counts: Counter[str] = Counter()

    def add(
        self,
        seq: np.ndarray,
        series: np.ndarray,
        ts_ms: np.ndarray,
        values: np.ndarray,
        reason: Reason,
        detail: str | list[str],
    ) -> None:
        """Record rejected points; ``detail`` is one message for all or one per point."""
        if len(seq) == 0:
            return
        chunk = (
            np.asarray(seq, dtype=np.int64),
            np.asarray(series, dtype=object),
            np.asarray(ts_ms, dtype=object),  # None where unreadable
            np.asarray(values, dtype=object),
            reason.value,
            detail,
        )
        self._chunks.append(chunk)
        self._counts[reason.value] += len(seq)

    def counts(self) -> dict[str, int]:
        """Rejected points per reason."""
        return dict(self._counts)

    def total(self) -> int:
        """All rejected points."""
        return sum(self._counts.values())

    def frame(self) -> pd.DataFrame:
        """Every rejected point not yet taken, in arrival order: seq, series, ts_ms, value,
        reason, detail."""
        if not self._chunks:
            return pd.DataFrame({c: pd.Series(dtype=object) for c in _COLUMNS})
        sizes = [len(c[0]) for c in self._chunks]
        details = [
            np.full(n, c[5], dtype=object) if isinstance(c[5], str) else np.asarray(c[5], object)
            for n, c in zip(sizes, self._chunks, strict=True)
        ]
        frame = pd.DataFrame(
            {
                "seq": np.concatenate([c[0] for c in self._chunks]),
                "series": np.concatenate([c[1] for c in self._chunks]),
                "ts_ms": pd.array(np.concatenate([c[2] for c in self._chunks]), dtype="Int64"),
                "value": np.concatenate([c[3] for c in self._chunks]),
                "reason": np.repeat([c[4] for c in self._chunks], sizes).astype(object),
                "detail": np.concatenate(details),
            }
        )
        return frame.sort_values("seq", kind="stable", ignore_index=True)

    def pending(self) -> int:
        """Rejected points not taken yet."""
        return sum(len(chunk[0]) for chunk in self._chunks)

    def take(self) -> pd.DataFrame:
        """Return :meth:`frame` and forget its rows (the counts keep them): a long-running
        host ships rejected points out instead of holding them forever."""
        out = self.frame()
        self._chunks = []
        return out
