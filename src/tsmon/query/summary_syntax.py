"""Build the statements of queries answered from stream summaries from lark trees.

Used by :mod:`tsmon.query.parser` for wavelet queries (``QUERY name AS INNER|POINT|RANGE(...)``,
answered from a SWAT tree), approximate aggregates (``QUERY name AS APPROX COUNT|SUM(...)``,
from an exponential histogram) and correlated aggregates (``QUERY name AS COUNT|SUM(x > AVG)``);
the syntax is in ``grammar.lark`` ("Queries answered from stream summaries"). Numbers come as
wide tokens (``SCALAR``, ``POINTS``, ``RELATIVE``) so that every mistake in one is explained
here. Every error is a :class:`~tsmon.query.errors.QuerySyntaxError` at the offending token,
raised by the ``fail`` callback the parser passes in; errors are reported left to right, except
that a position is checked against ``OVER N points`` once ``N`` (written after it) is read.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction

from lark import Token, Tree

from tsmon.core.units import abbreviate
from tsmon.core.window_spec import MAX_POINTS
from tsmon.query import ast
from tsmon.query.aggregate_syntax import Fail, series_name, within_number
from tsmon.query.patterns import is_glob

_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_DIGITS = re.compile(r"\+?[0-9]+")
_DURATION = re.compile(r"[+-]?(\d+(\.\d+)?|\.\d+)(ms|s|m|h|d|w)")
_POINTS = re.compile(r"(\S+?)(\s+points?)?", re.I)
_NOT_FINITE = frozenset({"inf", "infinity", "nan"})
#: Written positions and MAX values longer than this are too large whatever the limit (int()
#: refuses strings of more than 4300 digits).
_MAX_DIGITS = 4000
#: A MAX coefficient below this reads as 1 - c == 1: too close to 0 to be told apart from it.
_TINY = Decimal("1e-30")
#: A MIN coefficient above this makes c - 1 overflow a float.
_HUGE = Decimal("1e309")
_FUNCTIONS = {"inner_body": "inner", "point_body": "point", "range_body": "range"}
#: How each independent aggregate is compared with, as an example and in words.
_EXAMPLES = {"avg": "> AVG", "min": "<= 1.1 * MIN", "max": ">= 0.9 * MAX"}
_MEANINGS = {
    "avg": "the values above the average",
    "min": "the values within a factor c >= 1 of the minimum",
    "max": "the values within a factor 0 < c <= 1 of the maximum",
}


def _pos(where: Token | Tree) -> dict[str, int]:
    meta = where if isinstance(where, Token) else where.meta
    return {"line": meta.line, "column": meta.column}


def _text(tree: Tree, source: str) -> str:
    return source[tree.meta.start_pos : tree.meta.end_pos]


# ---- numbers ----------------------------------------------------------------------------------


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
    if not _NUMBER.fullmatch(text):
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
    if _DIGITS.fullmatch(text):
        digits = text.lstrip("+").lstrip("0") or "0"
        if len(digits) > _MAX_DIGITS:
            fail(f"{takes}: '{shown}' is too large", token)
        return int(digits)
    what = f"{takes}, {'whole numbers' if plural else 'a whole number'} {bound} ({meaning})"
    if not _NUMBER.fullmatch(text):
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
    if _DURATION.fullmatch(count) and unit is None:
        fail(
            f"OVER takes a count of values like {example}, not a duration, got '{shown}': the "
            "summary keeps the last N values of the series",
            token,
        )
    if not _DIGITS.fullmatch(count):
        if _NUMBER.fullmatch(count):
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


def _shift(number: Decimal, places: int) -> Decimal:
    """``number * 10**places``, exactly (the exponent moves; the digits stay)."""
    sign, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)  # a finite number
    return Decimal((sign, digits, exponent + places))


def _percent_of(number: str) -> Decimal:
    """``number`` / 100, exactly (a decimal shift, no rounding)."""
    return _shift(Decimal(number), -2)


def relative_error(token: Token, fail: Fail, *, word: str) -> float:
    """The ε of ``WITHIN p%`` (a ``RELATIVE`` token) of APPROX COUNT|SUM: ``p / 100`` with
    ``0 < p < 100``, rounded once; ``word`` (``"APPROX COUNT"``) words the messages.

    Examples
    --------
    >>> def fail(detail, where):
    ...     raise ValueError(detail)
    >>> relative_error(Token("RELATIVE", "0.5%"), fail, word="APPROX SUM")
    0.005
    >>> relative_error(Token("RELATIVE", "0.01"), fail, word="APPROX COUNT")
    Traceback (most recent call last):
    ...
    ValueError: APPROX COUNT takes a relative error as a percentage: write WITHIN 1%, not
        WITHIN 0.01
    """
    text = str(token)
    shown = abbreviate(text)
    if not text.endswith("%"):
        if _NUMBER.fullmatch(text) and 0 < Decimal(text) < 1:
            percent = f"{_shift(Decimal(text), 2).normalize():f}"
            fail(
                f"{word} takes a relative error as a percentage: write WITHIN "
                f"{abbreviate(percent)}%, not WITHIN {shown}",
                token,
            )
        fail(f"{word} takes a relative error as a percentage like WITHIN 1%, got {shown}", token)
    number = text[:-1]
    if not _NUMBER.fullmatch(number):
        fail(f"WITHIN takes a percentage like 1%, got '{shown}'", token)
    if not 0 < Decimal(number) < 100:
        fail(
            f"{word} takes a relative error > 0% and < 100% (a fraction of the exact answer), "
            f"got {shown}",
            token,
        )
    eps = float(_percent_of(number))
    if eps == 0:
        fail(f"relative error '{shown}' is too small to be told apart from 0%", token)
    if eps >= 1:
        fail(f"relative error '{shown}' is too close to 100% to be told apart from it", token)
    return eps


def precision(token: Token, fail: Fail, *, word: str) -> float:
    """The δ of ``WITHIN δ`` of INNER and POINT: a finite plain number > 0.

    Examples
    --------
    >>> def fail(detail, where):
    ...     raise ValueError(detail)
    >>> precision(Token("WIDTH", "0.5"), fail, word="POINT")
    0.5
    >>> precision(Token("WIDTH", "1%"), fail, word="INNER")
    Traceback (most recent call last):
    ...
    ValueError: INNER takes a precision in the units of the series' values, a plain number > 0
        like WITHIN 0.5, got WITHIN 1%; a relative error (p%) is for APPROX COUNT|SUM
    """
    text = str(token)
    shown = abbreviate(text)
    if text.endswith("%") and _NUMBER.fullmatch(text[:-1]):
        fail(
            f"{word} takes a precision in the units of the series' values, a plain number > 0 "
            f"like WITHIN 0.5, got WITHIN {shown}; a relative error (p%) is for APPROX COUNT|SUM",
            token,
        )
    value = within_number(
        token, fail, bound="> 0", units="the series' values", example="0.5", noun="precision"
    )
    if value <= 0:
        fail(
            f"WITHIN takes a precision > 0 (how far {word}'s answer may be from the exact one), "
            f"got {shown}",
            token,
        )
    return value


def coefficient_eps(independent: str, coefficient: str) -> float:
    """The ``eps`` of ``c * MIN`` (``c - 1``) or ``c * MAX`` (``1 - c``), computed exactly from
    the decimal ``c`` and rounded once, so ``1.1 * MIN`` has ``eps == 0.1``.

    ``c`` must be in range (``1 <= c < 1e309`` for MIN, ``1e-30 <= c <= 1`` for MAX); the
    parser checks that first.

    Examples
    --------
    >>> coefficient_eps("min", "1.1"), coefficient_eps("max", "0.9"), coefficient_eps("max", "1")
    (0.1, 0.1, 0.0)
    """
    c = Fraction(Decimal(coefficient))
    return float(c - 1 if independent == "min" else 1 - c)


# ---- the series and the comparison ------------------------------------------------------------


def _one_series(token: Token, word: str, fail: Fail) -> str:
    series = series_name(token)
    if is_glob(series):
        fail(
            f"{word} takes one series, not a pattern, got '{abbreviate(series)}' (a '*', '?' "
            "or '[' makes a glob); a summary is kept per series",
            token,
        )
    return series


def _check_not_equal(series: Token, predicate: Tree, fail: Fail) -> None:
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


def _constant(predicate: Tree) -> Token | None:
    """The constant of ``op c``, or None when the predicate compares with AVG|MIN|MAX."""
    return predicate.children[1] if predicate.data == "compare_constant" else None


# ---- wavelets ---------------------------------------------------------------------------------


def wavelet_def(tree: Tree, source: str, fail: Fail) -> ast.WaveletDef:
    """``QUERY name AS INNER|POINT|RANGE(series, ...) [OVER N points] [WITHIN δ]``.

    Examples
    --------
    >>> from tsmon.query.parser import parse_query
    >>> parse_query("QUERY recent2 AS INNER(temp.v, [8, 4] AT [0, 2]) OVER 256 points")
    WaveletDef(name='recent2', kind='inner', series='temp.v', window_points=256,
        weights=(8.0, 4.0), indices=(0, 2), position=None, span=None, value=None, radius=None,
        within=None)
    >>> parse_query("QUERY near AS RANGE(temp.v, 0..64, 30 ± 2)").span
    (0, 64)
    """
    name, body = tree.children
    kind = _FUNCTIONS[body.data]
    word = kind.upper()
    series = _one_series(body.children[0], word, fail)
    *args, over, within = body.children[1:]
    if kind == "inner":
        fields, checks = _inner(*args, fail=fail)
    elif kind == "point":
        position = _position(args[0], "POINT takes a position", fail, plural=False)
        fields, checks = {"position": position}, [(args[0], position)]
    else:
        fields, checks = _range(*args, fail=fail)
    n = ast.DEFAULT_SWAT_POINTS
    if over is not None:
        n = window_points(over.children[0], fail, swat=True)
    if within is not None:
        if kind == "range":
            fail(
                "RANGE takes no WITHIN: its answer is the positions whose value is within v ± r; "
                "WITHIN sets the precision of INNER and POINT",
                within,
            )
        fields["within"] = precision(within.children[0], fail, word=word)
    given = " (the default)" if over is None else ""
    for token, index in checks:
        if index >= n:
            fail(
                f"position {abbreviate(str(token))} is out of range: OVER {n} points{given} "
                f"keeps positions 0 .. {n - 1} (0 is the newest value)",
                token,
            )
    if kind == "inner" and len(args[0].children) > n:
        fail(
            f"INNER takes at most {n} weights, one per position of OVER {n} points{given}, "
            f"got {len(args[0].children)}",
            args[0],
        )
    return ast.WaveletDef(
        str(name),
        kind,
        series,
        n,
        **fields,  # type: ignore[arg-type]
        text=_text(tree, source),
        **_pos(tree),
    )


_Checks = list[tuple[Token, int]]  # positions to check against N once it is read


def _position(token: Token, takes: str, fail: Fail, *, plural: bool = True) -> int:
    return whole(
        token, fail, takes=takes, bound=">= 0", meaning="0 is the newest value", plural=plural
    )


def _inner(weights: Tree, at: Tree | None, *, fail: Fail) -> tuple[dict[str, object], _Checks]:
    """The weights and positions of ``INNER(s, [w, ...] [AT [i, ...]])``."""
    values = tuple(
        real(token, fail, takes="INNER takes weights that are plain numbers", example="0.5")
        for token in weights.children
    )
    if at is None:
        return {"weights": values, "indices": tuple(range(len(values)))}, []
    checks = [(token, _position(token, "AT takes positions", fail)) for token in at.children]
    if len(checks) != len(values):
        fail(
            f"INNER takes one position per weight: {len(values)} weights, {len(checks)} "
            "positions after AT",
            at,
        )
    seen: dict[int, Token] = {}
    for token, index in checks:
        if index in seen:
            first = seen[index]
            fail(
                f"position {abbreviate(str(index))} appears twice after AT (first at "
                f"{first.line}:{first.column}); give each position one weight",
                token,
            )
        seen[index] = token
    return {"weights": values, "indices": tuple(index for _, index in checks)}, checks


def _range(
    lo_token: Token, hi_token: Token, value: Token, radius_token: Token, *, fail: Fail
) -> tuple[dict[str, object], _Checks]:
    """The span, value and radius of ``RANGE(s, lo..hi, v ± r)``."""
    lo = _position(lo_token, "RANGE takes positions lo..hi", fail)
    hi = _position(hi_token, "RANGE takes positions lo..hi", fail)
    if lo > hi:
        fail(
            f"RANGE takes positions lo..hi with lo <= hi, got {abbreviate(str(lo_token))}.."
            f"{abbreviate(str(hi_token))}",
            lo_token,
        )
    centre = real(value, fail, takes="RANGE takes a value v that is a plain number", example="30")
    radius = real(
        radius_token, fail, takes="RANGE takes a radius r that is a plain number", example="2"
    )
    if radius < 0:
        fail(
            "RANGE takes a radius r >= 0 (the values within v ± r), got "
            f"{abbreviate(str(radius_token))}",
            radius_token,
        )
    fields = {"span": (lo, hi), "value": centre, "radius": radius if radius else 0.0}  # -0 is 0
    return fields, [(hi_token, hi)]


# ---- exponential histograms -------------------------------------------------------------------


def approx_def(tree: Tree, source: str, fail: Fail) -> ast.ApproxDef:
    """``QUERY name AS APPROX COUNT(series op c) | SUM(series) OVER N points WITHIN p% [MAX R]``.

    Examples
    --------
    >>> from tsmon.query.parser import parse_query
    >>> parse_query("QUERY errs AS APPROX COUNT(errors.n <> 0) OVER 10000 points WITHIN 1%")
    ApproxDef(name='errs', kind='count', series='errors.n', window_points=10000, eps=0.01,
        op='!=', threshold=0.0, max_value=None)
    """
    name, body = tree.children
    kind = "count" if body.data == "approx_count" else "sum"
    func = body.children[0] if kind == "count" else None  # SUM is not kept
    series_token, predicate, over, within, *rest = body.children[1 if func else 0 :]
    word = f"APPROX {kind.upper()}"
    series = _one_series(series_token, word, fail)
    fields: dict[str, object] = {}
    if kind == "count":
        if predicate is None:
            fail(
                f"APPROX COUNT takes a comparison: APPROX COUNT({abbreviate(series)} > 0) counts "
                "the values above 0 (op is one of < <= > >= == !=)",
                func,
            )
        _check_not_equal(series_token, predicate, fail)
        constant = _constant(predicate)
        if constant is None:
            _approx_not_correlated(predicate, series, fail)
        assert constant is not None
        fields["op"] = ast.COMPARE_ALIASES[str(predicate.children[0])]
        fields["threshold"] = real(
            constant, fail, takes="APPROX COUNT compares with a plain number", example="0"
        )
    elif predicate is not None:
        fail(
            f"APPROX SUM takes no comparison: APPROX SUM({abbreviate(series)}) sums the last N "
            "values; to count values write APPROX COUNT(...)",
            predicate,
        )
    n = window_points(over.children[0], fail, swat=False)
    eps = relative_error(within.children[0], fail, word=word)
    if rest:
        (limit,) = rest[0].children
        words = dict(
            takes="MAX takes R",
            bound=">= 1",
            meaning="the largest value: values are whole numbers 0 .. R",
        )
        value = whole(limit, fail, **words)  # type: ignore[arg-type]
        if value < 1:
            fail(
                f"{words['takes']}, a whole number >= 1 ({words['meaning']}), got "
                f"{abbreviate(str(limit))}",
                limit,
            )
        if value > ast.MAX_SUM_VALUE:
            fail(
                f"MAX '{abbreviate(str(limit))}' is too large; MAX takes R <= "
                f"{ast.MAX_SUM_VALUE} (2**53)",
                limit,
            )
        fields["max_value"] = value
    return ast.ApproxDef(
        str(name),
        kind,
        series,
        n,
        eps,
        **fields,  # type: ignore[arg-type]
        text=_text(tree, source),
        **_pos(tree),
    )


def _approx_not_correlated(predicate: Tree, series: str, fail: Fail) -> None:
    op, _coefficient, _star, independent = predicate.children
    word = independent.lower()
    shown = abbreviate(str(independent))
    if word in ast.INDEPENDENT_AGGREGATES:
        fail(
            f"APPROX COUNT compares with a constant, like APPROX COUNT({abbreviate(series)} {op} "
            f"0); for a correlated aggregate write COUNT({abbreviate(series)} "
            f"{_EXAMPLES[word]}), without APPROX",
            independent,
        )
    if word in _NOT_FINITE:
        fail(f"APPROX COUNT compares with a finite number, got '{shown}'", independent)
    fail(f"APPROX COUNT compares with a number like 0, got '{shown}'", independent)


# ---- correlated aggregates --------------------------------------------------------------------


def correlated_def(tree: Tree, source: str, fail: Fail) -> ast.CorrelatedDef:
    """``QUERY name AS COUNT|SUM(series > AVG | <= c * MIN | >= c * MAX) [OVER N points]``.

    Examples
    --------
    >>> from tsmon.query.parser import parse_query
    >>> parse_query("QUERY fast AS COUNT(calls.dur <= 1.1 * MIN) OVER 500 points")
    CorrelatedDef(name='fast', dependent='count', series='calls.dur', independent='min',
        eps=0.1, window_points=500)
    """
    name, body = tree.children
    func, series_token, predicate, over, within = body.children
    dependent = func.lower()
    if dependent not in ast.DEPENDENT_AGGREGATES:
        fail(
            f"a correlated aggregate is COUNT(...) or SUM(...), e.g. SUM(x > AVG), got "
            f"{func.upper()}(...); a bounded {func.upper()}(...) takes series names and WITHIN",
            func,
        )
    word = dependent.upper()
    series = _one_series(series_token, word, fail)
    s = abbreviate(series)
    if predicate is None:
        fail(
            f"COUNT(...) takes a comparison with AVG, MIN or MAX: COUNT({s} > AVG), "
            f"COUNT({s} <= 1.1 * MIN) or COUNT({s} >= 0.9 * MAX); to count the values above "
            f"a constant write APPROX COUNT({s} > 0) OVER 1000 points WITHIN 1%",
            func,
        )
    _check_not_equal(series_token, predicate, fail)
    constant = _constant(predicate)
    op = str(predicate.children[0])
    if constant is not None:
        approx = ""
        if dependent == "count":
            approx = (
                f"; to count the values {op} {abbreviate(str(constant))} write APPROX "
                f"COUNT({s} {op} {abbreviate(str(constant))}) OVER 1000 points WITHIN 1%"
            )
        fail(
            f"a correlated aggregate compares with AVG, MIN or MAX, e.g. {word}({s} > AVG), "
            f"got the constant {abbreviate(str(constant))}{approx}",
            constant,
        )
    independent, eps = _independent(predicate, word, s, fail)
    n = None
    if over is not None:
        n = window_points(over.children[0], fail, swat=False)
    if within is not None:
        fail(
            f"a correlated aggregate takes no WITHIN: {word}({s} {op} ...) [OVER N points]; "
            "for a count within a relative error write APPROX COUNT(...) OVER N points "
            "WITHIN 1%",
            within,
        )
    return ast.CorrelatedDef(
        str(name),
        dependent,
        series,
        independent,
        eps,
        n,
        text=_text(tree, source),
        **_pos(tree),
    )


def _independent(predicate: Tree, word: str, series: str, fail: Fail) -> tuple[str, float]:
    """The independent aggregate and ``eps`` of ``op [c *] AVG|MIN|MAX``."""
    op, coefficient, _star, token = predicate.children
    independent = token.lower()
    if independent not in ast.INDEPENDENT_AGGREGATES:
        fail(
            f"a correlated aggregate compares with AVG, MIN or MAX, e.g. {word}({series} > "
            f"AVG), got '{abbreviate(str(token))}'",
            token,
        )
    name = independent.upper()
    wanted = ast.INDEPENDENT_AGGREGATES[independent]
    canonical = ast.COMPARE_ALIASES[str(op)]
    meaning = _MEANINGS[independent]
    if canonical != wanted:
        fail(
            f"{name} takes the comparison {wanted}: {word}({series} {_EXAMPLES[independent]}) "
            f"({meaning}), got {op}",
            op,
        )
    if coefficient is None:
        return independent, 0.0
    text = str(coefficient)
    shown = abbreviate(text)
    if independent == "avg":
        fail(
            f"AVG takes no coefficient: {word}({series} > AVG) ({meaning}), got {shown} * AVG",
            coefficient,
        )
    bound = "c >= 1" if independent == "min" else "0 < c <= 1"
    takes = f"{name} takes a coefficient {bound} ({series} {wanted} c * {name}: {meaning})"
    if not _NUMBER.fullmatch(text):
        fail(f"{takes}, got '{shown}'", coefficient)
    c = Decimal(text)
    if (c < 1) if independent == "min" else not 0 < c <= 1:
        fail(f"{takes}, got {shown}", coefficient)
    if independent == "min" and c >= _HUGE:
        fail(
            f"coefficient '{shown}' is too large; numbers must be below about 1.8e308", coefficient
        )
    if independent == "max" and c < _TINY:
        fail(f"coefficient '{shown}' is too close to 0 to be told apart from it", coefficient)
    eps = coefficient_eps(independent, text)
    if not math.isfinite(eps):
        fail(
            f"coefficient '{shown}' is too large; numbers must be below about 1.8e308", coefficient
        )
    if independent == "max" and eps >= 1:  # a coefficient so small that 1 - c rounds to 1
        fail(f"coefficient '{shown}' is too close to 0 to be told apart from it", coefficient)
    return independent, eps
