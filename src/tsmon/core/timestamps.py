"""Timestamps and instants: reading them into int64 epoch milliseconds, and writing them.

Integers are epoch milliseconds; strings, ``datetime`` and ``datetime64`` values are instants
(naive = UTC). An instant read from text lies within pandas' ``Timestamp`` range,
:data:`MIN_INSTANT_MS` (1677-09-21T00:12:43.146Z) to :data:`MAX_INSTANT_MS`
(2262-04-11T23:47:16.854Z).
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta, timezone

import numpy as np
import pandas as pd

from tsmon.core.units import UnitError, abbreviate

#: The earliest and latest instants tsmon reads from text, in epoch milliseconds: the whole
#: milliseconds inside pandas' ``Timestamp`` range (nanoseconds in an int64).
MIN_INSTANT_MS: int = -(-pd.Timestamp.min.value // 1_000_000)
MAX_INSTANT_MS: int = pd.Timestamp.max.value // 1_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def outside_instants(ts_ms: int) -> str:
    """Why a point stamped ``ts_ms`` is a ``bad_timestamp`` though it was read (the detail of
    its dead letter, in-process and at a source node alike)."""
    return f"timestamp {ts_ms} ms is outside {MIN_INSTANT_MS} .. {MAX_INSTANT_MS} ms"


def as_column(data: object) -> np.ndarray:
    """One input column (array, pandas object, list, scalar) as a flat numpy array.

    Arrays pass through without a copy. A list or tuple becomes an ``int64`` or ``float64``
    array only when every item is a plain ``int`` or every item a plain ``float``; anything else
    becomes an ``object`` array of the items as given, because ``np.asarray`` would silently turn
    ``[True, 2.0]`` into ``[1.0, 2.0]`` and ``[5, "x"]`` into ``["5", "x"]``.

    Examples
    --------
    >>> as_column([1, 2]).dtype, as_column([True, 2.0]).dtype, as_column([5, "x"]).tolist()
    (dtype('int64'), dtype('O'), [5, 'x'])
    """
    if isinstance(data, np.ndarray):
        return data.reshape(-1)
    if not isinstance(data, (list, tuple)):
        return np.asarray(data).reshape(-1)
    types = set(map(type, data))
    if types == {int}:
        try:
            return np.asarray(data, dtype=np.int64)
        except OverflowError:  # an int beyond int64: keep it, the reader rejects it alone
            pass
    elif types == {float}:
        return np.asarray(data, dtype=np.float64)
    column = np.empty(len(data), dtype=object)
    column[:] = data
    return column


def to_epoch_ms(ts: object) -> np.ndarray:
    """Convert timestamps to int64 epoch milliseconds, raising if any cannot be read.

    See :func:`read_epoch_ms` for what is accepted.

    Examples
    --------
    >>> to_epoch_ms(["2024-01-01T00:00:00Z", "2024-01-01T00:00:01Z"]).tolist()
    [1704067200000, 1704067201000]
    >>> to_epoch_ms([5, 6]).tolist()
    [5, 6]
    """
    millis, ok = read_epoch_ms(ts)
    if not ok.all():
        bad = as_column(ts)[~ok]
        raise UnitError(
            f"cannot read {len(bad)} timestamp(s), first {bad[0]!r}; "
            "pass epoch ms or ISO-8601 strings"
        )
    return millis


def read_epoch_ms(ts: object, unit: str = "ms") -> tuple[np.ndarray, np.ndarray]:
    """Convert timestamps to int64 epoch milliseconds, with a mask of the ones that were read.

    Integers (Python or numpy, or strings of digits) are epoch numbers in ``unit`` (one of
    :data:`EPOCH_UNITS`; :func:`epoch_to_ms`); floats are too when whole; strings,
    ``datetime`` and ``datetime64`` values are instants (naive = UTC), whatever the unit.
    Missing (None, NaN, NaT), bools, fractional floats and unreadable strings are not read:
    their mask entry is False and their value 0. Integer, float and datetime64 arrays are
    converted without a Python loop; object arrays and mixed lists are read item by item.

    Examples
    --------
    >>> millis, ok = read_epoch_ms([5, "1970-01-01T00:00:01Z", None, "not a time", 2.0])
    >>> millis.tolist(), ok.tolist()
    ([5, 1000, 0, 0, 2], [True, True, False, False, True])
    >>> read_epoch_ms(["1704067200", "2024-01-01T00:00:00Z"], unit="s")[0].tolist()
    [1704067200000, 1704067200000]
    """
    if isinstance(ts, (pd.Series, pd.Index)) and isinstance(ts.dtype, pd.DatetimeTZDtype):
        ts = ts.to_numpy(dtype="datetime64[ns]")  # UTC instants
    times, per = epoch_unit(unit)
    arr = as_column(ts)
    kind = arr.dtype.kind
    if kind == "i" or (kind == "u" and arr.dtype.itemsize < 8):
        numbers = arr.astype(np.int64, copy=False)
        return epoch_to_ms(numbers, np.ones(len(arr), dtype=bool), unit)
    if kind == "f":
        ok = np.isfinite(arr) & (arr == np.floor(arr)) & (np.abs(arr) < 2.0**63)
        return epoch_to_ms(np.where(ok, arr, 0).astype(np.int64), ok, unit)
    if kind == "M":
        ok = ~np.isnat(arr)
        return np.where(ok, arr.astype("datetime64[ms]").astype(np.int64), 0), ok
    millis, ok, numbers = _read_objects(arr.astype(object))
    if (times, per) == (1, 1) or not numbers.any():
        return millis, ok
    scaled, read = epoch_to_ms(millis[numbers], ok[numbers], unit)
    millis[numbers], ok[numbers] = scaled, read
    return millis, ok


EPOCH_UNITS: dict[str, tuple[int, int]] = {
    "s": (1000, 1),
    "ms": (1, 1),
    "us": (1, 1000),
    "ns": (1, 1_000_000),
}
"""The units an epoch number can be in, each as ``(times, per)``: ``n`` of it is
``floor(n × times / per)`` milliseconds (:func:`epoch_to_ms`; on Spark
``tsmon.spark.points``)."""


def epoch_unit(unit: str) -> tuple[int, int]:
    """``(times, per)`` of ``unit`` (:data:`EPOCH_UNITS`), or a :class:`UnitError` naming them."""
    try:
        return EPOCH_UNITS[unit]
    except (KeyError, TypeError):
        raise UnitError(
            f"unknown epoch unit {unit!r}; use one of {', '.join(EPOCH_UNITS)}"
        ) from None


def epoch_to_ms(numbers: np.ndarray, ok: np.ndarray, unit: str) -> tuple[np.ndarray, np.ndarray]:
    """Epoch numbers in ``unit`` (int64; those where ``ok``) as epoch milliseconds, and the
    mask of those read: seconds times 1,000, unread beyond int64 (as Spark's
    ``try_multiply``); micro- and nanoseconds floored to the millisecond (toward the past,
    before 1970 too).

    >>> epoch_to_ms(np.array([1, -1]), np.array([True, True]), "us")[0].tolist()
    [0, -1]
    """
    times, per = epoch_unit(unit)
    if times != 1:
        limit = _INT64.max // times  # not np.abs: the least int64 has no absolute value
        fits = (numbers >= -limit) & (numbers <= limit)
        return np.where(fits, numbers, 0) * times, ok & fits
    if per != 1:
        return np.floor_divide(numbers, per), ok
    return numbers, ok


_INT64 = np.iinfo(np.int64)

#: The characters Spark trims from text it casts to a number or an instant (``UTF8String``'s
#: ``trimAll``: the bytes 0x00-0x20 and 0x7f), not the Unicode spaces of Python's ``\s``.
TRIMMED = "".join(map(chr, range(0x21))) + "\x7f"
#: Text read as epoch ms, whole, in the syntax of Python's and Java's regexes alike: ASCII
#: digits (Java's ``\d``) and a sign, between :data:`TRIMMED` characters.
EPOCH_MS_TEXT = r"[\x00-\x20\x7f]*[+-]?[0-9]+[\x00-\x20\x7f]*"
_INT_TEXT = re.compile(EPOCH_MS_TEXT)


def _read_objects(items: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`read_epoch_ms` of an object array in ms: numbers one by one, instants through
    pandas; with the mask of the items read as epoch numbers (not instants)."""
    millis = np.zeros(len(items), dtype=np.int64)
    ok = np.zeros(len(items), dtype=bool)
    numbers = np.zeros(len(items), dtype=bool)
    instants = np.zeros(len(items), dtype=bool)
    for i, item in enumerate(items):
        if item is None or isinstance(item, (bool, np.bool_)):
            continue
        if isinstance(item, str) and _INT_TEXT.fullmatch(item):
            try:
                item = int(item.strip(TRIMMED))  # int() strips other characters than Spark
            except ValueError:  # more digits than int() reads: far beyond int64 anyway
                continue
        if isinstance(item, (int, np.integer, float, np.floating)):
            number = _whole_ms(item)
            if number is not None:
                millis[i], ok[i], numbers[i] = number, True, True
        else:
            instants[i] = True
    if instants.any():
        stamps = pd.DatetimeIndex(
            pd.to_datetime(
                pd.Series(items[instants], dtype=object).map(_trimmed),  # as Spark trims
                utc=True,
                format="mixed",
                errors="coerce",
            )
        )
        read = ~stamps.isna()
        millis[instants] = np.where(read, stamps.as_unit("ns").asi8 // 1_000_000, 0)
        ok[instants] = read
    return millis, ok, numbers


def _trimmed(item: object) -> object:
    return item.strip(TRIMMED) if isinstance(item, str) else item


def _whole_ms(number: float | int | np.number) -> int | None:
    """A number of epoch milliseconds as an int, or None when not whole or beyond int64."""
    if isinstance(number, (float, np.floating)):
        if not float(number).is_integer():  # also NaN and infinities
            return None
        number = int(number)
    number = int(number)
    return number if _INT64.min <= number <= _INT64.max else None


def parse_instant_ms(text: str) -> int:
    """Read one ISO-8601 instant (naive = UTC) into epoch milliseconds.

    The instant must lie within :data:`MIN_INSTANT_MS` .. :data:`MAX_INSTANT_MS`
    (1677-09-21T00:12:43.146Z .. 2262-04-11T23:47:16.854Z).

    Examples
    --------
    >>> parse_instant_ms("2024-01-01T00:00:00Z")
    1704067200000
    >>> try:
    ...     parse_instant_ms("3000-01-01")
    ... except UnitError as exc:
    ...     print(exc)
    instant '3000-01-01' is outside the supported range
    1677-09-21T00:12:43.146Z .. 2262-04-11T23:47:16.854Z
    """
    out_of_range = UnitError(
        f"instant {abbreviate(text.strip())!r} is outside the supported range "
        f"{format_instant_ms(MIN_INSTANT_MS)} .. {format_instant_ms(MAX_INSTANT_MS)}"
    )
    try:
        millis = int(to_epoch_ms([text])[0])
    except UnitError as exc:
        millis = _iso_ms(text)
        if millis is not None and not MIN_INSTANT_MS <= millis <= MAX_INSTANT_MS:
            raise out_of_range from exc
        raise UnitError(
            f"cannot read instant {abbreviate(text)!r}; write ISO-8601, e.g. 2024-01-01T00:00:00Z"
        ) from exc
    if not MIN_INSTANT_MS <= millis <= MAX_INSTANT_MS:  # digits are read as epoch ms
        raise out_of_range
    return millis


def _iso_ms(text: str) -> int | None:
    """Epoch ms of an ISO-8601 text by the standard library (any year 1-9999), or None."""
    text = text.strip()
    if text[-1:] in ("Z", "z"):  # Python 3.10's fromisoformat does not read "Z"
        text = text[:-1] + "+00:00"
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        return None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=timezone.utc)
    return (stamp - _EPOCH) // timedelta(milliseconds=1)


def format_instant_ms(millis: int) -> str:
    """Write epoch milliseconds as ISO-8601 UTC with ``Z``; milliseconds only when not zero.

    The inverse of :func:`parse_instant_ms` over its range.

    Examples
    --------
    >>> format_instant_ms(1_704_067_200_000), format_instant_ms(-1)
    ('2024-01-01T00:00:00Z', '1969-12-31T23:59:59.999Z')
    """
    if not MIN_INSTANT_MS <= millis <= MAX_INSTANT_MS:
        raise UnitError(
            f"instant {millis} ms is outside the supported range {MIN_INSTANT_MS} .. "
            f"{MAX_INSTANT_MS} ms; pass an instant between 1677 and 2262"
        )
    stamp = _EPOCH + timedelta(milliseconds=millis)
    fraction = f".{millis % 1000:03d}" if millis % 1000 else ""
    return f"{stamp:%Y-%m-%dT%H:%M:%S}{fraction}Z"


def format_instant_and_ms(millis: float | None) -> str:
    """Epoch milliseconds for people and for machines: the UTC instant, then the exact ms
    (``never`` for None or a non-finite time, such as a deadline that is not set).

    Examples
    --------
    >>> format_instant_and_ms(1_704_067_200_119), format_instant_and_ms(float("inf"))
    ('2024-01-01T00:00:00.119Z (1704067200119 ms)', 'never')
    """
    if millis is None or not math.isfinite(millis):
        return "never"
    return f"{format_instant_ms(int(millis))} ({int(millis)} ms)"
