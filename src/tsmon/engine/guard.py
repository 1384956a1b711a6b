"""What keeps one bad input from stopping a job: limits on points, and quarantine.

- **rejected at a node**: a timestamp outside the supported instants is a dead letter
  ``bad_timestamp``, a value beyond ``MAX_ABS_VALUE`` ``value_out_of_range`` (Spark's input
  stage rejects both first); a point stamped more than
  ``max_future_ms`` after the batch's clock (its processing time: Spark's batch timestamp,
  fixed in the offset log so a replay sees the same; the caller's ``clock_ms`` in-process) is
  a dead letter ``future_timestamp`` (at the node, on Spark as in-process). The clock, not
  event time, is the reference: before the first point a job has no event time, and a source
  silent for days must not reject its own return (docs/time.md).
- **quarantine**: a step that raises for an unforeseen reason is retried from the state before
  it; the rows it cannot take go to the dead letters as ``quarantined`` with the error text,
  and the job goes on (:func:`node_step`, :func:`coordinator_step`). A node keeps its control
  rows when they alone step cleanly; the coordinator keeps the rows of every source whose rows
  step cleanly together. The state before the step comes from the host: on Spark the stored
  state, in-process a :class:`~tsmon.engine.journal.Journal` (a snapshot now and then and the
  inputs of the clean steps since, replayed).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tsmon.core.moments import MAX_ABS_VALUE
from tsmon.core.timestamps import MAX_INSTANT_MS, MIN_INSTANT_MS, outside_instants
from tsmon.engine.deadletters import Reason

__all__ = [
    "Quarantine",
    "RowCounts",
    "any_rejected",
    "coordinator_step",
    "dead_row",
    "future_limit",
    "node_step",
    "row_counts",
    "split_rejected",
]

Row = dict[str, Any]
Point = tuple[str, int, float, int]


def future_limit(clock_ms: int | None, max_future_ms: int | None) -> int | None:
    """The newest timestamp a batch at ``clock_ms`` takes (None: no limit)."""
    if clock_ms is None or max_future_ms is None:
        return None
    return int(clock_ms) + int(max_future_ms)


def dead_row(series: Any, ts_ms: Any, value: Any, reason: Reason, detail: str) -> Row:
    """A node's ``dead`` output row (JSON-able: odd values are shown by ``repr``)."""
    ok_value = isinstance(value, int | float) and not isinstance(value, bool)
    if ok_value and not math.isfinite(value):
        ok_value = False
    return {
        "kind": "dead",
        "payload": {
            "series": series if isinstance(series, str) else repr(series),
            "ts_ms": ts_ms if _is_int64(ts_ms) else None,
            "value": value if ok_value or value is None else repr(value),
            "reason": reason.value,
            "detail": detail,
        },
    }


def _is_int64(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and -(2**63) <= x < 2**63


def split_rejected(
    points: list[Point], clock_ms: int | None, max_future_ms: int | None
) -> tuple[list[Point], list[Row]]:
    """The points a node takes, and the ``dead`` rows of the others, as Spark's input stage
    rejects them: an empty series name (``bad_series``), timestamps outside the supported
    instants (``bad_timestamp``, years 1677-2262), values beyond ``MAX_ABS_VALUE``
    (``value_out_of_range``) and points stamped after :func:`future_limit`
    (``future_timestamp``)."""
    limit = future_limit(clock_ms, max_future_ms)
    kept: list[Point] = []
    dead: list[Row] = []
    for point in points:
        series, ts, value, _ = point
        if not series:
            dead.append(dead_row(series, ts, value, Reason.BAD_SERIES, "empty series name"))
        elif not MIN_INSTANT_MS <= ts <= MAX_INSTANT_MS:
            dead.append(dead_row(series, ts, value, Reason.BAD_TIMESTAMP, outside_instants(ts)))
        elif abs(value) > MAX_ABS_VALUE:
            detail = f"value {value!r} is beyond +-{MAX_ABS_VALUE:g}, where sums overflow"
            dead.append(dead_row(series, ts, value, Reason.VALUE_OUT_OF_RANGE, detail))
        elif limit is not None and ts > limit:
            detail = (
                f"stamped {ts - limit + max_future_ms} ms after the batch's clock {clock_ms} ms; "
                f"max_future is {max_future_ms} ms"
            )
            dead.append(dead_row(series, ts, value, Reason.FUTURE_TIMESTAMP, detail))
        else:
            kept.append(point)
    return kept, dead


def any_rejected(
    ts: np.ndarray, value: np.ndarray, clock_ms: int | None, max_future_ms: int | None
) -> bool:
    """Whether :func:`split_rejected` would reject any of these points (vectorized: most
    batches have none, and then need no loop)."""
    if not len(ts):
        return False
    limit = future_limit(clock_ms, max_future_ms)
    newest = MAX_INSTANT_MS if limit is None else min(limit, MAX_INSTANT_MS)
    return bool(
        ts.min() < MIN_INSTANT_MS or ts.max() > newest or np.abs(value).max() > MAX_ABS_VALUE
    )


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:500]


def node_step(
    node: Any,
    restore: Callable[[], Any],
    control: Sequence[Mapping[str, Any]],
    data: Any,
    step: Callable[[Any, Sequence[Mapping[str, Any]], Any], list[Row]] | None = None,
    rows_of: Callable[[Any], Iterable[Any]] = iter,
    **step_args: Any,
) -> tuple[Any, list[Row], str | None]:
    """``step(node, control, data)`` (by default ``node.step(control, data, **step_args)``),
    quarantining what makes it raise; ``data`` is None (no data) or ``rows_of(data)`` gives
    its data rows (mappings; those of a quarantined step become dead letters).

    ``restore()`` gives the node as it was before the step (a host reloads its stored state).
    On an error the step is retried from there with the control rows only; if that raises
    too, the control rows are quarantined as well and the node is left as it was. Returns the
    node to keep, its rows (the quarantined ones as ``dead`` rows) and the error (None if
    none).
    """

    def by_rows(n: Any, c: Sequence[Mapping[str, Any]], d: Any) -> list[Row]:
        return n.step(c, [] if d is None else d, **step_args)

    call = step or by_rows
    try:
        return node, call(node, control, data), None
    except Exception as exc:  # unforeseen by definition: quarantine, go on
        error = _error(exc)
    node = restore()
    rows = [
        dead_row(d.get("series"), d.get("ts"), d.get("value"), Reason.QUARANTINED, error)
        if isinstance(d, Mapping)
        else dead_row(None, None, None, Reason.QUARANTINED, f"{error} (row {d!r})")
        for d in (() if data is None else rows_of(data))
    ]
    try:
        return node, [*call(node, control, None), *rows], error
    except Exception as exc:
        lost = [
            dead_row(None, None, None, Reason.QUARANTINED, f"{_error(exc)} (control {c!r})")
            for c in control
        ]
        return restore(), [*rows, *lost], error


@dataclass
class Quarantine:
    """What a coordinator step left out: the rows of the sources it quarantined and why."""

    error: str | None = None
    sources: list[str] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)  # the left-out node rows, as dead letters


@dataclass(frozen=True)
class RowCounts:
    """A batch's input rows and what became of them: ``input_rows = accepted + dead_letters``.

    ``coordinator_quarantined`` counts apart the node rows (updates, heartbeats, events, ...) a
    coordinator step left out (:func:`coordinator_step`): they are not input rows, and the
    points behind them were accepted at their node (stored, its watch queries ran), only their
    messages did not reach the coordinator. They are dead letters ``quarantined`` too, so a
    batch's dead-letter rows are ``dead_letters + coordinator_quarantined``.
    """

    input_rows: int
    accepted: int
    dead_letters: int
    coordinator_quarantined: int


def row_counts(
    node_rows: Iterable[Mapping[str, Any]], quarantine: Quarantine, unreadable: int = 0
) -> RowCounts:
    """The :class:`RowCounts` of a batch from its nodes' rows (a heartbeat's ``received`` =
    ``accepted`` + the node's ``dead`` rows; the data rows of a quarantined node step are
    ``dead`` rows and no heartbeat counts them), what the coordinator step left out, and the
    input rows that could not be read (on Spark, dead letters before any node)."""
    received = accepted = dead = quarantined = 0
    for row in node_rows:
        if row["kind"] == "heartbeat":
            received += row["payload"]["received"]
            accepted += row["payload"]["accepted"]
        elif row["kind"] == "dead":
            dead += 1
            quarantined += row["payload"]["reason"] == Reason.QUARANTINED.value
    return RowCounts(
        received + quarantined + unreadable, accepted, dead + unreadable, len(quarantine.rows)
    )


def coordinator_step(
    node: Any,
    batch_id: int,
    rows: Sequence[Mapping[str, Any]],
    restore: Callable[[], Any] | None = None,
) -> tuple[Any, dict[str, list[Row]], Quarantine]:
    """``node.step(batch_id, rows)`` on a :class:`~tsmon.engine.hub.CoordinatorNode`, leaving
    out the rows of any source that makes it raise.

    ``restore()`` gives the node as it was before the step (by default a snapshot taken before
    it). On an error, each source's rows are tried in turn (sorted by source) on a copy of
    that state, added to those that stepped cleanly; the step then runs on the clean ones.
    Returns the node to keep, the control and what was left out.
    """
    before = node.snapshot() if restore is None else None
    try:
        return node, node.step(batch_id, rows), Quarantine()
    except Exception as exc:  # unforeseen by definition: quarantine, go on
        error = _error(exc)
    if before is None:
        assert restore is not None
        before = restore().snapshot()
    by_source: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        source = row.get("source") if isinstance(row, Mapping) else None
        by_source.setdefault(source if isinstance(source, str) else repr(source), []).append(row)
    kept: list[Mapping[str, Any]] = []
    left_out: list[str] = []
    for source in sorted(by_source):
        trial = _copy(node, before)
        try:
            trial.step(batch_id, [*kept, *by_source[source]])
            kept += by_source[source]
        except Exception:
            left_out.append(source)
    node = _copy(node, before)
    try:
        control = node.step(batch_id, kept)
    except Exception:  # fails without any row: skip the batch, keep the state
        node, control = _copy(node, before), {}
        left_out, kept = sorted(by_source), []
    dead = [
        {**dead_row(None, None, None, Reason.QUARANTINED, f"{error} (row {r!r})"), "source": s}
        for s in left_out
        for r in by_source[s]
    ]
    return node, control, Quarantine(error, left_out, dead)


def _copy(node: Any, snapshot: bytes) -> Any:
    fresh = type(node).__new__(type(node))
    fresh.restore(snapshot)
    return fresh
