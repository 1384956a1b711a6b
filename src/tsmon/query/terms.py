"""The arguments of an aggregate, ``SUM(2*a.x - b.x, c.x)``: weighted series terms, pooled
per series, as bounded aggregates (:mod:`tsmon.query.aggregate`) and standing queries
(:mod:`tsmon.query.standing`) read and write them.

The lexing rules for series names inside ``AGG(...)`` are in ``grammar.lark``. Every error is a
:class:`~tsmon.query.errors.QuerySyntaxError` at the offending token, raised by the ``fail``
callback the parser passes in.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import NamedTuple, NoReturn

from lark import Token, Tree

from tsmon.core.units import abbreviate
from tsmon.query.nodes import Node
from tsmon.query.tokens import Fail, finite_number, format_number, format_series, pos, series_name

#: Aggregates of a bounded-aggregate query (``QUERY name AS SUM(...) WITHIN 5``).
AGGREGATES: tuple[str, ...] = ("avg", "sum", "min", "max")
#: Aggregates that take weights; MIN and MAX take plain series only.
WEIGHTED_AGGREGATES: tuple[str, ...] = ("avg", "sum")


@dataclass(frozen=True)
class Term(Node):
    """One series of an aggregate with its pooled weight ``K_i,j`` (1 for MIN and MAX).

    ``series`` is a series name or an fnmatch glob (it is a glob when it contains ``*``, ``?``
    or ``[``); globs are expanded by :func:`tsmon.query.aggregate.resolve_aggregate`. The
    position is that of the series' first mention.

    Examples
    --------
    >>> Term(-2.0, "b.x")
    Term(coefficient=-2.0, series='b.x')
    """

    coefficient: float
    series: str


class _Mention(NamedTuple):
    """One term as written: its signed weight and the token naming its series."""

    coefficient: float
    series: str
    token: Token


def exact_sum(values: Iterable[float]) -> float:
    """The sum of ``values`` rounded once (exact rational arithmetic), so the order of the
    values does not matter; ``inf`` when it is beyond the float range.

    Examples
    --------
    >>> exact_sum([0.1, 0.2, -0.3]), exact_sum([1e308, 1e308, -1e308]), exact_sum([1e308] * 2)
    (2.7755575615628914e-17, 1e+308, inf)
    """
    try:
        return float(sum((Fraction(value) for value in values), Fraction(0)))
    except OverflowError:
        return math.inf


def pooled_terms(args: list[Tree], aggregate: str, fail: Fail) -> tuple[Term, ...]:
    """The pooled terms of the ``agg_arg`` trees of ``AGG(arg, ...)`` (see :func:`_pool`).

    Examples
    --------
    >>> from tsmon.query import parse_query
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
        if operator is not None and aggregate not in WEIGHTED_AGGREGATES:
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
    weighted = aggregate in WEIGHTED_AGGREGATES
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


def _pool(mentions: list[_Mention], aggregate: str, fail: Fail) -> tuple[Term, ...]:
    """One :class:`~tsmon.query.Term` per distinct series, in order of first mention.

    AVG and SUM weights of a series are summed exactly and rounded once
    (:func:`exact_sum`, so the order of mentions does not matter); a
    sum of exactly 0 is an error. For MIN and MAX a repeated series counts once, with weight 1.
    """
    groups: dict[str, list[_Mention]] = {}
    for mention in mentions:
        groups.setdefault(mention.series, []).append(mention)
    terms = []
    for series, group in groups.items():
        coefficient = 1.0
        if aggregate in WEIGHTED_AGGREGATES:
            coefficient = _pooled_weight(series, group, fail)
        terms.append(Term(coefficient, series, **pos(group[0].token)))
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


def _format_term(term: Term, first: bool) -> str:
    """``[-] [|K| *] series``, or `` + ...`` / `` - ...`` after the first term."""
    weight = abs(term.coefficient)
    text = format_series(term.series)
    if weight != 1:
        text = f"{format_number(weight)} * {text}"
    if first:
        return f"-{text}" if term.coefficient < 0 else text
    return f" - {text}" if term.coefficient < 0 else f" + {text}"


def format_terms(terms: tuple[Term, ...]) -> str:
    """The arguments of an aggregate: a plain list when every weight is 1, else one sum.

    Examples
    --------
    >>> format_terms((Term(1.0, "a.x"), Term(1.0, "b.x")))
    'a.x, b.x'
    >>> format_terms((Term(-0.5, "a.x"), Term(1.0, "b.x"), Term(-1.0, "c-d")))
    '-0.5 * a.x + b.x - c-d'
    """
    if all(term.coefficient == 1 for term in terms):
        return ", ".join(format_series(term.series) for term in terms)
    return "".join(_format_term(term, i == 0) for i, term in enumerate(terms))
