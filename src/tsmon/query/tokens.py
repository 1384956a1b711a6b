"""Token helpers every kind of statement shares: read numbers, names, durations, windows,
instants and percentages from lark tokens, write them back, and place errors.

Every reader reports a mistake through a ``fail`` callback (:data:`Fail`) that raises a
:class:`~tsmon.query.errors.QuerySyntaxError` at the offending token; the writers are the
inverse of the readers (what they write reads back to the same value).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from decimal import Decimal
from typing import NoReturn

from lark import Token, Tree

from tsmon.core.timestamps import parse_instant_ms
from tsmon.core.units import UnitError, abbreviate, parse_duration_ms
from tsmon.core.window_spec import MAX_POINTS, WindowSpec
from tsmon.query.grammar import terminal_pattern

#: Raises a QuerySyntaxError with a message at a token, tree or node.
Fail = Callable[[str, object], NoReturn]

#: A plain number, signed or not, no units.
NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
#: A whole number in plain digits.
DIGITS = re.compile(r"\+?[0-9]+")
#: A duration such as ``5m`` (signed, so a misplaced one is recognised).
DURATION = re.compile(r"[+-]?(\d+(\.\d+)?|\.\d+)(ms|s|m|h|d|w)")
#: Words float() reads that are no finite number.
NOT_FINITE = frozenset({"inf", "infinity", "nan"})
_WITH_UNIT = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)[A-Za-z]+")
#: What :func:`instant_ms` reads: an ISO-8601 date or time, UTC unless it has an offset.
ISO_INSTANT = re.compile(
    r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$", re.I
)
_COUNT = re.compile(r"^(\d+(?:\.\d+)?)\s+points?$", re.I)


# ---- positions ----------------------------------------------------------------------------------


def pos(where: Token | Tree) -> dict[str, int]:
    """The ``line`` and ``column`` keywords of a node built from a token or a tree."""
    meta = where if isinstance(where, Token) else where.meta
    return {"line": meta.line, "column": meta.column}


def source_text(tree: Tree, source: str) -> str:
    """The text a statement's tree was parsed from."""
    return source[tree.meta.start_pos : tree.meta.end_pos]


# ---- reading ------------------------------------------------------------------------------------


def finite_number(token: Token, fail: Fail) -> float:
    """The float value of a number token; a literal beyond the float range is an error.

    Examples
    --------
    >>> def fail(detail, where):
    ...     raise ValueError(detail)
    >>> finite_number(Token("NUMBER", "2.5e-3"), fail)
    0.0025
    >>> finite_number(Token("NUMBER", "1e999"), fail)
    Traceback (most recent call last):
    ...
    ValueError: number '1e999' is too large; numbers must be below about 1.8e308
    """
    number = float(token)
    if not math.isfinite(number):
        fail(
            f"number '{abbreviate(str(token))}' is too large; numbers must be below about 1.8e308",
            token,
        )
    return number


def series_name(token: Token) -> str:
    """The series spelling of an ``AGG_NAME`` or backquoted ``QUOTED_NAME`` token.

    Examples
    --------
    >>> series_name(Token("QUOTED_NAME", "`a-b.x`")), series_name(Token("AGG_NAME", "host*.cpu"))
    ('a-b.x', 'host*.cpu')
    """
    return token[1:-1] if token.type == "QUOTED_NAME" else str(token)


def within_number(
    token: Token, fail: Fail, *, bound: str, units: str, example: str, noun: str
) -> float:
    """The finite float of a ``WITHIN`` token (a ``WIDTH``): a plain number, no units.

    The sign is left to the caller (a width must be > 0, a top-k tolerance >= 0); ``bound``,
    ``units``, ``example`` and ``noun`` only word the messages.

    Examples
    --------
    >>> def fail(detail, where):
    ...     raise ValueError(detail)
    >>> words = dict(bound=">= 0", units="the metric", example="5", noun="tolerance")
    >>> within_number(Token("WIDTH", "-2"), fail, **words)
    -2.0
    >>> within_number(Token("WIDTH", "nan"), fail, **words)
    Traceback (most recent call last):
    ...
    ValueError: WITHIN takes a finite number >= 0, got 'nan'; write e.g. WITHIN 5
    >>> within_number(Token("WIDTH", "5%"), fail, **words)
    Traceback (most recent call last):
    ...
    ValueError: WITHIN 5% is a relative tolerance, which only standing queries take
        (QUERY name AS SUM(...) WITHIN 1% CONFIDENCE 0.9); write a plain number >= 0,
        e.g. WITHIN 5
    """
    text = str(token)
    shown = abbreviate(text)
    if not NUMBER.fullmatch(text):
        if text.endswith("%") and NUMBER.fullmatch(text[:-1]):
            fail(
                f"WITHIN {shown} is a relative tolerance, which only standing queries take "
                "(QUERY name AS SUM(...) WITHIN 1% CONFIDENCE 0.9); write a plain number "
                f"{bound}, e.g. WITHIN {example}",
                token,
            )
        if _WITH_UNIT.fullmatch(text):
            fail(
                f"WITHIN takes a plain number, in the units of {units}, got "
                f"'{shown}'; write e.g. WITHIN {example}",
                token,
            )
        if text.lstrip("+-").lower() in NOT_FINITE:
            fail(
                f"WITHIN takes a finite number {bound}, got '{shown}'; write e.g. WITHIN {example}",
                token,
            )
        fail(f"WITHIN takes a number {bound}, e.g. WITHIN {example}, got '{shown}'", token)
    value = float(text)
    if not math.isfinite(value):
        fail(f"{noun} '{shown}' is too large; numbers must be below about 1.8e308", token)
    return value


def shift(number: Decimal, places: int) -> Decimal:
    """``number * 10**places``, exactly (the exponent moves; the digits stay).

    Examples
    --------
    >>> shift(Decimal("1.5"), -2), shift(Decimal("0.07"), 2)
    (Decimal('0.015'), Decimal('7'))
    """
    sign, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)  # a finite number
    return Decimal((sign, digits, exponent + places))


def percent_fraction(token: Token, fail: Fail, *, noun: str, out_of_range: str) -> float:
    """The fraction ``p / 100`` of a ``p%`` token whose ``p`` is a plain number, rounded once.

    ``p`` must be > 0 and < 100 (``out_of_range`` is the message otherwise), and the fraction
    must tell apart from 0 and 1; ``noun`` (``"tolerance"``) words those messages.

    Examples
    --------
    >>> def fail(detail, where):
    ...     raise ValueError(detail)
    >>> percent_fraction(Token("WIDTH", "7%"), fail, noun="error", out_of_range="")
    0.07
    >>> percent_fraction(Token("WIDTH", "1e-400%"), fail, noun="error", out_of_range="")
    Traceback (most recent call last):
    ...
    ValueError: relative error '1e-400%' is too small to be told apart from 0%
    """
    text = str(token)
    shown = abbreviate(text)
    if not 0 < Decimal(text[:-1]) < 100:
        fail(out_of_range, token)
    eps = float(shift(Decimal(text[:-1]), -2))
    if eps == 0:
        fail(f"relative {noun} '{shown}' is too small to be told apart from 0%", token)
    if eps >= 1:
        fail(f"relative {noun} '{shown}' is too close to 100% to be told apart from it", token)
    return eps


def duration_ms(token: Token, fail: Fail) -> int:
    """A duration token (``5m``, ``250ms``) in milliseconds: > 0 and at most ``36525d``.

    Examples
    --------
    >>> def fail(detail, where):
    ...     raise ValueError(detail)
    >>> duration_ms(Token("DURATION", "1.5h"), fail)
    5400000
    >>> duration_ms(Token("DURATION", "0s"), fail)
    Traceback (most recent call last):
    ...
    ValueError: duration must be > 0 ms, got '0s'; pass a positive duration
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


# ---- writing ------------------------------------------------------------------------------------


def format_number(value: float) -> str:
    """Shortest text that reads back as ``value`` (``3.0`` -> ``'3'``).

    Examples
    --------
    >>> format_number(3.0), format_number(0.25), format_number(1e20)
    ('3', '0.25', '1e+20')
    """
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def format_percent(fraction: float) -> str:
    """The ``p`` of ``WITHIN p%`` for a relative tolerance ``fraction`` (``p / 100``): the
    shortest text that reads back as ``fraction`` (:func:`percent_fraction` divides the
    decimal ``p`` by 100 and rounds once).

    Examples
    --------
    >>> format_percent(0.01), format_percent(0.07), format_percent(0.125), format_percent(1e-05)
    ('1', '7', '12.5', '0.001')
    """
    exact = shift(Decimal(repr(float(fraction))), 2)  # repr reads back as the fraction
    short = format_number(float(exact))
    if float(shift(Decimal(short), -2)) == fraction:
        return short
    return str(exact).replace("E", "e")


def format_window(window: WindowSpec) -> str:
    """Write a window the way the query language reads it: ``str(window)``, the one formatter.

    Examples
    --------
    >>> format_window(WindowSpec.count(1)), format_window(WindowSpec.time(90_000))
    ('1 point', '90s')
    >>> format_window(WindowSpec.landmark(1_704_067_200_000))
    'since 2024-01-01T00:00:00Z'
    """
    return str(window)


def format_points(n: int) -> str:
    """``N points`` of ``OVER N points``, as windows of statistics write a count.

    Examples
    --------
    >>> format_points(1024), format_points(1)
    ('1024 points', '1 point')
    """
    return str(WindowSpec.count(n))


def bare_or_quoted(name: str, terminal: str, what: str) -> str:
    """``name`` bare when it lexes as one ``terminal`` token, else in backquotes.

    Examples
    --------
    >>> bare_or_quoted("doc:*", "OBJECTS", "objects pattern")
    'doc:*'
    >>> bare_or_quoted("a`b", "OBJECTS", "objects pattern")
    Traceback (most recent call last):
    ...
    ValueError: objects pattern 'a`b' cannot be written in a query: it is empty or holds a
        backquote or a line break
    """
    if terminal_pattern(terminal).fullmatch(name):
        return name
    if not name or "`" in name or "\n" in name or "\r" in name:
        raise ValueError(
            f"{what} {name!r} cannot be written in a query: it is empty or holds a "
            "backquote or a line break"
        )
    return f"`{name}`"


def format_series(series: str) -> str:
    """A series name or glob as written inside ``AGG(...)``: bare when it lexes as one name,
    else in backquotes.

    Examples
    --------
    >>> format_series("aws.cpu-utilisation_5f5533"), format_series("host*.cpu")
    ('aws.cpu-utilisation_5f5533', 'host*.cpu')
    >>> format_series("a--b"), format_series("7"), format_series("2*x"), format_series("-x")
    ('`a--b`', '`7`', '`2*x`', '`-x`')
    """
    return bare_or_quoted(series, "AGG_NAME", "series name")
