"""An in-process batch's points, checked once and split by source into the columns a source
node steps on: :meth:`~tsmon.engine.node.SourceNode.step_columns`, the Spark host's entry too.

:meth:`~tsmon.engine.batched.BatchedRuntime.step_batch` takes ``(source, series, ts, value)``
points and checks every one before any node steps. The usual batch (tuples or lists of a
``str`` source and series, ``int`` timestamps, ``float`` or ``int`` finite values) is checked
by a few passes over the whole batch, its distinct sources and its distinct ``(series,
source)`` pairs; any other batch point by point (:func:`check_points`), which raises the
``ValueError`` naming the first bad point, or accepts what the quick checks leave to it (numpy
ints, ``str`` subclasses, ...). Either way the same points come out, as the same columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import numpy as np
import pandas as pd

from tsmon.engine.hub import CoordinatorNode
from tsmon.engine.node import parse_data
from tsmon.kinds import reserved_part

__all__ = ["SourcePoints", "check_points", "split_points", "step_source"]

Row = dict[str, Any]


@dataclass(frozen=True)
class SourcePoints:
    """One source's points of a batch, its own (a journal may keep them for a while):
    ``columns`` ``(series, ts, value, seq)`` in ``(ts, seq)`` order (None when a timestamp
    is beyond int64: the node steps on :meth:`rows`, and makes it a dead letter
    ``bad_timestamp``), and ``given``, the points' fields as given in arrival order (None when
    the columns hold them as given: ``str`` series, ``int`` timestamps, ``float`` values)."""

    size: int
    columns: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None
    given: tuple[tuple[Any, ...], ...] | None

    def rows(self) -> list[Row]:
        """The points as data rows, as given and in arrival order (the quarantine's dead
        letters show them so)."""
        if self.given is None:
            assert self.columns is not None
            arrival = np.argsort(self.columns[3])
            fields = [c[arrival].tolist() for c in self.columns]
        else:
            fields = list(self.given)
        return [
            {"series": s, "ts": t, "value": v, "seq": q} for s, t, v, q in zip(*fields, strict=True)
        ]


def step_source(
    node: Any, control: Sequence[Row], data: SourcePoints | None, clock_ms: int
) -> list[Row]:
    """One step of ``node`` on its control rows and points (None: none), over columns when
    it takes them (as on Spark), else over data rows (a query partition's node)."""
    columnar = getattr(node, "step_columns", None)
    if columnar is None or (data is not None and data.columns is None):
        return node.step(control, [] if data is None else data.rows(), clock_ms=clock_ms)
    return columnar(control, *(_NO_POINTS if data is None else data.columns), clock_ms=clock_ms)


_NO_POINTS = (
    np.zeros(0, dtype=object), np.zeros(0, np.int64), np.zeros(0, np.float64), np.zeros(0, np.int64)
)  # fmt: skip


def split_points(points: Sequence[Any], seq0: int, hub: CoordinatorNode) -> dict[str, SourcePoints]:
    """The points by source (sorted), numbered ``seq0, seq0 + 1, ...``; a ``ValueError``
    naming the first bad point (see :func:`check_points`)."""
    shapes_ok = set(map(type, points)) <= {tuple, list} and set(map(len, points)) <= {4}
    given = _fields(points) if shapes_ok else ((), (), (), ())
    value = _quick(*given, hub) if shapes_ok else None
    quick = value is not None
    if value is None:
        check_points(points, seq0, hub)  # raises, or the points are good after all
        given = _fields(points)
        value = np.array([float(v) for v in given[3]], dtype=np.float64)
    if not points:
        return {}
    as_given = quick and set(map(type, given[3])) <= {float}  # the columns hold them as given
    sources, series, ts, _ = given
    codes, names = pd.factorize(np.array(sources, dtype=object), sort=True)
    seq = np.arange(seq0, seq0 + len(points))
    try:
        ts_column = np.array(ts if quick else [int(t) for t in ts], dtype=np.int64)
    except OverflowError:  # beyond int64: the nodes step on rows
        ts_column, as_given = None, False
    # by source, in (ts, seq) order (stable: seq is the arrival order)
    order = (
        np.argsort(codes, kind="stable") if ts_column is None else np.lexsort((ts_column, codes))
    )
    bounds = np.searchsorted(codes[order], np.arange(len(names) + 1)).tolist()
    series_column = np.array(series, dtype=object)
    split = {}
    for k, name in enumerate(names):
        take = order[bounds[k] : bounds[k + 1]]
        columns = None
        if ts_column is not None:
            columns = (series_column[take], ts_column[take], value[take], seq[take])
        fields = None
        if not as_given:
            arrival = np.sort(take).tolist()
            fields = (
                *(tuple(f[i] for i in arrival) for f in given[1:]),
                tuple(seq[arrival].tolist()),
            )
        split[name] = SourcePoints(len(take), columns, fields)
    return split


def _fields(points: Sequence[Any]) -> tuple[tuple[Any, ...], ...]:
    """The points' sources, series, timestamps and values (points of four fields)."""
    return tuple(tuple(map(itemgetter(i), points)) for i in range(4))


def _quick(
    sources: tuple[Any, ...],
    series: tuple[Any, ...],
    ts: tuple[Any, ...],
    value: tuple[Any, ...],
    hub: CoordinatorNode,
) -> np.ndarray | None:
    """The batch's values as floats, if the quick checks pass (else None: the points are
    checked one by one)."""
    kinds = set(map(type, value))
    if not (set(map(type, series)) <= {str} and set(map(type, ts)) <= {int}):
        return None
    if not set(map(type, sources)) <= {str}:  # before set(sources): a list is unhashable
        return None
    if not kinds <= {float, int}:
        return None
    if any(reserved_part(s) is not None for s in set(sources)):
        return None
    pinned = hub.pinned_series()
    located: dict[str, str] = {}
    for name, source in dict.fromkeys(zip(series, sources, strict=True)):
        known = located.setdefault(name, hub.source_of(name) or source)
        if known != source and name in pinned:
            return None
    try:  # an int too large for a float raises (the check point by point says where)
        floats = np.array(value if int not in kinds else [float(v) for v in value], np.float64)
    except OverflowError:
        return None
    return floats if np.isfinite(floats).all() else None


def check_points(points: Sequence[Any], seq0: int, hub: CoordinatorNode) -> None:
    """Check the points one by one: a ``ValueError`` naming the first bad one (a point that is
    no ``(source, series, ts, value)``, a reserved source, a bounded query's series at a
    second source, then by source, :func:`~tsmon.engine.node.parse_data`'s)."""
    groups: dict[str, list[Row]] = {}
    located: dict[str, str] = {}
    pinned = hub.pinned_series()
    for n, point in enumerate(points):
        if not (isinstance(point, tuple | list) and len(point) == 4):
            raise ValueError(f"point {n}: expected (source, series, ts, value), got {point!r}")
        source, series, ts, value = point
        if not isinstance(source, str) or reserved_part(source) is not None:
            raise ValueError(
                f"point {n}: source must be a str and not a reserved node key (a query "
                f"partition's), got {source!r}"
            )
        known = located.setdefault(series, hub.source_of(series) or source)
        if known != source and series in pinned:
            raise ValueError(
                f"point {n}: series {series!r} comes from source {source!r} but is known "
                f"at {known!r}; a bounded query needs each of its series at one source"
            )
        row = {"series": series, "ts": ts, "value": value, "seq": seq0 + n}
        groups.setdefault(source, []).append(row)
    for source, rows in groups.items():
        parse_data(rows, source)
