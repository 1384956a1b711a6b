"""Build bounded-aggregate statements from lark trees: terms, pooled weights, WITHIN widths.

Used by :mod:`tsmon.query.parser` for ``QUERY name AS AGG(...) WITHIN w`` and
``ALTER QUERY name WITHIN w [IMMEDIATELY]``; the lexing rules for series names inside
``AGG(...)`` are in ``grammar.lark``. Every error is a
:class:`~tsmon.query.errors.QuerySyntaxError` at the offending token, raised by the ``fail``
callback the parser passes in.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import NamedTuple, NoReturn

from lark import Token, Tree

from tsmon.core.units import abbreviate
from tsmon.query import ast
from tsmon.query.aggregate import exact_sum

#: Raises a QuerySyntaxError with a message at a token, tree or node.
Fail = Callable[[str, object], NoReturn]

_WIDTH_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_WIDTH_WITH_UNIT = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)[A-Za-z]+")
_NOT_FINITE = frozenset({"inf", "infinity", "nan"})


class _Mention(NamedTuple):
    """One term as written: its signed weight and the token naming its series."""

    coefficient: float
    series: str
    token: Token


def _pos(where: Token | Tree) -> dict[str, int]:
    meta = where if isinstance(where, Token) else where.meta
    return {"line": meta.line, "column": meta.column}


def _text(tree: Tree, source: str) -> str:
    return source[tree.meta.start_pos : tree.meta.end_pos]


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


def width(token: Token, fail: Fail) -> float:
    """The precision constraint δ of ``WITHIN <token>``: a finite plain number > 0.

    Examples
    --------
    >>> def fail(detail, where):
    ...     raise ValueError(detail)
    >>> width(Token("WIDTH", "1e-3"), fail), width(Token("WIDTH", "+5"), fail)
    (0.001, 5.0)
    >>> width(Token("WIDTH", "5ms"), fail)
    Traceback (most recent call last):
    ...
    ValueError: WITHIN takes a plain number, in the units of the series' values, got '5ms';
        write e.g. WITHIN 0.5
    """
    value = within_number(
        token, fail, bound="> 0", units="the series' values", example="0.5", noun="width"
    )
    if value <= 0:
        fail(
            f"WITHIN takes a width > 0 (the largest answer interval hi - lo), got "
            f"{abbreviate(str(token))}",
            token,
        )
    return value


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
    if not _WIDTH_NUMBER.fullmatch(text):
        if text.endswith("%") and _WIDTH_NUMBER.fullmatch(text[:-1]):
            fail(
                f"WITHIN {shown} is a relative tolerance, which only standing queries take "
                "(QUERY name AS SUM(...) WITHIN 1% CONFIDENCE 0.9); write a plain number "
                f"{bound}, e.g. WITHIN {example}",
                token,
            )
        if _WIDTH_WITH_UNIT.fullmatch(text):
            fail(
                f"WITHIN takes a plain number, in the units of {units}, got "
                f"'{shown}'; write e.g. WITHIN {example}",
                token,
            )
        if text.lstrip("+-").lower() in _NOT_FINITE:
            fail(
                f"WITHIN takes a finite number {bound}, got '{shown}'; write e.g. WITHIN {example}",
                token,
            )
        fail(f"WITHIN takes a number {bound}, e.g. WITHIN {example}, got '{shown}'", token)
    value = float(text)
    if not math.isfinite(value):
        fail(f"{noun} '{shown}' is too large; numbers must be below about 1.8e308", token)
    return value


def alter_precision(tree: Tree, source: str, fail: Fail) -> ast.AlterPrecision:
    """``ALTER QUERY name WITHIN w [IMMEDIATELY]``.

    Examples
    --------
    >>> from tsmon.query.parser import parse_query
    >>> parse_query("alter query diff within 0.1 immediately")
    AlterPrecision(name='diff', delta=0.1, immediately=True)
    """
    name, within, immediately = tree.children
    return ast.AlterPrecision(
        str(name),
        width(within.children[0], fail),
        immediately is not None,
        text=_text(tree, source),
        **_pos(tree),
    )


def aggregate_def(tree: Tree, source: str, fail: Fail) -> ast.AggregateDef:
    """``QUERY name AS AGG(arg, ...) WITHIN w``, with the terms of all arguments pooled.

    With a ``CONFIDENCE`` clause the body is a standing query, read by
    :func:`tsmon.query.standing_syntax.standing_def` instead.

    Examples
    --------
    >>> from tsmon.query.parser import parse_query
    >>> q = parse_query("QUERY mix AS AVG(0.5*a.x + 1.5 * b.x, -c.x / 4, a.x) WITHIN 0.1")
    >>> q.weights
    {'a.x': 1.5, 'b.x': 1.5, 'c.x': -0.25}
    """
    name, body = tree.children
    func, *args, within, _confidence = body.children
    aggregate = func.lower()
    return ast.AggregateDef(
        str(name),
        aggregate,
        pooled_terms(args, aggregate, fail),
        width(within.children[0], fail),
        text=_text(tree, source),
        **_pos(tree),
    )


def pooled_terms(args: list[Tree], aggregate: str, fail: Fail) -> tuple[ast.Term, ...]:
    """The pooled terms of the ``agg_arg`` trees of ``AGG(arg, ...)`` (see :func:`_pool`).

    Examples
    --------
    >>> from tsmon.query.parser import parse_query
    >>> parse_query("QUERY q AS SUM(a, 2*b - a / 2, b) WITHIN 1").weights
    {'a': 0.5, 'b': 3.0}
    """
    mentions = [mention for arg in args for mention in _mentions(arg, aggregate, fail)]
    return _pool(mentions, aggregate, fail)


def _mentions(arg: Tree, aggregate: str, fail: Fail) -> list[_Mention]:
    """The terms of one argument ``[sign] term (+|- term)*``, each with its signed weight."""
    sign, *rest = arg.children
    operators = [sign.children[0] if sign is not None else None, *rest[1::2]]
    out: list[_Mention] = []
    for operator, term in zip(operators, rest[0::2], strict=True):
        if operator is not None and aggregate not in ast.WEIGHTED_AGGREGATES:
            _fail_plain(aggregate, operator, fail)
        coefficient, token = _term(term, aggregate, fail)
        if operator == "-":
            coefficient = -coefficient
        out.append(_Mention(coefficient, series_name(token), token))
    return out


def _fail_plain(aggregate: str, where: object, fail: Fail) -> NoReturn:
    name = aggregate.upper()
    fail(
        f"{name} takes plain series names separated by ',' (no signs, weights or sums), "
        f"e.g. {name}(a.x, b.x)",
        where,
    )


def _term(term: Tree, aggregate: str, fail: Fail) -> tuple[float, Token]:
    """The unsigned weight and series token of ``[number *] series [/ number]``."""
    weighted = aggregate in ast.WEIGHTED_AGGREGATES
    if term.data == "constant":
        number = term.children[0]
        fail(
            f"a bare number ({abbreviate(str(number))}) cannot be a term: an aggregate combines "
            f"series values; to weight a series write {abbreviate(str(number))} * name",
            number,
        )
    if term.data == "weight_after":
        series, star, number = term.children
        if not weighted:
            _fail_plain(aggregate, star, fail)
        fail(
            f"write the weight before the series: {number} * {series}. A '*' after a name is "
            "part of the name when written without spaces (a glob, like host*.cpu)",
            star,
        )
    number, star, series, slash, divisor = term.children
    if not weighted and (number is not None or slash is not None):
        _fail_plain(aggregate, number if number is not None else slash, fail)
    coefficient = finite_number(number, fail) if number is not None else 1.0
    if divisor is not None:
        by = finite_number(divisor, fail)
        if by == 0:
            fail(f"division by zero in the weight of '{series_name(series)}'", divisor)
        coefficient /= by
    if not math.isfinite(coefficient):
        fail(f"the weight of '{series_name(series)}' is too large (over about 1.8e308)", term)
    return coefficient, series


def _pool(mentions: list[_Mention], aggregate: str, fail: Fail) -> tuple[ast.Term, ...]:
    """One :class:`~tsmon.query.ast.Term` per distinct series, in order of first mention.

    AVG and SUM weights of a series are summed exactly and rounded once
    (:func:`~tsmon.query.aggregate.exact_sum`, so the order of mentions does not matter); a
    sum of exactly 0 is an error. For MIN and MAX a repeated series counts once, with weight 1.
    """
    groups: dict[str, list[_Mention]] = {}
    for mention in mentions:
        groups.setdefault(mention.series, []).append(mention)
    terms = []
    for series, group in groups.items():
        coefficient = 1.0
        if aggregate in ast.WEIGHTED_AGGREGATES:
            coefficient = _pooled_weight(series, group, fail)
        terms.append(ast.Term(coefficient, series, **_pos(group[0].token)))
    return tuple(terms)


def _pooled_weight(series: str, group: list[_Mention], fail: Fail) -> float:
    first = group[0].token
    total = exact_sum(mention.coefficient for mention in group)
    if not math.isfinite(total):
        fail(f"the weights of '{series}' add up to more than about 1.8e308", first)
    if total == 0 and len(group) == 1:
        fail(f"'{series}' has weight 0; drop the term or give it a non-zero weight", first)
    if total == 0:
        where = ", ".join(f"{m.token.line}:{m.token.column}" for m in group)
        fail(
            f"the weights of '{series}' add up to 0 (it appears at {where}); a series with "
            "weight 0 takes no part, so drop its terms",
            first,
        )
    return total
