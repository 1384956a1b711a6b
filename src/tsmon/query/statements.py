"""Every kind of statement in one table: the union type, the builder of each grammar rule, the
writer of each node type, and how messages name each kind.

Each kind lives in its own module (nodes, builder and writer together): watch queries
(:mod:`~tsmon.query.watch`), bounded aggregates (:mod:`~tsmon.query.aggregate`), top-k
(:mod:`~tsmon.query.topk`), standing queries (:mod:`~tsmon.query.standing`) and the queries
answered from stream summaries (:mod:`~tsmon.query.wavelet`, :mod:`~tsmon.query.approx`,
:mod:`~tsmon.query.correlated`).
"""

from __future__ import annotations

from collections.abc import Callable

from lark import Tree

from tsmon.query.aggregate import (
    AggregateDef,
    AlterPrecision,
    aggregate_def,
    alter_precision,
    format_aggregate,
    format_alter,
)
from tsmon.query.approx import ApproxDef, approx_def, format_approx
from tsmon.query.correlated import CorrelatedDef, correlated_def, format_correlated
from tsmon.query.standing import StandingDef, format_standing, standing_def
from tsmon.query.tokens import Fail
from tsmon.query.topk import (
    AlterTopK,
    TopKDef,
    alter_topk,
    format_alter_topk,
    format_topk,
    topk_def,
)
from tsmon.query.watch import QueryDef, format_watch, watch_def
from tsmon.query.wavelet import WaveletDef, format_wavelet, wavelet_def

#: Queries answered from stream summaries (wavelets, exponential and correlated histograms).
SummaryDef = WaveletDef | ApproxDef | CorrelatedDef
#: Statements that define a query (not an ALTER).
Definition = QueryDef | AggregateDef | TopKDef | StandingDef | SummaryDef
#: Anything :func:`tsmon.query.parse_queries` returns.
Statement = Definition | AlterPrecision | AlterTopK

Builder = Callable[[Tree, str, Fail], Statement]

#: Grammar rule of a statement (the ALTER, or the body after ``QUERY name``) -> its builder.
#: An ``aggregate_body`` with a CONFIDENCE clause is a standing query (see :func:`build`).
BUILDERS: dict[str, Builder] = {
    "alter": alter_precision,
    "alter_topk": alter_topk,
    "watch_body": watch_def,
    "aggregate_body": aggregate_def,
    "standing_body": standing_def,
    "topk_body": topk_def,
    "inner_body": wavelet_def,
    "point_body": wavelet_def,
    "range_body": wavelet_def,
    "approx_count": approx_def,
    "approx_sum": approx_def,
    "correlated_body": correlated_def,
}

#: Node type -> its canonical writer.
FORMATTERS: dict[type, Callable] = {
    QueryDef: format_watch,
    AggregateDef: format_aggregate,
    AlterPrecision: format_alter,
    TopKDef: format_topk,
    AlterTopK: format_alter_topk,
    StandingDef: format_standing,
    WaveletDef: format_wavelet,
    ApproxDef: format_approx,
    CorrelatedDef: format_correlated,
}

#: Definition type -> how messages name the kind.
KIND_NAMES: dict[type, str] = {
    QueryDef: "a watch query (QUERY ... ON)",
    AggregateDef: "a bounded-aggregate query (QUERY ... AS AGG(...))",
    TopKDef: "a top-k query (QUERY ... AS TOP|BOTTOM k)",
    StandingDef: "a standing query (QUERY ... WITHIN ... CONFIDENCE p)",
    WaveletDef: "a wavelet query (QUERY ... AS INNER|POINT|RANGE(...))",
    ApproxDef: "an approximate-aggregate query (QUERY ... AS APPROX COUNT|SUM(...))",
    CorrelatedDef: "a correlated-aggregate query (QUERY ... AS COUNT|SUM(x > AVG))",
}


def build(tree: Tree, source: str, fail: Fail) -> Statement:
    """The statement of a ``statement`` tree: dispatch on the ALTER or the body's rule (an
    ``aggregate_body`` with CONFIDENCE p is a standing query)."""
    rule = tree.data if tree.data in BUILDERS else tree.children[1].data
    if rule == "aggregate_body" and tree.children[1].children[-1] is not None:
        rule = "standing_body"
    return BUILDERS[rule](tree, source, fail)


def format_query(query: Statement) -> str:
    """Canonical one-line text of a statement; parsing it gives an equal statement.

    Examples
    --------
    >>> from tsmon.query import parse_query
    >>> format_query(parse_query("query q on a.*,b when avg(5m)>1 emit series since -60m"))
    'QUERY q ON a.*, b WHEN mean(5m) > 1 EMIT series SINCE -1h'
    >>> format_query(parse_query("query d as sum(a.x - b.x, a.x) within .5"))
    'QUERY d AS SUM(2 * a.x - b.x) WITHIN 0.5'
    >>> format_query(parse_query("alter query d within 1e-3 immediately"))
    'ALTER QUERY d WITHIN 0.001 IMMEDIATELY'
    >>> format_query(parse_query("query p as top 010 of `doc *` by hits over 60m within .5"))
    'QUERY p AS TOP 10 OF `doc *` BY hits OVER 1h WITHIN 0.5'
    >>> format_query(parse_query("query m as max over 60m of avg(a, b) within 1.0% confidence .9"))
    'QUERY m AS MAX OVER 1h OF AVG(a, b) WITHIN 1% CONFIDENCE 0.9'
    >>> format_query(parse_query("query n as range(t.v, 0..64, 30.0 +- 2) over 0256 points"))
    'QUERY n AS RANGE(t.v, 0..64, 30 ± 2) OVER 256 points'
    >>> format_query(parse_query("query s as approx sum(b.n) over 1 points within .50% max 010"))
    'QUERY s AS APPROX SUM(b.n) OVER 1 point WITHIN 0.5% MAX 10'
    >>> format_query(parse_query("query f as count(c.dur <= 1.10*min) over 500 point"))
    'QUERY f AS COUNT(c.dur <= 1.1 * MIN) OVER 500 points'
    """
    formatter = FORMATTERS.get(type(query))
    if formatter is None:
        raise TypeError(f"cannot format {type(query).__name__}; pass a statement")
    return formatter(query)
