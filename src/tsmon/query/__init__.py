"""The persistent-query language: parse ``QUERY ... ON ... WHEN ... EMIT ...`` and compile it,
parse bounded-aggregate queries (``QUERY ... AS SUM(...) WITHIN ...``) and resolve them,
parse top-k queries (``QUERY ... AS TOP 10 OF doc:* BY hits WITHIN 5``) and standing queries
(``QUERY ... AS MAX OVER 30m OF AVG(...) WITHIN 0.5 CONFIDENCE 0.9``).

One module per kind of statement holds its syntax-tree nodes, its builder (from the lark tree)
and its canonical text: :mod:`~tsmon.query.watch` (over :mod:`~tsmon.query.expr`),
:mod:`~tsmon.query.aggregate` (over :mod:`~tsmon.query.terms`, with the resolver),
:mod:`~tsmon.query.topk`, :mod:`~tsmon.query.standing`, and the summaries
:mod:`~tsmon.query.wavelet`, :mod:`~tsmon.query.approx` and :mod:`~tsmon.query.correlated`
(over :mod:`~tsmon.query.summary`). :mod:`~tsmon.query.tokens` reads and writes the tokens they
share, :mod:`~tsmon.query.statements` dispatches on the kind, and :mod:`~tsmon.query.parser`
reads whole files. Other packages import the names below from ``tsmon.query``.

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

from tsmon.query.aggregate import (
    AggregateDef,
    AlterPrecision,
    QueryResolveError,
    ResolvedAggregate,
    format_aggregate,
    format_alter,
    resolve_aggregate,
)
from tsmon.query.approx import (
    APPROX_KINDS,
    MAX_SUM_VALUE,
    ApproxDef,
    format_approx,
    format_approx_call,
)
from tsmon.query.compile import ArrayBindings, Bindings, CompiledQuery, compile_query
from tsmon.query.correlated import (
    DEPENDENT_AGGREGATES,
    INDEPENDENT_AGGREGATES,
    CorrelatedDef,
    format_coefficient,
    format_correlated,
    format_correlated_call,
)
from tsmon.query.errors import QuerySyntaxError
from tsmon.query.expr import (
    ARITH_OPS,
    COMPARE_OPS,
    STAT_ALIASES,
    STATS,
    BinOp,
    BoolOp,
    Call,
    Compare,
    Duration,
    Expr,
    Neg,
    Not,
    Number,
    Pos,
    SeriesName,
    Stat,
    Timestamp,
    TimestampMs,
    Value,
    format_expr,
)
from tsmon.query.nodes import Node
from tsmon.query.parser import parse_expr, parse_queries, parse_query, query_key
from tsmon.query.standing import EXTREMA, StandingDef, format_standing
from tsmon.query.statements import Statement, SummaryDef, format_query
from tsmon.query.terms import AGGREGATES, WEIGHTED_AGGREGATES, Term, format_terms
from tsmon.query.tokens import (
    format_number,
    format_percent,
    format_points,
    format_series,
    format_window,
)
from tsmon.query.topk import (
    MAX_TOPK,
    AlterTopK,
    TopKDef,
    format_alter_topk,
    format_objects,
    format_topk,
)
from tsmon.query.watch import EmitItem, QueryDef, format_item, format_watch
from tsmon.query.wavelet import (
    DEFAULT_SWAT_POINTS,
    WAVELET_KINDS,
    WaveletDef,
    format_wavelet,
    format_wavelet_call,
)

__all__ = [
    "AGGREGATES",
    "APPROX_KINDS",
    "ARITH_OPS",
    "COMPARE_OPS",
    "DEFAULT_SWAT_POINTS",
    "DEPENDENT_AGGREGATES",
    "EXTREMA",
    "INDEPENDENT_AGGREGATES",
    "MAX_SUM_VALUE",
    "MAX_TOPK",
    "STATS",
    "STAT_ALIASES",
    "WAVELET_KINDS",
    "WEIGHTED_AGGREGATES",
    "AggregateDef",
    "AlterPrecision",
    "AlterTopK",
    "ApproxDef",
    "ArrayBindings",
    "BinOp",
    "Bindings",
    "BoolOp",
    "Call",
    "Compare",
    "CompiledQuery",
    "CorrelatedDef",
    "Duration",
    "EmitItem",
    "Expr",
    "Neg",
    "Node",
    "Not",
    "Number",
    "Pos",
    "QueryDef",
    "QueryResolveError",
    "QuerySyntaxError",
    "ResolvedAggregate",
    "SeriesName",
    "StandingDef",
    "Stat",
    "Statement",
    "SummaryDef",
    "Term",
    "Timestamp",
    "TimestampMs",
    "TopKDef",
    "Value",
    "WaveletDef",
    "compile_query",
    "format_aggregate",
    "format_alter",
    "format_alter_topk",
    "format_approx",
    "format_approx_call",
    "format_coefficient",
    "format_correlated",
    "format_correlated_call",
    "format_expr",
    "format_item",
    "format_number",
    "format_objects",
    "format_percent",
    "format_points",
    "format_query",
    "format_series",
    "format_standing",
    "format_terms",
    "format_topk",
    "format_watch",
    "format_wavelet",
    "format_wavelet_call",
    "format_window",
    "parse_expr",
    "parse_queries",
    "parse_query",
    "query_key",
    "resolve_aggregate",
]
