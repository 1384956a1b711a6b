"""Splitting a batch: by series, then each series' points into runs appended at once; the runs
whose windows advance together (:class:`PendingRuns`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator

import numpy as np
import pandas as pd

from tsmon.core.groups import code_groups
from tsmon.engine.series import SeriesNode


def regular_runs(ts: np.ndarray, last_ts: int | None) -> Iterator[tuple[int, int, bool]]:
    """Yield ``(lo, hi, regular)`` runs covering ``ts`` in order.

    A point is regular when it is newer than every point before it (stored or earlier in the
    batch); runs of regular points are appended at once, the others (late points, duplicates)
    are handled one by one. Irregular points never raise the newest timestamp, so one pass
    over the running maximum classifies them all. (The usual batch, every series' points
    increasing and newer than its stored ones, is told apart before: :func:`increasing_groups`.)

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


def series_groups(names: np.ndarray) -> tuple[list[object], np.ndarray, list[int]]:
    """The distinct series names in order of first arrival, the indices of the points grouped
    by series (each group in arrival order) and where each group starts in them, then the
    end. Missing names (None, NaN) are one group, named NaN.

    Examples
    --------
    >>> names, order, bounds = series_groups(np.array(["a", "b", None, "a"], dtype=object))
    >>> names, order.tolist(), bounds
    (['a', 'b', nan], [0, 3, 1, 2], [0, 2, 3, 4])
    """
    uniques, codes = _factorize(names)
    order, bounds = code_groups(codes, len(uniques))
    return uniques, order, bounds.tolist()


def increasing_groups(ts: np.ndarray, bounds: list[int]) -> list[bool]:
    """Whether the timestamps of each group (``ts[bounds[g]:bounds[g + 1]]``, groups not
    empty) strictly increase: one pass over the batch instead of one per series.

    Examples
    --------
    >>> increasing_groups(np.array([1, 2, 0, 5, 5, 7]), [0, 2, 3, 6])
    [True, True, False]
    """
    edges = np.asarray(bounds)
    falls = ts[1:] <= ts[:-1]  # at each point after the first: not above the one before
    falls[edges[1:-1] - 1] = False  # a group's first point
    if not falls.any():  # the usual batch
        return [True] * (len(edges) - 1)
    falls = np.concatenate(([0], np.cumsum(falls)))  # non-increases up to each point
    return (falls[edges[1:] - 1] == falls[edges[:-1]]).tolist()


def _factorize(names: np.ndarray) -> tuple[list[object], np.ndarray]:
    """:func:`series_groups`' distinct names and each point's index in them."""
    try:  # missing names get code -1 (no null mask over every name)
        codes, found = pd.factorize(names, sort=False)
    except TypeError:  # unhashable names (lists, dicts) are no names: rejected as bad_series
        keys = np.array([n if isinstance(n, str) else None for n in names], dtype=object)
        codes, found = pd.factorize(keys, sort=False)
    uniques = list(found)
    missing = np.flatnonzero(codes < 0)
    if len(missing):  # their group takes its place in arrival order (codes are in that order)
        at = int(codes[: missing[0]].max(initial=-1)) + 1
        codes = np.where(codes < 0, at, codes + (codes >= at))
        uniques.insert(at, np.nan)
    return uniques, codes


#: The runs of series that trigger the same queries advance their windows and are evaluated
#: together, up to this many points at once.
_GROUP_POINTS = 1 << 16

#: One run of points appended to a register: (series, seq, ts, values, positions [p0, p1)).
Run = tuple[SeriesNode, np.ndarray, np.ndarray, np.ndarray, tuple[int, int]]


class PendingRuns:
    """The runs of one ingest whose windows are not yet advanced, by the queries their series
    trigger."""

    def __init__(self) -> None:
        self.pending: dict[tuple[str, ...], list[Run]] = {}
        self._points: Counter[tuple[str, ...]] = Counter()

    def add(self, triggered: tuple[str, ...], run: Run) -> bool:
        """Keep a run; whether its group now holds enough points to be advanced."""
        self.pending.setdefault(triggered, []).append(run)
        self._points[triggered] += len(run[2])
        return self._points[triggered] >= _GROUP_POINTS

    def take(self, triggered: tuple[str, ...]) -> list[Run]:
        """Forget and return the runs of one group."""
        del self._points[triggered]
        return self.pending.pop(triggered)

    def flush(self, advance: Callable[[tuple[str, ...]], None]) -> None:
        """``advance`` each group left (it takes the group's runs); after one raises, the
        windows of the groups still pending are rebuilt from their registers (their points
        stay stored, without events) and the error is raised."""
        error: BaseException | None = None
        for triggered in list(self.pending):
            if error is not None:
                for run in self.take(triggered):
                    run[0].rebuild()
                continue
            try:
                advance(triggered)
            except BaseException as e:
                error = e
        if error is not None:
            raise error
