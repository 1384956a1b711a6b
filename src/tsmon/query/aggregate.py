"""Bounded aggregates, ``QUERY name AS SUM|AVG|MIN|MAX(...) WITHIN delta`` and ``ALTER QUERY
name WITHIN delta [IMMEDIATELY]``: their syntax-tree nodes, builders and canonical text, and
their binding to the series that exist.

The arguments (weighted terms, pooled per series) are read and written by
:mod:`tsmon.query.terms`. :func:`resolve_aggregate` turns an :class:`AggregateDef` into a
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

from lark import Token, Tree

from tsmon.core.units import abbreviate
from tsmon.query.nodes import Node
from tsmon.query.patterns import is_glob, series_matches
from tsmon.query.terms import (
    AGGREGATES,
    WEIGHTED_AGGREGATES,
    Term,
    exact_sum,
    format_terms,
    pooled_terms,
)
from tsmon.query.tokens import Fail, format_number, pos, source_text, within_number

_WEIGHT_AFTER = re.compile(r"(.+)\*((\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?)")


@dataclass(frozen=True)
class AggregateDef(Node):
    """One ``QUERY name AS AGG(...) WITHIN delta`` statement: a bounded-aggregate query.

    The answer is an interval ``[lo, hi]`` of width at most ``delta`` holding the exact
    aggregate of the series' current values (Olston, Jiang & Widom 2003):

    * ``sum``: ``Σ K_i·V_i``; ``avg``: ``(1/|S|)·Σ K_i·V_i`` with ``|S|`` the number of
      distinct series (Appendix B); weights may be negative but never 0;
    * ``min`` / ``max``: the least / greatest ``V_i``; every weight is 1 (Appendix A).

    ``terms`` are pooled: one :class:`Term` per distinct series spelling, in order of first
    mention, with the weights of all its mentions summed (so ``SUM(a, a)`` equals ``SUM(2*a)``;
    for MIN and MAX a repeated series counts once). A glob is pooled by its spelling here;
    :func:`resolve_aggregate` pools again after expanding it.
    ``text`` is the statement's source text.

    Examples
    --------
    >>> q = AggregateDef("diff", "sum", (Term(2.0, "a.x"), Term(-1.0, "b.x")), 0.5)
    >>> q.weights, q.delta
    ({'a.x': 2.0, 'b.x': -1.0}, 0.5)
    """

    name: str
    aggregate: str
    terms: tuple[Term, ...]
    delta: float
    text: str = field(default="", compare=False, repr=False)

    @property
    def weights(self) -> dict[str, float]:
        """Series (or glob) spelling -> weight, in the order of the terms."""
        return {term.series: term.coefficient for term in self.terms}


@dataclass(frozen=True)
class AlterPrecision(Node):
    """``ALTER QUERY name WITHIN delta [IMMEDIATELY]``: a new width for an aggregate query.

    It defines no query; it changes the precision constraint of one registered earlier (in
    the same file or before). Following §3.4 of the paper, a larger ``delta`` takes effect at
    the next bound growth; a smaller one is reached gradually, as bounds shrink, unless
    ``immediately`` is set, which asks the coordinator to shrink bounds at once (explicit
    shrink messages). ``IMMEDIATELY`` makes no difference when ``delta`` grows.

    Examples
    --------
    >>> AlterPrecision("diff", 0.1, immediately=True)
    AlterPrecision(name='diff', delta=0.1, immediately=True)
    """

    name: str
    delta: float
    immediately: bool = False
    text: str = field(default="", compare=False, repr=False)


# ---- building -----------------------------------------------------------------------------------


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


def alter_precision(tree: Tree, source: str, fail: Fail) -> AlterPrecision:
    """``ALTER QUERY name WITHIN w [IMMEDIATELY]``.

    Examples
    --------
    >>> from tsmon.query import parse_query
    >>> parse_query("alter query diff within 0.1 immediately")
    AlterPrecision(name='diff', delta=0.1, immediately=True)
    """
    name, within, immediately = tree.children
    return AlterPrecision(
        str(name),
        width(within.children[0], fail),
        immediately is not None,
        text=source_text(tree, source),
        **pos(tree),
    )


def aggregate_def(tree: Tree, source: str, fail: Fail) -> AggregateDef:
    """``QUERY name AS AGG(arg, ...) WITHIN w``, with the terms of all arguments pooled.

    With a ``CONFIDENCE`` clause the body is a standing query, read by
    :func:`tsmon.query.standing.standing_def` instead.

    Examples
    --------
    >>> from tsmon.query import parse_query
    >>> q = parse_query("QUERY mix AS AVG(0.5*a.x + 1.5 * b.x, -c.x / 4, a.x) WITHIN 0.1")
    >>> q.weights
    {'a.x': 1.5, 'b.x': 1.5, 'c.x': -0.25}
    """
    name, body = tree.children
    func, *args, within, _confidence = body.children
    aggregate = func.lower()
    return AggregateDef(
        str(name),
        aggregate,
        pooled_terms(args, aggregate, fail),
        width(within.children[0], fail),
        text=source_text(tree, source),
        **pos(tree),
    )


# ---- writing ------------------------------------------------------------------------------------


def format_aggregate(query: AggregateDef) -> str:
    """Canonical text of ``QUERY name AS AGG(...) WITHIN delta``.

    Examples
    --------
    >>> from tsmon.query.terms import Term
    >>> format_aggregate(AggregateDef("m", "max", (Term(1.0, "host*.cpu"),), 1.0))
    'QUERY m AS MAX(host*.cpu) WITHIN 1'
    """
    return (
        f"QUERY {query.name} AS {query.aggregate.upper()}({format_terms(query.terms)}) "
        f"WITHIN {format_number(query.delta)}"
    )


def format_alter(alter: AlterPrecision) -> str:
    """Canonical text of ``ALTER QUERY name WITHIN delta [IMMEDIATELY]``.

    Examples
    --------
    >>> format_alter(AlterPrecision("d", 2.5))
    'ALTER QUERY d WITHIN 2.5'
    """
    text = f"ALTER QUERY {alter.name} WITHIN {format_number(alter.delta)}"
    return f"{text} IMMEDIATELY" if alter.immediately else text


# ---- binding to series --------------------------------------------------------------------------


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
