"""A bounded-aggregate statement as the filter protocol's query, and as the Monitor registers
it (its globs expanded once)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from tsmon.protocols.filters.queries import Query
from tsmon.query import AggregateDef, Term, resolve_aggregate
from tsmon.query.aggregate import ResolvedAggregate

__all__ = ["expanded", "to_query"]

_MAKERS = {"avg": Query.avg, "sum": Query.sum, "min": Query.min, "max": Query.max}


def to_query(resolved: ResolvedAggregate) -> Query:
    """The protocol query of a resolved ``AS AGG(...) WITHIN δ`` statement."""
    make = _MAKERS[resolved.aggregate]
    if resolved.aggregate in ("min", "max"):
        return make(resolved.name, list(resolved.weights), resolved.delta)
    return make(resolved.name, dict(resolved.weights), resolved.delta)


def expanded(statement: AggregateDef, series: Iterable[str]) -> AggregateDef:
    """``statement`` over the series its terms name now, one literal term per series with its
    pooled weight (same text): the embedded Monitor expands a glob once, when the query is
    registered, where a job's coordinator follows the series as they appear. Raises
    :class:`~tsmon.query.aggregate.QueryResolveError` for a series that does not exist.

    Examples
    --------
    >>> from tsmon.query import parse_query
    >>> q = expanded(parse_query("QUERY m AS SUM(2 * h*) WITHIN 1"), ["h2", "h1", "db"])
    >>> q.terms, q.text
    ((Term(coefficient=2.0, series='h1'), Term(coefficient=2.0, series='h2')), \
'QUERY m AS SUM(2 * h*) WITHIN 1')
    """
    weights = resolve_aggregate(statement, series).weights
    return dataclasses.replace(statement, terms=tuple(Term(w, s) for s, w in weights.items()))
