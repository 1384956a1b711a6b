"""Approximate aggregates, ``QUERY name AS APPROX COUNT|SUM(...) OVER N points WITHIN p% [MAX
R]``, answered from an exponential histogram: their syntax-tree node, builder and canonical
text.

The syntax is in ``grammar.lark`` ("Queries answered from stream summaries"); the numbers, the
window and the series are read by :mod:`tsmon.query.summary`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from lark import Token, Tree

from tsmon.core.units import abbreviate
from tsmon.query.correlated import EXAMPLES, INDEPENDENT_AGGREGATES
from tsmon.query.expr import COMPARE_ALIASES
from tsmon.query.nodes import Node
from tsmon.query.summary import check_not_equal, constant_of, one_series, real, whole, window_points
from tsmon.query.tokens import (
    NOT_FINITE,
    NUMBER,
    Fail,
    format_number,
    format_percent,
    format_points,
    format_series,
    percent_fraction,
    pos,
    shift,
    source_text,
)

#: Aggregates answered from an exponential histogram (``QUERY name AS APPROX COUNT|SUM(...)``).
APPROX_KINDS: tuple[str, ...] = ("count", "sum")
#: The largest ``R`` of ``APPROX SUM(...) ... MAX R``: 2**53, the integers a float holds exactly.
MAX_SUM_VALUE: int = 2**53


@dataclass(frozen=True)
class ApproxDef(Node):
    """One ``QUERY name AS APPROX COUNT|SUM(...) OVER N points WITHIN p%`` statement.

    A basic count or sum over a sliding window of the series' last ``window_points`` values,
    answered from an exponential histogram (Datar, Gionis, Indyk & Motwani 2002) within the
    relative error ``eps`` (``WITHIN p%``, ``eps = p / 100``, ``0 < eps < 1``):

    * ``count``: how many of the values satisfy ``value <op> threshold``
      (``APPROX COUNT(s > 0)``; ``op`` is canonical, ``=`` -> ``==``, ``<>`` -> ``!=``);
    * ``sum``: the sum of the values, which must be integers in ``[0, max_value]``
      (``APPROX SUM(s) ... MAX R``).

    ``text`` is the statement's source text.

    Examples
    --------
    >>> ApproxDef("errs", "count", "errors.n", 10_000, 0.01, ">", 0.0)
    ApproxDef(name='errs', kind='count', series='errors.n', window_points=10000, eps=0.01, op='>',
        threshold=0.0, max_value=None)
    >>> ApproxDef("bytes", "sum", "bytes.n", 10_000, 0.005, max_value=1500).max_value
    1500
    """

    name: str
    kind: str
    series: str
    window_points: int
    eps: float
    op: str | None = None
    threshold: float | None = None
    max_value: int | None = None
    text: str = field(default="", compare=False, repr=False)


# ---- building -----------------------------------------------------------------------------------


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
        if NUMBER.fullmatch(text) and 0 < Decimal(text) < 1:
            percent = f"{shift(Decimal(text), 2).normalize():f}"
            fail(
                f"{word} takes a relative error as a percentage: write WITHIN "
                f"{abbreviate(percent)}%, not WITHIN {shown}",
                token,
            )
        fail(f"{word} takes a relative error as a percentage like WITHIN 1%, got {shown}", token)
    if not NUMBER.fullmatch(text[:-1]):
        fail(f"WITHIN takes a percentage like 1%, got '{shown}'", token)
    out_of_range = (
        f"{word} takes a relative error > 0% and < 100% (a fraction of the exact answer), "
        f"got {shown}"
    )
    return percent_fraction(token, fail, noun="error", out_of_range=out_of_range)


def approx_def(tree: Tree, source: str, fail: Fail) -> ApproxDef:
    """``QUERY name AS APPROX COUNT(series op c) | SUM(series) OVER N points WITHIN p% [MAX R]``.

    Examples
    --------
    >>> from tsmon.query import parse_query
    >>> parse_query("QUERY errs AS APPROX COUNT(errors.n <> 0) OVER 10000 points WITHIN 1%")
    ApproxDef(name='errs', kind='count', series='errors.n', window_points=10000, eps=0.01,
        op='!=', threshold=0.0, max_value=None)
    """
    name, body = tree.children
    kind = "count" if body.data == "approx_count" else "sum"
    func = body.children[0] if kind == "count" else None  # SUM is not kept
    series_token, predicate, over, within, *rest = body.children[1 if func else 0 :]
    word = f"APPROX {kind.upper()}"
    series = one_series(series_token, word, fail)
    fields: dict[str, object] = {}
    if kind == "count":
        if predicate is None:
            fail(
                f"APPROX COUNT takes a comparison: APPROX COUNT({abbreviate(series)} > 0) counts "
                "the values above 0 (op is one of < <= > >= == !=)",
                func,
            )
        check_not_equal(series_token, predicate, fail)
        constant = constant_of(predicate)
        if constant is None:
            _approx_not_correlated(predicate, series, fail)
        assert constant is not None
        fields["op"] = COMPARE_ALIASES[str(predicate.children[0])]
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
        if value > MAX_SUM_VALUE:
            fail(
                f"MAX '{abbreviate(str(limit))}' is too large; MAX takes R <= "
                f"{MAX_SUM_VALUE} (2**53)",
                limit,
            )
        fields["max_value"] = value
    return ApproxDef(
        str(name),
        kind,
        series,
        n,
        eps,
        **fields,  # type: ignore[arg-type]
        text=source_text(tree, source),
        **pos(tree),
    )


def _approx_not_correlated(predicate: Tree, series: str, fail: Fail) -> None:
    op, _coefficient, _star, independent = predicate.children
    word = independent.lower()
    shown = abbreviate(str(independent))
    if word in INDEPENDENT_AGGREGATES:
        fail(
            f"APPROX COUNT compares with a constant, like APPROX COUNT({abbreviate(series)} {op} "
            f"0); for a correlated aggregate write COUNT({abbreviate(series)} "
            f"{EXAMPLES[word]}), without APPROX",
            independent,
        )
    if word in NOT_FINITE:
        fail(f"APPROX COUNT compares with a finite number, got '{shown}'", independent)
    fail(f"APPROX COUNT compares with a number like 0, got '{shown}'", independent)


# ---- writing ------------------------------------------------------------------------------------


def format_approx_call(query: ApproxDef) -> str:
    """``APPROX COUNT(series op c)`` or ``APPROX SUM(series)``.

    Examples
    --------
    >>> format_approx_call(ApproxDef("e", "count", "errors.n", 100, 0.01, "!=", -1.5))
    'APPROX COUNT(errors.n != -1.5)'
    """
    series = format_series(query.series)
    if query.kind == "count":
        assert query.op is not None and query.threshold is not None
        return f"APPROX COUNT({series} {query.op} {format_number(query.threshold)})"
    return f"APPROX SUM({series})"


def format_approx(query: ApproxDef) -> str:
    """Canonical text of ``QUERY name AS APPROX COUNT|SUM(...) OVER N points WITHIN p%
    [MAX R]``.

    Examples
    --------
    >>> format_approx(ApproxDef("bytes", "sum", "bytes.n", 10_000, 0.005, max_value=1500))
    'QUERY bytes AS APPROX SUM(bytes.n) OVER 10000 points WITHIN 0.5% MAX 1500'
    """
    text = (
        f"QUERY {query.name} AS {format_approx_call(query)} "
        f"OVER {format_points(query.window_points)} WITHIN {format_percent(query.eps)}%"
    )
    return text if query.max_value is None else f"{text} MAX {query.max_value}"
