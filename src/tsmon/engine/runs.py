"""Splitting a batch: by series, then each series' points into runs appended at once."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import pandas as pd


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
    if ts[0] > floor and (ts[1:] > ts[:-1]).all():  # the usual run: one append
        yield 0, len(ts), True
        return
    newest_before = np.maximum.accumulate(np.concatenate(([floor], ts[:-1])))
    regular = ts > newest_before
    if regular.all():
        yield 0, len(ts), True
        return
    edges = np.flatnonzero(np.diff(regular.astype(np.int8))) + 1
    bounds = np.concatenate(([0], edges, [len(ts)]))
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        yield lo, hi, bool(regular[lo])


def series_groups(names: np.ndarray) -> Iterable[tuple[object, np.ndarray]]:
    """Each distinct series name with the indices of its points, in arrival order."""
    try:
        codes, uniques = pd.factorize(names, sort=False, use_na_sentinel=False)
    except TypeError:  # unhashable names (lists, dicts) are no names: rejected as bad_series
        keys = np.array([n if isinstance(n, str) else None for n in names], dtype=object)
        codes, uniques = pd.factorize(keys, sort=False, use_na_sentinel=False)
    small = np.uint16 if len(uniques) < 2**16 else np.int64  # stable sort of uint16 is radix
    order = np.argsort(codes.astype(small), kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1))
    for code, name in enumerate(uniques):
        yield name, order[bounds[code] : bounds[code + 1]]
