"""What the queries answered from stream summaries share: plain numbers in wide tokens, the
``OVER N points`` window, the one series a summary is kept for, and the comparison after it.

Wavelet (:mod:`tsmon.query.wavelet`), approximate (:mod:`tsmon.query.approx`) and correlated
(:mod:`tsmon.query.correlated`) queries read numbers as wide tokens (``SCALAR``, ``POINTS``,
``RELATIVE``) so that every mistake in one is explained here. Every error is a
:class:`~tsmon.query.errors.QuerySyntaxError` at the offending token, raised by the ``fail``
callback the parser passes in.
"""

from __future__ import annotations

import math
import re

from lark import Token, Tree

from tsmon.core.units import abbreviate
from tsmon.core.window_spec import MAX_POINTS
from tsmon.query.patterns import is_glob
from tsmon.query.tokens import DIGITS, DURATION, NUMBER, Fail, series_name

_POINTS = re.compile(r"(\S+?)(\s+points?)?", re.I)
#: Written positions and MAX values longer than this are too large whatever the limit (int()
#: refuses strings of more than 4300 digits).
_MAX_DIGITS = 4000


def real(token: Token, fail: Fail, *, takes: str, example: str) -> float:
    """The finite float of a ``SCALAR`` token: a plain number, signed or not, no units.

    ``takes`` starts the messages (``"RANGE takes a radius r that is a plain number"``);
    ``example`` shows a good one.

    Examples
    --------
    >>> def fail(detail, where):
    ...     raise ValueError(detail)
    >>> takes = "INNER takes weights that are plain numbers"
    >>> real(Token("SCALAR", "-2.5e1"), fail, takes=takes, example="0.5")
    -25.0
    >>> real(Token("SCALAR", "5ms"), fail, takes=takes, example="0.5")
    Traceback (most recent call last):
    ...
    ValueError: INNER takes weights that are plain numbers like 0.5, got '5ms'
    """
    text = str(token)
    shown = abbreviate(text)
    if not NUMBER.fullmatch(text):
        fail(f"{takes} like {example}, got '{shown}'", token)
    value = float(text)
    if not math.isfinite(value):
        fail(f"number '{shown}' is too large; numbers must be below about 1.8e308", token)
    return value


def whole(
    token: Token, fail: Fail, *, takes: str, bound: str, meaning: str, plural: bool = False
) -> int:
    """The int of a ``SCALAR`` token: a whole number in plain digits, >= 0 (the caller checks
    ``bound`` and any upper limit; ``takes``, ``bound``, ``meaning`` and ``plural`` word the
    messages).

    Numbers of more than 4000 digits are too large for any limit (and for ``int()``).

    Examples
    --------
    >>> def fail(detail, where):
    ...     raise ValueError(detail)
    >>> words = dict(takes="POINT takes a position", bound=">= 0", meaning="0 is the newest")
    >>> whole(Token("SCALAR", "012"), fail, **words), whole(Token("SCALAR", "+0"), fail, **words)
    (12, 0)
    >>> whole(Token("SCALAR", "-1"), fail, **words)
    Traceback (most recent call last):
    ...
    ValueError: POINT takes a position, a whole number >= 0 (0 is the newest), got -1
    >>> whole(Token("SCALAR", "1e3"), fail, **words)
    Traceback (most recent call last):
    ...
    ValueError: POINT takes a position in plain digits: write 1000, not 1e3
    """
    text = str(token)
    shown = abbreviate(text)
    if DIGITS.fullmatch(text):
        digits = text.lstrip("+").lstrip("0") or "0"
        if len(digits) > _MAX_DIGITS:
            fail(f"{takes}: '{shown}' is too large", token)
        return int(digits)
    what = f"{takes}, {'whole numbers' if plural else 'a whole number'} {bound} ({meaning})"
    if not NUMBER.fullmatch(text):
        fail(f"{what}, got '{shown}'", token)
    value = float(text)
    if text.startswith("-") or not value.is_integer():
        fail(f"{what}, got {shown}", token)
    fail(f"{takes} in plain digits: write {abbreviate(str(int(value)))}, not {shown}", token)
    raise AssertionError("unreachable")  # pragma: no cover


def window_points(token: Token, fail: Fail, *, swat: bool) -> int:
    """The ``N`` of ``OVER N points`` (a ``POINTS`` token): a whole number 1 .. 2**40, and for
    a SWAT tree (``swat``) a power of two >= 2.

    Examples
    --------
    >>> def fail(detail, where):
    ...     raise ValueError(detail)
    >>> window_points(Token("POINTS", "1024 points"), fail, swat=True)
    1024
    >>> window_points(Token("POINTS", "1000 points"), fail, swat=True)
    Traceback (most recent call last):
    ...
    ValueError: a SWAT tree keeps a power of two >= 2 of the last values, got OVER 1000 points;
        write OVER 512 points or OVER 1024 points
    >>> window_points(Token("POINTS", "30m"), fail, swat=False)
    Traceback (most recent call last):
    ...
    ValueError: OVER takes a count of values like 1000 points, not a duration, got '30m': the
        summary keeps the last N values of the series
    """
    text = str(token)
    shown = abbreviate(text)
    match = _POINTS.fullmatch(text)
    assert match is not None  # the POINTS token is a word with an optional `points`
    count, unit = match.groups()
    example = "1024 points" if swat else "1000 points"
    if DURATION.fullmatch(count) and unit is None:
        fail(
            f"OVER takes a count of values like {example}, not a duration, got '{shown}': the "
            "summary keeps the last N values of the series",
            token,
        )
    if not DIGITS.fullmatch(count):
        if NUMBER.fullmatch(count):
            value = float(count)
            if value > MAX_POINTS:
                fail(
                    f"OVER {shown} is too large; a summary keeps at most {MAX_POINTS} points "
                    "(2**40)",
                    token,
                )
            if count.startswith("-") or value < 1 or not value.is_integer():
                fail(f"OVER takes a whole number of points >= 1, got '{shown}'", token)
            fail(f"write OVER {int(value)} points in plain digits, not OVER {shown}", token)
        fail(f"OVER takes a count like {example}, got '{shown}'", token)
    digits = count.lstrip("+").lstrip("0")
    if not digits:
        fail(f"OVER takes a whole number of points >= 1, got '{shown}'", token)
    if len(digits) > len(str(MAX_POINTS)) or int(digits) > MAX_POINTS:
        fail(
            f"OVER {shown} is too large; a summary keeps at most {MAX_POINTS} points (2**40)",
            token,
        )
    if unit is None:
        fail(f"write OVER {digits} points, not OVER {shown}: OVER takes a count of values", token)
    n = int(digits)
    if swat and (n < 2 or n & (n - 1)):
        below, above = 1 << (n.bit_length() - 1), 1 << n.bit_length()
        write = (
            f"OVER {above} points" if below < 2 else f"OVER {below} points or OVER {above} points"
        )
        fail(
            f"a SWAT tree keeps a power of two >= 2 of the last values, got OVER {shown}; "
            f"write {write}",
            token,
        )
    return n


def one_series(token: Token, word: str, fail: Fail) -> str:
    """The series of a summary query's token: one name, never a glob (``word`` names the query)."""
    series = series_name(token)
    if is_glob(series):
        fail(
            f"{word} takes one series, not a pattern, got '{abbreviate(series)}' (a '*', '?' "
            "or '[' makes a glob); a summary is kept per series",
            token,
        )
    return series


def check_not_equal(series: Token, predicate: Tree, fail: Fail) -> None:
    """``x!=0`` lexes as the series ``x!`` and ``=``: refuse it rather than misread it."""
    op = predicate.children[0]
    if (
        series.type == "AGG_NAME"
        and series.endswith("!")
        and op.startswith("=")
        and series.end_pos == op.start_pos
    ):
        fail(
            f"'{abbreviate(str(series))}' ends with '!', a name character; to compare with "
            f"!=, put a space before it: {abbreviate(str(series)[:-1])} != ...",
            series,
        )


def constant_of(predicate: Tree) -> Token | None:
    """The constant of ``op c``, or None when the predicate compares with AVG|MIN|MAX."""
    return predicate.children[1] if predicate.data == "compare_constant" else None
