"""Correlated aggregates, ``QUERY name AS COUNT|SUM(series > AVG | <= c * MIN | >= c * MAX)
[OVER N points]``, answered from correlated-aggregate histograms: their syntax-tree node,
builder and canonical text.

The syntax is in ``grammar.lark`` ("Queries answered from stream summaries"); the window and
the series are read by :mod:`tsmon.query.summary`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from fractions import Fraction

from lark import Tree

from tsmon.core.units import abbreviate
from tsmon.query.expr import COMPARE_ALIASES
from tsmon.query.nodes import Node
from tsmon.query.summary import check_not_equal, constant_of, one_series, window_points
from tsmon.query.tokens import (
    NUMBER,
    Fail,
    format_number,
    format_points,
    format_series,
    pos,
    source_text,
)

#: Dependent aggregates of a correlated-aggregate query (``COUNT|SUM(x > AVG)``).
DEPENDENT_AGGREGATES: tuple[str, ...] = ("count", "sum")
#: Independent aggregates of a correlated-aggregate query -> the comparison each one takes.
INDEPENDENT_AGGREGATES: dict[str, str] = {"avg": ">", "min": "<=", "max": ">="}
#: How each independent aggregate is compared with, as an example ...
EXAMPLES = {"avg": "> AVG", "min": "<= 1.1 * MIN", "max": ">= 0.9 * MAX"}
# ... and in words.
_MEANINGS = {
    "avg": "the values above the average",
    "min": "the values within a factor c >= 1 of the minimum",
    "max": "the values within a factor 0 < c <= 1 of the maximum",
}
#: A MAX coefficient below this reads as 1 - c == 1: too close to 0 to be told apart from it.
_TINY = Decimal("1e-30")
#: A MIN coefficient above this makes c - 1 overflow a float.
_HUGE = Decimal("1e309")


@dataclass(frozen=True)
class CorrelatedDef(Node):
    """One ``QUERY name AS COUNT|SUM(series <cmp> AVG|MIN|MAX) [OVER N points]`` statement.

    A correlated aggregate (Gehrke, Korn & Srivastava 2001): the ``dependent`` aggregate (the
    count, or the sum, of the values) over the values selected by the ``independent`` one:

    * ``avg``: the values above the average, ``x > AVG`` (``eps`` is 0);
    * ``min``: the values within a factor of the minimum, ``x <= (1 + eps) · MIN``, written
      ``x <= c * MIN`` with ``c = 1 + eps >= 1``;
    * ``max``: the values within a factor of the maximum, ``x >= (1 - eps) · MAX``, written
      ``x >= c * MAX`` with ``c = 1 - eps``, ``0 < c <= 1``.

    ``window_points`` is the sliding window of ``OVER N points``, or None for a landmark
    window, since the query started. ``text`` is the statement's source text.

    Examples
    --------
    >>> q = CorrelatedDef("fast", "count", "calls.dur", "min", 0.1, 500)
    >>> q.comparison, q
    ('<=', CorrelatedDef(name='fast', dependent='count', series='calls.dur', independent='min',
        eps=0.1, window_points=500))
    """

    name: str
    dependent: str
    series: str
    independent: str
    eps: float = 0.0
    window_points: int | None = None
    text: str = field(default="", compare=False, repr=False)

    @property
    def comparison(self) -> str:
        """The comparison the independent aggregate takes: ``>`` (AVG), ``<=`` (MIN), ``>=`` (MAX).

        Examples
        --------
        >>> CorrelatedDef("heavy", "sum", "calls.dur", "avg").comparison
        '>'
        """
        return INDEPENDENT_AGGREGATES[self.independent]


# ---- building -----------------------------------------------------------------------------------


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
    try:
        return float(c - 1 if independent == "min" else 1 - c)
    except OverflowError:  # beyond the largest float (~1.8e308, below 1e309): inf, refused
        return math.inf


def correlated_def(tree: Tree, source: str, fail: Fail) -> CorrelatedDef:
    """``QUERY name AS COUNT|SUM(series > AVG | <= c * MIN | >= c * MAX) [OVER N points]``.

    Examples
    --------
    >>> from tsmon.query import parse_query
    >>> parse_query("QUERY fast AS COUNT(calls.dur <= 1.1 * MIN) OVER 500 points")
    CorrelatedDef(name='fast', dependent='count', series='calls.dur', independent='min',
        eps=0.1, window_points=500)
    """
    name, body = tree.children
    func, series_token, predicate, over, within = body.children
    dependent = func.lower()
    if dependent not in DEPENDENT_AGGREGATES:
        fail(
            f"a correlated aggregate is COUNT(...) or SUM(...), e.g. SUM(x > AVG), got "
            f"{func.upper()}(...); a bounded {func.upper()}(...) takes series names and WITHIN",
            func,
        )
    word = dependent.upper()
    series = one_series(series_token, word, fail)
    s = abbreviate(series)
    if predicate is None:
        fail(
            f"COUNT(...) takes a comparison with AVG, MIN or MAX: COUNT({s} > AVG), "
            f"COUNT({s} <= 1.1 * MIN) or COUNT({s} >= 0.9 * MAX); to count the values above "
            f"a constant write APPROX COUNT({s} > 0) OVER 1000 points WITHIN 1%",
            func,
        )
    check_not_equal(series_token, predicate, fail)
    constant = constant_of(predicate)
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
    return CorrelatedDef(
        str(name),
        dependent,
        series,
        independent,
        eps,
        n,
        text=source_text(tree, source),
        **pos(tree),
    )


def _independent(predicate: Tree, word: str, series: str, fail: Fail) -> tuple[str, float]:
    """The independent aggregate and ``eps`` of ``op [c *] AVG|MIN|MAX``."""
    op, coefficient, _star, token = predicate.children
    independent = token.lower()
    if independent not in INDEPENDENT_AGGREGATES:
        fail(
            f"a correlated aggregate compares with AVG, MIN or MAX, e.g. {word}({series} > "
            f"AVG), got '{abbreviate(str(token))}'",
            token,
        )
    name = independent.upper()
    wanted = INDEPENDENT_AGGREGATES[independent]
    canonical = COMPARE_ALIASES[str(op)]
    meaning = _MEANINGS[independent]
    if canonical != wanted:
        fail(
            f"{name} takes the comparison {wanted}: {word}({series} {EXAMPLES[independent]}) "
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
    if not NUMBER.fullmatch(text):
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


# ---- writing ------------------------------------------------------------------------------------


def format_coefficient(independent: str, eps: float) -> str:
    """The ``c`` of ``<= c * MIN`` (``c = 1 + eps``) or ``>= c * MAX`` (``c = 1 - eps``): the
    shorter of the float ``1 ± eps`` and the exact decimal ``1 ± repr(eps)`` that reads back as
    ``eps`` (the parser computes ``c - 1`` or ``1 - c`` exactly and rounds once).

    Examples
    --------
    >>> format_coefficient("min", 0.1), format_coefficient("max", 0.1)
    ('1.1', '0.9')
    >>> format_coefficient("min", 1e300), format_coefficient("max", 1e-20)
    ('1e+300', '0.99999999999999999999')
    """
    sign = 1 if independent == "min" else -1
    with localcontext() as context:
        context.prec = 1000  # 1 ± repr(eps) exactly: eps has 17 digits, from 1e-324 to 1e308
        exact = str(Decimal(1) + sign * Decimal(repr(float(eps)))).replace("E", "e")
    short = format_number(1 + sign * eps)
    return (
        short if len(short) <= len(exact) and coefficient_eps(independent, short) == eps else exact
    )


def format_correlated_call(query: CorrelatedDef) -> str:
    """``COUNT|SUM(series > AVG)``, ``(series <= c * MIN)`` or ``(series >= c * MAX)``; a
    coefficient of 1 (``eps == 0``) is left out.

    Examples
    --------
    >>> format_correlated_call(CorrelatedDef("slow", "sum", "calls.dur", "max", 0.1))
    'SUM(calls.dur >= 0.9 * MAX)'
    >>> format_correlated_call(CorrelatedDef("low", "count", "calls.dur", "min"))
    'COUNT(calls.dur <= MIN)'
    """
    bound = query.independent.upper()
    if query.independent != "avg" and query.eps != 0:
        bound = f"{format_coefficient(query.independent, query.eps)} * {bound}"
    series = format_series(query.series)
    return f"{query.dependent.upper()}({series} {query.comparison} {bound})"


def format_correlated(query: CorrelatedDef) -> str:
    """Canonical text of ``QUERY name AS COUNT|SUM(series op [c *] AVG|MIN|MAX) [OVER N points]``.

    Examples
    --------
    >>> format_correlated(CorrelatedDef("long", "count", "calls.dur", "avg", window_points=500))
    'QUERY long AS COUNT(calls.dur > AVG) OVER 500 points'
    """
    text = f"QUERY {query.name} AS {format_correlated_call(query)}"
    if query.window_points is None:
        return text
    return f"{text} OVER {format_points(query.window_points)}"
