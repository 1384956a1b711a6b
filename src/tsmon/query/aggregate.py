"""Bind a parsed aggregate query to the series that exist: expand globs, pool weights.

:func:`resolve_aggregate` turns an :class:`~tsmon.query.ast.AggregateDef` into a
:class:`ResolvedAggregate` over concrete series names, once, when the query is registered
(series created later do not join it). It uses the engine's matching rule for ``ON`` triggers
(:mod:`tsmon.query.patterns`: case-sensitive fnmatch; ``*``, ``?`` or ``[`` make a glob).
No protocol code is imported here; a runtime builds its protocol query from the result.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction

from tsmon.query.ast import AGGREGATES, WEIGHTED_AGGREGATES, AggregateDef, Term
from tsmon.query.patterns import is_glob, series_matches

_WEIGHT_AFTER = re.compile(r"(.+)\*((\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?)")


@dataclass(frozen=True)
class ResolvedAggregate:
    """An aggregate query over concrete series, ready to become a protocol query.

    ``weights`` maps each series to its weight ``K_i`` (1.0 for MIN and MAX); it is never
    empty and no weight is 0. Its order is deterministic: terms in written order, each glob's
    matches sorted by name, and a series named by several terms at its first place. For AVG,
    ``|S|`` is ``len(weights)``.

    Examples
    --------
    >>> r = ResolvedAggregate("d", "sum", {"a.x": 2.0, "b.x": -1.0}, 0.5)
    >>> r.objects, r.weights["b.x"]
    (('a.x', 'b.x'), -1.0)
    """

    name: str
    aggregate: str
    weights: dict[str, float] = field(hash=False)
    delta: float

    @property
    def objects(self) -> tuple[str, ...]:
        """The series of the query, in the order of ``weights``."""
        return tuple(self.weights)


class QueryResolveError(ValueError):
    """A parsed aggregate query that does not fit the current series.

    Raised for a literal series that does not exist, a glob that matches none, and a series
    whose weights add up to 0 once globs are expanded. ``query`` and ``term`` name the query
    and the offending term(s); ``line`` and ``column`` are the term's position in the query
    text (0 when unknown).

    Examples
    --------
    >>> err = QueryResolveError("path", "r9.q", "unknown series 'r9.q'", 1, 20)
    >>> print(err)
    query 'path', term 'r9.q' at line 1:20: unknown series 'r9.q'
    """

    def __init__(self, query: str, term: str, detail: str, line: int = 0, column: int = 0) -> None:
        self.query = query
        self.term = term
        self.detail = detail
        self.line = line
        self.column = column
        where = f" at line {line}:{column}" if line else ""
        super().__init__(f"query '{query}', term '{term}'{where}: {detail}")


def resolve_aggregate(defn: AggregateDef, series: Iterable[str]) -> ResolvedAggregate:
    """Expand the globs of ``defn`` against ``series`` (the series that exist now) and pool.

    A literal name must be one of ``series``; a glob must match at least one. For AVG and SUM
    the weights of a series named by several terms (say ``host*.cpu`` and ``host1.cpu``) are
    summed exactly (:func:`exact_sum`), and a sum of 0 is an error; for MIN and MAX every
    series counts once. Raises :class:`QueryResolveError`.

    Examples
    --------
    >>> from tsmon.query import parse_query
    >>> hosts = ["host2.cpu", "host1.cpu", "db.cpu"]
    >>> resolve_aggregate(parse_query("QUERY m AS MAX(host*.cpu, db.cpu) WITHIN 1"), hosts)
    ResolvedAggregate(name='m', aggregate='max',
                      weights={'host1.cpu': 1.0, 'host2.cpu': 1.0, 'db.cpu': 1.0}, delta=1.0)
    >>> q = parse_query("QUERY s AS SUM(db.cpu - 0.5 * host*.cpu, host1.cpu) WITHIN 2")
    >>> resolve_aggregate(q, hosts).weights
    {'db.cpu': 1.0, 'host1.cpu': 0.5, 'host2.cpu': -0.5}
    >>> resolve_aggregate(parse_query("QUERY s AS SUM(host3.cpu) WITHIN 2"), hosts)
    Traceback (most recent call last):
    ...
    tsmon.query.aggregate.QueryResolveError: query 's', term 'host3.cpu' at line 1:16:
        unknown series 'host3.cpu'; did you mean 'host1.cpu', 'host2.cpu'?
    """
    if defn.aggregate not in AGGREGATES:
        raise ValueError(f"unknown aggregate {defn.aggregate!r}; use one of {AGGREGATES}")
    known = dict.fromkeys(series)  # ordered, and a fast `in`
    named_by: dict[str, list[Term]] = {}
    for term in defn.terms:
        for name in _expand(defn, term, known):
            named_by.setdefault(name, []).append(term)
    weights = {name: _weight(defn, name, terms) for name, terms in named_by.items()}
    if not weights:
        raise ValueError(f"query {defn.name!r} has no terms; an aggregate needs a series")
    return ResolvedAggregate(defn.name, defn.aggregate, weights, defn.delta)


def _expand(defn: AggregateDef, term: Term, known: dict[str, None]) -> list[str]:
    """The series a term stands for: a glob's matches sorted by name, or the literal name."""
    if is_glob(term.series):
        found = sorted(name for name in known if series_matches(name, (term.series,)))
        if not found:
            detail = f"pattern '{term.series}' matches no series{_glob_hint(term.series, known)}"
            raise _error(defn, term, detail)
        return found
    if term.series not in known:
        detail = f"unknown series '{term.series}'{_literal_hint(term.series, known)}"
        raise _error(defn, term, detail)
    return [term.series]


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


def _weight(defn: AggregateDef, name: str, terms: list[Term]) -> float:
    """The pooled weight of series ``name`` over the terms that name it (1 for MIN/MAX)."""
    if defn.aggregate not in WEIGHTED_AGGREGATES:
        return 1.0
    total = exact_sum(term.coefficient for term in terms)
    if total != 0 and math.isfinite(total):
        return total
    spelled = ", ".join(f"'{t.series}' ({t.coefficient:g})" for t in terms)
    problem = "add up to 0" if total == 0 else "add up to more than about 1.8e308"
    detail = (
        f"the weights of series '{name}' from {spelled} {problem}; narrow a pattern "
        "(e.g. host[!1].cpu) or drop a term"
    )
    raise QueryResolveError(
        defn.name, ", ".join(t.series for t in terms), detail, terms[0].line, terms[0].column
    )


def _error(defn: AggregateDef, term: Term, detail: str) -> QueryResolveError:
    return QueryResolveError(defn.name, term.series, detail, term.line, term.column)


def _literal_hint(name: str, known: dict[str, None]) -> str:
    """Why a literal may be unknown: a subtraction written without spaces, or a typo."""
    for i, char in enumerate(name):
        left, right = name[:i], name[i + 1 :]
        if char == "-" and left in known and right in known:
            return (
                f"; a '-' with no space around it is part of the name: to subtract, write "
                f"'{left} - {right}'"
            )
    close = difflib.get_close_matches(name, list(known), n=3)
    if close:
        return "; did you mean " + ", ".join(f"'{c}'" for c in close) + "?"
    return f" ({len(known)} series exist)"


def _glob_hint(pattern: str, known: dict[str, None]) -> str:
    """Why a glob may match nothing: a weight written after the series (``a.x*2``)."""
    weight_after = _WEIGHT_AFTER.fullmatch(pattern)
    if weight_after and weight_after.group(1) in known:
        series, number = weight_after.group(1), weight_after.group(2)
        return (
            f"; a '*' after a name, without spaces, makes a glob: to weight the series, write "
            f"'{number} * {series}'"
        )
    return f" ({len(known)} series exist)"
