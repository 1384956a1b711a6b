"""Splitting one series' points into runs that can be appended as one vectorized batch."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np


def regular_runs(ts: np.ndarray, last_ts: int | None) -> Iterator[tuple[int, int, bool]]:
    """Yield ``(lo, hi, regular)`` runs covering ``ts`` in order.

    A point is regular when it is newer than every point before it (stored or earlier in the
    batch); runs of regular points are appended at once, the others (late points, duplicates)
    are handled one by one. Irregular points never raise the newest timestamp, so one pass
    over the running maximum classifies them all.

    Examples
    --------
    >>> list(regular_runs(np.array([5, 6, 6, 4, 9]), last_ts=3))
    [(0, 2, True), (2, 4, False), (4, 5, True)]
    """
    if len(ts) == 0:
        return
    floor = np.iinfo(np.int64).min if last_ts is None else last_ts
    newest_before = np.maximum.accumulate(np.concatenate(([floor], ts[:-1])))
    regular = ts > newest_before
    if regular.all():
        yield 0, len(ts), True
        return
    edges = np.flatnonzero(np.diff(regular.astype(np.int8))) + 1
    bounds = np.concatenate(([0], edges, [len(ts)]))
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        yield lo, hi, bool(regular[lo])
