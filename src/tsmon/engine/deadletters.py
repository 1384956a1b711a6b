"""Rejected points, kept with their reason so that nothing is dropped silently."""

from __future__ import annotations

from collections import Counter
from enum import Enum

import numpy as np
import pandas as pd


class Reason(str, Enum):
    """Why a point was rejected."""

    MISSING = "missing"  # None / empty value
    NOT_NUMERIC = "not_numeric"  # a string or object that is no number
    NAN = "nan"
    INFINITE = "infinite"
    BAD_TIMESTAMP = "bad_timestamp"
    BAD_SERIES = "bad_series"  # a series name that is missing or no string
    UNKNOWN_SERIES = "unknown_series"
    TOO_LATE = "too_late"  # older than the allowed lateness, or than the retained history
    DUPLICATE = "duplicate"  # timestamp already stored, policy keep_first


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
        self._chunks: list[pd.DataFrame] = []
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
        self._chunks.append(
            pd.DataFrame(
                {
                    "seq": np.asarray(seq, dtype=np.int64),
                    "series": np.asarray(series, dtype=object),
                    "ts_ms": pd.array(ts_ms, dtype="Int64"),
                    "value": np.asarray(values, dtype=object),
                    "reason": reason.value,
                    "detail": detail,
                }
            )
        )
        self._counts[reason.value] += len(seq)

    def counts(self) -> dict[str, int]:
        """Rejected points per reason."""
        return dict(self._counts)

    def total(self) -> int:
        """All rejected points."""
        return sum(self._counts.values())

    def frame(self) -> pd.DataFrame:
        """Every rejected point in arrival order: seq, series, ts_ms, value, reason, detail."""
        if not self._chunks:
            return pd.DataFrame({c: pd.Series(dtype=object) for c in _COLUMNS})
        return pd.concat(self._chunks, ignore_index=True).sort_values("seq", kind="stable")
