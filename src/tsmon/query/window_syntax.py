"""Read windows, durations and instants from query tokens, for every kind of statement.

The watch-query language reads a ``WINDOW`` token inside statistics (``mean(5m)``,
``count(100 points)``, ``first(since 2024-01-01)``); standing queries read the same token after
``MAX OVER`` and an instant after ``MAX SINCE`` (see ``grammar.lark``). Every error is a
:class:`~tsmon.query.errors.QuerySyntaxError` at the offending token, raised by the ``fail``
callback the parser passes in.
"""

from __future__ import annotations

import re

from lark import Token

from tsmon.core.timestamps import parse_instant_ms
from tsmon.core.units import UnitError, abbreviate, parse_duration_ms
from tsmon.core.window_spec import MAX_POINTS, WindowSpec
from tsmon.query.aggregate_syntax import Fail

#: What :func:`instant_ms` reads: an ISO-8601 date or time, UTC unless it has an offset.
ISO_INSTANT = re.compile(
    r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$", re.I
)
_COUNT = re.compile(r"^(\d+(?:\.\d+)?)\s+points?$", re.I)


def duration_ms(token: Token, fail: Fail) -> int:
    """A duration token (``5m``, ``250ms``) in milliseconds: > 0 and at most ``36525d``.

    Examples
    --------
    >>> def fail(detail, where):
    ...     raise ValueError(detail)
    >>> duration_ms(Token("DURATION", "1.5h"), fail)
    5400000
    """
    try:
        return parse_duration_ms(str(token))
    except UnitError as exc:
        fail(str(exc), token)
    raise AssertionError("unreachable")  # pragma: no cover


def instant_ms(instant: str, token: Token, fail: Fail, *, example: str) -> int:
    """An ISO-8601 instant in epoch milliseconds; ``example`` shows how to write one.

    Examples
    --------
    >>> def fail(detail, where):
    ...     raise ValueError(detail)
    >>> instant_ms("2024-01-01T00:00:00Z", Token("WINDOW", "x"), fail, example="")
    1704067200000
    >>> instant_ms("noon", Token("WINDOW", "x"), fail, example="since 2024-01-01T00:00:00Z")
    Traceback (most recent call last):
    ...
    ValueError: cannot read instant 'noon'; write an ISO-8601 date or time, e.g.
        since 2024-01-01T00:00:00Z
    """
    if not ISO_INSTANT.match(instant):
        fail(
            f"cannot read instant '{abbreviate(instant)}'; write an ISO-8601 date or time, "
            f"e.g. {example}",
            token,
        )
    try:
        return parse_instant_ms(instant)
    except UnitError as exc:  # a date that does not exist, or outside 1677 .. 2262
        fail(str(exc), token)
    raise AssertionError("unreachable")  # pragma: no cover


def window_spec(token: Token, fail: Fail) -> WindowSpec:
    """A ``WINDOW`` token: ``5m`` (time), ``100 points`` (count) or ``since <instant>``.

    Examples
    --------
    >>> def fail(detail, where):
    ...     raise ValueError(detail)
    >>> window_spec(Token("WINDOW", "100 points"), fail), window_spec(Token("WINDOW", "5m"), fail)
    (WindowSpec(kind=<WindowKind.COUNT: 'count'>, size=100),
     WindowSpec(kind=<WindowKind.TIME: 'time'>, size=300000))
    >>> window_spec(Token("WINDOW", "2.5 points"), fail)
    Traceback (most recent call last):
    ...
    ValueError: a count window needs a whole number of points > 0, got '2.5 points'
    """
    text = str(token)
    count = _COUNT.match(text)
    if count is not None:
        number, shown = count.group(1), abbreviate(text)
        digits = number.lstrip("0")
        if not number.isdigit() or not digits:
            fail(f"a count window needs a whole number of points > 0, got '{shown}'", token)
        # Compare lengths first: int() refuses strings of more than 4300 digits.
        if len(digits) > len(str(MAX_POINTS)) or int(digits) > MAX_POINTS:
            fail(
                f"count window '{shown}' is too large; a count window holds at most "
                f"{MAX_POINTS} points (2**40)",
                token,
            )
        return WindowSpec.count(int(digits))
    if text[:5].lower() == "since":
        example = "since 2024-01-01T00:00:00Z"
        return WindowSpec.landmark(instant_ms(text[5:].strip(), token, fail, example=example))
    return WindowSpec.time(duration_ms(token, fail))
