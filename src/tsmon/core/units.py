"""Durations: every time value in tsmon is an ``int`` of milliseconds (``_ms``).

Event time is what points carry; tsmon never reads the wall clock. Durations are written with a
unit suffix (``250ms``, ``30s``, ``5m``, ``1h``, ``2d``, ``1w``) in queries, configs and the CLI.
Instants and timestamps are read in :mod:`tsmon.core.timestamps`.

A duration is at most :data:`MAX_DURATION_MS`, 100 Julian years (``36525d``,
3_155_760_000_000 ms), so that every time value fits an int64 with room to add and subtract; a
longer one, or one too large to be a finite float, is a :class:`UnitError`.
"""

from __future__ import annotations

import math
import re

UNIT_MS: dict[str, int] = {
    "ms": 1,
    "s": 1_000,
    "m": 60_000,
    "h": 3_600_000,
    "d": 86_400_000,
    "w": 604_800_000,
}

#: The longest duration tsmon reads: 100 Julian years (``36525d``) in milliseconds.
MAX_DURATION_MS: int = 36_525 * UNIT_MS["d"]
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)\s*$")


class UnitError(ValueError):
    """A duration or timestamp that cannot be read."""


def abbreviate(text: str, width: int = 40) -> str:
    """``text`` cut to at most ``width`` characters, with ``...`` in the middle when cut.

    Error messages quote user input through this, so a 5000-digit number stays readable.

    Examples
    --------
    >>> abbreviate("5m"), abbreviate("9" * 100, 12)
    ('5m', '99999...9999')
    """
    if len(text) <= width:
        return text
    keep = max(width - 3, 2)
    return f"{text[: (keep + 1) // 2]}...{text[len(text) - keep // 2 :]}"


def parse_duration_ms(text: str, *, allow_zero: bool = False) -> int:
    """Read a duration such as ``"5m"`` or ``"1.5h"`` into milliseconds.

    A zero duration is an error unless ``allow_zero`` is set: a window or a retention of 0 ms
    is a mistake, while an allowed lateness of 0 ms is the natural default ("no lateness").
    A duration longer than :data:`MAX_DURATION_MS` (100 years, ``36525d``) is an error too.

    Examples
    --------
    >>> parse_duration_ms("5m"), parse_duration_ms("250ms"), parse_duration_ms("1.5h")
    (300000, 250, 5400000)
    >>> parse_duration_ms("0s", allow_zero=True)
    0
    >>> try:
    ...     parse_duration_ms("36526d")
    ... except UnitError as exc:
    ...     print(exc)
    duration '36526d' is too long; the limit is 36525d (100 years, 3155760000000 ms)
    """
    match = _DURATION.match(text)
    if match is None:
        raise UnitError(
            f"cannot read duration {abbreviate(text)!r}; write a number and a unit from "
            f"{', '.join(UNIT_MS)}, e.g. '5m' or '250ms'"
        )
    number, unit = match.groups()
    scaled = float(number) * UNIT_MS[unit]  # inf when the number is too large for a float
    if not math.isfinite(scaled) or round(scaled) > MAX_DURATION_MS:
        raise UnitError(
            f"duration {abbreviate(text.strip())!r} is too long; the limit is "
            f"{format_duration_ms(MAX_DURATION_MS)} (100 years, {MAX_DURATION_MS} ms)"
        )
    millis = round(scaled)
    if millis == 0 and not allow_zero:
        raise UnitError(f"duration must be > 0 ms, got {text!r}; pass a positive duration")
    return millis


def format_duration_ms(millis: int) -> str:
    """Write milliseconds with the largest unit that divides them exactly.

    Examples
    --------
    >>> format_duration_ms(300000), format_duration_ms(1500), format_duration_ms(5400000)
    ('5m', '1500ms', '90m')
    """
    for unit in ("w", "d", "h", "m", "s"):
        if millis % UNIT_MS[unit] == 0:
            return f"{millis // UNIT_MS[unit]}{unit}"
    return f"{millis}ms"


def format_value(value: object) -> str:
    """One payload value: floats with 4 significant digits, anything else as ``str``.

    Examples
    --------
    >>> format_value(0.123456), format_value(3), format_value("host1.cpu")
    ('0.1235', '3', 'host1.cpu')
    """
    return f"{value:.4g}" if isinstance(value, float) else str(value)
