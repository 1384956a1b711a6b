"""A source node: one step per micro-batch over the parts of every registered query kind.

In Spark every micro-batch ``N`` runs two steps (ARCHITECTURE, "The Spark runtime"): each source
node (one per ``source`` key) applies the control rows the coordinator wrote in batch ``N−1``,
then its data points of batch ``N`` in ``(ts, seq)`` order, and emits rows for the coordinator
and the sinks and one heartbeat; the driver then runs the coordinator
(:class:`~tsmon.engine.hub.CoordinatorNode`) once on all of them.

:class:`SourceNode` is that step, a plain picklable object taking and returning rows of plain
dicts. It knows no query kind: control rows go to the part that takes their payload's
``type``, points to every part (:mod:`tsmon.kinds`). The node's time ``now_ms`` is the newest
timestamp it processed; control is applied at it, then the batch's points, then every part is
moved to ``now_ms``. A point older than its series' newest point is not applied (``stale``):
with registers, they store it late or make it a dead letter (``too_late``, ``duplicate``);
without, it is a dead letter ``too_late``, since nothing keeps it. One older than the node's time
but newer than its series' newest is applied at the node's time (``clamped``). Every data point
of a step is accepted or a dead letter: the heartbeat's ``received`` = ``accepted`` + the step's
``dead`` rows.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import Any, NamedTuple

import numpy as np

from tsmon import kinds
from tsmon.engine.deadletters import Reason
from tsmon.engine.guard import Point, any_rejected, dead_row, split_rejected
from tsmon.engine.settings import HostSettings
from tsmon.kinds import NodePart, Points

__all__ = ["SourceNode", "new_node", "parse_data"]

Row = dict[str, Any]


class Columns(NamedTuple):
    """A step's valid points in ``(ts, seq)`` order, as columns."""

    series: list[str]
    ts: np.ndarray  # int64 ms, valid instants (tsmon.engine.guard)
    value: np.ndarray  # float64

    @classmethod
    def of(cls, points: Sequence[Point]) -> Columns:
        return cls(
            [p[0] for p in points],
            np.array([p[1] for p in points], dtype=np.int64),
            np.array([p[2] for p in points], dtype=np.float64),
        )


_BEFORE_ALL = np.iinfo(np.int64).min  # older than every valid instant


def _is_int(x: object) -> bool:
    return type(x) is int or (isinstance(x, numbers.Integral) and not isinstance(x, bool))


def _is_number(x: object) -> bool:
    return type(x) is float or (isinstance(x, numbers.Real) and not isinstance(x, bool))


def parse_data(rows: Sequence[Mapping[str, Any]], source: str) -> list[tuple[str, int, float, int]]:
    """Validate data rows (a ``ValueError`` naming the first bad one); returns them as
    ``(series, ts, value, seq)`` in ``(ts, seq)`` order."""
    points = []
    for n, row in enumerate(rows):
        where = f"source {source!r}, data row {n}"
        if not isinstance(row, Mapping) or not {"series", "ts", "value", "seq"} <= set(row):
            raise ValueError(f"{where}: expected a dict with series, ts, value, seq; got {row!r}")
        series, ts, value, seq = row["series"], row["ts"], row["value"], row["seq"]
        if not isinstance(series, str):
            raise ValueError(f"{where}: series must be a str, got {series!r}")
        if not (_is_int(ts) and _is_int(seq)):
            raise ValueError(f"{where}: ts and seq must be ints (ms, order), got {ts!r}, {seq!r}")
        if not _is_number(value):
            raise ValueError(f"{where}: value of {series!r} must be a number, got {value!r}")
        if not math.isfinite(value):
            raise ValueError(
                f"{where}: value of {series!r} must be finite, got {value} at {ts} ms; "
                "reject it before the source node (dead letters)"
            )
        points.append((series, int(ts), float(value), int(seq)))
    return sorted(points, key=itemgetter(1, 3))


class SourceNode:
    """One source node: the node part of every registered kind, stepped once per batch.

    Examples
    --------
    >>> node = SourceNode("n1", HostSettings(period_ms=1_000, shrink=0.1))
    >>> shrink = {"type": "shrink", "object_id": "a", "width": 2.0, "ts_ms": 0, "seq": 1,
    ...           "adaptive": True}
    >>> out = node.step([{"seq": 1, "payload": shrink}],
    ...                 [{"series": "a", "ts": 5, "value": 1.0, "seq": 0},
    ...                  {"series": "a", "ts": 7, "value": 1.5, "seq": 1}])
    >>> [row["kind"] for row in out]
    ['msg', 'heartbeat']
    >>> out[-1]["payload"]
    {'now_ms': 7, 'received': 2, 'accepted': 2, 'points': 2, 'stale': 0, 'series': ['a']}
    """

    def __init__(self, source: str, settings: HostSettings) -> None:
        if not isinstance(source, str):
            raise TypeError(f"source must be a str, got {source!r}")
        self.source = source
        self.parts: dict[str, NodePart] = {
            p.name: p.node(settings, source) for p in kinds.PARTS if p.node is not None
        }
        self._by_type = {t: name for name, part in self.parts.items() for t in part.control_types}
        # every part tracks each series' current value as the registers do: the newest point;
        # under keep_first a repeated timestamp keeps the first value
        registers = settings.registers
        self.keep_first = registers is not None and registers.duplicates == "keep_first"
        self.registers = registers is not None  # they take stale points (late, or dead)
        self.max_future_ms = settings.max_future_ms
        self.newest_ts: dict[str, int] = {}  # series -> timestamp of its newest point
        self.now_ms: int | None = None
        self.points = 0  # points applied, all steps
        self.stale = 0  # points older than their series' newest: not applied, counted
        self.clamped = 0  # points older than the node's time: applied at the node's time

    def part(self, name: str) -> NodePart:
        """The node part of the kind part called ``name``."""
        return self.parts[name]

    def step(
        self,
        control: Sequence[Mapping[str, Any]],
        data: Sequence[Mapping[str, Any]],
        clock_ms: int | None = None,
    ) -> list[Row]:
        """Apply ``control`` rows (``{"seq", "payload"}``), then ``data`` rows (``{"series",
        "ts", "value", "seq"}``); return the parts' rows, then one ``{"kind": "heartbeat",
        "payload": {"now_ms", "received", "accepted", "points", "stale", "series", ...}}`` row:
        ``received`` data points, of which ``accepted`` were applied (``points``) or stored
        late by the registers, the others being this step's ``dead`` rows; ``stale`` those
        older than their series' newest; ``series`` those whose first point came in this
        step.

        Values beyond ``MAX_ABS_VALUE`` and, given ``clock_ms`` (the batch's processing time),
        points stamped more than the settings' ``max_future_ms`` after it are ``dead`` rows
        (:func:`tsmon.engine.guard.split_rejected`), not applied.

        All rows are validated first: a bad one raises ``ValueError`` and changes nothing.
        """
        items = self._parse_control(control)
        points, dead = split_rejected(parse_data(data, self.source), clock_ms, self.max_future_ms)
        return self._step(items, Columns.of(points), dead)

    def step_columns(
        self,
        control: Sequence[Mapping[str, Any]],
        series: Sequence[str],
        ts: np.ndarray,
        value: np.ndarray,
        seq: np.ndarray,
        clock_ms: int | None = None,
    ) -> list[Row]:
        """:meth:`step` over columns (the Spark host's entry): the data points as ``series``
        (str), ``ts`` and ``seq`` (int64), ``value`` (float64, finite), already in ``(ts,
        seq)`` order. Typed columns need no per-row checks: only the order and finiteness are
        checked, vectorized (a ``ValueError`` before anything changes); points :meth:`step`
        would reject are ``dead`` rows as there.

        >>> node = SourceNode("n1", HostSettings(period_ms=1_000, shrink=0.1))
        >>> out = node.step_columns([], ["a", "b"], np.array([5, 7]), np.array([1.0, 2.0]),
        ...                         np.array([0, 1]))
        >>> out[-1]["payload"]["series"]
        ['a', 'b']
        """
        items = self._parse_control(control)
        ts, value, seq = (np.asarray(c) for c in (ts, value, seq))
        if not len(series) == len(ts) == len(value) == len(seq):
            raise ValueError(
                f"source {self.source!r}: columns of unequal lengths "
                f"{[len(series), len(ts), len(value), len(seq)]}"
            )
        if ts.dtype.kind != "i" or seq.dtype.kind != "i":
            raise ValueError(f"source {self.source!r}: ts and seq must be int columns (ms, order)")
        later = (ts[1:] > ts[:-1]) | ((ts[1:] == ts[:-1]) & (seq[1:] >= seq[:-1]))
        if not later.all():
            raise ValueError(f"source {self.source!r}: data columns must be in (ts, seq) order")
        if not np.isfinite(value).all():
            raise ValueError(
                f"source {self.source!r}: values must be finite; reject them before the source "
                "node (dead letters)"
            )
        names = series.tolist() if isinstance(series, np.ndarray) else list(series)
        if not (
            any_rejected(ts, value, clock_ms, self.max_future_ms) or "" in names or None in names
        ):
            columns = Columns(
                names, ts.astype(np.int64, copy=False), value.astype(np.float64, copy=False)
            )
            return self._step(items, columns, [])
        points = list(zip(names, ts.tolist(), value.tolist(), seq.tolist(), strict=True))
        kept, dead = split_rejected(points, clock_ms, self.max_future_ms)
        return self._step(items, Columns.of(kept), dead)

    def _step(self, items: dict[str, list], points: Columns, dead: list[Row]) -> list[Row]:
        rows: list[Row] = []
        for name, part in self.parts.items():
            rows += part.control(items.get(name, []))
        return [*rows, *dead, *self._run(points, None, len(dead))]

    def advance(self, now_ms: int) -> list[Row]:
        """Move the node's time to ``now_ms`` without data (an event-time watermark: the host
        promises no point stamped before it); returns rows as :meth:`step` does."""
        if not _is_int(now_ms):
            raise ValueError(f"now_ms must be an int (ms), got {now_ms!r}")
        if self.now_ms is not None and now_ms < self.now_ms:
            raise ValueError(
                f"time of source {self.source!r} must not go back: "
                f"at {self.now_ms} ms, got {now_ms} ms"
            )
        return self._run(Columns.of([]), int(now_ms))

    def _parse_control(self, rows: Sequence[Mapping[str, Any]]) -> dict[str, list]:
        items: dict[str, list[tuple[int, Any]]] = {}
        for n, row in enumerate(rows):
            where = f"source {self.source!r}, control row {n}"
            if not isinstance(row, Mapping) or not _is_int(row.get("seq")) or "payload" not in row:
                raise ValueError(f"{where}: expected {{'seq': int, 'payload': dict}}, got {row!r}")
            payload = row["payload"]
            kind = payload.get("type") if isinstance(payload, Mapping) else None
            name = self._by_type.get(kind)  # type: ignore[arg-type]
            if name is None:
                raise ValueError(
                    f"{where}: control payload type must be one of {sorted(self._by_type)}, "
                    f"got {payload!r}"
                )
            parsed = self.parts[name].parse_control(payload, where)
            items.setdefault(name, []).append((int(row["seq"]), parsed))
        return items

    def _run(self, points: Columns, until_ms: int | None, rejected: int = 0) -> list[Row]:
        """Apply ``points`` (``rejected`` more were dead rows before them)."""
        rows: list[Row] = []
        if self.now_ms is None:
            start = int(points.ts[0]) if len(points.ts) else until_ms
            if start is None:  # no time yet to apply control at: parts hold it
                return [*self._outputs(), self._heartbeat(rejected, 0, 0, 0, [])]
            self.now_ms = start
        for part in self.parts.values():
            rows += part.begin(self.now_ms)
        batch, new = self._apply(points)
        if until_ms is not None:
            self.now_ms = max(self.now_ms, until_ms)
        if len(points.ts):
            for part in self.parts.values():
                rows += part.observe(batch)
        for part in self.parts.values():
            rows += part.advance(self.now_ms)
        applied = int(batch.applied.sum())
        stale = len(points.ts) - applied
        self.points += applied
        self.stale += stale
        outputs = self._outputs()
        if self.registers:  # their dead rows are the stale points they could not store
            late = stale - sum(r["kind"] == "dead" for r in outputs)
        else:
            late = 0
            outputs += self._too_late(batch)
        received = len(points.ts) + rejected
        return [*rows, *outputs, self._heartbeat(received, applied + late, applied, stale, new)]

    def _too_late(self, batch: Points) -> list[Row]:
        """The dead rows of the points not applied, when no registers can keep them."""
        return [
            dead_row(
                series,
                ts,
                value,
                Reason.TOO_LATE,
                f"point is older than the newest point of {series!r} (at "
                f"{self.newest_ts[series]} ms); without registers a node keeps only each "
                "series' newest point",
            )
            for series, ts, value, kept in zip(
                batch.series, batch.ts.tolist(), batch.value.tolist(), batch.applied, strict=True
            )
            if not kept
        ]

    def _apply(self, points: Columns) -> tuple[Points, list[str]]:
        """Which points apply (in order), and the node's time at each, vectorized over series
        codes. The points are in ts order, so before point ``i`` its series' newest is
        ``max(stored newest, ts of the series' previous point in the batch)``: a point applies
        when not older (keep_last; under keep_first, when newer), and the node's time at it is
        ``max(node's time before the batch, ts)``."""
        assert self.now_ms is not None
        series, ts, value = points
        applied = np.zeros(len(ts), dtype=bool)
        at_ms = np.zeros(len(ts), dtype=np.int64)
        new: list[str] = []
        codes, names = np.zeros(0, dtype=np.intp), []
        if len(ts):
            index: dict[str, int] = {}  # each series' code, first seen first (a dict beats
            # pd.factorize's fixed costs at a step's few hundred points)
            codes = np.array([index.setdefault(s, len(index)) for s in series], dtype=np.intp)
            names = list(index)
            get = self.newest_ts.get
            stored = [get(name, _BEFORE_ALL) for name in names]  # valid instants are later
            new = sorted(name for name, t in zip(names, stored, strict=True) if t == _BEFORE_ALL)
            newest = np.array(stored, dtype=np.int64)
            before = newest[codes]
            if self.keep_first:  # a repeated timestamp keeps the first value
                order = np.argsort(codes, kind="stable")
                same = np.zeros(len(ts), dtype=bool)
                same[order[1:]] = codes[order[1:]] == codes[order[:-1]]
                previous = np.full(len(ts), _BEFORE_ALL, dtype=np.int64)
                previous[order[1:]] = ts[order[:-1]]
                before = np.maximum(before, np.where(same, previous, _BEFORE_ALL))
                applied = ts > before
            else:
                applied = ts >= before
            start = self.now_ms
            if ts[0] >= start and applied.all():  # the usual batch: at_ms is ts
                at_ms = ts
            else:
                at_ms = np.where(applied, np.maximum(ts, start), 0)
                self.clamped += int((applied & (ts < start)).sum())  # late across batches
            if applied.any():  # ts is in order: its newest applied point is its last
                self.now_ms = max(start, int(ts[np.flatnonzero(applied)[-1]]))
            np.maximum.at(newest, codes, ts)  # non-applied points are not newer than it
            self.newest_ts.update(zip(names, newest.tolist(), strict=True))
        return Points(series, ts, value, applied, at_ms, names, codes), new

    def _outputs(self) -> list[Row]:
        return [row for part in self.parts.values() for row in part.outputs()]

    def _heartbeat(
        self, received: int, accepted: int, points: int, stale: int, series: list[str]
    ) -> Row:
        payload: dict[str, Any] = {
            "now_ms": self.now_ms,
            "received": received,
            "accepted": accepted,
            "points": points,
            "stale": stale,
            "series": series,
        }
        for part in self.parts.values():
            payload.update(part.heartbeat())
        return {"kind": "heartbeat", "payload": payload}


def new_node(key: str, settings: HostSettings) -> Any:
    """The node of ``key``: a node of the part that owns ``key`` (a standing query partition),
    else a source node with the job's settings and initial queries."""
    owner = kinds.reserved_part(key)
    if owner is not None and owner.reserved_node is not None:
        return owner.reserved_node(settings, key)
    return SourceNode(key, settings)
