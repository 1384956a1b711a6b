"""Canonical query text: what labels default to, and what parses back to the same tree."""

from __future__ import annotations

import re
from decimal import Decimal, localcontext
from functools import cache

from tsmon.core.timestamps import format_instant_ms
from tsmon.core.units import format_duration_ms
from tsmon.core.window_spec import WindowSpec
from tsmon.query.ast import (
    DEFAULT_SWAT_POINTS,
    AggregateDef,
    AlterPrecision,
    AlterTopK,
    ApproxDef,
    BinOp,
    BoolOp,
    Call,
    Compare,
    CorrelatedDef,
    Duration,
    EmitItem,
    Expr,
    Neg,
    Not,
    Number,
    Pos,
    SeriesName,
    StandingDef,
    Stat,
    Statement,
    Term,
    Timestamp,
    TimestampMs,
    TopKDef,
    Value,
    WaveletDef,
)

# Binding strength, loosest first; mirrors the grammar's precedence levels.
_OR, _AND, _NOT, _CMP, _ADD, _MUL, _UNARY, _ATOM = range(1, 9)
_LEVEL = {"or": _OR, "and": _AND, "+": _ADD, "-": _ADD, "*": _MUL, "/": _MUL, "%": _MUL}


def format_window(window: WindowSpec) -> str:
    """Write a window the way the query language reads it: ``str(window)``, the one formatter.

    Examples
    --------
    >>> format_window(WindowSpec.count(1)), format_window(WindowSpec.time(90_000))
    ('1 point', '90s')
    >>> format_window(WindowSpec.landmark(1_704_067_200_000))
    'since 2024-01-01T00:00:00Z'
    """
    return str(window)


def format_number(value: float) -> str:
    """Shortest text that reads back as ``value`` (``3.0`` -> ``'3'``).

    Examples
    --------
    >>> format_number(3.0), format_number(0.25), format_number(1e20)
    ('3', '0.25', '1e+20')
    """
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def _level(expr: Expr) -> int:
    if isinstance(expr, (BoolOp, BinOp)):
        return _LEVEL[expr.op]
    if isinstance(expr, Not):
        return _NOT
    if isinstance(expr, Compare):
        return _CMP
    if isinstance(expr, (Neg, Pos)):
        return _UNARY
    return _ATOM


def _wrap(expr: Expr, minimum: int) -> str:
    text = format_expr(expr)
    return f"({text})" if _level(expr) < minimum else text


def format_expr(expr: Expr) -> str:
    """Canonical text of an expression, with only the parentheses it needs.

    Examples
    --------
    >>> from tsmon.query.parser import parse_expr
    >>> format_expr(parse_expr("ABS( last-avg(1h) ) > 3*STD(1h) or not (value = 1)"))
    'abs(last - mean(1h)) > 3 * stddev(1h) OR NOT value == 1'
    """
    if isinstance(expr, Number):
        return format_number(expr.value)
    if isinstance(expr, Duration):
        return format_duration_ms(expr.ms)
    if isinstance(expr, Value):
        return expr.spelling
    if isinstance(expr, Timestamp):
        return "ts"
    if isinstance(expr, TimestampMs):
        return "ts_ms"
    if isinstance(expr, SeriesName):
        return "series"
    if isinstance(expr, Stat):
        return f"{expr.name}({format_window(expr.window)})"
    if isinstance(expr, Call):
        return f"{expr.func}({', '.join(format_expr(arg) for arg in expr.args)})"
    if isinstance(expr, (Neg, Pos)):
        sign = "-" if isinstance(expr, Neg) else "+"
        inner = expr.operand
        # Nested signs get parentheses: "--" would start a comment.
        minimum = _ATOM if isinstance(inner, (Neg, Pos)) else _UNARY
        return sign + _wrap(inner, minimum)
    if isinstance(expr, Not):
        return "NOT " + _wrap(expr.operand, _NOT)
    if isinstance(expr, Compare):
        return f"{_wrap(expr.left, _ADD)} {expr.op} {_wrap(expr.right, _ADD)}"
    if isinstance(expr, (BinOp, BoolOp)):
        level = _LEVEL[expr.op]
        op = expr.op.upper()
        return f"{_wrap(expr.left, level)} {op} {_wrap(expr.right, level + 1)}"
    raise TypeError(f"cannot format {type(expr).__name__}; pass an expression node")


def format_item(item: EmitItem) -> str:
    """Canonical text of one EMIT item, including ``AS alias`` when present.

    Examples
    --------
    >>> format_item(EmitItem(Stat("max", WindowSpec.time(3_600_000)), "peak"))
    'max(1h) AS peak'
    """
    text = format_expr(item.expr)
    return f"{text} AS {item.alias}" if item.alias is not None else text


def format_query(query: Statement) -> str:
    """Canonical one-line text of a statement; parsing it gives an equal statement.

    Examples
    --------
    >>> from tsmon.query.parser import parse_query
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
    if isinstance(query, AggregateDef):
        return format_aggregate(query)
    if isinstance(query, AlterPrecision):
        return format_alter(query)
    if isinstance(query, TopKDef):
        return format_topk(query)
    if isinstance(query, AlterTopK):
        return format_alter_topk(query)
    if isinstance(query, StandingDef):
        return format_standing(query)
    if isinstance(query, WaveletDef):
        return format_wavelet(query)
    if isinstance(query, ApproxDef):
        return format_approx(query)
    if isinstance(query, CorrelatedDef):
        return format_correlated(query)
    parts = [f"QUERY {query.name} ON {', '.join(query.triggers)}"]
    if query.when is not None:
        parts.append(f"WHEN {format_expr(query.when)}")
    if query.emit:
        parts.append(f"EMIT {', '.join(format_item(item) for item in query.emit)}")
    if query.since_ms is not None:
        parts.append(f"SINCE -{format_duration_ms(query.since_ms)}")
    return " ".join(parts)


@cache
def _terminal(name: str) -> re.Pattern[str]:
    """A terminal of the grammar, e.g. AGG_NAME: names that need no backquotes in ``AGG(...)``."""
    from tsmon.query.parser import terminal_pattern  # the parser imports this module

    return terminal_pattern(name)


def _bare_or_quoted(name: str, terminal: str, what: str) -> str:
    """``name`` bare when it lexes as one ``terminal`` token, else in backquotes."""
    if _terminal(terminal).fullmatch(name):
        return name
    if not name or "`" in name or "\n" in name or "\r" in name:
        raise ValueError(
            f"{what} {name!r} cannot be written in a query: it is empty or holds a "
            "backquote or a line break"
        )
    return f"`{name}`"


def format_series(series: str) -> str:
    """A series name or glob as written inside ``AGG(...)``: bare when it lexes as one name,
    else in backquotes.

    Examples
    --------
    >>> format_series("aws.cpu-utilisation_5f5533"), format_series("host*.cpu")
    ('aws.cpu-utilisation_5f5533', 'host*.cpu')
    >>> format_series("a--b"), format_series("7"), format_series("2*x"), format_series("-x")
    ('`a--b`', '`7`', '`2*x`', '`-x`')
    """
    return _bare_or_quoted(series, "AGG_NAME", "series name")


def format_objects(objects: str) -> str:
    """The objects pattern of a top-k query as written after ``OF``: bare when it lexes as one
    name, else in backquotes. Unlike inside ``AGG(...)``, numbers need no backquotes.

    Examples
    --------
    >>> format_objects("doc:*"), format_objects("20*"), format_objects("7")
    ('doc:*', '20*', '7')
    >>> format_objects("a--b"), format_objects("-x"), format_objects("my docs*")
    ('`a--b`', '`-x`', '`my docs*`')
    """
    return _bare_or_quoted(objects, "OBJECTS", "objects pattern")


def _format_term(term: Term, first: bool) -> str:
    """``[-] [|K| *] series``, or `` + ...`` / `` - ...`` after the first term."""
    weight = abs(term.coefficient)
    text = format_series(term.series)
    if weight != 1:
        text = f"{format_number(weight)} * {text}"
    if first:
        return f"-{text}" if term.coefficient < 0 else text
    return f" - {text}" if term.coefficient < 0 else f" + {text}"


def format_terms(terms: tuple[Term, ...]) -> str:
    """The arguments of an aggregate: a plain list when every weight is 1, else one sum.

    Examples
    --------
    >>> format_terms((Term(1.0, "a.x"), Term(1.0, "b.x")))
    'a.x, b.x'
    >>> format_terms((Term(-0.5, "a.x"), Term(1.0, "b.x"), Term(-1.0, "c-d")))
    '-0.5 * a.x + b.x - c-d'
    """
    if all(term.coefficient == 1 for term in terms):
        return ", ".join(format_series(term.series) for term in terms)
    return "".join(_format_term(term, i == 0) for i, term in enumerate(terms))


def format_aggregate(query: AggregateDef) -> str:
    """Canonical text of ``QUERY name AS AGG(...) WITHIN delta``.

    Examples
    --------
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


def _direction(bottom: bool) -> str:
    return "BOTTOM" if bottom else "TOP"


def format_topk(query: TopKDef) -> str:
    """Canonical text of ``QUERY name AS TOP|BOTTOM k OF objects BY metric [OVER d] WITHIN eps``.

    Examples
    --------
    >>> format_topk(TopKDef("idle", True, 1, "server*", "load", 900_000, 2.5))
    'QUERY idle AS BOTTOM 1 OF server* BY load OVER 15m WITHIN 2.5'
    >>> format_topk(TopKDef("popular", False, 10, "doc:*", "hits", None, 0.0))
    'QUERY popular AS TOP 10 OF doc:* BY hits WITHIN 0'
    """
    text = (
        f"QUERY {query.name} AS {_direction(query.bottom)} {query.k} "
        f"OF {format_objects(query.objects)} BY {query.metric}"
    )
    if query.window_ms is not None:
        text += f" OVER {format_duration_ms(query.window_ms)}"
    return f"{text} WITHIN {format_number(query.eps)}"


def format_alter_topk(alter: AlterTopK) -> str:
    """Canonical text of ``ALTER QUERY name TOP|BOTTOM k [WITHIN eps]``.

    Examples
    --------
    >>> format_alter_topk(AlterTopK("popular", False, 20, None))
    'ALTER QUERY popular TOP 20'
    >>> format_alter_topk(AlterTopK("idle", True, 3, 0.0))
    'ALTER QUERY idle BOTTOM 3 WITHIN 0'
    """
    text = f"ALTER QUERY {alter.name} {_direction(alter.bottom)} {alter.k}"
    return text if alter.eps is None else f"{text} WITHIN {format_number(alter.eps)}"


def _shift(number: Decimal, places: int) -> Decimal:
    """``number * 10**places``, exactly (the exponent moves; the digits stay)."""
    sign, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)  # a finite number
    return Decimal((sign, digits, exponent + places))


def format_percent(fraction: float) -> str:
    """The ``p`` of ``WITHIN p%`` for a relative tolerance ``fraction`` (``p / 100``): the
    shortest text that reads back as ``fraction`` (the parser divides the decimal ``p`` by 100
    and rounds once).

    Examples
    --------
    >>> format_percent(0.01), format_percent(0.07), format_percent(0.125), format_percent(1e-05)
    ('1', '7', '12.5', '0.001')
    """
    exact = _shift(Decimal(repr(float(fraction))), 2)  # repr reads back as the fraction
    short = format_number(float(exact))
    if float(_shift(Decimal(short), -2)) == fraction:
        return short
    return str(exact).replace("E", "e")


def _format_tolerance(eps: float, relative: bool) -> str:
    return f"{format_percent(eps)}%" if relative else format_number(eps)


def format_standing(query: StandingDef) -> str:
    """Canonical text of ``QUERY name AS [MAX|MIN OVER|SINCE ... OF] SUM|AVG(...) WITHIN eps
    CONFIDENCE p``.

    Examples
    --------
    >>> port = (Term(0.3, "ibm.px"), Term(0.7, "msft.px"))
    >>> format_standing(StandingDef("port", "sum", port, 0.5, False, 0.9))
    'QUERY port AS SUM(0.3 * ibm.px + 0.7 * msft.px) WITHIN 0.5 CONFIDENCE 0.9'
    >>> two = (Term(1.0, "a.px"), Term(1.0, "b.px"))
    >>> format_standing(StandingDef("low", "avg", two, 0.02, True, 0.8, "min", "100 points"))
    'QUERY low AS MIN OVER 100 points OF AVG(a.px, b.px) WITHIN 2% CONFIDENCE 0.8'
    >>> format_standing(StandingDef("top", "avg", two, 0.5, False, 0.9, "max", since_start=True))
    'QUERY top AS MAX SINCE START OF AVG(a.px, b.px) WITHIN 0.5 CONFIDENCE 0.9'
    >>> high = StandingDef("high", "sum", two[:1], 0.5, False, 0.9, "max", None, 1767225600000)
    >>> format_standing(high)
    'QUERY high AS MAX SINCE 2026-01-01T00:00:00Z OF SUM(a.px) WITHIN 0.5 CONFIDENCE 0.9'
    """
    text = f"QUERY {query.name} AS "
    if query.extremum is not None:
        if query.window is not None:
            window = f"OVER {query.window}"
        elif query.landmark_ms is not None:
            window = f"SINCE {format_instant_ms(query.landmark_ms)}"
        else:
            window = "SINCE START"
        text += f"{query.extremum.upper()} {window} OF "
    return (
        f"{text}{query.aggregate.upper()}({format_terms(query.terms)}) "
        f"WITHIN {_format_tolerance(query.eps, query.relative)} "
        f"CONFIDENCE {format_number(query.confidence)}"
    )


def format_points(n: int) -> str:
    """``N points`` of ``OVER N points``, as windows of statistics write a count.

    Examples
    --------
    >>> format_points(1024), format_points(1)
    ('1024 points', '1 point')
    """
    return str(WindowSpec.count(n))


def _numbers(values: tuple[float, ...] | tuple[int, ...]) -> str:
    return (
        "[" + ", ".join(format_number(v) if isinstance(v, float) else str(v) for v in values) + "]"
    )


def format_wavelet_call(query: WaveletDef) -> str:
    """``INNER|POINT|RANGE(series, ...)`` of a wavelet query; AT is left out when the positions
    are ``0 .. len(W) - 1``, what the parser fills in.

    Examples
    --------
    >>> format_wavelet_call(WaveletDef("r", "inner", "temp.v", weights=(8.0, -0.5), indices=(0, 1)))
    'INNER(temp.v, [8, -0.5])'
    >>> format_wavelet_call(WaveletDef("r", "inner", "a-b", weights=(1.0,), indices=(7,)))
    'INNER(a-b, [1] AT [7])'
    >>> format_wavelet_call(WaveletDef("t", "point", "7", position=12))
    'POINT(`7`, 12)'
    """
    series = format_series(query.series)
    if query.kind == "inner":
        args = _numbers(query.weights)
        if query.indices != tuple(range(len(query.weights))):
            args += f" AT {_numbers(query.indices)}"
    elif query.kind == "point":
        args = str(query.position)
    else:
        assert query.span is not None and query.value is not None and query.radius is not None
        lo, hi = query.span
        args = f"{lo}..{hi}, {format_number(query.value)} ± {format_number(query.radius)}"
    return f"{query.kind.upper()}({series}, {args})"


def format_wavelet(query: WaveletDef) -> str:
    """Canonical text of ``QUERY name AS INNER|POINT|RANGE(...) [OVER N points] [WITHIN d]``;
    OVER is left out for the default N (1024).

    Examples
    --------
    >>> format_wavelet(WaveletDef("twelve", "point", "temp.v", position=12, within=0.5))
    'QUERY twelve AS POINT(temp.v, 12) WITHIN 0.5'
    >>> format_wavelet(WaveletDef("n", "range", "t.v", 256, span=(0, 64), value=30.0, radius=2.0))
    'QUERY n AS RANGE(t.v, 0..64, 30 ± 2) OVER 256 points'
    """
    text = f"QUERY {query.name} AS {format_wavelet_call(query)}"
    if query.window_points != DEFAULT_SWAT_POINTS:
        text += f" OVER {format_points(query.window_points)}"
    if query.within is not None:
        text += f" WITHIN {format_number(query.within)}"
    return text


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


def format_coefficient(independent: str, eps: float) -> str:
    """The ``c`` of ``<= c * MIN`` (``c = 1 + eps``) or ``>= c * MAX`` (``c = 1 - eps``): the
    shorter of the float ``1 ± eps`` and the exact decimal ``1 ± repr(eps)`` that reads back as
    ``eps`` (the parser computes ``c - 1`` or ``1 - c`` exactly and rounds once).

    Examples
    --------
    >>> format_coefficient("min", 0.1), format_coefficient("max", 0.1)
    ('1.1', '0.9')
    >>> format_coefficient("min", 1e300), format_coefficient("max", 1e-20)
    ('1e+300', '0.99999999999999999999')
    """
    from tsmon.query.summary_syntax import coefficient_eps  # it imports this module

    sign = 1 if independent == "min" else -1
    with localcontext() as context:
        context.prec = 1000  # 1 ± repr(eps) exactly: eps has 17 digits, from 1e-324 to 1e308
        exact = str(Decimal(1) + sign * Decimal(repr(float(eps)))).replace("E", "e")
    short = format_number(1 + sign * eps)
    return (
        short if len(short) <= len(exact) and coefficient_eps(independent, short) == eps else exact
    )


def format_correlated_call(query: CorrelatedDef) -> str:
    """``COUNT|SUM(series > AVG)``, ``(series <= c * MIN)`` or ``(series >= c * MAX)``; a
    coefficient of 1 (``eps == 0``) is left out.

    Examples
    --------
    >>> format_correlated_call(CorrelatedDef("slow", "sum", "calls.dur", "max", 0.1))
    'SUM(calls.dur >= 0.9 * MAX)'
    >>> format_correlated_call(CorrelatedDef("low", "count", "calls.dur", "min"))
    'COUNT(calls.dur <= MIN)'
    """
    bound = query.independent.upper()
    if query.independent != "avg" and query.eps != 0:
        bound = f"{format_coefficient(query.independent, query.eps)} * {bound}"
    series = format_series(query.series)
    return f"{query.dependent.upper()}({series} {query.comparison} {bound})"


def format_correlated(query: CorrelatedDef) -> str:
    """Canonical text of ``QUERY name AS COUNT|SUM(series op [c *] AVG|MIN|MAX) [OVER N points]``.

    Examples
    --------
    >>> format_correlated(CorrelatedDef("long", "count", "calls.dur", "avg", window_points=500))
    'QUERY long AS COUNT(calls.dur > AVG) OVER 500 points'
    """
    text = f"QUERY {query.name} AS {format_correlated_call(query)}"
    if query.window_points is None:
        return text
    return f"{text} OVER {format_points(query.window_points)}"
