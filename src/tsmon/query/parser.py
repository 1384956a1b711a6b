"""Read query text into syntax trees (lark LALR, never ``eval``).

A file holds, in any mix (see ``grammar.lark`` for the syntax):

=========================================================  ======================================
``QUERY name ON ...``                                       :class:`~tsmon.query.ast.QueryDef`
``QUERY name AS AGG(...) WITHIN w``                         :class:`~tsmon.query.ast.AggregateDef`
``ALTER QUERY name WITHIN w [IMMEDIATELY]``                 :class:`~tsmon.query.ast.AlterPrecision`
``QUERY name AS TOP|BOTTOM k OF p BY m [OVER d] WITHIN e``  :class:`~tsmon.query.ast.TopKDef`
``ALTER QUERY name TOP|BOTTOM k [WITHIN e]``                :class:`~tsmon.query.ast.AlterTopK`
``QUERY name AS SUM|AVG(...) WITHIN e CONFIDENCE p``        :class:`~tsmon.query.ast.StandingDef`
``QUERY name AS MAX|MIN OVER|SINCE ... OF SUM|AVG(...)``    :class:`~tsmon.query.ast.StandingDef`
``WITHIN e CONFIDENCE p``
``QUERY name AS INNER|POINT|RANGE(s, ...) [OVER N points]``  :class:`~tsmon.query.ast.WaveletDef`
``[WITHIN d]``
``QUERY name AS APPROX COUNT|SUM(...) OVER N points``       :class:`~tsmon.query.ast.ApproxDef`
``WITHIN p% [MAX R]``
``QUERY name AS COUNT|SUM(s > AVG) [OVER N points]``        :class:`~tsmon.query.ast.CorrelatedDef`
=========================================================  ======================================
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import NoReturn

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedInput

from tsmon.core.window_spec import WindowSpec
from tsmon.query import ast
from tsmon.query.aggregate_syntax import aggregate_def, alter_precision, finite_number
from tsmon.query.errors import QuerySyntaxError, from_lark
from tsmon.query.printer import format_expr, format_percent
from tsmon.query.standing_syntax import standing_def
from tsmon.query.summary_syntax import approx_def, correlated_def, wavelet_def
from tsmon.query.topk_syntax import alter_topk, topk_def
from tsmon.query.window_syntax import duration_ms, window_spec

_KEYWORDS = frozenset({"query", "on", "when", "emit", "since", "as", "and", "or", "not"})
_NAMES = {
    "value": ast.Value,
    "ts": ast.Timestamp,
    "ts_ms": ast.TimestampMs,
    "series": ast.SeriesName,
}


@cache
def _lark() -> Lark:
    grammar = Path(__file__).with_name("grammar.lark").read_text(encoding="utf-8")
    return Lark(
        grammar,
        start=["start", "expr"],
        parser="lalr",
        lexer="contextual",
        propagate_positions=True,
        maybe_placeholders=True,
    )


def terminal_pattern(name: str) -> re.Pattern[str]:
    """The compiled regex of a terminal of ``grammar.lark``, its one definition.

    Examples
    --------
    >>> bool(terminal_pattern("AGG_NAME").fullmatch("aws.cpu-utilisation_5f5533"))
    True
    """
    return re.compile(_lark().get_terminal(name).pattern.to_regexp())


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


def parse_queries(text: str) -> list[ast.Statement]:
    """Parse a query file: any number of statements separated by newlines or ``;``.

    Returns, in file order, a :class:`~tsmon.query.ast.QueryDef` for each ``QUERY name ON``,
    an :class:`~tsmon.query.ast.AggregateDef` for each ``QUERY name AS AGG(...) WITHIN w``,
    an :class:`~tsmon.query.ast.AlterPrecision` for each ``ALTER QUERY name WITHIN w``, a
    :class:`~tsmon.query.ast.TopKDef` for each ``QUERY name AS TOP|BOTTOM k OF ...``, an
    :class:`~tsmon.query.ast.AlterTopK` for each ``ALTER QUERY name TOP|BOTTOM k``, a
    :class:`~tsmon.query.ast.StandingDef` for each ``QUERY name AS ... CONFIDENCE p`` (a
    standing query: ``SUM|AVG(...)``, or ``MAX|MIN OVER|SINCE ... OF SUM|AVG(...)``), and for
    the queries answered from stream summaries a :class:`~tsmon.query.ast.WaveletDef` for each
    ``QUERY name AS INNER|POINT|RANGE(...)``, an :class:`~tsmon.query.ast.ApproxDef` for each
    ``QUERY name AS APPROX COUNT|SUM(...)`` and a :class:`~tsmon.query.ast.CorrelatedDef` for
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
    >>> port.weights, port.eps, port.confidence, low.extremum, low.window, low.eps, low.relative
    ({'ibm.px': 0.3, 'msft.px': 0.7}, 0.5, 0.9, 'min', '100 points', 0.01, True)
    >>> near, errs, fast = parse_queries('''
    ... QUERY near AS RANGE(temp.v, 0..64, 30 ± 2) OVER 256 points
    ... QUERY errs AS APPROX COUNT(errors.n > 0) OVER 10000 points WITHIN 1%
    ... QUERY fast AS COUNT(calls.dur <= 1.1 * MIN) OVER 500 points''')
    >>> near.span, near.value, near.radius, near.window_points, errs.op, errs.eps, fast.eps
    ((0, 64), 30.0, 2.0, 256, '>', 0.01, 0.1)
    """
    tree = _parse(text, "start")
    try:
        return _statements(tree, _Builder(text))
    except RecursionError:
        raise QuerySyntaxError("expression is nested too deeply", 1, 1, text) from None


def _statements(tree: Tree, builder: _Builder) -> list[ast.Statement]:
    text = builder.source
    statements: list[ast.Statement] = []
    defined: dict[str, _Definition] = {}
    previous_end = 0
    for child in tree.children:
        start = child.meta.start_pos
        if statements and not re.search(r"[\n;]", text[previous_end:start]):
            builder.fail("start each statement on a new line or after ';'", child.meta)
        previous_end = child.meta.end_pos
        statement = builder.statement(child)
        _check_name(statement, defined, builder)
        statements.append(statement)
    return statements


_Definition = ast.QueryDef | ast.AggregateDef | ast.TopKDef | ast.StandingDef | ast.SummaryDef
_KINDS = {
    ast.QueryDef: "a watch query (QUERY ... ON)",
    ast.AggregateDef: "a bounded-aggregate query (QUERY ... AS AGG(...))",
    ast.TopKDef: "a top-k query (QUERY ... AS TOP|BOTTOM k)",
    ast.StandingDef: "a standing query (QUERY ... WITHIN ... CONFIDENCE p)",
    ast.WaveletDef: "a wavelet query (QUERY ... AS INNER|POINT|RANGE(...))",
    ast.ApproxDef: "an approximate-aggregate query (QUERY ... AS APPROX COUNT|SUM(...))",
    ast.CorrelatedDef: "a correlated-aggregate query (QUERY ... AS COUNT|SUM(x > AVG))",
}


def _direction(bottom: bool) -> str:
    return "BOTTOM" if bottom else "TOP"


def _check_name(
    statement: ast.Statement,
    defined: dict[str, _Definition],
    builder: _Builder,
) -> None:
    """Record a definition by :func:`query_key`; reject duplicates and ALTERs that do not fit
    the kind of query defined earlier in the file."""
    key = query_key(statement.name)
    first = defined.get(key)
    if isinstance(statement, ast.AlterPrecision | ast.AlterTopK) and isinstance(
        first, ast.WaveletDef | ast.ApproxDef | ast.CorrelatedDef
    ):
        builder.fail(
            f"query '{first.name}' (line {first.line}:{first.column}) is {_KINDS[type(first)]},"
            " answered from a stream summary, and cannot be altered; to change it, remove the "
            "query and define it again",
            statement,
        )
    if isinstance(statement, ast.AlterPrecision):
        if isinstance(first, ast.QueryDef):
            builder.fail(
                f"query '{first.name}' (line {first.line}:{first.column}) is a watch query "
                "(QUERY ... ON) and has no width; ALTER QUERY ... WITHIN changes aggregate "
                "queries (QUERY name AS ...)",
                statement,
            )
        if isinstance(first, ast.TopKDef):
            rank = f"{_direction(first.bottom)} {first.k}"
            builder.fail(
                f"query '{first.name}' (line {first.line}:{first.column}) is a top-k query and "
                f"has no width; change its tolerance with ALTER QUERY {statement.name} {rank} "
                "WITHIN <tolerance>",
                statement,
            )
        if isinstance(first, ast.StandingDef) and first.relative:
            builder.fail(
                f"query '{first.name}' (line {first.line}:{first.column}) has a relative "
                f"tolerance (WITHIN {format_percent(first.eps)}%) and ALTER QUERY ... WITHIN "
                "sets an absolute one; to change a relative tolerance, remove the query and "
                "define it again",
                statement,
            )
        return
    if isinstance(statement, ast.AlterTopK):
        if isinstance(first, ast.QueryDef | ast.AggregateDef | ast.StandingDef):
            builder.fail(
                f"query '{first.name}' (line {first.line}:{first.column}) is "
                f"{_KINDS[type(first)]} and has no k; ALTER QUERY ... TOP|BOTTOM k changes "
                "top-k queries (QUERY name AS TOP|BOTTOM k ...)",
                statement,
            )
        if isinstance(first, ast.TopKDef) and first.bottom != statement.bottom:
            builder.fail(
                f"query '{first.name}' (line {first.line}:{first.column}) is a "
                f"{_direction(first.bottom)} k query; write ALTER QUERY {statement.name} "
                f"{_direction(first.bottom)} {statement.k} (ALTER changes k, not the direction)",
                statement,
            )
        return
    if first is not None:
        builder.fail(
            f"duplicate query name '{statement.name}' (first defined at line "
            f"{first.line}:{first.column}); give each query its own name",
            statement,
        )
    defined[key] = statement


def parse_query(text: str) -> ast.Statement:
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


def parse_expr(text: str) -> ast.Expr:
    """Parse a bare expression, as written after ``WHEN``.

    Examples
    --------
    >>> parse_expr("-value % 2")
    BinOp(op='%', left=Neg(operand=Value(spelling='value')), right=Number(value=2.0))
    """
    builder = _Builder(text)
    tree = _parse(text, "expr")
    try:
        expr = builder.expr(tree)
    except RecursionError:
        raise QuerySyntaxError("expression is nested too deeply", 1, 1, text) from None
    builder.no_series(expr)
    return expr


def _parse(text: str, start: str) -> Tree:
    try:
        return _lark().parse(text, start=start)
    except UnexpectedInput as exc:
        raise from_lark(exc, text) from None
    except RecursionError:
        raise QuerySyntaxError("expression is nested too deeply", 1, 1, text) from None


class _Builder:
    """Turns lark trees into AST nodes and reports semantic errors at the offending token."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, detail: str, where: object) -> NoReturn:
        """Raise a :class:`QuerySyntaxError` at ``where`` (a token, tree, node or meta)."""
        if isinstance(where, Tree):
            where = where.meta
        line, column = getattr(where, "line", 1), getattr(where, "column", 1)
        raise QuerySyntaxError(detail, line, column, self.source)

    @staticmethod
    def _pos(where: Token | Tree) -> dict[str, int]:
        meta = where if isinstance(where, Token) else where.meta
        return {"line": meta.line, "column": meta.column}

    def statement(self, tree: Tree) -> ast.Statement:
        """Dispatch on the statement kind: ALTER (WITHIN / TOP|BOTTOM), or the body of QUERY
        (ON ... / AS AGG(...) / AS AGG(...) ... CONFIDENCE p / AS MAX|MIN OVER|SINCE ... /
        AS TOP|BOTTOM k / AS INNER|POINT|RANGE(...) / AS APPROX ... / AS COUNT|SUM(x > AVG))."""
        if tree.data == "alter":
            return alter_precision(tree, self.source, self.fail)
        if tree.data == "alter_topk":
            return alter_topk(tree, self.source, self.fail)
        body = tree.children[1]
        if body.data == "standing_body" or (
            body.data == "aggregate_body" and body.children[-1] is not None  # CONFIDENCE p
        ):
            return standing_def(tree, self.source, self.fail)
        if body.data == "aggregate_body":
            return aggregate_def(tree, self.source, self.fail)
        if body.data == "topk_body":
            return topk_def(tree, self.source, self.fail)
        if body.data in ("inner_body", "point_body", "range_body"):
            return wavelet_def(tree, self.source, self.fail)
        if body.data in ("approx_count", "approx_sum"):
            return approx_def(tree, self.source, self.fail)
        if body.data == "correlated_body":
            return correlated_def(tree, self.source, self.fail)
        return self.watch(tree)

    def watch(self, tree: Tree) -> ast.QueryDef:
        name, body = tree.children
        triggers, when, emit, since = body.children
        items = self.emit(emit) if emit is not None else ()
        when_expr = self.expr(when.children[0]) if when is not None else None
        if when_expr is not None:
            self.no_series(when_expr)
        text = self.source[tree.meta.start_pos : tree.meta.end_pos]
        return ast.QueryDef(
            str(name),
            self.triggers(triggers),
            when_expr,
            items,
            self.since(since) if since is not None else None,
            text=text,
            **self._pos(tree),
        )

    def triggers(self, tree: Tree) -> tuple[str, ...]:
        for token in tree.children:
            if token.lower() in _KEYWORDS:
                self.fail(f"expected a series name or pattern but got '{token}'", token)
        return tuple(str(token) for token in tree.children)

    def emit(self, tree: Tree) -> tuple[ast.EmitItem, ...]:
        items: list[ast.EmitItem] = []
        labels: dict[str, ast.EmitItem] = {}
        for child in tree.children:
            expr_tree, alias = child.children
            expr = self.expr(expr_tree)
            if not isinstance(expr, ast.WHOLE_ITEM_ONLY):
                self.no_series(expr)
            item = ast.EmitItem(expr, str(alias) if alias is not None else None, **self._pos(child))
            label = item.alias if item.alias is not None else format_expr(expr)
            if label in labels:
                self.fail(f"duplicate EMIT label '{label}'; add AS <name> to tell them apart", item)
            labels[label] = item
            items.append(item)
        return tuple(items)

    def since(self, tree: Tree) -> int:
        sign, duration = tree.children
        if sign is None or sign.children[0].type != "MINUS":
            self.fail("SINCE takes a negative duration, e.g. SINCE -1h", sign or duration)
        return self.duration_ms(duration)

    def duration_ms(self, token: Token) -> int:
        return duration_ms(token, self.fail)

    def no_series(self, expr: ast.Expr) -> None:
        """Reject ``series`` and ``ts_ms`` anywhere but as a whole EMIT item."""
        for node in expr.walk():
            if isinstance(node, ast.SeriesName):
                self.fail("'series' is a string; it can only be a whole EMIT item", node)
            if isinstance(node, ast.TimestampMs):
                self.fail(
                    "'ts_ms' (int64 milliseconds) can only be a whole EMIT item; "
                    "use ts (seconds) in expressions",
                    node,
                )

    def expr(self, tree: Tree | Token) -> ast.Expr:
        kind = tree.data if isinstance(tree, Tree) else tree.type
        kids = tree.children if isinstance(tree, Tree) else []
        pos = self._pos(tree)
        if kind == "number":
            return ast.Number(finite_number(kids[0], self.fail), **pos)
        if kind == "duration":
            return ast.Duration(self.duration_ms(kids[0]), **pos)
        if kind == "name":
            return self.name(kids[0])
        if kind == "bare_stat":
            stat = ast.STAT_ALIASES[kids[0].lower()]
            if stat != "last":
                self.fail(f"{stat} needs a window, e.g. {stat}(5m) or {stat}(100 points)", kids[0])
            return ast.Value("last", **pos)
        if kind == "stat":
            window = self.window(kids[1])
            return ast.Stat(ast.STAT_ALIASES[kids[0].lower()], window, **pos)
        if kind == "call":
            return self.call(kids[0], kids[1])
        if kind in ("unary", "bool_not"):
            operand = self.expr(kids[-1])
            if kind == "bool_not":
                return ast.Not(operand, **pos)
            return (ast.Neg if kids[0] == "-" else ast.Pos)(operand, **pos)
        if kind in ("arith", "compare"):
            left, op, right = kids
            lhs, rhs = self.expr(left), self.expr(right)
            if kind == "compare":
                return ast.Compare(ast.COMPARE_ALIASES[str(op)], lhs, rhs, **pos)
            return ast.BinOp(str(op), lhs, rhs, **pos)
        if kind in ("bool_and", "bool_or"):
            return ast.BoolOp(kind[5:], self.expr(kids[0]), self.expr(kids[1]), **pos)
        raise AssertionError(f"unhandled grammar rule {kind}")  # pragma: no cover

    def name(self, token: Token) -> ast.Expr:
        word = token.lower()
        if word in _NAMES:
            node = _NAMES[word]
            return node(**self._pos(token))
        if word in ast.FUNCTIONS:
            self.fail(f"{word} is a function; call it like {word}(value)", token)
        self.fail(
            f"unknown name '{token}'; use value, last, ts, a number, a duration like 5m, "
            "or a statistic like mean(5m)",
            token,
        )
        raise AssertionError("unreachable")  # pragma: no cover

    def call(self, token: Token, args: Tree | None) -> ast.Expr:
        func = token.lower()
        if func not in ast.FUNCTIONS:
            known = ", ".join([*ast.FUNCTIONS, *ast.STATS])
            self.fail(f"unknown function '{token}'; functions are {known}", token)
        params = tuple(self.expr(arg) for arg in args.children) if args is not None else ()
        arity = ast.FUNCTIONS[func]
        if len(params) != arity:
            plural = "" if arity == 1 else "s"
            self.fail(f"{func} takes exactly {arity} argument{plural}, got {len(params)}", token)
        return ast.Call(func, params, **self._pos(token))

    def window(self, token: Token) -> WindowSpec:
        return window_spec(token, self.fail)
