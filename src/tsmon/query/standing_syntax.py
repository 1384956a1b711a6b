"""Build standing-query statements from lark trees: the aggregate, the window, ε and p.

Used by :mod:`tsmon.query.parser` for ``QUERY name AS SUM|AVG(...) WITHIN eps CONFIDENCE p``
(an ``aggregate_body`` with a CONFIDENCE clause) and ``QUERY name AS MAX|MIN OVER|SINCE ... OF
SUM|AVG(...) WITHIN eps CONFIDENCE p`` (a ``standing_body``); the syntax is in ``grammar.lark``
("Standing aggregate queries"). The arguments of the aggregate are read and pooled as those of
bounded aggregates (:func:`~tsmon.query.aggregate_syntax.pooled_terms`), windows as those of
statistics (:func:`~tsmon.query.window_syntax.window_spec`). Every error is a
:class:`~tsmon.query.errors.QuerySyntaxError` at the offending token, raised by the ``fail``
callback the parser passes in.
"""

from __future__ import annotations

import re
from decimal import Decimal

from lark import Token, Tree

from tsmon.core.units import abbreviate
from tsmon.core.window_spec import WindowKind
from tsmon.query import ast
from tsmon.query.aggregate_syntax import Fail, pooled_terms, within_number
from tsmon.query.window_syntax import instant_ms, window_spec

_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_DURATION = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)(ms|s|m|h|d|w)")
_NOT_FINITE = frozenset({"inf", "infinity", "nan"})
_START = "start"


def _pos(where: Token | Tree) -> dict[str, int]:
    meta = where if isinstance(where, Token) else where.meta
    return {"line": meta.line, "column": meta.column}


def _text(tree: Tree, source: str) -> str:
    return source[tree.meta.start_pos : tree.meta.end_pos]


def _percent_of(number: str) -> Decimal:
    """``number`` / 100, exactly (a decimal shift, no rounding)."""
    sign, digits, exponent = Decimal(number).as_tuple()
    assert isinstance(exponent, int)  # a finite number
    return Decimal((sign, digits, exponent - 2))


def tolerance(token: Token, fail: Fail) -> tuple[float, bool]:
    """The ``(eps, relative)`` of a standing query's ``WITHIN``: a plain number > 0, or a
    percentage ``p%`` with ``0 < p < 100``, read as the fraction ``p / 100`` (rounded once).

    Examples
    --------
    >>> def fail(detail, where):
    ...     raise ValueError(detail)
    >>> tolerance(Token("WIDTH", "0.5"), fail), tolerance(Token("WIDTH", "1%"), fail)
    ((0.5, False), (0.01, True))
    >>> tolerance(Token("WIDTH", "7%"), fail)  # 7/100, not 7 * 0.01 == 0.07000000000000001
    (0.07, True)
    >>> tolerance(Token("WIDTH", "100%"), fail)
    Traceback (most recent call last):
    ...
    ValueError: WITHIN takes a relative tolerance > 0% and < 100% (a fraction of |A|, the
        aggregate's absolute value), got 100%
    """
    text = str(token)
    shown = abbreviate(text)
    if not text.endswith("%"):
        value = within_number(
            token, fail, bound="> 0", units="the aggregate", example="0.5", noun="tolerance"
        )
        if value <= 0:
            fail(
                "WITHIN takes a tolerance > 0 (how far the aggregate may drift from its last "
                f"evaluated value), or a percentage like 1%, got {shown}",
                token,
            )
        return value, False
    number = text[:-1]
    if not _NUMBER.fullmatch(number):
        fail(f"WITHIN takes a number like 0.5 or a percentage like 1%, got '{shown}'", token)
    percent = Decimal(number)
    if not 0 < percent < 100:
        fail(
            "WITHIN takes a relative tolerance > 0% and < 100% (a fraction of |A|, the "
            f"aggregate's absolute value), got {shown}",
            token,
        )
    eps = float(_percent_of(number))
    if eps == 0:
        fail(f"relative tolerance '{shown}' is too small to be told apart from 0%", token)
    if eps >= 1:
        fail(f"relative tolerance '{shown}' is too close to 100% to be told apart from it", token)
    return eps, True


def confidence(token: Token, fail: Fail) -> float:
    """The ``p`` of ``CONFIDENCE p``: a plain number with ``0 < p < 1``.

    Examples
    --------
    >>> def fail(detail, where):
    ...     raise ValueError(detail)
    >>> confidence(Token("PROBABILITY", "0.95"), fail), confidence(Token("PROBABILITY", ".9"), fail)
    (0.95, 0.9)
    >>> confidence(Token("PROBABILITY", "1"), fail)
    Traceback (most recent call last):
    ...
    ValueError: CONFIDENCE takes a probability p with 0 < p < 1 (how likely the answer must
        be to stay within the WITHIN tolerance), got 1
    >>> confidence(Token("PROBABILITY", "90%"), fail)
    Traceback (most recent call last):
    ...
    ValueError: CONFIDENCE takes a probability as a plain number, not a percentage: write
        CONFIDENCE 0.9, not CONFIDENCE 90%
    """
    text = str(token)
    shown = abbreviate(text)
    if text.endswith("%") and _NUMBER.fullmatch(text[:-1]):
        fraction = _percent_of(text[:-1])
        write = f"{fraction.normalize():f}" if 0 < fraction < 1 else "0.9"
        fail(
            "CONFIDENCE takes a probability as a plain number, not a percentage: write "
            f"CONFIDENCE {abbreviate(write)}, not CONFIDENCE {shown}",
            token,
        )
    if not _NUMBER.fullmatch(text):
        if text.lstrip("+-").lower() in _NOT_FINITE:
            fail(f"CONFIDENCE takes a finite probability 0 < p < 1, got '{shown}'", token)
        fail(
            f"CONFIDENCE takes a probability like 0.9 (0 < p < 1), got '{shown}'; "
            "write e.g. CONFIDENCE 0.9",
            token,
        )
    if not 0 < Decimal(text) < 1:
        fail(
            "CONFIDENCE takes a probability p with 0 < p < 1 (how likely the answer must be to "
            f"stay within the WITHIN tolerance), got {shown}",
            token,
        )
    value = float(text)
    if not 0 < value < 1:
        bound = "0" if value == 0 else "1"
        fail(f"CONFIDENCE {shown} is too close to {bound} to be told apart from it", token)
    return value


def _window(outer: Token, tree: Tree, fail: Fail) -> dict[str, object]:
    """The StandingDef fields of ``OVER <window>`` / ``SINCE <instant>|START``."""
    token = tree.children[0]
    word = outer.upper()
    if tree.data == "over_window":
        spec = window_spec(token, fail)
        if spec.kind is WindowKind.LANDMARK:
            fail(
                "OVER takes a sliding window, a duration like 30m or a count like 100 points; "
                f"for a landmark window write {word} SINCE <instant> OF ...",
                token,
            )
        return {"window": str(spec)}
    text = str(token)
    if text.casefold() == _START:
        return {"since_start": True}
    if _DURATION.fullmatch(text):
        fail(
            f"SINCE takes an instant like 2026-01-01T00:00:00Z or START, got '{abbreviate(text)}';"
            f" for a sliding window write {word} OVER {text.lstrip('+-')} OF ...",
            token,
        )
    if not text[:1].isdigit():
        fail(
            "SINCE takes an ISO-8601 instant like 2026-01-01T00:00:00Z, or START (when the "
            f"query started), got '{abbreviate(text)}'",
            token,
        )
    example = "SINCE 2026-01-01T00:00:00Z"
    return {"landmark_ms": instant_ms(text, token, fail, example=example)}


def _linear(func: Token, fail: Fail, *, outer: Token | None) -> str:
    """The aggregate of ``func``: SUM or AVG (a standing query watches a linear aggregate)."""
    aggregate = func.lower()
    if aggregate in ast.WEIGHTED_AGGREGATES:
        return aggregate
    name = func.upper()
    if outer is not None:
        fail(
            f"{outer.upper()} ... OF takes a linear aggregate, SUM(...) or AVG(...), "
            f"got {name}(...)",
            func,
        )
    largest = "largest" if aggregate == "max" else "smallest"
    fail(
        f"{name}(...) takes no CONFIDENCE: a standing query watches a linear aggregate, "
        f"SUM(...) or AVG(...); for the {largest} value of one over time write {name} OVER 30m "
        f"OF SUM(...) or {name} SINCE START OF SUM(...), or drop CONFIDENCE for a bounded "
        f"{name}(...)",
        func,
    )
    raise AssertionError("unreachable")  # pragma: no cover


def standing_def(tree: Tree, source: str, fail: Fail) -> ast.StandingDef:
    """``QUERY name AS [MAX|MIN OVER|SINCE ... OF] SUM|AVG(...) WITHIN eps CONFIDENCE p``.

    Examples
    --------
    >>> from tsmon.query.parser import parse_query
    >>> parse_query("QUERY peak AS MAX OVER 30m OF AVG(a.px, b.px) WITHIN 0.5 CONFIDENCE 0.9")
    StandingDef(name='peak', aggregate='avg', terms=(Term(coefficient=1.0, series='a.px'),
        Term(coefficient=1.0, series='b.px')), eps=0.5, relative=False, confidence=0.9,
        extremum='max', window='30m', landmark_ms=None, since_start=False)
    """
    name, body = tree.children
    fields: dict[str, object] = {}
    if body.data == "aggregate_body":
        func, *args, within, clause = body.children
        aggregate = _linear(func, fail, outer=None)
    else:
        outer, window, func, *args, within, clause = body.children
        extremum = outer.lower()
        if extremum not in ast.EXTREMA:
            fail(
                "a window (OVER or SINCE) follows MAX or MIN, the largest or smallest value of "
                f"the aggregate over time, e.g. MAX OVER 30m OF SUM(a.x, b.x); got {outer}",
                outer,
            )
        fields = {"extremum": extremum, **_window(outer, window, fail)}
        aggregate = _linear(func, fail, outer=outer)
    terms = pooled_terms(args, aggregate, fail)
    eps, relative = tolerance(within.children[0], fail)
    return ast.StandingDef(
        str(name),
        aggregate,
        terms,
        eps,
        relative,
        confidence(clause.children[0], fail),
        **fields,  # type: ignore[arg-type]
        text=_text(tree, source),
        **_pos(tree),
    )
