"""Timestamps and instants: reading them into int64 epoch milliseconds, and writing them.

Numbers are epoch milliseconds (or another unit, :data:`EPOCH_UNITS`): integers exactly, a
decimal text or a non-whole float as a decimal floored to the ms (:func:`decimal_ms`); strings,
``datetime`` and ``datetime64`` values are instants (naive = UTC). An instant read from text
lies within pandas' ``Timestamp`` range, :data:`MIN_INSTANT_MS` (1677-09-21T00:12:43.146Z) to
:data:`MAX_INSTANT_MS` (2262-04-11T23:47:16.854Z).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from decimal import ROUND_HALF_UP, Context, Decimal

import numpy as np
import pandas as pd

from tsmon.core.units import UnitError, abbreviate

#: The earliest and latest instants tsmon reads from text, in epoch milliseconds: the whole
#: milliseconds inside pandas' ``Timestamp`` range (nanoseconds in an int64).
MIN_INSTANT_MS: int = -(-pd.Timestamp.min.value // 1_000_000)
MAX_INSTANT_MS: int = pd.Timestamp.max.value // 1_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


OUTSIDE_INSTANTS = "timestamp {raw} ms is outside " + f"{MIN_INSTANT_MS} .. {MAX_INSTANT_MS} ms"
"""The detail of a ``bad_timestamp`` dead letter whose epoch ms (``raw``) were read but are no
instant: in-process, at a source node and on Spark (``spark/points.py``) alike."""


def outside_instants(ts_ms: int) -> str:
    """Why a point stamped ``ts_ms`` is a ``bad_timestamp`` though it was read."""
    return OUTSIDE_INSTANTS.format(raw=ts_ms)


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
    :data:`EPOCH_UNITS`; :func:`epoch_to_ms`); floats are too when whole; decimal text with a
    point or an exponent (:data:`EPOCH_NUMBER_TEXT`) and the shortest text of a non-whole
    float (:func:`float_texts`: ``1.001`` is 1.001, not its binary value) are epoch numbers
    floored to the ms (:func:`decimal_ms`); other strings, ``datetime`` and ``datetime64``
    values are instants (naive = UTC), whatever the unit. Missing (None, NaN, NaT), bools,
    infinities and unreadable strings are not read: their mask entry is False and their value
    0. Integer, whole float and datetime64 arrays are converted without a Python loop (a
    non-whole float costs a text and a ``Decimal``); object arrays and mixed lists are read
    item by item.

    Examples
    --------
    >>> millis, ok = read_epoch_ms([5, "1970-01-01T00:00:01Z", None, "not a time", 2.0])
    >>> millis.tolist(), ok.tolist()
    ([5, 1000, 0, 0, 2], [True, True, False, False, True])
    >>> read_epoch_ms(["1704067200", "2024-01-01T00:00:00Z"], unit="s")[0].tolist()
    [1704067200000, 1704067200000]
    >>> read_epoch_ms(np.array([1704067200.5, 1.001, -0.0005]), unit="s")[0].tolist()
    [1704067200500, 1001, -1]
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
        whole = arr == np.floor(arr)  # False for NaN, True for infinities
        ok = whole & (np.abs(arr) < 2.0**63)
        millis, ok = epoch_to_ms(np.where(ok, arr, 0).astype(np.int64), ok, unit)
        if not whole.all():  # NaN or fractions: a text and a Decimal for each fraction
            fraction = np.isfinite(arr) & ~whole
            millis[fraction], ok[fraction] = decimals_ms(float_texts(arr[fraction]), unit)
        return millis, ok
    if kind == "M":
        ok = ~np.isnat(arr)
        return np.where(ok, arr.astype("datetime64[ms]").astype(np.int64), 0), ok
    millis, ok, numbers = _read_objects(arr.astype(object), unit)
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
``floor(n × times / per)`` milliseconds (:func:`epoch_to_ms`, :func:`decimal_ms`; on Spark
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
#: Text read as a decimal epoch number (:func:`decimal_ms`), in Python's and Java's syntax
#: alike: digits with a point or not (``1.5``, ``.5``, ``5.``), an exponent of up to 4 digits
#: or not, a sign, between :data:`TRIMMED` characters (digits alone match too; they are read
#: as :data:`EPOCH_MS_TEXT` first). No ``inf``/``nan``; a longer exponent is no number (Java's
#: ``BigDecimal`` takes up to 2**31, and Spark would round ``1e-999999999`` for long).
EPOCH_NUMBER_TEXT = (
    r"[\x00-\x20\x7f]*[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,4})?[\x00-\x20\x7f]*"
)
_DECIMAL_TEXT = re.compile(EPOCH_NUMBER_TEXT)
_DECIMAL_CHARS = TRIMMED + "0123456789.eE+-"  # all a decimal has: a cheap test before the regex
#: Decimal places an epoch number's text is rounded to before the unit applies (half up):
#: Spark's ``try_cast(text AS DECIMAL(38, 9))``. Nine keep nanoseconds of a second; the 29
#: integer digits left hold any int64 number; and the product by 1,000 (seconds) stays exact
#: in Spark's DECIMAL(38, 6) (18 places would be rounded again there, to 13).
EPOCH_DECIMAL_PLACES = 9
_INTEGER_LIMIT = Decimal(10) ** (38 - EPOCH_DECIMAL_PLACES)  # DECIMAL(38, 9) holds less
_PLACES = Decimal(1).scaleb(-EPOCH_DECIMAL_PLACES)
_ROUNDING = Context(prec=40, rounding=ROUND_HALF_UP)  # 29 digits + 9 places, carried


def decimal_ms(text: str, unit: str) -> int | None:
    """Epoch ms of a decimal epoch number's text (:data:`EPOCH_NUMBER_TEXT`) in ``unit``, or
    None: as Spark reads it (``tsmon.spark.points``), the text rounded half up to
    :data:`EPOCH_DECIMAL_PLACES` places (None when 29 integer digits do not hold it; zero is
    zero whatever its exponent), times the unit's ``times``, floored, None beyond int64, then
    floor-divided by its ``per`` (:data:`EPOCH_UNITS`).

    >>> decimal_ms("1704067200.5", "s"), decimal_ms("-0.0005", "s"), decimal_ms("2.5e3", "us")
    (1704067200500, -1, 2)
    >>> decimal_ms("0.0009999999995", "s"), decimal_ms("1e29", "ns")  # half up: 0.001 s
    (1, None)
    """
    times, per = epoch_unit(unit)
    number = Decimal(text.strip(TRIMMED))
    if not number:
        return 0
    if number.adjusted() >= 38 - EPOCH_DECIMAL_PLACES:
        return None
    rounded = number.quantize(_PLACES, context=_ROUNDING)
    if rounded.copy_abs() >= _INTEGER_LIMIT:  # copy_abs: abs() would round to 28 digits
        return None
    nanos = int(rounded.scaleb(EPOCH_DECIMAL_PLACES, context=_ROUNDING))  # exact: 39 digits
    whole = nanos * times // 10**EPOCH_DECIMAL_PLACES
    return whole // per if _INT64.min <= whole <= _INT64.max else None


def decimals_ms(texts: Iterable[str], unit: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`decimal_ms` of each text, as int64 ms (0 where None) and the mask of those read."""
    millis = [decimal_ms(t, unit) for t in texts]
    ok = np.array([m is not None for m in millis], dtype=bool)
    return np.array([m or 0 for m in millis], dtype=np.int64), ok


def float_texts(floats: np.ndarray) -> np.ndarray:
    """The text each float epoch number is read by: a non-whole one's shortest text that
    reads back as it (numpy's; Python's ``repr`` for a ``float64``), the decimal it stands
    for; a whole one's exact digits, however long. In-process and in the text a Parquet
    file's floats reach Spark as (``tsmon.spark.filerows``).

    >>> float_texts(np.array([1.001, 1e-07, 2.0**63])).tolist()
    ['1.001', '1e-07', '9223372036854775808']
    >>> float_texts(np.float32([1.1, 2.0**63])).tolist()  # not 9.223372e+18: that fits int64
    ['1.1', '9223372036854775808']
    """
    texts = floats.astype(str).astype(object)
    whole = floats == np.floor(floats)
    texts[whole] = [str(int(x)) for x in floats[whole].tolist()]
    return texts


def _read_objects(items: np.ndarray, unit: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`read_epoch_ms` of an object array: whole numbers one by one (in ``unit``, not
    yet scaled to ms), decimals too (in ms), instants through pandas; with the mask of the
    items read as whole epoch numbers, the ones left to scale."""
    millis = np.zeros(len(items), dtype=np.int64)
    ok = np.zeros(len(items), dtype=bool)
    numbers = np.zeros(len(items), dtype=bool)
    instants = np.zeros(len(items), dtype=bool)
    decimals: dict[int, str] = {}  # item number: its decimal text, read after the loop
    for i, item in enumerate(items):
        if isinstance(item, str):
            if _INT_TEXT.fullmatch(item):
                try:
                    item = int(item.strip(TRIMMED))  # int() strips other characters than Spark
                except ValueError:  # more digits than int() reads: far beyond int64 anyway
                    continue
            elif not item.strip(_DECIMAL_CHARS) and _DECIMAL_TEXT.fullmatch(item):
                decimals[i] = item
                continue
            else:
                instants[i] = True
                continue
        elif item is None or isinstance(item, (bool, np.bool_)):
            continue
        elif isinstance(item, (float, np.floating)) and not float(item).is_integer():
            if math.isfinite(item):
                decimals[i] = str(item)  # its shortest text, as float_texts
            continue
        if isinstance(item, (int, np.integer, float, np.floating)):
            number = _whole_ms(item)
            if number is not None:
                millis[i], ok[i], numbers[i] = number, True, True
        else:
            instants[i] = True
    if decimals:
        at = np.fromiter(decimals, dtype=np.int64, count=len(decimals))
        millis[at], ok[at] = decimals_ms(decimals.values(), unit)
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
    """A whole epoch number (an int, or a float that is whole) as an int, or None beyond
    int64."""
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
