"""Read query text into syntax trees (lark LALR, never ``eval``).

A file holds, in any mix (see ``grammar.lark`` for the syntax):

=========================================================  ======================================
``QUERY name ON ...``                                       :class:`~tsmon.query.QueryDef`
``QUERY name AS AGG(...) WITHIN w``                         :class:`~tsmon.query.AggregateDef`
``ALTER QUERY name WITHIN w [IMMEDIATELY]``                 :class:`~tsmon.query.AlterPrecision`
``QUERY name AS TOP|BOTTOM k OF p BY m [OVER d] WITHIN e``  :class:`~tsmon.query.TopKDef`
``ALTER QUERY name TOP|BOTTOM k [WITHIN e]``                :class:`~tsmon.query.AlterTopK`
``QUERY name AS SUM|AVG(...) WITHIN e CONFIDENCE p``        :class:`~tsmon.query.StandingDef`
``QUERY name AS MAX|MIN OVER|SINCE ... OF SUM|AVG(...)``    :class:`~tsmon.query.StandingDef`
``WITHIN e CONFIDENCE p``
``QUERY name AS INNER|POINT|RANGE(s, ...) [OVER N points]``  :class:`~tsmon.query.WaveletDef`
``[WITHIN d]``
``QUERY name AS APPROX COUNT|SUM(...) OVER N points``       :class:`~tsmon.query.ApproxDef`
``WITHIN p% [MAX R]``
``QUERY name AS COUNT|SUM(s > AVG) [OVER N points]``        :class:`~tsmon.query.CorrelatedDef`
=========================================================  ======================================
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NoReturn

from lark import Tree

from tsmon.query.aggregate import AggregateDef, AlterPrecision
from tsmon.query.errors import QuerySyntaxError
from tsmon.query.expr import Expr, build_expr, check_no_series
from tsmon.query.grammar import parse_tree
from tsmon.query.standing import StandingDef
from tsmon.query.statements import KIND_NAMES, Definition, Statement, SummaryDef, build
from tsmon.query.tokens import Fail, format_percent
from tsmon.query.topk import AlterTopK, TopKDef, direction
from tsmon.query.watch import QueryDef


def query_key(name: str) -> str:
    """The key that identifies a query: its name case-folded, so ``a`` and ``A`` are one query.

    :func:`parse_queries` rejects two statements with the same key; the engine uses the same
    rule for queries added one by one.

    Examples
    --------
    >>> query_key("HotCPU") == query_key("hotcpu"), query_key("HotCPU")
    (True, 'hotcpu')
    """
    return name.casefold()


def parse_queries(text: str) -> list[Statement]:
    """Parse a query file: any number of statements separated by newlines or ``;``.

    Returns, in file order, a :class:`~tsmon.query.QueryDef` for each ``QUERY name ON``,
    an :class:`~tsmon.query.AggregateDef` for each ``QUERY name AS AGG(...) WITHIN w``,
    an :class:`~tsmon.query.AlterPrecision` for each ``ALTER QUERY name WITHIN w``, a
    :class:`~tsmon.query.TopKDef` for each ``QUERY name AS TOP|BOTTOM k OF ...``, an
    :class:`~tsmon.query.AlterTopK` for each ``ALTER QUERY name TOP|BOTTOM k``, a
    :class:`~tsmon.query.StandingDef` for each ``QUERY name AS ... CONFIDENCE p`` (a
    standing query: ``SUM|AVG(...)``, or ``MAX|MIN OVER|SINCE ... OF SUM|AVG(...)``), and for
    the queries answered from stream summaries a :class:`~tsmon.query.WaveletDef` for each
    ``QUERY name AS INNER|POINT|RANGE(...)``, an :class:`~tsmon.query.ApproxDef` for each
    ``QUERY name AS APPROX COUNT|SUM(...)`` and a :class:`~tsmon.query.CorrelatedDef` for
    each ``QUERY name AS COUNT|SUM(s > AVG)`` (or ``<= c * MIN``, ``>= c * MAX``).

    Raises :class:`QuerySyntaxError` (line, column, expected tokens) on any parse or semantic
    error. Semantic errors include:

    * duplicate query names -- names are case-insensitive (compared by :func:`query_key`), so
      ``QUERY a ...`` and ``QUERY A ...`` in one file are an error (an ``ALTER`` defines no
      name, so it never clashes);
    * ``ALTER QUERY q WITHIN ...`` after a watch or top-k query ``q`` of the same file (it has
      no width) or after a standing query ``q`` with a relative tolerance (``WITHIN 1%``: an
      ALTER sets an absolute one); ``ALTER QUERY q TOP|BOTTOM k`` after a watch, aggregate or
      standing query ``q`` of the same file, or after a top-k query ``q`` of the other
      direction. ``ALTER QUERY q WITHIN w`` after a standing query ``q`` with an absolute
      tolerance is fine: it gives ``q`` the new tolerance ``w``;
    * durations longer than 100 years (``36525d``), count windows of more than 2**40 points,
      landmark instants outside 1677-09-21 .. 2262-04-11 (pandas' ``Timestamp`` range), and
      number literals too large for a float;
    * in aggregates: weights on MIN/MAX, a bare number as a term, division by 0, a series whose
      weights add up to 0, and a WITHIN width that is not a finite number > 0;
    * in top-k queries: a k that is not a whole number 1 .. 1000000 in plain digits, an OVER
      window that is not a duration > 0, and a WITHIN tolerance that is not a finite
      number >= 0;
    * in standing queries: CONFIDENCE after MIN(...) or MAX(...) (a standing query watches
      SUM or AVG; MAX|MIN OVER|SINCE ... OF SUM(...) is the extremum over time), OVER or SINCE
      after SUM or AVG, MIN or MAX after OF, an OVER window that is a landmark, a SINCE that is
      neither an ISO-8601 instant nor START, a WITHIN that is neither a finite number > 0 nor
      a percentage with 0 < p < 100, a CONFIDENCE that is not a number with 0 < p < 1, and
      the errors of aggregate terms above; ``WITHIN p%`` anywhere but in a standing query
      (or an APPROX one);
    * in queries answered from stream summaries: a glob for the series; an OVER that is not a
      whole number of points 1 .. 2**40 (for INNER, POINT and RANGE a power of two >= 2);
      positions that are not whole numbers 0 .. N-1 (AT positions must be distinct, one per
      weight; RANGE needs lo <= hi); a negative RANGE radius; WITHIN after RANGE or after a
      correlated aggregate; a WITHIN that is not a finite number > 0 (INNER, POINT) or a
      percentage 0 < p < 100 (APPROX); an APPROX COUNT without a comparison with a number, an
      APPROX SUM with one, and a MAX R that is not a whole number 1 .. 2**53; COUNT(...)
      without a comparison, and a correlated aggregate comparing with anything but ``> AVG``,
      ``<= c * MIN`` (c >= 1) or ``>= c * MAX`` (0 < c <= 1); and any ALTER of these queries
      (they cannot be altered: remove the query and define it again).

    Examples
    --------
    >>> qs = parse_queries('''
    ... QUERY hot ON host*.cpu WHEN mean(5m) > 0.9  -- hot hosts
    ... QUERY all ON x.y; QUERY low ON x.y WHEN value < 0
    ... ''')
    >>> [q.name for q in qs], qs[0].triggers, qs[0].text
    (['hot', 'all', 'low'], ('host*.cpu',), 'QUERY hot ON host*.cpu WHEN mean(5m) > 0.9')
    >>> diff, alter = parse_queries('''
    ... QUERY diff AS SUM(2*a.x - b.x) WITHIN 0.5
    ... ALTER QUERY diff WITHIN 0.1 IMMEDIATELY''')
    >>> diff.aggregate, diff.weights, diff.delta
    ('sum', {'a.x': 2.0, 'b.x': -1.0}, 0.5)
    >>> alter
    AlterPrecision(name='diff', delta=0.1, immediately=True)
    >>> parse_queries('''
    ... QUERY popular AS TOP 10 OF doc:* BY hits OVER 15m WITHIN 0
    ... ALTER QUERY popular TOP 20''')
    [TopKDef(name='popular', bottom=False, k=10, objects='doc:*', metric='hits',
        window_ms=900000, eps=0.0), AlterTopK(name='popular', bottom=False, k=20, eps=None)]
    >>> port, low = parse_queries('''
    ... QUERY port AS SUM(0.3*ibm.px + 0.7*msft.px) WITHIN 0.5 CONFIDENCE 0.9
    ... QUERY low AS MIN OVER 100 points OF AVG(a.px, b.px) WITHIN 1% CONFIDENCE 0.8''')
    >>> port.weights, port.eps, port.confidence, low.extremum, str(low.window), low.eps
    ({'ibm.px': 0.3, 'msft.px': 0.7}, 0.5, 0.9, 'min', '100 points', 0.01)
    >>> near, errs, fast = parse_queries('''
    ... QUERY near AS RANGE(temp.v, 0..64, 30 ± 2) OVER 256 points
    ... QUERY errs AS APPROX COUNT(errors.n > 0) OVER 10000 points WITHIN 1%
    ... QUERY fast AS COUNT(calls.dur <= 1.1 * MIN) OVER 500 points''')
    >>> near.span, near.value, near.radius, near.window_points, errs.op, errs.eps, fast.eps
    ((0, 64), 30.0, 2.0, 256, '>', 0.01, 0.1)
    """
    return list(_parsed(text))


@lru_cache(maxsize=256)
def _parsed(text: str) -> tuple[Statement, ...]:
    """The statements of ``text``, parsed once per process: every source node a job creates
    parses the same text, and the statements are immutable (frozen dataclasses of tuples), so
    its nodes share them. An error is not kept: the same text raises it again."""
    tree = parse_tree(text, "start")
    try:
        return tuple(_statements(tree, text))
    except RecursionError:
        raise QuerySyntaxError("expression is nested too deeply", 1, 1, text) from None


def _failure(source: str) -> Fail:
    """The ``fail`` callback of the builders: a :class:`QuerySyntaxError` at ``where`` (a
    token, tree, node or meta), quoting ``source``."""

    def fail(detail: str, where: object) -> NoReturn:
        if isinstance(where, Tree):
            where = where.meta
        line, column = getattr(where, "line", 1), getattr(where, "column", 1)
        raise QuerySyntaxError(detail, line, column, source)

    return fail


def _statements(tree: Tree, text: str) -> list[Statement]:
    fail = _failure(text)
    statements: list[Statement] = []
    defined: dict[str, Definition] = {}
    previous_end = 0
    for child in tree.children:
        start = child.meta.start_pos
        if statements and not re.search(r"[\n;]", text[previous_end:start]):
            fail("start each statement on a new line or after ';'", child.meta)
        previous_end = child.meta.end_pos
        statement = build(child, text, fail)
        _check_name(statement, defined, fail)
        statements.append(statement)
    return statements


def _check_name(
    statement: Statement,
    defined: dict[str, Definition],
    fail: Fail,
) -> None:
    """Record a definition by :func:`query_key`; reject duplicates and ALTERs that do not fit
    the kind of query defined earlier in the file."""
    key = query_key(statement.name)
    first = defined.get(key)
    if isinstance(statement, AlterPrecision | AlterTopK) and isinstance(first, SummaryDef):
        fail(
            f"query '{first.name}' (line {first.line}:{first.column}) is {KIND_NAMES[type(first)]},"
            " answered from a stream summary, and cannot be altered; to change it, remove the "
            "query and define it again",
            statement,
        )
    if isinstance(statement, AlterPrecision):
        if isinstance(first, QueryDef):
            fail(
                f"query '{first.name}' (line {first.line}:{first.column}) is a watch query "
                "(QUERY ... ON) and has no width; ALTER QUERY ... WITHIN changes aggregate "
                "queries (QUERY name AS ...)",
                statement,
            )
        if isinstance(first, TopKDef):
            rank = f"{direction(first.bottom)} {first.k}"
            fail(
                f"query '{first.name}' (line {first.line}:{first.column}) is a top-k query and "
                f"has no width; change its tolerance with ALTER QUERY {statement.name} {rank} "
                "WITHIN <tolerance>",
                statement,
            )
        if isinstance(first, StandingDef) and first.relative:
            fail(
                f"query '{first.name}' (line {first.line}:{first.column}) has a relative "
                f"tolerance (WITHIN {format_percent(first.eps)}%) and ALTER QUERY ... WITHIN "
                "sets an absolute one; to change a relative tolerance, remove the query and "
                "define it again",
                statement,
            )
        return
    if isinstance(statement, AlterTopK):
        if isinstance(first, QueryDef | AggregateDef | StandingDef):
            fail(
                f"query '{first.name}' (line {first.line}:{first.column}) is "
                f"{KIND_NAMES[type(first)]} and has no k; ALTER QUERY ... TOP|BOTTOM k changes "
                "top-k queries (QUERY name AS TOP|BOTTOM k ...)",
                statement,
            )
        if isinstance(first, TopKDef) and first.bottom != statement.bottom:
            fail(
                f"query '{first.name}' (line {first.line}:{first.column}) is a "
                f"{direction(first.bottom)} k query; write ALTER QUERY {statement.name} "
                f"{direction(first.bottom)} {statement.k} (ALTER changes k, not the direction)",
                statement,
            )
        return
    if first is not None:
        fail(
            f"duplicate query name '{statement.name}' (first defined at line "
            f"{first.line}:{first.column}); give each query its own name",
            statement,
        )
    defined[key] = statement


def parse_query(text: str) -> Statement:
    """Parse text holding exactly one statement (of any kind, see :func:`parse_queries`).

    Examples
    --------
    >>> q = parse_query("QUERY q ON a.b WHEN abs(value) > 3 * std(1h) SINCE -2h")
    >>> q.since_ms, q.when.right.right
    (7200000, Stat(name='stddev', window=WindowSpec(kind=<WindowKind.TIME: 'time'>, size=3600000)))
    >>> parse_query("query low as min(s1.t, s*.t) within 1e-3")
    AggregateDef(name='low', aggregate='min', terms=(Term(coefficient=1.0, series='s1.t'),
        Term(coefficient=1.0, series='s*.t')), delta=0.001)
    >>> parse_query("Query popular As Top 10 Of doc:* By hits Within 5")
    TopKDef(name='popular', bottom=False, k=10, objects='doc:*', metric='hits', window_ms=None,
        eps=5.0)
    """
    queries = parse_queries(text)
    if len(queries) != 1:
        line, column = (queries[1].line, queries[1].column) if queries else (1, 1)
        raise QuerySyntaxError(
            f"expected exactly one QUERY statement, got {len(queries)}; use parse_queries "
            "for files with several",
            line,
            column,
            text,
        )
    return queries[0]


def parse_expr(text: str) -> Expr:
    """Parse a bare expression, as written after ``WHEN``.

    Examples
    --------
    >>> parse_expr("-value % 2")
    BinOp(op='%', left=Neg(operand=Value(spelling='value')), right=Number(value=2.0))
    """
    tree = parse_tree(text, "expr")
    fail = _failure(text)
    try:
        expr = build_expr(tree, fail)
    except RecursionError:
        raise QuerySyntaxError("expression is nested too deeply", 1, 1, text) from None
    check_no_series(expr, fail)
    return expr
