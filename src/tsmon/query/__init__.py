"""The persistent-query language: parse ``QUERY ... ON ... WHEN ... EMIT ...`` and compile it,
parse bounded-aggregate queries (``QUERY ... AS SUM(...) WITHIN ...``) and resolve them,
parse top-k queries (``QUERY ... AS TOP 10 OF doc:* BY hits WITHIN 5``) and standing queries
(``QUERY ... AS MAX OVER 30m OF AVG(...) WITHIN 0.5 CONFIDENCE 0.9``).

Examples
--------
>>> from tsmon.query import compile_query, parse_query
>>> q = compile_query(parse_query("QUERY hot ON host*.cpu WHEN mean(5m) > 0.9"))
>>> q.matches("host1.cpu"), sorted(str(w) for w in q.windows)
(True, ['5m'])
>>> agg = resolve_aggregate(parse_query("QUERY d AS SUM(2*a.x - b.x) WITHIN 0.5"), ["a.x", "b.x"])
>>> agg.weights, agg.delta
({'a.x': 2.0, 'b.x': -1.0}, 0.5)
>>> top = parse_query("QUERY popular AS TOP 10 OF doc:* BY hits OVER 15m WITHIN 5")
>>> top.k, top.window_ms, top.object_of("doc:7.hits")
(10, 900000, 'doc:7')
>>> idx = parse_query("QUERY idx AS AVG(a.px, b.px, c.px) WITHIN 1% CONFIDENCE 0.95")
>>> idx.eps, idx.relative, idx.confidence, idx.extremum
(0.01, True, 0.95, None)

Queries answered from stream summaries: wavelets (``INNER``, ``POINT``, ``RANGE``), exponential
histograms (``APPROX COUNT|SUM``) and correlated aggregates (``COUNT|SUM(x > AVG)``):

>>> inner = parse_query("QUERY recent AS INNER(temp.v, [8, 4, 2, 1]) WITHIN 20")
>>> inner.kind, inner.weights, inner.indices, inner.window_points, inner.within
('inner', (8.0, 4.0, 2.0, 1.0), (0, 1, 2, 3), 1024, 20.0)
>>> parse_query("QUERY slow AS SUM(calls.dur >= 0.9 * MAX)")
CorrelatedDef(name='slow', dependent='sum', series='calls.dur', independent='max', eps=0.1,
    window_points=None)
"""

from tsmon.query.aggregate import QueryResolveError, ResolvedAggregate, resolve_aggregate
from tsmon.query.ast import (
    AggregateDef,
    AlterPrecision,
    AlterTopK,
    ApproxDef,
    CorrelatedDef,
    QueryDef,
    StandingDef,
    Statement,
    Term,
    TopKDef,
    WaveletDef,
)
from tsmon.query.compile import ArrayBindings, Bindings, CompiledQuery, compile_query
from tsmon.query.errors import QuerySyntaxError
from tsmon.query.parser import parse_expr, parse_queries, parse_query, query_key
from tsmon.query.printer import format_expr, format_query

__all__ = [
    "AggregateDef",
    "AlterPrecision",
    "AlterTopK",
    "ApproxDef",
    "ArrayBindings",
    "Bindings",
    "CompiledQuery",
    "CorrelatedDef",
    "QueryDef",
    "QueryResolveError",
    "QuerySyntaxError",
    "ResolvedAggregate",
    "StandingDef",
    "Statement",
    "Term",
    "TopKDef",
    "WaveletDef",
    "compile_query",
    "format_expr",
    "format_query",
    "parse_expr",
    "parse_queries",
    "parse_query",
    "query_key",
    "resolve_aggregate",
]
