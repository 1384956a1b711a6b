"""Checks of a job file's TOML values: tables, keys, strings, choices, durations with units.

Every check raises :class:`JobError` naming the file (``where``), the table and key, and what
was expected; nothing is coerced (a number is not a string, a bare number is not a duration).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from tsmon.core.units import UnitError, parse_duration_ms
from tsmon.streams.fleet import STREAM_START_MS

__all__ = [
    "JobError",
    "choice",
    "conf_value",
    "count",
    "duration",
    "epoch_ms",
    "is_int",
    "limit",
    "no_unknown",
    "strings",
    "toml_str",
    "toml_table",
]


class JobError(ValueError):
    """A job file that cannot run: names the file, the key and what was expected."""


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def count(
    t: Mapping[str, Any],
    key: str,
    where: str,
    default: int,
    least: int = 1,
    most: int | None = None,
    name: str = "[input]",
) -> int:
    """An integer key of table ``name`` in ``least..most`` (``default`` when absent)."""
    value = t.get(key, default)
    if not (is_int(value) and value >= least and (most is None or value <= most)):
        span = f"{least}..{most}" if most is not None else f">= {least}"
        raise JobError(f"{where}: {name} {key} must be an integer {span}, got {value!r}")
    return value


def epoch_ms(t: Mapping[str, Any], key: str, where: str) -> int:
    """Epoch ms from an integer or a TOML date-time with an offset (default 2024-01-01Z)."""
    value = t.get(key, STREAM_START_MS)
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return round(value.timestamp() * 1000)
    if not is_int(value):
        raise JobError(
            f"{where}: [input] {key} must be epoch milliseconds or a date-time with an offset "
            f"(e.g. 2024-01-01T00:00:00Z), got {value!r}"
        )
    return value


def toml_table(
    t: Mapping[str, Any], key: str, where: str, name: str | None = None, required: bool = False
) -> Mapping[str, Any]:
    if key not in t:
        if required:
            raise JobError(f"{where}: missing [{key}] table")
        return {}
    value = t[key]
    if not isinstance(value, dict):
        raise JobError(f"{where}: {name or f'[{key}]'} must be a table, got {value!r}")
    return value


def no_unknown(t: Mapping[str, Any], keys: set[str], where: str, name: str) -> None:
    unknown = sorted(set(t) - keys)
    if unknown:
        hint = ""
        if unknown[0] in ("queries", "query_file", "sources", "filters", "sinks"):
            hint = " (in TOML a key after [table] belongs to it: put top-level keys first)"
        raise JobError(
            f"{where}: unknown key {unknown[0]!r} in {name}; expected one of {sorted(keys)}{hint}"
        )


def toml_str(
    t: Mapping[str, Any], key: str, where: str, name: str, default: str | None = None
) -> str:
    value = t.get(key, default)
    if not isinstance(value, str) or not value:
        raise JobError(f"{where}: {name} {key} must be a non-empty string, got {value!r}")
    return value


def choice(
    t: Mapping[str, Any],
    key: str,
    choices: tuple[str, ...],
    where: str,
    name: str,
    default: str | None = None,
) -> str:
    value = t.get(key, default)
    if value not in choices:
        raise JobError(f"{where}: {name} {key} must be one of {list(choices)}, got {value!r}")
    return str(value)


def strings(t: Mapping[str, Any], where: str, name: str) -> dict[str, str]:
    """A table of text values (a number or a boolean is refused, never turned into text)."""
    for key, value in t.items():
        if not isinstance(value, str) or not value:
            raise JobError(
                f"{where}: {name} {key} must be a non-empty string (quote it), got {value!r}"
            )
    return dict(t)


def conf_value(key: str, value: Any, where: str) -> str:
    """A Spark setting as Spark reads it: text, an integer, or a boolean (true/false)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int):
        return str(value)
    raise JobError(
        f"{where}: [job.spark_conf] {key!r} must be a string, an integer or a boolean, "
        f"got {value!r}"
    )


def duration(t: Mapping[str, Any], key: str, where: str, name: str, default: str) -> int:
    value = t.get(key, default)
    if not isinstance(value, str):
        raise JobError(
            f'{where}: {name} {key} must be a duration with a unit, e.g. "5s" or "250ms", '
            f"got {value!r}"
        )
    try:
        return parse_duration_ms(value)
    except UnitError as e:
        raise JobError(f"{where}: {name} {key}: {e}") from None


def limit(t: Mapping[str, Any], key: str, where: str, default: str) -> int | None:
    """A duration of ``[job]``, or ``"off"`` (no limit: None)."""
    if t.get(key) == "off":
        return None
    return duration(t, key, where, "[job]", default)
