"""The persistent-query language: parse ``QUERY ... ON ... WHEN ... EMIT ...`` and compile it.

Examples
--------
>>> from tsmon.query import compile_query, parse_query
>>> q = compile_query(parse_query("QUERY hot ON host*.cpu WHEN mean(5m) > 0.9"))
>>> q.matches("host1.cpu"), sorted(str(w) for w in q.windows)
(True, ['5m'])
"""

from tsmon.query.ast import QueryDef
from tsmon.query.compile import ArrayBindings, Bindings, CompiledQuery, compile_query
from tsmon.query.errors import QuerySyntaxError
from tsmon.query.parser import parse_expr, parse_queries, parse_query, query_key
from tsmon.query.printer import format_expr, format_query

__all__ = [
    "ArrayBindings",
    "Bindings",
    "CompiledQuery",
    "QueryDef",
    "QuerySyntaxError",
    "compile_query",
    "format_expr",
    "format_query",
    "parse_expr",
    "parse_queries",
    "parse_query",
    "query_key",
]
