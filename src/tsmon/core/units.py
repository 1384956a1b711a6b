"""Durations and timestamps: every time value in tsmon is an ``int`` of milliseconds (``_ms``).

Event time is what points carry; tsmon never reads the wall clock. Durations are written with a
unit suffix (``250ms``, ``30s``, ``5m``, ``1h``, ``2d``, ``1w``) in queries, configs and the CLI.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

UNIT_MS: dict[str, int] = {
    "ms": 1,
    "s": 1_000,
    "m": 60_000,
    "h": 3_600_000,
    "d": 86_400_000,
    "w": 604_800_000,
}

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)\s*$")


class UnitError(ValueError):
    """A duration or timestamp that cannot be read."""


def parse_duration_ms(text: str) -> int:
    """Read a duration such as ``"5m"`` or ``"1.5h"`` into milliseconds.

    Examples
    --------
    >>> parse_duration_ms("5m"), parse_duration_ms("250ms"), parse_duration_ms("1.5h")
    (300000, 250, 5400000)
    """
    match = _DURATION.match(text)
    if match is None:
        raise UnitError(
            f"cannot read duration {text!r}; write a number and a unit from "
            f"{', '.join(UNIT_MS)}, e.g. '5m' or '250ms'"
        )
    number, unit = match.groups()
    millis = round(float(number) * UNIT_MS[unit])
    if millis <= 0:
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


def to_epoch_ms(ts: object) -> np.ndarray:
    """Convert timestamps (ints in ms, datetime64, strings, pandas Timestamps) to int64 ms.

    Integers are taken as milliseconds since the epoch; anything else goes through pandas and
    naive times are read as UTC.

    Examples
    --------
    >>> to_epoch_ms(["2024-01-01T00:00:00Z", "2024-01-01T00:00:01Z"]).tolist()
    [1704067200000, 1704067201000]
    >>> to_epoch_ms([5, 6]).tolist()
    [5, 6]
    """
    arr = np.asarray(ts)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64, copy=False).reshape(-1)
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise UnitError("float timestamps must be whole milliseconds; got fractions or NaN")
        return arr.astype(np.int64).reshape(-1)
    try:
        stamps = pd.to_datetime(pd.Series(arr.reshape(-1)), utc=True)
    except (ValueError, TypeError) as exc:
        raise UnitError(
            f"cannot read timestamps: {exc}; pass epoch ms or ISO-8601 strings"
        ) from exc
    return (stamps.astype("datetime64[ns, UTC]").astype("int64") // 1_000_000).to_numpy()


def parse_instant_ms(text: str) -> int:
    """Read one ISO-8601 instant (naive = UTC) into epoch milliseconds.

    Examples
    --------
    >>> parse_instant_ms("2024-01-01T00:00:00Z")
    1704067200000
    """
    try:
        return int(to_epoch_ms([text])[0])
    except UnitError as exc:
        raise UnitError(
            f"cannot read instant {text!r}; write ISO-8601, e.g. 2024-01-01T00:00:00Z"
        ) from exc
