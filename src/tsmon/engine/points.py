"""Reading a batch of ``(series, ts, value)`` into clean arrays, rejecting bad points.

Every point either comes out in the :class:`Batch` or goes to the dead letters with one reason,
so ``received == accepted + rejected`` always holds. Int/float arrays (the common case) are
checked without Python loops; object arrays and mixed lists are read item by item, so that one
bad item rejects only its own point and no item is silently converted (``True`` is no number,
``5`` in a list next to a string is still 5 ms).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from numbers import Real

import numpy as np
import pandas as pd

from tsmon.core.moments import MAX_ABS_VALUE, value_in_range
from tsmon.core.timestamps import (
    MAX_INSTANT_MS,
    MIN_INSTANT_MS,
    as_column,
    outside_instants,
    read_epoch_ms,
)
from tsmon.engine.deadletters import DeadLetters, Reason

NUMBER_TEXT = (
    r"[\x00-\x20]*([+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|(?i:inf|infinity))|(?i:nan))[\x00-\x20]*"
)
"""A value's text that is a number, whole, in-process and on Spark (``spark/points.py``: a
Java regex there, ASCII here): decimal with an exponent or not, infinity (signed) or NaN (not),
in any case, between the characters Spark's cast trims (0x00-0x20). Python's ``float`` and
Spark's cast each take more."""
_NUMBER = re.compile(NUMBER_TEXT, re.ASCII)


@dataclass
class Batch:
    """The accepted-so-far points of one ingest call, in arrival order."""

    seq: np.ndarray  # int64 arrival number, unique over the monitor's life
    series: np.ndarray  # object (str)
    ts_ms: np.ndarray  # int64
    values: np.ndarray  # float64, within +-MAX_ABS_VALUE
    received: int  # points in the call, the rejected ones included


def read_batch(
    series: object,
    ts: object,
    values: object,
    first_seq: int,
    dead: DeadLetters,
    latest_ms: int | None = None,
    ts_unit: str = "ms",
) -> Batch:
    """Validate a batch; rejected points go to ``dead`` and are left out of the result (those
    stamped after ``latest_ms`` as ``future_timestamp``). Epoch numbers in ``ts`` are in
    ``ts_unit`` (:data:`~tsmon.core.timestamps.EPOCH_UNITS`)."""
    names = np.asarray(series, dtype=object).reshape(-1)
    raw_ts = as_column(ts)
    raw_values = as_column(values)
    if not len(names) == len(raw_ts) == len(raw_values):
        raise ValueError(
            f"series, ts and value must have one entry per point, got lengths "
            f"{len(names)}, {len(raw_ts)}, {len(raw_values)}; pass arrays of equal length"
        )
    seq = np.arange(first_seq, first_seq + len(names), dtype=np.int64)
    ts_ms, ts_ok = read_epoch_ms(raw_ts, ts_unit)
    numbers, reasons = _read_values(raw_values)
    on_time = latest_ms is None or not len(ts_ms) or ts_ms.max() <= latest_ms
    instants = (ts_ms >= MIN_INSTANT_MS) & (ts_ms <= MAX_INSTANT_MS)  # as on Spark
    if on_time and ts_ok.all() and instants.all() and not reasons.any():  # all good
        return Batch(seq, names.copy(), ts_ms.copy(), numbers.copy(), len(names))
    # a point rejected for its time or value is bad_series first if it has no name, as on
    # Spark (the others the store rejects as bad_series: no loop over a good batch's names)
    late = np.zeros(len(names), bool) if latest_ms is None else ts_ms > latest_ms
    doubtful = np.flatnonzero(~ts_ok | ~instants | (reasons != 0) | late)
    why = [(i, bad_series(names[i])) for i in doubtful.tolist()]
    unnamed = np.array([i for i, w in why if w is not None], dtype=np.int64)
    stamps = np.where(ts_ok[unnamed], ts_ms[unnamed].astype(object), None)  # None: unread
    rows = (seq[unnamed], names[unnamed], stamps, raw_values[unnamed])
    dead.add(*rows, Reason.BAD_SERIES, [w for _, w in why if w is not None])
    bad_ts = ~ts_ok
    bad_ts[unnamed] = False
    ts_ok[unnamed] = False  # then no other reason: ts_ok gates them all
    dead.add(
        seq[bad_ts],
        names[bad_ts],
        np.full(bad_ts.sum(), None),
        raw_values[bad_ts],
        Reason.BAD_TIMESTAMP,
        [UNREADABLE_TIMESTAMP.format(raw=repr(t), unit=ts_unit) for t in raw_ts[bad_ts]],
    )
    outside = ts_ok & ~instants  # read, but no instant: a bad timestamp that keeps its ms
    rows = (seq[outside], names[outside], ts_ms[outside], raw_values[outside])
    dead.add(*rows, Reason.BAD_TIMESTAMP, [outside_instants(t) for t in ts_ms[outside].tolist()])
    ts_ok &= instants
    for reason in _VALUE_REASONS:  # a bad timestamp is the one reason of its point
        hit = ts_ok & (reasons == _CODE[reason.value])
        dead.add(
            seq[hit],
            names[hit],
            ts_ms[hit],
            raw_values[hit],
            reason,
            [BAD_VALUE.format(raw=repr(v), hint=VALUE_HINTS[reason]) for v in raw_values[hit]],
        )
    keep = ts_ok & (reasons == 0)
    if latest_ms is not None:  # last, as a source node checks the points Spark read well
        ahead = keep & (ts_ms > latest_ms)
        detail = f"stamped after {latest_ms} ms (the clock + max_future)"
        rows = (seq[ahead], names[ahead], ts_ms[ahead], raw_values[ahead])
        dead.add(*rows, Reason.FUTURE_TIMESTAMP, detail)
        keep &= ~ahead
    return Batch(seq[keep], names[keep], ts_ms[keep], numbers[keep], len(names))


def bad_series(name: object) -> str | None:
    """Why ``name`` cannot be a series name (a ``bad_series`` dead letter's detail), or None."""
    return None if isinstance(name, str) and name else BAD_SERIES.format(raw=repr(name))


BAD_SERIES = "series name {raw} is not a non-empty string"
UNREADABLE_TIMESTAMP = "cannot read timestamp {raw}; pass epoch {unit} or ISO-8601"
BAD_VALUE = "value {raw} is {hint}"
"""The details of the dead letters :func:`read_batch` gives (``raw``: the ``repr`` of the
item; ``hint``: of :data:`VALUE_HINTS`), filled in SQL on Spark too (``spark/points.py``)."""


_VALUE_REASONS = (
    Reason.MISSING,
    Reason.NOT_NUMERIC,
    Reason.NAN,
    Reason.INFINITE,
    Reason.VALUE_OUT_OF_RANGE,
)
_CODE = {"": 0} | {r.value: i + 1 for i, r in enumerate(_VALUE_REASONS)}  # small ints, no strings
VALUE_HINTS = {
    Reason.MISSING: "missing; send a finite number",
    Reason.NOT_NUMERIC: "not a number; send a finite number",
    Reason.NAN: "NaN; send a finite number or leave the point out",
    Reason.INFINITE: "infinite; send a finite number",
    Reason.VALUE_OUT_OF_RANGE: f"beyond +-{MAX_ABS_VALUE:g}, where sums overflow; rescale it",
}
"""What is wrong with a value, by the reason it is rejected for (:data:`BAD_VALUE`)."""


def _read_values(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Float values and the rejection reason code of each point (0 when the value is good).

    Int and float arrays convert at once; anything else (object, str or bool arrays) is read
    item by item with :func:`_read_value`. NaN and infinities are then classified for both.
    """
    reasons = np.zeros(len(raw), dtype=np.uint8)
    if raw.dtype.kind in "fiu":
        numbers = raw.astype(np.float64, copy=False)
    else:
        numbers = np.empty(len(raw), dtype=np.float64)
        for i, item in enumerate(raw.tolist()):  # tolist: bool_ arrays give Python bools
            numbers[i], reason = _read_value(item)
            reasons[i] = _CODE[reason]
    in_range = value_in_range(numbers)
    if not in_range.all():
        good_so_far = reasons == 0
        reasons[good_so_far & np.isnan(numbers)] = _CODE[Reason.NAN.value]
        reasons[good_so_far & np.isinf(numbers)] = _CODE[Reason.INFINITE.value]
        too_large = good_so_far & np.isfinite(numbers) & ~in_range
        reasons[too_large] = _CODE[Reason.VALUE_OUT_OF_RANGE.value]
    return numbers, reasons


_TRIMMED = "".join(map(chr, range(0x21)))
"""What Spark's cast to double trims from text (Java's ``String.trim``: 0x00-0x20); Python's
``float`` trims only the whitespace among them."""


def _read_value(item: object) -> tuple[float, str]:
    """One value as a float, or NaN and why it is not a number.

    Bools are not numbers (``True`` is not 1.0); numeric strings such as ``" 2.5 "``,
    ``"nan"`` or ``"-inf"`` are read as numbers, so NaN and infinities are reported as such.
    Text is a number when it is one by :data:`NUMBER_TEXT`, as on Spark: not the digit
    separators (``"1_000"``), digits other than ASCII (``"١٢"``, ``"５"``) or a signed NaN
    that Python's ``float`` takes, nor Java's ``"1d"`` or ``"0x1p3"`` that Spark's cast takes;
    and with control characters around it (``"\\x015"``), as Spark's cast reads it.
    """
    if item is None or item is pd.NA:
        return np.nan, Reason.MISSING.value
    if isinstance(item, (bool, np.bool_)) or not isinstance(item, (Real, Decimal, str)):
        return np.nan, Reason.NOT_NUMERIC.value
    if isinstance(item, str) and _NUMBER.fullmatch(item) is None:
        return np.nan, Reason.NOT_NUMERIC.value
    try:
        return float(item.strip(_TRIMMED) if isinstance(item, str) else item), ""
    except OverflowError:  # an int too large for a float
        return np.inf, ""
    except ValueError:  # a non-numeric string
        return np.nan, Reason.NOT_NUMERIC.value
